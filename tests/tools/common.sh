#!/usr/bin/env bash
# Helpers for tests/suites/*.sh: counters, equality checks with diffs, required tools,
# a scratch directory, and the closing "N passed, N failed" line.
# shellcheck disable=SC2034  # variables are for the sourcing suite

SUITE_NAME=${SUITE_NAME:-$(basename "${BASH_SOURCE[1]:-suite}" .sh)}
suite_passed=0
suite_failed=0
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

pass() { suite_passed=$((suite_passed + 1)); }
fail() { suite_failed=$((suite_failed + 1)); echo "FAIL $SUITE_NAME: $*"; }

# check_eq NAME EXPECTED ACTUAL: passes when equal, else prints a unified diff.
check_eq() {
  if [[ $2 == "$3" ]]; then
    pass
  else
    fail "$1"
    diff -u <(printf '%s\n' "$2") <(printf '%s\n' "$3") | tail -n +3 | head -n 40
  fi
}

# need_tool X: a missing tool fails the suite loudly; real-tool tests are never skipped.
need_tool() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "FAIL $SUITE_NAME: required tool '$1' is not installed (run tests/tools/install-deps.sh)"
    exit 1
  fi
}

finish() {
  echo "$SUITE_NAME: $suite_passed passed, $suite_failed failed"
  [[ $suite_failed -eq 0 && $suite_passed -gt 0 ]]
}

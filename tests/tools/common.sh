#!/usr/bin/env bash
# Helpers for tests/suites/*.sh (source it after `set -euo pipefail`):
#
#   SUITE_NAME        the sourcing script's name without .sh (or as set before sourcing)
#   SCRATCH           a fresh temp dir, removed on exit (after the at_exit hooks)
#   at_exit CMD       run CMD (bash text) on exit, before SCRATCH is removed; hooks run in
#                     reverse order, e.g. at_exit "bash tests/tools/slurm.sh down '$dir'".
#                     INT/TERM also run them. A suite that sets its own EXIT trap replaces
#                     this one and must clean up itself.
#   pass [MSG]        count a passed check (prints "ok: MSG" when MSG is given)
#   fail MSG          count a failed check, prints "FAIL <suite>: MSG"
#   check_eq NAME EXPECTED ACTUAL   pass if equal, else fail NAME and print a unified diff
#   check NAME CMD...               pass if CMD succeeds, else fail NAME with CMD's output
#   check_contains NAME NEEDLE HAYSTACK   pass if the text HAYSTACK contains NEEDLE literally
#   slurm_up [VAR=value...]   starts a one-node Slurm (tests/tools/slurm.sh) in $SCRATCH/slurm,
#                     stopped on exit, and exports SLURM_CONF; if it cannot start, the suite
#                     fails at once. VAR=value words go to slurm.sh's environment (e.g.
#                     SITEGEN_SLURM_TASK_PLUGIN=task/affinity).
#   need_tool X...    each X must be a command; if one is missing the suite fails loudly
#                     at once ("0 passed, 1 failed") -- real-tool tests are never skipped
#   finish            prints "N passed, N failed" and exits: 0 iff nothing failed and at
#                     least one check passed (a suite that checked nothing is a failure)
#
# Counts live in a file under SCRATCH, so pass/fail inside subshells, pipelines
# (`... | while read; do check_eq ...; done`) and background jobs count too.
# SC2034: SUITE_NAME and SCRATCH are for the sourcing suite; SC2119/SC2120: pass takes an
# optional message.
# shellcheck disable=SC2034,SC2119,SC2120

SUITE_NAME=${SUITE_NAME:-$(basename "${BASH_SOURCE[1]:-suite}" .sh)}
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/sitegen-test.XXXXXX")
_COMMON_RESULTS=$SCRATCH/.results
# sitegen's incremental-build state goes to the suite's scratch, not the user's ~/.cache.
export SITEGEN_STATE_DIR=${SITEGEN_STATE_DIR:-$SCRATCH/.sitegen-state}
_COMMON_HOOKS=()
: >"$_COMMON_RESULTS"

_COMMON_FINISHED=""

_common_exit() {
  local rc=$? i
  if [[ -z $_COMMON_FINISHED && $BASHPID == "$_COMMON_PID" ]]; then
    echo "FAIL $SUITE_NAME: the suite ended (status $rc) without calling finish"
    [[ $rc -ne 0 ]] || rc=1
  fi
  for ((i = ${#_COMMON_HOOKS[@]} - 1; i >= 0; i--)); do
    eval "${_COMMON_HOOKS[i]}" || echo "$SUITE_NAME: exit hook failed: ${_COMMON_HOOKS[i]}" >&2
  done
  rm -rf "$SCRATCH"
  return "$rc"
}
# With set -e, say where the suite died (the ERR trap runs just before set -e exits).
_common_err() {
  [[ $- == *e* ]] && echo "FAIL $SUITE_NAME: line $1: command failed with status $2: $3" >&2
  return 0
}
_COMMON_PID=$BASHPID
trap _common_exit EXIT
trap '_common_err "$LINENO" "$?" "$BASH_COMMAND"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

at_exit() { _COMMON_HOOKS+=("$1"); }

_COMMON_SLURM=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/slurm.sh
slurm_up() {
  local dir=$SCRATCH/slurm env_line
  at_exit "bash '$_COMMON_SLURM' down '$dir'"
  if ! env_line=$(env "$@" bash "$_COMMON_SLURM" up "$dir"); then
    fail "the local Slurm did not start"
    finish
  fi
  eval "$env_line"
}

pass() {
  echo P >>"$_COMMON_RESULTS"
  if [[ $# -gt 0 ]]; then echo "ok: $*"; fi
}

fail() {
  echo F >>"$_COMMON_RESULTS"
  echo "FAIL $SUITE_NAME: $*"
}

check_eq() {
  if [[ $2 == "$3" ]]; then
    pass
  else
    fail "$1"
    diff -u --label expected --label actual <(printf '%s\n' "$2") <(printf '%s\n' "$3") | head -n 200 || true
  fi
}

check() {
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then
    pass
  else
    fail "$name (exit $?: $*)"
    printf '%s\n' "$out" | head -n 100
  fi
}

check_contains() {
  if [[ $3 == *"$2"* ]]; then
    pass
  else
    fail "$1: no '$2' in:"
    printf '%s\n' "$3" | head -n 100
  fi
}

need_tool() {
  local t
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1; then
      fail "required tool '$t' is not installed (run tests/tools/install-deps.sh); real-tool tests are never skipped"
      finish
    fi
  done
}

finish() {
  local passed failed
  passed=$(grep -c '^P$' "$_COMMON_RESULTS" || true)
  failed=$(grep -c '^F$' "$_COMMON_RESULTS" || true)
  if [[ $passed -eq 0 && $failed -eq 0 ]]; then
    echo "FAIL $SUITE_NAME: no check ran"
    failed=1
  fi
  echo "$passed passed, $failed failed"
  _COMMON_FINISHED=1
  [[ $failed -eq 0 ]] && exit 0
  exit 1
}

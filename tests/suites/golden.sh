#!/usr/bin/env bash
# Runs every tests/golden/<case>/: `sitegen --out-dir TMP <args>` (default: build --all
# --prefix /opt/golden) inside the case directory must produce exactly the tree in
# expected/. SITEGEN_UPDATE=1 replaces expected/ with the actual output.
set -euo pipefail
sitegen=$(realpath "${1:?usage: golden.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
passed=0 failed=0
for case_dir in "$root"/tests/golden/*/; do
  name=$(basename "$case_dir")
  args="build --all --prefix /opt/golden"
  [[ -f $case_dir/args ]] && args=$(<"$case_dir/args")
  out=$(mktemp -d)
  # shellcheck disable=SC2086  # args is a word list by design
  if ! (cd "$case_dir" && "$sitegen" --out-dir "$out" $args) >/dev/null 2>"$out.err"; then
    failed=$((failed + 1))
    echo "FAIL golden/$name: sitegen failed:"; cat "$out.err"
    rm -rf "$out" "$out.err"; continue
  fi
  if [[ ${SITEGEN_UPDATE:-} == 1 ]]; then
    rm -rf "$case_dir/expected"; cp -a "$out" "$case_dir/expected"; rm -f "$case_dir/expected/.sitegen.lock"
  fi
  rm -f "$out/.sitegen.lock"  # the publish lock is not an output
  if report=$(diff -r "$case_dir/expected" "$out" 2>&1); then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL golden/$name: output differs from expected/ (first difference):"
    echo "$report" | head -n 8
  fi
  rm -rf "$out" "$out.err"
done
echo "golden: $passed passed, $failed failed"
[[ $passed -gt 0 && $failed == 0 ]]

#!/usr/bin/env bash
# Runs every tests/diagnostics/<case>/: `sitegen <args>` inside the case directory must exit
# with `expected_exit` and print exactly `expected_stderr`; a failing build writes nothing.
# SITEGEN_UPDATE=1 rewrites the expected files from the actual output.
set -euo pipefail
sitegen=$(realpath "${1:?usage: diagnostics.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
passed=0 failed=0
for case_dir in "$root"/tests/diagnostics/*/; do
  name=$(basename "$case_dir")
  args="check bad"
  [[ -f $case_dir/args ]] && args=$(<"$case_dir/args")
  out=$(mktemp -d)
  set +e
  # shellcheck disable=SC2086  # args is a word list by design
  (cd "$case_dir" && "$sitegen" --out-dir "$out" $args) >"$out.stdout" 2>"$out.stderr"
  code=$?
  set -e
  if [[ ${SITEGEN_UPDATE:-} == 1 ]]; then
    cp "$out.stderr" "$case_dir/expected_stderr"
    echo "$code" >"$case_dir/expected_exit"
  fi
  problems=""
  expected_code=$(<"$case_dir/expected_exit")
  [[ $code == "$expected_code" ]] || problems+="exit $code, expected $expected_code; "
  if ! cmp -s "$out.stderr" "$case_dir/expected_stderr"; then
    first=$(diff "$case_dir/expected_stderr" "$out.stderr" | head -n 6 || true)
    problems+="stderr differs:"$'\n'"$first"
  fi
  if [[ $code != 0 && -n $(find "$out" -mindepth 1 -print -quit) ]]; then
    problems+="files were written although the run failed; "
  fi
  if [[ -z $problems ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL diagnostics/$name: $problems"
  fi
  rm -rf "$out" "$out.stdout" "$out.stderr"
done
echo "diagnostics: $passed passed, $failed failed"
[[ $passed -gt 0 && $failed == 0 ]]

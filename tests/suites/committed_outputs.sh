#!/usr/bin/env bash
# The committed modules-out/ and easyconfigs-out/ must equal a fresh build of sites/:
# a change to sites/ or to an emitter without regenerating them fails here.
set -euo pipefail
sitegen=$(realpath "${1:?usage: committed_outputs.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$root" && "$sitegen" --out-dir "$out" build --all >/dev/null)
failed=0 passed=0
for tree in modules-out easyconfigs-out; do
  # (A build in the work tree leaves its spare beside each root it replaced: not committed.)
  if diff -r -x '.*.sitegen-spare' "$root/$tree" "$out/$tree" >"$out.diff" 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: committed $tree/ is stale; run: build/sitegen build --all"
    head -n 10 "$out.diff"
  fi
  rm -f "$out.diff"
done
echo "committed outputs: $passed passed, $failed failed"
[[ $failed == 0 ]]

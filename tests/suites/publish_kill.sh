#!/usr/bin/env bash
# Kills `sitegen build` with SIGKILL at many points of a publish and checks the promise:
# each output root is always entirely the old tree or entirely the new one, a mix of roots
# only ever exists together with the journal, and the next run finishes the job.
set -euo pipefail
sitegen=$(realpath "${1:?usage: publish_kill.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
fail() { failed=$((failed + 1)); echo "FAIL publish_kill: $*"; }

# A site big enough that a build takes a while: the local site with many stacks.
make_site() {  # make_site DIR DESCRIPTION
  mkdir -p "$1/big"
  sed -e 's/^name = "local"/name = "big"/' "$root/sites/local/site.toml" |
    sed -e '/^\[\[stacks\]\]/,$d' >"$1/big/site.toml"
  for i in $(seq 1 400); do
    cat >>"$1/big/site.toml" <<TOML
[[stacks]]
name = "pytorch"
version = "1.13.$i"
venv_extension = true
homepage = "https://pytorch.org/"
description = "$2 $i"

TOML
  done
}
make_site "$work/sites-old" "old"
make_site "$work/sites-new" "new"
"$sitegen" --sites-dir "$work/sites-new" --out-dir "$work/new" build big >/dev/null
"$sitegen" --sites-dir "$work/sites-old" --out-dir "$work/old" build big >/dev/null

tree_state() {  # prints old|new|other for one root
  if diff -r -x '.*.sitegen-spare' "$work/old/$1" "$work/out/$1" >/dev/null 2>&1; then echo old
  elif diff -r -x '.*.sitegen-spare' "$work/new/$1" "$work/out/$1" >/dev/null 2>&1; then echo new
  else echo other; fi
}

for delay in 0 0.002 0.005 0.01 0.02 0.03 0.05 0.08 0.12 0.2; do
  rm -rf "$work/out"
  cp -a "$work/old" "$work/out"
  "$sitegen" --sites-dir "$work/sites-new" --out-dir "$work/out" build big >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  m=$(tree_state modules-out/big) e=$(tree_state easyconfigs-out/big)
  if [[ $m == other || $e == other ]]; then
    fail "delay $delay: a root is neither the old nor the new tree (modules $m, easyconfigs $e)"
    continue
  fi
  if [[ $m != "$e" && ! -f $work/out/.sitegen-journal ]]; then
    fail "delay $delay: roots mix old and new without a journal to finish them"
    continue
  fi
  # The next run finishes or redoes the publish; the result is exactly the new tree.
  "$sitegen" --sites-dir "$work/sites-new" --out-dir "$work/out" build big >/dev/null
  if diff -r -x '.*.sitegen-spare' "$work/new/modules-out" "$work/out/modules-out" >/dev/null &&
     diff -r -x '.*.sitegen-spare' "$work/new/easyconfigs-out" "$work/out/easyconfigs-out" >/dev/null &&
     [[ ! -e $work/out/.sitegen-journal ]]; then
    passed=$((passed + 1))
  else
    fail "delay $delay: the run after the kill did not leave exactly the new tree"
  fi
done
echo "publish_kill: $passed passed, $failed failed"
[[ $failed == 0 ]]

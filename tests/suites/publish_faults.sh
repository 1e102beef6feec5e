#!/usr/bin/env bash
# Faults during publish on the real file system: disk full (a small tmpfs), an unwritable
# (immutable) tree, and two builds of different inputs at once. The tree is always the
# old one or the new one, never a mix, and nothing is left behind.
set -euo pipefail
sitegen=$(realpath "${1:?usage: publish_faults.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool chattr
need_tool mount

variant() {  # variant DIR DESCRIPTION STACKS: the local site with STACKS stacks
  mkdir -p "$1/local"
  sed -e '/^\[\[stacks\]\]/,$d' "$root/sites/local/site.toml" >"$1/local/site.toml"
  for ((i = 1; i <= $3; i++)); do
    printf '[[stacks]]\nname = "pytorch"\nversion = "1.13.%d"\nvenv_extension = true\nhomepage = "https://pytorch.org/"\ndescription = "%s %d"\n\n' \
      "$i" "$2" "$i" >>"$1/local/site.toml"
  done
}
# The replaced tree is kept beside each root as a hidden spare (the next build stages into it).
same_tree() { diff -r -x '.*.sitegen-spare' "$1" "$2" >/dev/null 2>&1; }
# What a failed build must not leave: a journal, or a spare (it removes what it staged).
leftovers() { find "$1" -name '*.sitegen-spare' -o -name '.sitegen-journal' | head -n 1; }

variant "$SCRATCH/small" small 1
variant "$SCRATCH/big" big 200
variant "$SCRATCH/other" other 3

# 1. Disk full: the small tree fits in 256 KiB, the big one does not.
mnt=$SCRATCH/tmpfs
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=256k tmpfs "$mnt"; then fail "cannot mount a tmpfs to simulate a full disk"; finish; fi
at_exit "umount ${mnt@Q}"
"$sitegen" --sites-dir "$SCRATCH/small" --out-dir "$mnt" build local >/dev/null
cp -a "$mnt" "$SCRATCH/before-full"
code=0
"$sitegen" --sites-dir "$SCRATCH/big" --out-dir "$mnt" build local >/dev/null 2>"$SCRATCH/full.err" || code=$?
check_eq "disk full exits 3" 3 "$code"
if grep -q 'No space left on device' "$SCRATCH/full.err"; then pass; else fail "disk full: unclear message: $(cat "$SCRATCH/full.err")"; fi
if same_tree "$SCRATCH/before-full" "$mnt"; then pass; else fail "disk full changed the published tree"; fi
check_eq "disk full leaves no staging behind" "" "$(leftovers "$mnt")"

# 2. An immutable tree: not even root can write; the build fails cleanly.
out=$SCRATCH/immutable
"$sitegen" --sites-dir "$SCRATCH/small" --out-dir "$out" build local >/dev/null
cp -a "$out" "$SCRATCH/before-immutable"
chattr +i "$out/modules-out"
at_exit "chattr -i ${out@Q}/modules-out"
code=0
"$sitegen" --sites-dir "$SCRATCH/other" --out-dir "$out" build local >/dev/null 2>"$SCRATCH/imm.err" || code=$?
chattr -i "$out/modules-out"
check_eq "unwritable tree exits 3" 3 "$code"
if same_tree "$SCRATCH/before-immutable" "$out"; then pass; else fail "a failed build changed the tree"; diff -r -x '.*.sitegen-spare' "$SCRATCH/before-immutable" "$out" | head; fi

# 3. Concurrent builds of different inputs on one tree: the lock serialises them, so the
#    result is exactly one complete tree, never a mix.
"$sitegen" --sites-dir "$SCRATCH/small" --out-dir "$SCRATCH/ref-small" build local >/dev/null
"$sitegen" --sites-dir "$SCRATCH/other" --out-dir "$SCRATCH/ref-other" build local >/dev/null
for round in 1 2 3 4 5; do
  out=$SCRATCH/race-$round
  "$sitegen" --sites-dir "$SCRATCH/small" --out-dir "$out" build local >/dev/null 2>&1 &
  a=$!
  "$sitegen" --sites-dir "$SCRATCH/other" --out-dir "$out" build local >/dev/null 2>&1 &
  b=$!
  wait "$a" "$b" || { fail "round $round: a concurrent build failed"; continue; }
  ok=0
  for tree in modules-out easyconfigs-out; do
    if same_tree "$SCRATCH/ref-small/$tree" "$out/$tree" || same_tree "$SCRATCH/ref-other/$tree" "$out/$tree"; then
      ok=$((ok + 1))
    fi
  done
  if [[ $ok == 2 && ! -e $out/.sitegen-journal ]]; then pass; else fail "round $round: the tree is a mix of two builds"; fi
done
finish

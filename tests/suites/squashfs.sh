#!/usr/bin/env bash
# LUMI's make-squashfs / unmake-squashfs, generated: pack the stack's user-software tree into
# user-software.squashfs and unpack it back unchanged, refusing to overwrite either.
set -euo pipefail
sitegen=$(realpath "${1:?usage: squashfs.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool mksquashfs unsquashfs
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH" build lumi --prefix "$SCRATCH/modules-out/lumi" >/dev/null
stack=$(find "$SCRATCH/modules-out/lumi/software" -mindepth 2 -maxdepth 2 -type d | head -n 1)
mkdir -p "$stack/user-software/venv/pytorch/lib" "$SCRATCH/orig"
printf 'print("hi")\n' >"$stack/user-software/venv/pytorch/lib/probe.py"
ln -s probe.py "$stack/user-software/venv/pytorch/lib/link.py"
cp -a "$stack/user-software/." "$SCRATCH/orig/"
check "make-squashfs packs user-software" bash "$stack/bin/make-squashfs"
if [[ -f $stack/user-software.squashfs ]]; then pass; else fail "no user-software.squashfs"; fi
if bash "$stack/bin/make-squashfs" 2>/dev/null; then fail "make-squashfs overwrote an existing squashfs"; else pass; fi
rm -rf "$stack/user-software"
check "unmake-squashfs unpacks it" bash "$stack/bin/unmake-squashfs"
if diff -r --no-dereference "$SCRATCH/orig" "$stack/user-software"; then pass; else fail "unpacked tree differs"; fi
if bash "$stack/bin/unmake-squashfs" 2>/dev/null; then fail "unmake-squashfs overwrote user-software"; else pass; fi
# From inside the container both refuse.
if SINGULARITY_CONTAINER=x bash "$stack/bin/make-squashfs" 2>/dev/null; then fail "ran inside the container"; else pass; fi
finish

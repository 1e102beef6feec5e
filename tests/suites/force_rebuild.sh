#!/usr/bin/env bash
# `build --force` on a real tree leaves exactly what a fresh build writes: the same bytes,
# modes and file types, no stray file, directory, symlink, FIFO or socket, whatever was done
# to the tree by hand (one change at a time and all at once). Without --force the same tree is
# refused (exit 3) and left untouched. Links out of the tree are removed, never followed.
set -euo pipefail
sitegen=$(realpath "${1:?usage: force_rebuild.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool python3 mkfifo sha256sum

sites=$SCRATCH/sites
mkdir -p "$sites/local"
cp "$root/sites/local/site.toml" "$sites/local/"
build() { "$sitegen" --sites-dir "$sites" --out-dir "$1" build local "${@:2}"; }

# Everything about a tree: type, mode, size and link target of every entry, and every hash.
snapshot() {
  # (not the replaced tree kept as a hidden spare beside each root: the next build stages into it)
  (cd "$1" && find . -mindepth 1 -name '.*.sitegen-spare' -prune -o -printf '%y %m %s %l %P\n' | LC_ALL=C sort &&
    find . -name '.*.sitegen-spare' -prune -o -type f -exec sha256sum {} + | LC_ALL=C sort)
}

build "$SCRATCH/fresh" >/dev/null
fresh=$(snapshot "$SCRATCH/fresh")
# The files a build writes (outputs, without the manifests).
files=$(find "$SCRATCH/fresh" -type f ! -name .sitegen-manifest ! -name .sitegen.lock | wc -l)
outside=$SCRATCH/outside
mkdir -p "$outside/dir"
echo precious >"$outside/dir/keep"
echo precious >"$outside/file"
m=modules-out/local
e=easyconfigs-out/local
module=$m/modulefiles/pytorch/1.13.1-cpu.lua
script=$m/software/pytorch/1.13.1-cpu/runscripts/get-master

# change NAME: applies hand change NAME in the current directory (an output dir).
change() {
  case $1 in
    edited) echo '-- my fix' >>"$module" ;;
    stray-file) echo mine >"$m/notes.txt" ;;
    stray-tree) mkdir -p "$e/x/y" && echo mine >"$e/x/y/z.eb" ;;
    stray-empty-dir) mkdir "$m/modulefiles/empty" ;;
    script-symlink) cp "$script" "$SCRATCH/copy-$RANDOM" && rm "$script" && ln -s "$outside/file" "$script" ;;
    dir-symlink) mv "$m/software" "$SCRATCH/moved-$RANDOM" && ln -s "$outside/dir" "$m/software" ;;
    file-mode) chmod 600 "$module" ;;
    exec-bit) chmod +x "$e"/p/*/*.eb ;;
    dir-mode) chmod 700 "$m/modulefiles" ;;
    locked-dirs) mkdir -p "$m/locked/inner" && echo x >"$m/locked/inner/f" && chmod 000 "$m/locked/inner" && chmod 500 "$m/locked" ;;
    fifo) mkfifo "$m/fifo" ;;
    socket) python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$m/socket" ;;
    manifest) echo '# edited' >>"$m/.sitegen-manifest" ;;
    deleted) rm "$module" ;;
  esac
}
# Changes sitegen fixes without --force (nothing of the user's is lost by undoing them).
harmless=" dir-mode manifest deleted "
all=(edited stray-file stray-tree stray-empty-dir script-symlink dir-symlink file-mode exec-bit dir-mode locked-dirs fifo socket manifest deleted)

for name in "${all[@]}" all; do
  out=$SCRATCH/out-$name
  build "$out" >/dev/null
  (
    cd "$out"
    if [[ $name == all ]]; then for c in "${all[@]}"; do change "$c"; done; else change "$name"; fi
  )
  before=$(snapshot "$out")
  rc=0
  build "$out" >/dev/null 2>"$SCRATCH/plain.err" || rc=$?
  if [[ $harmless == *" $name "* ]]; then
    check_eq "$name: a plain build fixes it" 0 "$rc"
  else
    check_eq "$name: a plain build refuses" 3 "$rc"
    check_eq "$name: the refused tree is untouched" "$before" "$(snapshot "$out")"
  fi
  start=$(date +%s.%N)
  rc=0
  build "$out" --force >"$SCRATCH/force.out" 2>"$SCRATCH/force.err" || rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  printf '  %-16s --force %s s: %s\n' "$name" "$secs" "$(cat "$SCRATCH/force.out")"
  check_eq "$name: --force exits 0" 0 "$rc"
  check_eq "$name: --force leaves exactly a fresh tree" "$fresh" "$(snapshot "$out")"
  check_eq "$name: no journal left beside the roots" "" "$(find "$out" -maxdepth 2 -name '.sitegen-journal')"
  check_eq "$name: the next build has nothing to do" \
    "sitegen: wrote local: $files files (0 added, 0 changed, 0 removed, $files unchanged)" "$(build "$out" 2>&1)"
  check_eq "$name: links out of the tree were not followed" "precious precious" \
    "$(cat "$outside/dir/keep") $(cat "$outside/file")"
done
finish

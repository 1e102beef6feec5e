#!/usr/bin/env bash
# Special files where sitegen expects a site file, an `extends` target or a rule file:
# /dev/zero, /dev/urandom, a FIFO, a directory, a socket, and symlinks to each. Every one is
# refused at once with what it is (no hang, no read, no growth), and a large regular file is
# refused by its size while it is read. Prints each case's wall time and peak memory.
set -euo pipefail
sitegen=$(realpath "${1:?usage: special_files.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool python3 /usr/bin/time mkfifo timeout

specials=$SCRATCH/specials
mkdir -p "$specials/dir"
mkfifo "$specials/fifo"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$specials/socket"
declare -A what=(
  [/dev/zero]="a character device" [/dev/urandom]="a character device" [$specials/fifo]="a FIFO"
  [$specials/dir]="a directory" [$specials/socket]="a socket"
)

# run_case NAME EXPECTED ARGS...: sitegen exits 1 within 5 s (timeout: a hang fails) using at
# most 100 MB, with EXPECTED in stderr.
run_case() {
  local name=$1 expected=$2 rc=0 secs kb
  shift 2
  timeout 20 /usr/bin/time -f '%e %M' -o "$SCRATCH/time" "$sitegen" "$@" >/dev/null 2>"$SCRATCH/err" </dev/null || rc=$?
  read -r secs kb < <(tail -n 1 "$SCRATCH/time" 2>/dev/null || echo "20 0")
  printf '  %-52s %5.2f s %6d KB\n' "$name" "$secs" "$kb"
  check_eq "$name: exit code" 1 "$rc"
  check_contains "$name: message" "$expected" "$(cat "$SCRATCH/err")"
  if awk -v s="$secs" -v k="$kb" 'BEGIN { exit !(s <= 5 && k <= 100 * 1024) }'; then pass; else fail "$name: ${secs}s, ${kb} KB"; fi
}

echo "special files (wall time, peak memory):"
n=0
# Devices live outside any sites directory: as a site file or an extends target (directly or
# through a symlink) they are refused before being opened, as anything outside it is. FIFOs,
# sockets and directories are made inside the sites directory, where only the read refuses
# them. Rule files are not confined to a directory: the read refuses every kind.
for target in /dev/zero /dev/urandom fifo dir socket; do
  for via in itself symlink; do
    n=$((n + 1))
    cd "$SCRATCH" && mkdir "case-$n" && cd "case-$n"  # paths in messages are relative to here
    mkdir -p sites/bad sites/shared sites/ext sites/local rules
    kind=${what[$target]:-${what[$specials/$target]}}
    reason="not a regular file ($kind); sitegen reads only regular files"
    if [[ $target == /dev/* ]]; then
      if [[ $via == itself ]]; then path=$target; else path=$SCRATCH/link-$n; ln -s "$target" "$path"; fi
      site_expected="error: cannot read site 'bad': sites/bad/site.toml leads outside the sites directory 'sites' through a symbolic link"
      extends_expected="sites/ext/site.toml:1:12: error: '../shared/special.toml' leads outside the sites directory 'sites' through a symbolic link"
      ln -s "$path" sites/bad/site.toml
      ln -s "$path" sites/shared/special.toml
    else
      case $target in
        fifo) mkfifo sites/shared/thing ;;
        dir) mkdir sites/shared/thing ;;
        socket) python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' sites/shared/thing ;;
      esac
      path=$PWD/sites/shared/thing
      site_expected="error: cannot read site 'bad': sites/bad/site.toml: $reason"
      extends_expected="sites/ext/site.toml:1:12: error: cannot read extended file: sites/shared/special.toml: $reason"
      if [[ $via == itself ]]; then
        mv sites/shared/thing sites/shared/special.toml
        path=$PWD/sites/shared/special.toml
        ln -s ../shared/special.toml sites/bad/site.toml  # the site file: a link inside the tree
      else
        ln -s thing sites/shared/special.toml
        ln -s ../shared/thing sites/bad/site.toml
      fi
    fi
    run_case "site.toml: $(basename "$target") ($via)" "$site_expected" --sites-dir sites check bad
    { echo 'extends = ["../shared/special.toml"]'; cat "$root/sites/local/site.toml"; } >sites/ext/site.toml
    run_case "extends target: $(basename "$target") ($via)" "$extends_expected" --sites-dir sites check ext
    # A rule file.
    cp "$root/sites/local/site.toml" sites/local/site.toml
    ln -s "$path" rules/special.lua
    run_case "rule file: $(basename "$target") ($via)" \
      "rules/special.lua: error: cannot read rule file: rules/special.lua: $reason" \
      --sites-dir sites check local --rules rules
  done
done

# Regular files past the size limit: refused by their size, without being read into memory.
cd "$SCRATCH" && mkdir big && cd big
mkdir -p sites/bad sites/shared sites/local rules
truncate -s 1G sites/shared/huge.toml
{ echo 'extends = ["../shared/huge.toml"]'; cat "$root/sites/local/site.toml"; } >sites/bad/site.toml
run_case "extends target: a 1 GiB regular file" \
  "sites/bad/site.toml:1:12: error: cannot read extended file: sites/shared/huge.toml: file is 1073741824 bytes; site files are limited to 8388608 bytes" \
  --sites-dir sites check bad
cp "$root/sites/local/site.toml" sites/local/
truncate -s 1G rules/huge.lua
run_case "rule file: a 1 GiB regular file" \
  "rules/huge.lua: error: cannot read rule file: rules/huge.lua: file is 1073741824 bytes; the limit is 1048576 bytes" \
  --sites-dir sites check local --rules rules
cd "$root"
finish

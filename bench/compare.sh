#!/usr/bin/env bash
# Steady one-stack rebuilds of `bench/gen-site N` by two or more sitegen binaries, taken in
# turns (A B, B A, A B ...) so that a VM whose speed drifts within minutes slows them alike and
# neither always runs second; prints
# each binary's min and median wall time and its mean user and system CPU.
#   bench/compare.sh [-n N] [-r ROUNDS] [-d DIR] SITEGEN...     (defaults: 2000, 12, /dev/shm)
# Each binary gets its own copy of the site, out dir and state, built once before the rounds;
# every round edits one stack of each copy (as bench/incremental.sh: "2.5" <-> "2.5.0") and
# rebuilds it. The first round is left out (it rebuilds into a fresh spare: not the steady case).
set -euo pipefail
n=2000 rounds=12 dir=/dev/shm
while getopts n:r:d: opt; do
  case $opt in
    n) n=$OPTARG ;;
    r) rounds=$OPTARG ;;
    d) dir=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 ]] || { echo "usage: compare.sh [-n N] [-r ROUNDS] [-d DIR] SITEGEN..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
binaries=()
for b in "$@"; do binaries+=("$(realpath "$b")"); done
work=$(mktemp -d "$dir/sitegen-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

edit() {
  local toml=$1/bench/site.toml
  if grep -q '^torch = "2\.5"$' "$toml"; then sed -i 's/^torch = "2\.5"$/torch = "2.5.0"/' "$toml"
  else sed -i 's/^torch = "2\.5\.0"$/torch = "2.5"/' "$toml"; fi
}
# build I: binary I's rebuild of its own copy; with TIMES, appends "wall user sys" to its times
# (the wall from the shell's clock, to the microsecond: time's %e has centiseconds).
build() {
  local w=$work/$1 t=$EPOCHREALTIME
  SITEGEN_STATE_DIR=$w/state /usr/bin/time -f '%U %S' -o "$w/last" \
    "${binaries[$1]}" --sites-dir "$w/sites" --out-dir "$w/out" build bench >/dev/null
  local wall
  wall=$(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }')
  if [[ ${2-} == times ]]; then echo "$wall $(cat "$w/last")" >>"$w/times"; fi
}

for i in "${!binaries[@]}"; do
  mkdir -p "$work/$i"
  "$here/gen-site" "$n" "$work/$i/sites" >/dev/null
  build "$i"
done
for round in $(seq 0 "$rounds"); do
  # (Every other round in the reverse order: of two copies of one binary taken A B A B, the
  # second gained 2-3% on this VM, twice; docs/performance.md, fifteenth session.)
  order=()
  for i in "${!binaries[@]}"; do
    if ((round % 2)); then order=("$i" "${order[@]}"); else order+=("$i"); fi
  done
  for i in "${order[@]}"; do
    edit "$work/$i/sites"
    if [[ $round -eq 0 ]]; then build "$i"; else build "$i" times; fi
  done
done

echo "| binary | steady one-stack rebuilds | min (s) | median (s) | user, mean (s) | sys, mean (s) |"
echo "|---|---:|---:|---:|---:|---:|"
for i in "${!binaries[@]}"; do
  sort -n "$work/$i/times" | awk -v name="${binaries[$i]}" '
    { wall[NR] = $1; user += $2; sys += $3 }
    END { printf "| %s | %d | %.3f | %.3f | %.3f | %.3f |\n", name, NR, wall[1], wall[int((NR + 1) / 2)], user / NR, sys / NR }'
done

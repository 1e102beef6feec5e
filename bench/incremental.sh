#!/usr/bin/env bash
# Incremental-rebuild benchmark: `bench/gen-site N` built fresh, rebuilt up to date, rebuilt
# after one stack's edit (the first change after a full build: no spare tree exists yet), and
# after a second edit (the usual case: the spare left by the first is reused), in each output
# location (default: tmpfs and disk).
#   bench/incremental.sh SITEGEN [N] [DIR...]     (default N 2000, DIR /dev/shm /var/tmp)
# Wall times: best of 3 (noisy on a shared machine). With CALLGRIND=M it also prints the
# instructions of the three builds of an M-stack site (valgrind --tool=callgrind, children
# followed: rules, hooks and the self-check run in forked sandboxes), the repeatable measure.
set -euo pipefail
sitegen=$(realpath "${1:?usage: incremental.sh SITEGEN [N] [DIR...]}")
n=${2:-2000}
shift $(($# < 2 ? $# : 2))
dirs=("$@")
[[ ${#dirs[@]} -gt 0 ]] || dirs=(/dev/shm /var/tmp)
here=$(cd "$(dirname "$0")" && pwd)

# edit SITES: changes one stack's torch version (stack 5's "2.5" <-> "2.5.0", alternating, so
# every call changes exactly one stack; the dots are escaped: "2.5.0" unescaped also matches
# stacks 500, 510, ..., 590).
edit() {
  local toml=$1/bench/site.toml
  if grep -q '^torch = "2\.5"$' "$toml"; then sed -i 's/^torch = "2\.5"$/torch = "2.5.0"/' "$toml"
  else sed -i 's/^torch = "2\.5\.0"$/torch = "2.5"/' "$toml"; fi
}
secs() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
best() { printf '%s\n' "$@" | sort -n | head -1; }

echo "| where | stacks | full build (s) | up to date (s) | ratio | first change (s) | ratio | next change (s) | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for dir in "${dirs[@]}"; do
  work=$(mktemp -d "$dir/sitegen-incr.XXXXXX")
  export SITEGEN_STATE_DIR=$work/state
  "$here/gen-site" "$n" "$work/sites"
  build() { "$sitegen" --sites-dir "$work/sites" --out-dir "$work/out" build bench >/dev/null; }
  full=() noop=() one=() next=()
  for _ in 1 2 3; do
    rm -rf "$work/out" "$work/state"; sync
    t=$EPOCHREALTIME; build; full+=("$(secs "$t")")
    t=$EPOCHREALTIME; build; noop+=("$(secs "$t")")
    edit "$work/sites"
    t=$EPOCHREALTIME; build; one+=("$(secs "$t")")
    edit "$work/sites"
    t=$EPOCHREALTIME; build; next+=("$(secs "$t")")
  done
  f=$(best "${full[@]}") u=$(best "${noop[@]}") o=$(best "${one[@]}") x=$(best "${next[@]}")
  ratio() { awk -v a="$1" -v b="$f" 'BEGIN { printf "%.3f", a / b }'; }
  echo "| $dir ($(stat -f -c %T "$dir")) | $n | $f | $u | $(ratio "$u") | $o | $(ratio "$o") | $x | $(ratio "$x") |"
  rm -rf "$work"
done

if [[ -n ${CALLGRIND:-} ]]; then
  work=$(mktemp -d /dev/shm/sitegen-incr-cg.XXXXXX)
  export SITEGEN_STATE_DIR=$work/state
  "$here/gen-site" "$CALLGRIND" "$work/sites"
  count() {
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg.%p" \
      "$sitegen" --sites-dir "$work/sites" --out-dir "$work/out" build bench >"$work/log" 2>&1
    grep -h 'Collected' "$work/log" | awk '{ s += $4 } END { printf "%.0f", s }'
  }
  f=$(count) u=$(count)
  edit "$work/sites"
  o=$(count)
  echo
  echo "| $CALLGRIND stacks (callgrind) | full build | up to date | one stack changed |"
  echo "|---|---:|---:|---:|"
  echo "| instructions | $f | $u ($(awk -v a="$u" -v b="$f" 'BEGIN { printf "%.3f", a / b }')x) | $o ($(awk -v a="$o" -v b="$f" 'BEGIN { printf "%.3f", a / b }')x) |"
  rm -rf "$work"
fi

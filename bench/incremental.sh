#!/usr/bin/env bash
# Incremental-rebuild benchmark: `bench/gen-site N` built fresh, rebuilt up to date, rebuilt
# after one stack's edit (the first change after a full build: no spare tree exists yet), and
# after a second edit (the usual case: the spare left by the first is reused), in each output
# location (default: tmpfs and disk).
#   bench/incremental.sh SITEGEN [N] [DIR...]     (default N 2000, DIR /dev/shm /var/tmp)
# Wall times: best of ROUNDS (an environment variable, default 3; noisy on a shared machine:
# more rounds, each a fresh full build and the rebuilds after it, find the quiet moments of
# a VM whose speed drifts within minutes). "check only" is `sitegen check` of the
# same site and out dir (so it reads the stack memo and the rules' memo the builds left, as a
# rebuild does): loading, checking and the rules (or their kept findings), which every rebuild
# after an edit goes through whole, so it is the floor under "next change". With CALLGRIND=M it
# also prints the instructions of the sitegen process (its threads; not its forked sandboxes,
# whose counts callgrind starts from the parent's; the rules' view of the site is made in the
# process since the rules' memo) in the builds of an M-stack site, all and
# outside SHA-256 (which runs its portable code under valgrind, not SHA-NI): the repeatable
# measure.
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

echo "| where | stacks | full build (s) | up to date (s) | ratio | first change (s) | ratio | next change (s) | ratio | check only (s) | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for dir in "${dirs[@]}"; do
  work=$(mktemp -d "$dir/sitegen-incr.XXXXXX")
  export SITEGEN_STATE_DIR=$work/state
  "$here/gen-site" "$n" "$work/sites"
  build() { "$sitegen" --sites-dir "$work/sites" --out-dir "$work/out" build bench >/dev/null; }
  full=() noop=() one=() next=() check=()
  for _ in $(seq "${ROUNDS:-3}"); do
    rm -rf "$work/out" "$work/state"; sync
    t=$EPOCHREALTIME; build; full+=("$(secs "$t")")
    t=$EPOCHREALTIME; build; noop+=("$(secs "$t")")
    edit "$work/sites"
    t=$EPOCHREALTIME; build; one+=("$(secs "$t")")
    edit "$work/sites"
    t=$EPOCHREALTIME; build; next+=("$(secs "$t")")
    t=$EPOCHREALTIME; "$sitegen" --sites-dir "$work/sites" --out-dir "$work/out" check bench >/dev/null; check+=("$(secs "$t")")
  done
  f=$(best "${full[@]}") u=$(best "${noop[@]}") o=$(best "${one[@]}") x=$(best "${next[@]}") c=$(best "${check[@]}")
  ratio() { awk -v a="$1" -v b="$f" 'BEGIN { printf "%.3f", a / b }'; }
  echo "| $dir ($(stat -f -c %T "$dir")) | $n | $f | $u | $(ratio "$u") | $o | $(ratio "$o") | $x | $(ratio "$x") | $c | $(ratio "$c") |"
  rm -rf "$work"
done

if [[ -n ${CALLGRIND:-} ]]; then
  work=$(mktemp -d /dev/shm/sitegen-incr-cg.XXXXXX)
  export SITEGEN_STATE_DIR=$work/state
  "$here/gen-site" "$CALLGRIND" "$work/sites"
  # count: "ALL OUTSIDE_SHA256" for one build, from the profile of the process valgrind started.
  count() {
    rm -f "$work"/cg.*
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
      "$sitegen" --sites-dir "$work/sites" --out-dir "$work/out" build bench >"$work/log" 2>&1
    local pid all sha
    pid=$(head -1 "$work/log" | sed -E 's/^==([0-9]+)==.*/\1/')
    all=$(grep "^==$pid== Collected" "$work/log" | awk '{ print $4 }')
    # (every block hashed goes through a compress function, called through a pointer, so never
    # inlined: digests of outputs, build keys, memo keys; listed whole: --threshold=100)
    sha=$(callgrind_annotate --inclusive=yes --threshold=100 "$work/cg.$pid" |
      awk '/sitegen::\(anonymous namespace\)::compress_(portable|bmi2|sha_ni)\(/ && !/=>/ { gsub(",", "", $1); s += $1 } END { print s + 0 }')
    echo "$all $((all - sha))"
  }
  read -r fa fo < <(count)
  read -r ua uo < <(count)
  edit "$work/sites"
  count >/dev/null  # the first change: no spare yet
  edit "$work/sites"
  read -r oa oo < <(count)
  x() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
  echo
  echo "| $CALLGRIND stacks (callgrind, sitegen process) | full build | up to date | next change |"
  echo "|---|---:|---:|---:|"
  echo "| instructions | $fa | $ua ($(x "$ua" "$fa")x) | $oa ($(x "$oa" "$fa")x) |"
  echo "| outside SHA-256 | $fo | $uo ($(x "$uo" "$fo")x) | $oo ($(x "$oo" "$fo")x) |"
  rm -rf "$work"
fi

#!/usr/bin/env bash
# Compile-speed benchmark: `sitegen build` of synthetic sites with N stacks (fresh output
# tree each run) against `cp -r` of the same tree (the floor), plus the five seed sites.
#   bench/compile.sh SITEGEN [N...]   (default N: 10 100 1000 10000)
# Prints Markdown tables.
set -euo pipefail
sitegen=$(realpath "${1:?usage: compile.sh SITEGEN [N...]}")
shift
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(10 100 1000 10000)
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# best_of RUNS CMD...: the best wall time in seconds and the peak RSS (KB) of that run.
best_of() {
  local runs=$1 best="" rss="" t m i
  shift
  for ((i = 0; i < runs; i++)); do
    "${PREPARE[@]}"
    local start=$EPOCHREALTIME
    /usr/bin/time -f '%M' -o "$work/time" "$@" >/dev/null 2>&1
    t=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }')
    read -r m <"$work/time"
    if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t rss=$m; fi
  done
  echo "$best $rss"
}

echo "| stacks | files | sitegen build (s) | peak RSS (MB) | cp -r floor (s) | build / floor | ms per stack |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
declare -A build_time
for n in "${sizes[@]}"; do
  "$here/gen-site" "$n" "$work/sites-$n"
  runs=3; [[ $n -ge 10000 ]] && runs=2
  PREPARE=(rm -rf "$work/out")
  read -r t rss < <(best_of "$runs" "$sitegen" --sites-dir "$work/sites-$n" --out-dir "$work/out" build bench)
  files=$(find "$work/out" -type f | wc -l)
  PREPARE=(rm -rf "$work/copy")
  read -r floor _ < <(best_of "$runs" cp -r "$work/out" "$work/copy")
  build_time[$n]=$t
  awk -v n="$n" -v f="$files" -v t="$t" -v r="$rss" -v c="$floor" 'BEGIN {
    printf "| %d | %d | %.3f | %.1f | %.3f | %.2f | %.3f |\n", n, f, t, r / 1024, c, (c > 0 ? t / c : 0), 1000 * t / n }'
  rm -rf "$work/out" "$work/copy" "$work/sites-$n"
done
if [[ -n ${build_time[1000]:-} && -n ${build_time[10000]:-} ]]; then
  awk -v a="${build_time[1000]}" -v b="${build_time[10000]}" 'BEGIN { printf "\nScaling: build(10,000) / build(1,000) = %.1f (linear = 10)\n", b / a }'
fi

echo
echo "| seed sites (lumi, frontier, cirrus, aurora, local) | best of 10 (ms) |"
echo "|---|---:|"
PREPARE=(rm -rf "$work/seeds")
read -r t _ < <(best_of 10 "$sitegen" --sites-dir "$root/sites" --out-dir "$work/seeds" build --all)
awk -v t="$t" 'BEGIN { printf "| sitegen build --all (fresh tree) | %.1f |\n", 1000 * t }'
PREPARE=(true)
read -r t _ < <(best_of 10 "$sitegen" --sites-dir "$root/sites" --out-dir "$work/seeds" build --all)
awk -v t="$t" 'BEGIN { printf "| sitegen build --all (up to date) | %.1f |\n", 1000 * t }'

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

# Seed sites first, while the disk has no dirty pages from the big trees below.
echo "| seed sites (lumi, frontier, cirrus, aurora, local) | mean of 30 (ms) |"
echo "|---|---:|"
hyperfine -N --style none --warmup 3 --runs 30 --export-json "$work/seed.json" \
  -n "sitegen build --all (fresh tree)" --prepare "rm -rf $work/seeds" \
  "$sitegen --sites-dir $root/sites --out-dir $work/seeds build --all" >/dev/null 2>&1
hyperfine -N --style none --warmup 3 --runs 30 --export-json "$work/seed2.json" \
  -n "sitegen build --all (up to date)" \
  "$sitegen --sites-dir $root/sites --out-dir $work/seeds build --all" >/dev/null 2>&1
hyperfine -N --style none --warmup 3 --runs 30 --export-json "$work/seed3.json" \
  -n "sitegen check --all (schema + Lua rules)" \
  "$sitegen --sites-dir $root/sites check --all" >/dev/null 2>&1
python3 - "$work"/seed.json "$work"/seed2.json "$work"/seed3.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    for r in json.load(open(path))["results"]:
        print(f"| {r['command']} | {1000 * r['mean']:.1f} |")
PY
echo

echo "| stacks | files | sitegen build (s) | peak RSS (MB) | cp -r (s) | cp -r + sync (s) | build / cp -r | build / (cp -r + sync) | ms per stack |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
declare -A build_time
for n in "${sizes[@]}"; do
  "$here/gen-site" "$n" "$work/sites-$n"
  runs=3; [[ $n -ge 10000 ]] && runs=2
  PREPARE=(rm -rf "$work/out")
  read -r t rss < <(best_of "$runs" "$sitegen" --sites-dir "$work/sites-$n" --out-dir "$work/out" build bench)
  files=$(find "$work/out" -type f | wc -l)
  PREPARE=(rm -rf "$work/copy")
  read -r floor _ < <(best_of "$runs" cp -r "$work/out" "$work/copy")
  # sitegen makes the new tree durable (syncfs) before swapping it in; so does this floor.
  read -r floor_sync _ < <(best_of "$runs" sh -c "cp -r '$work/out' '$work/copy' && sync -f '$work/copy'")
  build_time[$n]=$t
  awk -v n="$n" -v f="$files" -v t="$t" -v r="$rss" -v c="$floor" -v cs="$floor_sync" 'BEGIN {
    printf "| %d | %d | %.3f | %.1f | %.3f | %.3f | %.2f | %.2f | %.3f |\n", n, f, t, r / 1024, c, cs, (c > 0 ? t / c : 0), (cs > 0 ? t / cs : 0), 1000 * t / n }'
  rm -rf "$work/out" "$work/copy" "$work/sites-$n"
done
if [[ -n ${build_time[1000]:-} && -n ${build_time[10000]:-} ]]; then
  awk -v a="${build_time[1000]}" -v b="${build_time[10000]}" 'BEGIN { printf "\nScaling: build(10,000) / build(1,000) = %.1f (linear = 10)\n", b / a }'
fi



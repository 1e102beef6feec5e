#!/usr/bin/env bash
# The steps that split their own work on four CPUs or more (out/threads.h: a site file of
# 256 KiB or more parsed in pieces, the rule files in up to four children, the output tree's
# scan on up to four threads) give what one thread gives, on this 2-CPU machine too
# (SITEGEN_THREADS=4 turns them on): a 1,000-stack site (four pieces) built, rebuilt after a
# one-stack edit (the scans of the live tree and of its spare) and checked, with a rule's
# finding and a syntax error in its last stack (the last piece); and every tests/diagnostics
# case, against its expected output.
set -euo pipefail
sitegen=$(realpath "${1:?usage: split_threads.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
sites=$SCRATCH/sites
bash "$root/bench/gen-site" 1000 "$sites"
toml=$sites/bench/site.toml
size=$(stat -c %s "$toml")
check_eq "the site is big enough to be split (>= 256 KiB)" 1 "$((size >= 262144))"

# same NAME ARGS...: `sitegen ARGS` exits and prints the same with 1 thread as with 4.
same() {
  local name=$1 t
  shift
  for t in 1 4; do
    set +e
    SITEGEN_THREADS=$t SITEGEN_STATE_DIR=$SCRATCH/state$t "$sitegen" --sites-dir "$sites" --out-dir "$SCRATCH/out$t" "$@" \
      >"$SCRATCH/stdout$t" 2>"$SCRATCH/stderr$t"
    echo $? >"$SCRATCH/exit$t"
    set -e
  done
  check_eq "$name: exit status" "$(<"$SCRATCH/exit1")" "$(<"$SCRATCH/exit4")"
  check_eq "$name: stdout" "$(out_dir_named 1 stdout)" "$(out_dir_named 4 stdout)"
  check_eq "$name: stderr" "$(out_dir_named 1 stderr)" "$(out_dir_named 4 stderr)"
}
# out_dir_named T STREAM: that run's output, its out dir's path written OUT.
out_dir_named() { sed "s|$SCRATCH/out$1|OUT|g" "$SCRATCH/$2$1"; }

same "build" build bench
check_eq "build: exit status" 0 "$(<"$SCRATCH/exit4")"
if diff -r "$SCRATCH/out1" "$SCRATCH/out4" >"$SCRATCH/diff"; then pass; else fail "the trees differ: $(head -n 20 "$SCRATCH/diff")"; fi
same "check" check bench

# One stack edited: the rebuild scans the live tree and the spare the first build left.
sed -i 's/^torch = "2\.5"$/torch = "2.5.0"/' "$toml"
same "a one-stack rebuild" build bench
check_contains "a one-stack rebuild: one stack's files changed" "(0 added, 2 changed, 0 removed, 12998 unchanged)" \
  "$(<"$SCRATCH/stdout4")"
if diff -r "$SCRATCH/out1" "$SCRATCH/out4" >"$SCRATCH/diff"; then pass; else fail "the rebuilt trees differ: $(head -n 20 "$SCRATCH/diff")"; fi
# A hand edit of a kept stack's file is refused the same way.
printf '# edited\n' >>"$SCRATCH/out1/modules-out/bench/modulefiles/PyTorch/2.3.4-rocm-6.0.3-python-3.12-singularity-20244.lua"
printf '# edited\n' >>"$SCRATCH/out4/modules-out/bench/modulefiles/PyTorch/2.3.4-rocm-6.0.3-python-3.12-singularity-20244.lua"
sed -i 's/^torch = "2\.5\.0"$/torch = "2.5"/' "$toml"
same "a rebuild beside a hand edit" build bench
check_eq "a rebuild beside a hand edit: exit status" 3 "$(<"$SCRATCH/exit4")"
check_contains "a rebuild beside a hand edit: refused" \
  "singularity-20244.lua: error: file was edited by hand since sitegen wrote it" "$(<"$SCRATCH/stderr4")"

# The last stack's env contradicts collectives.env: the env-conflicts rule's error, at its line.
echo 'NCCL_NET_GDR_LEVEL = "4"' >>"$toml"
same "a rule's finding in the last stack" check bench
check_eq "a rule's finding: exit status" 1 "$(<"$SCRATCH/exit4")"
check_contains "a rule's finding: the rule's message" \
  "site.toml:$(wc -l <"$toml"):1: error: NCCL_NET_GDR_LEVEL is '4' here but '3' in collectives.env" "$(<"$SCRATCH/stderr4")"

# A key given twice in the last stack: toml++'s error, at the file's line and column.
echo 'MIOPEN_DISABLE_CACHE = "1"' >>"$toml"
same "a syntax error in the last stack" check bench
check_eq "a syntax error: exit status" 1 "$(<"$SCRATCH/exit4")"
check_contains "a syntax error: its line and column" \
  "site.toml:$(wc -l <"$toml"):24: error: Error while parsing key-value pair: cannot redefine existing string" \
  "$(<"$SCRATCH/stderr4")"

# Every diagnostics case, rule findings and hooks included, against its expected output.
if SITEGEN_THREADS=4 bash "$root/tests/suites/diagnostics.sh" "$sitegen" >"$SCRATCH/diagnostics" 2>&1; then
  pass
else
  fail "diagnostics with SITEGEN_THREADS=4: $(grep -m 5 FAIL "$SCRATCH/diagnostics")"
fi
finish

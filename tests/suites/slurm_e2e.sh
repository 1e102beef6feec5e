#!/usr/bin/env bash
# End to end on a real one-node Slurm: the generated batch script of the `local` site runs
# 2 ranks via srun through the generated rank wrapper; each rank does a gloo all_reduce
# with Debian's torch. Then two such jobs at once must not collide (port, cache).
set -euo pipefail
sitegen=$(realpath "${1:?usage: slurm_e2e.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool sbatch
need_tool slurmctld
if ! /usr/bin/python3 -c 'import torch.distributed'; then
  fail "Debian's python3-torch is not importable by /usr/bin/python3"
  finish
fi

slurm_dir=$SCRATCH/slurm
trap 'bash "$root/tests/tools/slurm.sh" down "$slurm_dir"; rm -rf "$SCRATCH"' EXIT
eval "$(bash "$root/tests/tools/slurm.sh" up "$slurm_dir")"

out=$SCRATCH/out
"$sitegen" --sites-dir "$root/sites" --out-dir "$out" build local --prefix "$out/modules-out/local" >/dev/null
job=$out/modules-out/local/software/pytorch/1.13.1-cpu/runscripts/job.slurm
cat >"$SCRATCH/allreduce.py" <<'PY'
import os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
env = {k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
print(" ".join(f"{k}={v}" for k, v in env.items()), f"SUM={t.item():g}", "ARGS=" + "|".join(sys.argv[1:]), flush=True)
dist.destroy_process_group()
PY

# run_job NAME: submits the job (2 ranks), waits, checks both ranks' output.
run_job() {
  local name=$1 log=$SCRATCH/$1.out code=0
  (cd "$SCRATCH" && sbatch --wait --quiet -o "$log" "$job" "$SCRATCH/allreduce.py" "arg with space" "\$(id)") || code=$?
  if [[ $code -ne 0 ]]; then fail "$name: job exited $code"; cat "$log"; return; fi
  pass
  local host
  host=$(hostname)
  for rank in 0 1; do
    line=$(grep "^RANK=$rank " "$log" || true)
    # shellcheck disable=SC2001  # a regex, not a fixed string
    check_eq "$name: rank $rank output" \
      "RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 MASTER_ADDR=$host SUM=3 ARGS=arg with space|\$(id)" \
      "$(sed -E 's/ MASTER_PORT=[0-9]+//' <<<"$line")"
  done
  grep -o 'MASTER_PORT=[0-9]*' "$log" | sort -u >"$SCRATCH/$name.port"
}

run_job single
# Two jobs at once: both must succeed, with different ports.
run_job first &
p1=$!
run_job second &
p2=$!
wait "$p1" "$p2" || true
# The background subshells counted into their own copies; recount from their logs.
for name in first second; do
  if [[ $(grep -c '^RANK=.* SUM=3 ' "$SCRATCH/$name.out" 2>/dev/null) == 2 ]]; then pass; else fail "concurrent job $name did not finish both ranks"; cat "$SCRATCH/$name.out" 2>/dev/null || true; fi
done
if [[ -s $SCRATCH/first.port && $(cat "$SCRATCH/first.port") != "$(cat "$SCRATCH/second.port")" ]]; then pass; else fail "concurrent jobs used the same MASTER_PORT"; fi
finish

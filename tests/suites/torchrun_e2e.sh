#!/usr/bin/env bash
# torchrun as the rank starter, end to end with the real tools: the `local` site with
# [batch] rank_starter = "torchrun", its generated job.slurm submitted to the real one-node
# Slurm; srun starts one task (the rank wrapper), which runs Debian's torch.distributed.run
# with c10d rendezvous; torchrun starts the 2 ranks, each doing a gloo all_reduce.
set -euo pipefail
sitegen=$(realpath "${1:?usage: torchrun_e2e.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool sbatch srun slurmctld slurmd shellcheck
if ! /usr/bin/python3 -c 'import torch.distributed.run'; then
  fail "Debian's python3-torch (torch.distributed.run) is not importable by /usr/bin/python3"
  finish
fi

sites=$SCRATCH/sites
mkdir -p "$sites/local"
sed 's/^cpus_per_task = 1$/cpus_per_task = 1\nrank_starter = "torchrun"/' "$root/sites/local/site.toml" >"$sites/local/site.toml"
check_contains "the site asks for torchrun" 'rank_starter = "torchrun"' "$(cat "$sites/local/site.toml")"
out=$SCRATCH/out
"$sitegen" --sites-dir "$sites" --out-dir "$out" build local --prefix "$out/modules-out/local" >/dev/null
rs=$out/modules-out/local/software/pytorch/1.13.1-cpu/runscripts
for f in job.slurm python-distributed acceptance.slurm; do
  if report=$(shellcheck -s bash "$rs/$f" 2>&1); then pass; else fail "$f: $report"; fi
done
# One task per node holding both ranks' CPUs (written by hand from the site: 2 ranks x 1 CPU).
check_eq "job.slurm tasks" "#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=2" "$(grep -E '^#SBATCH --(ntasks-per-node|cpus-per-task)=' "$rs/job.slurm")"

slurm_up
cat >"$SCRATCH/allreduce.py" <<'PY'
import os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "TORCHELASTIC_RUN_ID", "GLOO_SOCKET_IFNAME")
# One write per rank: both ranks share torchrun's stdout, and print() may write in pieces.
line = " ".join(k + "=" + os.environ.get(k, "<unset>") for k in keys) + f" SUM={t.item():g} ARGS=" + "|".join(sys.argv[1:])
os.write(1, (line + "\n").encode())
dist.destroy_process_group()
PY
log=$SCRATCH/torchrun.out
code=0
# Debian 12's torch 1.13 under Python 3.11: torchrun's default --redirects/--tee "0" parse to
# None (enum.IntFlag no longer iterates its 0 member) and it dies with "'NoneType' object has
# no attribute 'get'" (https://github.com/meta-llama/llama/issues/86; torch 2.x parses them).
# Its PET_* variables give those options a mapping for local rank 9, which does not exist:
# nothing is redirected, and torchrun itself runs unchanged. sbatch passes them to the job.
export PET_REDIRECTS=9:1 PET_TEE=9:1
job_id=$(cd "$SCRATCH" && sbatch --wait --parsable -o "$log" "$rs/job.slurm" "$SCRATCH/allreduce.py" "arg with space" "\$(id)") ||
  code=$?
if [[ $code -ne 0 ]]; then
  fail "the torchrun job exited $code: $(cat "$log")"
  finish
fi
pass
job_id=${job_id%%;*}
# torchrun set each rank's variables (RANK/LOCAL_RANK from its own count, the run id = the
# Slurm job id the wrapper passed as --rdzv_id); the site's collective env reached the ranks.
for rank in 0 1; do
  check_eq "rank $rank" \
    "RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 GROUP_RANK=0 TORCHELASTIC_RUN_ID=$job_id GLOO_SOCKET_IFNAME=lo SUM=3 ARGS=arg with space|\$(id)" \
    "$(grep "^RANK=$rank " "$log" || cat "$log")"
done
check_eq "two ranks in all" 2 "$(grep -c '^RANK=' "$log")"
finish

#!/usr/bin/env bash
# The Frontier seed (frontier-pytorch.md and its repo's pytorch_ddp_job.sl) walked literally
# against the generated outputs: the seed's four module loads in real Lmod, `which python`,
# then `sbatch --export=NONE` of the DDP job on the real one-node Slurm, whose program takes
# --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT. Each rank (the seed's program
# stand-in, run by the real python) prints what it sees; expected values are written by hand
# from the seed. Stand-ins, for what this machine lacks: the Cray PE / OLCF modules (empty
# modulefiles), the conda environment (its python is /usr/bin/python3), the GPUs (the job's two
# --gpus-* directives are dropped for this GPU-less Slurm; everything else is the generated job).
set -euo pipefail
sitegen=$(realpath "${1:?usage: seed_workflow_frontier.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool sbatch srun slurmctld slurmd shellcheck
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed ($LMOD_INIT)"; finish; }

prefix=$SCRATCH/out/modules-out/frontier
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH/out" build frontier --prefix "$prefix" >/dev/null
mp=$prefix/modulefiles
sw=$prefix/software/pytorch/2.3.1-rocm-6.0.0
rs=$sw/runscripts
plugin=/sw/frontier/sitegen/aws-ofi-rccl/lib   # network_plugin_path in sites/frontier/site.toml

# Stand-ins for the site's own modules (the seed loads them; sitegen does not make them).
for m in PrgEnv-gnu/8.5.0 miniforge3/23.11.0-0 rocm/6.0.0 craype-accel-amd-gfx90a; do
  mkdir -p "$mp/$(dirname "$m")"
  echo "-- stand-in for Frontier's $m (no effect)" >"$mp/$m.lua"
done
# Stand-in for the installed conda environment: its python is the real /usr/bin/python3.
mkdir -p "$sw/conda-env/bin"
ln -s /usr/bin/python3 "$sw/conda-env/bin/python"

# ---- Step 1: the seed's module loads, then the stack, in real Lmod; `which python`.
# shellcheck disable=SC2016  # expanded in Lmod's shell
got=$(lmod_clean_shell "$mp" 'module load PrgEnv-gnu/8.5.0 && module load miniforge3/23.11.0-0 &&
module load rocm/6.0.0 && module load craype-accel-amd-gfx90a && module load pytorch &&
echo "Python Environment Path: $(which python)" && echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" &&
echo "CONDA_PREFIX=$CONDA_PREFIX" && echo "LOADED=$LOADEDMODULES"' 2>&1)
check_eq "modules: which python is the stack's conda env, the plugin first on LD_LIBRARY_PATH" \
  "Python Environment Path: $sw/conda-env/bin/python
LD_LIBRARY_PATH=$plugin
CONDA_PREFIX=$sw/conda-env
LOADED=PrgEnv-gnu/8.5.0:miniforge3/23.11.0-0:rocm/6.0.0:craype-accel-amd-gfx90a:pytorch/2.3.1-rocm-6.0.0" "$got"

# ---- Step 2: the job, as the seed's pytorch_ddp_job.sl has it.
job=$rs/job.slurm
check "shellcheck job.slurm" shellcheck -s bash "$job"
check_eq "job: the seed's --gpus-per-task=1 --gpu-bind=closest and logs/ output" \
  "#SBATCH --output=logs/%x_%j.out
#SBATCH --gpus-per-task=1
#SBATCH --gpu-bind=closest" "$(grep -e '--output\|--gpu' "$job")"
# shellcheck disable=SC2016  # the job's text
check_eq "job: srun starts the ranks (never torchrun on Frontier)" \
  'srun --cpu-bind=mask_cpu:"$CPU_MASKS" "$RUNSCRIPTS/python-distributed" "$@"' "$(grep '^srun' "$job")"
# This Slurm has no GPUs: a copy without the two --gpu* directives, nothing else changed.
grep -v '^#SBATCH --gpu' "$job" >"$SCRATCH/job.slurm"
check_eq "the GPU-less copy differs by the two --gpu* lines" 2 "$(diff "$job" "$SCRATCH/job.slurm" | grep -c '^<')"

# Stand-in for the seed's pytorch_ddp.py: its argument parser, then what the rank sees.
cat >"$SCRATCH/pytorch_ddp.py" <<'PY'
import argparse, os, sys
parser = argparse.ArgumentParser(description="stand-in for the seed's pytorch_ddp.py")
parser.add_argument("total_epochs", type=int)
parser.add_argument("save_every", type=int)
parser.add_argument("--master_addr", type=str, required=True)
parser.add_argument("--master_port", type=str, required=True)
args = parser.parse_args()
e = os.environ
print(f"RANK={e['RANK']} LOCAL_RANK={e['LOCAL_RANK']} WORLD_SIZE={e['WORLD_SIZE']}"
      f" args={args.master_addr}:{args.master_port} env={e['MASTER_ADDR']}:{e['MASTER_PORT']}"
      f" ROCR_VISIBLE_DEVICES={e.get('ROCR_VISIBLE_DEVICES', '<unset>')}"
      f" LD_LIBRARY_PATH0={e.get('LD_LIBRARY_PATH', '').split(':')[0]}"
      f" NCCL_SOCKET_IFNAME={e.get('NCCL_SOCKET_IFNAME', '<unset>')}"
      f" python={sys.executable} epochs={args.total_epochs}/{args.save_every}", flush=True)
PY

slurm_up
host=$(hostname)
user=$(id -un)
# This one small node's partition and rank count; the rest are the job's own directives.
small=(--partition=debug --nodes=1 --ntasks-per-node=2 --cpus-per-task=1)

# expect_ranks NAME LOG ID: both ranks see one master, the same in their arguments and their
# environment: the node (first of the job's nodes), port 29500 + job id % 1000.
expect_ranks() {
  local name=$1 log=$2 id=$3 port=$((29500 + $3 % 1000)) r want=""
  for r in 0 1; do
    want+="RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 args=$host:$port env=$host:$port ROCR_VISIBLE_DEVICES=$r"
    want+=" LD_LIBRARY_PATH0=$plugin NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3 python=$sw/conda-env/bin/python epochs=2000/10"$'\n'
  done
  check_eq "$name" "$want" "$(grep '^RANK=' "$log" | sort)"$'\n'
}

# The seed: `sbatch --export=NONE pytorch_ddp_job.sl`, the program given --master_addr=$MASTER_ADDR
# --master_port=$MASTER_PORT. Given to the generated job quoted, the job fills them in.
work=$SCRATCH/work
mkdir -p "$work"
# shellcheck disable=SC2016  # the literal words, replaced by the job
if id=$(cd "$work" && bash "$rs/submit" --export=NONE --wait --parsable "${small[@]}" "$SCRATCH/job.slurm" \
  "$SCRATCH/pytorch_ddp.py" 2000 10 '--master_addr=$MASTER_ADDR' '--master_port=$MASTER_PORT'); then
  pass
else
  fail "submit --export=NONE job.slurm failed: $(cat "$work"/logs/* 2>/dev/null)"
fi
log=$work/logs/pytorch_$id.out
if [[ -f $log ]]; then pass "the log is in logs/, which submit created"; else fail "no $log: $(ls -R "$work")"; fi
expect_ranks "--export=NONE job, master in the arguments: ranks agree with their environment" "$log" "$id"

# The seed's own way: the program and its arguments written on the job's srun line, where the
# job shell expands $MASTER_ADDR and $MASTER_PORT (exported by the job before srun).
# shellcheck disable=SC2016  # text for the job's srun line
sed 's|"\$@"$|"$@" --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT|' "$SCRATCH/job.slurm" >"$SCRATCH/edited.slurm"
check_eq "edited job: one line changed" 1 "$(diff "$SCRATCH/job.slurm" "$SCRATCH/edited.slurm" | grep -c '^<')"
work2=$SCRATCH/work2
mkdir -p "$work2"
if id2=$(cd "$work2" && bash "$rs/submit" --export=NONE --wait --parsable "${small[@]}" "$SCRATCH/edited.slurm" \
  "$SCRATCH/pytorch_ddp.py" 2000 10); then pass; else fail "the edited job failed: $(cat "$work2"/logs/* 2>/dev/null)"; fi
expect_ranks "edited job (srun line with \$MASTER_ADDR): ranks agree with their environment" "$work2/logs/pytorch_$id2.out" "$id2"
rm -rf "/tmp/$user-miopen-$id-"* "/tmp/$user-miopen-$id2-"*
finish

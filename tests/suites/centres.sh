#!/usr/bin/env bash
# The centres described from their own documentation (sites/polaris, sites/perlmutter): every
# rank of a 2-node job runs the rank wrapper under its scheduler's environment (PALS/PBS for
# Polaris, Slurm for Perlmutter) and gets the rank, sizes, master and GPU written here by hand;
# with its line of the job script's binding, each GPU gets the cores its centre documents. The
# job scripts run with stand-ins for module, mpiexec and srun that print what they receive.
set -euo pipefail
sitegen=$(realpath "${1:?usage: centres.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool shellcheck
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH" build polaris perlmutter >/dev/null
polaris=$SCRATCH/modules-out/polaris/software/pytorch/2.8.0-conda-2025-09-25/runscripts
perlmutter=$SCRATCH/modules-out/perlmutter/software/pytorch-dist/2.8.0/runscripts
for f in "$polaris/job.pbs" "$polaris/python-distributed" "$perlmutter/job.slurm" "$perlmutter/python-distributed"; do
  if bash -n "$f" && shellcheck -s bash "$f"; then pass; else fail "$f is not clean"; fi
done

# Stand-ins (not the real tools): python prints the torch.distributed environment it got,
# module, mpiexec and srun print their arguments.
fake=$SCRATCH/fakebin
mkdir -p "$fake"
cat >"$fake/python" <<'PY'
#!/bin/bash
# stand-in for python: the rank's environment on one line
printf 'RANK=%s LOCAL_RANK=%s WORLD_SIZE=%s LOCAL_WORLD_SIZE=%s MASTER_ADDR=%s MASTER_PORT=%s CUDA_VISIBLE_DEVICES=%s ARGS=%s\n' \
  "${RANK-}" "${LOCAL_RANK-}" "${WORLD_SIZE-}" "${LOCAL_WORLD_SIZE-}" "${MASTER_ADDR-}" "${MASTER_PORT-}" \
  "${CUDA_VISIBLE_DEVICES-<unset>}" "$*"
for v in NCCL_NET_GDR_LEVEL NCCL_CROSS_NIC NCCL_COLLNET_ENABLE FI_CXI_DISABLE_HOST_REGISTER FI_MR_CACHE_MONITOR FI_CXI_DEFAULT_CQ_SIZE; do
  [[ -z ${!v+x} ]] || printf 'ENV %s=%s\n' "$v" "${!v}"
done
PY
printf '#!/bin/bash\n# stand-in for the module command\necho "module $*"\n' >"$fake/module"
for launcher in mpiexec srun; do
  printf '#!/bin/bash\n# stand-in for %s: its arguments, one per bracket\nprintf %%s %s; printf " [%%s]" "$@"; echo\n' \
    "$launcher" "$launcher" >"$fake/$launcher"
done
chmod +x "$fake"/*

# ---- Polaris: mpiexec (PALS) under PBS Pro ------------------------------------------------
# PBS lists each node once per MPI slot; PALS numbers ranks node by node.
printf 'x3001c0s1b0n0\nx3001c0s1b0n0\nx3001c0s7b0n0\nx3001c0s7b0n0\n' >"$SCRATCH/nodefile"
polaris_rank() {  # polaris_rank RANK: the wrapper under PALS' variables for rank RANK of 8
  env -i PATH="$fake:/usr/bin:/bin" PBS_JOBID=123456.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov \
    PBS_NODEFILE="$SCRATCH/nodefile" PALS_RANKID="$1" PALS_LOCAL_RANKID=$(($1 % 4)) PMI_SIZE=8 PMI_LOCAL_SIZE=4 \
    bash "$polaris/python-distributed" train.py --epochs 1
}
# MASTER_PORT = 29500 + 123456 % 1000; one GPU per local rank (PBS sets no CUDA_VISIBLE_DEVICES).
got=""
for r in 0 1 2 3 4 5 6 7; do got+=$(polaris_rank "$r" | sed -n 1p)$'\n'; done
check_eq "polaris: 8 ranks on 2 nodes" "RANK=0 LOCAL_RANK=0 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT=29956 CUDA_VISIBLE_DEVICES=0 ARGS=train.py --epochs 1
RANK=1 LOCAL_RANK=1 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT=29956 CUDA_VISIBLE_DEVICES=1 ARGS=train.py --epochs 1
RANK=2 LOCAL_RANK=2 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT=29956 CUDA_VISIBLE_DEVICES=2 ARGS=train.py --epochs 1
RANK=3 LOCAL_RANK=3 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT=29956 CUDA_VISIBLE_DEVICES=3 ARGS=train.py --epochs 1
RANK=4 LOCAL_RANK=0 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT=29956 CUDA_VISIBLE_DEVICES=0 ARGS=train.py --epochs 1
RANK=5 LOCAL_RANK=1 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT=29956 CUDA_VISIBLE_DEVICES=1 ARGS=train.py --epochs 1
RANK=6 LOCAL_RANK=2 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT=29956 CUDA_VISIBLE_DEVICES=2 ARGS=train.py --epochs 1
RANK=7 LOCAL_RANK=3 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=x3001c0s1b0n0 MASTER_PORT=29956 CUDA_VISIBLE_DEVICES=3 ARGS=train.py --epochs 1
" "$got"
# ALCF's NCCL settings reach a rank started without the module (nccl.md, "ncclenv").
check_eq "polaris: ALCF's NCCL/libfabric settings on every rank" "ENV NCCL_NET_GDR_LEVEL=PHB
ENV NCCL_CROSS_NIC=1
ENV NCCL_COLLNET_ENABLE=1
ENV FI_CXI_DISABLE_HOST_REGISTER=1
ENV FI_MR_CACHE_MONITOR=userfaultfd
ENV FI_CXI_DEFAULT_CQ_SIZE=131072" "$(polaris_rank 5 | grep '^ENV ')"
# Local rank i's PALS list entry with its GPU: the pairs of ALCF's nvidia-smi topo table.
bind=$(sed -n 's/^CPU_BIND=list://p' "$polaris/job.pbs")
IFS=: read -ra entries <<<"$bind"
pairs=""
for r in 0 1 2 3; do
  pairs+="cores ${entries[r]} GPU $(polaris_rank "$r" | sed -n '1s/.*CUDA_VISIBLE_DEVICES=\([^ ]*\).*/\1/p')"$'\n'
done
check_eq "polaris: cores and GPU of each local rank" "cores 24-31 GPU 0
cores 16-23 GPU 1
cores 8-15 GPU 2
cores 0-7 GPU 3
" "$pairs"
check_eq "polaris: job.pbs as mpiexec and module see it" "module use /soft/sitegen/modulefiles
module use /soft/modulefiles
module load conda/2025-09-25
module load pytorch/2.8.0-conda-2025-09-25
mpiexec [-np] [8] [-ppn] [4] [--cpu-bind] [list:24-31:16-23:8-15:0-7] [/rs/python-distributed] [train.py] [a b]" \
  "$(env -i PATH="$fake:/usr/bin:/bin" PBS_NODEFILE="$SCRATCH/nodefile" PBS_O_WORKDIR="$SCRATCH" RUNSCRIPTS=/rs \
    bash "$polaris/job.pbs" train.py 'a b')"

# ---- Perlmutter: srun under Slurm --------------------------------------------------------
# With --gpus-per-task=1 and --gpu-bind=none (NERSC's shape), every task sees the node's four GPUs:
# CUDA_VISIBLE_DEVICES=0,1,2,3.
perlmutter_rank() {  # perlmutter_rank RANK [VAR=value...]: the wrapper as srun starts rank RANK of 8
  env -i PATH="$fake:/usr/bin:/bin" SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_PROCID="$1" SLURM_NTASKS=8 \
    SLURM_LOCALID=$(($1 % 4)) SLURM_NODEID=$(($1 / 4)) SLURM_STEP_TASKS_PER_NODE='4(x2)' \
    SLURM_STEP_NODELIST='nid[001234,001240]' CUDA_VISIBLE_DEVICES=0,1,2,3 "${@:2}" \
    bash "$perlmutter/python-distributed" train.py
}
got=""
for r in 0 1 2 3 4 5 6 7; do got+=$(perlmutter_rank "$r" | sed -n 1p)$'\n'; done
# MASTER_PORT = 29500 + 4242 % 1000 (step 0); MASTER_ADDR the first host of the step.
check_eq "perlmutter: 8 ranks on 2 nodes" "RANK=0 LOCAL_RANK=0 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid001234 MASTER_PORT=29742 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=1 LOCAL_RANK=1 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid001234 MASTER_PORT=29742 CUDA_VISIBLE_DEVICES=1 ARGS=train.py
RANK=2 LOCAL_RANK=2 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid001234 MASTER_PORT=29742 CUDA_VISIBLE_DEVICES=2 ARGS=train.py
RANK=3 LOCAL_RANK=3 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid001234 MASTER_PORT=29742 CUDA_VISIBLE_DEVICES=3 ARGS=train.py
RANK=4 LOCAL_RANK=0 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid001234 MASTER_PORT=29742 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=5 LOCAL_RANK=1 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid001234 MASTER_PORT=29742 CUDA_VISIBLE_DEVICES=1 ARGS=train.py
RANK=6 LOCAL_RANK=2 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid001234 MASTER_PORT=29742 CUDA_VISIBLE_DEVICES=2 ARGS=train.py
RANK=7 LOCAL_RANK=3 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid001234 MASTER_PORT=29742 CUDA_VISIBLE_DEVICES=3 ARGS=train.py
" "$got"
# NERSC's tutorial reverses the list (CUDA_VISIBLE_DEVICES=3,2,1,0): the rank's entry of it.
check_eq "perlmutter: a reversed visible list, the local rank's entry" "CUDA_VISIBLE_DEVICES=2" \
  "$(perlmutter_rank 5 CUDA_VISIBLE_DEVICES=3,2,1,0 | grep -o 'CUDA_VISIBLE_DEVICES=[^ ]*')"
check_eq "perlmutter: one GPU bound by Slurm (--gpus-per-task=1) is kept" "CUDA_VISIBLE_DEVICES=0" \
  "$(perlmutter_rank 5 CUDA_VISIBLE_DEVICES=0 | grep -o 'CUDA_VISIBLE_DEVICES=[^ ]*')"
check_eq "perlmutter: NERSC's FI_MR_CACHE_MONITOR on every rank" "ENV FI_MR_CACHE_MONITOR=userfaultfd" \
  "$(perlmutter_rank 6 | grep '^ENV ')"
# Local rank i's mask with its GPU: GPU i on NUMA domain 3 - i (16 cores each).
masks=$(sed -n 's/^CPU_MASKS=//p' "$perlmutter/job.slurm")
IFS=, read -ra entries <<<"$masks"
pairs=""
for r in 0 1 2 3; do
  pairs+="mask ${entries[r]} GPU $(perlmutter_rank "$r" | sed -n '1s/.*CUDA_VISIBLE_DEVICES=\([^ ]*\).*/\1/p')"$'\n'
done
check_eq "perlmutter: mask and GPU of each local rank" "mask 0xffff000000000000 GPU 0
mask 0xffff00000000 GPU 1
mask 0xffff0000 GPU 2
mask 0xffff GPU 3
" "$pairs"
check_eq "perlmutter: job.slurm as srun and module see it" "module use /global/common/software/sitegen/modulefiles
module load pytorch/2.8.0
module load pytorch-dist/2.8.0
srun [--cpu-bind=mask_cpu:0xffff000000000000,0xffff00000000,0xffff0000,0xffff] [/rs/python-distributed] [train.py] [a b]" \
  "$(env -i PATH="$fake:/usr/bin:/bin" RUNSCRIPTS=/rs bash "$perlmutter/job.slurm" train.py 'a b')"
check_eq "perlmutter: job.slurm directives" "#SBATCH --job-name=pytorch-dist
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=32
#SBATCH --account=<account>
#SBATCH --time=00:10:00
#SBATCH --qos=regular
#SBATCH --constraint=gpu
#SBATCH --gpus-per-task=1
#SBATCH --gpu-bind=none" "$(grep '^#SBATCH' "$perlmutter/job.slurm")"
finish

#!/usr/bin/env bash
# The centres described from their own documentation (sites/polaris, perlmutter, alps,
# tuolumne): every rank of a 2-node job runs the rank wrapper under its scheduler's environment
# (PALS/PBS for Polaris, Slurm for Perlmutter and Alps, Flux for Tuolumne: tests/tools/flux) and gets the rank, sizes, master and GPU written here by hand;
# with its line of the job script's binding, each GPU gets the cores its centre documents. The
# job scripts run with stand-ins for module, mpiexec and srun that print what they receive.
set -euo pipefail
sitegen=$(realpath "${1:?usage: centres.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool shellcheck
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH" build polaris perlmutter alps tuolumne >/dev/null
polaris=$SCRATCH/modules-out/polaris/software/pytorch/2.8.0-conda-2025-09-25/runscripts
perlmutter=$SCRATCH/modules-out/perlmutter/software/pytorch-dist/2.8.0/runscripts
alps=$SCRATCH/modules-out/alps/software/pytorch/2.8.0-uenv-v1/runscripts
tuolumne=$SCRATCH/modules-out/tuolumne/software/pytorch/2.8.0-rocm-6.4/runscripts
for f in "$polaris/job.pbs" "$polaris/python-distributed" "$perlmutter/job.slurm" "$perlmutter/python-distributed" \
  "$alps/job.slurm" "$alps/submit" "$alps/python-distributed" "$tuolumne/job.flux" "$tuolumne/python-distributed"; do
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
for v in NCCL_NET_GDR_LEVEL NCCL_CROSS_NIC NCCL_COLLNET_ENABLE FI_CXI_DISABLE_HOST_REGISTER FI_MR_CACHE_MONITOR FI_CXI_DEFAULT_CQ_SIZE \
  NCCL_NET NCCL_PROTO FI_CXI_DEFAULT_TX_SIZE FI_CXI_RX_MATCH_MODE NCCL_MIN_NCHANNELS NCCL_SOCKET_IFNAME MPICH_OFI_NIC_POLICY \
  ROCR_VISIBLE_DEVICES FAKE_FLUX_TASK_CPUS; do
  [[ -z ${!v+x} ]] || printf 'ENV %s=%s\n' "$v" "${!v}"
done
PY
printf '#!/bin/bash\n# stand-in for the module command\necho "module $*"\n' >"$fake/module"
cp "$fake/python" "$fake/python3"  # the uenv view's interpreter (Alps)
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
# ---- Alps: srun with the pytorch uenv, one GPU per task ---------------------------------------
# --gpus-per-task=1: Slurm gives each task its own GPU, which the task sees as device 0
# (docs.cscs.ch/running/slurm: "gpu 0" with a different UUID on every rank).
alps_rank() {  # alps_rank RANK [VAR=value...]: the wrapper as srun starts rank RANK of 8
  env -i PATH="$fake:/usr/bin:/bin" SLURM_JOB_ID=1234567 SLURM_STEP_ID=0 SLURM_PROCID="$1" SLURM_NTASKS=8 \
    SLURM_LOCALID=$(($1 % 4)) SLURM_NODEID=$(($1 / 4)) SLURM_STEP_TASKS_PER_NODE='4(x2)' \
    SLURM_STEP_NODELIST='nid[006363,006375]' CUDA_VISIBLE_DEVICES=0 SITEGEN_CONTAINER=1 "${@:2}" \
    bash "$alps/python-distributed" train.py
}
got=""
for r in 0 1 2 3 4 5 6 7; do got+=$(alps_rank "$r" | sed -n 1p)$'\n'; done
# MASTER_PORT = 29500 + 1234567 % 1000; the first host of the step is the master.
check_eq "alps: 8 ranks on 2 nodes, each keeps the one GPU Slurm gave it" "RANK=0 LOCAL_RANK=0 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid006363 MASTER_PORT=30067 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=1 LOCAL_RANK=1 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid006363 MASTER_PORT=30067 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=2 LOCAL_RANK=2 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid006363 MASTER_PORT=30067 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=3 LOCAL_RANK=3 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid006363 MASTER_PORT=30067 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=4 LOCAL_RANK=0 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid006363 MASTER_PORT=30067 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=5 LOCAL_RANK=1 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid006363 MASTER_PORT=30067 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=6 LOCAL_RANK=2 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid006363 MASTER_PORT=30067 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
RANK=7 LOCAL_RANK=3 WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=nid006363 MASTER_PORT=30067 CUDA_VISIBLE_DEVICES=0 ARGS=train.py
" "$got"
# Without --gpus-per-task every rank would see all four (CSCS: "most applications using the first
# GPU on all ranks"); the wrapper then still gives local rank i GPU i.
check_eq "alps: all four GPUs visible, the local rank's one" "CUDA_VISIBLE_DEVICES=2" \
  "$(alps_rank 6 CUDA_VISIBLE_DEVICES=0,1,2,3 | grep -o 'CUDA_VISIBLE_DEVICES=[^ ]*')"
# CSCS's nccl_env_vars on a rank started without the module.
check_eq "alps: CSCS's NCCL/libfabric settings on every rank" "ENV NCCL_NET_GDR_LEVEL=PHB
ENV NCCL_CROSS_NIC=1
ENV FI_CXI_DISABLE_HOST_REGISTER=1
ENV FI_MR_CACHE_MONITOR=userfaultfd
ENV FI_CXI_DEFAULT_CQ_SIZE=131072
ENV NCCL_NET=AWS Libfabric
ENV NCCL_PROTO=^LL128
ENV FI_CXI_DEFAULT_TX_SIZE=16384
ENV FI_CXI_RX_MATCH_MODE=software" "$(alps_rank 3 | grep '^ENV ')"
# srun -c72 (docs.cscs.ch/running/slurm): rank r on cores 72r..72r+71, written as masks by hand.
ones=ffffffffffffffffff zeros=000000000000000000
check_eq "alps: job.slurm as srun and module see it" "module use /capstor/store/cscs/sitegen/modulefiles
module load pytorch/2.8.0-uenv-v1
srun [--cpu-bind=mask_cpu:0x$ones,0x$ones$zeros,0x$ones$zeros$zeros,0x$ones$zeros$zeros$zeros] [--uenv=pytorch/v2.8.0:v1] [--view=default] [/rs/python-distributed] [train.py] [a b]" \
  "$(env -i PATH="$fake:/usr/bin:/bin" RUNSCRIPTS=/rs SIFPYTORCH=pytorch/v2.8.0:v1 bash "$alps/job.slurm" train.py 'a b')"
check_eq "alps: job.slurm directives" "#SBATCH --job-name=pytorch
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=72
#SBATCH --account=<ACCOUNT>
#SBATCH --time=00:10:00
#SBATCH --output=logs/slurm-%x-%j.log
#SBATCH --gpus-per-task=1" "$(grep '^#SBATCH' "$alps/job.slurm")"

# ---- Tuolumne: flux run under the flux stand-in ----------------------------------------------
ln -s "$root/tests/tools/flux" "$fake/flux"
test_user=sitegen-centres-$$
at_exit "rm -rf /tmp/$test_user-miopen-*"
# F58 job id ƒHd2oW67H8R (the stand-in's) = 123456789012345678: MASTER_PORT 29500 + 678.
# -o gpu-affinity=off: Flux sets no CUDA_VISIBLE_DEVICES; the wrapper gives the APU by the local id.
tuolumne_ranks() {
  local r
  for r in 0 1 2 3 4 5 6 7; do
    printf 'RANK=%s LOCAL_RANK=%s WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=tuolumne1001 MASTER_PORT=30178 CUDA_VISIBLE_DEVICES=<unset> ARGS=train.py x\n' "$r" $((r % 4))
  done
}
: >"$SCRATCH/flux.log"
out=$(env -i PATH="$fake:/usr/bin:/bin" USER="$test_user" RUNSCRIPTS="$tuolumne" FAKE_FLUX_LOG="$SCRATCH/flux.log" \
  FAKE_FLUX_HOSTS="tuolumne1001 tuolumne1002" bash "$tuolumne/job.flux" train.py x)
check_eq "tuolumne: 8 ranks on 2 nodes" "$(tuolumne_ranks)" "$(grep '^RANK=' <<<"$out")"
check_eq "tuolumne: each rank's APU and Flux's per-task binding" "$(for r in 0 1 2 3 4 5 6 7; do
  printf 'ENV ROCR_VISIBLE_DEVICES=%s\nENV FAKE_FLUX_TASK_CPUS=per-task\n' $((r % 4)); done)" \
  "$(grep -E '^ENV (ROCR_VISIBLE_DEVICES|FAKE_FLUX_TASK_CPUS)=' <<<"$out")"
# LLNL HPC-launcher's settings, once per rank.
check_eq "tuolumne: RCCL/libfabric settings on every rank" "ENV NCCL_NET_GDR_LEVEL=3
ENV NCCL_CROSS_NIC=1
ENV FI_CXI_DISABLE_HOST_REGISTER=1
ENV FI_MR_CACHE_MONITOR=userfaultfd
ENV FI_CXI_DEFAULT_CQ_SIZE=131072
ENV FI_CXI_DEFAULT_TX_SIZE=1024
ENV FI_CXI_RX_MATCH_MODE=hybrid
ENV NCCL_MIN_NCHANNELS=24
ENV NCCL_SOCKET_IFNAME=hsi0
ENV MPICH_OFI_NIC_POLICY=GPU" "$(awk '/^RANK=5 /{on=1; next} /^RANK=/{on=0} on' <<<"$out" | grep '^ENV ' | grep -vE 'ROCR|FAKE_FLUX')"
# HPC-launcher: flux run -N2 -n8 -c21 -g1 (its --exclusive is the batch job's here).
check_eq "tuolumne: the flux run call" "flux run -N 2 -n 8 -c 21 -g 1 -o cpu-affinity=per-task -o gpu-affinity=off $tuolumne/python-distributed train.py x" \
  "$(grep '^flux run' "$SCRATCH/flux.log")"
check_eq "tuolumne: modules and directives" "# flux: --job-name=pytorch
# flux: -N 2
# flux: --exclusive
# flux: -t 30m
# flux: --queue=pbatch
# flux: --bank=<bank>
module use /usr/workspace/sitegen/modulefiles
module load rocm/6.4.1
module load cray-python/3.11.7
module load pytorch/2.8.0-rocm-6.4" "$(grep -E '^# flux:' "$tuolumne/job.flux"; grep '^module ' <<<"$out")"
finish

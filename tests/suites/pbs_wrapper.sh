#!/usr/bin/env bash
# The Aurora (PBS Pro / PALS) scripts: bash -n and shellcheck, and the rank wrapper run
# with a fake PALS/PBS environment and a fake python that prints what it received.
set -euo pipefail
sitegen=$(realpath "${1:?usage: pbs_wrapper.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool shellcheck
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH" build aurora >/dev/null
rs=$(dirname "$(find "$SCRATCH" -name job.pbs)")
for f in "$rs/job.pbs" "$rs/python-distributed"; do
  if bash -n "$f" && shellcheck -s bash "$f"; then pass; else fail "$f is not clean"; fi
done
# The batch script's binding equals the seed's literally (aurora-pytorch.md).
check_eq "CPU_BIND" "CPU_BIND=verbose,list:2-4:10-12:18-20:26-28:34-36:42-44:54-56:62-64:70-72:78-80:86-88:94-96" \
  "$(grep '^CPU_BIND=' "$rs/job.pbs")"
check_eq "HOROVOD_THREAD_AFFINITY" "export HOROVOD_THREAD_AFFINITY=4,12,20,28,36,44,56,64,72,80,88,96" \
  "$(grep 'HOROVOD_THREAD_AFFINITY=' "$rs/job.pbs")"
check_eq "CCL_WORKER_AFFINITY" "export CCL_WORKER_AFFINITY=5,13,21,29,37,45,57,65,73,81,89,97" \
  "$(grep 'CCL_WORKER_AFFINITY=' "$rs/job.pbs")"

mkdir -p "$SCRATCH/fakebin"
cat >"$SCRATCH/fakebin/python" <<'PY'
#!/bin/bash
for v in RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT ZE_AFFINITY_MASK CCL_ATL_TRANSPORT FI_CXI_DEFAULT_CQ_SIZE CCL_LOG_LEVEL; do
  printf '%s=%s\n' "$v" "${!v-<unset>}"
done
printf 'ARGS=%s\n' "$*"
PY
chmod +x "$SCRATCH/fakebin/python"
printf 'x4000c0s0b0n0\nx4000c0s1b0n0\n' >"$SCRATCH/nodefile"
run_rank() {  # run_rank RANK LOCAL_RANK [extra env...]
  env -i PATH="$SCRATCH/fakebin:/usr/bin:/bin" PBS_JOBID=4242.aurora-pbs-0001 PBS_NODEFILE="$SCRATCH/nodefile" \
    PALS_RANKID="$1" PALS_LOCAL_RANKID="$2" PMI_SIZE=24 PMI_LOCAL_SIZE=12 "${@:3}" \
    bash "$rs/python-distributed" train.py --epochs 1
}
check_eq "rank 13 environment" "RANK=13
LOCAL_RANK=1
WORLD_SIZE=24
LOCAL_WORLD_SIZE=12
MASTER_ADDR=x4000c0s0b0n0
MASTER_PORT=29742
ZE_AFFINITY_MASK=<unset>
CCL_ATL_TRANSPORT=mpi
FI_CXI_DEFAULT_CQ_SIZE=131072
CCL_LOG_LEVEL=WARN
ARGS=train.py --epochs 1" "$(run_rank 13 1)"
# Aurora's visibility is "all" (each rank picks xpu:{MPI_LOCALRANKID}): whatever device mask
# the launcher or user set stays as it is; a user's CCL choice wins.
check_eq "pre-bound tile kept" "ZE_AFFINITY_MASK=0.1" "$(run_rank 1 1 ZE_AFFINITY_MASK=0.1 | grep ZE_AFFINITY_MASK)"
check_eq "two tiles left visible: both kept" "ZE_AFFINITY_MASK=0.0,0.1" \
  "$(run_rank 1 1 ZE_AFFINITY_MASK=0.0,0.1 | grep ZE_AFFINITY_MASK)"
check_eq "user override kept" "CCL_LOG_LEVEL=DEBUG" "$(run_rank 1 1 CCL_LOG_LEVEL=DEBUG | grep CCL_LOG_LEVEL=)"
# Without PMI sizes: ranks per node from the job script, nodes counted once each from a
# PBS_NODEFILE that lists a node once per slot (2 nodes x 12 = 24).
printf 'x4000c0s0b0n0\nx4000c0s0b0n0\nx4000c0s1b0n0\nx4000c0s1b0n0\n' >"$SCRATCH/nodefile-slots"
check_eq "sizes from PBS_NODEFILE" "WORLD_SIZE=24 LOCAL_WORLD_SIZE=12" "$(env -i PATH="$SCRATCH/fakebin:/usr/bin:/bin" \
  PBS_JOBID=4242.aurora-pbs-0001 PBS_NODEFILE="$SCRATCH/nodefile-slots" PALS_RANKID=13 PALS_LOCAL_RANKID=1 \
  SITEGEN_RANKS_PER_NODE=12 bash "$rs/python-distributed" | grep -E '^(LOCAL_)?WORLD_SIZE=' | paste -sd' ')"
check_eq "PALS_LOCAL_SIZE wins" "LOCAL_WORLD_SIZE=6" "$(run_rank 1 1 PALS_LOCAL_SIZE=6 | grep '^LOCAL_WORLD_SIZE=')"
# Error paths: a clear message and exit 2, never a silent wrong rank or size.
expect_error() {  # expect_error NAME MESSAGE VAR=value...
  local name=$1 want=$2 msg code=0
  shift 2
  msg=$(env -i PATH="$SCRATCH/fakebin:/usr/bin:/bin" PBS_JOBID=4242.aurora-pbs-0001 PBS_NODEFILE="$SCRATCH/nodefile" \
    PALS_RANKID=13 PALS_LOCAL_RANKID=1 PMI_SIZE=24 PMI_LOCAL_SIZE=12 "$@" bash "$rs/python-distributed" x.py 2>&1) || code=$?
  check_eq "$name" "exit 2: $want" "exit $code: $msg"
}
expect_error "no PALS_RANKID" "python-distributed: PALS_RANKID is not set: run this through mpiexec (PALS) inside a PBS job" PALS_RANKID=
expect_error "PALS_RANKID not a number" "python-distributed: PALS_RANKID is not a number: 1+1" PALS_RANKID=1+1
expect_error "no sizes" "python-distributed: ranks per node unknown (PALS_LOCAL_SIZE, PMI_LOCAL_SIZE or SITEGEN_RANKS_PER_NODE): ''" PMI_LOCAL_SIZE=
expect_error "unreadable nodefile" "python-distributed: cannot read PBS_NODEFILE /nonexistent" PBS_NODEFILE=/nonexistent
expect_error "empty nodefile" "python-distributed: PBS_NODEFILE /dev/null is empty" PBS_NODEFILE=/dev/null
expect_error "job id without a number" "python-distributed: PBS_JOBID does not start with a job number: abc.pbs" PBS_JOBID=abc.pbs
expect_error "world of no ranks" "python-distributed: no ranks: WORLD_SIZE=0 LOCAL_WORLD_SIZE=12" PMI_SIZE=0
expect_error "no ranks on the node" "python-distributed: no ranks: WORLD_SIZE=24 LOCAL_WORLD_SIZE=0" PMI_LOCAL_SIZE=0
expect_error "rank beyond the world" "python-distributed: rank 24 is outside the world of 24 ranks" PALS_RANKID=24
expect_error "local rank beyond the node" "python-distributed: local rank 12 is outside the 12 ranks on this node" PALS_LOCAL_RANKID=12

# The job script itself, with stand-ins for module and mpiexec that print what they get.
cat >"$SCRATCH/fakebin/module" <<'SH'
#!/bin/bash
echo "module $*"
SH
cat >"$SCRATCH/fakebin/mpiexec" <<'SH'
#!/bin/bash
echo "HOROVOD_THREAD_AFFINITY=$HOROVOD_THREAD_AFFINITY CCL_WORKER_AFFINITY=$CCL_WORKER_AFFINITY"
printf 'mpiexec'; printf ' [%s]' "$@"; echo
SH
chmod +x "$SCRATCH/fakebin/module" "$SCRATCH/fakebin/mpiexec"
run_job() {
  env -i PATH="$SCRATCH/fakebin:/usr/bin:/bin" PBS_NODEFILE="$SCRATCH/nodefile-slots" PBS_O_WORKDIR="$SCRATCH" \
    RUNSCRIPTS=/rs "$@"
}
bind=verbose,list:2-4:10-12:18-20:26-28:34-36:42-44:54-56:62-64:70-72:78-80:86-88:94-96
check_eq "job.pbs with arguments" "module use /soft/modulefiles
module load frameworks/2024.2.1_u1
HOROVOD_THREAD_AFFINITY=4,12,20,28,36,44,56,64,72,80,88,96 CCL_WORKER_AFFINITY=5,13,21,29,37,45,57,65,73,81,89,97
mpiexec [-np] [24] [-ppn] [12] [--cpu-bind] [$bind] [/rs/python-distributed] [train.py] [a b]" \
  "$(run_job bash "$rs/job.pbs" train.py 'a b')"
check_eq "job.pbs with PROGRAM" "mpiexec [-np] [24] [-ppn] [12] [--cpu-bind] [$bind] [/rs/python-distributed] [train.py] [--epochs] [1]" \
  "$(run_job PROGRAM='train.py --epochs 1' bash "$rs/job.pbs" | grep '^mpiexec')"
if msg=$(run_job bash "$rs/job.pbs" 2>&1); then fail "job.pbs ran without a program"; else
  check_contains "job.pbs without a program" "PROGRAM: set PROGRAM to the python script" "$msg"; fi

# Without PALS variables the wrapper refuses instead of guessing a rank.
if msg=$(env -i PATH=/usr/bin:/bin bash "$rs/python-distributed" x.py 2>&1); then
  fail "wrapper ran without PBS/PALS variables"
else
  check_eq "missing variable message" "python-distributed: PBS_JOBID is not set: run this through mpiexec inside a PBS job" "$msg"
fi
finish

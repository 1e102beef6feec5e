#!/usr/bin/env bash
# The Aurora seed (aurora-pytorch.md) walked literally against the generated outputs:
# `module use` + `module load frameworks` in real Lmod, `which python`, then the seed's PBS job
# (example_torch_dist_training.sh) as the generated job.pbs, run by bash with real Lmod under a
# hand-made PBS environment. Each rank runs the seed's device choice, 'xpu:{MPI_LOCALRANKID}',
# in a program stand-in run by the real python, and prints what it sees. Expected values by
# hand from the seed. Stand-ins, for what this machine lacks: the frameworks conda environment
# (the site file's /opt/aurora/24.180.3 moved under the scratch dir; its python is
# /usr/bin/python3), PBS Pro's and PALS' mpiexec (a script that starts the ranks here with the
# variables PALS and MPICH give them: PALS_RANKID, PALS_LOCAL_RANKID, PMI_SIZE, PMI_LOCAL_SIZE,
# MPI_LOCALRANKID) and the GPUs (the program counts tiles as Level Zero would: 12 under
# ZE_FLAT_DEVICE_HIERARCHY=FLAT, 6 under COMPOSITE, the entries of ZE_AFFINITY_MASK when set).
set -euo pipefail
sitegen=$(realpath "${1:?usage: seed_workflow_aurora.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool shellcheck
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed ($LMOD_INIT)"; finish; }

opt=$SCRATCH/opt
mkdir -p "$SCRATCH/sites/aurora"
sed "s|/opt/aurora/|$opt/aurora/|g" "$root/sites/aurora/site.toml" >"$SCRATCH/sites/aurora/site.toml"
check_eq "the copy moves only /opt/aurora" "" \
  "$(diff <(sed "s|$opt/aurora/|/opt/aurora/|g" "$SCRATCH/sites/aurora/site.toml") "$root/sites/aurora/site.toml")"
prefix=$SCRATCH/out/modules-out/aurora
"$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$SCRATCH/out" build aurora --prefix "$prefix" >/dev/null
mp=$prefix/modulefiles
rs=$prefix/software/frameworks/2024.2.1_u1/runscripts
env_dir=$opt/aurora/24.180.3/frameworks/aurora_nre_models_frameworks-2024.2.1_u1
ccl=$env_dir/lib/python3.10/site-packages/oneccl_bindings_for_pytorch
mkdir -p "$env_dir/bin"
ln -s /usr/bin/python3 "$env_dir/bin/python"

# ---- Step 1: `module use` (the prefix stands for /soft/modulefiles), `module load frameworks`.
# shellcheck disable=SC2016  # expanded in Lmod's shell
got=$(lmod_clean_shell "$mp" "module use '$mp'" 'module load frameworks && echo "python=$(which python)" &&
echo "LOADED=$LOADEDMODULES" && echo "CCL_ROOT=$CCL_ROOT" && echo "ZE_FLAT_DEVICE_HIERARCHY=$ZE_FLAT_DEVICE_HIERARCHY" &&
echo "NUMEXPR_NUM_THREADS=$NUMEXPR_NUM_THREADS"' 2>&1)
check_eq "modules: the frameworks env's python, CCL_ROOT and one device per tile" "python=$env_dir/bin/python
LOADED=frameworks/2024.2.1_u1
CCL_ROOT=$ccl
ZE_FLAT_DEVICE_HIERARCHY=FLAT
NUMEXPR_NUM_THREADS=64" "$got"

# ---- Step 2: the seed's job script, as job.pbs.
job=$rs/job.pbs
check "shellcheck job.pbs" shellcheck -s bash "$job"
check_eq "job: the seed's TF32, oneCCL paths and ulimit -c 0, after the modules" "module load frameworks/2024.2.1_u1
cd \"\${PBS_O_WORKDIR:-.}\"
# The site's job environment ([batch] env, prepend_path, core_dumps).
export IPEX_FP32_MATH_MODE=TF32
export CPATH=$ccl/include\"\${CPATH:+:\$CPATH}\"
export LD_LIBRARY_PATH=$ccl/lib\"\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\"
export LIBRARY_PATH=$ccl/lib\"\${LIBRARY_PATH:+:\$LIBRARY_PATH}\"
ulimit -c 0" "$(sed -n '/^module load frameworks/,/^ulimit/p' "$job")"

fake=$SCRATCH/fakebin
mkdir -p "$fake"
# Stand-in for PALS' mpiexec: records its options, then starts -np ranks here, -ppn per node,
# with the variables PALS and MPICH set for each rank.
cat >"$fake/mpiexec" <<'SH'
#!/bin/bash
# stand-in for mpiexec (PALS): not the real launcher
np=0 ppn=0
printf 'mpiexec' >>"$MPIEXEC_LOG"; printf ' [%s]' "$@" >>"$MPIEXEC_LOG"; echo >>"$MPIEXEC_LOG"
while [[ $1 == -* ]]; do
  case $1 in
    -np) np=$2 ;; -ppn) ppn=$2 ;; --cpu-bind) ;; *) echo "mpiexec stand-in: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
for ((r = 0; r < np; r++)); do
  PALS_RANKID=$r PALS_LOCAL_RANKID=$((r % ppn)) PALS_NODEID=$((r / ppn)) PMI_RANK=$r PMI_SIZE=$np \
    PMI_LOCAL_SIZE=$ppn MPI_LOCALRANKID=$((r % ppn)) "$@" || exit
done
SH
chmod +x "$fake/mpiexec"
# Stand-in for the seed's training script: its device choice and what the rank sees.
cat >"$SCRATCH/train.py" <<'PY'
import os, resource, sys
e = os.environ
# Level Zero's device count, as the stand-in GPU gives it (12 tiles = 6 GPUs x 2).
mask = e.get("ZE_AFFINITY_MASK")
tiles = len(mask.split(",")) if mask else {"FLAT": 12, "COMPOSITE": 6}[e.get("ZE_FLAT_DEVICE_HIERARCHY", "FLAT")]
local = int(e["MPI_LOCALRANKID"])
device = f"xpu:{local}" if local < tiles else f"xpu:{local} (no such device: {tiles})"
first = lambda v: e.get(v, "").split(":")[0]
print(f"RANK={e['RANK']} LOCAL_RANK={e['LOCAL_RANK']} WORLD_SIZE={e['WORLD_SIZE']} MASTER={e['MASTER_ADDR']}"
      f" device={device} CCL_ROOT={e.get('CCL_ROOT')} LD_LIBRARY_PATH0={first('LD_LIBRARY_PATH')}"
      f" CPATH0={first('CPATH')} LIBRARY_PATH0={first('LIBRARY_PATH')} IPEX_FP32_MATH_MODE={e.get('IPEX_FP32_MATH_MODE')}"
      f" core_limit={resource.getrlimit(resource.RLIMIT_CORE)[0]} CCL_KVS_MODE={e.get('CCL_KVS_MODE')}"
      f" python={sys.executable} args={' '.join(sys.argv[1:])}", flush=True)
PY
printf 'x4000c0s0b0n0\nx4000c0s1b0n0\n' >"$SCRATCH/nodefile"
work=$SCRATCH/work
mkdir -p "$work"
# In the PBS stand-in environment the job runs with real Lmod (its module calls) and the
# mpiexec stand-in; `qsub -v PROGRAM=...` is the environment variable PROGRAM. Core files are
# allowed when the job starts, so that core_limit=0 is the job's doing.
# shellcheck disable=SC2016  # expanded in Lmod's shell
lmod_clean_shell "$mp" "export PATH='$fake':\$PATH MPIEXEC_LOG='$SCRATCH/mpiexec.log' PBS_JOBID=4242.aurora-pbs-0001 \
PBS_NODEFILE='$SCRATCH/nodefile' PBS_O_WORKDIR='$work' PROGRAM='$SCRATCH/train.py --epochs 1' && ulimit -S -c unlimited && bash '$job'" \
  >"$SCRATCH/job.out" 2>&1 || fail "job.pbs failed: $(cat "$SCRATCH/job.out")"
want=""
for r in $(seq 0 23); do
  want+="RANK=$r LOCAL_RANK=$((r % 12)) WORLD_SIZE=24 MASTER=x4000c0s0b0n0 device=xpu:$((r % 12)) CCL_ROOT=$ccl"
  want+=" LD_LIBRARY_PATH0=$ccl/lib CPATH0=$ccl/include LIBRARY_PATH0=$ccl/lib IPEX_FP32_MATH_MODE=TF32 core_limit=0"
  want+=" CCL_KVS_MODE=mpi python=$env_dir/bin/python args=--epochs 1"$'\n'
done
check_eq "24 ranks: device xpu:{MPI_LOCALRANKID} exists, the seed's oneCCL paths, TF32, no core dumps" \
  "$want" "$(grep '^RANK=' "$SCRATCH/job.out")"$'\n'
# The seed's launch line: mpiexec -np ${NRANKS} -ppn ${NRANKS_PER_NODE} --cpu-bind ${CPU_BIND}.
check_eq "mpiexec gets the seed's CPU_BIND" \
  "mpiexec [-np] [24] [-ppn] [12] [--cpu-bind] [verbose,list:2-4:10-12:18-20:26-28:34-36:42-44:54-56:62-64:70-72:78-80:86-88:94-96] [$rs/python-distributed] [$SCRATCH/train.py] [--epochs] [1]" \
  "$(cat "$SCRATCH/mpiexec.log")"
# The seed's COMPOSITE alternative (6 devices) would break its own xpu:{MPI_LOCALRANKID} for
# local ranks 6-11: the stand-in says so, which is why the module sets FLAT.
check_eq "control: under COMPOSITE local rank 7 has no device" "device=xpu:7 (no such device: 6)" \
  "$(env -i PATH=/usr/bin:/bin RANK=7 LOCAL_RANK=7 WORLD_SIZE=12 MASTER_ADDR=x MPI_LOCALRANKID=7 \
    ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE python3 "$SCRATCH/train.py" | grep -o 'device=.*6)')"
finish

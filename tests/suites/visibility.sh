#!/usr/bin/env bash
# Device visibility policies and NUMA binding, end to end: the Aurora seed site as it is
# (12 ranks, narrow), with every tile visible (the seed's device='xpu:{MPI_LOCALRANKID}'), and
# with 4 CCS per tile (48 ranks: the seed's ZEX_NUMBER_OF_CCS and 48-entry BIND_LIST); an
# NVIDIA MPS site; NUMA binding under Slurm (map_ldom) and mpiexec (numactl); refusals at their
# TOML locations. Expected values are written by hand from the seeds and the site files here.
set -euo pipefail
sitegen=$(realpath "${1:?usage: visibility.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool shellcheck

sites=$SCRATCH/sites
mkdir -p "$sites"
cp -r "$root/sites/aurora" "$sites/aurora"

# Stand-ins: python prints what a rank sees; numactl (not installed here) prints its argv
# and then runs the rest, as numactl does.
fakebin=$SCRATCH/fakebin
mkdir -p "$fakebin"
cat >"$fakebin/python" <<'SH'
#!/bin/bash
# Stand-in for python: the environment a rank starts with.
for v in LOCAL_RANK MPI_LOCALRANKID ZE_AFFINITY_MASK ZEX_NUMBER_OF_CCS CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; do
  printf '%s=%s\n' "$v" "${!v-<unset>}"
done
SH
cat >"$fakebin/numactl" <<'SH'
#!/bin/bash
# Stand-in for numactl: records its options, then runs the command as numactl would.
args=()
while [[ $1 == --* ]]; do args+=("$1"); shift; done
printf 'numactl %s\n' "${args[*]}"
exec "$@"
SH
chmod +x "$fakebin/python" "$fakebin/numactl"
printf 'x4000c0s0b0n0\n' >"$SCRATCH/nodefile"

build() {  # build SITE: the stack's runscripts directory
  "$sitegen" --sites-dir "$sites" --out-dir "$SCRATCH/out-$1" build "$1" --prefix /opt/test-prefix >/dev/null
  dirname "$(find "$SCRATCH/out-$1/modules-out/$1" -name 'python-distributed' -path '*runscripts*')"
}
pbs_rank() {  # pbs_rank RUNSCRIPTS LOCAL_RANK LOCAL_SIZE [env...]: one PALS rank on one node
  env -i PATH="$fakebin:/usr/bin:/bin" PBS_JOBID=4242.pbs PBS_NODEFILE="$SCRATCH/nodefile" PALS_RANKID="$2" \
    PALS_LOCAL_RANKID="$2" PMI_SIZE="$3" PMI_LOCAL_SIZE="$3" "${@:4}" bash "$1/python-distributed" x.py 2>&1
}
slurm_rank() {  # slurm_rank RUNSCRIPTS LOCAL_RANK NTASKS [env...]
  env -i PATH="$fakebin:/usr/bin:/bin" SLURM_JOB_ID=77 SLURM_PROCID="$2" SLURM_NTASKS="$3" SLURM_LOCALID="$2" \
    SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE="$3" SLURM_STEP_NODELIST=node1 "${@:4}" bash "$1/python-distributed" x.py 2>&1
}
clean() {  # clean RUNSCRIPTS: bash -n and shellcheck on its scripts
  local f
  for f in "$1"/python-distributed "$1"/job.*; do
    if bash -n "$f" && shellcheck -s bash "$f"; then pass; else fail "$f is not clean"; fi
  done
}

# 1. Narrow (the default; Aurora's committed site says "all"): ZE_AFFINITY_MASK = local rank.
mkdir -p "$sites/aurora-narrow"
cat >"$sites/aurora-narrow/site.toml" <<'TOML'
extends = ["../aurora/site.toml"]
[site]
name = "aurora-narrow"
[collectives]
visibility = "narrow"
TOML
rs=$(build aurora-narrow)
check_eq "aurora narrow: rank 5" "LOCAL_RANK=5
MPI_LOCALRANKID=5
ZE_AFFINITY_MASK=5
ZEX_NUMBER_OF_CCS=<unset>
CUDA_VISIBLE_DEVICES=<unset>
CUDA_MPS_PIPE_DIRECTORY=<unset>
CUDA_MPS_LOG_DIRECTORY=<unset>" "$(pbs_rank "$rs" 5 12 MPI_LOCALRANKID=5)"

# 2. Every tile visible: the seed's DDP code picks xpu:{MPI_LOCALRANKID} itself. The committed
# site and a copy that says so again give the same wrapper.
rs=$(build aurora)
check_eq "aurora as committed: rank 5 sees every tile" "LOCAL_RANK=5
MPI_LOCALRANKID=5
ZE_AFFINITY_MASK=<unset>
ZEX_NUMBER_OF_CCS=<unset>
CUDA_VISIBLE_DEVICES=<unset>
CUDA_MPS_PIPE_DIRECTORY=<unset>
CUDA_MPS_LOG_DIRECTORY=<unset>" "$(pbs_rank "$rs" 5 12 MPI_LOCALRANKID=5)"
mkdir -p "$sites/aurora-all"
cat >"$sites/aurora-all/site.toml" <<'TOML'
extends = ["../aurora/site.toml"]
[site]
name = "aurora-all"
[collectives]
visibility = "all"
TOML
check "aurora-all checks" "$sitegen" --sites-dir "$sites" check aurora-all
rs=$(build aurora-all)
clean "$rs"
check_eq "aurora all: rank 5 sees every tile, MPI_LOCALRANKID kept" "LOCAL_RANK=5
MPI_LOCALRANKID=5
ZE_AFFINITY_MASK=<unset>
ZEX_NUMBER_OF_CCS=<unset>
CUDA_VISIBLE_DEVICES=<unset>
CUDA_MPS_PIPE_DIRECTORY=<unset>
CUDA_MPS_LOG_DIRECTORY=<unset>" "$(pbs_rank "$rs" 5 12 MPI_LOCALRANKID=5)"
check_eq "aurora all: 12 ranks per node" "export SITEGEN_RANKS_PER_NODE=12" "$(grep '^export SITEGEN_RANKS_PER_NODE=' "$rs/job.pbs")"

# 3. 4 CCS per tile, 48 ranks (aurora-pytorch.md, "Distributed Training with Multiple CCSs").
mkdir -p "$sites/aurora-ccs"
cat >"$sites/aurora-ccs/site.toml" <<'TOML'
extends = ["../aurora/site.toml"]
[site]
name = "aurora-ccs"
[hardware]
reserved_cores = [0, 52]
[binding]
core_offset = 0
cores_per_rank = 1
[collectives]
visibility = "shared"
ranks_per_device = 4
TOML
check "aurora-ccs checks" "$sitegen" --sites-dir "$sites" check aurora-ccs
rs=$(build aurora-ccs)
clean "$rs"
check_eq "aurora ccs: the seed's BIND_LIST" \
  "CPU_BIND=verbose,list:1:2:4:6:8:10:12:14:16:18:20:22:24:26:28:30:32:34:36:38:40:42:44:46:53:54:56:58:60:62:64:66:68:70:72:74:76:78:80:82:84:86:88:90:92:94:96:98" \
  "$(grep '^CPU_BIND=' "$rs/job.pbs")"
check_eq "aurora ccs: 48 ranks per node" "export SITEGEN_RANKS_PER_NODE=48" "$(grep '^export SITEGEN_RANKS_PER_NODE=' "$rs/job.pbs")"
ccs=0:4,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4
for pair in 0:0 3:0 4:1 5:1 46:11 47:11; do
  check_eq "aurora ccs: local rank ${pair%%:*} on tile ${pair#*:}" "ZE_AFFINITY_MASK=${pair#*:}
ZEX_NUMBER_OF_CCS=$ccs" "$(pbs_rank "$rs" "${pair%%:*}" 48 | grep -E '^ZE')"
done
check_eq "aurora ccs: a scheduler's tile list is indexed by rank / 4" "ZE_AFFINITY_MASK=9" \
  "$(pbs_rank "$rs" 5 48 ZE_AFFINITY_MASK=8,9,10 | grep '^ZE_AFFINITY_MASK=')"
check_eq "aurora ccs: the user's ZEX_NUMBER_OF_CCS wins" "ZEX_NUMBER_OF_CCS=0:2" \
  "$(pbs_rank "$rs" 5 48 ZEX_NUMBER_OF_CCS=0:2 | grep '^ZEX_NUMBER_OF_CCS=')"

# 4. NVIDIA MPS, 2 ranks per GPU on 4 GPUs under Slurm, with CPU masks. Its collectives are
# gloo's: NCCL refuses two ranks of a communicator on one GPU (refused below, mps-nccl).
mkdir -p "$sites/mps"
cat >"$sites/mps/site.toml" <<'TOML'
[site]
name = "mps"
description = "4 GPUs shared by 2 ranks each through MPS"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/mps"
[hardware]
gpu_vendor = "nvidia"
devices_per_node = 4
cores_per_node = 32
device_cores = ["0-7", "8-15", "16-23", "24-31"]
[binding]
style = "mask"
[collectives]
library = "gloo"
visibility_var = "CUDA_VISIBLE_DEVICES"
visibility = "shared"
ranks_per_device = 2
[python]
layout = "system"
version = "3.11"
[[stacks]]
name = "torch"
version = "2.4.0"
description = "mps stack"
homepage = "https://pytorch.org/"
TOML
check "mps checks" "$sitegen" --sites-dir "$sites" check mps
rs=$(build mps)
clean "$rs"
check_eq "mps: 8 tasks, 4 cores each" "#SBATCH --ntasks-per-node=8
#SBATCH --cpus-per-task=4" "$(grep -E '^#SBATCH --(ntasks-per-node|cpus-per-task)=' "$rs/job.slurm")"
check_eq "mps: one mask per rank, each GPU's 8 cores halved" \
  "CPU_MASKS=0xf,0xf0,0xf00,0xf000,0xf0000,0xf00000,0xf000000,0xf0000000" "$(grep '^CPU_MASKS=' "$rs/job.slurm")"
check_eq "mps: local rank 5 on GPU 2, NVIDIA's default directories" "LOCAL_RANK=5
MPI_LOCALRANKID=<unset>
ZE_AFFINITY_MASK=<unset>
ZEX_NUMBER_OF_CCS=<unset>
CUDA_VISIBLE_DEVICES=2
CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps
CUDA_MPS_LOG_DIRECTORY=/var/log/nvidia-mps" "$(slurm_rank "$rs" 5 8)"
mkdir -p "$SCRATCH/mps-pipes"
check_eq "mps: the site's directories win, and exist: no note" "CUDA_VISIBLE_DEVICES=0
CUDA_MPS_PIPE_DIRECTORY=$SCRATCH/mps-pipes
CUDA_MPS_LOG_DIRECTORY=$SCRATCH/mps-log" \
  "$(slurm_rank "$rs" 0 8 CUDA_MPS_PIPE_DIRECTORY="$SCRATCH/mps-pipes" CUDA_MPS_LOG_DIRECTORY="$SCRATCH/mps-log" |
    grep -E '^CUDA_(VISIBLE|MPS)|MPS control')"
check_eq "mps: local rank 0 notes a missing daemon directory" \
  "no MPS control daemon directory $SCRATCH/none: the ranks of each GPU time-share it" \
  "$(slurm_rank "$rs" 0 8 CUDA_MPS_PIPE_DIRECTORY="$SCRATCH/none" | grep 'MPS control')"

# 5. NUMA binding: Slurm map_ldom from device_numa (LUMI-G's GCD -> NUMA node order), and
# mpiexec ranks under numactl.
mkdir -p "$sites/ldom" "$sites/numa-pbs"
cat >"$sites/ldom/site.toml" <<'TOML'
[site]
name = "ldom"
description = "NUMA-domain binding under Slurm"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/ldom"
[hardware]
gpu_vendor = "amd"
devices_per_node = 8
cores_per_node = 64
device_cores = ["48-55", "56-63", "16-23", "24-31", "0-7", "8-15", "32-39", "40-47"]
device_numa = [3, 3, 1, 1, 0, 0, 2, 2]
[binding]
style = "numa"
[collectives]
library = "rccl"
visibility_var = "ROCR_VISIBLE_DEVICES"
[python]
layout = "system"
version = "3.11"
[[stacks]]
name = "torch"
version = "2.4.0"
description = "ldom stack"
homepage = "https://pytorch.org/"
TOML
check "ldom checks" "$sitegen" --sites-dir "$sites" check ldom
rs=$(build ldom)
clean "$rs"
check_eq "ldom: NUMA node per rank" "NUMA_DOMAINS=3,3,1,1,0,0,2,2" "$(grep '^NUMA_DOMAINS=' "$rs/job.slurm")"
# shellcheck disable=SC2016  # the srun line, literally
check_eq "ldom: srun binds cores and memory by it" \
  'srun --cpu-bind=map_ldom:"$NUMA_DOMAINS" --mem-bind=map_mem:"$NUMA_DOMAINS" "$RUNSCRIPTS/python-distributed" "$@"' \
  "$(grep '^srun' "$rs/job.slurm")"
sed -e 's/name = "ldom"/name = "numa-pbs"/' -e 's/"slurm"/"pbs"/' -e 's/"srun"/"mpiexec"/' \
  "$sites/ldom/site.toml" >"$sites/numa-pbs/site.toml"
check "numa-pbs checks" "$sitegen" --sites-dir "$sites" check numa-pbs
rs=$(build numa-pbs)
clean "$rs"
check_eq "numa-pbs: local rank 2 under numactl on node 1, then python" "numactl --cpunodebind=1 --membind=1
LOCAL_RANK=2" "$(pbs_rank "$rs" 2 8 | grep -E '^numactl|^LOCAL_RANK=')"
check_eq "numa-pbs: local rank 7 on node 2" "numactl --cpunodebind=2 --membind=2" "$(pbs_rank "$rs" 7 8 | grep '^numactl')"
check_eq "numa-pbs: no numactl is an error, not an unbound rank" \
  "python-distributed: numactl not found: binding style numa runs each rank under numactl" \
  "$(env -i PATH="$SCRATCH/nonumactl:/usr/bin:/bin" PBS_JOBID=1.pbs PBS_NODEFILE="$SCRATCH/nodefile" PALS_RANKID=0 \
    PALS_LOCAL_RANKID=0 PMI_SIZE=8 PMI_LOCAL_SIZE=8 bash "$rs/python-distributed" x.py 2>&1)"

# 6. Refusals, each at its TOML location (lines counted in the files written here).
refuse() {  # refuse NAME LOCATION MESSAGE-PART [FILE]: check exits 1 with an error at FILE:LOCATION
  local out code=0 file=${4:-$1}
  out=$("$sitegen" --sites-dir "$sites" check "$1" 2>&1) || code=$?
  if [[ $code == 1 ]] && grep -qF -- "$sites/$file/site.toml:$2: error: $3" <<<"$out"; then
    pass
  else
    fail "$1: expected exit 1 and '$2: error: $3', got exit $code: $out"
  fi
}
variant() {  # variant NAME TOML...: the aurora site extended by the given lines
  mkdir -p "$sites/$1"
  printf 'extends = ["../aurora/site.toml"]\n[site]\nname = "%s"\n' "$1" >"$sites/$1/site.toml"
  printf '%s\n' "${@:2}" >>"$sites/$1/site.toml"
}
variant many-ranks '[batch]' 'tasks_per_node = 48'
refuse many-ranks 5:18 "48 ranks per node but 12 devices: with visibility = \"all\" each rank picks device LOCAL_RANK, so ranks 12 and above would have none"
check_eq "many-ranks: the hint names the policy" \
  '  note: to run several ranks on each device, set visibility = "shared" and ranks_per_device = 4 in [collectives]; else tasks_per_node <= devices_per_node' \
  "$("$sitegen" --sites-dir "$sites" check many-ranks 2>&1 | grep 'note:')"
variant three-ccs '[collectives]' 'visibility = "shared"' 'ranks_per_device = 3'
refuse three-ccs 6:20 "ranks_per_device = 3: intel devices are shared through compute command streamers (ZEX_NUMBER_OF_CCS), which allows 1, 2, 4 ranks per device"
variant uneven '[batch]' 'tasks_per_node = 50' '[collectives]' 'visibility = "shared"' 'ranks_per_device = 4'
refuse uneven 5:18 "50 ranks per node do not divide evenly among 12 devices"
variant fewer '[batch]' 'tasks_per_node = 24' '[collectives]' 'visibility = "shared"' 'ranks_per_device = 4'
refuse fewer 5:18 "24 ranks per node but 12 devices x ranks_per_device 4 = 48"
variant stray-count '[collectives]' 'ranks_per_device = 2'
refuse stray-count 5:20 "ranks_per_device = 2 applies only to visibility = \"shared\""
variant all-too-many '[batch]' 'tasks_per_node = 13' '[collectives]' 'visibility = "all"'
refuse all-too-many 5:18 "13 ranks per node but 12 devices: with visibility = \"all\" each rank picks device LOCAL_RANK"
variant numa-no-map '[binding]' 'style = "numa"'
refuse numa-no-map 5:9 "binding style 'numa' binds each rank to its device's NUMA node, but hardware.device_numa is not set"
variant numa-short '[hardware]' 'device_numa = [0, 1]'
refuse numa-short 5:15 "'device_numa' lists 2 devices but devices_per_node is 12"
variant ccs-cores '[collectives]' 'visibility = "shared"' 'ranks_per_device = 4'
# The base file's cores_per_rank = 3 (line 27) cannot fit in a quarter of a tile's 8 cores.
refuse ccs-cores 27:18 "with 4 ranks per device, each device's cores are split among its ranks: rank 0 (device 0) has 0 usable cores after core_offset 2 and reserved cores, but 3 are needed per rank" aurora
mkdir -p "$sites/cpu-shared"
sed -e 's/name = "mps"/name = "cpu-shared"/' -e 's/"nvidia"/"none"/' -e 's/devices_per_node = 4/devices_per_node = 0/' \
  -e '/^device_cores/d' -e 's/style = "mask"/style = "none"/' -e '/^visibility_var/d' -e 's/"nccl"/"gloo"/' \
  "$sites/mps/site.toml" >"$sites/cpu-shared/site.toml"
refuse cpu-shared 15:14 "visibility 'shared' gives each rank a device, but gpu_vendor 'none' has no devices per node"
mkdir -p "$sites/mps-nccl" "$sites/mps-rccl"
sed -e 's/name = "mps"/name = "mps-nccl"/' -e 's/"gloo"/"nccl"/' "$sites/mps/site.toml" >"$sites/mps-nccl/site.toml"
refuse mps-nccl 18:20 'visibility = "shared" puts 2 ranks on each device, but NCCL refuses two ranks of one communicator on one GPU ("Duplicate GPU detected", ncclInvalidUsage), with or without MPS'
sed -e 's/name = "mps"/name = "mps-rccl"/' -e 's/"gloo"/"rccl"/' -e 's/"nvidia"/"amd"/' -e 's/CUDA_VISIBLE_DEVICES/ROCR_VISIBLE_DEVICES/' \
  "$sites/mps/site.toml" >"$sites/mps-rccl/site.toml"
refuse mps-rccl 18:20 'visibility = "shared" puts 2 ranks on each device, but RCCL keeps NCCL'"'"'s check against two ranks of one communicator on one GPU'
mkdir -p "$sites/no-var"
sed -e 's/name = "mps"/name = "no-var"/' -e '/^visibility_var/d' "$sites/mps/site.toml" >"$sites/no-var/site.toml"
refuse no-var 16:14 "visibility 'shared' narrows each rank to its device through collectives.visibility_var, which is not set"

# 7. topology import: each GPU's NUMA node in the fixtures written from the centres' layouts.
for pair in "lumi:3, 3, 1, 1, 0, 0, 2, 2" "frontier:3, 3, 1, 1, 0, 0, 2, 2" \
  "aurora:0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1" "cirrus:0, 0, 1, 1"; do
  check_eq "import ${pair%%:*}: device_numa" "device_numa = [${pair#*:}]" \
    "$("$sitegen" topology import "$root/tests/fixtures/hwloc/${pair%%:*}.xml" | grep '^device_numa')"
done
# 8. doctor: a device_numa entry that is not the NUMA node of the device's cores (LUMI fixture).
mkdir -p "$sites/ldom-wrong"
sed -e 's/name = "ldom"/name = "ldom-wrong"/' -e 's/^device_numa = .*/device_numa = [3, 2, 1, 1, 0, 0, 2, 2]/' \
  "$sites/ldom/site.toml" >"$sites/ldom-wrong/site.toml"
check_eq "doctor: device_numa at its item" \
  "$sites/ldom-wrong/site.toml:12:19: error: device 1 is listed on NUMA node 2, but on the node of $root/tests/fixtures/hwloc/lumi.xml its nearest cores are on NUMA node 3" \
  "$("$sitegen" --sites-dir "$sites" doctor ldom-wrong --topology "$root/tests/fixtures/hwloc/lumi.xml" 2>&1 | grep 'NUMA node' || true)"
check_eq "doctor: the right device_numa is no finding" "" \
  "$("$sitegen" --sites-dir "$sites" doctor ldom --topology "$root/tests/fixtures/hwloc/lumi.xml" 2>&1 | grep 'NUMA node' || true)"
finish

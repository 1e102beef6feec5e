#!/usr/bin/env bash
# podman-hpc, pyxis (enroot) and uenv, each run through its generated job.slurm and
# start-shell against recording STAND-INS (tests/tools/runtime-standins: the real tools are
# not Debian packages): the module is loaded in real Lmod, job.slurm runs rank 1 of 2 under a
# fake Slurm environment, and the argv each tool received (image, mounts, GPU flag, env
# passing) and what the rank wrapper then saw inside are compared with expectations written
# here by hand. Then the refusals: what these runtimes cannot do, each at its TOML location.
set -euo pipefail
sitegen=$(realpath "${1:?usage: container_runtimes.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool shellcheck
standins=$root/tests/tools/runtime-standins

# The image's PATH: a fake python3 that prints what the rank sees.
imagebin=$SCRATCH/imagebin
mkdir -p "$imagebin"
cat >"$imagebin/python3" <<'SH'
#!/bin/bash
printf 'python3 %s: RANK=%s LOCAL_RANK=%s WORLD_SIZE=%s MASTER_ADDR=%s MASTER_PORT=%s CUDA_VISIBLE_DEVICES=%s NCCL_DEBUG=%s\n' \
  "$*" "$RANK" "$LOCAL_RANK" "$WORLD_SIZE" "$MASTER_ADDR" "$MASTER_PORT" "${CUDA_VISIBLE_DEVICES-<unset>}" "${NCCL_DEBUG-<unset>}"
SH
chmod +x "$imagebin/python3"
ln -s /bin/bash "$imagebin/bash"

# write_site NAME RUNTIME CONTAINER_LINES IMAGE GPU_FLAG
write_site() {
  mkdir -p "$SCRATCH/sites/$1"
  cat >"$SCRATCH/sites/$1/site.toml" <<TOML
[site]
name = "$1"
description = "runtime $2"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/rt"

[hardware]
gpu_vendor = "nvidia"
devices_per_node = 2
cores_per_node = 8
device_cores = ["0-3", "4-7"]

[binding]
style = "mask"

[collectives]
library = "nccl"
visibility_var = "CUDA_VISIBLE_DEVICES"
env = { NCCL_DEBUG = "INFO" }

[container]
runtime = "$2"
gpu_flag = $5
$3

[python]
layout = "container-system"
version = "3.11"

[[stacks]]
name = "torch"
version = "2.4.0"
description = "runtime stack"
homepage = "https://pytorch.org/"
image = "$4"
TOML
}

write_site podman podman-hpc 'binds = [{ host = "/data", container = "/d", options = "ro" }]' \
  "registry.nersc.gov/library/torch:2.4" true
write_site pyxis pyxis "image_dir = \"$SCRATCH/images\"
binds = [{ host = \"/data\", container = \"/d\", options = \"ro\" }]" torch.sqsh false
write_site uenv uenv 'view = "default"' "pytorch/v2.4.0:v1" false
mkdir -p "$SCRATCH/images"
: >"$SCRATCH/images/torch.sqsh"

work=$SCRATCH/work
mkdir -p "$work"
for name in podman pyxis uenv; do
  prefix=$SCRATCH/out/modules-out/$name
  if ! "$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$SCRATCH/out" build "$name" --prefix "$prefix" \
    >"$SCRATCH/$name.build" 2>&1; then
    fail "$name: build failed: $(cat "$SCRATCH/$name.build")"
    continue
  fi
  stack=$prefix/software/torch/2.4.0
  if report=$(shellcheck -s bash "$stack/runscripts/job.slurm" "$stack/bin/start-shell" 2>&1); then pass; else fail "$name: shellcheck: $report"; fi
  # job.slurm as sbatch would run it (rank 1 of 2 on node1), then start-shell -c, in a clean
  # shell with real Lmod; the stand-ins first on PATH. SLURM_* stand for the job's variables.
  : >"$SCRATCH/$name.log"
  LMOD_EXTRA_ENV=(STANDIN_LOG="$SCRATCH/$name.log" STANDIN_IMAGE_PATH="$imagebin:/usr/bin:/bin"
    STANDIN_ENV_NAMES="SLURM_PROCID CUDA_VISIBLE_DEVICES SITEGEN_CONTAINER HOME")
  if out=$(lmod_clean_shell "$prefix/modulefiles" \
    "export PATH=$standins:\$PATH" \
    "export -f module; cd '$work'" \
    "export SLURM_JOB_ID=40 SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=2 SLURM_STEP_NODELIST=node1 CUDA_VISIBLE_DEVICES=0,1" \
    "bash '$stack/runscripts/job.slurm' train.py --epochs 1 || exit" \
    "unset SLURM_JOB_ID SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_NODEID SLURM_STEP_TASKS_PER_NODE SLURM_STEP_NODELIST CUDA_VISIBLE_DEVICES" \
    "module load torch/2.4.0 && start-shell -c 'echo \"inside: \${container:-}\${SITEGEN_CONTAINER:-}\${UENV_MOUNT_LIST:-} \$PWD\"'" 2>&1); then
    pass
  else
    fail "$name: job.slurm or start-shell failed: $out"
  fi
  printf '%s\n' "$out" >"$SCRATCH/$name.out"
done

# ---- podman-hpc: the scheduler's and module's variables by name (-e, prefixes with *), the
# binds as -v, the working directory mounted and made the container's, NVIDIA's --gpu.
stack=$SCRATCH/out/modules-out/podman/software/torch/2.4.0
check_eq "podman-hpc: what the tools received" "== srun
argv: --cpu-bind=mask_cpu:0xf,0xf0
argv: podman-hpc
argv: run
argv: --rm
argv: --network
argv: host
argv: --ipc
argv: host
argv: --gpu
argv: -e
argv: SLURM_*
argv: -e
argv: MASTER_*
argv: -e
argv: SITEGEN_*
argv: -e
argv: CUDA_VISIBLE_DEVICES
argv: -e
argv: NCCL_DEBUG
argv: -v
argv: /data:/d:ro
argv: -v
argv: $stack/runscripts:/runscripts
argv: -v
argv: $work:$work
argv: -w
argv: $work
argv: registry.nersc.gov/library/torch:2.4
argv: /runscripts/python-distributed
argv: train.py
argv: --epochs
argv: 1
env: SLURM_PROCID=1
env: CUDA_VISIBLE_DEVICES=0,1
env: HOME=$LMOD_TEST_HOME
== podman-hpc
argv: run
argv: --rm
argv: --network
argv: host
argv: --ipc
argv: host
argv: --gpu
argv: -e
argv: SLURM_*
argv: -e
argv: MASTER_*
argv: -e
argv: SITEGEN_*
argv: -e
argv: CUDA_VISIBLE_DEVICES
argv: -e
argv: NCCL_DEBUG
argv: -v
argv: /data:/d:ro
argv: -v
argv: $stack/runscripts:/runscripts
argv: -v
argv: $work:$work
argv: -w
argv: $work
argv: registry.nersc.gov/library/torch:2.4
argv: /runscripts/python-distributed
argv: train.py
argv: --epochs
argv: 1
env: SLURM_PROCID=1
env: CUDA_VISIBLE_DEVICES=0,1
env: HOME=$LMOD_TEST_HOME
== podman-hpc
argv: run
argv: --rm
argv: --network
argv: host
argv: --ipc
argv: host
argv: --gpu
argv: -e
argv: SLURM_*
argv: -e
argv: MASTER_*
argv: -e
argv: SITEGEN_*
argv: -e
argv: CUDA_VISIBLE_DEVICES
argv: -e
argv: NCCL_DEBUG
argv: -v
argv: /data:/d:ro
argv: -v
argv: $stack/runscripts:/runscripts
argv: -v
argv: $work:$work
argv: -w
argv: $work
argv: registry.nersc.gov/library/torch:2.4
argv: bash
argv: -c
argv: echo \"inside: \${container:-}\${SITEGEN_CONTAINER:-}\${UENV_MOUNT_LIST:-} \$PWD\"
env: HOME=$LMOD_TEST_HOME" "$(cat "$SCRATCH/podman.log")"
# Inside: only the passed variables (SLURM_* reached the wrapper through -e 'SLURM_*'), the
# wrapper narrowed the device to its local rank's entry of CUDA_VISIBLE_DEVICES.
check_eq "podman-hpc: what ran inside" "python3 train.py --epochs 1: RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 MASTER_ADDR=node1 MASTER_PORT=29540 CUDA_VISIBLE_DEVICES=1 NCCL_DEBUG=INFO
inside: podman $work" "$(cat "$SCRATCH/podman.out")"

# ---- pyxis: srun's --container-image (the image file the module found in image_dir),
# --container-mounts (the module's bind list, then the working directory) and
# --container-workdir; the whole environment passes. start-shell outside a job: enroot start
# with each bind as an fstab entry and the variables named with --env.
stack=$SCRATCH/out/modules-out/pyxis/software/torch/2.4.0
check_eq "pyxis: what the tools received" "== srun
argv: --cpu-bind=mask_cpu:0xf,0xf0
argv: --container-image=$SCRATCH/images/torch.sqsh
argv: --container-mounts=/data:/d:ro,$stack/runscripts:/runscripts,$work:$work
argv: --container-workdir=$work
argv: /runscripts/python-distributed
argv: train.py
argv: --epochs
argv: 1
env: SLURM_PROCID=1
env: CUDA_VISIBLE_DEVICES=0,1
env: SITEGEN_CONTAINER=1
env: HOME=$LMOD_TEST_HOME
== enroot
argv: start
argv: --env
argv: MASTER_ADDR
argv: --env
argv: MASTER_PORT
argv: --env
argv: SITEGEN_CONTAINER=1
argv: --env
argv: CUDA_VISIBLE_DEVICES
argv: --env
argv: NCCL_DEBUG
argv: --mount
argv: /data:/d:none:x-create=auto,rbind,ro
argv: --mount
argv: $stack/runscripts:/runscripts:none:x-create=auto,rbind
argv: $SCRATCH/images/torch.sqsh
argv: bash
argv: -c
argv: echo \"inside: \${container:-}\${SITEGEN_CONTAINER:-}\${UENV_MOUNT_LIST:-} \$PWD\"
env: HOME=$LMOD_TEST_HOME" "$(cat "$SCRATCH/pyxis.log")"
check_eq "pyxis: what ran inside" "python3 train.py --epochs 1: RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 MASTER_ADDR=node1 MASTER_PORT=29540 CUDA_VISIBLE_DEVICES=1 NCCL_DEBUG=INFO
inside: 1 $work" "$(cat "$SCRATCH/pyxis.out")"

# ---- uenv: srun --uenv=LABEL --view=VIEW, the wrapper at its host path (nothing is bound);
# start-shell: uenv run --view=VIEW LABEL -- bash.
stack=$SCRATCH/out/modules-out/uenv/software/torch/2.4.0
check_eq "uenv: what the tools received" "== srun
argv: --cpu-bind=mask_cpu:0xf,0xf0
argv: --uenv=pytorch/v2.4.0:v1
argv: --view=default
argv: $stack/runscripts/python-distributed
argv: train.py
argv: --epochs
argv: 1
env: SLURM_PROCID=1
env: CUDA_VISIBLE_DEVICES=0,1
env: SITEGEN_CONTAINER=1
env: HOME=$LMOD_TEST_HOME
== uenv
argv: run
argv: --view=default
argv: pytorch/v2.4.0:v1
argv: --
argv: bash
argv: -c
argv: echo \"inside: \${container:-}\${SITEGEN_CONTAINER:-}\${UENV_MOUNT_LIST:-} \$PWD\"
env: HOME=$LMOD_TEST_HOME" "$(cat "$SCRATCH/uenv.log")"
check_eq "uenv: what ran inside" "python3 train.py --epochs 1: RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 MASTER_ADDR=node1 MASTER_PORT=29540 CUDA_VISIBLE_DEVICES=1 NCCL_DEBUG=INFO
inside: pytorch/v2.4.0:v1:/user-environment $work" "$(cat "$SCRATCH/uenv.out")"

# ---- Refusals at their TOML location (lines of write_site's template: runtime on 23, the
# container lines from 25, the python layout 2 lines after them).
# refused NAME EXPECTED_LINE: `check NAME` exits 1 and prints EXPECTED_LINE (path relative).
refused() {
  local out code=0
  out=$("$sitegen" --sites-dir "$SCRATCH/sites" check "$1" 2>&1) || code=$?
  out=${out//"$SCRATCH/sites/"/}
  if [[ $code == 1 ]] && grep -qxF -- "$2" <<<"$out"; then pass; else fail "$1: expected exit 1 and '$2', got $code: $out"; fi
}
write_site pyxispbs pyxis 'image_dir = "/images"' torch.sqsh false
sed -i 's/^scheduler = "slurm"/scheduler = "pbs"/; s/^launcher = "srun"/launcher = "mpiexec"/; s/^style = "mask"/style = "list"/' \
  "$SCRATCH/sites/pyxispbs/site.toml"
refused pyxispbs "pyxispbs/site.toml:23:11: error: pyxis is a Slurm SPANK plugin: the container is entered by srun's --container-image flags; the site's scheduler is 'pbs'"
write_site uenvpbs uenv 'view = "default"' "pytorch/v2.4.0:v1" false
sed -i 's/^scheduler = "slurm"/scheduler = "pbs"/; s/^launcher = "srun"/launcher = "mpiexec"/; s/^style = "mask"/style = "list"/' \
  "$SCRATCH/sites/uenvpbs/site.toml"
refused uenvpbs "uenvpbs/site.toml:23:11: error: uenv enters jobs through its Slurm plugin (srun --uenv, --view); the site's scheduler is 'pbs'"
write_site uenvbinds uenv 'view = "default"
binds = [{ host = "/data" }]' "pytorch/v2.4.0:v1" false
refused uenvbinds "uenvbinds/site.toml:26:9: error: uenv mounts only its image; the host's files are visible as they are, so there is nothing to bind"
write_site uenvnoview uenv '' "pytorch/v2.4.0:v1" false
refused uenvnoview "uenvnoview/site.toml:22:1: error: missing required key 'view' in [container]: uenv puts the image's software on PATH only through a view"
write_site uenvconda uenv 'view = "default"' "pytorch/v2.4.0:v1" false
sed -i 's/^layout = "container-system"/layout = "container-venv"/' "$SCRATCH/sites/uenvconda/site.toml"
refused uenvconda "uenvconda/site.toml:28:10: error: python layout 'container-venv' activates conda in the image, but a uenv image is a Spack software stack with views, not conda"
write_site uenvgpu uenv 'view = "default"' "pytorch/v2.4.0:v1" true
refused uenvgpu "uenvgpu/site.toml:24:12: error: uenv has no GPU flag for gpu_vendor 'nvidia'"
write_site podmanamd podman-hpc '' "registry.nersc.gov/library/torch:2.4" false
sed -i 's/^gpu_vendor = "nvidia"/gpu_vendor = "amd"/; s/^library = "nccl"/library = "rccl"/; s/CUDA_VISIBLE_DEVICES/ROCR_VISIBLE_DEVICES/' \
  "$SCRATCH/sites/podmanamd/site.toml"
refused podmanamd "podmanamd/site.toml:9:14: error: podman-hpc gives the container its own /dev and has no GPU flag for gpu_vendor 'amd': the devices would be invisible in the container"
write_site podmannogpu podman-hpc '' "registry.nersc.gov/library/torch:2.4" false
refused podmannogpu "podmannogpu/site.toml:24:12: error: CUDA is invisible in containers that podman-hpc runs without --gpu (the host's driver libraries are not bound in)"
write_site podmansif podman-hpc '' torch.sif true
refused podmansif "podmansif/site.toml:36:9: error: 'torch.sif' looks like an image file, but podman-hpc runs images by name"
write_site podmanview podman-hpc 'view = "default"' "registry.nersc.gov/library/torch:2.4" true
refused podmanview "podmanview/site.toml:25:8: error: podman-hpc has no views ('view' is for uenv)"

finish

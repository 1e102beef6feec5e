#!/usr/bin/env bash
# Cirrus' easyconfig installed by the real EasyBuild 5.2.1 (../shared/tools/easybuild/eb),
# and every pip command it ran compared, argument by argument and with its environment,
# against the seed's own commands (../shared/seeds/cirrus-pytorch-venv.md), written here by
# hand:
#
#   pip install --user torch==2.3.1+cu121 --extra-index-url https://download.pytorch.org/whl/cu121
#   (torchaudio, torchmetrics, torchtext, torchvision the same way; sitegen installs the five in one command)
#   pip install --user tensorboard ... (tensorboard_plugin_profile, tensorboard-plugin-wit, tensorboard-pytorch,
#   torch-tb-profiler)
#   module -s load cmake/3.25.2
#   export LD_LIBRARY_PATH=${NVHPC_ROOT}/cuda/lib64/stubs:${LD_LIBRARY_PATH}
#   CC=mpicc CXX=mpicxx FC=mpifort HOROVOD_CUDA_HOME=${NVHPC_ROOT}/cuda/12.4
#     HOROVOD_NCCL_HOME=${NVHPC_ROOT}/comm_libs/nccl HOROVOD_GPU=CUDA HOROVOD_BUILD_CUDA_CC_LIST=70
#     HOROVOD_CPU_OPERATIONS=MPI HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_WITH_MPI=1 HOROVOD_WITH_TENSORFLOW=0
#     HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_MXNET=0 CUDA_PATH=${NVHPC_ROOT}/cuda/12.4
#     pip install --user --no-cache-dir git+https://github.com/thomas-bouvier/horovod.git@compile-cpp17
#   horovodrun --check-build   ->  [X] PyTorch ... [X] MPI ... [X] NCCL
#
# STAND-INS (this machine has no CUDA, NVHPC, Cirrus modules or package index), from
# tests/tools/eb-standins/: the python/3.12.1-gpu module is a stub that puts a stand-in CPython
# 3.12 on PATH and sets NVHPC_ROOT (a stand-in value; on Cirrus the NVHPC module it loads sets
# it); cmake/3.25.2 puts the stand-in cmake on PATH; pip is standin_pip.py, which records each
# call (argv and the variables named below) and installs stand-in packages; a stand-in horovod
# remembers what its build environment enabled, and its horovodrun --check-build prints that.
#
# Checks: the install passes (its sanity check runs horovodrun --check-build with the module
# loaded); the recorded pip calls equal the seed's; the same site without
# HOROVOD_GPU_OPERATIONS=NCCL builds a Horovod whose check lacks NCCL, and EasyBuild refuses it.
set -euo pipefail
sitegen=$(realpath "${1:?usage: install_settings.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool python3
[[ -d /usr/share/lmod/lmod/libexec ]] || { fail "lmod is not installed (tests/tools/install-deps.sh)"; finish; }
eb=$(git -C "$root" rev-parse --show-toplevel)/../shared/tools/easybuild/eb
[[ -x $eb ]] || { fail "real EasyBuild not found at $eb"; finish; }
standins=$root/tests/tools/eb-standins
eb_cache=${SITEGEN_EB_CACHE:-${HOME:-/tmp}/.cache/easybuild-5.2.1}
nvhpc_root=/opt/nvidia/hpc_sdk/Linux_x86_64/24.5  # stand-in value of the NVHPC module's NVHPC_ROOT
env_names="CC CXX FC HOROVOD_CUDA_HOME HOROVOD_NCCL_HOME HOROVOD_GPU HOROVOD_BUILD_CUDA_CC_LIST
  HOROVOD_CPU_OPERATIONS HOROVOD_GPU_OPERATIONS HOROVOD_WITH_MPI HOROVOD_WITH_TENSORFLOW HOROVOD_WITH_PYTORCH
  HOROVOD_WITH_MXNET CUDA_PATH LD_LIBRARY_PATH PYTHONUSERBASE"

# The stub modules and EasyBuild's own python (a stand-in CPython 3.11, as easybuild_real.sh).
env_dir=$SCRATCH/env
mkdir -p "$env_dir/stubs/python" "$env_dir/stubs/cmake" "$env_dir/cmake/bin" "$SCRATCH/home"
"$standins/mkpython" "$env_dir/eb-python" 3.11
"$standins/mkpython" "$env_dir/python-3.12.1" 3.12.1
ln -s "$standins/cmake" "$env_dir/cmake/bin/cmake"
cat >"$env_dir/stubs/python/3.12.1-gpu.lua" <<EOF
-- stub of Cirrus' python/3.12.1-gpu (tests/suites/install_settings.sh)
prepend_path("PATH", "$env_dir/python-3.12.1/bin")
setenv("NVHPC_ROOT", "$nvhpc_root")
EOF
cat >"$env_dir/stubs/cmake/3.25.2.lua" <<EOF
-- stub of Cirrus' cmake/3.25.2 (tests/suites/install_settings.sh)
prepend_path("PATH", "$env_dir/cmake/bin")
EOF

# install SITES_DIR TAG: builds cirrus from SITES_DIR and installs its easyconfig with eb into
# $SCRATCH/TAG; status of eb, its output in $SCRATCH/TAG.log, pip's record in $SCRATCH/TAG.pip.
install() {
  local sites=$1 tag=$2 d=$SCRATCH/$2 ec
  rm -rf "$d"
  mkdir -p "$d/src" "$d/tmp"
  "$sitegen" --sites-dir "$sites" --out-dir "$d/out" build cirrus >/dev/null || return 1
  ec=$d/out/easyconfigs-out/cirrus/p/pytorch/pytorch-2.3.1-gpu.eb
  : >"$SCRATCH/$tag.pip"
  env -i "HOME=$SCRATCH/home" "USER=${USER:-root}" "SITEGEN_EB_CACHE=$eb_cache" \
    "PATH=$env_dir/eb-python/bin:/usr/bin:/bin" "MODULEPATH=$env_dir/stubs" \
    "SITEGEN_STANDIN_PIP_RECORD=$SCRATCH/$tag.pip" "STANDIN_ENV_NAMES=$env_names" \
    "$eb" --allow-use-as-root-and-accept-consequences --robot-paths= \
    --installpath="$d/prefix" --installpath-modules="$d/prefix" --suffix-modules-path=modulefiles \
    --buildpath="$d/build" --sourcepath="$d/src" --tmpdir="$d/tmp" --filter-env-vars=CMAKE_PREFIX_PATH \
    "$ec" >"$SCRATCH/$tag.log" 2>&1
}

if install "$root/sites" good; then
  pass "eb installs Cirrus' easyconfig (sanity check: horovodrun --check-build with [X] PyTorch, NCCL, MPI)"
else
  fail "eb did not install Cirrus' easyconfig:"
  grep -E 'ERROR|FAILED|failed|Sanity' "$SCRATCH/good.log" | head -n 20 || tail -n 20 "$SCRATCH/good.log"
fi

userbase=$SCRATCH/good/prefix/software/pytorch/2.3.1-gpu/python/3.12.1
cmake=$env_dir/cmake/bin/cmake
torch_reqs=(torch==2.3.1 torchaudio==2.3.1 torchmetrics==1.0.3 torchtext==0.18.0 torchvision==0.18.1)
tb_reqs=(tensorboard==2.17.0 tensorboard-plugin-wit==1.8.1 tensorboard-pytorch==0.7.1
  tensorboard_plugin_profile==2.15.1 torch-tb-profiler==0.4.3)
# EasyBuild's SYSTEM toolchain sets CC=gcc and CXX=g++ for the whole build; the Horovod step's
# own CC and CXX (the seed's mpicc, mpicxx) replace them for that command only.
expected=$(
  echo "== pip"
  printf 'argv: %s\n' install --user --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cu121 "${torch_reqs[@]}"
  printf '%s\n' "env: CC=gcc" "env: CXX=g++" "env: PYTHONUSERBASE=$userbase"
  echo "cmake: $cmake"
  echo "== pip"
  printf 'argv: %s\n' install --user --no-cache-dir "${tb_reqs[@]}"
  printf '%s\n' "env: CC=gcc" "env: CXX=g++" "env: PYTHONUSERBASE=$userbase"
  echo "cmake: $cmake"
  echo "== pip"
  printf 'argv: %s\n' install --user --no-cache-dir git+https://github.com/thomas-bouvier/horovod.git@compile-cpp17
  cat <<EOF
env: CC=mpicc
env: CXX=mpicxx
env: FC=mpifort
env: HOROVOD_CUDA_HOME=$nvhpc_root/cuda/12.4
env: HOROVOD_NCCL_HOME=$nvhpc_root/comm_libs/nccl
env: HOROVOD_GPU=CUDA
env: HOROVOD_BUILD_CUDA_CC_LIST=70
env: HOROVOD_CPU_OPERATIONS=MPI
env: HOROVOD_GPU_OPERATIONS=NCCL
env: HOROVOD_WITH_MPI=1
env: HOROVOD_WITH_TENSORFLOW=0
env: HOROVOD_WITH_PYTORCH=1
env: HOROVOD_WITH_MXNET=0
env: CUDA_PATH=$nvhpc_root/cuda/12.4
env: LD_LIBRARY_PATH=$nvhpc_root/cuda/lib64/stubs:
env: PYTHONUSERBASE=$userbase
cmake: $cmake
EOF
)
check_eq "the pip calls of Cirrus' install are the seed's (argv, environment, cmake on PATH)" "$expected" "$(cat "$SCRATCH/good.pip")"

# What the installed horovodrun says, with the module EasyBuild wrote (as a user runs it).
out=$(env -i HOME="$SCRATCH/home" PATH=/usr/bin:/bin MODULEPATH="$SCRATCH/good/prefix/modulefiles:$env_dir/stubs" \
  bash -c 'source /usr/share/lmod/lmod/init/bash && module load pytorch/2.3.1-gpu && horovodrun --check-build' 2>&1 || true)
check_eq "horovodrun --check-build of the installed stack, as the seed shows it" "Horovod v0+compile.cpp17:

Available Frameworks:
    [ ] TensorFlow
    [X] PyTorch
    [ ] MXNet

Available Controllers:
    [X] MPI
    [X] Gloo

Available Tensor Operations:
    [X] NCCL
    [ ] DDL
    [ ] CCL
    [X] MPI
    [X] Gloo" "$out"

# The same site without HOROVOD_GPU_OPERATIONS: Horovod builds without NCCL, the check refuses it.
cp -r "$root/sites" "$SCRATCH/sites-no-nccl"
sed -i '/^HOROVOD_GPU_OPERATIONS = "NCCL"$/d' "$SCRATCH/sites-no-nccl/cirrus/site.toml"
if grep -q HOROVOD_GPU_OPERATIONS "$SCRATCH/sites-no-nccl/cirrus/site.toml"; then
  fail "could not remove HOROVOD_GPU_OPERATIONS from the copy of Cirrus' site"
elif install "$SCRATCH/sites-no-nccl" no-nccl; then
  fail "eb installed a Horovod built without NCCL: the check did not refuse it"
elif grep -q "Sanity check failed: sanity check command out=\$(horovodrun --check-build" "$SCRATCH/no-nccl.log"; then
  pass "a Horovod built without NCCL fails the install's horovodrun --check-build sanity check"
else
  fail "the install without NCCL failed, but not in the horovodrun check:"
  grep -E 'ERROR|FAILED' "$SCRATCH/no-nccl.log" | head -n 10 || true
fi

finish

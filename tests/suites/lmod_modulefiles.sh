#!/usr/bin/env bash
# Every generated modulefile of every site, loaded and unloaded by the real Lmod: loads,
# sets exactly the expected variables (written here from the seeds), unloads back to a
# byte-identical environment, is found by spider, and passes Lmod's syntax checks. Then the
# container logic of LUMI's create_container_vars (image fallback, missing image, the
# /user-software bind variants) and an Apptainer site full of hostile values, whose bytes
# Lmod must set exactly without running any of them.
set -euo pipefail
sitegen=$(realpath "${1:?usage: lmod_modulefiles.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool lua5.4 python3
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed"; finish; }

out=$SCRATCH/out
stubs=$SCRATCH/stubs
for site in lumi frontier cirrus aurora local polaris perlmutter alps tuolumne; do
  "$sitegen" --sites-dir "$root/sites" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site" >/dev/null
done
# Base modules the sites depend on, as empty stubs (they are the site's, not ours).
for m in LUMI/24.03 PrgEnv-gnu/8.5.0 miniforge3/23.11.0-0 rocm/6.0.0 craype-accel-amd-gfx90a python/3.12.1-gpu \
  conda/2025-09-25 pytorch/2.8.0 rocm/6.4.1 cray-python/3.11.7; do
  mkdir -p "$stubs/$(dirname "$m")"
  echo "-- stub of the site's own $m" >"$stubs/$m.lua"
done
lumi_root=$out/modules-out/lumi/software/PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923
lumi_sif=lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif
# LUMI's binds from the recipe's local_singularity_bind (runscripts and user-software follow).
lumi_binds=/var/spool/slurmd,/opt/cray,/usr/lib64/libcxi.so.1,/usr/lib64/libjansson.so.4,/pfs,/scratch,/projappl,/project,/flash,/appl

# expected SITE MODULE: the exact NAME=VALUE lines `module load` adds or changes. bin/ is on
# PATH only where the stack installs commands (not Frontier), behind the layout's own bin
# (EasyBuild's order: its default bin, then modextrapaths).
expected() {
  local r
  case $1 in
    lumi) r=$lumi_root; cat <<EOV
CONTAINERROOT=$r
NCCL_NET_GDR_LEVEL=3
NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3
PATH=$r/bin:/usr/bin:/bin
RUNSCRIPTS=$r/runscripts
RUNSCRIPTSPYTORCH=$r/runscripts
SIF=$r/$lumi_sif
SIFPYTORCH=$r/$lumi_sif
SINGULARITYENV_CONDA_DEFAULT_ENV=pytorch
SINGULARITYENV_CONDA_EXE=/opt/miniconda3/bin/conda
SINGULARITYENV_CONDA_PREFIX=/opt/miniconda3/envs/pytorch
SINGULARITYENV_PREPEND_PATH=/runscripts:/user-software/venv/pytorch/bin:/opt/miniconda3/envs/pytorch/bin:/opt/miniconda3/condabin
SINGULARITYENV_VIRTUAL_ENV=/user-software/venv/pytorch
SINGULARITYENV_WITH_CONDA_VENV=source /runscripts/init-conda-venv
SINGULARITYENV_WITH_VENV=source /user-software/venv/pytorch/bin/activate
SINGULARITY_BIND=$lumi_binds,$r/runscripts:/runscripts,$r/user-software:/user-software
EOV
    ;;
    frontier) r=$out/modules-out/frontier/software/pytorch/2.3.1-rocm-6.0.0; cat <<EOV
CONDA_DEFAULT_ENV=$r/conda-env
CONDA_PREFIX=$r/conda-env
LD_LIBRARY_PATH=/sw/frontier/sitegen/aws-ofi-rccl/lib
NCCL_NET_GDR_LEVEL=3
NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3
PATH=$r/conda-env/bin:/usr/bin:/bin
RUNSCRIPTS=$r/runscripts
EOV
    ;;
    cirrus) r=$out/modules-out/cirrus/software/pytorch/2.3.1-gpu; cat <<EOV
PATH=$r/python/3.12.1/bin:$r/bin:/usr/bin:/bin
PYTHONPATH=$r/python/3.12.1/lib/python3.12/site-packages
PYTHONUSERBASE=$r/python/3.12.1
RUNSCRIPTS=$r/runscripts
EOV
    ;;
    aurora) r=$out/modules-out/aurora/software/frameworks/2024.2.1_u1
      local env=/opt/aurora/24.180.3/frameworks/aurora_nre_models_frameworks-2024.2.1_u1; cat <<EOV
CCL_ALLREDUCE=topo
CCL_ALLREDUCE_SCALEOUT=rabenseifner
CCL_ATL_TRANSPORT=mpi
CCL_BCAST=double_tree
CCL_CONFIGURATION=cpu_gpu_dpcpp
CCL_CONFIGURATION_PATH=
CCL_KVS_CONNECTION_TIMEOUT=600
CCL_KVS_GET_TIMEOUT=600
CCL_KVS_MODE=mpi
CCL_KVS_USE_MPI_RANKS=1
CCL_LOG_LEVEL=WARN
CCL_PROCESS_LAUNCHER=pmix
CCL_ROOT=$env/lib/python3.10/site-packages/oneccl_bindings_for_pytorch
CCL_ZE_CACHE_OPEN_IPC_HANDLES_THRESHOLD=1024
CONDA_DEFAULT_ENV=$env
CONDA_PREFIX=$env
FI_CXI_CQ_FILL_PERCENT=20
FI_CXI_DEFAULT_CQ_SIZE=131072
FI_CXI_OFLOW_BUF_SIZE=8388608
FI_LOG_LEVEL=warn
FI_LOG_PROV=cxi
MPIR_CVAR_ENABLE_GPU=0
NUMEXPR_NUM_THREADS=64
PATH=$env/bin:$r/bin:/usr/bin:/bin
RUNSCRIPTS=$r/runscripts
ZE_FLAT_DEVICE_HIERARCHY=FLAT
EOV
    ;;
    local) r=$out/modules-out/local/software/pytorch/1.13.1-cpu; cat <<EOV
GLOO_SOCKET_IFNAME=lo
PATH=$r/bin:/usr/bin:/bin
RUNSCRIPTS=$r/runscripts
EOV
    ;;
    # ALCF's NCCL page (ncclenv, with its aws-ofi-nccl directory) and `conda activate base` of the
    # conda/2025-09-25 module; bin/ behind the layout's own bin, as EasyBuild orders it.
    polaris) r=$out/modules-out/polaris/software/pytorch/2.8.0-conda-2025-09-25
      local env=/soft/applications/conda/2025-09-25/mconda3; cat <<EOV
CONDA_DEFAULT_ENV=$env
CONDA_PREFIX=$env
FI_CXI_DEFAULT_CQ_SIZE=131072
FI_CXI_DISABLE_HOST_REGISTER=1
FI_MR_CACHE_MONITOR=userfaultfd
LD_LIBRARY_PATH=/soft/libraries/aws-ofi-nccl/v1.9.1-aws/lib
NCCL_COLLNET_ENABLE=1
NCCL_CROSS_NIC=1
NCCL_NET_GDR_LEVEL=PHB
PATH=$env/bin:$r/bin:/usr/bin:/bin
RUNSCRIPTS=$r/runscripts
EOV
    ;;
    # NERSC's pytorch module brings Python; NERSC's data-parallel example sets the MR cache monitor.
    perlmutter) r=$out/modules-out/perlmutter/software/pytorch-dist/2.8.0; cat <<EOV
FI_MR_CACHE_MONITOR=userfaultfd
PATH=$r/bin:/usr/bin:/bin
RUNSCRIPTS=$r/runscripts
EOV
    ;;
    # CSCS's nccl_env_vars and the PyTorch uenv job script's variables; the uenv is a label.
    alps) r=$out/modules-out/alps/software/pytorch/2.8.0-uenv-v1; cat <<EOV
CONTAINERROOT=$r
CUDA_CACHE_DISABLE=1
FI_CXI_DEFAULT_CQ_SIZE=131072
FI_CXI_DEFAULT_TX_SIZE=16384
FI_CXI_DISABLE_HOST_REGISTER=1
FI_CXI_RX_MATCH_MODE=software
FI_MR_CACHE_MONITOR=userfaultfd
MPICH_GPU_SUPPORT_ENABLED=0
NCCL_CROSS_NIC=1
NCCL_NET=AWS Libfabric
NCCL_NET_GDR_LEVEL=PHB
NCCL_PROTO=^LL128
PATH=$r/bin:/usr/bin:/bin
RUNSCRIPTS=$r/runscripts
RUNSCRIPTSPYTORCH=$r/runscripts
SIF=pytorch/v2.8.0:v1
SIFPYTORCH=pytorch/v2.8.0:v1
TORCH_NCCL_ASYNC_ERROR_HANDLING=1
TRITON_HOME=/dev/shm/
EOV
    ;;
    # LLNL HPC-launcher's El Capitan family settings; pip --user over cray-python/3.11.7.
    tuolumne) r=$out/modules-out/tuolumne/software/pytorch/2.8.0-rocm-6.4; cat <<EOV
FI_CXI_DEFAULT_CQ_SIZE=131072
FI_CXI_DEFAULT_TX_SIZE=1024
FI_CXI_DISABLE_HOST_REGISTER=1
FI_CXI_RX_MATCH_MODE=hybrid
FI_MR_CACHE_MONITOR=userfaultfd
MPICH_OFI_NIC_POLICY=GPU
NCCL_CROSS_NIC=1
NCCL_MIN_NCHANNELS=24
NCCL_NET_GDR_LEVEL=3
NCCL_SOCKET_IFNAME=hsi0
PATH=$r/python/3.11.7/bin:$r/bin:/usr/bin:/bin
PYTHONPATH=$r/python/3.11.7/lib/python3.11/site-packages
PYTHONUSERBASE=$r/python/3.11.7
RUNSCRIPTS=$r/runscripts
EOV
    ;;
  esac
}

declare -A module_of=(
  [lumi]=PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923
  [frontier]=pytorch/2.3.1-rocm-6.0.0
  [cirrus]=pytorch/2.3.1-gpu
  [aurora]=frameworks/2024.2.1_u1
  [local]=pytorch/1.13.1-cpu
  [polaris]=pytorch/2.8.0-conda-2025-09-25
  [perlmutter]=pytorch-dist/2.8.0
  [alps]=pytorch/2.8.0-uenv-v1
  [tuolumne]=pytorch/2.8.0-rocm-6.4
)
declare -A default_name=([lumi]=PyTorch [frontier]=pytorch [cirrus]=pytorch [aurora]=frameworks [local]=pytorch
  [polaris]=pytorch [perlmutter]=pytorch-dist [alps]=pytorch [tuolumne]=pytorch)

# LUMI: without the image anywhere, load must fail with a clear LmodError.
mp_lumi="$out/modules-out/lumi/modulefiles:$stubs"
if msg=$(lmod_clean_shell "$mp_lumi" "module load ${module_of[lumi]}" 2>&1); then
  fail "lumi: module load succeeded although the container image is missing"
elif [[ $(tr -s ' \n' '  ' <<<"$msg") == *"container image $lumi_sif not found in"* ]]; then
  pass
else
  fail "lumi: missing image gave an unclear error: $msg"
fi
mkdir -p "$lumi_root" && : >"$lumi_root/$lumi_sif"  # the installed image (EasyBuild copies it into the root)

# /user-software as create_container_vars binds it: nothing while neither exists (a missing
# bind source would stop singularity), the directory, and the packed squashfs first.
lumi_bind() { lmod_vars_set_by "$mp_lumi" "${module_of[lumi]}" | sed -n 's/^SINGULARITY_BIND=//p'; }
check_eq "lumi: bind list without user-software" "$lumi_binds,$lumi_root/runscripts:/runscripts" "$(lumi_bind)"
mkdir -p "$lumi_root/user-software" && : >"$lumi_root/user-software.squashfs"
check_eq "lumi: bind list with user-software.squashfs" \
  "$lumi_binds,$lumi_root/runscripts:/runscripts,$lumi_root/user-software.squashfs:/user-software:image-src=/" "$(lumi_bind)"
rm "$lumi_root/user-software.squashfs"  # as EasyBuild's postinstallcmds leave it: the directory

for site in lumi frontier cirrus aurora local polaris perlmutter alps tuolumne; do
  mp="$out/modules-out/$site/modulefiles:$stubs"
  mod=${module_of[$site]}
  actual=$(lmod_vars_set_by "$mp" "$mod" | tr '\001' '\n') || { fail "$site: module load $mod failed"; continue; }
  check_eq "$site: variables set by module load $mod" "$(expected "$site")" "$actual"
  # The default: `module load <name>` picks this version.
  loaded=$(lmod_clean_shell "$mp" "module load ${default_name[$site]} && echo \"\$LOADEDMODULES\"" | tr ':' '\n' | grep "^${default_name[$site]}/" || true)
  check_eq "$site: default version of ${default_name[$site]}" "$mod" "$loaded"
  if report=$(lmod_load_unload_roundtrip "$mp" "$mod" 2>&1); then pass; else fail "$site: unload did not restore the environment"; echo "$report"; fi
  spider=$(lmod_spider "$mp" "$mod")
  if [[ $spider == *"$mod"* && $spider == *"Description:"* ]]; then pass; else fail "$site: module spider did not show $mod with its whatis"; echo "$spider" | head; fi
  if syntax=$(lmod_check_syntax "$mp" "$mod") && [[ -z $syntax ]]; then pass; else fail "$site: lmod --checkSyntax reported: $syntax"; fi
  if tree=$(lmod_check_tree "$out/modules-out/$site/modulefiles") && [[ $(sed '/^[[:space:]]*$/d' <<<"$tree") == "No errors found" ]]; then
    pass
  else
    fail "$site: check_module_tree_syntax reported: $tree"
  fi
done

# An Apptainer site whose values try to break out of Lua strings, shell words and the
# module tree. Each payload would create $marker if anything ran it.
marker=$SCRATCH/MARKER
toml() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }  # a TOML basic string
images="$SCRATCH/images \"dq\" \$(touch $marker) ]] 'sq' \`touch $marker\`"
image="pt \"]] \$(id) \`id\` ]=].sif"  # a file name: no '/' for the marker
conda_root="/opt/co nda\$(touch $marker)"
conda_env="env ]]\"x"
venv="/user-software/venv/\$(touch $marker) 'v'"
bind_host="/scr atch/\$(touch $marker)]]"
bind_in="/in\"side"
evil="\"]] ..\$(touch $marker) \`touch $marker\` \\ ]==]"
description="\"]] ..
\$(touch $marker)"
mkdir -p "$SCRATCH/sites/evil" "$images"
cat >"$SCRATCH/sites/evil/site.toml" <<TOML
[site]
name = "evil"
description = "hostile values"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/evil"
base_modules = ["rocm/6.0.0"]

[hardware]
gpu_vendor = "amd"
devices_per_node = 2
cores_per_node = 16
device_cores = ["8-15", "0-7"]
nics = ["hsn0"]

[binding]
style = "mask"

[collectives]
library = "rccl"
visibility_var = "HIP_VISIBLE_DEVICES"

[collectives.env]
NCCL_SOCKET_IFNAME = "hsn0"

[container]
runtime = "apptainer"
image_dir = $(toml "$images")
binds = [{ host = $(toml "$bind_host"), container = $(toml "$bind_in"), options = "ro" }]

[python]
layout = "container-venv"
version = "3.12"
conda_root = $(toml "$conda_root")
conda_env = $(toml "$conda_env")
venv = $(toml "$venv")

[[stacks]]
name = "Evil-Box"
version = "1.0"
image = $(toml "$image")
default = true
homepage = "https://example.org/?a=1&b=']]'"
description = $(toml "$description")

[stacks.env]
EVIL = $(toml "$evil")
TOML
# The prefix itself is hostile too: the tree must work wherever it is installed.
eout="$SCRATCH/o \"q\" \$(touch $marker) ]] 'x'"
eprefix=$eout/modules-out/evil
if ! msg=$("$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$eout" build evil --prefix "$eprefix" 2>&1); then
  fail "evil: sitegen build failed: $msg"
  finish
fi
emp="$eprefix/modulefiles:$stubs"
emod=Evil-Box/1.0
er=$eprefix/software/Evil-Box/1.0
# By hand: conda's layout, and WITH_VENV's path as one bash word ('\'' for each quote).
evil_expected() {
  local env_prefix="$conda_root/envs/$conda_env"
  cat <<EOV
APPTAINERENV_CONDA_DEFAULT_ENV=$conda_env
APPTAINERENV_CONDA_EXE=$conda_root/bin/conda
APPTAINERENV_CONDA_PREFIX=$env_prefix
APPTAINERENV_PREPEND_PATH=/runscripts:$venv/bin:$env_prefix/bin:$conda_root/condabin
APPTAINERENV_VIRTUAL_ENV=$venv
APPTAINERENV_WITH_CONDA_VENV=source /runscripts/init-conda-venv
APPTAINERENV_WITH_VENV=source '/user-software/venv/\$(touch $marker) '\\''v'\\''/bin/activate'
APPTAINER_BIND=$bind_host:$bind_in:ro,$er/runscripts:/runscripts
CONTAINERROOT=$er
EVIL=$evil
NCCL_SOCKET_IFNAME=hsn0
PATH=$er/bin:/usr/bin:/bin
RUNSCRIPTS=$er/runscripts
RUNSCRIPTSEVILBOX=$er/runscripts
SIF=$1
SIFEVILBOX=$1
EOV
}
# The image only in image_dir: SIF falls back to it.
: >"$images/$image"
actual=$(lmod_vars_set_by "$emp" "$emod" | tr '\001' '\n') || fail "evil: module load $emod failed"
check_eq "evil: variables (image from image_dir)" "$(evil_expected "$images/$image")" "$actual"
# The installed copy wins over image_dir.
: >"$er/$image"
actual=$(lmod_vars_set_by "$emp" "$emod" | tr '\001' '\n') || fail "evil: module load $emod failed"
check_eq "evil: variables (installed image)" "$(evil_expected "$er/$image")" "$actual"
if report=$(lmod_load_unload_roundtrip "$emp" "$emod" 2>&1); then pass; else fail "evil: unload did not restore the environment"; echo "$report"; fi
# Unload always works, even once the image has gone (create_container_vars: load mode only).
# shellcheck disable=SC2016  # expanded by the clean shell
if report=$(lmod_clean_shell "$emp" \
  'lmod_env_dump >"$HOME/before"' \
  "module load $emod || exit 1" \
  'command -p rm -f "$SIF"' \
  "module unload $emod || exit 1" \
  'lmod_env_dump | command -p cmp -s - "$HOME/before"' 2>&1); then
  pass
else
  fail "evil: unload after the image was removed failed or left changes: $report"
fi
rm -f "$images/$image"
if msg=$(lmod_clean_shell "$emp" "module load $emod" 2>&1); then
  fail "evil: module load succeeded with no image anywhere"
else
  check_contains "evil: missing-image error names the image" "not found in" "$msg"
fi
: >"$er/$image"
# Help, whatis, spider and show carry the description's exact bytes; syntax checks pass.
help=$(lmod_clean_shell "$emp" "module help $emod 2>&1")
check_contains "evil: module help shows the description byte for byte" "$description" "$help"
check_contains "evil: module help lists the container variables" "APPTAINERENV_WITH_VENV" "$help"
spider=$(lmod_spider "$emp" "$emod")
# spider prints the whatis Description reflowed: the line break becomes a space.
check_contains "evil: spider shows the whatis" "Description:" "$spider"
check_contains "evil: spider shows the whatis text" "\"]] .. \$(touch $marker)" "$spider"
lmod_show "$emp" "$emod" >/dev/null || fail "evil: module show failed"
if syntax=$(lmod_check_syntax "$emp" "$emod") && [[ -z $syntax ]]; then pass; else fail "evil: lmod --checkSyntax reported: $syntax"; fi
if [[ -e $marker ]]; then fail "evil: a payload ran (found $marker)"; else pass; fi
finish

#!/usr/bin/env bash
# Every accepted combination works: one site per combination of container runtime x
# scheduler x python layout x GPU vendor x visibility policy (narrow, all, shared) x GPU
# flag x rank starter (the scheduler's launcher or torchrun), every pair of values at
# least (tests/tools/pairwise.py). The suite's own model of the rules says which must be
# refused; sitegen must agree, refuse at a file:line:col location, or else produce outputs
# that load and unload in real Lmod, pass shellcheck and the easyconfig checker, and whose
# rank wrapper gives the right rank, world and device under the scheduler's fake environment.
set -euo pipefail
sitegen=$(realpath "${1:?usage: combinations.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool python3 shellcheck
# Flux is not on Debian: its stand-in (tests/tools/flux) answers the wrapper's flux calls.

# A fake python (and python3) that prints what a rank sees.
fakebin=$SCRATCH/fakebin
mkdir -p "$fakebin"
cat >"$fakebin/python" <<'SH'
#!/bin/bash
# SITEGEN_TEST_VISIBILITY_VAR names the site's visibility variable ("" when it has none).
device="<unset>"
if [[ -n ${SITEGEN_TEST_VISIBILITY_VAR:-} ]]; then device=${!SITEGEN_TEST_VISIBILITY_VAR-<unset>}; fi
printf 'RANK=%s LOCAL_RANK=%s WORLD_SIZE=%s LOCAL_WORLD_SIZE=%s DEVICE=%s\n' "$RANK" "$LOCAL_RANK" "$WORLD_SIZE" \
  "$LOCAL_WORLD_SIZE" "$device"
printf 'ARGS=%s\n' "$*"
SH
cp "$fakebin/python" "$fakebin/python3"
ln -s "$root/tests/tools/flux" "$fakebin/flux"
chmod +x "$fakebin/python" "$fakebin/python3"

# expected_refusal RUNTIME SCHEDULER LAYOUT VENDOR GPU_FLAG STARTER VISIBILITY: why this combination cannot work
# (the rules as the issue and the runtimes' documentation state them, written independently
# of sitegen), or nothing. GPU flags: singularity/apptainer --nv and --rocm, podman-hpc --gpu
# (NVIDIA only); charliecloud, pyxis (enroot) and uenv have none.
expected_refusal() {
  local runtime=$1 scheduler=$2 layout=$3 vendor=$4 gpu_flag=$5 starter=$6 visibility=$7 in_container=0 flag=""
  # A policy that gives ranks devices needs devices (and their variable, which only GPUs have).
  if [[ $vendor == none && $visibility != all ]]; then echo "visibility $visibility without devices"; return; fi
  [[ $layout == container-* ]] && in_container=1
  # torchrun's ranks are started by torchrun, not the wrapper: no per-rank device narrowing.
  if [[ $starter == torchrun && $vendor != none && $visibility != all ]]; then
    echo "torchrun cannot narrow devices per rank"
    return
  fi
  if [[ $runtime == none && $in_container == 1 ]]; then echo "container layout without a container"; return; fi
  if [[ $runtime != none && $in_container == 0 ]]; then echo "host layout on a container site"; return; fi
  if [[ $runtime == none ]]; then return; fi
  case $runtime/$vendor in
    singularity/nvidia | apptainer/nvidia) flag=--nv ;;
    singularity/amd | apptainer/amd) flag=--rocm ;;
    podman-hpc/nvidia) flag=--gpu ;;
  esac
  if [[ $scheduler != slurm && ($runtime == podman-hpc || $runtime == pyxis || $runtime == uenv) ]]; then
    echo "$runtime works only under Slurm"
    return
  fi
  if [[ $runtime == uenv && $layout == container-venv ]]; then echo "a uenv has no conda"; return; fi
  # The venv over the image's python lives in the install dir's /user-software bind; a uenv binds nothing.
  if [[ $runtime == uenv && $layout == container-system-venv ]]; then echo "a uenv has no /user-software"; return; fi
  if [[ $gpu_flag == true && -z $flag ]]; then echo "no GPU flag for this runtime and vendor"; return; fi
  if [[ $vendor == nvidia && -n $flag && $gpu_flag == false ]]; then echo "CUDA without $flag"; return; fi
  if [[ $runtime == podman-hpc && ($vendor == amd || $vendor == intel) ]]; then echo "podman-hpc hides the devices"; fi
}

# The image a stack of RUNTIME names: a file in image_dir, or a name in the runtime's store.
image_of() {
  case $1 in
    podman-hpc) echo "registry.example.org/torch:2.4.0" ;;
    uenv) echo "torch/2.4.0:v1" ;;
    pyxis) echo "torch.sqsh" ;;
    *) echo "torch.sif" ;;
  esac
}

# write_site DIR NAME RUNTIME SCHEDULER LAYOUT VENDOR VISIBILITY GPU_FLAG STARTER
write_site() {
  local dir=$1 name=$2 runtime=$3 scheduler=$4 layout=$5 vendor=$6 visibility=$7 gpu_flag=$8 starter=$9
  local launcher=srun devices=2 lib var style=mask
  [[ $scheduler == pbs ]] && launcher=mpiexec style=list
  [[ $scheduler == flux ]] && launcher=flux
  # torchrun binds no rank: a per-rank style is refused (tests/diagnostics/torchrun-per-rank-binding).
  [[ $starter == torchrun ]] && style=none
  case $vendor in
    none) devices=0 lib=gloo var="" style=none ;;
    amd) lib=rccl var=ROCR_VISIBLE_DEVICES ;;
    nvidia) lib=nccl var=CUDA_VISIBLE_DEVICES ;;
    intel) lib=oneccl var=ZE_AFFINITY_MASK ;;
  esac
  [[ $visibility == all ]] && var=""
  # NCCL and RCCL refuse two ranks of a communicator on one GPU (tests/suites/visibility.sh
  # checks the refusal): ranks sharing an NVIDIA or AMD device reduce with gloo.
  [[ $visibility == shared && ($lib == nccl || $lib == rccl) ]] && lib=gloo
  local tasks=2
  [[ $visibility == shared ]] && tasks=4  # 2 ranks on each of the 2 devices
  mkdir -p "$dir/$name"
  {
    printf '[site]\nname = "%s"\ndescription = "combination"\nscheduler = "%s"\nlauncher = "%s"\n' "$name" "$scheduler" "$launcher"
    printf 'install_prefix = "/opt/combo"\n\n'
    printf '[hardware]\ngpu_vendor = "%s"\ndevices_per_node = %s\ncores_per_node = 8\n' "$vendor" "$devices"
    [[ $devices -gt 0 ]] && printf 'device_cores = ["0-3", "4-7"]\n'
    printf '\n[binding]\nstyle = "%s"\n\n[batch]\ntasks_per_node = %s\nrank_starter = "%s"\n\n' "$style" "$tasks" "$starter"
    printf '[collectives]\nlibrary = "%s"\nvisibility = "%s"\n' "$lib" "$visibility"
    [[ $visibility == shared ]] && printf 'ranks_per_device = 2\n'
    [[ -n $var ]] && printf 'visibility_var = "%s"\n' "$var"
    if [[ $runtime == uenv ]]; then
      # A uenv binds nothing (the host's files are visible) and needs a view.
      printf '\n[container]\nruntime = "%s"\ngpu_flag = %s\nview = "default"\n' "$runtime" "$gpu_flag"
    elif [[ $runtime != none ]]; then
      printf '\n[container]\nruntime = "%s"\nimage_dir = "/images"\ngpu_flag = %s\nbinds = [{ host = "/scratch" }]\n' \
        "$runtime" "$gpu_flag"
    fi
    printf '\n[python]\nlayout = "%s"\nversion = "3.11"\n' "$layout"
    if [[ $layout == container-venv ]]; then
      printf 'conda_root = "/opt/conda"\nconda_env = "torch"\nvenv = "/user-software/venv/torch"\n'
    fi
    [[ $layout == container-system-venv ]] && printf 'venv = "/user-software/venv/torch"\n'
    printf '\n[[stacks]]\nname = "torch"\nversion = "2.4.0"\ndescription = "combination stack"\n'
    printf 'homepage = "https://pytorch.org/"\nvenv_extension = true\n'
    [[ $runtime != none ]] && printf 'image = "%s"\n' "$(image_of "$runtime")"
    printf '\n[stacks.components]\ntorch = "2.4.0"\n'
  } >"$dir/$name/site.toml"
  echo "$var"
}

# wrapper_output SCHEDULER STARTER WRAPPER VAR: rank 1 of 2 on one node through the fake
# python; under torchrun the one task of the node (rank 0 of 1), which runs torchrun.
wrapper_output() {
  local scheduler=$1 starter=$2 wrapper=$3 var=$4 nodefile=$SCRATCH/nodefile rank=1 size=2
  [[ $starter == torchrun ]] && rank=0 size=1
  echo node1 >"$nodefile"
  local env_vars=(PATH="$fakebin:/usr/bin:/bin" SITEGEN_TEST_VISIBILITY_VAR="$var")
  case $scheduler in
    slurm) env_vars+=(SLURM_JOB_ID=77 SLURM_PROCID="$rank" SLURM_NTASKS="$size" SLURM_LOCALID="$rank" SLURM_NODEID=0
      SLURM_STEP_TASKS_PER_NODE="$size" SLURM_STEP_NODELIST=node1) ;;
    pbs) env_vars+=(PBS_JOBID=77.pbs PBS_NODEFILE="$nodefile" PALS_RANKID="$rank" PALS_LOCAL_RANKID="$rank" PMI_SIZE="$size"
      PMI_LOCAL_SIZE="$size") ;;
    # ƒ2L = 77 in F58 ('2' = 1, 'L' = 19: 1 * 58 + 19).
    flux) env_vars+=(FLUX_JOB_ID=ƒ2L FLUX_JOB_SIZE="$size" FLUX_JOB_NNODES=1 FLUX_TASK_RANK="$rank" FLUX_TASK_LOCAL_ID="$rank"
      FAKE_FLUX_HOSTS=node1) ;;
  esac
  env -i "${env_vars[@]}" bash "$wrapper" x.py 2>&1 || true
}

sites=$SCRATCH/sites
n=0 accepted=0 refused=0
while read -r line; do
  n=$((n + 1))
  declare -A c=()
  for kv in $line; do c[${kv%%=*}]=${kv#*=}; done
  name=combo$n
  var=$(write_site "$sites" "$name" "${c[runtime]}" "${c[scheduler]}" "${c[layout]}" "${c[vendor]}" \
    "${c[visibility]}" "${c[gpu_flag]}" "${c[starter]}")
  want=$(expected_refusal "${c[runtime]}" "${c[scheduler]}" "${c[layout]}" "${c[vendor]}" "${c[gpu_flag]}" "${c[starter]}" \
    "${c[visibility]}")
  code=0
  "$sitegen" --sites-dir "$sites" check "$name" >"$SCRATCH/$name.check" 2>&1 || code=$?
  if [[ -n $want ]]; then
    refused=$((refused + 1))
    if [[ $code == 1 ]] && grep -qE "^$sites/$name/site.toml:[1-9][0-9]*:[1-9][0-9]*: error: " "$SCRATCH/$name.check"; then
      pass
    else
      fail "$line: expected a refusal ($want) at a location, got exit $code: $(cat "$SCRATCH/$name.check")"
    fi
    continue
  fi
  accepted=$((accepted + 1))
  if [[ $code != 0 ]]; then
    fail "$line: expected to be accepted, got exit $code: $(cat "$SCRATCH/$name.check")"
    continue
  fi
  out=$SCRATCH/out-$name
  prefix=$out/modules-out/$name
  if ! "$sitegen" --sites-dir "$sites" --out-dir "$out" build "$name" --prefix "$prefix" >"$SCRATCH/$name.build" 2>&1; then
    fail "$line: build failed: $(cat "$SCRATCH/$name.build")"
    continue
  fi
  module=torch/2.4.0
  stack=$prefix/software/torch/2.4.0
  # The image, installed as the easyconfig would copy it (the module refuses to load without).
  [[ ${c[runtime]} == none || ${c[runtime]} == podman-hpc || ${c[runtime]} == uenv ]] || : >"$stack/$(image_of "${c[runtime]}")"
  if report=$(lmod_load_unload_roundtrip "$prefix/modulefiles" "$module" 2>&1); then
    pass
  else
    fail "$line: Lmod load/unload: $report"
  fi
  scripts=() programs=()
  for f in "$stack"/runscripts/* "$stack"/bin/*; do
    if [[ $f == *.py ]]; then programs+=("$f"); elif [[ -f $f ]] && head -c 2 "$f" | grep -q '#!'; then scripts+=("$f"); fi
  done
  if report=$(shellcheck -s bash "${scripts[@]}" 2>&1); then pass; else fail "$line: shellcheck: $report"; fi
  for f in "${programs[@]}"; do
    if report=$(python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$f" 2>&1); then
      pass
    else
      fail "$line: $f does not parse: $report"
    fi
  done
  if report=$(python3 "$root/tests/tools/check_easyconfig.py" "$root/tests/data/easybuild_parameters.txt" \
    "$out/easyconfigs-out/$name" "$prefix" 2>&1); then
    pass
  else
    fail "$line: easyconfig: $report"
  fi
  wrapper=$(find "$stack/runscripts" -name '*python-distributed')
  # The device local rank 1 sees, by the policy: narrow -> LOCAL_RANK, all -> every device
  # (the variable unset), shared -> LOCAL_RANK / ranks_per_device (2).
  case ${c[visibility]} in
    narrow) device=1 ;;
    all) device="<unset>" ;;
    shared) device=0 ;;
  esac
  if [[ ${c[starter]} == torchrun ]]; then
    # The job ids 77 (Slurm, PBS) and ƒ2L (Flux) give MASTER_PORT 29577.
    want_out="RANK= LOCAL_RANK= WORLD_SIZE= LOCAL_WORLD_SIZE= DEVICE=<unset>
ARGS=-m torch.distributed.run --nnodes=1 --nproc_per_node=2 --rdzv_backend=c10d --rdzv_endpoint=node1:29577 --rdzv_id=77 x.py"
  else
    want_out="RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 DEVICE=$device
ARGS=x.py"
  fi
  check_eq "$line: wrapper" "$want_out" "$(wrapper_output "${c[scheduler]}" "${c[starter]}" "$wrapper" "$var")"
done < <(
  # Every pair of values that some valid site has is tried in an accepted site, and every
  # pair that some invalid site has in a refused one.
  dims=("runtime=none,singularity,apptainer,charliecloud,podman-hpc,pyxis,uenv" "scheduler=slurm,pbs,flux"
    "layout=container-venv,container-system,conda-env,userbase-venv,frameworks-module,system,container-system-venv,module-venv"
    "vendor=none,amd,nvidia,intel" "visibility=narrow,all,shared" "gpu_flag=false,true" "starter=launcher,torchrun")
  : >"$SCRATCH/valid"
  : >"$SCRATCH/invalid"
  while read -r runtime scheduler layout vendor visibility gpu_flag starter; do
    kind=invalid
    [[ -n $(expected_refusal "$runtime" "$scheduler" "$layout" "$vendor" "$gpu_flag" "$starter" "$visibility") ]] || kind=valid
    echo "$runtime $scheduler $layout $vendor $visibility $gpu_flag $starter" >>"$SCRATCH/$kind"
  done < <(python3 -c 'import itertools, sys
for combo in itertools.product(*[a.partition("=")[2].split(",") for a in sys.argv[1:]]):
    print(" ".join(combo))' "${dims[@]}")
  python3 "$root/tests/tools/pairwise.py" --candidates "$SCRATCH/valid" "${dims[@]}"
  python3 "$root/tests/tools/pairwise.py" --candidates "$SCRATCH/invalid" "${dims[@]}"
)
echo "combinations: $n ($accepted accepted, $refused refused)"
[[ $accepted -gt 0 && $refused -gt 0 ]] || fail "the combinations must include both accepted and refused sites"
finish

#!/usr/bin/env bash
# Batch options, --export=NONE, output directories and the network plugin path, each proven
# by what consumes it: the real one-node Slurm runs the generated job with
# `submit --export=NONE` (the ranks keep the module's variables, and the same job without
# SLURM_EXPORT_ENV=ALL loses them; the log lands in the logs/ directory submit created), real
# Lmod loads and unloads the plugin directory on LD_LIBRARY_PATH, and the container rank
# wrappers prepend it inside under a hand-made Slurm environment. Expected values by hand.
set -euo pipefail
sitegen=$(realpath "${1:?usage: batch_options.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool sbatch srun slurmctld slurmd shellcheck

sites=$SCRATCH/sites
out=$SCRATCH/out
mkdir -p "$sites"
build() {  # build SITE: generated into $out/modules-out/SITE with that prefix
  "$sitegen" --sites-dir "$sites" --out-dir "$out" build "$1" --prefix "$out/modules-out/$1" >"$SCRATCH/$1.build" 2>&1 ||
    { fail "build $1: $(cat "$SCRATCH/$1.build")"; finish; }
}

# ---- The local site with the Frontier seed's output pattern and batch options Slurm here
# accepts (exclusive; the others need a configured QOS, feature or reservation).
mkdir -p "$sites/blocal"
sed -e 's/^name = "local"/name = "blocal"/' -e 's|^time = "00:05:00"|time = "00:05:00"\noutput = "logs/%x_%j.out"\nexclusive = true|' \
  "$root/sites/local/site.toml" >"$sites/blocal/site.toml"
build blocal
rs=$out/modules-out/blocal/software/pytorch/1.13.1-cpu/runscripts
job=$rs/job.slurm
check_eq "job directives" "#SBATCH --job-name=pytorch
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=1
#SBATCH --partition=debug
#SBATCH --time=00:05:00
#SBATCH --output=logs/%x_%j.out
#SBATCH --exclusive" "$(grep '^#SBATCH' "$job")"
check_eq "submit creates logs/ and execs sbatch" "mkdir -p -- logs
exec sbatch \"\$@\"" "$(tail -n 2 "$rs/submit")"
check "shellcheck submit" shellcheck "$rs/submit"
check_eq "submit without arguments: usage, exit 2" \
  "exit 2: usage: submit [sbatch OPTIONS...] JOB-SCRIPT [ARGS...], e.g. submit $rs/job.slurm train.py" \
  "exit $(bash "$rs/submit" >/dev/null 2>&1 || echo $?): $(bash "$rs/submit" 2>&1 || true)"

slurm_up

cat >"$SCRATCH/show.py" <<'PY'
import os
path = os.environ.get("PATH", "").split(":")
print("RANK=" + os.environ["RANK"],
      "RUNSCRIPTS=" + os.environ.get("RUNSCRIPTS", "<unset>"),
      "GLOO_SOCKET_IFNAME=" + os.environ.get("GLOO_SOCKET_IFNAME", "<unset>"),
      "PATH0=" + path[0],
      "LOADED=" + os.environ.get("LOADEDMODULES", "<unset>"),
      "CANARY=" + os.environ.get("SITEGEN_CANARY", "<unset>"), flush=True)
PY
# submit_none DIR JOB: from a fresh DIR (no logs/), `submit --export=NONE --wait JOB show.py`
# with a canary in the caller's environment; prints the job id.
submit_none() {
  mkdir -p "$1"
  (cd "$1" && SITEGEN_CANARY=leaked bash "$rs/submit" --export=NONE --wait --parsable "$2" "$SCRATCH/show.py")
}
work=$SCRATCH/work
if id=$(submit_none "$work" "$job"); then pass; else fail "submit --export=NONE job.slurm failed"; fi
log=$work/logs/pytorch_$id.out
if [[ -f $log ]]; then pass "the log landed in logs/ (created by submit)"; else fail "no $log; $(ls -R "$work")"; fi
bin=$out/modules-out/blocal/software/pytorch/1.13.1-cpu/bin
for rank in 0 1; do
  check_eq "--export=NONE: rank $rank has the module's environment, not the caller's" \
    "RANK=$rank RUNSCRIPTS=$rs GLOO_SOCKET_IFNAME=lo PATH0=$bin LOADED=pytorch/1.13.1-cpu CANARY=<unset>" \
    "$(grep "^RANK=$rank " "$log" 2>/dev/null || cat "$log")"
done

# Control: the same job without the SLURM_EXPORT_ENV line loses the module in its ranks.
grep -v '^export SLURM_EXPORT_ENV=ALL$' "$job" >"$SCRATCH/job-without-export.slurm"
check_eq "control job differs by one line" 1 "$(diff "$job" "$SCRATCH/job-without-export.slurm" | grep -c '^<')"
work2=$SCRATCH/work2
id2=$(submit_none "$work2" "$SCRATCH/job-without-export.slurm") || true
check_eq "without SLURM_EXPORT_ENV=ALL both ranks lose the module's RUNSCRIPTS" 2 \
  "$(grep -c 'RUNSCRIPTS=<unset>' "$work2/logs/pytorch_$id2.out" 2>/dev/null || true)"

# ---- The network plugin on bare metal: real Lmod puts its directory first on
# LD_LIBRARY_PATH, keeps the old value, and unloading restores it.
plugin=$SCRATCH/plugin/lib
mkdir -p "$plugin"
write_gpu_site() {  # write_gpu_site NAME EXTRA-TOML: a 2-GPU NVIDIA Slurm site with aws-ofi-nccl
  mkdir -p "$sites/$1"
  cat >"$sites/$1/site.toml" <<TOML
[site]
name = "$1"
description = "NVIDIA test site"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/$1"

[hardware]
gpu_vendor = "nvidia"
devices_per_node = 2
cores_per_node = 2
device_cores = ["0", "1"]

[batch]
gpus_per_task = 1
gpu_bind = "closest"

[collectives]
library = "nccl"
network_plugin = "aws-ofi-nccl"
network_plugin_path = "$plugin"
visibility_var = "CUDA_VISIBLE_DEVICES"

$2

[[stacks]]
name = "pytorch"
version = "2.3.1"
description = "test stack"
homepage = "https://example.org/"
TOML
}
write_gpu_site bare '[python]
layout = "system"
version = "3.11"
interpreter = "/usr/bin/python3"'
build bare
mp=$out/modules-out/bare/modulefiles
# shellcheck disable=SC2034  # LMOD_EXTRA_ENV is read by lmod-lib.sh
LMOD_EXTRA_ENV=(LD_LIBRARY_PATH=/old/lib)
# shellcheck disable=SC2016  # expanded in Lmod's shell
check_eq "Lmod: plugin dir first, old value kept; unload restores it" "$plugin:/old/lib
/old/lib" "$(lmod_clean_shell "$mp" 'module load pytorch/2.3.1 && echo "$LD_LIBRARY_PATH" && module unload pytorch/2.3.1 && echo "$LD_LIBRARY_PATH"')"
# shellcheck disable=SC2034
LMOD_EXTRA_ENV=()
if report=$(lmod_load_unload_roundtrip "$mp" pytorch/2.3.1 2>&1); then pass; else fail "bare: roundtrip: $report"; fi
check_eq "bare: directives" "#SBATCH --gpus-per-task=1
#SBATCH --gpu-bind=closest" "$(grep -e '--gpu' "$out/modules-out/bare/software/pytorch/2.3.1/runscripts/job.slurm")"
check_eq "bare: the wrapper leaves LD_LIBRARY_PATH to the module" 0 \
  "$(grep -c LD_LIBRARY_PATH "$out/modules-out/bare/software/pytorch/2.3.1/runscripts/python-distributed" || true)"

# ---- In a container: the host directory joins the bind list, and the rank wrapper prepends it
# inside (a fake python3 reports what it got).
write_gpu_site boxed '[container]
runtime = "apptainer"
image_dir = "/images"
gpu_flag = true
binds = [{ host = "/scratch" }]

[python]
layout = "container-system"
version = "3.11"'
sed -i 's|^homepage = "https://example.org/"|&\nimage = "torch.sif"|' "$sites/boxed/site.toml"
build boxed
bmp=$out/modules-out/boxed/modulefiles
mkdir -p "$out/modules-out/boxed/software/pytorch/2.3.1" && : >"$out/modules-out/boxed/software/pytorch/2.3.1/torch.sif"
check_eq "container: the plugin directory is bound at its host path" \
  "APPTAINER_BIND=/scratch,$plugin,$out/modules-out/boxed/software/pytorch/2.3.1/runscripts:/runscripts" \
  "$(lmod_vars_set_by "$bmp" pytorch/2.3.1 | grep '^APPTAINER_BIND=')"
check_eq "container: the module leaves LD_LIBRARY_PATH alone" "" \
  "$(lmod_vars_set_by "$bmp" pytorch/2.3.1 | grep LD_LIBRARY_PATH || true)"
mkdir -p "$SCRATCH/fakebin"
# Stand-in for the image's python3: prints what the rank would load libraries from.
# shellcheck disable=SC2016  # expanded by the stand-in
printf '#!/bin/bash\necho "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-<unset>} CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"\n' >"$SCRATCH/fakebin/python3"
chmod +x "$SCRATCH/fakebin/python3"
fake_slurm=(SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=1 SLURM_NODEID=0
  SLURM_STEP_TASKS_PER_NODE=2 SLURM_STEP_NODELIST=n1)
wrapper=$out/modules-out/boxed/software/pytorch/2.3.1/runscripts/python-distributed
run_boxed() { env -i PATH="$SCRATCH/fakebin:/usr/bin:/bin" "${fake_slurm[@]}" "$@" bash "$wrapper" x.py; }
check_eq "container wrapper: plugin first, the image's value kept; Slurm's one GPU kept" \
  "LD_LIBRARY_PATH=$plugin:/usr/local/cuda/lib64 CUDA_VISIBLE_DEVICES=1" \
  "$(run_boxed LD_LIBRARY_PATH=/usr/local/cuda/lib64 CUDA_VISIBLE_DEVICES=1)"
check_eq "container wrapper: no old value, no empty entry" "LD_LIBRARY_PATH=$plugin CUDA_VISIBLE_DEVICES=1" \
  "$(run_boxed)"
# LUMI: aws-ofi-rccl built into the image at /opt/aws-ofi-rccl (not bound: the module's
# SINGULARITY_BIND has no such entry).
"$sitegen" --sites-dir "$root/sites" --out-dir "$out" build lumi --prefix "$out/modules-out/lumi" >/dev/null 2>&1 ||
  fail "build lumi"
lumi_w=$(find "$out/modules-out/lumi" -name conda-python-distributed)
cp "$SCRATCH/fakebin/python3" "$SCRATCH/fakebin/python"
check_eq "LUMI wrapper: /opt/aws-ofi-rccl first inside the image" \
  "LD_LIBRARY_PATH=/opt/aws-ofi-rccl:/opt/rocm/lib CUDA_VISIBLE_DEVICES=" \
  "$(env -i PATH="$SCRATCH/fakebin:/usr/bin:/bin" "${fake_slurm[@]}" VIRTUAL_ENV=/v USER=sitegen-batch-$$ \
    LD_LIBRARY_PATH=/opt/rocm/lib bash "$lumi_w" x.py 2>/dev/null)"
at_exit "rm -rf /tmp/sitegen-batch-$$-miopen-*"
if grep -q '/opt/aws-ofi-rccl' "$out/modules-out/lumi/modulefiles/PyTorch/"*.lua; then
  fail "LUMI's module names the in-image plugin directory"
else
  pass
fi
finish

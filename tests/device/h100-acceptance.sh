#!/usr/bin/env bash
# The bash -c scripts below take their values as arguments: their $ expand in that shell.
# shellcheck disable=SC2016
# On a node with one NVIDIA H100 (no scheduler, no network), deploys and runs the h100-nccl
# site's outputs as a sysadmin would, and records every step's output in OUT/run.log:
#   1. the node's facts (GPU, driver, CPUs, torch, CUDA, NCCL);
#   2. `lstopo` and `sitegen topology import` of the live node;
#   3. `sitegen check` and `build`, the stack copied to the install prefix, `sitegen doctor`
#      against the live node;
#   4. Lmod (Debian's 8.6, unpacked from the bundle when the node has none): `module load` of
#      the stack, whose driver gate reads the node's real /proc/driver/nvidia/version;
#   5. `acceptance.py --direct 1`: binding, device visibility, exact NCCL all_reduce, bus
#      bandwidth, driver;
#   6. the rank wrapper (python-distributed) running acceptance.py and a DDP training step,
#      started as job.slurm's `srun --cpu-bind=mask_cpu:MASK` starts it for a one-task step:
#      Slurm's variables for rank 0 of 1 task, the CPU mask applied with taskset;
#   7. the same with a CPU mask that is not the site's: the acceptance fails on affinity;
#   8. real EasyBuild 5.2.1 installs the stack's easyconfig (its sanity check imports the
#      node's torch), and the acceptance passes from EasyBuild's module and install;
#   9. a copy of the site whose stack needs a newer driver than the node's: the module refuses
#      to load and the acceptance fails on the driver check.
# Every step runs even when one before it failed; the exit status is 1 if any step did not
# do what it should. Not part of tests/run: the suite never needs a GPU.
# usage: tests/device/h100-acceptance.sh BUNDLE OUT   (BUNDLE from tests/device/bundle.sh)
set -uo pipefail
bundle=$(realpath "${1:?usage: h100-acceptance.sh BUNDLE OUT}")
out=$(realpath "${2:?usage: h100-acceptance.sh BUNDLE OUT}")
root=$(cd "$(dirname "$0")/../.." && pwd)
sites=$root/tests/device/sites
site=h100-nccl
stack=pytorch/2.11.0-cu130
prefix=/opt/sitegen-h100
runscripts=$prefix/software/$stack/runscripts
python=/opt/torch/.venv/bin/python3
export LD_LIBRARY_PATH=$bundle/lib HWLOC_PLUGINS_PATH=$bundle/hwloc-plugins
sitegen=$bundle/bin/sitegen
log=$out/run.log
failed=()
: >"$log"

# step NAME EXPECT CMD...: runs CMD (output to the log), records a failure when its exit
# status is not EXPECT ("0", or "nonzero").
step() {
  local name=$1 expect=$2 code=0 start end
  shift 2
  printf '\n==== %s\n$ %s\n' "$name" "$*" >>"$log"
  start=$EPOCHREALTIME
  "$@" >>"$log" 2>&1 || code=$?
  end=$EPOCHREALTIME
  printf -- '---- %s: exit %s (%s s)\n' "$name" "$code" "$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b - a}')" >>"$log"
  if [[ $expect == 0 && $code != 0 || $expect == nonzero && $code == 0 ]]; then
    failed+=("$name")
  fi
}
# expect_in NAME TEXT: records a failure unless the log's last step printed TEXT.
expect_in() {
  if awk -v t="$2" '/^==== /{buf=""} {buf=buf $0 "\n"} END{exit index(buf, t) ? 0 : 1}' "$log"; then
    printf -- '---- found: %s\n' "$2" >>"$log"
  else
    printf -- '---- MISSING: %s\n' "$2" >>"$log"
    failed+=("$1")
  fi
}

facts() {
  uname -r
  nproc
  grep -m1 'model name' /proc/cpuinfo
  nvidia-smi --query-gpu=name,memory.total,driver_version,pci.bus_id --format=csv
  cat /proc/driver/nvidia/version
  ls /sys/class/net
  hostname
  getent hosts "$(hostname)" || echo "$(hostname) does not resolve"
  "$python" -c 'import sys, torch
print("python", sys.version.split()[0])
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))
print("device", torch.cuda.get_device_name(0), torch.cuda.device_count())'
}
step facts 0 facts

step lstopo 0 bash -c '"$1/bin/lstopo-no-graphics" --of xml >"$2/node.xml"' _ "$bundle" "$out"
step "topology import" 0 bash -c '"$1" topology import "$2/node.xml" | tee "$2/hardware.toml"' _ "$sitegen" "$out"
step check 0 "$sitegen" --sites-dir "$sites" check "$site"
step build 0 "$sitegen" --sites-dir "$sites" --out-dir /tmp/sitegen-out build "$site"
step deploy 0 bash -c 'mkdir -p "$2" && cp -a "/tmp/sitegen-out/modules-out/$1/." "$2/" && find "$2" -type f | sort' _ "$site" "$prefix"
step doctor 0 "$sitegen" --sites-dir "$sites" doctor "$site"
expect_in doctor "no mismatches"

# Lmod: the node's own, else Debian's from the bundle, added without replacing any file.
install_lmod() {
  if [[ -x /usr/share/lmod/lmod/libexec/lmod ]]; then
    echo "Lmod already installed"
    return 0
  fi
  rm -rf /tmp/lmodroot && mkdir /tmp/lmodroot || return 1
  for deb in "$bundle"/debs/*.deb; do dpkg -x "$deb" /tmp/lmodroot || return 1; done
  cp -an /tmp/lmodroot/. / && ldconfig
}
step "install Lmod" 0 install_lmod
# lmod_shell TREE CMDS: CMDS in a clean bash with Lmod's `module`, TREE/modulefiles used.
lmod_shell() {
  env -i HOME=/tmp/lmod-home PATH="${python%/*}:/usr/bin:/bin" bash --noprofile --norc -c \
    'source /usr/share/lmod/lmod/init/bash && module use "$1/modulefiles" && eval "$2"' _ "$1" "$2"
}
step "module load" 0 lmod_shell "$prefix" "module load $stack && module list 2>&1 && echo \"RUNSCRIPTS=\$RUNSCRIPTS GLOO_SOCKET_IFNAME=\$GLOO_SOCKET_IFNAME\" && command -v extend-venv-activate"

step "acceptance --direct 1" 0 env -i PATH="${python%/*}:/usr/bin:/bin" HOME=/tmp "$runscripts/acceptance.py" --direct 1
expect_in "acceptance --direct 1" "ACCEPTANCE PASS"

# The rank wrapper as `srun --cpu-bind=mask_cpu:MASK python-distributed ...` starts it in a
# one-task step of job 4242: Slurm's per-task variables, the mask from job.slurm.
mask=$(sed -n 's/^CPU_MASKS=//p' "$runscripts/job.slurm")
# as_srun_task MASK ARGS: the wrapper with ARGS (one string, expanded in the job's shell).
as_srun_task() {
  local host cpu_mask=$1
  shift
  host=$(hostname)
  lmod_shell "$prefix" "module load $stack && export SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_NTASKS=1 \
SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=1 SLURM_STEP_NODELIST=$host SLURM_JOB_NODELIST=$host \
SITEGEN_REPORT_AFFINITY=1 SITEGEN_ACCEPTANCE_VERDICT=/tmp/verdict && \
MASTER_ADDR=\$(\"\$RUNSCRIPTS/get-master\") && export MASTER_ADDR && echo \"get-master: \$MASTER_ADDR\" && \
taskset $cpu_mask \"\$RUNSCRIPTS/python-distributed\" $*"
}
rm -f /tmp/verdict
step "rank wrapper: acceptance" 0 as_srun_task "$mask" '"$RUNSCRIPTS/acceptance.py"'
step "rank 0's verdict" 0 cat /tmp/verdict
expect_in "rank 0's verdict" "ACCEPTANCE PASS"

cat >/tmp/ddp_step.py <<'PY'
# A user's first job: DDP on the rank's GPU with NCCL, a few steps, the rank's environment.
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
rank, local = dist.get_rank(), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(0)  # the wrapper narrowed CUDA_VISIBLE_DEVICES to the rank's GPU
env = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                       "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES")}
print("rank", rank, env, "cpus", sorted(os.sched_getaffinity(0)), torch.cuda.get_device_name(0))
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
    torch.nn.Linear(4096, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096)).cuda().bfloat16())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
for step in range(20):
    if step == 5:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
    loss = model(x).float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step in (0, 19):
        print("step", step, "loss", round(loss.item(), 5))
torch.cuda.synchronize()
dt = (time.perf_counter() - t0) / 15
flops = 3 * 2 * 8192 * 4096 * 4096 * 2  # forward + backward, two layers
print("step time %.2f ms, %.0f TFLOP/s (bf16)" % (dt * 1e3, flops / dt / 1e12))
dist.destroy_process_group()
PY
step "rank wrapper: DDP" 0 as_srun_task "$mask" /tmp/ddp_step.py
rm -f /tmp/verdict
step "rank wrapper: a wrong mask (0x1)" 0 as_srun_task 0x1 '"$RUNSCRIPTS/acceptance.py" --sizes 8 || echo "acceptance exit $?"'
step "rank 0's verdict (wrong mask)" 0 cat /tmp/verdict
expect_in "rank 0's verdict (wrong mask)" "ACCEPTANCE FAIL: $stack on $site: 1 rank on 1 node; failing ranks 0 (affinity: ranks 0)"

# Real EasyBuild installs the easyconfig; the acceptance runs from its module. EasyBuild runs
# with the node's /usr/bin/python3 when there is one, else the image's.
eb_install() {
  local eb=/tmp/easybuild eb_python=/usr/bin/python3
  [[ -x $eb_python ]] || eb_python=$python
  rm -rf "$eb" && mkdir -p "$eb/src" || return 1
  for t in "$bundle"/easybuild/*.tar.gz; do tar xzf "$t" -C "$eb/src" || return 1; done
  env -i HOME=$eb PATH=/usr/share/lmod/lmod/libexec:/usr/bin:/bin \
    PYTHONPATH="$eb/src/easybuild-framework:$eb/src/easybuild-easyblocks" \
    "$eb_python" -m easybuild.main --allow-use-as-root-and-accept-consequences --robot-paths= \
    --installpath="$eb/prefix" --buildpath="$eb/build" --sourcepath="$eb/sources" --tmpdir="$eb/tmp" \
    --installpath-modules="$eb/prefix" --suffix-modules-path=modulefiles \
    "/tmp/sitegen-out/easyconfigs-out/$site/p/${stack%%/*}/${stack%%/*}-${stack#*/}.eb"
}
step "eb install" 0 eb_install
expect_in "eb install" "COMPLETED: Installation ended successfully"
step "EasyBuild's module: acceptance --direct 1" 0 lmod_shell /tmp/easybuild/prefix \
  "module load $stack && echo \"RUNSCRIPTS=\$RUNSCRIPTS\" && \"\$RUNSCRIPTS/acceptance.py\" --direct 1 --sizes 8"
expect_in "EasyBuild's module: acceptance --direct 1" "ACCEPTANCE PASS"

# A newer driver than the node's: a site copy whose stack needs 999.1.
rm -rf /tmp/sites-newer && cp -r "$sites" /tmp/sites-newer
sed -i 's/^min_driver = .*/min_driver = "999.1"/' /tmp/sites-newer/$site/site.toml
step "build (driver 999.1)" 0 "$sitegen" --sites-dir /tmp/sites-newer --out-dir /tmp/sitegen-newer build "$site" --prefix /tmp/sitegen-newer/deployed
newer=/tmp/sitegen-newer/modules-out/$site
# Lmod wraps its message at the terminal's width: one line, single spaces.
step "module load (driver 999.1)" nonzero lmod_shell "$newer" \
  "{ msg=\$(module load $stack 2>&1); code=\$?; }; tr -s ' \n' '  ' <<<\"\$msg\"; echo; exit \$code"
expect_in "module load (driver 999.1)" "needs the NVIDIA GPU driver 999.1 or newer; this node has"
step "acceptance --direct 1 (driver 999.1)" nonzero env -i PATH="${python%/*}:/usr/bin:/bin" HOME=/tmp \
  "$newer/software/$stack/runscripts/acceptance.py" --direct 1 --sizes 8
expect_in "acceptance --direct 1 (driver 999.1)" "ACCEPTANCE FAIL"

if ((${#failed[@]})); then
  printf '\nFAILED:%s\n' "$(printf ' "%s"' "${failed[@]}")" | tee -a "$log"
  exit 1
fi
printf '\nall steps did what they should\n' | tee -a "$log"

#!/usr/bin/env bash
# The generated Flux scripts (job.flux, the rank wrapper, acceptance.flux): shellcheck, the
# directives literally, then job.flux end to end under the flux STAND-IN (tests/tools/flux,
# which records argv and starts the tasks here with the flux-shell's task variables) and a
# fake python that prints what each rank got: ranks, master, port from the F58 job id (with and
# without `flux job id`), devices, the binding entry Flux gives each task, MIOpen caches per
# node; the error paths; the NVIDIA form (Flux narrows CUDA_VISIBLE_DEVICES) and torchrun.
set -euo pipefail
sitegen=$(realpath "${1:?usage: flux_wrapper.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool shellcheck python3

sites=$SCRATCH/sites
mkdir -p "$sites/fluxamd"
cat >"$sites/fluxamd/site.toml" <<'TOML'
[site]
name = "fluxamd"
description = "a Flux test site: 4 AMD GPUs, 96 cores"
scheduler = "flux"
launcher = "flux"
install_prefix = "/opt/fluxamd"

[hardware]
gpu_vendor = "amd"
devices_per_node = 4
cores_per_node = 96
device_cores = ["0-23", "24-47", "48-71", "72-95"]
reserved_cores = [0, 24, 48, 72]

[binding]
style = "list"
cores_per_rank = 20

[batch]
nodes = 2
time = "01:00:00"
partition = "pdebug"
account = "guests"
output = "flux-{{id}}.out"

[collectives]
library = "rccl"
visibility_var = "ROCR_VISIBLE_DEVICES"

[collectives.env]
NCCL_DEBUG = "WARN"

[python]
layout = "system"
version = "3.11"

[[stacks]]
name = "pytorch"
version = "2.5.1"
description = "test stack"
homepage = "https://pytorch.org/"
TOML
# The same site on NVIDIA GPUs (Flux's gpu-affinity narrows CUDA_VISIBLE_DEVICES), and with torchrun.
mkdir -p "$sites/fluxnv" "$sites/fluxtr"
sed -e 's/fluxamd/fluxnv/; s/gpu_vendor = "amd"/gpu_vendor = "nvidia"/; s/"rccl"/"nccl"/' \
  -e 's/ROCR_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES/' "$sites/fluxamd/site.toml" >"$sites/fluxnv/site.toml"
sed -e 's/fluxamd/fluxtr/; s/style = "list"/style = "none"/; /^visibility_var/d' \
  -e 's/^output = .*/rank_starter = "torchrun"/' "$sites/fluxamd/site.toml" >"$sites/fluxtr/site.toml"
for site in fluxamd fluxnv fluxtr; do
  if "$sitegen" --sites-dir "$sites" --out-dir "$SCRATCH/out" build "$site" --prefix "/opt/$site" >"$SCRATCH/$site.build" 2>&1; then
    pass
  else
    fail "build $site: $(cat "$SCRATCH/$site.build")"
  fi
done
rs() { echo "$SCRATCH/out/modules-out/$1/software/pytorch/2.5.1/runscripts"; }
for site in fluxamd fluxnv fluxtr; do
  for f in job.flux python-distributed acceptance.flux; do
    if report=$(shellcheck -s bash "$(rs "$site")/$f" 2>&1); then pass; else fail "$site $f: $report"; fi
  done
done

check_eq "job.flux directives (flux-batch(1): -N, --exclusive, -t, --queue, --bank, --output)" "#!/bin/bash -l
# flux: --job-name=pytorch
# flux: -N 2
# flux: --exclusive
# flux: -t 60m
# flux: --queue=pdebug
# flux: --bank=guests
# flux: --output=flux-{{id}}.out" "$(head -n 8 "$(rs fluxamd)/job.flux")"
check_eq "acceptance.flux directives" "#!/bin/bash -l
# flux: --job-name=pytorch-acceptance
# flux: -N 2
# flux: --exclusive
# flux: -t 60m
# flux: --queue=pdebug
# flux: --bank=guests
# flux: --output=flux-{{id}}.out" "$(head -n 8 "$(rs fluxamd)/acceptance.flux")"

# Stand-ins: flux (tests/tools/flux), module (prints nothing), python (prints what a rank sees).
fakebin=$SCRATCH/fakebin
mkdir -p "$fakebin"
ln -s "$root/tests/tools/flux" "$fakebin/flux"
printf '#!/bin/bash\n' >"$fakebin/module"
cat >"$fakebin/python3" <<'SH'
#!/bin/bash
line="RANK=${RANK-<unset>} LOCAL_RANK=${LOCAL_RANK-<unset>} WORLD_SIZE=${WORLD_SIZE-<unset>}"
line+=" LOCAL_WORLD_SIZE=${LOCAL_WORLD_SIZE-<unset>} MASTER_ADDR=${MASTER_ADDR-<unset>} MASTER_PORT=${MASTER_PORT-<unset>}"
line+=" ROCR=${ROCR_VISIBLE_DEVICES-<unset>} CUDA=${CUDA_VISIBLE_DEVICES-<unset>} CPUS=${FAKE_FLUX_TASK_CPUS-<unset>}"
line+=" MIOPEN=${MIOPEN_USER_DB_PATH-<unset>} NCCL_DEBUG=${NCCL_DEBUG-<unset>}"
printf '%s ARGS=%s\n' "$line" "$*"
SH
cp "$fakebin/python3" "$fakebin/python"
chmod +x "$fakebin/module" "$fakebin/python3" "$fakebin/python"
test_user=sitegen-flux-test-$$
at_exit "rm -rf /tmp/$test_user-miopen-*"
# run_job SITE [VAR=value...] -- ARGS...: job.flux on two nodes under the stand-in.
run_job() {
  local site=$1 vars=()
  shift
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  : >"$SCRATCH/flux.log"
  env -i PATH="$fakebin:/usr/bin:/bin" USER="$test_user" RUNSCRIPTS="$(rs "$site")" FAKE_FLUX_LOG="$SCRATCH/flux.log" \
    FAKE_FLUX_HOSTS="tuo1001 tuo1002" "${vars[@]}" bash "$(rs "$site")/job.flux" "$@"
}

# F58 job id ƒHd2oW67H8R = 123456789012345678 (RFC 19 base58, computed independently); its last
# 15 digits 456789012345678 give MASTER_PORT 29500 + 678.
amd_ranks() {  # the 8 ranks of fluxamd, by hand
  local r cpus=(1-20 25-44 49-68 73-92)
  for r in 0 1 2 3 4 5 6 7; do
    printf 'RANK=%s LOCAL_RANK=%s WORLD_SIZE=8 LOCAL_WORLD_SIZE=4 MASTER_ADDR=tuo1001 MASTER_PORT=30178' "$r" $((r % 4))
    printf ' ROCR=%s CUDA=<unset> CPUS=%s MIOPEN=/tmp/%s-miopen-456789012345678-%s NCCL_DEBUG=WARN' \
      $((r % 4)) "${cpus[r % 4]}" "$test_user" $((r / 4))
    printf " ARGS=train.py a b \$(id)\n"
  done
}
check_eq "fluxamd: every rank" "$(amd_ranks)" "$(run_job fluxamd -- train.py 'a b' "\$(id)")"
check_eq "fluxamd: the flux calls" "flux hostlist --count instance
flux run -N 2 -n 8 -c 20 -g 1 -o cpu-affinity=map:1-20\\;25-44\\;49-68\\;73-92 -o gpu-affinity=off $(rs fluxamd)/python-distributed train.py x
      8 flux hostlist --nth=0 local
      8 flux job id --to=dec $'\\306\\222Hd2oW67H8R'" \
  "$(run_job fluxamd -- train.py x >/dev/null; head -n 2 "$SCRATCH/flux.log"; tail -n +3 "$SCRATCH/flux.log" | sort | uniq -c)"
check_eq "fluxamd: MIOpen caches exist, one per node" "/tmp/$test_user-miopen-456789012345678-0
/tmp/$test_user-miopen-456789012345678-1" "$(find /tmp -maxdepth 1 -name "$test_user-miopen-*" | sort)"

# The port without `flux job id` (decoded by the wrapper), in the C and a UTF-8 locale, with
# the ASCII prefix, and from a decimal id: the same 30178 each time.
ports() { grep -o 'MASTER_PORT=[0-9]*' | sort -u | paste -sd' '; }
check_eq "port: flux job id fails" "MASTER_PORT=30178" "$(run_job fluxamd FAKE_FLUX_NO_JOB_ID=1 -- x.py | ports)"
check_eq "port: no flux job id, C locale" "MASTER_PORT=30178" "$(run_job fluxamd FAKE_FLUX_NO_JOB_ID=1 LC_ALL=C -- x.py | ports)"
check_eq "port: no flux job id, UTF-8 locale" "MASTER_PORT=30178" \
  "$(run_job fluxamd FAKE_FLUX_NO_JOB_ID=1 LC_ALL=C.UTF-8 -- x.py | ports)"
check_eq "port: ASCII F58 prefix" "MASTER_PORT=30178" \
  "$(run_job fluxamd FAKE_FLUX_NO_JOB_ID=1 FAKE_FLUX_JOB_ID=fHd2oW67H8R -- x.py | ports)"
check_eq "port: decimal id" "MASTER_PORT=30178" "$(run_job fluxamd FAKE_FLUX_JOB_ID=123456789012345678 -- x.py | ports)"
check_eq "port: small F58 id (42)" "MASTER_PORT=29542" "$(run_job fluxamd FAKE_FLUX_NO_JOB_ID=1 FAKE_FLUX_JOB_ID=ƒj -- x.py | ports)"
check_eq "port: the user's MASTER_PORT wins" "MASTER_PORT=31000" "$(run_job fluxamd MASTER_PORT=31000 -- x.py | ports)"

# NVIDIA: Flux narrows CUDA_VISIBLE_DEVICES per task (gpu-affinity=per-task); the wrapper keeps it.
check_eq "fluxnv: the flux run line" \
  "flux run -N 2 -n 8 -c 20 -g 1 -o cpu-affinity=map:1-20\\;25-44\\;49-68\\;73-92 -o gpu-affinity=per-task $(rs fluxnv)/python-distributed x.py" \
  "$(run_job fluxnv -- x.py >/dev/null; grep '^flux run' "$SCRATCH/flux.log")"
check_eq "fluxnv: devices per rank" "0 1 2 3 0 1 2 3" \
  "$(run_job fluxnv -- x.py | grep -o 'CUDA=[^ ]*' | cut -d= -f2 | paste -sd' ')"

# torchrun: one task per node with its 4 ranks' cores and all GPUs; the wrapper execs torchrun.
tr_line() {
  printf 'RANK=<unset> LOCAL_RANK=<unset> WORLD_SIZE=<unset> LOCAL_WORLD_SIZE=<unset> MASTER_ADDR=tuo1001 MASTER_PORT=30178'
  printf ' ROCR=<unset> CUDA=<unset> CPUS=per-task MIOPEN=/tmp/%s-miopen-456789012345678-%s NCCL_DEBUG=WARN' "$test_user" "$1"
  printf ' ARGS=-m torch.distributed.run --nnodes=2 --nproc_per_node=4 --rdzv_backend=c10d'
  printf ' --rdzv_endpoint=tuo1001:30178 --rdzv_id=456789012345678 train.py --epochs 1\n'
}
check_eq "fluxtr: one torchrun per node" "$(tr_line 0; tr_line 1)" "$(run_job fluxtr -- train.py --epochs 1)"
check_eq "fluxtr: the flux run line" \
  "flux run -N 2 -n 2 -c 4 -g 4 -o cpu-affinity=per-task -o gpu-affinity=off $(rs fluxtr)/python-distributed x.py" \
  "$(run_job fluxtr -- x.py >/dev/null; grep '^flux run' "$SCRATCH/flux.log")"

# Error paths of the wrapper: a message and exit 2, never a guessed rank.
task=(FLUX_JOB_ID=ƒHd2oW67H8R FLUX_JOB_SIZE=8 FLUX_JOB_NNODES=2 FLUX_TASK_RANK=5 FLUX_TASK_LOCAL_ID=1 MASTER_ADDR=tuo1001)
expect_error() {  # expect_error NAME MESSAGE VAR=value...
  local name=$1 want=$2 msg code=0
  shift 2
  msg=$(env -i PATH="$fakebin:/usr/bin:/bin" FAKE_FLUX_NO_JOB_ID=1 USER="$test_user" "${task[@]}" "$@" \
    bash "$(rs fluxamd)/python-distributed" x.py 2>&1) || code=$?
  check_eq "$name" "exit 2: $want" "exit $code: $msg"
}
expect_error "no FLUX_TASK_RANK" "python-distributed: FLUX_TASK_RANK is not set: run this through flux run inside a Flux job" FLUX_TASK_RANK=
expect_error "code in FLUX_TASK_RANK is not evaluated" "python-distributed: FLUX_TASK_RANK is not a number: a[\$(touch $SCRATCH/pwned)]" \
  "FLUX_TASK_RANK=a[\$(touch $SCRATCH/pwned)]"
if [[ -e $SCRATCH/pwned ]]; then fail "FLUX_TASK_RANK was evaluated"; else pass; fi
expect_error "no FLUX_JOB_ID" "python-distributed: FLUX_JOB_ID is not set: run this through flux run inside a Flux job" FLUX_JOB_ID=
expect_error "a job id that is no F58" "python-distributed: FLUX_JOB_ID is neither a decimal nor an F58 job id: ƒ0OIl" FLUX_JOB_ID=ƒ0OIl
expect_error "code in the job id" "python-distributed: FLUX_JOB_ID is neither a decimal nor an F58 job id: f\$(id)" "FLUX_JOB_ID=f\$(id)"
expect_error "uneven tasks" "python-distributed: 7 tasks do not spread evenly over 2 nodes" FLUX_JOB_SIZE=7
expect_error "rank beyond the world" "python-distributed: rank 8 is outside the world of 8 ranks" FLUX_TASK_RANK=8
expect_error "local rank beyond the node" "python-distributed: local rank 4 is outside the 4 ranks on this node" FLUX_TASK_LOCAL_ID=4
expect_error "no master without flux" "python-distributed: flux is not on PATH: cannot find the first host of job ƒHd2oW67H8R" \
  MASTER_ADDR= PATH=/usr/bin:/bin
if msg=$(run_job fluxamd -- 2>&1); then fail "job.flux ran without a program"; else
  check_eq "job.flux without a program" "usage: flux batch job.flux SCRIPT.py [ARGS...]" "$msg"; fi
finish

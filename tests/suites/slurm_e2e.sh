#!/usr/bin/env bash
# The generated Slurm rank wrappers. First with a hand-made Slurm environment (every
# exported variable, the error paths), then end to end on a real one-node Slurm: the
# generated batch script of the `local` site runs 2 ranks via srun through the rank
# wrapper, each doing a gloo all_reduce with Debian's torch; two such jobs at once must not
# collide (port), and two jobs through the AMD (LUMI) wrapper get separate MIOpen caches.
set -euo pipefail
sitegen=$(realpath "${1:?usage: slurm_e2e.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool sbatch srun slurmctld slurmd
if ! /usr/bin/python3 -c 'import torch.distributed'; then
  fail "Debian's python3-torch is not importable by /usr/bin/python3"
  finish
fi

out=$SCRATCH/out
for site in local lumi; do
  "$sitegen" --sites-dir "$root/sites" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site" >/dev/null 2>&1
done
local_root=$out/modules-out/local/software/pytorch/1.13.1-cpu
job=$local_root/runscripts/job.slurm
local_w=$local_root/runscripts/python-distributed
lumi_w=$(find "$out/modules-out/lumi" -name conda-python-distributed)
# A unique user name keeps the MIOpen directories this suite makes in /tmp its own.
test_user=sitegen-test-$$
at_exit "rm -rf /tmp/$test_user-miopen-*"

# ---- Part 1: a hand-made Slurm environment (node 2 of 4 in "4(x2),3,1", step 0).
show_env='import os; print(" ".join(k + "=" + os.environ.get(k, "<unset>") for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME")))'
fake_slurm=(SLURM_JOB_ID=123456 SLURM_STEP_ID=0 SLURM_PROCID=9 SLURM_NTASKS=12 SLURM_LOCALID=1 SLURM_NODEID=2
  "SLURM_STEP_TASKS_PER_NODE=4(x2),3,1" "SLURM_STEP_NODELIST=nid[005028-005031]" "SLURM_JOB_NODELIST=other[1-9]")
run_local() {  # run_local [VAR=value...]: the local wrapper (execs /usr/bin/python3) in the fake env
  env -i PATH=/usr/bin:/bin "${fake_slurm[@]}" "$@" bash "$local_w" -c "$show_env"
}
# Port: 29500 + 123456 % 1000 (local site: base 29500, span 1000).
check_eq "fake env: rank 9 on node 2" \
  "RANK=9 WORLD_SIZE=12 LOCAL_RANK=1 LOCAL_WORLD_SIZE=3 MASTER_ADDR=nid005028 MASTER_PORT=29956 GLOO_SOCKET_IFNAME=lo" \
  "$(run_local)"
# Node 3 is the ",1" entry (its one task is local rank 0); the step's nodelist is gone, so
# the job's first host is the master.
check_eq "fake env: node 3, job nodelist" \
  "RANK=11 WORLD_SIZE=12 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=other1 MASTER_PORT=29956 GLOO_SOCKET_IFNAME=lo" \
  "$(run_local SLURM_NODEID=3 SLURM_PROCID=11 SLURM_LOCALID=0 SLURM_STEP_NODELIST=)"
# Step 1 of the same job: (456 + 1 * 618) % 1000 = 74.
check_eq "fake env: step 1 port" "MASTER_PORT=29574" "$(run_local SLURM_STEP_ID=1 | grep -o 'MASTER_PORT=[0-9]*')"
check_eq "fake env: the user's choices win" "MASTER_ADDR=h1 MASTER_PORT=31000 GLOO_SOCKET_IFNAME=eth7" \
  "$(run_local MASTER_ADDR=h1 MASTER_PORT=31000 GLOO_SOCKET_IFNAME=eth7 | grep -o 'MASTER_ADDR.*')"
# shellcheck disable=SC2016  # '$(id)' is literal on purpose
check_eq "fake env: arguments reach python unchanged" "a b|\$(id)|*|" \
  "$(env -i PATH=/usr/bin:/bin "${fake_slurm[@]}" bash "$local_w" -c 'import sys; print("|".join(sys.argv[1:]))' 'a b' '$(id)' '*' '')"
# Error paths: a clear message and exit 2, never a silent wrong rank.
expect_error() {  # expect_error NAME MESSAGE VAR=value...
  local name=$1 want=$2 msg code=0
  shift 2
  msg=$(env -i PATH=/usr/bin:/bin "${fake_slurm[@]}" "$@" bash "$local_w" -c 'print("ran")' 2>&1) || code=$?
  check_eq "$name" "exit 2: $want" "exit $code: $msg"
}
expect_error "no SLURM_PROCID" "python-distributed: SLURM_PROCID is not set: run this through srun inside a Slurm job" SLURM_PROCID=
expect_error "code in SLURM_JOB_ID is not evaluated" "python-distributed: SLURM_JOB_ID is not a number: a[\$(touch $SCRATCH/pwned)]" \
  "SLURM_JOB_ID=a[\$(touch $SCRATCH/pwned)]"
if [[ -e $SCRATCH/pwned ]]; then fail "SLURM_JOB_ID was evaluated"; else pass; fi
expect_error "bad tasks per node" "python-distributed: cannot tell the tasks on this node from SLURM_STEP_TASKS_PER_NODE=4(x2" \
  "SLURM_STEP_TASKS_PER_NODE=4(x2"
expect_error "node beyond the tasks list" "python-distributed: cannot tell the tasks on this node from SLURM_STEP_TASKS_PER_NODE=4(x2),3,1" \
  SLURM_NODEID=4
expect_error "no SLURM_NODEID in a multi-node step" "python-distributed: SLURM_NODEID is not set: run this through srun inside a Slurm job" \
  SLURM_NODEID=
check_eq "no SLURM_NODEID in a one-node step" "LOCAL_WORLD_SIZE=3" \
  "$(run_local SLURM_NODEID= SLURM_STEP_TASKS_PER_NODE=3 | grep -o 'LOCAL_WORLD_SIZE=[0-9]*')"
expect_error "no nodelist" "python-distributed: neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set" \
  SLURM_STEP_NODELIST= SLURM_JOB_NODELIST=
expect_error "malformed nodelist" "sitegen_first_host: malformed hostlist: nid[0
python-distributed: cannot find the first host of nid[0" "SLURM_STEP_NODELIST=nid[0"
# Sizes and ranks that cannot be: refused before anything runs.
expect_error "zero tasks" "python-distributed: no ranks: WORLD_SIZE=0 LOCAL_WORLD_SIZE=3" SLURM_NTASKS=0 SLURM_PROCID=0
expect_error "zero tasks on this node" "python-distributed: no ranks: WORLD_SIZE=12 LOCAL_WORLD_SIZE=0" \
  "SLURM_STEP_TASKS_PER_NODE=4(x2),0,1"
expect_error "more tasks on the node than in all" "python-distributed: 3 ranks on this node but 2 in all" \
  SLURM_NTASKS=2 SLURM_PROCID=1
expect_error "rank beyond the world" "python-distributed: rank 12 is outside the world of 12 ranks" SLURM_PROCID=12
expect_error "local rank beyond the node" "python-distributed: local rank 3 is outside the 3 ranks on this node" SLURM_LOCALID=3
# Nodelists at the environment's size limit (128 KiB per variable): 24,000 items give their
# first host; 30,000 glued groups (one 60 KB host name) are refused, not expanded for seconds.
listed="n[1]$(printf ',n[1]%.0s' $(seq 2 24000))"
check_eq "120 KB nodelist of items" "MASTER_ADDR=n1" \
  "$(run_local SLURM_STEP_NODELIST="$listed" | grep -o 'MASTER_ADDR=[^ ]*')"
glued=$(printf 'n[1]%.0s' $(seq 1 30000))
code=0
msg=$(env -i PATH=/usr/bin:/bin "${fake_slurm[@]}" SLURM_STEP_NODELIST="$glued" timeout 60 bash "$local_w" -c 'print("ran")' 2>&1) || code=$?
check_eq "120 KB glued nodelist: refused" "exit 2, malformed" \
  "exit $code, $(grep -q '^sitegen_first_host: malformed hostlist: n\[1\]n\[1\]' <<<"$msg" && echo malformed)"

# The AMD wrapper (LUMI) with a fake python: device visibility and the MIOpen cache.
mkdir -p "$SCRATCH/fakebin"
cat >"$SCRATCH/fakebin/python" <<'PY'
#!/bin/bash
printf 'ROCR_VISIBLE_DEVICES=%s MIOPEN_USER_DB_PATH=%s MIOPEN_CUSTOM_CACHE_DIR=%s NCCL_SOCKET_IFNAME=%s MASTER_PORT=%s' \
  "${ROCR_VISIBLE_DEVICES-<unset>}" "$MIOPEN_USER_DB_PATH" "$MIOPEN_CUSTOM_CACHE_DIR" "$NCCL_SOCKET_IFNAME" "$MASTER_PORT"
if [[ -d $MIOPEN_USER_DB_PATH ]]; then echo ' (cache exists)'; else echo ' (no cache dir)'; fi
PY
chmod +x "$SCRATCH/fakebin/python"
run_lumi() {  # VIRTUAL_ENV: the module's variables already activated the venv
  env -i PATH="$SCRATCH/fakebin:/usr/bin:/bin" USER="$test_user" VIRTUAL_ENV=/user-software/venv/pytorch \
    "${fake_slurm[@]}" "$@" bash "$lumi_w" train.py
}
# LUMI: batch.miopen_cache_per_rank, a mktemp directory per rank (random suffix masked here).
check_eq "LUMI: one GPU per rank, MIOpen cache of its own" \
  "ROCR_VISIBLE_DEVICES=1 MIOPEN_USER_DB_PATH=/tmp/miopen-$UID-123456-9.XXXXXX MIOPEN_CUSTOM_CACHE_DIR=/tmp/miopen-$UID-123456-9.XXXXXX NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3 MASTER_PORT=29956 (cache exists)" \
  "$(run_lumi | sed -E 's/(miopen-[0-9]+-123456-9\.)[A-Za-z0-9]{6}/\1XXXXXX/g')"
check_eq "LUMI: a GPU Slurm already bound is kept" "ROCR_VISIBLE_DEVICES=3" "$(run_lumi ROCR_VISIBLE_DEVICES=3 | grep -o '^[^ ]*')"
check_eq "LUMI: several visible GPUs are narrowed to LOCAL_RANK" "ROCR_VISIBLE_DEVICES=1" \
  "$(run_lumi ROCR_VISIBLE_DEVICES=0,1,2,3 | grep -o '^[^ ]*')"
check_eq "LUMI: half a node's GPUs, rank takes its entry" "ROCR_VISIBLE_DEVICES=5" \
  "$(run_lumi ROCR_VISIBLE_DEVICES=4,5,6,7 | grep -o '^[^ ]*')"
report=$(run_lumi SITEGEN_REPORT_AFFINITY=1 HOSTNAME=nidX 2>&1 >/dev/null)
if [[ $report =~ ^rank\ 9\ \(local\ 1\)\ on\ nidX:\ cpus\ [0-9,-]+,\ device\ 1$ ]]; then pass; else fail "affinity report: $report"; fi

# ---- Part 2: a real one-node Slurm.
slurm_up

cat >"$SCRATCH/allreduce.py" <<'PY'
import os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
env = {k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
print(" ".join(f"{k}={v}" for k, v in env.items()), f"SUM={t.item():g}", "ARGS=" + "|".join(sys.argv[1:]), flush=True)
dist.destroy_process_group()
PY

# run_job NAME: submits the generated job script (2 ranks), waits, checks both ranks' output
# (sum of rank+1 over ranks 0 and 1 = 3; the arguments arrive unchanged).
run_job() {
  local name=$1 log=$SCRATCH/$1.out code=0 host line
  (cd "$SCRATCH" && sbatch --wait --quiet -o "$log" "$job" "$SCRATCH/allreduce.py" "arg with space" "\$(id)") || code=$?
  if [[ $code -ne 0 ]]; then fail "$name: job exited $code"; cat "$log"; return 0; fi
  pass
  host=$(hostname)
  for rank in 0 1; do
    line=$(grep "^RANK=$rank " "$log" || true)
    check_eq "$name: rank $rank output" \
      "RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 MASTER_ADDR=$host SUM=3 ARGS=arg with space|\$(id)" \
      "$(sed -E 's/ MASTER_PORT=[0-9]+//' <<<"$line")"
  done
  grep -o 'MASTER_PORT=[0-9]*' "$log" | sort -u >"$SCRATCH/$name.port"
  check_eq "$name: both ranks agree on one port" 1 "$(wc -l <"$SCRATCH/$name.port")"
}

run_job single
# Two jobs at once on the one node: both succeed, with different ports.
run_job first &
p1=$!
run_job second &
p2=$!
wait "$p1" "$p2"
if [[ -s $SCRATCH/first.port && $(<"$SCRATCH/first.port") != "$(<"$SCRATCH/second.port")" ]]; then
  pass
else
  fail "concurrent jobs used the same MASTER_PORT: $(cat "$SCRATCH"/{first,second}.port)"
fi

# Two concurrent jobs through the AMD wrapper (fake python): each rank finds its own MIOpen
# directory created (LUMI: one per rank); the jobs' directories and ports differ.
cat >"$SCRATCH/amd.job" <<'SH'
#!/bin/bash
srun bash "$@"
SH
amd_job() {  # amd_job NAME
  PATH="$SCRATCH/fakebin:$PATH" USER=$test_user VIRTUAL_ENV=/user-software/venv/pytorch \
    sbatch --wait --quiet -n2 -o "$SCRATCH/$1.out" "$SCRATCH/amd.job" "$lumi_w" train.py
}
amd_job amd1 &
p1=$!
amd_job amd2 &
p2=$!
if wait "$p1" && wait "$p2"; then pass; else fail "an AMD-wrapper job failed: $(cat "$SCRATCH"/amd?.out)"; fi
for name in amd1 amd2; do
  check_eq "$name: both ranks found their own cache" 2 "$(grep -cE "MIOPEN_USER_DB_PATH=/tmp/miopen-$UID-[0-9]+-[01]\.[A-Za-z0-9]{6} .*\(cache exists\)" "$SCRATCH/$name.out")"
  grep -o 'MIOPEN_USER_DB_PATH=[^ ]*' "$SCRATCH/$name.out" | sort -u >"$SCRATCH/$name.cache"
  grep -o 'MASTER_PORT=[0-9]*' "$SCRATCH/$name.out" | sort -u >"$SCRATCH/$name.port"
done
if [[ $(<"$SCRATCH/amd1.cache") != "$(<"$SCRATCH/amd2.cache")" && $(wc -l <"$SCRATCH/amd1.cache") == 2 ]]; then
  pass
else
  fail "AMD jobs shared a MIOpen cache: $(cat "$SCRATCH"/amd?.cache)"
fi
if [[ $(<"$SCRATCH/amd1.port") != "$(<"$SCRATCH/amd2.port")" ]]; then pass; else fail "AMD jobs shared a port"; fi
finish

#!/usr/bin/env bash
# A real one-node Slurm for tests, without systemd (see shared/notes/local-slurm.md).
#   slurm.sh up DIR    start munged (if needed), slurmctld and slurmd with DIR/slurm.conf;
#                      waits until the node is idle; prints `export SLURM_CONF=DIR/slurm.conf`
#   slurm.sh down DIR  stop exactly the daemons `up` started (by their pid files)
set -euo pipefail
cmd=${1:?usage: slurm.sh up|down DIR}
dir=$(realpath -m "${2:?usage: slurm.sh up|down DIR}")

alive() { [[ -f $1 ]] && kill -0 "$(<"$1")" 2>/dev/null; }

stop_pidfile() {
  local f=$1 pid
  [[ -f $f ]] || return 0
  pid=$(<"$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

down() {
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  if [[ -f $dir/started-munged ]]; then
    stop_pidfile /run/munge/munged.pid
    rm -f "$dir/started-munged"
  fi
}

up() {
  for t in slurmctld slurmd munged sinfo; do
    command -v "$t" >/dev/null || { echo "slurm.sh: $t is not installed (tests/tools/install-deps.sh)" >&2; exit 1; }
  done
  down  # stale daemons of an earlier run in the same DIR
  mkdir -p "$dir"/{state,spool,log}
  if ! alive /run/munge/munged.pid; then
    mkdir -p /run/munge && chown munge:munge /run/munge
    runuser -u munge -- /usr/sbin/munged
    touch "$dir/started-munged"
  fi
  local host cpus
  host=$(hostname)
  cpus=$(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' | head -n1)
  cat >"$dir/slurm.conf" <<CONF
ClusterName=sitegen-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=${cpus:-2} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  local state=""
  for _ in $(seq 300); do
    state=$(sinfo -h -o %t 2>/dev/null | head -n1 || true)
    [[ $state == idle ]] && break
    sleep 0.1
  done
  if [[ $state != idle ]]; then
    echo "slurm.sh: node did not become idle (state '$state'); logs in $dir/log" >&2
    tail -n 20 "$dir"/log/*.log >&2 || true
    down
    exit 1
  fi
  echo "export SLURM_CONF=$SLURM_CONF"
}

case $cmd in
  up) up ;;
  down) down ;;
  *) echo "usage: slurm.sh up|down DIR" >&2; exit 2 ;;
esac

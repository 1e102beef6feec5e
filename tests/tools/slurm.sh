#!/usr/bin/env bash
# A real one-node Slurm cluster for tests, without systemd (facts: shared/notes, local Slurm).
#
#   eval "$(tests/tools/slurm.sh up DIR)"   # stdout is exactly: export SLURM_CONF=DIR/slurm.conf
#   srun -n2 hostname; sbatch --wait job.sh
#   tests/tools/slurm.sh down DIR
#
# up DIR    Starts munged if it is not running (and records that in DIR), writes
#           DIR/slurm.conf (node = `hostname`, CPUs and memory from `slurmd -C`, at least 2
#           CPUs, OverSubscribe=FORCE:4 so two 2-rank jobs run at once even on 2 CPUs, private
#           ports so several clusters -- e.g. concurrent ctest suites, each with its own DIR --
#           coexist), starts slurmctld and slurmd with -f, waits (<= 30 s) until the node is
#           idle and prints the export line. Idempotent: if DIR's cluster is already up and
#           idle it is reused; stale daemons/state of an earlier run in DIR are killed/wiped.
#           Everything else goes to stderr; on failure it prints the logs, stops what it
#           started and exits non-zero.
# down DIR  Cancels DIR's jobs, stops exactly the slurmctld/slurmd whose pids are in DIR's pid
#           files (checking the pid still is that program) and munged only if `up` started it
#           and no other slurmctld/slurmd is left on the machine (another DIR's cluster may
#           use the same munged). Always exits 0 when nothing of DIR is left running.
# status DIR  exit 0 iff DIR's cluster is up and answering.
#
# SITEGEN_SLURM_TASK_PLUGIN=task/affinity (at `up`) makes CPU binding real (--cpu-bind masks
# pin tasks, and Slurm binds each task to its own cores by default); the default is task/none.
#
# Tuned for tests: SchedulerParameters=batch_sched_delay=0 (batch jobs start at once) and
# MinJobAge=5, which makes `sbatch --wait` poll every 2 s instead of 2, 8, 32 s (a short
# job then returns in ~2-4 s, not 10+); the price: a finished job's record (scontrol show
# job, squeue) is purged ~5 s after it ends. KillWait=5.
#
# Keep DIR short (it holds slurmd's unix sockets; the path must stay well under 108 bytes):
# a mktemp -d under /tmp is fine.
set -euo pipefail

usage() { echo "usage: slurm.sh up|down|status DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
dir=$(realpath -m -- "$2")
conf=$dir/slurm.conf
MUNGE_PIDFILE=/run/munge/munged.pid
LOCK=/tmp/.sitegen-slurm.lock

# Slurm variables of a surrounding job or another test cluster must not leak into ours.
for v in "${!SLURM_@}"; do unset "$v"; done

say() { echo "slurm.sh: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# pid_of FILE PROGRAM: prints the pid in FILE if that process is alive and is PROGRAM.
pid_of() {
  local file=$1 prog=$2 pid comm
  [[ -r $file ]] || return 1
  pid=$(tr -dc '0-9' <"$file")
  [[ -n $pid ]] || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ $comm == "$prog" ]] && alive "$pid" || return 1
  echo "$pid"
}

# alive PID: the process exists and is not a zombie (PID 1 here may not reap orphans).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

# stop_pid PID: TERM, wait up to 10 s, then KILL.
stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    alive "$pid" || return 0
    sleep 0.1
  done
  say "pid $pid ignored SIGTERM for 10 s; SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

sinfo_state() { SLURM_CONF=$conf timeout 5 sinfo -h -o %t 2>/dev/null | head -n1 || true; }

is_up() {
  [[ -r $conf ]] && pid_of "$dir/slurmctld.pid" slurmctld >/dev/null &&
    pid_of "$dir/slurmd.pid" slurmd >/dev/null && pid_of "$MUNGE_PIDFILE" munged >/dev/null
}

# others_alive: some slurmctld or slurmd (not a zombie) runs on this machine.
others_alive() {
  local p
  for p in $(pgrep -x slurmctld; pgrep -x slurmd); do
    alive "$p" && return 0
  done
  return 1
}

# down [keep-munged]: stop DIR's daemons; munged too unless told to keep it (up's clean-up).
down() {
  local pid i
  if [[ -r $conf ]] && pid_of "$dir/slurmctld.pid" slurmctld >/dev/null; then
    # Running job steps outlive slurmd; cancel them while the controller still answers.
    if [[ -n $(SLURM_CONF=$conf timeout 5 squeue -h -o %i 2>/dev/null || true) ]]; then
      SLURM_CONF=$conf timeout 5 scancel --quiet --user="$(id -un)" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        [[ -z $(SLURM_CONF=$conf timeout 5 squeue -h -t R,CG,PD -o %i 2>/dev/null || true) ]] && break
        sleep 0.2
      done
    fi
  fi
  if pid=$(pid_of "$dir/slurmd.pid" slurmd); then stop_pid "$pid"; fi
  if pid=$(pid_of "$dir/slurmctld.pid" slurmctld); then stop_pid "$pid"; fi
  rm -f "$dir/slurmd.pid" "$dir/slurmctld.pid"
  if [[ -f $dir/munged.started && ${1:-} != keep-munged ]]; then
    local mine
    mine=$(tr -dc '0-9' <"$dir/munged.started")
    if pid=$(pid_of "$MUNGE_PIDFILE" munged) && [[ $pid == "$mine" ]]; then
      if others_alive; then
        say "leaving munged ($pid) running: another Slurm daemon on this machine uses it"
      else
        stop_pid "$pid"
      fi
    fi
    rm -f "$dir/munged.started"
  fi
}

# free_port P: true if nothing listens on TCP port P (IPv4 or IPv6).
free_port() {
  local hex
  hex=$(printf '%04X' "$1")
  ! awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# pick_ports: two consecutive free ports in 20000-31999 (below the ephemeral range), starting
# at a place derived from DIR so that clusters of different DIRs rarely even try the same.
pick_ports() {
  local start p i
  start=$(( $(cksum <<<"$dir" | cut -d' ' -f1) % 5000 * 2 + 20000 ))
  for ((i = 0; i < 1000; i++)); do
    p=$(( (start - 20000 + 2 * i) % 12000 + 20000 ))
    if free_port "$p" && free_port $((p + 1)); then echo "$p"; return 0; fi
  done
  return 1
}

start_munged() {
  local pid i
  if pid_of "$MUNGE_PIDFILE" munged >/dev/null; then
    return 0 # running (ours from an earlier `up` of DIR, recorded in munged.started, or not)
  fi
  rm -f "$dir/munged.started"
  [[ -r /etc/munge/munge.key ]] || die "/etc/munge/munge.key is missing (reinstall munge)"
  id munge >/dev/null 2>&1 || die "user 'munge' does not exist (reinstall munge)"
  mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
  rm -f "$MUNGE_PIDFILE"
  runuser -u munge -- /usr/sbin/munged 9>&- </dev/null >>"$dir/log/munged.stderr" 2>&1 ||
    die "munged did not start: $(tail -n 5 "$dir/log/munged.stderr")"
  for ((i = 0; i < 100; i++)); do
    if pid=$(pid_of "$MUNGE_PIDFILE" munged); then
      echo "$pid" >"$dir/munged.started"
      say "started munged ($pid)"
      return 0
    fi
    sleep 0.1
  done
  die "munged did not write $MUNGE_PIDFILE within 10 s"
}

write_conf() {
  local host=$1 port=$2 node cpus mem extra="" task_plugin=${SITEGEN_SLURM_TASK_PLUGIN:-task/none}
  [[ $task_plugin == task/none || $task_plugin == task/affinity ]] ||
    die "SITEGEN_SLURM_TASK_PLUGIN must be task/none or task/affinity, not '$task_plugin'"
  node=$(slurmd -C 2>/dev/null | head -n1) || true
  cpus=$(sed -n 's/.* CPUs=\([0-9][0-9]*\).*/\1/p' <<<"$node")
  mem=$(sed -n 's/.* RealMemory=\([0-9][0-9]*\).*/\1/p' <<<"$node")
  [[ -n $cpus ]] || die "cannot parse CPUs from \`slurmd -C\`: '$node'"
  [[ -n $mem ]] || mem=2000
  mem=$((mem * 9 / 10)) # below the real value: more than reported would drain the node
  if ((cpus < 2)); then
    say "only $cpus CPU(s); declaring 2 (SlurmdParameters=config_overrides) so 2-rank jobs run"
    cpus=2 extra="SlurmdParameters=config_overrides"
  fi
  cat >"$conf.tmp" <<CONF
# Written by tests/tools/slurm.sh up $dir
ClusterName=sitegen-test
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
# Job ids decide MASTER_PORT (base + id % 1000): concurrent test clusters (ctest -j) start
# 20 ids apart modulo 1000 (their ports differ), so their jobs on this one host never share
# a port, as jobs of one real cluster never do.
FirstJobId=$((1 + port % 50 * 20))
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
TaskPlugin=$task_plugin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
JobAcctGatherType=jobacct_gather/none
KillWait=5
MinJobAge=5
$extra
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  mv "$conf.tmp" "$conf"
}

fail_up() {
  say "ERROR: $*"
  local f
  for f in "$dir"/log/*; do
    [[ -s $f ]] && { echo "--- $f (tail)" >&2; tail -n 15 "$f" >&2; }
  done
  down
  exit 1
}

up() {
  local t host port state="" i
  for t in slurmctld slurmd sinfo squeue scancel srun munge /usr/sbin/munged runuser flock; do
    command -v "$t" >/dev/null || die "$t is not installed (run tests/tools/install-deps.sh)"
  done
  [[ $(id -u) -eq 0 ]] || die "must run as root (munged as user munge, SlurmUser=root)"
  ((${#dir} <= 70)) || die "DIR is ${#dir} bytes long; keep it <= 70 (slurmd's sockets live in it)"
  mkdir -p "$dir"

  # One `up`/`down` at a time on this machine: port choice and munged start must not race.
  # fd 9 is closed for every daemon we start, or it would hold the lock forever.
  exec 9>"$LOCK"
  flock -w 120 9 || die "could not lock $LOCK within 120 s"

  if is_up && [[ $(sinfo_state) == idle ]]; then
    say "already up (reusing $conf)"
    echo "export SLURM_CONF=$conf"
    return 0
  fi

  host=$(hostname)
  getent hosts "$host" >/dev/null || die "hostname '$host' does not resolve (add it to /etc/hosts)"
  down keep-munged # stale daemons of an earlier run in this DIR
  rm -rf "$dir/state" "$dir/spool" "$dir/log"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  start_munged
  if ! munge -n </dev/null | unmunge >/dev/null 2>&1; then
    fail_up "munged is running but munge -n | unmunge fails"
  fi
  port=$(pick_ports) || die "no two free TCP ports in 20000-31999"
  write_conf "$host" "$port"

  slurmctld -f "$conf" 9>&- </dev/null >>"$dir/log/slurmctld.stderr" 2>&1 || fail_up "slurmctld -f $conf failed"
  slurmd -f "$conf" 9>&- </dev/null >>"$dir/log/slurmd.stderr" 2>&1 || fail_up "slurmd -f $conf failed"
  for ((i = 0; i < 300; i++)); do # 30 s
    if ((i % 10 == 0)) && ! { pid_of "$dir/slurmctld.pid" slurmctld && pid_of "$dir/slurmd.pid" slurmd; } >/dev/null; then
      ((i < 30)) || fail_up "a daemon died during start-up"
    fi
    state=$(sinfo_state)
    [[ $state == idle ]] && break
    sleep 0.1
  done
  [[ $state == idle ]] || fail_up "node not idle after 30 s (sinfo state '$state')"
  say "up: $conf (ports $port,$((port + 1)))"
  echo "export SLURM_CONF=$conf"
}

case $cmd in
  up) up ;;
  down)
    [[ -d $dir ]] || exit 0
    exec 9>"$LOCK"
    flock -w 120 9 || die "could not lock $LOCK within 120 s"
    down
    ;;
  status) is_up && [[ $(sinfo_state) =~ ^(idle|mix|alloc)$ ]] ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for testing scripts/slurm/ (tests/slurm/
# test_slurm_grading.sh; CI starts it in .ci/run). Debian's packages: slurm-wlm (slurmctld and
# slurmd) and munge. Run as root; no systemd needed: the daemons are started by hand.
#
#   tests/slurm/start-slurm.sh           write /etc/slurm/slurm.conf, start munged, slurmctld
#                                        and slurmd, wait until `sinfo` shows this node idle
#   tests/slurm/start-slurm.sh --stop    stop the three daemons this script started
#   tests/slurm/start-slurm.sh --force   also replace a slurm.conf this script did not write
#
# The node is `hostname -s`, with this machine's CPUs (nproc) and memory; no cgroups
# (ProctrackType=proctrack/linuxproc, TaskPlugin=task/none), select/cons_tres by CPU, one
# default partition "debug", no accounting database. GRES gpu only where /dev/nvidia<N> exist.
# Environment: SLURM_START_TIMEOUT (seconds to wait for the node, default 60).
# Exit status: 0 the node is idle (or was already), 1 it did not come up (the logs are printed),
# 2 usage (not root, packages missing, a foreign slurm.conf).
set -euo pipefail

MARK="# Written by tests/slurm/start-slurm.sh (a one-node test cluster)."
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
STATE=/var/spool/slurm-course-test
LOGS=/var/log/slurm
TIMEOUT=${SLURM_START_TIMEOUT:-60}
NODE=$(hostname -s)

say() { echo "start-slurm: $*"; }
die() { echo "start-slurm: $*" >&2; exit "${2:-1}"; }

stop_pidfile() {  # stop_pidfile NAME PIDFILE: the daemon whose id the file holds, nothing else
  local pid
  [ -s "$2" ] || return 0
  pid=$(cat "$2")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" && say "stopped $1 (pid $pid)"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$2"
}

show_logs() {
  local f
  for f in "$LOGS/slurmctld.log" "$LOGS/slurmd.log" /var/log/munge/munged.log; do
    [ -f "$f" ] || continue
    echo "----- last lines of $f" >&2
    tail -n 30 "$f" >&2
  done
}

force=0
case "${1:-}" in
  "") ;;
  --force) force=1 ;;
  --stop)
    [ "$(id -u)" -eq 0 ] || die "--stop needs root" 2
    stop_pidfile slurmd /run/slurmd.pid
    stop_pidfile slurmctld /run/slurmctld.pid
    stop_pidfile munged /run/munge/munged.pid
    exit 0 ;;
  -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
  *) die "unknown option $1 (--stop, --force, --help)" 2 ;;
esac

[ "$(id -u)" -eq 0 ] || die "run as root (it writes $CONF and starts the daemons)" 2
for prog in munged slurmctld slurmd sinfo; do
  command -v "$prog" >/dev/null || [ -x "/usr/sbin/$prog" ] ||
    die "$prog is missing: apt-get install slurm-wlm munge" 2
done
export PATH="/usr/sbin:/sbin:$PATH"

if [ -f "$CONF" ] && ! grep -qxF "$MARK" "$CONF" && [ "$force" -eq 0 ]; then
  die "$CONF exists and was not written by this script (a real cluster?): left alone. Use --force to replace it." 2
fi

# ---------------------------------------------------------------------------- slurm.conf
cpus=$(nproc)
mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
mem_mb=$((mem_mb * 95 / 100))  # what slurmd finds is a little less than MemTotal
gpus=$(find /dev -maxdepth 1 -regex '/dev/nvidia[0-9]+' 2>/dev/null | wc -l)
gres_types="" node_gres="" gres_conf=""
if [ "$gpus" -gt 0 ]; then
  gres_types="GresTypes=gpu"
  node_gres="Gres=gpu:$gpus"
  gres_conf="$MARK
$(find /dev -maxdepth 1 -regex '/dev/nvidia[0-9]+' | sort -V | sed 's/^/Name=gpu File=/')"
fi
conf=$(cat <<EOF
$MARK
ClusterName=coursetest
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=60
MinJobAge=300
$gres_types
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb $node_gres State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
)

# Already up with this configuration (a second call): nothing to do.
if [ "$(cat "$CONF" 2>/dev/null)" = "$conf" ] &&
   [ "$(cat "$CONF_DIR/gres.conf" 2>/dev/null)" = "$gres_conf" ] &&
   kill -0 "$(cat /run/slurmctld.pid 2>/dev/null)" 2>/dev/null &&  # (sinfo waits ~10 s for none)
   [ "$(timeout 10 sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n1)" = idle ]; then
  say "node $NODE is already idle"
  exit 0
fi
mkdir -p "$CONF_DIR" "$STATE/ctld" "$STATE/d" "$LOGS"
printf '%s\n' "$conf" > "$CONF"
if [ -n "$gres_conf" ]; then
  printf '%s\n' "$gres_conf" > "$CONF_DIR/gres.conf"
else
  rm -f "$CONF_DIR/gres.conf"
fi
say "wrote $CONF: node $NODE, $cpus CPUs, $mem_mb MB, ${gpus} GPUs"

# ---------------------------------------------------------------------------- munge
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile=/etc/munge/munge.key
    else
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    fi
    say "created /etc/munge/munge.key"
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  chmod 0755 /run/munge
  rm -f /run/munge/munged.pid
  # munged daemonizes; as the munge user, like its service does.
  if command -v runuser >/dev/null; then
    runuser -u munge -- munged
  else
    su -s /bin/sh munge -c munged
  fi
  for _ in $(seq 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.1
  done
  munge -n </dev/null | unmunge >/dev/null || { show_logs; die "munged did not start"; }
  say "munged started"
fi

# ---------------------------------------------------------------------------- slurm daemons
# A configuration written now must be read: restart the daemons this script started before.
stop_pidfile slurmd /run/slurmd.pid
stop_pidfile slurmctld /run/slurmctld.pid
slurmctld  # daemonizes; logs to $LOGS/slurmctld.log
for _ in $(seq 100); do
  timeout 5 scontrol ping 2>/dev/null | grep -q "is UP" && break
  sleep 0.2
done
slurmd     # daemonizes; logs to $LOGS/slurmd.log
say "slurmctld and slurmd started; waiting up to ${TIMEOUT}s for node $NODE to be idle"

state=""
for _ in $(seq $((TIMEOUT * 2))); do
  state=$(timeout 10 sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n1 || true)
  if [ "$state" = idle ]; then
    sinfo
    say "node $NODE is idle"
    exit 0
  fi
  case "$state" in  # a node found down or drained before (an old state) is resumed once
    down*|drain*) scontrol update NodeName="$NODE" State=RESUME 2>/dev/null || true ;;
  esac
  sleep 0.5
done
echo "start-slurm: node $NODE is not idle after ${TIMEOUT}s (state: '${state:-no answer}')" >&2
timeout 10 scontrol show node "$NODE" >&2 || true
show_logs
exit 1

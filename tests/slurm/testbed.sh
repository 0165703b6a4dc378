#!/usr/bin/env bash
# tests/slurm/testbed.sh: a real Slurm cluster on this one machine, for tests.
#
#   testbed.sh run [--nodes N] -- COMMAND...   start, run COMMAND with SLURM_CONF and
#                                              HVD_TESTBED_* exported, stop (always, by trap)
#   testbed.sh start DIR [--nodes N]           start into DIR (for debugging by hand)
#   testbed.sh stop DIR                        stop what DIR's cluster started
#
# Each node is a network namespace on a private bridge that this script creates (so all
# traffic stays on addresses the test made), with its own hostname, /etc/hosts, /dev/shm
# and two fake GPUs (character devices 195:N). munged, slurmctld and one slurmd per node
# run as root with every file under DIR; nothing in /etc is touched. Needs root, iproute2,
# slurm-wlm, munge (scripts/setup.sh installs them).
set -euo pipefail

# shellcheck disable=SC1091
source "$(dirname "${BASH_SOURCE[0]}")/../support/failures_first.sh"

usage() { sed -n '2,15p' "$0" >&2; exit 2; }
log() { [[ -n "${HVD_TESTBED_QUIET:-}" ]] || echo "testbed: $*" >&2; }

# --- stopping ---------------------------------------------------------------------------
# Stops everything recorded in DIR/state.env; safe to call twice and on a half-started cluster.
stop_cluster() {
  local dir=$1
  [[ -f "$dir/state.env" ]] || return 0
  # shellcheck disable=SC1091
  source "$dir/state.env"
  export SLURM_CONF="$dir/etc/slurm.conf"
  if [[ -n "$(pidof_file "$dir/run/slurmctld.pid" slurmctld)" ]]; then
    timeout 5 scancel --quiet --full $(timeout 5 squeue -h -o %i 2>/dev/null) 2>/dev/null || true
  fi
  local pids=()
  for f in "$dir"/run/slurmctld.pid "$dir"/run/slurmd-*.pid; do
    [[ -f "$f" ]] || continue
    local pid
    pid=$(pidof_file "$f" slurm) && [[ -n "$pid" ]] && pids+=("$pid")
  done
  ((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null || true
  wait_gone 3 "${pids[@]}" || kill -KILL "${pids[@]}" 2>/dev/null || true
  # Whatever still runs inside the node namespaces (steps, tasks, stragglers).
  for ns in $TB_NAMESPACES; do
    local left
    left=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n "$left" ]] && kill -KILL $left 2>/dev/null || true
  done
  local munge
  munge=$(pidof_file "$dir/run/munged.pid" munged) && [[ -n "$munge" ]] && kill -TERM "$munge" 2>/dev/null || true
  for ns in $TB_NAMESPACES; do ip netns del "$ns" 2>/dev/null || true; done
  for link in $TB_LINKS; do ip link del "$link" 2>/dev/null || true; done
  ip link del "$TB_BRIDGE" 2>/dev/null || true
  rm -f "$dir/state.env"
}

# The pid in FILE if that process is alive and its command line mentions WORD.
pidof_file() {
  local file=$1 word=$2 pid
  [[ -f "$file" ]] || return 0
  pid=$(cat "$file" 2>/dev/null) || return 0
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$word"; then echo "$pid"; fi
}

# Waits up to SECONDS for the pids to be gone (zombies count as gone); 1 if some remain.
wait_gone() {
  local seconds=$1; shift
  local deadline=$((SECONDS + seconds))
  while ((SECONDS < deadline)); do
    local alive=0
    for pid in "$@"; do
      local state
      state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo X)
      [[ "$state" == Z || "$state" == X ]] || alive=1
    done
    ((alive)) || return 0
    sleep 0.1
  done
  return 1
}

# --- starting ---------------------------------------------------------------------------
start_cluster() {
  local dir=$1 nodes=$2
  [[ $(id -u) -eq 0 ]] || { echo "testbed: error: needs root (network namespaces, slurmd)" >&2; return 3; }
  for tool in ip ss nsenter unshare munged slurmctld slurmd scontrol; do
    command -v "$tool" >/dev/null || { echo "testbed: error: $tool is missing; run scripts/setup.sh" >&2; return 3; }
  done
  mkdir -p "$dir"/{etc,run,log,state,spool,tmpfs,munge,dev}
  local id=$(($$ % 250))
  local tag="hvd$$"
  local net="10.253.$id"
  local bridge="${tag}br"
  local names=() namespaces=() links=()
  for ((i = 1; i <= nodes; i++)); do names+=("$(printf 'node%02d' "$i")"); done
  # Record before creating, so a failure half-way still cleans up everything.
  {
    echo "TB_BRIDGE=$bridge"
    echo "TB_NAMESPACES='$(for n in "${names[@]}"; do printf '%s-%s ' "$tag" "$n"; done)'"
    echo "TB_LINKS='$(for ((i = 1; i <= nodes; i++)); do printf '%sv%d ' "$tag" "$i"; done)'"
  } >"$dir/state.env"

  ip link add "$bridge" type bridge
  ip addr add "$net.1/24" dev "$bridge"
  ip link set "$bridge" up
  {
    echo "127.0.0.1 localhost"
    echo "$net.1 hvdctl"
    for ((i = 1; i <= nodes; i++)); do echo "$net.$((10 + i)) ${names[i - 1]}"; done
  } >"$dir/etc/hosts"
  for ((i = 1; i <= nodes; i++)); do
    local ns="$tag-${names[i - 1]}" veth="${tag}v$i"
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$bridge" up
    ip -n "$ns" addr add "$net.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    mkdir -p "$dir/dev/${names[i - 1]}" "$dir/tmpfs/${names[i - 1]}"
    for g in 0 1; do mknod "$dir/dev/${names[i - 1]}/nvidia$g" c 195 "$g"; done
  done

  # munge: private socket, key and state; the socket's directory must be 0755, the key 0400.
  chmod 0755 "$dir/munge"
  dd if=/dev/urandom of="$dir/etc/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/etc/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/etc/munge.key" \
    --pid-file="$dir/run/munged.pid" --seed-file="$dir/state/munge.seed" --log-file="$dir/log/munged.log"

  # slurmctld listens in this namespace: below the ephemeral range (a port the kernel had
  # handed to some connection of a test running beside this one failed its bind, "Address
  # already in use", and the full suite failed once so), and on one that nothing holds.
  local ephemeral_low ctl_port try
  read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range
  local span=$((ephemeral_low - 20000))
  ((span > 1000)) || span=1000
  for ((try = 0; try < 100; try++)); do
    ctl_port=$((20000 + (RANDOM + $$ + try) % span))
    [[ -z "$(ss -Htan "sport = :$ctl_port" 2>/dev/null)" ]] && break
  done
  cat >"$dir/etc/slurm.conf" <<CONF
ClusterName=hvdtest
SlurmctldHost=hvdctl($net.1)
SlurmctldPort=$ctl_port
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
EnforcePartLimits=ALL
TmpFS=$dir/tmpfs/%n
MpiDefault=none
GresTypes=gpu
MailProg=/bin/true
ReturnToService=2
KillWait=5
InactiveLimit=0
MinJobAge=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
NodeName=$(IFS=,; echo "${names[*]}" | sed 's/,/,/g') CPUs=4 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  # NodeAddr per node (a NodeName line per node keeps it simple to read).
  sed -i '/^NodeName=/d' "$dir/etc/slurm.conf"
  for ((i = 1; i <= nodes; i++)); do
    echo "NodeName=${names[i - 1]} NodeAddr=$net.$((10 + i)) CPUs=4 Gres=gpu:2 State=UNKNOWN" >>"$dir/etc/slurm.conf"
    echo "NodeName=${names[i - 1]} Name=gpu File=$dir/dev/${names[i - 1]}/nvidia[0-1]" >>"$dir/etc/gres.conf"
  done
  sed -i '/^PartitionName=/d' "$dir/etc/slurm.conf"
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$dir/etc/slurm.conf"
  sed -i '1i AutoDetect=off' "$dir/etc/gres.conf"
  export SLURM_CONF="$dir/etc/slurm.conf"

  # slurmctld with the controller's hostname (it checks it against SlurmctldHost).
  unshare --uts --mount --propagation private -- sh -c \
    "hostname hvdctl; mount --bind '$dir/etc/hosts' /etc/hosts; exec slurmctld -f '$SLURM_CONF'"
  for ((i = 1; i <= nodes; i++)); do
    local node=${names[i - 1]}
    # `ip netns exec` remounts /sys and breaks slurmd's cgroup check: enter the net ns only.
    nsenter --net="/run/netns/$tag-$node" unshare --uts --mount --propagation private -- sh -c \
      "hostname $node; mount --bind '$dir/etc/hosts' /etc/hosts; mount -t tmpfs tmpfs /dev/shm; \
       exec slurmd -f '$SLURM_CONF' -N $node"
  done

  # Ready when every node is idle.
  local deadline=$((SECONDS + 30))
  until [[ "$(sinfo -h -o '%T' 2>/dev/null | sort -u)" == "idle" && \
           "$(sinfo -h -o '%D' 2>/dev/null)" == "$nodes" ]]; do
    if ((SECONDS > deadline)); then
      echo "testbed: error: nodes did not become idle within 30 s:" >&2
      sinfo >&2 || true
      tail -n 20 "$dir"/log/*.log >&2 || true
      return 1
    fi
    sleep 0.1
  done
  {
    echo "export SLURM_CONF='$SLURM_CONF'"
    echo "export HVD_TESTBED_DIR='$dir'"
    echo "export HVD_TESTBED_NODES='$(IFS=,; echo "${names[*]}")'"
    echo "export HVD_TESTBED_NAMESPACE_PREFIX='$tag-'"
  } >"$dir/env"
  log "up: ${names[*]} on $net.0/24 (SLURM_CONF=$SLURM_CONF)"
}

cmd=${1:-}; shift || true
case "$cmd" in
  run)
    nodes=3
    while [[ $# -gt 0 && "$1" != "--" ]]; do
      case "$1" in --nodes) nodes=$2; shift 2 ;; *) usage ;; esac
    done
    [[ "${1:-}" == "--" ]] && shift
    [[ $# -gt 0 ]] || usage
    dir=$(mktemp -d /tmp/hvd-testbed.XXXXXX)
    trap 'rc=$?; stop_cluster "$dir"; if [[ $rc -eq 0 ]]; then rm -rf "$dir"; else echo "testbed: logs kept in $dir" >&2; fi; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    start_cluster "$dir" "$nodes"
    # shellcheck disable=SC1091
    source "$dir/env"
    # Off a terminal (CTest, CI) a failed run's assertions are printed before its output.
    failures_first "$@"
    ;;
  start)
    [[ $# -ge 1 ]] || usage
    dir=$1; shift
    nodes=3
    [[ "${1:-}" == "--nodes" ]] && nodes=$2
    start_cluster "$dir" "$nodes" || { stop_cluster "$dir"; exit 1; }
    cat "$dir/env"
    ;;
  stop)
    [[ $# -eq 1 ]] || usage
    stop_cluster "$1"
    ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# tests/ssh/sshbed.sh: real OpenSSH hosts on this one machine, for tests of hvdrun's ssh launch.
#
#   sshbed.sh run [--hosts N] -- COMMAND...   start, run COMMAND with HVD_SSHBED_* exported,
#                                             stop (always, by trap)
#   sshbed.sh start DIR [--hosts N]           start into DIR (for debugging by hand)
#   sshbed.sh stop DIR                        stop what DIR's hosts started
#
# Each host is a network namespace on a private bridge this script creates (so every packet
# stays on addresses the test made), with its own hostname, /etc/hosts and /dev/shm, running
# Debian's sshd as root on port 2222 of the host's address only, with a throw-away host key
# and a throw-away client key; nothing in /etc is touched. COMMAND gets:
#   HVD_SSHBED_HOSTS        the hosts' addresses, comma-separated (10.252.X.11, ...)
#   HVD_SSHBED_NAMES        their hostnames (host01, ...), in the same order
#   HVD_SSHBED_PORT         sshd's port (2222)
#   HVD_SSHBED_KEY          the client's private key (for -i / --ssh-identity-file)
#   HVD_SSHBED_SSH          an ssh command that trusts exactly these hosts' keys
#                           ("ssh -F DIR/ssh_config", for HVD_SSH_COMMAND)
#   HVD_SSHBED_DIR          DIR: run/sshd-<name>.pid are the daemons' pid files, and
#                           `sh DIR/run/start-sshd-<name>.sh` starts one again
#   HVD_SSHBED_NAMESPACE_PREFIX  the namespaces are <prefix><name> (ip netns pids ...)
#   HVD_SSHBED_CLOCK_AHEAD  how far each host's CLOCK_MONOTONIC is ahead of this machine's,
#                           in seconds, in the same order (1000,2000,...: time namespaces)
# Needs root, iproute2 and openssh-server (scripts/setup.sh installs them).
set -euo pipefail

# shellcheck disable=SC1091
source "$(dirname "${BASH_SOURCE[0]}")/../support/failures_first.sh"

usage() { sed -n '2,25p' "$0" >&2; exit 2; }
log() { [[ -n "${HVD_SSHBED_QUIET:-}" ]] || echo "sshbed: $*" >&2; }
readonly PORT=2222

stop_hosts() {
  local dir=$1
  [[ -f "$dir/state.env" ]] || return 0
  # shellcheck disable=SC1091
  source "$dir/state.env"
  # Everything inside the namespaces: sshd, sessions, ranks and whatever they left.
  # SIGKILL ends stopped processes too (a test may SIGSTOP an sshd).
  for ns in $SB_NAMESPACES; do
    local left
    left=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n "$left" ]] && kill -KILL $left 2>/dev/null || true
  done
  for ns in $SB_NAMESPACES; do ip netns del "$ns" 2>/dev/null || true; done
  for link in $SB_LINKS; do ip link del "$link" 2>/dev/null || true; done
  ip link del "$SB_BRIDGE" 2>/dev/null || true
  rm -f "$dir/state.env"
}

start_hosts() {
  local dir=$1 hosts=$2
  [[ $(id -u) -eq 0 ]] || { echo "sshbed: error: needs root (network namespaces, sshd)" >&2; return 3; }
  for tool in ip nsenter unshare ssh ssh-keygen /usr/sbin/sshd; do
    command -v "$tool" >/dev/null || { echo "sshbed: error: $tool is missing; run scripts/setup.sh" >&2; return 3; }
  done
  mkdir -p "$dir"/{etc,run,log}
  local id=$(($$ % 250))
  local tag="ssh$$"
  local net="10.252.$id"
  local bridge="${tag}br"
  local names=() addrs=()
  for ((i = 1; i <= hosts; i++)); do
    names+=("$(printf 'host%02d' "$i")")
    addrs+=("$net.$((10 + i))")
  done
  # Recorded before anything is made, so a failure half-way still cleans up everything.
  {
    echo "SB_BRIDGE=$bridge"
    echo "SB_NAMESPACES='$(for n in "${names[@]}"; do printf '%s-%s ' "$tag" "$n"; done)'"
    echo "SB_LINKS='$(for ((i = 1; i <= hosts; i++)); do printf '%sv%d ' "$tag" "$i"; done)'"
  } >"$dir/state.env"

  ip link add "$bridge" type bridge
  ip addr add "$net.1/24" dev "$bridge"
  ip link set "$bridge" up
  {
    echo "127.0.0.1 localhost"
    echo "$net.1 sshbed-launcher"
    for ((i = 0; i < hosts; i++)); do echo "${addrs[i]} ${names[i]}"; done
  } >"$dir/etc/hosts"

  ssh-keygen -q -t ed25519 -N '' -C sshbed-host -f "$dir/etc/host_key"
  ssh-keygen -q -t ed25519 -N '' -C sshbed-client -f "$dir/etc/client_key"
  cp "$dir/etc/client_key.pub" "$dir/etc/authorized_keys"
  local hostkey
  hostkey=$(cut -d' ' -f1-2 "$dir/etc/host_key.pub")
  : >"$dir/etc/known_hosts"
  for ((i = 0; i < hosts; i++)); do echo "[${addrs[i]}]:$PORT $hostkey" >>"$dir/etc/known_hosts"; done
  # The client trusts exactly these hosts and asks for nothing; the identity and port are
  # left to hvdrun's -i and -p, which the tests exercise.
  cat >"$dir/etc/ssh_config" <<CONF
Host *
  User root
  IdentitiesOnly yes
  UserKnownHostsFile $dir/etc/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  PasswordAuthentication no
  KbdInteractiveAuthentication no
  LogLevel ERROR
CONF
  # sshd insists on its privilege separation directory (Debian's service makes it too).
  mkdir -p /run/sshd
  chmod 0755 /run/sshd

  for ((i = 0; i < hosts; i++)); do
    local name=${names[i]} addr=${addrs[i]} ns="$tag-${names[i]}" veth="${tag}v$((i + 1))"
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$bridge" up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    cat >"$dir/etc/sshd_config-$name" <<CONF
Port $PORT
ListenAddress $addr
HostKey $dir/etc/host_key
PidFile $dir/run/sshd-$name.pid
AuthorizedKeysFile $dir/etc/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
PrintLastLog no
X11Forwarding no
MaxStartups 100:30:200
MaxSessions 100
LogLevel ERROR
CONF
    # `ip netns exec` would remount /sys; only the network namespace is entered, and the
    # host gets its own hostname, /etc/hosts and /dev/shm (ranks there share memory), and
    # its own steady clock: a time namespace puts host N's CLOCK_MONOTONIC N*1000 s ahead,
    # as nodes booted at different times are (what the timeline's clock offsets are for).
    # The script stays, so a test that stopped this sshd can start it again.
    cat >"$dir/run/start-sshd-$name.sh" <<SCRIPT
nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private --time --fork \\
  --monotonic $(((i + 1) * 1000)) -- sh -c \\
  "hostname $name; mount --bind '$dir/etc/hosts' /etc/hosts; mount -t tmpfs tmpfs /dev/shm; \\
   exec /usr/sbin/sshd -f '$dir/etc/sshd_config-$name' -E '$dir/log/sshd-$name.log'"
SCRIPT
    sh "$dir/run/start-sshd-$name.sh"
  done

  # Ready when every host accepts a login and runs a command.
  local ssh=(ssh -F "$dir/etc/ssh_config" -i "$dir/etc/client_key" -p "$PORT" -o BatchMode=yes -o ConnectTimeout=2)
  local deadline=$((SECONDS + 20))
  for ((i = 0; i < hosts; i++)); do
    until [[ "$("${ssh[@]}" "${addrs[i]}" hostname 2>/dev/null)" == "${names[i]}" ]]; do
      if ((SECONDS > deadline)); then
        echo "sshbed: error: ${names[i]} (${addrs[i]}) did not accept a login within 20 s:" >&2
        "${ssh[@]}" "${addrs[i]}" true >&2 || true
        tail -n 20 "$dir"/log/*.log >&2 || true
        return 1
      fi
      sleep 0.1
    done
  done
  {
    echo "export HVD_SSHBED_DIR='$dir'"
    echo "export HVD_SSHBED_HOSTS='$(IFS=,; echo "${addrs[*]}")'"
    echo "export HVD_SSHBED_NAMES='$(IFS=,; echo "${names[*]}")'"
    echo "export HVD_SSHBED_PORT='$PORT'"
    echo "export HVD_SSHBED_KEY='$dir/etc/client_key'"
    echo "export HVD_SSHBED_SSH='ssh -F $dir/etc/ssh_config'"
    echo "export HVD_SSHBED_NAMESPACE_PREFIX='$tag-'"
    echo "export HVD_SSHBED_CLOCK_AHEAD='$(seq -s, 1000 1000 $((hosts * 1000)))'"
  } >"$dir/env"
  log "up: ${names[*]} on $net.0/24, sshd on port $PORT"
}

cmd=${1:-}; shift || true
case "$cmd" in
  run)
    hosts=3
    while [[ $# -gt 0 && "$1" != "--" ]]; do
      case "$1" in --hosts) hosts=$2; shift 2 ;; *) usage ;; esac
    done
    [[ "${1:-}" == "--" ]] && shift
    [[ $# -gt 0 ]] || usage
    dir=$(mktemp -d /tmp/hvd-sshbed.XXXXXX)
    trap 'rc=$?; stop_hosts "$dir"; if [[ $rc -eq 0 ]]; then rm -rf "$dir"; else echo "sshbed: logs kept in $dir" >&2; fi; exit $rc' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    start_hosts "$dir" "$hosts"
    # shellcheck disable=SC1091
    source "$dir/env"
    # Off a terminal (CTest, CI) a failed run's assertions are printed before its output.
    failures_first "$@"
    ;;
  start)
    [[ $# -ge 1 ]] || usage
    dir=$1; shift
    hosts=3
    [[ "${1:-}" == "--hosts" ]] && hosts=$2
    start_hosts "$dir" "$hosts" || { stop_hosts "$dir"; exit 1; }
    cat "$dir/env"
    ;;
  stop)
    [[ $# -eq 1 ]] || usage
    stop_hosts "$1"
    ;;
  *) usage ;;
esac

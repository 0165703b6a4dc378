#!/usr/bin/env bash
# bench/ssh_fault_trials.sh: faults across hosts over real TCP, N trials each, on the ssh test
# bed's three hosts (tests/ssh/sshbed.sh; root, network namespaces): a rank SIGKILLed on
# another host mid-allreduce, a host agent frozen by SIGSTOP, and a host cut off from the
# network. For each trial: hvdrun's exit code, whether its summary names the right rank or
# host, how long it took, and whether anything of the job was left on any host. Prints one
# line per fault kind; asserts nothing (the ssh test suite runs one trial of each).
#
#   bash bench/ssh_fault_trials.sh [TRIALS [KIND...]]   (default 20 of each; from the repository root)
set -euo pipefail
if [[ -z ${HVD_SSHBED_HOSTS:-} ]]; then
  # The bed holds a run's output until it ends, and stops it after this many seconds.
  export HVD_FAILURES_FIRST_LIMIT=${HVD_FAILURES_FIRST_LIMIT:-3600}
  exec tests/ssh/sshbed.sh run -- "$0" "$@"
fi
trials=${1:-20}
shift || true
kinds=("$@")
[[ ${#kinds[@]} -gt 0 ]] || kinds=(rank-kill frozen-agent partition)
build=${HVD_BUILD_DIR:-build}
hvdrun=$PWD/$build/cli/hvdrun
rank=$PWD/$build/tests/hvd_collective_rank
IFS=, read -ra hosts <<< "$HVD_SSHBED_HOSTS"
IFS=, read -ra names <<< "$HVD_SSHBED_NAMES"
list=""
for h in "${hosts[@]}"; do list+="${list:+,}$h:2"; done
job=("$hvdrun" -H "$list" --ssh-command "$HVD_SSHBED_SSH" -p "$HVD_SSHBED_PORT" -i "$HVD_SSHBED_KEY")
err=$(mktemp)
trap 'rm -f "$err"; for n in "${names[@]}"; do ip -n "$HVD_SSHBED_NAMESPACE_PREFIX$n" link set eth0 up 2>/dev/null || true; done' EXIT

now() { date +%s.%N; }
# Processes of the job still alive 3 s after hvdrun ended (any host: the hosts share a kernel).
leftovers() {
  sleep 3
  pgrep -f "host-agent|hvd_collective_rank|sleep 37.75" | grep -vc "^$$\$" || true
}

run_kind() {  # kind: what to do once the job runs
  local kind=$1 right=0 named=0 clean=0 worst=0
  for ((t = 0; t < trials; t++)); do
    local victim=$((1 + t % 5)) start took code
    case $kind in
      rank-kill)
        start=$(now)
        set +e; "${job[@]}" "$rank" loop "$victim" >/dev/null 2>"$err"; code=$?; set -e
        took=$(echo "$(now) - $start" | bc)
        [[ $code == 137 ]] && right=$((right + 1))
        grep -q "rank $victim was killed by SIGKILL (host ${hosts[victim / 2]}" "$err" && named=$((named + 1)) ;;
      frozen-agent)
        start=$(now)
        set +e
        "${job[@]}" sh -c "if [ \"\$HOROVOD_RANK\" = $victim ]; then sleep 1; kill -STOP \$PPID; fi; exec sleep 37.75" \
          >/dev/null 2>"$err"
        code=$?; set -e
        took=$(echo "$(now) - $start" | bc)
        [[ $code == 255 ]] && right=$((right + 1))
        grep -q "host agent for ${hosts[victim / 2]} .* stopped answering" "$err" && named=$((named + 1)) ;;
      partition)
        local host=$((1 + t % 2))
        "${job[@]}" "$rank" loop-dies-of-term >/dev/null 2>"$err" &
        local pid=$!
        sleep 2
        ip -n "$HVD_SSHBED_NAMESPACE_PREFIX${names[host]}" link set eth0 down
        start=$(now)
        set +e; wait "$pid"; code=$?; set -e
        took=$(echo "$(now) - $start" | bc)
        ip -n "$HVD_SSHBED_NAMESPACE_PREFIX${names[host]}" link set eth0 up
        [[ $code == 255 ]] && right=$((right + 1))
        grep -q "host agent for ${hosts[host]} .* stopped answering" "$err" && named=$((named + 1)) ;;
    esac
    [[ $(leftovers) == 0 ]] && clean=$((clean + 1))
    worst=$(echo "if ($took > $worst) $took else $worst" | bc)
  done
  printf '%-13s %2d trials: right code %2d, right rank/host named %2d, nothing left %2d, slowest %.1f s\n' \
    "$kind" "$trials" "$right" "$named" "$clean" "$worst"
}

for kind in "${kinds[@]}"; do run_kind "$kind"; done

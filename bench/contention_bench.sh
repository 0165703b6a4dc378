#!/usr/bin/env bash
# bench/contention_bench.sh: collectives while the cores are busy. Runs
# collective_perf (--samples: every iteration timed, the slowest rank's figure) for ours and
# Open MPI, over TCP and shared memory, np=2 and 4, in two phases per round: idle, and with
# --busy busy-loop processes (default: one per core, nice 0) sharing the machine. Rounds
# interleave everything, so a slow minute hurts all configurations alike. Prints per size the
# median, p10, p90 and mean of the pooled single-collective times (the median and the
# mean can disagree: a training step pays the mean), then the targets' verdicts:
# under contention p90/median <= 3 and median <= 2x idle (ours), and ours ahead of Open MPI on
# the same transport from 64 KiB, each ratio also per round ("runs"). Prints; asserts
# nothing; exit 0 whatever the verdicts.
#   bash bench/contention_bench.sh [--op allreduce|broadcast] [--np "2 4"] [--repeat 3]
#        [--min 4] [--max 67108864] [--factor 16] [--busy N] [--iters N] [--seconds 0.3]
#        [--configs "hvd-shm hvd-tcp mpi-shm mpi-tcp"]
# --iters: collective_perf's iterations per size (default 200, fewer above 160 KiB: beside
# busy loops 200 allreduces of 4 B take 10-40 ms, a job's first moments and not its steady state).
# --seconds: at least that long per size (default 0.3; 0 keeps collective_perf's counts), so
# every size is timed past the job's first quiet periods without minutes at 64 MiB.
# hvdb-shm and hvdb-tcp are ours with --bind-to core:overload-allowed (each rank on cores of
# its own, as Open MPI binds at np <= 2 by default; round robin over the cores where ranks
# outnumber them).
# floor (named in --configs) is no runtime at all: np plain processes counting in and
# sleeping on a futex (bench/count_in_floor.cc), the wake-ups a host-arena call cannot avoid
# beside the busy loops; its row is size 0 (with --seconds 0 it runs 0.3 s).
# HVD_BUILD_DIR picks the build (default build); HVD_BASE_BUILD_DIR adds that build's two
# configurations as base-shm and base-tcp (an A/B test of a change), and baseb-shm and
# baseb-tcp, its bound ones, when named in --configs.
set -euo pipefail
cd "$(dirname "$0")/.."
op=allreduce nps="2 4" repeat=3 min=4 max=67108864 factor=16 busy=$(nproc) configs="" iters="" seconds=0.3
while [[ $# -gt 0 ]]; do
  case $1 in
    --op) op=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --factor) factor=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    *) echo "contention_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
# The floor has no count of its own to fall back on: --seconds 0 runs it 0.3 s.
floor_seconds=$(awk -v s="$seconds" 'BEGIN { print (s > 0 ? s : 0.3) }')
build=${HVD_BUILD_DIR:-build}
base=${HVD_BASE_BUILD_DIR:-}
configs=${configs:-hvd-shm hvd-tcp hvdb-shm hvdb-tcp mpi-shm mpi-tcp${base:+ base-shm base-tcp}}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
results=$(mktemp)
loops=()
stop_busy() {
  ((${#loops[@]} == 0)) || { kill "${loops[@]}" 2>/dev/null; wait "${loops[@]}" 2>/dev/null || true; }
  loops=()
}
trap 'stop_busy; rm -f "$results"' EXIT
start_busy() {
  for _ in $(seq 1 "$busy"); do
    bash -c 'while :; do :; done' &
    loops+=($!)
  done
}

run_one() {  # np config -> collective_perf's output
  local np=$1 config=$2 dir=$build
  local perf=(--op "$op" --min "$min" --max "$max" --factor "$factor" --samples 1)
  [[ -n $iters ]] && perf+=(--iters "$iters")
  perf+=(--seconds "$seconds")
  [[ $config == base* ]] && dir=$base
  case $config in
    hvd-shm | base-shm) "$dir/cli/hvdrun" --no-prefix -np "$np" "$dir/bench/collective_perf" --impl hvd "${perf[@]}" ;;
    hvd-tcp | base-tcp) HVD_SHARED_MEMORY=0 "$dir/cli/hvdrun" --no-prefix -np "$np" "$dir/bench/collective_perf" --impl hvd "${perf[@]}" ;;
    hvdb-shm | baseb-shm) "$dir/cli/hvdrun" --no-prefix --bind-to core:overload-allowed -np "$np" "$dir/bench/collective_perf" --impl hvd "${perf[@]}" ;;
    hvdb-tcp | baseb-tcp) HVD_SHARED_MEMORY=0 "$dir/cli/hvdrun" --no-prefix --bind-to core:overload-allowed -np "$np" "$dir/bench/collective_perf" --impl hvd "${perf[@]}" ;;
    floor) "$build/bench/count_in_floor" --np "$np" --seconds "$floor_seconds" ;;
    mpi-shm) mpirun --oversubscribe -np "$np" --mca pml ob1 --mca btl vader,self "$build/bench/collective_perf" --impl mpi "${perf[@]}" ;;
    mpi-tcp) mpirun --oversubscribe -np "$np" --mca pml ob1 --mca btl tcp,self "$build/bench/collective_perf" --impl mpi "${perf[@]}" ;;
    *) echo "contention_bench.sh: unknown configuration '$config'" >&2; exit 2 ;;
  esac
}

for round in $(seq 1 "$repeat"); do
  for phase in idle busy; do
    [[ $phase == busy ]] && start_busy
    for np in $nps; do
      for config in $configs; do
        echo "round $round/$repeat: $op np=$np $config $phase" >&2
        run_one "$np" "$config" | awk -v np="$np" -v c="$config" -v p="$phase" -v r="$round" '
          $1 !~ /^#/ && $9 != 0 { print "WRONG", np, c, p, $1 }
          $1 == "#samples" { for (i = 3; i <= NF; ++i) print np, c, p, $2, $i, r }' >>"$results"
      done
    done
    stop_busy
  done
done

if grep -q '^WRONG' "$results"; then
  echo "wrong results:" && grep '^WRONG' "$results"
fi

# Every cell's median, p10, p90 and mean in one pass over the samples, sorted by cell and value
# (scanning them once a cell took ten minutes after a full run); and each round's alone
# (cells keyed .../round), since this machine has phases lasting minutes in which the same
# build runs several times slower idle: pooled, two rounds in different phases make a tail
# neither had, and a round's idle and busy phases, back to back, share its machine's phase.
declare -A cells
while read -r key m p10 p90 mean; do cells[$key]="$m $p10 $p90 $mean"; done < <(
  awk '$1 != "WRONG" { print $1 "/" $2 "/" $3 "/" $4, $5; print $1 "/" $2 "/" $3 "/" $4 "/" $6, $5 }' "$results" |
    LC_ALL=C sort -k1,1 -k2,2g |
    awk 'function at(q,   i) { i = int(q * (n - 1) + 0.5) + 1; return v[i] }
      function flush() { if (n > 0) printf "%s %s %s %s %.1f\n", key, at(0.5), at(0.1), at(0.9), sum / n; n = 0; sum = 0 }
      $1 != key { flush(); key = $1 }
      { v[++n] = $2; sum += $2 }
      END { flush() }')
stats() {  # np config phase size [round] -> "median p10 p90 mean" of the pooled (or that round's) samples (us), or "- - - -"
  local key=$1/$2/$3/$4${5:+/$5}
  echo "${cells[$key]:-- - - -}"
}
# Each round's p90/median under contention, and its busy median over its own idle one:
# "r1 r2 ..." ("-" where a round has no figure).
per_round() {  # np config size -> "tails ratios"
  local tails="" ratios="" m p90 idle round
  for round in $(seq 1 "$repeat"); do
    read -r m _ p90 < <(stats "$1" "$2" busy "$3" "$round")
    read -r idle _ _ < <(stats "$1" "$2" idle "$3" "$round")
    tails+="$(awk -v m="$m" -v p="$p90" 'BEGIN { print (m == "-" ? "-" : sprintf("%.2f", p / m)) }'),"
    ratios+="$(awk -v m="$m" -v i="$idle" 'BEGIN { print (m == "-" || i == "-" ? "-" : sprintf("%.2f", m / i)) }'),"
  done
  echo "${tails%,} ${ratios%,}"
}

sizes=$(awk '$1 != "WRONG" { print $4 }' "$results" | sort -un)
for np in $nps; do
  for phase in idle busy; do
    echo
    echo "=== $op np=$np, $phase$([[ $phase == busy ]] && echo " ($busy busy loops on $(nproc) cores)"): time in us, median [p10-p90] mean of every single collective over $repeat runs"
    printf "%10s" "size"
    for config in $configs; do printf " %34s" "$config"; done
    echo
    for size in $sizes; do
      printf "%10s" "$size"
      for config in $configs; do
        read -r m p10 p90 mean < <(stats "$np" "$config" "$phase" "$size")
        printf " %34s" "$m [$p10-$p90] $mean"
      done
      echo
    done
  done
  echo
  echo "=== targets at np=$np (under contention: p90/median <= 3, median <= 2x idle, ahead of Open MPI from 64 KiB)"
  for ours in hvd-shm hvd-tcp hvdb-shm hvdb-tcp base-shm base-tcp; do
    [[ " $configs " == *" $ours "* ]] || continue
    peer=mpi-${ours#*-}
    for size in $sizes; do
      read -r m _ p90 mean < <(stats "$np" "$ours" busy "$size")
      read -r idle _ _ idlemean < <(stats "$np" "$ours" idle "$size")
      read -r theirs _ _ < <(stats "$np" "$peer" busy "$size")
      read -r tails ratios < <(per_round "$np" "$ours" "$size")
      awk -v o="$ours" -v s="$size" -v m="$m" -v p90="$p90" -v idle="$idle" -v t="$theirs" -v peer="$peer" \
        -v tails="$tails" -v ratios="$ratios" -v mean="$mean" -v idlemean="$idlemean" 'BEGIN {
        if (m == "-") exit
        line = sprintf("  %s %9s: p90/median %.2f (%s; runs %s)", o, s, p90 / m, p90 / m <= 3 ? "met" : "MISSED", tails)
        if (idle != "-") line = line sprintf(", busy/idle %.2f (%s; runs %s; of the means %.2f)", m / idle,
                                             m / idle <= 2 ? "met" : "MISSED", ratios, mean / idlemean)
        if (s >= 65536 && t != "-") line = line sprintf(", vs %s %.2fx the time (%s)", peer, m / t, m <= t ? "met" : "MISSED")
        print line
      }'
    done
  done
done

#!/usr/bin/env bash
# bench/run_engine_bench.sh: the engine's figures, one run: a step of 1000 x 4 KiB async
# allreduces with fusion and without, 100 cached 4-byte tensors (the steady-state
# negotiation cost), and a lone 64 MiB allreduce through the blocking and the async call.
# The fused step and the lone allreduce run again with the timeline on (every rank
# records; the merge at exit is not timed), for its cost. Every row is the median over
# --repeat runs, interleaved; cpu ms/step is rank 0's CPU time (all its threads). Horovod 0.28.1 runs the same
# steps in the same rounds (bench/peers/horovod_engine_step.py, Gloo, fusion at its default
# and off) when bench/setup_horovod.sh has made its venv. Prints; asserts nothing.
# Horovod's unfused step takes ~15 s here (1000 negotiations over Gloo), so its rows may
# run fewer steps (--horovod-steps, which also cuts their warm-up to 1; default --steps).
#   bash bench/run_engine_bench.sh [--np 4] [--repeat 5] [--steps 20] [--horovod-steps N]
set -euo pipefail
cd "$(dirname "$0")/.."
np=4 repeat=5 steps=20 horovod_steps=
while [[ $# -gt 0 ]]; do
  case $1 in
    --np) np=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --horovod-steps) horovod_steps=$2; shift 2 ;;
    *) echo "run_engine_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build=${HVD_BUILD_DIR:-build}
horovod=${HVD_HOROVOD_VENV:-.venv-horovod}
hvdrun="$build/cli/hvdrun"
perf="$build/bench/engine_perf"
export SLURM_CONF=/nonexistent
unset SLURM_JOB_ID
results=$(mktemp)
traces=$(mktemp -d)
trap 'rm -f "$results"; rm -rf "$traces"' EXIT
configs=("fused:--fusion-threshold-mb 128:--tensors 1000 --bytes 4096"
         "fused+timeline:--fusion-threshold-mb 128 --timeline-filename $traces/t.json:--tensors 1000 --bytes 4096"
         "unfused:--fusion-threshold-mb 0:--tensors 1000 --bytes 4096"
         "cached100:--fusion-threshold-mb 128:--tensors 100 --bytes 4")
for ((round = 0; round < repeat; round++)); do
  for c in "${configs[@]}"; do
    IFS=: read -r name opts args <<<"$c"
    # shellcheck disable=SC2086
    line=$("$hvdrun" -np "$np" $opts --no-prefix --ranks-filter 0 "$perf" $args --steps "$steps" | tail -1)
    echo "$name $line" >>"$results"
  done
  line=$("$hvdrun" -np "$np" --no-prefix --ranks-filter 0 "$perf" --lone --bytes 67108864 --steps "$steps" | tail -1)
  echo "lone $line" >>"$results"
  line=$("$hvdrun" -np "$np" --timeline-filename "$traces/lone.json" --no-prefix --ranks-filter 0 "$perf" --lone \
         --bytes 67108864 --steps "$steps" | tail -1)
  echo "lone+timeline $line" >>"$results"
  if [[ -x "$horovod/bin/horovodrun" ]]; then
    # name:variables:arguments (Horovod's timeline: rank 0 records, the others send it their ticks)
    for c in "horovod-fused::--tensors 1000 --bytes 4096" \
             "horovod-fused+timeline:HOROVOD_TIMELINE=$traces/horovod.json:--tensors 1000 --bytes 4096" \
             "horovod-unfused:HOROVOD_FUSION_THRESHOLD=0:--tensors 1000 --bytes 4096" \
             "horovod-cached100::--tensors 100 --bytes 4"; do
      IFS=: read -r name vars args <<<"$c"
      # shellcheck disable=SC2086
      line=$(env $vars OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
             "$horovod/bin/horovodrun" --gloo -np "$np" -H "localhost:$np" "$horovod/bin/python" \
             bench/peers/horovod_engine_step.py $args --steps "${horovod_steps:-$steps}" ${horovod_steps:+--warmup 1} 2>&1 | grep -E '^\[0\]<stdout>:' | tail -1 |
             sed 's/^\[0\]<stdout>://')
      echo "$name $line" >>"$results"
    done
  fi
done
# median [min-max] of a column of numbers on stdin.
summary() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f [%.3f-%.3f]", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
echo "# np $np, medians of $repeat runs of $steps steps each (range in brackets)"
echo "# config              tensors    bytes  ms/step [range]                steps/s  #wrong  cpu ms/step"
[[ -x "$horovod/bin/horovodrun" ]] || echo "# Horovod: not measured ($horovod has no horovodrun: bash bench/setup_horovod.sh)"
for name in fused fused+timeline unfused cached100 horovod-fused horovod-fused+timeline horovod-unfused horovod-cached100; do
  rows=$(grep "^$name " "$results" || true)
  [[ -n "$rows" ]] || continue
  ms=$(awk '{ print $7 }' <<<"$rows" | summary)
  wrong=$(awk '{ w += $9 } END { print w }' <<<"$rows")
  cpu=$(awk '$10 != "" { print $10 }' <<<"$rows" | sort -g |
        awk '{ v[NR] = $1 } END { print NR ? sprintf("%.2f", v[int((NR + 1) / 2)]) : "-" }')
  printf "%-18s %8s %8s  %-28s %7.1f %7s  %s\n" "$name" "$(awk 'NR==1{print $2}' <<<"$rows")" \
    "$(awk 'NR==1{print $3}' <<<"$rows")" "$ms" "$(awk -v m="${ms%% *}" 'BEGIN { print 1000 / m }')" "$wrong" "$cpu"
done
for name in lone lone+timeline; do
  rows=$(grep "^$name " "$results")
  echo "# $name 64 MiB allreduce: blocking $(awk '{ print $2 }' <<<"$rows" | summary) us," \
    "async+synchronize $(awk '{ print $3 }' <<<"$rows" | summary) us," \
    "ratio $(awk '{ print $4 }' <<<"$rows" | summary), #wrong $(awk '{ w += $5 } END { print w }' <<<"$rows")"
done
# The timeline's cost as the median of each round's on/off ratio: the two runs of a round
# share the machine's state of the moment, so the ratio is steadier than two medians.
ratio() {  # ratio NAME_ON NAME_OFF COLUMN
  paste <(grep "^$2 " "$results" | awk -v c="$3" '{ print $c }') <(grep "^$1 " "$results" | awk -v c="$3" '{ print $c }') |
    awk '$1 > 0 && $2 > 0 { print $2 / $1 }' | summary
}
echo "# timeline on/off, per-round ratios: fused step $(ratio fused+timeline fused 7)," \
  "lone blocking $(ratio lone+timeline lone 2), lone async $(ratio lone+timeline lone 3)"
if grep -q "^horovod-fused+timeline " "$results"; then
  echo "# Horovod's timeline on/off, per-round ratios: fused step $(ratio horovod-fused+timeline horovod-fused 7)"
fi

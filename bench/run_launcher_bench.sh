#!/usr/bin/env bash
# bench/run_launcher_bench.sh: the same DDP program (examples/python/torch_digits_ddp.py)
# launched by `hvdrun -np N` and by `torchrun --nproc-per-node N`, interleaved round by round,
# on a quiet machine and with --load busy loops beside it (one `yes` per core by default).
# Per launch: seconds from the launcher's start to rank 0's first training step done, and to
# the launcher's exit. Prints the medians and every round; asserts nothing.
#   bash bench/run_launcher_bench.sh [--np 4] [--repeat 3] [--epochs 2] [--load N]
set -euo pipefail
cd "$(dirname "$0")/.."
np=4 repeat=3 epochs=2 load=$(nproc)
while [[ $# -gt 0 ]]; do
  case $1 in
    --np) np=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --load) load=$2; shift 2 ;;
    *) echo "run_launcher_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build=${HVD_BUILD_DIR:-build}
python=.venv/bin/python
torchrun=.venv/bin/torchrun
[[ -x $torchrun ]] || { echo "run_launcher_bench.sh: no $torchrun (bash scripts/setup.sh installs torch)" >&2; exit 1; }
export SLURM_CONF=/nonexistent
unset SLURM_JOB_ID OMP_NUM_THREADS
work=$(mktemp -d)
busy=()
stop_load() { ((${#busy[@]})) && kill "${busy[@]}" 2>/dev/null; wait 2>/dev/null || true; busy=(); }
trap 'stop_load; rm -rf "$work"' EXIT

# One launch: prints "<to first step> <total>" in seconds.
launch() {
  local launcher=$1 log="$work/log.json"
  rm -f "$log"
  local start end
  start=$(date +%s.%N)
  if [[ $launcher == hvdrun ]]; then
    "$build/cli/hvdrun" -np "$np" "$python" examples/python/torch_digits_ddp.py --epochs "$epochs" --log-json "$log" \
      >/dev/null 2>"$work/err" || { cat "$work/err" >&2; return 1; }
  else
    "$torchrun" --standalone --nproc-per-node "$np" examples/python/torch_digits_ddp.py --epochs "$epochs" \
      --log-json "$log" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; return 1; }
  fi
  end=$(date +%s.%N)
  "$python" -c 'import json, sys; d = json.load(open(sys.argv[1])); s, e = float(sys.argv[2]), float(sys.argv[3]); print("%.2f %.2f" % (d["first_step_done_unix"] - s, e - s))' \
    "$log" "$start" "$end"
}

median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

for condition in quiet loaded; do
  if [[ $condition == loaded ]]; then
    for ((i = 0; i < load; ++i)); do yes >/dev/null & busy+=($!); done
  fi
  : >"$work/hvdrun" ; : >"$work/torchrun"
  for ((round = 1; round <= repeat; ++round)); do
    for launcher in hvdrun torchrun; do
      result=$(launch "$launcher")
      echo "$condition round $round $launcher: first step ${result% *} s, total ${result#* } s"
      echo "$result" >>"$work/$launcher"
    done
  done
  stop_load
  for launcher in hvdrun torchrun; do
    first=$(cut -d' ' -f1 "$work/$launcher" | median)
    total=$(cut -d' ' -f2 "$work/$launcher" | median)
    echo "== $condition ($([[ $condition == loaded ]] && echo "$load busy loops" || echo "nothing else")), np=$np, median of $repeat: $launcher first step $first s, total $total s"
  done
done

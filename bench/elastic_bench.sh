#!/usr/bin/env bash
# bench/elastic_bench.sh: the time from a rank's death to the job's next completed training
# step, for PyTorch ranks (bench/elastic_recovery.py) on this machine: hvdrun --min-np (the
# ranks left re-form in place, hvd.elastic.run), hvdrun --max-restarts 1 and torchrun
# --max-restarts 1 (every rank started again: a new Python, a new torch import, a new
# rendezvous). The figure is the median over --repeat runs of (the last rank's first step
# done after the death) - (the death), in ms; the restarts would also load a checkpoint,
# which this leaves out. Prints; asserts nothing.
#   bash bench/elastic_bench.sh [--np "2 4"] [--repeat 3]
set -euo pipefail
cd "$(dirname "$0")/.."
nps="2 4" repeat=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --np) nps=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "elastic_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build=${HVD_BUILD_DIR:-build}
python=.venv/bin/python
export SLURM_CONF=/nonexistent OMP_NUM_THREADS=1
unset SLURM_JOB_ID
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run: prints the recovery in ms, or "failed".
run_once() {
  local mode=$1 np=$2 dir="$work/run"
  rm -rf "$dir" && mkdir -p "$dir"
  local script=bench/elastic_recovery.py status=0
  case $mode in
    hvd) BENCH_DIR=$dir "$build/cli/hvdrun" -np "$np" --min-np 1 "$python" "$script" hvd >"$dir.log" 2>&1 || status=$? ;;
    restart) BENCH_DIR=$dir "$build/cli/hvdrun" -np "$np" --max-restarts 1 "$python" "$script" restart >"$dir.log" 2>&1 ||
      status=$? ;;
    torchrun) BENCH_DIR=$dir timeout 60 .venv/bin/torchrun --standalone --nproc-per-node "$np" --max-restarts 1 \
      "$script" torchrun >"$dir.log" 2>&1 || status=$? ;;
  esac
  if [[ $status -ne 0 || ! -f $dir/killed ]] || ! ls "$dir"/resumed.* >/dev/null 2>&1; then
    echo failed
    return
  fi
  cat "$dir"/resumed.* | sort -n | tail -1 | awk -v k="$(cat "$dir/killed")" '{ printf "%.0f\n", ($1 - k) * 1000 }'
}

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else print a[int((NR + 1) / 2)] }'; }

echo "# time from a rank's SIGKILL to the job's next training step done on every rank left, ms (median of $repeat)"
printf "%-4s %-28s %10s %s\n" np launcher recovery runs
for np in $nps; do
  for mode in hvd restart torchrun; do
    figures=() failed=0
    for ((i = 0; i < repeat; i++)); do
      got=$(run_once "$mode" "$np")
      if [[ $got == failed ]]; then failed=$((failed + 1)); else figures+=("$got"); fi
    done
    label=$(case $mode in hvd) echo "hvdrun --min-np 1" ;; restart) echo "hvdrun --max-restarts 1" ;;
      torchrun) echo "torchrun --max-restarts 1" ;; esac)
    med=$(printf "%s\n" "${figures[@]}" | grep . | median || true)
    note=$([[ $failed -gt 0 ]] && echo " ($failed of $repeat failed or hung past 60 s)" || true)
    printf "%-4s %-28s %10s %s\n" "$np" "$label" "$med" "${figures[*]}$note"
  done
done

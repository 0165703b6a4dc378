#!/usr/bin/env bash
# bench/run_python_bench.sh: float32 allreduce of torch tensors from Python, side by side in
# one run at each --np: hvd.torch (this repo), hvd with NumPy arrays (hvd-numpy), the same
# call from C++ (collective_perf),
# torch.distributed with gloo, and Horovod 0.28.1 over Gloo and over MPI (when
# bench/setup_horovod.sh has made its venv). Then the time per training step of
# examples/python/torch_digits.py against its DDP twin and, in Horovod's venv, the same
# program with `import horovod.torch as hvd`; the Keras model's step time with hvd.keras and
# hvd.tensorflow against MultiWorkerMirroredStrategy (bench/keras_step_time.py). Rows:
# nccl-tests columns; the figure is the median of --repeat interleaved runs. Prints;
# asserts nothing.
# --op reducescatter or alltoall times those instead (every framework's call of that name;
# see bench/python_allreduce.py), --op adasum the allreduce with op=Adasum (hvd's and
# Horovod's: C++'s collective_perf and torch.distributed have none), and stops after their table.
#   bash bench/run_python_bench.sh [--np "2 4"] [--repeat 3] [--sizes 4,65536,...] [--op allreduce]
set -euo pipefail
cd "$(dirname "$0")/.."
nps="2 4" repeat=3 sizes=65536,1048576,16777216,67108864 op=allreduce
while [[ $# -gt 0 ]]; do
  case $1 in
    --np) nps=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --op) op=$2; shift 2 ;;
    *) echo "run_python_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build=${HVD_BUILD_DIR:-build}
horovod=${HVD_HOROVOD_VENV:-.venv-horovod}
hvdrun="$build/cli/hvdrun"
export SLURM_CONF=/nonexistent OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset SLURM_JOB_ID
results=$(mktemp) errors=$(mktemp)
trap 'rm -f "$results" "$errors"' EXIT
have_horovod=$([[ -x "$horovod/bin/horovodrun" ]] && echo yes || echo no)

# name size time_us busbw wrong, one line per size, appended to $results.
# A run that fails leaves its rows out (and says so) instead of ending the whole benchmark.
record() { awk -v name="$1" '$1 ~ /^[0-9]+$/ { print name, $1, $6, $8, $9 }' >>"$results"; }
warn_failed() {
  echo "# warning: a run of $1 failed; its rows are missing. Its last words:" >&2
  tail -3 "$errors" | sed 's/^/#   /' >&2
}
# One run of every implementation: $1 = the label's prefix, then collective_perf's and
# python_allreduce.py's size arguments, then iterations for hvd's rows and for the peers'
# (empty: collective_perf's rule).
run_all() {
  local label=$1 np=$2 cxx_sizes=$3 py_sizes=$4 iters=$5 peer_iters=$6
  if [[ $op != adasum ]]; then  # collective_perf has no Adasum
    "$hvdrun" -np "$np" --no-prefix --ranks-filter 0 "$build/bench/collective_perf" --impl hvd --op "$op" \
      $cxx_sizes ${iters:+--iters $iters} | awk -v sizes=",$py_sizes," 'index(sizes, "," $1 ",")' | record "$label:c++" ||
      warn_failed "$label:c++"
  fi
  for framework in hvd hvd-numpy torch; do
    local array=torch n=$iters
    [[ $framework == hvd-numpy ]] && array=numpy
    [[ $framework == torch ]] && n=$peer_iters
    "$hvdrun" -np "$np" --no-prefix --ranks-filter 0 .venv/bin/python bench/python_allreduce.py \
      --framework "${framework%-numpy}" --array "$array" --op "$op" --sizes "$py_sizes" ${n:+--iters $n} 2>"$errors" |
      record "$label:$framework" || warn_failed "$label:$framework"
  done
  if [[ $have_horovod == yes ]]; then
    for controller in gloo mpi; do
      "$horovod/bin/horovodrun" "--$controller" -np "$np" -H "localhost:$np" "$horovod/bin/python" \
        bench/python_allreduce.py --framework horovod --op "$op" --sizes "$py_sizes" ${peer_iters:+--iters $peer_iters} \
        2>"$errors" |
        sed -n -E 's/^\[(1,)?0\]<stdout>://p' | record "$label:horovod-$controller" || warn_failed "$label:horovod-$controller"
    done
  fi
}
# The latency row: 4 bytes, or one float per rank where each rank's tensor is cut in parts.
smallest() { [[ $op == allreduce || $op == adasum ]] && echo 4 || echo $((4 * $1)); }
for np in $nps; do
  small=$(smallest "$np")
  for ((round = 0; round < repeat; round++)); do
    run_all "np$np" "$np" "--min $small --max $small" "$small" 20000 2000  # latency: 20,000 calls (peers 2,000)
    run_all "np$np" "$np" "--min 65536 --max 67108864" "$sizes" "" ""      # bandwidth, collective_perf's iterations
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
[[ $have_horovod == yes ]] || echo "# Horovod: not measured ($horovod has no horovodrun: bash bench/setup_horovod.sh)"
for np in $nps; do
  echo "# $op, float32 torch tensors (hvd-numpy: NumPy arrays), $([[ $op == adasum ]] && echo adasum || echo sum);" \
    "np $np; medians of $repeat runs"
  printf "%12s" "size"
  names=(c++ hvd hvd-numpy torch horovod-gloo horovod-mpi)
  for n in "${names[@]}"; do printf " %22s" "$n time(us)/busbw"; done
  echo "  #wrong"
  for size in $(smallest "$np") ${sizes//,/ }; do
    printf "%12s" "$size"
    wrong=0
    for n in "${names[@]}"; do
      rows=$(awk -v k="np$np:$n" -v s="$size" '$1 == k && $2 == s' "$results")
      if [[ -z $rows ]]; then printf " %22s" "-"; continue; fi
      printf " %12.2f/%9.3f" "$(awk '{ print $3 }' <<<"$rows" | median)" "$(awk '{ print $4 }' <<<"$rows" | median)"
      wrong=$((wrong + $(awk '{ w += $5 } END { print w }' <<<"$rows")))
    done
    echo "  $wrong"
  done
done

[[ $op == allreduce ]] || exit 0

# Training step time of the digits example at the largest --np.
np=${nps##* }
step_ms() { .venv/bin/python -c "import json, statistics, sys; print(f'{statistics.median(json.load(open(sys.argv[1]))[\"step_seconds\"]) * 1e3:.2f}')" "$1"; }
log=$(mktemp -d)
trap 'rm -f "$results" "$errors"; rm -rf "$log"' EXIT
echo "# examples/python/torch_digits.py, np $np, 16 samples per rank, median ms per step (3 epochs, $repeat runs)"
for ((round = 0; round < repeat; round++)); do
  "$hvdrun" -np "$np" .venv/bin/python examples/python/torch_digits.py --epochs 3 --log-json "$log/hvd.json" >/dev/null
  echo "hvd $(step_ms "$log/hvd.json")" >>"$log/steps"
  "$hvdrun" -np "$np" .venv/bin/python examples/python/torch_digits_ddp.py --epochs 3 --log-json "$log/ddp.json" \
    >/dev/null 2>&1
  echo "ddp $(step_ms "$log/ddp.json")" >>"$log/steps"
  if [[ $have_horovod == yes ]]; then
    "$horovod/bin/horovodrun" --gloo -np "$np" -H "localhost:$np" "$horovod/bin/python" \
      bench/peers/horovod_torch_digits.py --epochs 3 --log-json "$log/horovod.json" >/dev/null 2>&1
    echo "horovod-gloo $(step_ms "$log/horovod.json")" >>"$log/steps"
  fi
done
for n in hvd ddp horovod-gloo; do
  grep -q "^$n " "$log/steps" && printf "%-14s %8s ms/step\n" "$n" "$(awk -v n="$n" '$1 == n { print $2 }' "$log/steps" | median)"
done

# Keras: the keras_digits model's step time at the largest --np, hvd.keras (model.fit) and
# hvd.tensorflow (custom loop) against MultiWorkerMirroredStrategy (the same custom loop,
# TF_CONFIG from hvdrun); then, on one rank, what hvd's tf.numpy_function crossing costs
# per step (hvd-host minus local). The slowest rank's microseconds per step.
keras_step() {  # np mode [hvdrun options]: prints the slowest rank's us per step
  local np=$1 mode=$2
  shift 2
  "$hvdrun" -np "$np" --no-prefix "$@" .venv/bin/python bench/keras_step_time.py --mode "$mode" 2>"$errors" |
    awk '$1 == "steptime" && $2 > max { max = $2 } END { if (max) print max; else exit 1 }' || warn_failed "keras $mode"
}
echo "# examples/python/keras_digits.py's model, 16 samples per rank, us per step (slowest rank; median of $repeat runs)"
for ((round = 0; round < repeat; round++)); do
  echo "np$np:hvd-keras-fit $(keras_step "$np" hvd-fit)" >>"$log/keras"
  echo "np$np:hvd-tf-tape $(keras_step "$np" hvd-tape)" >>"$log/keras"
  echo "np$np:mwms $(keras_step "$np" mwms --tf-config)" >>"$log/keras"
  echo "np1:local $(keras_step 1 local)" >>"$log/keras"
  echo "np1:hvd-host $(keras_step 1 hvd-host)" >>"$log/keras"
done
for n in "np$np:hvd-keras-fit" "np$np:hvd-tf-tape" "np$np:mwms" np1:local np1:hvd-host; do
  printf "%-20s %10s us/step\n" "$n" "$(awk -v n="$n" '$1 == n && $2 != "" { print $2 }' "$log/keras" | median)"
done
exit 0

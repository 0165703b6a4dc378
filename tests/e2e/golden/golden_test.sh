#!/usr/bin/env bash
# tests/e2e/golden/golden_test.sh HVDRUN TEST_RANK [--update]: what hvdrun prints for a set
# of plans, refusals and job ends, compared byte for byte with the files beside this script
# (cases/<name>.txt: stdout, stderr and the exit code), after masking what changes from run
# to run (pids, times, ports, this machine's name, temporary paths). A change in what a user
# sees fails here first; --update writes the files anew from the hvdrun given.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
hvdrun=$(realpath "${1:?usage: golden_test.sh HVDRUN TEST_RANK [--update]}")
rank=$(realpath "${2:?usage: golden_test.sh HVDRUN TEST_RANK [--update]}")
update=${3:-}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
host=$(hostname)

# What differs between runs, masked the same way on both sides.
mask() {
  sed -E -e "s#$work#WORK#g" \
    -e "s#$rank#TEST_RANK#g" \
    -e "s#\\b$host\\b#HOST#g" \
    -e 's#/tmp/hvdrun[-.][A-Za-z0-9.-]+#TMPDIR#g' \
    -e 's/pid [0-9]+/pid PID/g' \
    -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?[+-][0-9]{4}/TIME/g' \
    -e 's/(PORT|_PORT|port|Port)([=": ]+)[0-9]+/\1\2N/g' \
    -e 's/:[0-9]{4,5}\b/:N/g' \
    -e 's/share [0-9]+ CPU\(s\): OMP_NUM_THREADS=[0-9]+/share C CPU(s): OMP_NUM_THREADS=T/'
}

failed=0
# run NAME [--sorted] [ENV=value ...] -- ARGS...: one case, in a clean environment without
# Slurm. --sorted: stdout's and stderr's lines sorted, where ranks' lines and hvdrun's race.
run() {
  local name=$1
  shift
  local order=cat
  if [[ $1 == --sorted ]]; then
    order="sort"
    shift
  fi
  local env=(env -i "PATH=$PATH" "HOME=${HOME:-/root}" "SLURM_CONF=/nonexistent" "OMP_NUM_THREADS=1")
  while [[ $1 != -- ]]; do
    env+=("$1")
    shift
  done
  shift
  local out err code
  "${env[@]}" "$hvdrun" "$@" >"$work/stdout" 2>"$work/stderr" </dev/null
  code=$?
  out=$($order "$work/stdout")
  err=$($order "$work/stderr")
  local got
  got=$(printf '%s\n--- stderr\n%s\n--- exit %s\n' "$out" "$err" "$code" | mask)
  local file="$here/cases/$name.txt"
  if [[ $update == --update ]]; then
    mkdir -p "$here/cases"
    printf '%s\n' "$got" >"$file"
    return
  fi
  if [[ ! -f $file ]]; then
    echo "golden: no $file (run with --update)"
    failed=1
    return
  fi
  if ! diff -u "$file" <(printf '%s\n' "$got") >"$work/diff"; then
    echo "golden: $name differs from what it showed before:"
    cat "$work/diff"
    failed=1
  fi
}

run dry_run_table -- --dry-run -H a:2,b:2 -np 4 --tf-port-base 9000 prog arg
run dry_run_json -- --dry-run --format json -H a:2,b:1 prog
run dry_run_sh -- --dry-run --format sh --rank 1 -H a:1,b:1 prog 'an arg'
run dry_run_hostfile -- --dry-run --format hostfile -H a:2,b:1 prog
run dry_run_tf_config -- --dry-run --format tf_config --tf-config --tf-ps 1 --tf-port-base 9000 -H a:2,b:2 prog
run dry_run_mpi -- --dry-run --format mpi -H a:2,b:2 prog
run dry_run_gpus CUDA_VISIBLE_DEVICES=0,1,2,3 -- --dry-run -np 4 prog
run rank_exits_3 -- -np 3 --kill-grace 1 "$rank" fail 1 3 30
run rank_killed -- -np 2 --kill-grace 1 "$rank" fail 0 KILL 30
run missing_program -- -np 2 /nonexistent/program
run python_script_alone PATH=/usr/bin:/bin -- -np 2 train.py
run stdin_rank_beyond -- -np 2 --stdin 5 "$rank" sleep 0
run ranks_filter_none -- -np 2 --ranks-filter 7 "$rank" sleep 0
run timeline_without_dir -- -np 2 --timeline-filename "$work/none/trace.json" "$rank" sleep 0
run restarts_exhausted --sorted -- -np 2 --kill-grace 1 --max-restarts 1 "$rank" fail-starts 1 5 30
run restart_then_success --sorted -- -np 2 --kill-grace 1 --max-restarts 1 "$rank" fail-starts 1 1 1.5
run min_np_above_np -- -np 2 --min-np 3 "$rank" sleep 0
run max_np_below_np -- -np 3 --min-np 2 --max-np 2 "$rank" sleep 0
run elastic_timeline -- -np 2 --min-np 1 --timeline-filename "$work/t.json" "$rank" sleep 0
run unknown_option -- -np 2 --no-such-flag "$rank" sleep 0
run no_program -- -np 2
run mpi_with_discovery -- -np 2 --mpi --min-np 1 --host-discovery-script ./d "$rank" sleep 0
run output_dir_not_made -- -np 2 --output-filename /proc/none "$rank" sleep 0
run bind_core_too_many -- -np 64 --bind-to core "$rank" sleep 0
run parameter_server_chief_done -- -np 3 --tf-config --tf-chief --tf-ps 1 --kill-grace 1 "$rank" fail 0 0 30
run elastic_goes_on --sorted -- -np 3 --min-np 2 --kill-grace 1 "$rank" fail 1 3 1

if [[ $update == --update ]]; then
  echo "golden: wrote $(ls "$here/cases" | wc -l) cases"
  exit 0
fi
exit $failed

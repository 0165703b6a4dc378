#!/usr/bin/env bash
# scripts/gpu-check.sh: every GPU test and the GPU benchmark, on a machine with an NVIDIA
# GPU, after the README's set-up (bash scripts/setup.sh). On such a machine a GPU test that
# skips is a failure: this script exists to run them. Exit 0 when all passed.
#   bash scripts/gpu-check.sh [--no-bench]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${HVD_BUILD_DIR:-build}
bench=1
[[ ${1:-} == --no-bench ]] && bench=0
export SLURM_CONF=/nonexistent
unset SLURM_JOB_ID CUDA_VISIBLE_DEVICES
failed=0
step() {
  local what=$1
  shift
  echo "== $what"
  "$@"
  local rc=$?
  if [[ $rc -eq 77 ]]; then
    echo "gpu-check: '$what' skipped (exit 77): this machine's GPU is not usable, see above" >&2
    failed=1
  elif [[ $rc -ne 0 ]]; then
    echo "gpu-check: '$what' failed (exit $rc)" >&2
    failed=1
  fi
}
report=$("$build/cli/hvdrun" --check-build -v)
echo "$report" | grep -E "NCCL|CUDA"
if ! echo "$report" | grep -q "\[X\] CUDA"; then
  echo "gpu-check: --check-build does not show CUDA usable; nothing GPU can run here" >&2
  exit 3
fi
step "unit tests of the GPU backends" ctest --test-dir "$build" --output-on-failure -R "NCCL|CUDA|GPU|staged|nccl"
step "GPU collectives under hvdrun (NCCL; staged, 4 ranks on one GPU; the start-up check)" \
  "$build/tests/cli_e2e_test" "[gpu]"
# pytest reports a skip as success: a skipped CUDA test is counted as a failure here.
torch_cuda() {
  local out
  out=$(cd python/tests && HVD_HVDRUN="../../$build/cli/hvdrun" ../../.venv/bin/python -m pytest -q -rs test_torch.py -k cuda 2>&1)
  local rc=$?
  echo "$out"
  if [[ $rc -eq 0 ]] && echo "$out" | grep -q "skipped"; then return 77; fi
  return $rc
}
if [[ -x .venv/bin/python ]]; then
  step "hvd.torch on CUDA tensors" torch_cuda
fi
if [[ $bench -eq 1 ]]; then
  step "GPU benchmark" bash bench/run_gpu_bench.sh
fi
exit $failed

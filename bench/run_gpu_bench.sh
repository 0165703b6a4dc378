#!/usr/bin/env bash
# bench/run_gpu_bench.sh: GPU collectives in nccl-tests' columns, one run, on a machine
# with an NVIDIA GPU: hvd through NCCL on one rank beside NCCL called directly, the copy
# bandwidths (host<->device round trip through pinned memory: the staged path's floor;
# device-to-device: the GPU's memory bandwidth), then the staged path with 2 and 4 ranks
# sharing the GPU, then, where the machine has MPS (nvidia-cuda-mps-control), the staged
# path again under an MPS server of its own, and the staged path's copies alone
# (gpu_copy_floor: processes sharing the GPU, with and without MPS). Between them, the
# same from Python (bench/torch_gpu_calls.py, and bench/torch_gpu_step.py's backward pass
# with a hook per gradient) where $HVD_PYTHON (default .venv/bin/python)
# has torch with CUDA and hvd. Prints the device,
# driver, CUDA and NCCL versions first. Asserts nothing.
#   bash bench/run_gpu_bench.sh [--max-mib 256]
set -euo pipefail
cd "$(dirname "$0")/.."
max=256
while [[ $# -gt 0 ]]; do
  case $1 in
    --max-mib) max=$2; shift 2 ;;
    *) echo "run_gpu_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build=${HVD_BUILD_DIR:-build}
hvdrun="$build/cli/hvdrun"
bench="$build/bench/gpu_busbw"
export SLURM_CONF=/nonexistent
unset SLURM_JOB_ID CUDA_VISIBLE_DEVICES
if [[ ! -x $bench ]]; then
  echo "run_gpu_bench.sh: $bench was not built (the build found no CUDA toolkit or no NCCL)" >&2
  exit 3
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv || true
"$hvdrun" --check-build -v | grep -E "NCCL|CUDA" || true
# The staged path with 2 and 4 ranks sharing GPU 0, then its copies alone (no runtime);
# $1 says how the GPU is shared.
staged_rows() {
  for np in 2 4; do
    echo
    echo "## $np ranks sharing GPU 0$1: the staged path (HOROVOD_GPU_OPERATIONS=cpu)"
    HOROVOD_GPU_OPERATIONS=cpu "$hvdrun" -np "$np" --oversubscribe-gpus --no-prefix "$bench" --max-mib "$max"
  done
  echo
  echo "## the staged path's copies alone$1: processes sharing GPU 0 (gpu_copy_floor)"
  "$build/bench/gpu_copy_floor" --np "$2" --ways hvd,writes --iters 200
}
echo
echo "## one rank: hvd through NCCL, NCCL direct, copies"
"$hvdrun" -np 1 "$bench" --max-mib "$max"
# From Python (hvd.torch on CUDA tensors), where the venv's torch sees a GPU.
python=${HVD_PYTHON:-.venv/bin/python}
if "$python" -c 'import torch, hvd, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo
  echo "## one rank from Python: hvd.torch on CUDA tensors (bench/torch_gpu_calls.py), NCCL, then staged"
  "$hvdrun" -np 1 --no-prefix "$python" bench/torch_gpu_calls.py
  HOROVOD_GPU_OPERATIONS=cpu "$hvdrun" -np 1 --no-prefix "$python" bench/torch_gpu_calls.py
  echo
  echo "## one rank from Python: a backward pass handing each gradient to hvd (bench/torch_gpu_step.py)"
  "$hvdrun" -np 1 --no-prefix "$python" bench/torch_gpu_step.py
else
  echo "(no torch with CUDA and hvd in $python: the Python rows are not made; HVD_PYTHON names another)"
fi
staged_rows "" 1,2,4
if command -v nvidia-cuda-mps-control >/dev/null; then
  # A server of our own, on a pipe directory of our own, stopped however the script ends.
  mps=$(mktemp -d)
  export CUDA_MPS_PIPE_DIRECTORY=$mps/pipe CUDA_MPS_LOG_DIRECTORY=$mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  trap 'echo quit | nvidia-cuda-mps-control; rm -rf "$mps"' EXIT
  nvidia-cuda-mps-control -d
  staged_rows " under MPS" 2,4
else
  echo "(no nvidia-cuda-mps-control here: the rows under MPS are not made)"
fi

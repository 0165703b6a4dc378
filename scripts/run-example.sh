#!/usr/bin/env bash
# scripts/run-example.sh: set up, then show what this machine supports and run the main
# job: data-parallel training on 4 local ranks (examples/train_softmax.cc), gradients
# averaged by hvdrun's ring allreduce; rank 0 writes the model to build/model.txt. Then
# the same from Python: a PyTorch CNN trained with hvd.torch (examples/python/torch_digits.py)
# unless set up with HVD_SKIP_PYTHON=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh main
build_dir=${HVD_BUILD_DIR:-build}
"$build_dir/cli/hvdrun" --check-build
echo
"$build_dir/cli/hvdrun" -np 4 "$build_dir/examples/train_softmax" --epochs 5 --checkpoint "$build_dir/model.txt"
if [[ ${HVD_SKIP_PYTHON:-0} != 1 ]]; then
  echo
  rm -f "$build_dir/torch_digits.pt"  # a fresh run, not a resume of the last one
  "$build_dir/cli/hvdrun" -np 4 .venv/bin/python examples/python/torch_digits.py --epochs 5 \
    --checkpoint "$build_dir/torch_digits.pt"
fi

#!/usr/bin/env bash
# bench/setup_horovod.sh: Horovod 0.28.1 itself, for the side-by-side benchmarks only, in
# its own virtual environment (.venv-horovod, or $HVD_HOROVOD_VENV): it builds against
# torch 2.0.1 (not against the newest torch) with Gloo and MPI. Takes ~20 minutes on 2
# cores the first time (pip's cache keeps the torch wheels); does nothing when present.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HVD_HOROVOD_VENV:-.venv-horovod}
if [[ -x "$venv/bin/horovodrun" ]]; then
  echo "setup_horovod: $venv already has Horovod"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q -r bench/peers/requirements-horovod.txt
HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1 \
  "$venv/bin/pip" install -q --no-build-isolation --no-cache-dir horovod==0.28.1

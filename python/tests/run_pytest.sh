#!/usr/bin/env bash
# python/tests/run_pytest.sh FILE HVDRUN: runs one pytest file of the Python package's tests
# with .venv's Python, against the hvd package scripts/setup.sh installed there, launching
# ranks with HVDRUN. Exits 77 (CTest's skip) with the reason when .venv or hvd is missing
# (HVD_SKIP_PYTHON=1 set-ups).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python="$here/../../.venv/bin/python"
if [[ ! -x $python ]]; then
  echo "SKIP: no .venv (scripts/setup.sh creates it unless HVD_SKIP_PYTHON=1)"
  exit 77
fi
if ! "$python" -c "import hvd" 2>/dev/null; then
  echo "SKIP: the hvd package is not installed in .venv (scripts/setup.sh installs it)"
  exit 77
fi
export HVD_HVDRUN=$2
cd "$here"
exec "$python" -m pytest -q -p no:cacheprovider "$1"

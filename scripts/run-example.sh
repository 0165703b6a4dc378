#!/usr/bin/env bash
# scripts/run-example.sh: set up, then show what this machine supports and run the main
# job: a local multi-rank program started and supervised by hvdrun.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build_dir=${HVD_BUILD_DIR:-build}
"$build_dir/cli/hvdrun" --check-build
echo
"$build_dir/cli/hvdrun" -np 4 "$build_dir/examples/hello_ranks"

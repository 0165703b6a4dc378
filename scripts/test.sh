#!/usr/bin/env bash
# scripts/test.sh: set up (packages, configure, build), then run every test with CTest.
# CI runs exactly this (.ci/run). Extra arguments go to ctest, e.g. -L unit or -R hostlist.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all
build_dir=${HVD_BUILD_DIR:-build}
# Two jobs at most: CI machines have 2 cores and several tests start many processes.
ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 300 "$@"

#!/usr/bin/env bash
# tests/consumer/check_install.sh BUILD_DIR: installs hvd from BUILD_DIR into a fresh prefix,
# then builds two programs against the installed copy only, as users would: a C++ one with
# find_package(hvd), and the C rank with pkg-config's flags (so the installed hvd/ headers
# must stand alone); runs both under hvdrun on 2 ranks. Exit 0 when both print their ok.
set -euo pipefail
build=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export SLURM_CONF=/nonexistent
unset SLURM_JOB_ID CUDA_VISIBLE_DEVICES
cmake -S "$source_dir/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
libdir=$(dirname "$(find "$work/prefix" -name 'libhvd.so' | head -1)")
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$build/cli/hvdrun" -np 2 "$work/consumer/consumer"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$work/c_rank" "$source_dir/tests/e2e/c_api_rank.c" $(pkg-config --cflags --libs hvd)
"$build/cli/hvdrun" -np 2 "$work/c_rank"

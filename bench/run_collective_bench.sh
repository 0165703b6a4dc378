#!/usr/bin/env bash
# bench/run_collective_bench.sh: allreduce and broadcast, ours (shared memory and TCP) and
# Open MPI's, side by side in one run, for np=2 and np=4. Open MPI runs over TCP loopback
# and over shared memory (vader); `--mca pml ob1` is needed for the btl choice to take
# effect (otherwise it picks UCX and ignores it). Last, plain loopback sockets moving the
# same bytes with no collective logic (bench/tcp_wire.h): what TCP itself gives here.
# Prints; asserts nothing.
#   bash bench/run_collective_bench.sh [max-bytes]     (default 256 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${HVD_BUILD_DIR:-build}
max=${1:-268435456}
perf="$build/bench/collective_perf"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for op in allreduce broadcast; do
  for np in 2 4; do
    echo "=== $op np=$np: hvd ring over shared memory (the default on one host)"
    "$build/cli/hvdrun" --no-prefix -np "$np" "$perf" --impl hvd --op "$op" --max "$max"
    echo "=== $op np=$np: hvd ring over TCP (HVD_SHARED_MEMORY=0)"
    HVD_SHARED_MEMORY=0 "$build/cli/hvdrun" --no-prefix -np "$np" "$perf" --impl hvd --op "$op" --max "$max"
    echo "=== $op np=$np: Open MPI over TCP"
    mpirun --oversubscribe -np "$np" --mca pml ob1 --mca btl tcp,self "$perf" --impl mpi --op "$op" --max "$max"
    echo "=== $op np=$np: Open MPI over shared memory"
    mpirun --oversubscribe -np "$np" --mca pml ob1 --mca btl vader,self "$perf" --impl mpi --op "$op" --max "$max"
    echo "=== $op np=$np: the bare TCP wire (plain sockets, the same bytes, no reduction)"
    "$build/cli/hvdrun" --no-prefix -np "$np" "$perf" --impl tcp-wire --op "$op" --max "$max"
  done
done

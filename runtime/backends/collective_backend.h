// runtime/backends/collective_backend.h: the few primitives the runtime asks of whatever
// moves the data (hvdrun's TCP ring, or MPI). Every call is collective and blocking; data
// stays the caller's; one call at a time (the runtime serialises them). After an error a
// backend keeps failing with it (the communicator is poisoned).
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "collectives/reduce.h"
#include "runtime/common/status.h"

namespace hvd::backends {

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  virtual std::string_view name() const = 0;  // "tcp", "mpi"
  virtual Status allreduce(void* data, size_t count, collectives::DataType type, collectives::ReduceOp op) = 0;
  virtual Status broadcast(void* data, size_t bytes, int root) = 0;
  // bytesPerRank: one entry per rank, equal everywhere; out receives the blocks in rank order.
  virtual Status allgatherv(const void* mine, std::span<const size_t> bytesPerRank, void* out) = 0;
  virtual Status barrier() = 0;
};

// Open MPI's collectives on MPI_COMM_WORLD (HOROVOD_CPU_OPERATIONS=mpi). Initialises MPI
// when the program has not (and finalises it on destruction then). Checks that MPI's world
// is this job: expectRank/expectSize. kUnavailable when not compiled in or not loadable;
// kInvalidUsage when MPI's world differs (the ranks were not started by mpirun).
Result<std::unique_ptr<CollectiveBackend>> openMpiCollectives(int expectRank, int expectSize);

}  // namespace hvd::backends

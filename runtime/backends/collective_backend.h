// runtime/backends/collective_backend.h: the few primitives the runtime asks of whatever
// moves the data (hvd's TCP/shared-memory ring, MPI, NCCL, the staged GPU path). Every call is collective
// and blocking; data stays the caller's; one call at a time (the engine's cycle serialises
// them). After an error a backend keeps failing with it (the communicator is poisoned).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "hvd/types.h"
#include "runtime/common/status.h"

namespace hvd::backends {

// A tensor as a backend sees it: memory, element count and type, and where it lives.
struct TensorRef {
  void* data = nullptr;
  size_t count = 0;
  DataType type = DataType::kUInt8;
  Device device = Device::kCpu;
  size_t bytes() const { return count * dataTypeSize(type); }
};

// Memory a GPU backend allocated on its device for a result that outlives the call: an
// allgather's or an alltoall's, whose size is known only once the ranks' counts are in, so
// the caller cannot pass a buffer. Freed when the last owner lets go, on any thread, after
// the backend is gone too. Empty (null memory) for 0 bytes.
// One of many device copies handed over at once (CollectiveBackend::copyMany).
struct DeviceCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

struct DeviceBuffer {
  std::shared_ptr<std::byte> memory;
  size_t bytes = 0;
  int ordinal = -1;  // the CUDA device, numbered as this process sees them
};

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  virtual std::string_view name() const = 0;  // "tcp", "mpi"
  // Whether this backend moves tensors on `device`. The runtime keeps its backends in the
  // registry's order of preference and gives each tensor to the first that says yes.
  virtual bool supports(Device device) const = 0;
  virtual Status allreduce(const TensorRef& data, ReduceOp op) = 0;  // in place
  // Whether allreduce can reduce `type` with `op` at all (NCCL has no 16-bit integers). The
  // engine asks at submission, so that a refusal fails that call on each rank alike instead
  // of the collective, which would poison the backend for every later call.
  virtual Status canReduce(DataType type, ReduceOp op) const {
    (void)type, (void)op;
    return Status::ok();
  }
  virtual Status broadcast(const TensorRef& data, int root) = 0;      // in place
  // bytesPerRank: one entry per rank, equal everywhere; out (on mine's device) receives the
  // blocks in rank order.
  virtual Status allgatherv(const TensorRef& mine, std::span<const size_t> bytesPerRank, void* out) = 0;
  virtual Status barrier() = 0;

  // Horovod's reducescatter and alltoall, where a backend has a primitive that moves less
  // than the engine's composition of the calls above (an allreduce of which each rank keeps
  // its part; an allgather of every rank's whole buffer). The engine asks has...() first and
  // composes where it says no (host tensors) or refuses (alltoalls of GPU tensors).
  //
  // reducescatter: every rank's `data` (the sum of countsPerRank elements, the same counts on
  // every rank) reduced with `op`; this rank's part, countsPerRank[rank] elements from the
  // sum of the counts before it, lands in `out` (kAverage divides by the rank count). On the
  // host `data` is the engine's packing buffer, which the backend may leave holding
  // anything; a GPU tensor's `data` is the caller's, which a GPU backend only reads. Parts
  // may be empty.
  virtual bool hasReducescatter() const { return false; }
  virtual Status reducescatter(const TensorRef& data, std::span<const size_t> countsPerRank, ReduceOp op, void* out) {
    (void)data, (void)countsPerRank, (void)op, (void)out;
    return Status(Errc::kInternal, std::string(name()) + " has no reducescatter of its own");
  }
  // alltoallv: bytesMatrix[from * size + to] is what rank `from` sends rank `to`, the same
  // matrix on every rank; `send` holds this rank's blocks in destination order, and `out`
  // (its column's sum, on send's device) receives the blocks sent to it in source order.
  // Blocks may be empty.
  virtual bool hasAlltoall() const { return false; }
  virtual Status alltoallv(const TensorRef& send, std::span<const size_t> bytesMatrix, void* out) {
    (void)send, (void)bytesMatrix, (void)out;
    return Status(Errc::kInternal, std::string(name()) + " has no alltoall of its own");
  }
  // Adasum (ReduceOp::kAdasum, collectives/adasum.h): `data` holds tensors packed one after
  // another, tensorCounts[i] elements each (the same list on every rank), each combined on
  // its own; in place. The engine sends Adasum only where hasAdasum() says yes, and refuses
  // it at submission elsewhere; allreduce() never sees kAdasum.
  virtual bool hasAdasum() const { return false; }
  virtual Status adasum(const TensorRef& data, std::span<const size_t> tensorCounts) {
    (void)data, (void)tensorCounts;
    return Status(Errc::kInternal, std::string(name()) + " has no Adasum");
  }
  // After a failure: the rank whose closed connection caused it (it died or exited), when
  // that is why; the runtime tells hvdrun, which then names that rank, not this one.
  virtual std::optional<int> peerGone() const { return std::nullopt; }
  // After a failure of this rank's own outside the backend (a GPU copy, memory for a
  // result), which stops its engine for good while the process may live on: tell the peers
  // at once, as a crash would, where they would otherwise wait in the collective until their
  // timeout. The TCP backend closes its connections; others do nothing (MPI has no way short
  // of MPI_Abort, NCCL's peers wait on their GPUs).
  virtual void abandon(const Status& why) { (void)why; }

  // Memory on this backend's device, for the engine: its fusion buffer (grows; valid until
  // the next call), on the device of `like` (a tensor of the request: the first call
  // decides the GPU), and copies between tensors, queued before this backend's next
  // collective (src is always device memory); finishCopies() waits for them. Only GPU
  // backends override these (the engine packs host tensors itself, without a virtual call
  // per tensor).
  virtual Result<std::byte*> scratch(size_t bytes, const void* like) {
    (void)bytes, (void)like;
    return Status(Errc::kInternal, std::string(name()) + " has no device scratch memory");
  }
  virtual Status copy(void* dst, const void* src, size_t bytes) {
    (void)dst, (void)src, (void)bytes;
    return Status(Errc::kInternal, std::string(name()) + " has no device copies");
  }
  // copy() of each, in no order among themselves (no copy may read another's destination),
  // queued as one: the engine packs a fusion's tensors with it, where a call per tensor
  // cost every one its own launch.
  virtual Status copyMany(std::span<const DeviceCopy> copies) {
    for (const DeviceCopy& c : copies) HVD_RETURN_IF_ERROR(copy(c.dst, c.src, c.bytes));
    return Status::ok();
  }
  virtual Status finishCopies() { return Status::ok(); }
  // Device memory of `bytes` on the device of `like` (as scratch), handed over to the
  // caller: a GPU allgather's or alltoall's result stays on the tensor's device.
  virtual Result<DeviceBuffer> allocate(size_t bytes, const void* like) {
    (void)bytes, (void)like;
    return Status(Errc::kInternal, std::string(name()) + " allocates no device memory");
  }
  // GPU backends: work queued from now on waits, on the GPU, for what the caller's CUDA
  // `stream` (0: the legacy default stream) holds now, without the calling thread waiting.
  // Called from the submitting thread, beside the engine's calls: the frameworks' kernels
  // that wrote a tensor come first. False where it cannot (no GPU of its own open yet):
  // the caller then waits for its stream itself.
  virtual Result<bool> waitForStream(void* stream) {
    (void)stream;
    return false;
  }
  // GPU backends: run later calls on this CUDA stream (a CUstream / cudaStream_t of the
  // device's primary context; nullptr: the backend's own). Not while calls are pending.
  virtual Status useStream(void* stream) {
    (void)stream;
    return Status(Errc::kInvalidUsage, std::string(name()) + " runs no GPU streams");
  }
  // How a rank waits for its peers in a control agreement. kBrief: the engine's thread runs
  // the cycle on its timer, and ranks arrive up to a cycle time apart, so a long spin would
  // burn a core per waiting rank. kAsData: a caller blocked on a request drives the cycle,
  // and peers making the same call arrive together, so wait as for a collective's data
  // (a brief spin there put the rank that arrived first to sleep whenever its peer was
  // still copying the last collective's bytes).
  enum class ControlWait { kBrief, kAsData };

  // The control path of negotiation: every byte becomes its minimum over the ranks, so 0/1
  // flags combine as AND, and complemented flags as OR. A few hundred bytes per engine cycle;
  // always host memory.
  virtual Status agree(std::span<std::uint8_t> bytes, ControlWait wait) {
    (void)wait;
    return allreduce(TensorRef{bytes.data(), bytes.size(), DataType::kUInt8, Device::kCpu}, ReduceOp::kMin);
  }

  // agree() with a small host allreduce riding in the same exchange: the engine's next
  // blocking request, sent speculatively, so that a blocking call costs one collective
  // instead of two. Every rank passes a rider of the same count, type and op (the engine
  // guarantees it); `op` kAverage divides by the rank count. Backends that cannot combine
  // the two say so, and the engine then runs requests on their own.
  struct Rider {
    void* data = nullptr;
    size_t count = 0;
    DataType type = DataType::kUInt8;
    ReduceOp op = ReduceOp::kSum;
  };
  virtual bool carriesRiders() const { return false; }
  virtual Status agree(std::span<std::uint8_t> bytes, const Rider& rider, ControlWait wait) {
    (void)rider;
    return agree(bytes, wait);
  }
};

}  // namespace hvd::backends

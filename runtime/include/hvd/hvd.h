// hvd/hvd.h: the library ranks link. Started by hvdrun, init() joins the job through its
// rendezvous; started by mpirun or srun --mpi=pmix, through PMIx; alone, it is a world of
// one rank. Data moves over a ring (shared memory between neighbours on one host, TCP
// between hosts) or, with HOROVOD_CPU_OPERATIONS=mpi, through Open MPI.
// A background engine runs every collective: the ...Async calls take a name, return a
// handle at once and may be made from any thread, in any order across ranks (the engine
// agrees on what is ready everywhere and fuses small allreduces); the plain calls block
// until done and are matched across ranks by the order in which each rank makes them.
// Data buffers stay the caller's (until the handle completes, for async calls). Errors come
// back as a Status naming the tensor, the peer rank and host; after a failure every later
// call fails fast with the same error.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "hvd/status.h"
#include "hvd/types.h"

namespace hvd {

// Joins the job described by hvdrun's environment (HVD_RANK, HVD_SIZE, ...,
// HVD_RENDEZVOUS_ADDR/PORT, HVD_SECRET_KEY), or by PMIx when a PMIx launcher started the
// rank; otherwise a world of one. Idempotent. Every variable it reads is listed in
// docs/environment.md. Timeout: HVD_TIMEOUT seconds (default 30) for joining and for every
// later call.
// Engine settings (docs/environment.md): HOROVOD_FUSION_THRESHOLD, HOROVOD_CYCLE_TIME,
// HOROVOD_CACHE_CAPACITY, HOROVOD_STALL_CHECK_*, HOROVOD_LOG_LEVEL.
// Idempotent while the runtime runs. Once it stopped (stopped(): a peer shut down or
// failed), init() rejoins the job as shutdown() then init() would: every rank that calls
// it meets the others at the job's next join, within HVD_TIMEOUT.
// A process forked after init() keeps the identity calls (rank(), size(), ...), but its
// collectives and handle calls fail with kInvalidUsage (they would go over its parent's
// connections), and its shutdown() leaves the parent's runtime alone.
Status init();
// Stops the engine on every rank (Horovod's semantics: the first rank to shut down ends the
// job's collectives; requests still pending anywhere fail saying which rank it was), then
// leaves the job. Blocks at most HVD_TIMEOUT. Also run at exit. Idempotent.
void shutdown();
bool initialized();
// Whether the runtime init() made has stopped: a peer shut down or failed, so every
// collective fails at once until init() rejoins the job (false when not initialized).
bool stopped();

// Horovod's build queries (its mpi_built(), nccl_built(), ...), answered without init():
// whether this library has support for `backend` compiled in: "tcp", "mpi", "nccl", "cuda"
// (GPU tensors through host memory); false for any other name ("gloo", "rocm", "ddl",
// "ccl": hvd has none). Compiled in is not usable here: `hvdrun --check-build` says that.
bool built(std::string_view backend);
// NCCL_VERSION_CODE of the nccl.h this library was compiled against (2.28.9: 22809); 0
// without NCCL.
int ncclBuiltVersion();

int rank();
int size();
int localRank();
int localSize();
int crossRank();
int crossSize();
// Horovod's is_homogeneous(): every host runs as many ranks (true before init()).
bool isHomogeneous();
// What moves the data: "tcp" (hvd's ring) or "mpi" (HOROVOD_CPU_OPERATIONS=mpi); "" before init.
const char* operationsBackend();

// rowShape, on allreduce and broadcast: the tensor's shape past its first dimension (empty:
// a 1-D tensor, or not said). Ranks whose tensors hold as many elements in different shapes
// then fail naming both, as Horovod's shape check does; `count` must be whole rows of it.
Status allreduce(void* data, size_t count, DataType type, ReduceOp op,
                 std::span<const std::int64_t> rowShape = {});  // in place
Status allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op);
Status broadcast(void* data, size_t bytes, int root);  // bytes: the typed call below checks types
Status allgather(const void* mine, size_t bytes, void* out);  // out: size() * bytes, in rank order
// Variable sizes: rank k contributes bytesPerRank[k] (size() entries, equal on all ranks);
// out receives the blocks back to back in rank order.
Status allgatherv(const void* mine, const size_t* bytesPerRank, void* out);
// The same when ranks do not know each other's sizes: they are gathered first (one more,
// small allgather). Fills bytesPerRank when given.
Result<std::vector<std::byte>> allgatherv(const void* mine, size_t bytes, std::vector<size_t>* bytesPerRank = nullptr);
// The same for `count` elements of `type` (countsPerRank in elements): ranks that disagree
// on the type fail with kInvalidUsage naming both, where the byte calls reinterpret.
// rowShape: the tensor's shape past its first dimension (empty for a 1-D tensor); `count`
// must be whole rows of it, and ranks that give different rows fail the same way.
Result<std::vector<std::byte>> allgatherv(const void* mine, size_t count, DataType type,
                                          std::vector<size_t>* countsPerRank,
                                          std::span<const std::int64_t> rowShape = {}, int processSet = 0);
Status barrier(int processSet = 0);

// Horovod's process sets: subsets of the job's ranks whose collectives run among their
// members alone, each on backends and an engine of its own (docs/runtime.md). Set 0 is the
// whole job. Every call below that takes `processSet` runs in that set: counts, splits and
// shares are per member, in the set's rank order, and a broadcast's root is a job rank (as
// in Horovod); a rank outside the set is refused (kInvalidUsage).
//
// addProcessSet is collective over the whole job: every rank calls it with the same ranks
// (member or not), adds in the same order on every rank, and every rank gets the same id.
// Ranks that disagree, a rank outside the job, a repeat or the ranks of an existing set are
// refused on every rank. Needs hvdrun's rendezvous (kUnavailable under mpirun alone).
Result<int> addProcessSet(std::span<const int> ranks);
// Collective over the whole job, as adding; the set's requests must be done.
Status removeProcessSet(int processSet);
// The set's job ranks, sorted; kInvalidArgument for an unknown id.
Result<std::vector<int>> processSetRanks(int processSet);
// This rank's rank within the set (kInvalidUsage when it is not a member), and its size.
Result<int> processSetRank(int processSet);
Result<int> processSetSize(int processSet);
// Every set's id, 0 first.
std::vector<int> processSetIds();
// Horovod's join(): this rank has run out of data. Blocks until every rank joined; until
// then this rank takes part in the others' CPU collectives without changing a result (the
// identity of each reduction; average still divides by size(), as Horovod's does; nothing
// in an allgather). Returns the last rank to join. Broadcasts from a joined rank, GPU
// tensors and alltoalls fail on every rank while any rank has joined; this rank may submit
// nothing else until it returns.
Result<int> join();

// Horovod's start_timeline / stop_timeline: this rank's Chrome trace from now on, as
// HOROVOD_TIMELINE writes it (rank 0 to `path`, rank r to its `.rank<r>` name; docs/
// timeline.md), with CYCLE_START marks if asked. Not collective: each rank starts its own.
// kInvalidUsage while another file is being written (the same one: a no-op); stopping
// without one is a no-op.
Status startTimeline(std::string_view path, bool markCycles = false);
Status stopTimeline();

// GPU tensors (device memory, such as a CUDA tensor's data_ptr()), blocking like the host
// calls; counts are elements. They run through NCCL when it loads and a GPU is visible,
// else staged through pinned host memory and the host backend; HOROVOD_GPU_OPERATIONS=
// nccl|cpu chooses. All of a rank's GPU tensors must live on one GPU (the one its first
// GPU call used). Returns when the result is in place (the work on hvd's stream is done).
// Device::kCpu runs the host path, so callers can pass a tensor's device through.
Status allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op, Device device,
                 int processSet = 0, std::span<const std::int64_t> rowShape = {});
Status broadcast(void* data, size_t count, DataType type, int root, Device device, int processSet = 0,
                 std::span<const std::int64_t> rowShape = {});
// countsPerRank: size() entries, equal on all ranks; out holds their sum, in rank order.
Status allgatherv(const void* mine, const size_t* countsPerRank, void* out, DataType type, Device device);
// The CUDA stream GPU collectives run on from now on (a cudaStream_t of the current
// device, e.g. torch.cuda.current_stream().cuda_stream): hvd's work then queues behind
// the framework's kernels on it, and calls return (handles complete) when that stream has
// reached the end of hvd's work. nullptr: hvd's own stream (the default), on which hvd
// does not wait for the framework's work. Call it with no GPU call pending.
Status setGpuStream(void* stream);
// Before handing over GPU tensors written on a stream other than hvd's (the framework's:
// torch.cuda.current_stream().cuda_stream; 0 is the legacy default stream): hvd's GPU work
// queued from now on waits, on the GPU, for what that stream holds now, while the calling
// thread goes on (an event, as Horovod waits on one). hvd's Python package calls it for
// every CUDA tensor; synchronizing torch's stream instead would hold the CPU back until
// every kernel queued so far had run (a training step's backward, at each gradient).
// processSet: the set whose collectives come next (each set runs its own GPU stream).
// False where hvd cannot order its work so (no GPU of its own open yet: before the first
// GPU collective; none here; not in the set): the caller then synchronizes its stream
// itself, as before.
Result<bool> waitForGpuStream(void* stream, int processSet = 0);
// What moves GPU tensors: "nccl", "cuda-staged" (HOROVOD_GPU_OPERATIONS=cpu, or no NCCL),
// or "none" (then every GPU call fails saying why); "" before init.
const char* gpuOperationsBackend();

// Asynchronous, named requests. Callable from any thread; ranks may submit names in any
// order. The same name must describe the same request on every rank (type, count, op,
// root), or every rank's handle fails naming the tensor, the ranks and what each asked
// for; a name still pending on this rank cannot be submitted again (kInvalidUsage). An
// empty name is matched by order of submission, like the blocking calls. The buffers must
// stay valid and untouched until the handle completes. `device` says where they live.
using Handle = std::int64_t;
Result<Handle> allreduceAsync(std::string_view name, const void* in, void* out, size_t count, DataType type,
                              ReduceOp op, Device device = Device::kCpu, int processSet = 0,
                              std::span<const std::int64_t> rowShape = {});
Result<Handle> broadcastAsync(std::string_view name, void* data, size_t count, DataType type, int root,
                              Device device = Device::kCpu, int processSet = 0,
                              std::span<const std::int64_t> rowShape = {});
// Each rank contributes `count` elements (the counts may differ); see synchronizeAllgather.
// rowShape as for allgatherv: the rows must be the same on every rank.
Result<Handle> allgatherAsync(std::string_view name, const void* in, size_t count, DataType type,
                              Device device = Device::kCpu, std::span<const std::int64_t> rowShape = {},
                              int processSet = 0);
// Horovod's reducescatter: `count` elements in rows of `rowShape` (the tensor's shape past
// its first dimension; empty: single elements), the same on every rank, reduced with `op`
// (kAverage divides by size()); `out` receives this rank's rows of the result, as many as
// reducescatterRows says. Runs on the backend's own reduce-scatter (hvd's ring,
// MPI_Reduce_scatter, NCCL's: half an allreduce's traffic; docs/runtime.md).
Result<Handle> reducescatterAsync(std::string_view name, const void* in, void* out, size_t count, DataType type,
                                  ReduceOp op, std::span<const std::int64_t> rowShape = {},
                                  Device device = Device::kCpu, int processSet = 0);
// Horovod's alltoall: this rank's `count` elements in rows of `rowShape` (the same rows on
// every rank; counts may differ), splits[d] rows of them to rank d in order (empty: rows /
// size() to each, which must divide evenly). synchronizeAllgather returns the rows every
// rank sent this one, in rank order, with the element count each sent (a GPU tensor's on
// its GPU). Runs on hvd's ring (each block passed along to its rank), MPI_Alltoallv
// or NCCL's grouped sends and receives (docs/runtime.md).
Result<Handle> alltoallAsync(std::string_view name, const void* in, size_t count, DataType type,
                             std::span<const std::uint64_t> splits = {}, std::span<const std::int64_t> rowShape = {},
                             Device device = Device::kCpu, int processSet = 0);
// Blocking, host memory.
Status reducescatter(const void* in, void* out, size_t count, DataType type, ReduceOp op,
                     std::span<const std::int64_t> rowShape = {}, int processSet = 0);
// The rows this rank gets of a reducescatter of `rows` rows, and the first of them: rows /
// size() each, one more for each of the first rows % size() ranks (Horovod's split); in a
// process set, its size and this rank's place in it (0 rows outside it).
size_t reducescatterRows(size_t rows, int processSet = 0);
size_t reducescatterFirstRow(size_t rows, int processSet = 0);
// Whether the request has finished; never blocks. kInvalidArgument for a handle that is
// not pending (unknown, or already synchronized).
Result<bool> poll(Handle handle);
// Waits at most `timeout`: true once the request is done (synchronize then returns at once),
// false while it is pending, so a caller can look up in between (Python's Ctrl-C).
Result<bool> waitFor(Handle handle, std::chrono::milliseconds timeout);
// Blocks until the request finished, releases the handle, and returns its outcome.
Status synchronize(Handle handle);

// A check the blocking calls (allreduce, broadcast, allgather, allgatherv, barrier,
// synchronize, synchronizeAllgather) run every 100 ms while they wait, on the waiting
// thread. When it returns true the call stops waiting and returns kSystem ("interrupted"):
// the request stays in flight, and the runtime may still write into its buffers, which the
// caller must then keep alive. hvd's Python binding sets one that runs Python's signal
// handlers, so Ctrl-C raises KeyboardInterrupt where the program hung. nullptr (the
// default): the calls wait for good.
using WaitInterrupt = bool (*)();
void setWaitInterrupt(WaitInterrupt check);
// For an allgather (or alltoall) handle, instead of synchronize: every rank's elements back
// to back in rank order, and how many each rank gave (sent this rank). A host tensor's
// result is `data`; a GPU tensor's stays on the tensor's GPU (`device` says so): `onDevice`
// bytes at onDevice.get(), memory the runtime allocated there (cuMemAlloc in the device's
// primary context) and frees when the last copy of `onDevice` is gone, on any thread,
// after shutdown() too. `data` is then empty.
struct Gathered {
  std::vector<std::byte> data;
  std::vector<size_t> counts;
  Device device = Device::kCpu;
  std::shared_ptr<std::byte> onDevice;  // null when the result is 0 bytes
  size_t onDeviceBytes = 0;
  int deviceOrdinal = -1;  // the CUDA device holding it, numbered as this process sees them
};
Result<Gathered> synchronizeAllgather(Handle handle);
// alltoallAsync and synchronizeAllgather in one blocking call, host memory. The calling
// thread drives the collective at once, as the other blocking calls do, where a request
// left to the engine's thread may wait a cycle (np=2 from Python: 34-107 us a call against
// 4-8; bench/python_allreduce.py --op alltoall).
Result<Gathered> alltoall(const void* in, size_t count, DataType type, std::span<const std::uint64_t> splits = {},
                          std::span<const std::int64_t> rowShape = {}, int processSet = 0);

// Preemption (hvdrun --signal, --requeue; docs/sbatch.md). True once this rank has been
// told the job is about to end: hvdrun created the file HVD_PREEMPT_FILE names, or the
// signal HVD_PREEMPT_SIGNAL names reached this process (init() installs a handler for it
// when the program has none, so the notice no longer kills the rank). Local and cheap (one
// stat() until true); ranks learn it at different steps.
bool preemptionRequested();
// Collective, like allreduce: true on every rank when any rank has seen preemption, so all
// ranks checkpoint at the same step. Call it at the same point in every rank.
Result<bool> preemptionAgreed();

// Elastic training (hvdrun --min-np with --max-np and --host-discovery-script). Collective,
// like allreduce: true on every rank when hvdrun has formed a new world since this one
// (it added ranks, or one failed), so every rank leaves for it at the same step:
// shutdown(), init(). Rank 0 asks hvdrun; the others learn its answer. Always false
// outside elastic jobs, without a collective. Horovod calls this at every commit.
Result<bool> elasticWorldChanged();

}  // namespace hvd

#include "collectives.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arrays.h"
#include "errors.h"
#include "hvd/hvd.h"
#include "torch_tensors.h"

namespace nb = nanobind;

namespace hvd::python {
namespace {

using Gathered = std::pair<nb::object, std::vector<size_t>>;

// Python's exception (Ctrl-C's KeyboardInterrupt) from the signal handlers that ended a wait
// (pythonInterrupted), told apart from the call's own failures (HvdError).
struct WaitInterrupted : nb::python_error {};

// Runs a runtime call without the GIL, then raises its failure with the GIL back, or what
// Python's signal handlers raised during its wait.
template <typename Call>
auto unlocked(Call&& call) {
  auto outcome = [&] {
    nb::gil_scoped_release release;
    return call();
  }();
  if (PyErr_Occurred()) throw WaitInterrupted();
  return check(std::move(outcome));
}

// Runs a blocking call on these arrays. One Ctrl-C interrupted leaves its request in the
// runtime, which may still read and write them when the peers come: they are then kept
// alive for good (the program is on its way out).
template <typename Call, typename... Arrays>
auto keepingInFlight(Call&& call, const Arrays&... arrays) {
  try {
    return call();
  } catch (const WaitInterrupted&) {
    (static_cast<void>(new Arrays(arrays)), ...);
    throw;
  }
}

// The runtime's blocking calls run this every 100 ms while they wait (hvd::setWaitInterrupt),
// GIL released: Python's signal handlers run, and a Ctrl-C's KeyboardInterrupt ends the wait.
// Without it a rank blocked in an unnamed call would never raise it: one Ctrl-C would leave
// a hung job running until hvdrun's kill grace, with no traceback to say where it hung. Off
// the main thread PyErr_CheckSignals does nothing.
bool pythonInterrupted() {
  nb::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

Handle allreduceAsync(std::string_view name, const InArray& input, const OutArray& output, ReduceOp op, int set) {
  ArrayView in = viewOf(input, "tensor");
  ArrayView out = viewOf(output, "output");
  requireSameShape(in, out);
  return unlocked([&] {
    return hvd::allreduceAsync(name, in.data, out.data, in.count, in.type, op, in.device, set, rowShapeOf(input));
  });
}

void allreduce(const InArray& input, const OutArray& output, ReduceOp op, int set) {
  ArrayView in = viewOf(input, "tensor");
  ArrayView out = viewOf(output, "output");
  requireSameShape(in, out);
  keepingInFlight([&] {
    if (in.device != Device::kCpu) {  // the blocking C++ calls take host memory only
      Handle handle = allreduceAsync("", input, output, op, set);
      unlocked([&] { return hvd::synchronize(handle); });
      return;
    }
    unlocked([&] { return hvd::allreduce(in.data, out.data, in.count, in.type, op, Device::kCpu, set, rowShapeOf(input)); });
  }, input, output);
}

// In place: one array, read and written (a DLPack capsule can be taken only once, so the
// two-array calls cannot be given the same capsule twice).
Handle allreduceAsyncInPlace(std::string_view name, const OutArray& array, ReduceOp op, int set) {
  ArrayView a = viewOf(array, "tensor");
  return unlocked([&] { return hvd::allreduceAsync(name, a.data, a.data, a.count, a.type, op, a.device, set, rowShapeOf(array)); });
}

void allreduceInPlace(const OutArray& array, ReduceOp op, int set) {
  ArrayView a = viewOf(array, "tensor");
  keepingInFlight([&] {
    if (a.device != Device::kCpu) {
      Handle handle = allreduceAsyncInPlace("", array, op, set);
      unlocked([&] { return hvd::synchronize(handle); });
      return;
    }
    unlocked([&] { return hvd::allreduce(a.data, a.data, a.count, a.type, op, Device::kCpu, set, rowShapeOf(array)); });
  }, array);
}

// The async fast path for torch CPU tensors (hvd.torch): fields read in C
// (torch_tensors.h), the op given as hvd.torch's caller gave it. A tensor or op it does
// not take returns None with nothing done, and the Python layer takes the general path.
// (The blocking in-place call has its own entry: inplace_allreduce.h.)
std::optional<ReduceOp> opOf(nb::handle op) {
  if (op.is_none()) return ReduceOp::kAverage;
  ReduceOp value;
  if (nb::try_cast(op, value)) return value;
  return std::nullopt;
}

std::optional<Handle> allreduceAsyncInPlaceTorch(std::string_view name, nb::handle tensor, nb::handle op) {
  std::optional<ReduceOp> reduce = opOf(op);
  std::optional<TorchView> t = reduce ? denseCpuTensor(tensor) : std::nullopt;
  if (!t) return std::nullopt;
  return unlocked([&] {
    return hvd::allreduceAsync(name, t->data, t->data, t->count, t->type, *reduce, Device::kCpu, 0, t->rowShape());
  });
}

Handle broadcastAsync(std::string_view name, const OutArray& array, int root, int set) {
  ArrayView a = viewOf(array, "tensor");
  return unlocked([&] { return hvd::broadcastAsync(name, a.data, a.count, a.type, root, a.device, set, rowShapeOf(array)); });
}

void broadcast(const OutArray& array, int root, int set) {
  ArrayView a = viewOf(array, "tensor");
  keepingInFlight([&] {
    if (a.device != Device::kCpu) {
      Handle handle = broadcastAsync("", array, root, set);
      unlocked([&] { return hvd::synchronize(handle); });
      return;
    }
    // Typed, so ranks that give different dtypes fail instead of reinterpreting root's bytes.
    unlocked([&] { return hvd::broadcast(a.data, a.count, a.type, root, Device::kCpu, set, rowShapeOf(array)); });
  }, array);
}

// out: this rank's rows (hvd.reducescatter sizes it by reducescatter_rows); the runtime
// checks its size against the share.
Handle reducescatterAsync(std::string_view name, const InArray& input, const OutArray& output, ReduceOp op, int set) {
  ArrayView in = viewOf(input, "tensor");
  ArrayView out = viewOf(output, "output");
  if (out.type != in.type || out.device != in.device) {
    throw nb::type_error("hvd: reducescatter's output must have the tensor's dtype and device");
  }
  return unlocked([&] {
    return hvd::reducescatterAsync(name, in.data, out.data, in.count, in.type, op, rowShapeOf(input), in.device, set);
  });
}

// Blocking, host memory: the calling thread drives the collective at once (a request left
// to the engine's thread waited a cycle: np=2, 34-107 us a call against 4-8).
void reducescatter(const InArray& input, const OutArray& output, ReduceOp op, int set) {
  ArrayView in = viewOf(input, "tensor");
  ArrayView out = viewOf(output, "output");
  if (out.type != in.type || out.device != Device::kCpu || in.device != Device::kCpu) {
    throw nb::type_error("hvd: the blocking reducescatter takes host arrays of one dtype");
  }
  keepingInFlight([&] {
    unlocked([&] { return hvd::reducescatter(in.data, out.data, in.count, in.type, op, rowShapeOf(input), set); });
  }, input, output);
}

Gathered alltoall(const InArray& input, const std::vector<std::uint64_t>& splits, int set) {
  ArrayView in = viewOf(input, "tensor");
  if (in.device != Device::kCpu) throw nb::type_error("hvd: the blocking alltoall takes host arrays");
  return keepingInFlight([&]() -> Gathered {
    hvd::Gathered g =
        unlocked([&] { return hvd::alltoall(in.data, in.count, in.type, splits, rowShapeOf(input), set); });
    return {nb::cast(ownedBytes(std::move(g.data))), std::move(g.counts)};
  }, input);
}

Handle alltoallAsync(std::string_view name, const InArray& input, const std::vector<std::uint64_t>& splits, int set) {
  ArrayView in = viewOf(input, "tensor");
  return unlocked([&] {
    return hvd::alltoallAsync(name, in.data, in.count, in.type, splits, rowShapeOf(input), in.device, set);
  });
}

Handle allgatherAsync(std::string_view name, const InArray& input, int set) {
  ArrayView in = viewOf(input, "tensor");
  return unlocked([&] {
    return hvd::allgatherAsync(name, in.data, in.count, in.type, in.device, rowShapeOf(input), set);
  });
}

Gathered synchronizeAllgather(Handle handle) {
  hvd::Gathered gathered = unlocked([&] { return hvd::synchronizeAllgather(handle); });
  std::vector<size_t> counts = std::move(gathered.counts);
  return {gatheredBytes(std::move(gathered)), std::move(counts)};
}

// synchronize in waits of at most timeoutMs: false while the request is pending, so that
// the Python loop around it raises KeyboardInterrupt between waits. Blocked in one long
// wait, a rank whose peers wait too never got to raise it, and one Ctrl-C left the job
// running until hvdrun's kill grace.
bool synchronizeFor(Handle handle, int timeoutMs) {
  return unlocked([&]() -> Result<bool> {
    auto done = hvd::waitFor(handle, std::chrono::milliseconds(timeoutMs));
    if (!done || !*done) return done;
    if (Status s = hvd::synchronize(handle); !s.isOk()) return s;
    return true;
  });
}

std::optional<Gathered> synchronizeAllgatherFor(Handle handle, int timeoutMs) {
  if (!unlocked([&] { return hvd::waitFor(handle, std::chrono::milliseconds(timeoutMs)); })) return std::nullopt;
  return synchronizeAllgather(handle);
}

Gathered allgather(const InArray& input, int set) {
  ArrayView in = viewOf(input, "tensor");
  return keepingInFlight([&]() -> Gathered {
    if (in.device != Device::kCpu) return synchronizeAllgather(allgatherAsync("", input, set));
    std::vector<size_t> counts;
    std::vector<std::byte> data =
        unlocked([&] { return hvd::allgatherv(in.data, in.count, in.type, &counts, rowShapeOf(input), set); });
    return {nb::cast(ownedBytes(std::move(data))), std::move(counts)};
  }, input);
}

}  // namespace

void registerCollectives(nb::module_& m) {
  hvd::setWaitInterrupt(&pythonInterrupted);
  nb::enum_<ReduceOp>(m, "ReduceOp", "How allreduce combines the ranks' elements.")
      .value("Sum", ReduceOp::kSum)
      .value("Average", ReduceOp::kAverage)
      .value("Min", ReduceOp::kMin)
      .value("Max", ReduceOp::kMax)
      .value("Product", ReduceOp::kProduct)
      .value("Adasum", ReduceOp::kAdasum);

  m.def("init", [] { unlocked([] { return hvd::init(); }); },
        "Joins the job hvdrun (or mpirun, srun --mpi=pmix) started; alone, a world of one. Idempotent "
        "while the runtime runs; rejoins once it stopped.");
  m.def("shutdown", [] {
    nb::gil_scoped_release release;
    hvd::shutdown();
  }, "Stops the engine on every rank and leaves the job. Idempotent.");
  m.def("is_initialized", &hvd::initialized);
  m.def("stopped", &hvd::stopped, "True once a peer shut down or failed: init() then rejoins the job.");
  m.def("rank", &hvd::rank);
  m.def("size", &hvd::size);
  m.def("local_rank", &hvd::localRank);
  m.def("local_size", &hvd::localSize);
  m.def("cross_rank", &hvd::crossRank);
  m.def("cross_size", &hvd::crossSize);
  m.def("is_homogeneous", &hvd::isHomogeneous);
  m.def("operations_backend", [] { return std::string(hvd::operationsBackend()); });
  m.def("built", [](const std::string& backend) { return hvd::built(backend); });
  m.def("nccl_built_version", [] { return hvd::ncclBuiltVersion(); });
  m.def("gpu_operations_backend", [] { return std::string(hvd::gpuOperationsBackend()); });
  m.def("wait_gpu_stream",
        [](uintptr_t stream, int set) {
          return unlocked([&] { return hvd::waitForGpuStream(reinterpret_cast<void*>(stream), set); });
        },
        nb::arg("stream"), nb::arg("process_set") = 0,
        "Later GPU collectives (of process_set) wait, on the GPU, for the work now on this CUDA stream (an integer "
        "handle; 0: the legacy default stream); the caller does not wait. False where hvd cannot (no GPU of its "
        "own open yet): the caller synchronizes the stream itself.");
  m.def("set_gpu_stream", [](uintptr_t stream) { unlocked([&] { return hvd::setGpuStream(reinterpret_cast<void*>(stream)); }); },
        nb::arg("stream"), "GPU collectives run on this CUDA stream (an integer handle; 0: hvd's own).");

  m.def("allreduce", &allreduce, nb::arg("input"), nb::arg("output"), nb::arg("op"), nb::arg("process_set") = 0,
        "Blocking; matched across ranks by call order. Arrays: anything DLPack or the buffer protocol gives, or a "
        "DLPack capsule (the fastest way in for a torch tensor).");
  m.def("allreduce_async", &allreduceAsync, nb::arg("name"), nb::arg("input"), nb::arg("output"), nb::arg("op"),
        nb::arg("process_set") = 0);
  m.def("allreduce_inplace", &allreduceInPlace, nb::arg("array"), nb::arg("op"), nb::arg("process_set") = 0,
        "Blocking, in place.");
  m.def("allreduce_async_inplace", &allreduceAsyncInPlace, nb::arg("name"), nb::arg("array"), nb::arg("op"),
        nb::arg("process_set") = 0);
  m.def("allreduce_async_inplace_torch", &allreduceAsyncInPlaceTorch, nb::arg("name"), nb::arg("tensor"),
        nb::arg("op").none(),
        "Starts an in-place allreduce of a dense CPU torch tensor (see use_torch): its handle, or None with "
        "nothing done for anything else. op None: Average.");
  m.def("dtype_codes", [] {
    std::vector<std::pair<std::string, int>> codes;
    for (int i = 0; i < kDataTypeCount; ++i) codes.emplace_back(dataTypeName(static_cast<DataType>(i)), i);
    return codes;
  }, "(name, code) of every dtype the runtime has, for use_torch.");
  m.def("broadcast", &broadcast, nb::arg("array"), nb::arg("root"), nb::arg("process_set") = 0);
  m.def("broadcast_async", &broadcastAsync, nb::arg("name"), nb::arg("array"), nb::arg("root"),
        nb::arg("process_set") = 0);
  m.def("allgather", &allgather, nb::arg("input"), nb::arg("process_set") = 0,
        "Blocking; returns (every rank's bytes in rank order as a uint8 array, elements per rank).");
  m.def("allgather_async", &allgatherAsync, nb::arg("name"), nb::arg("input"), nb::arg("process_set") = 0);
  m.def("reducescatter_async", &reducescatterAsync, nb::arg("name"), nb::arg("input"), nb::arg("output"), nb::arg("op"),
        nb::arg("process_set") = 0);
  m.def("reducescatter_rows", &hvd::reducescatterRows, nb::arg("rows"), nb::arg("process_set") = 0);
  m.def("alltoall_async", &alltoallAsync, nb::arg("name"), nb::arg("input"), nb::arg("splits"),
        nb::arg("process_set") = 0);
  m.def("reducescatter", &reducescatter, nb::arg("input"), nb::arg("output"), nb::arg("op"), nb::arg("process_set") = 0,
        "Blocking, host arrays.");
  m.def("alltoall", &alltoall, nb::arg("input"), nb::arg("splits"), nb::arg("process_set") = 0,
        "Blocking, host arrays.");
  // Horovod's process sets (hvd/hvd.h): adding and removing are collective over the job.
  m.def("add_process_set", [](const std::vector<int>& ranks) { return unlocked([&] { return hvd::addProcessSet(ranks); }); },
        nb::arg("ranks"));
  m.def("remove_process_set", [](int id) { unlocked([&] { return hvd::removeProcessSet(id); }); }, nb::arg("id"));
  m.def("process_set_ranks", [](int id) { return check(hvd::processSetRanks(id)); }, nb::arg("id"));
  m.def("process_set_rank", [](int id) { return check(hvd::processSetRank(id)); }, nb::arg("id"));
  m.def("process_set_size", [](int id) { return check(hvd::processSetSize(id)); }, nb::arg("id"));
  m.def("process_set_ids", &hvd::processSetIds);
  m.def("synchronize_allgather", &synchronizeAllgather, nb::arg("handle"));
  m.def("synchronize_for", &synchronizeFor, nb::arg("handle"), nb::arg("timeout_ms"),
        "synchronize, waiting at most timeout_ms: False while the request is pending.");
  m.def("synchronize_allgather_for", &synchronizeAllgatherFor, nb::arg("handle"), nb::arg("timeout_ms"),
        "synchronize_allgather, waiting at most timeout_ms: None while the request is pending.");
  m.def("poll", [](Handle handle) { return check(hvd::poll(handle)); }, nb::arg("handle"));
  m.def("synchronize", [](Handle handle) { unlocked([&] { return hvd::synchronize(handle); }); }, nb::arg("handle"));
  m.def("barrier", [](int set) { unlocked([&] { return hvd::barrier(set); }); }, nb::arg("process_set") = 0);
  m.def("join", [] { return unlocked([] { return hvd::join(); }); });
  m.def(
      "start_timeline",
      [](const std::string& path, bool markCycles) { unlocked([&] { return hvd::startTimeline(path, markCycles); }); },
      nb::arg("file_path"), nb::arg("mark_cycles") = false);
  m.def("stop_timeline", [] { unlocked([] { return hvd::stopTimeline(); }); });
  m.def("preemption_requested", &hvd::preemptionRequested);
  m.def("preemption_agreed", [] { return unlocked([] { return hvd::preemptionAgreed(); }); });
  m.def("elastic_world_changed", [] { return unlocked([] { return hvd::elasticWorldChanged(); }); });
}

}  // namespace hvd::python

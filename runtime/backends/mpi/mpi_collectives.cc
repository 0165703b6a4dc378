// runtime/backends/mpi/mpi_collectives.cc: MPI_Allreduce and friends through dlopen (Open
// MPI's handles, like MPI_COMM_WORLD, are addresses of symbols in libmpi, so they are
// looked up too). float16 and bfloat16 have no MPI type: they travel as 2-byte integers
// with a user-defined MPI_Op that runs the runtime's own reduction kernel.
#include <mpi.h>

#include <algorithm>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/backends/backend_factory.h"
#include "collectives/adasum.h"
#include "collectives/reduce.h"
#include "collectives/transport.h"
#include "runtime/common/dynamic_library.h"

namespace hvd::backends::mpi {
namespace {

using collectives::DataType;
using collectives::ReduceOp;

struct Api {
  DynamicLibrary library;
  decltype(&MPI_Initialized) initialized = nullptr;
  decltype(&MPI_Finalized) finalized = nullptr;
  decltype(&MPI_Init_thread) initThread = nullptr;
  decltype(&MPI_Finalize) finalize = nullptr;
  decltype(&MPI_Comm_rank) commRank = nullptr;
  decltype(&MPI_Comm_size) commSize = nullptr;
  decltype(&MPI_Allreduce) allreduce = nullptr;
  decltype(&MPI_Bcast) bcast = nullptr;
  decltype(&MPI_Allgatherv) allgatherv = nullptr;
  decltype(&MPI_Reduce_scatter) reduceScatter = nullptr;
  decltype(&MPI_Alltoallv) alltoallv = nullptr;
  decltype(&MPI_Barrier) barrier = nullptr;
  decltype(&MPI_Sendrecv) sendrecv = nullptr;
  decltype(&MPI_Error_string) errorString = nullptr;
  decltype(&MPI_Op_create) opCreate = nullptr;
  decltype(&MPI_Comm_set_errhandler) setErrhandler = nullptr;
  MPI_Comm world = nullptr;
  MPI_Datatype types[kDataTypeCount] = {};
  MPI_Datatype byte = nullptr;
  MPI_Op ops[4] = {};  // sum, min, max, prod
  MPI_Errhandler errorsReturn = nullptr;
};

template <typename T>
T symbol(const DynamicLibrary& lib, const char* name) {
  return reinterpret_cast<T>(lib.symbol(name));
}

Result<std::unique_ptr<Api>> loadApi() {
  auto lib = DynamicLibrary::open({"libmpi.so.40", "libmpi.so", HVD_MPI_LIBRARY});
  if (!lib) return Status(Errc::kUnavailable, "the MPI library cannot be loaded: " + lib.status().message());
  auto api = std::make_unique<Api>(Api{std::move(*lib)});
  const DynamicLibrary& l = api->library;
  api->initialized = l.function<decltype(&MPI_Initialized)>("MPI_Initialized");
  api->finalized = l.function<decltype(&MPI_Finalized)>("MPI_Finalized");
  api->initThread = l.function<decltype(&MPI_Init_thread)>("MPI_Init_thread");
  api->finalize = l.function<decltype(&MPI_Finalize)>("MPI_Finalize");
  api->commRank = l.function<decltype(&MPI_Comm_rank)>("MPI_Comm_rank");
  api->commSize = l.function<decltype(&MPI_Comm_size)>("MPI_Comm_size");
  api->allreduce = l.function<decltype(&MPI_Allreduce)>("MPI_Allreduce");
  api->bcast = l.function<decltype(&MPI_Bcast)>("MPI_Bcast");
  api->allgatherv = l.function<decltype(&MPI_Allgatherv)>("MPI_Allgatherv");
  api->reduceScatter = l.function<decltype(&MPI_Reduce_scatter)>("MPI_Reduce_scatter");
  api->alltoallv = l.function<decltype(&MPI_Alltoallv)>("MPI_Alltoallv");
  api->barrier = l.function<decltype(&MPI_Barrier)>("MPI_Barrier");
  api->sendrecv = l.function<decltype(&MPI_Sendrecv)>("MPI_Sendrecv");
  api->errorString = l.function<decltype(&MPI_Error_string)>("MPI_Error_string");
  api->opCreate = l.function<decltype(&MPI_Op_create)>("MPI_Op_create");
  api->setErrhandler = l.function<decltype(&MPI_Comm_set_errhandler)>("MPI_Comm_set_errhandler");
  // Open MPI's predefined handles are the addresses of these objects.
  api->world = symbol<MPI_Comm>(l, "ompi_mpi_comm_world");
  // In DataType's order; bool as uint8 (reduced with max or min: collectives/reduce.h logicalOf).
  const char* typeSymbols[kDataTypeCount] = {"ompi_mpi_float",    "ompi_mpi_double",   "ompi_mpi_uint16_t",
                                             "ompi_mpi_uint16_t", "ompi_mpi_int8_t",   "ompi_mpi_uint8_t",
                                             "ompi_mpi_int32_t",  "ompi_mpi_int64_t",  "ompi_mpi_int16_t",
                                             "ompi_mpi_uint16_t", "ompi_mpi_uint8_t"};
  for (int i = 0; i < kDataTypeCount; ++i) api->types[i] = symbol<MPI_Datatype>(l, typeSymbols[i]);
  api->byte = symbol<MPI_Datatype>(l, "ompi_mpi_byte");
  const char* opSymbols[4] = {"ompi_mpi_op_sum", "ompi_mpi_op_min", "ompi_mpi_op_max", "ompi_mpi_op_prod"};
  for (int i = 0; i < 4; ++i) api->ops[i] = symbol<MPI_Op>(l, opSymbols[i]);
  api->errorsReturn = symbol<MPI_Errhandler>(l, "ompi_mpi_errors_return");
  bool complete = api->initialized && api->finalized && api->initThread && api->finalize && api->commRank &&
                  api->commSize && api->allreduce && api->bcast && api->allgatherv && api->barrier &&
                  api->reduceScatter && api->alltoallv && api->sendrecv &&
                  api->errorString && api->opCreate && api->setErrhandler && api->world && api->byte &&
                  api->errorsReturn;
  for (auto t : api->types) complete = complete && t != nullptr;
  for (auto o : api->ops) complete = complete && o != nullptr;
  if (!complete) return Status(Errc::kUnavailable, api->library.path() + " is not an Open MPI library hvd can use");
  return api;
}

// The 16-bit float types reduced by the runtime's kernel inside MPI.
thread_local ReduceOp halfOp = ReduceOp::kSum;
thread_local DataType halfType = DataType::kFloat16;
void reduceHalves(void* in, void* inout, int* len, MPI_Datatype*) {
  collectives::reduceInto(inout, in, static_cast<size_t>(*len), halfType, halfOp);
}

// The pairwise exchanges of collectives/ over MPI_Sendrecv, for what MPI has no collective
// for (Adasum). `exchange` is the backend's, which poisons it on an error.
class SendrecvTransport final : public collectives::Transport {
 public:
  using Exchange = std::function<Status(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv)>;
  SendrecvTransport(int rank, int size, Exchange exchange) : rank_(rank), size_(size), exchange_(std::move(exchange)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status exchangeWith(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) override {
    return exchange_(to, send, from, recv);
  }
  Status relay(int, int, std::span<std::byte>) override {
    return Status(Errc::kInternal, "the MPI backend relays nothing: its broadcast is MPI_Bcast");
  }

 private:
  int rank_, size_;
  Exchange exchange_;
};

class MpiCollectives : public CollectiveBackend {
 public:
  MpiCollectives(std::unique_ptr<Api> api, bool weInitialised) : api_(std::move(api)), weInitialised_(weInitialised) {}
  ~MpiCollectives() override {
    int finalized = 0;
    if (weInitialised_ && api_->finalized(&finalized) == MPI_SUCCESS && !finalized) api_->finalize();
  }

  std::string_view name() const override { return "mpi"; }
  bool supports(Device device) const override { return device == Device::kCpu; }

  Status allreduce(const TensorRef& tensor, ReduceOp op) override {
    void* data = tensor.data;
    size_t count = tensor.count;
    DataType type = tensor.type;
    if (!poisoned_.isOk()) return poisoned_;
    if (count == 0) return Status::ok();
    if (count > static_cast<size_t>(INT32_MAX)) return Status(Errc::kInvalidArgument, "MPI_Allreduce takes at most 2^31-1 elements");
    int t = static_cast<int>(type);
    MPI_Op mpiOp = nullptr;
    HVD_RETURN_IF_ERROR(opFor(op, type, mpiOp));
    HVD_RETURN_IF_ERROR(check("MPI_Allreduce", api_->allreduce(MPI_IN_PLACE, data, static_cast<int>(count),
                                                               api_->types[t], mpiOp, api_->world)));
    if (op == ReduceOp::kAverage) collectives::divideForAverage(data, count, type, size_);
    return Status::ok();
  }

  Status broadcast(const TensorRef& t, int root) override {
    void* data = t.data;
    size_t bytes = t.bytes();
    if (!poisoned_.isOk()) return poisoned_;
    if (bytes > static_cast<size_t>(INT32_MAX)) return Status(Errc::kInvalidArgument, "MPI_Bcast takes at most 2 GiB");
    return check("MPI_Bcast", api_->bcast(data, static_cast<int>(bytes), api_->byte, root, api_->world));
  }

  Status allgatherv(const TensorRef& t, std::span<const size_t> bytesPerRank, void* out) override {
    const void* mine = t.data;
    if (!poisoned_.isOk()) return poisoned_;
    std::vector<int> counts, displacements;
    size_t offset = 0;
    for (size_t b : bytesPerRank) {
      if (offset + b > static_cast<size_t>(INT32_MAX)) return Status(Errc::kInvalidArgument, "MPI_Allgatherv takes at most 2 GiB");
      counts.push_back(static_cast<int>(b));
      displacements.push_back(static_cast<int>(offset));
      offset += b;
    }
    int mineCount = counts[static_cast<size_t>(rank_)];
    return check("MPI_Allgatherv", api_->allgatherv(mine, mineCount, api_->byte, out, counts.data(),
                                                    displacements.data(), api_->byte, api_->world));
  }

  bool hasReducescatter() const override { return true; }
  Status reducescatter(const TensorRef& t, std::span<const size_t> countsPerRank, ReduceOp op, void* out) override {
    if (!poisoned_.isOk()) return poisoned_;
    if (countsPerRank.size() != static_cast<size_t>(size_)) {
      return Status(Errc::kInvalidArgument, "reducescatter: " + std::to_string(countsPerRank.size()) +
                                                " counts given for " + std::to_string(size_) + " ranks");
    }
    std::vector<int> counts;
    for (size_t c : countsPerRank) {
      if (c > static_cast<size_t>(INT32_MAX)) {
        return Status(Errc::kInvalidArgument, "MPI_Reduce_scatter takes at most 2^31-1 elements per rank");
      }
      counts.push_back(static_cast<int>(c));
    }
    if (t.count == 0) return Status::ok();
    MPI_Op mpiOp = nullptr;
    HVD_RETURN_IF_ERROR(opFor(op, t.type, mpiOp));
    HVD_RETURN_IF_ERROR(check("MPI_Reduce_scatter", api_->reduceScatter(t.data, out, counts.data(),
                                                                        api_->types[static_cast<int>(t.type)], mpiOp,
                                                                        api_->world)));
    const size_t mine = countsPerRank[static_cast<size_t>(rank_)];
    if (op == ReduceOp::kAverage && mine > 0) collectives::divideForAverage(out, mine, t.type, size_);
    return Status::ok();
  }

  bool hasAlltoall() const override { return true; }
  Status alltoallv(const TensorRef& t, std::span<const size_t> bytesMatrix, void* out) override {
    if (!poisoned_.isOk()) return poisoned_;
    const size_t n = static_cast<size_t>(size_), me = static_cast<size_t>(rank_);
    if (bytesMatrix.size() != n * n) {
      return Status(Errc::kInvalidArgument, "alltoall: " + std::to_string(bytesMatrix.size()) +
                                                " block sizes given for " + std::to_string(n) + " ranks");
    }
    std::vector<int> sendCounts, sendAt, recvCounts, recvAt;
    size_t sent = 0, received = 0;
    for (size_t k = 0; k < n; ++k) {
      const size_t to = bytesMatrix[me * n + k], from = bytesMatrix[k * n + me];
      if (sent + to > static_cast<size_t>(INT32_MAX) || received + from > static_cast<size_t>(INT32_MAX)) {
        return Status(Errc::kInvalidArgument, "MPI_Alltoallv takes at most 2 GiB");
      }
      sendCounts.push_back(static_cast<int>(to)), sendAt.push_back(static_cast<int>(sent));
      recvCounts.push_back(static_cast<int>(from)), recvAt.push_back(static_cast<int>(received));
      sent += to, received += from;
    }
    return check("MPI_Alltoallv", api_->alltoallv(t.data, sendCounts.data(), sendAt.data(), api_->byte, out,
                                                  recvCounts.data(), recvAt.data(), api_->byte, api_->world));
  }

  // Horovod runs Adasum over MPI too (AdasumMPI): here the algorithm of collectives/ on
  // MPI_Sendrecv, in pieces below MPI's int count.
  bool hasAdasum() const override { return true; }
  Status adasum(const TensorRef& t, std::span<const size_t> tensorCounts) override {
    if (!poisoned_.isOk()) return poisoned_;
    SendrecvTransport pairs(rank_, size_, [this](int to, std::span<const std::byte> send, int from,
                                                 std::span<std::byte> recv) { return sendrecv(to, send, from, recv); });
    return collectives::adasumAllreduce(pairs, t.data, t.type, tensorCounts, adasumScratch_);
  }

  Status barrier() override {
    if (!poisoned_.isOk()) return poisoned_;
    return check("MPI_Barrier", api_->barrier(api_->world));
  }

  Status start(int expectRank, int expectSize) {
    HVD_RETURN_IF_ERROR(check("MPI_Comm_set_errhandler", api_->setErrhandler(api_->world, api_->errorsReturn)));
    HVD_RETURN_IF_ERROR(check("MPI_Comm_rank", api_->commRank(api_->world, &rank_)));
    HVD_RETURN_IF_ERROR(check("MPI_Comm_size", api_->commSize(api_->world, &size_)));
    if (rank_ != expectRank || size_ != expectSize) {
      return Status(Errc::kInvalidUsage, "MPI's world (rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                             ") is not this job (rank " + std::to_string(expectRank) + " of " +
                                             std::to_string(expectSize) + ")")
          .withHint("HOROVOD_CPU_OPERATIONS=mpi needs ranks started by mpirun: hvdrun --mpi, or mpirun itself");
    }
    return Status::ok();
  }

 private:
  Status check(const char* call, int rc) {
    if (rc == MPI_SUCCESS) return Status::ok();
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    api_->errorString(rc, text, &length);
    poisoned_ = Status(Errc::kRemote, std::string(call) + " failed on rank " + std::to_string(rank_) + ": " + text);
    return poisoned_;
  }

  // One pairwise exchange; an empty side talks to MPI_PROC_NULL (nothing moves).
  Status sendrecv(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) {
    if (!poisoned_.isOk()) return poisoned_;
    constexpr size_t kPiece = size_t{1} << 30;
    constexpr int kTag = 4417;  // the backend's only point-to-point traffic
    size_t sent = 0, received = 0;
    do {
      const size_t out = std::min(kPiece, send.size() - sent), in = std::min(kPiece, recv.size() - received);
      HVD_RETURN_IF_ERROR(check("MPI_Sendrecv",
                                api_->sendrecv(send.data() + sent, static_cast<int>(out), api_->byte,
                                               send.empty() ? MPI_PROC_NULL : to, kTag, recv.data() + received,
                                               static_cast<int>(in), api_->byte, recv.empty() ? MPI_PROC_NULL : from,
                                               kTag, api_->world, MPI_STATUS_IGNORE)));
      sent += out, received += in;
    } while (sent < send.size() || received < recv.size());
    return Status::ok();
  }

  // MPI's operation for `op` on `type`: bool's logical one, the sum for an average (the
  // caller divides), and the runtime's own kernel for the 16-bit floats.
  Status opFor(ReduceOp op, DataType type, MPI_Op& out) {
    ReduceOp base = type == DataType::kBool     ? collectives::logicalOf(op)
                    : op == ReduceOp::kAverage ? ReduceOp::kSum
                                               : op;
    if (type == DataType::kFloat16 || type == DataType::kBFloat16) return halfOpFor(base, type, out);
    out = api_->ops[base == ReduceOp::kSum ? 0 : base == ReduceOp::kMin ? 1 : base == ReduceOp::kMax ? 2 : 3];
    return Status::ok();
  }

  // User-defined ops are created once per (op, type); MPI calls the function with no
  // context, so the choice travels in thread-locals set just before the call.
  Status halfOpFor(ReduceOp op, DataType type, MPI_Op& out) {
    halfOp = op;
    halfType = type;
    if (halfOpHandle_ == nullptr) {
      HVD_RETURN_IF_ERROR(check("MPI_Op_create", api_->opCreate(&reduceHalves, 1, &halfOpHandle_)));
    }
    out = halfOpHandle_;
    return Status::ok();
  }

  std::unique_ptr<Api> api_;
  bool weInitialised_;
  int rank_ = 0, size_ = 1;
  MPI_Op halfOpHandle_ = nullptr;
  std::vector<std::byte> adasumScratch_;  // collectives/adasum.h
  Status poisoned_ = Status::ok();
};

}  // namespace

Result<std::unique_ptr<CollectiveBackend>> open(const BackendSetup& setup) {
  auto cpu = cpuOperations(*setup.env);
  if (!cpu) return cpu.status();
  if (*cpu != "mpi") return std::unique_ptr<CollectiveBackend>();
  int expectRank = setup.rank, expectSize = setup.size;
  auto api = loadApi();
  if (!api) return api.status().withContext("HOROVOD_CPU_OPERATIONS=mpi");
  int initialised = 0;
  (*api)->initialized(&initialised);
  bool weInitialise = !initialised;
  if (weInitialise) {
    int provided = 0;
    if (int rc = (*api)->initThread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided); rc != MPI_SUCCESS) {
      return Status(Errc::kUnavailable, "HOROVOD_CPU_OPERATIONS=mpi: MPI_Init_thread failed (code " + std::to_string(rc) + ")");
    }
  }
  auto backend = std::make_unique<MpiCollectives>(std::move(*api), weInitialise);
  if (Status s = backend->start(expectRank, expectSize); !s.isOk()) {
    return s.withContext("HOROVOD_CPU_OPERATIONS=mpi");
  }
  return std::unique_ptr<CollectiveBackend>(std::move(backend));
}

}  // namespace hvd::backends::mpi

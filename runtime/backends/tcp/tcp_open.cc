// runtime/backends/tcp/tcp_open.cc: the TCP backend's opener: hvd's ring over the links of
// tcp_transport.h, chosen unless HOROVOD_CPU_OPERATIONS asks for another CPU backend.
#include "collectives/allreduce.h"
#include "runtime/backends/backend_factory.h"
#include "runtime/backends/tcp/host_board.h"
#include "runtime/backends/tcp/tcp_collectives.h"
#include "runtime/backends/tcp/tcp_transport.h"
#include "runtime/common/cpu_budget.h"
#include "runtime/common/log.h"

namespace hvd::backends::tcp {
namespace {

// A world of one publishes nothing and reads nothing.
struct NoStore : Store {
  Status set(const std::string&, const std::string&) override { return Status::ok(); }
  Result<std::string> get(const std::string& key, std::chrono::milliseconds) override { return notFound(key); }
};

}  // namespace

Result<std::unique_ptr<CollectiveBackend>> open(const BackendSetup& setup) {
  auto cpu = cpuOperations(*setup.env);
  if (!cpu) return cpu.status();
  if (*cpu != "tcp") return std::unique_ptr<CollectiveBackend>();
  const std::string& algorithmText = setup.env->text("HVD_ALLREDUCE_ALGORITHM");
  auto algorithm = collectives::parseAllreduceAlgorithm(algorithmText);
  if (!algorithm) {
    return Status(Errc::kInvalidArgument, "HVD_ALLREDUCE_ALGORITHM='" + algorithmText + "' is not an allreduce algorithm")
        .withHint("use auto (the default), ring or halving-doubling");
  }
  TcpTransportOptions options;
  options.advertiseHost = setup.advertiseHost;
  options.secret = setup.secret;
  options.timeout = setup.timeout;
  options.sharedMemory = setup.env->integer("HVD_SHARED_MEMORY") == 1;
  options.waiting = WaitPolicy(usableCores(), setup.localSize, runnableTasks);
  NoStore none;
  Store& store = setup.store != nullptr ? *setup.store : none;
  if (setup.size == 1) options.timeout = std::min(options.timeout, std::chrono::milliseconds(1000));
  // The host board is offered before the ring's addresses and read after: see host_board.h.
  const BoardPlace place{setup.rank, setup.localRank, setup.localSize, setup.crossRank};
  auto board = offerHostBoard(store, place);
  if (!board) return board.status().withContext("offering the host board");
  auto ring = TcpTransport::connect(setup.rank, setup.size, store, options);
  if (!ring) return ring.status().withContext("connecting rank " + std::to_string(setup.rank) + " to its neighbours");
  if (!*board) {
    board = joinHostBoard(store, place, options.timeout);
    if (!board) logMessage(LogLevel::kDebug, "no host board: " + board.status().message());
  }
  if (board && *board) {
    (*board)->join(affinityCpus(), cgroupQuotaCores());
    (*ring)->shareBoard(*board);
  }
  return ringCollectives(std::move(*ring), *algorithm);
}

}  // namespace hvd::backends::tcp

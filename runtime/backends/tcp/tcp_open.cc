// runtime/backends/tcp/tcp_open.cc: the TCP backend's opener: hvd's ring over the links of
// tcp_transport.h, chosen unless HOROVOD_CPU_OPERATIONS asks for another CPU backend.
#include "collectives/allreduce.h"
#include "runtime/backends/backend_factory.h"
#include "runtime/backends/tcp/host_arena.h"
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
  options.host = setup.crossRank;
  // Read once: the wait policy, the host board and the contention pin each need them.
  const std::vector<int> cpus = affinityCpus();
  const std::optional<int> quotaCores = cgroupQuotaCores();
  options.waiting = WaitPolicy(usableCores(cpus.size(), quotaCores), setup.localSize, runnableTasks);
  NoStore none;
  Store& store = setup.store != nullptr ? *setup.store : none;
  if (setup.size == 1) options.timeout = std::min(options.timeout, std::chrono::milliseconds(1000));
  // The host board is offered before the ring's addresses and read after: see host_board.h.
  const BoardPlace place{setup.rank, setup.localRank, setup.localSize, setup.crossRank};
  // The arena serves a job whose ranks all share one host and may share memory, the
  // algorithm left to hvd (tcp_collectives.h), from 3 ranks: at 2, recursive doubling is one
  // exchange already (np=2, 4 B, idle: 1.0-1.1 us over the link, 1.2 through the arena).
  // Only what every rank of the job sees alike: they agree below whether they have it.
  const bool arenaWanted = setup.size > 2 && setup.size == setup.localSize && options.sharedMemory &&
                           *algorithm == collectives::AllreduceAlgorithm::kAuto;
  const size_t arenaBytes = arenaWanted ? HostArena::bytesFor(setup.localSize) : 0;
  auto board = offerHostBoard(store, place, arenaBytes);
  if (!board) return board.status().withContext("offering the host board");
  auto ring = TcpTransport::connect(setup.rank, setup.size, store, options);
  if (!ring) return ring.status().withContext("connecting rank " + std::to_string(setup.rank) + " to its neighbours");
  if (!*board) {
    board = joinHostBoard(store, place, options.timeout);
    if (!board) logMessage(LogLevel::kDebug, "no host board: " + board.status().message());
  }
  if (board && *board) {
    (*board)->join(cpus, quotaCores);
    (*ring)->shareBoard(*board, setup.localRank);
  }
  // Every rank or none: a rank without the board (it could not map it) would wait in a
  // different collective from the others.
  std::uint8_t arenaHere =
      arenaWanted && setup.localRank == setup.rank && board && *board && (*board)->arena().size() >= arenaBytes;
  std::unique_ptr<HostArena> arena;
  if (arenaWanted) {
    Status agreed = collectives::allreduce(**ring, &arenaHere, 1, DataType::kUInt8, ReduceOp::kMin);
    if (!agreed.isOk()) return agreed.withContext("agreeing on the host arena");
    if (arenaHere == 1) arena = std::make_unique<HostArena>((*board)->arena(), setup.localSize, setup.localRank);
  }
  const bool pinning = setup.env->integer("HVD_CONTENTION_PIN") == 1;
  auto pin = std::make_unique<ContentionPin>(cpus, setup.localRank, pinning);
  return ringCollectives(std::move(*ring), *algorithm, std::move(arena), std::move(pin));
}

}  // namespace hvd::backends::tcp

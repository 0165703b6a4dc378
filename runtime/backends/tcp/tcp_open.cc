// runtime/backends/tcp/tcp_open.cc: the TCP backend's opener: hvd's ring over the links of
// tcp_transport.h, chosen unless HOROVOD_CPU_OPERATIONS asks for another CPU backend.
#include <unistd.h>

#include "collectives/allreduce.h"
#include "runtime/backends/backend_factory.h"
#include "runtime/backends/tcp/tcp_collectives.h"
#include "runtime/backends/tcp/tcp_transport.h"

namespace hvd::backends::tcp {
namespace {

// Spin before sleeping in poll(): flat out when this node's ranks each have a core, and
// yielding the core between tries when they outnumber the cores.
void chooseSpinning(int localSize, TcpTransportOptions& options) {
  bool ownCore = localSize <= static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  // Measured at np=4 on 2 cores: 200 yielding tries cut 1 KiB allreduce from 117 to 69 us
  // and raised 1 MiB busbw from 0.88 to 1.31 GB/s; more tries gained nothing.
  options.spinTries = ownCore ? 2000 : 200;
  options.yieldWhileSpinning = !ownCore;
  // Then sleep: a rank with its own core keeps trying for 2 ms (a neighbour copying a few
  // MiB takes about one); one that shares its core sleeps after 200 us, so the neighbour it
  // waits for gets the core. Measured at np=4 on 2 cores over shared memory, 50 / 200 /
  // 2000 us: 1 KiB 6.9 / 7.5 / 7.2 us, 1 MiB busbw 2.5 / 4.6 / 2.1 GB/s (one run each).
  options.spinBudget = std::chrono::microseconds(ownCore ? 2000 : 200);
}

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
  chooseSpinning(setup.localSize, options);
  NoStore none;
  Store& store = setup.store != nullptr ? *setup.store : none;
  if (setup.size == 1) options.timeout = std::min(options.timeout, std::chrono::milliseconds(1000));
  auto ring = TcpTransport::connect(setup.rank, setup.size, store, options);
  if (!ring) return ring.status().withContext("connecting rank " + std::to_string(setup.rank) + " to its neighbours");
  return ringCollectives(std::move(*ring), *algorithm);
}

}  // namespace hvd::backends::tcp

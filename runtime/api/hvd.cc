// runtime/api/hvd.cc: the process's one Context, built by init() and used by every call.
#include "hvd/hvd.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collectives/allreduce.h"
#include "runtime/api/preemption.h"
#include "runtime/backends/collective_backend.h"
#include "runtime/backends/launcher_job.h"
#include "runtime/backends/tcp/tcp_collectives.h"
#include "runtime/backends/tcp/tcp_transport.h"
#include "runtime/common/env_registry.h"
#include "runtime/common/hex.h"
#include "runtime/common/network_interface.h"
#include "runtime/rendezvous/client.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd {
namespace {

// The rendezvous client as the Store a communicator is built with.
class ClientStore : public Store {
 public:
  explicit ClientStore(rendezvous::Client& client) : client_(client) {}
  Status set(const std::string& key, const std::string& value) override { return client_.set(key, value); }
  Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override {
    return client_.get(key, timeout);
  }

 private:
  rendezvous::Client& client_;
};

struct Context {
  int rank = 0, size = 1, localRank = 0, localSize = 1, crossRank = 0, crossSize = 1;
  bool useMpi = false;                    // HOROVOD_CPU_OPERATIONS=mpi
  std::shared_ptr<void> launcherSession;  // declared first: released after the backend
  std::unique_ptr<backends::tcp::TcpTransport> ring;  // while joining; then owned by ops
  std::unique_ptr<backends::CollectiveBackend> ops;
};

std::unique_ptr<Context> context;

Status notInitialized() { return Status(Errc::kInvalidUsage, "hvd::init() has not been called (or failed)"); }

// HOROVOD_CPU_OPERATIONS (Horovod's name) or HVD_CPU_OPERATIONS: "tcp" (default) or "mpi".
Result<std::string> cpuOperations(const EnvSnapshot& env) {
  for (const char* name : {"HOROVOD_CPU_OPERATIONS", "HVD_CPU_OPERATIONS"}) {
    if (!env.isSet(name)) continue;
    std::string value = env.text(name);
    for (char& ch : value) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (value == "tcp" || value == "mpi") return value;
    return Status(Errc::kInvalidArgument, std::string(name) + "='" + env.text(name) + "' is not an operations backend here")
        .withHint("use tcp (hvd's own ring, the default) or mpi (Open MPI's collectives, under mpirun)");
  }
  return std::string("tcp");
}

// Spin before sleeping in poll(): flat out when this node's ranks each have a core, and
// yielding the core between tries when they outnumber the cores.
void chooseSpinning(int localSize, backends::tcp::TcpTransportOptions& options) {
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

// The ring over hvdrun's rendezvous: identities from HVD_* variables.
Status joinHvdrunJob(const EnvSnapshot& env, Context& c, backends::tcp::TcpTransportOptions options) {
  auto client = rendezvous::Client::fromEnvironment(env, options.timeout);
  if (!client) return client.status().withContext("joining the job");
  options.secret = env.text("HVD_SECRET_KEY");
  HVD_RETURN_IF_ERROR(client->set(rendezvous::readyKey(c.rank), options.advertiseHost));
  if (c.useMpi) return Status::ok();  // MPI moves the data; the rendezvous saw the rank
  ClientStore store(*client);
  auto ring = backends::tcp::TcpTransport::connect(c.rank, c.size, store, options);
  if (!ring) return ring.status().withContext("connecting rank " + std::to_string(c.rank) + " to its neighbours");
  c.ring = std::move(*ring);
  return Status::ok();
}

// Started by mpirun or srun --mpi=pmix without hvdrun: rank and size from PMIx; every rank
// publishes its host name (rank 0 also a fresh secret for the ring) in one collective
// exchange, and local and cross ranks follow from the names the way hvdrun numbers them:
// hosts in order of their lowest rank.
Status joinLauncherJob(backends::LauncherJob job, Context& c, backends::tcp::TcpTransportOptions options,
                       const std::string& hostName) {
  c.rank = job.rank, c.size = job.size;
  c.launcherSession = job.session;
  std::string secret;
  if (c.rank == 0) {
    auto fresh = randomHex(32);
    if (!fresh) return fresh.status().withContext("making the ring's secret");
    secret = std::move(*fresh);
  }
  HVD_RETURN_IF_ERROR(job.store->set("hvd.secret/" + std::to_string(c.rank), secret));
  HVD_RETURN_IF_ERROR(job.store->set("hvd.host/" + std::to_string(c.rank), hostName));
  auto shared = job.store->get("hvd.secret/0", options.timeout);
  if (!shared) return shared.status().withContext("joining the " + job.launcher + " job");
  options.secret = *shared;
  std::vector<std::string> hostOf(static_cast<size_t>(c.size)), hosts;  // hosts: first-seen order
  for (int r = 0; r < c.size; ++r) {
    auto name = job.store->get("hvd.host/" + std::to_string(r), options.timeout);
    if (!name) return name.status().withContext("learning where rank " + std::to_string(r) + " runs");
    hostOf[static_cast<size_t>(r)] = *name;
    if (std::find(hosts.begin(), hosts.end(), *name) == hosts.end()) hosts.push_back(*name);
  }
  c.crossSize = static_cast<int>(hosts.size());
  c.crossRank = static_cast<int>(std::find(hosts.begin(), hosts.end(), hostName) - hosts.begin());
  c.localRank = static_cast<int>(std::count(hostOf.begin(), hostOf.begin() + c.rank, hostName));
  c.localSize = static_cast<int>(std::count(hostOf.begin(), hostOf.end(), hostName));
  if (c.useMpi) return Status::ok();
  if (c.crossSize == 1) options.advertiseHost = "127.0.0.1";  // one machine: loopback
  chooseSpinning(c.localSize, options);
  auto ring = backends::tcp::TcpTransport::connect(c.rank, c.size, *job.store, options);
  if (!ring) return ring.status().withContext("connecting rank " + std::to_string(c.rank) + " to its neighbours");
  c.ring = std::move(*ring);
  return Status::ok();
}

}  // namespace

Status init() {
  if (context) return Status::ok();
  // Every variable is read here, once, and checked: a malformed HVD_RANK is an error, not 0.
  auto env = EnvSnapshot::fromProcess();
  if (!env) return env.status().withContext("reading the job's environment");
  auto c = std::make_unique<Context>();
  c->rank = static_cast<int>(env->integer("HVD_RANK"));
  c->size = static_cast<int>(env->integer("HVD_SIZE"));
  c->localRank = static_cast<int>(env->integer("HVD_LOCAL_RANK"));
  c->localSize = static_cast<int>(env->integer("HVD_LOCAL_SIZE"));
  c->crossRank = static_cast<int>(env->integer("HVD_CROSS_RANK"));
  c->crossSize = static_cast<int>(env->integer("HVD_CROSS_SIZE"));
  if (c->rank >= c->size || c->localRank >= c->localSize || c->crossRank >= c->crossSize) {
    return invalidArgument("HVD_RANK=" + std::to_string(c->rank) + " and HVD_SIZE=" + std::to_string(c->size) +
                           " (local " + std::to_string(c->localRank) + "/" + std::to_string(c->localSize) + ", cross " +
                           std::to_string(c->crossRank) + "/" + std::to_string(c->crossSize) +
                           ") do not describe a rank of a job");
  }
  auto operations = cpuOperations(*env);
  if (!operations) return operations.status();
  c->useMpi = *operations == "mpi";
  auto algorithm = collectives::parseAllreduceAlgorithm(env->text("HVD_ALLREDUCE_ALGORITHM"));
  if (!algorithm) {
    return Status(Errc::kInvalidArgument, "HVD_ALLREDUCE_ALGORITHM='" + env->text("HVD_ALLREDUCE_ALGORITHM") +
                                              "' is not an allreduce algorithm")
        .withHint("use auto (the default), ring or halving-doubling");
  }
  backends::tcp::TcpTransportOptions options;
  options.timeout = std::chrono::milliseconds(env->integer("HVD_TIMEOUT") * 1000);
  options.sharedMemory = env->integer("HVD_SHARED_MEMORY") == 1;
  const std::string& host = env->text("HVD_HOSTNAME");
  // Ranks all on one machine talk over loopback; otherwise by the plan's host name,
  // unless an interface was chosen: then by that interface's address.
  bool local = env->text("HVD_RENDEZVOUS_ADDR") == "127.0.0.1";
  options.advertiseHost = local || host.empty() ? "127.0.0.1" : host;
  char thisHost[256] = {};
  ::gethostname(thisHost, sizeof thisHost - 1);
  if (!env->isSet("HVD_RENDEZVOUS_ADDR") && backends::startedByPmixLauncher()) options.advertiseHost = thisHost;
  if (const std::string& interface = env->text("HVD_NETWORK_INTERFACE"); !interface.empty()) {
    auto address = interfaceAddress(interface);
    if (!address) return address.status().withContext("HVD_NETWORK_INTERFACE on " + (host.empty() ? "this host" : host));
    options.advertiseHost = *address;
  }
  if (env->isSet("HVD_RENDEZVOUS_ADDR") && c->size > 1) {
    // Spin before sleeping only when this node's ranks each have a core to spin on.
    chooseSpinning(c->localSize, options);
    HVD_RETURN_IF_ERROR(joinHvdrunJob(*env, *c, options));
  } else if (!env->isSet("HVD_RENDEZVOUS_ADDR") && backends::startedByPmixLauncher()) {
    auto job = backends::joinLauncherJob(options.timeout);
    if (!job) return job.status().withContext("joining the job mpirun or srun started (PMIX_RANK is set)");
    HVD_RETURN_IF_ERROR(joinLauncherJob(std::move(*job), *c, options, thisHost));
  } else if (c->size > 1) {
    return Status(Errc::kInvalidUsage, "HVD_SIZE=" + std::to_string(c->size) +
                                           " but no rendezvous (HVD_RENDEZVOUS_ADDR) to find the other ranks")
        .withHint("start the program with hvdrun, mpirun or srun --mpi=pmix");
  } else {
    options.timeout = std::chrono::milliseconds(1000);
    struct NoStore : Store {
      Status set(const std::string&, const std::string&) override { return Status::ok(); }
      Result<std::string> get(const std::string& key, std::chrono::milliseconds) override { return notFound(key); }
    } none;
    c->ring = backends::tcp::TcpTransport::connect(0, 1, none, options).value();
  }
  if (c->useMpi) {
    auto mpi = backends::openMpiCollectives(c->rank, c->size);
    if (!mpi) return mpi.status().withContext("HOROVOD_CPU_OPERATIONS=mpi");
    c->ops = std::move(*mpi);
  } else {
    c->ops = backends::tcp::ringCollectives(std::move(c->ring), *algorithm);
  }
  detail::installPreemptionHandler(*env);
  context = std::move(c);
  // A program that never calls shutdown() still leaves its launcher properly (mpirun
  // reports a rank that exits without PMIx_Finalize as a failure).
  static bool atExitRegistered = false;
  if (!atExitRegistered) atExitRegistered = std::atexit([] { shutdown(); }) == 0;
  return Status::ok();
}

void shutdown() { context.reset(); }
bool initialized() { return context != nullptr; }
int rank() { return context ? context->rank : 0; }
int size() { return context ? context->size : 1; }
int localRank() { return context ? context->localRank : 0; }
int localSize() { return context ? context->localSize : 1; }
int crossRank() { return context ? context->crossRank : 0; }
int crossSize() { return context ? context->crossSize : 1; }
const char* operationsBackend() { return context ? context->ops->name().data() : ""; }

Status allreduce(void* data, size_t count, DataType type, ReduceOp op) {
  if (!context) return notInitialized();
  return context->ops->allreduce(data, count, type, op);
}

Status allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  if (!context) return notInitialized();
  if (in != out) std::memmove(out, in, count * collectives::dataTypeSize(type));
  return context->ops->allreduce(out, count, type, op);
}

Status broadcast(void* data, size_t bytes, int root) {
  if (!context) return notInitialized();
  if (root < 0 || root >= context->size) return invalidArgument("broadcast root " + std::to_string(root) + " is not a rank");
  return context->ops->broadcast(data, bytes, root);
}

Status allgather(const void* mine, size_t bytes, void* out) {
  if (!context) return notInitialized();
  std::vector<size_t> sizes(static_cast<size_t>(context->size), bytes);
  return context->ops->allgatherv(mine, sizes, out);
}

Status allgatherv(const void* mine, const size_t* bytesPerRank, void* out) {
  if (!context) return notInitialized();
  return context->ops->allgatherv(mine, {bytesPerRank, static_cast<size_t>(context->size)}, out);
}

Result<std::vector<std::byte>> allgatherv(const void* mine, size_t bytes, std::vector<size_t>* bytesPerRank) {
  if (!context) return notInitialized();
  std::vector<uint64_t> sizes(static_cast<size_t>(context->size));
  uint64_t own = bytes;
  HVD_RETURN_IF_ERROR(allgather(&own, sizeof own, sizes.data()));
  std::vector<size_t> asSizes(sizes.begin(), sizes.end());
  size_t total = 0;
  for (size_t s : asSizes) total += s;
  std::vector<std::byte> out(total);
  HVD_RETURN_IF_ERROR(context->ops->allgatherv(mine, asSizes, out.data()));
  if (bytesPerRank != nullptr) *bytesPerRank = std::move(asSizes);
  return out;
}

Status barrier() {
  if (!context) return notInitialized();
  return context->ops->barrier();
}

}  // namespace hvd

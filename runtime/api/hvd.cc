// runtime/api/hvd.cc: the process's one Context, built by init() and used by every call.
#include "hvd/hvd.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collectives/ring_collectives.h"
#include "runtime/api/preemption.h"
#include "runtime/common/env_registry.h"
#include "runtime/common/network_interface.h"
#include "runtime/backends/tcp/tcp_ring.h"
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
  std::unique_ptr<collectives::RingTransport> ring;
};

std::unique_ptr<Context> context;

Status notInitialized() { return Status(Errc::kInvalidUsage, "hvd::init() has not been called (or failed)"); }

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
  backends::tcp::TcpRingOptions options;
  options.timeout = std::chrono::milliseconds(env->integer("HVD_TIMEOUT") * 1000);
  if (c->size > 1) {
    auto client = rendezvous::Client::fromEnvironment(*env, options.timeout);
    if (!client) return client.status().withContext("joining the job");
    const std::string& host = env->text("HVD_HOSTNAME");
    // Ranks all on one machine talk over loopback; otherwise by the plan's host name,
    // unless an interface was chosen: then by that interface's address.
    bool local = env->text("HVD_RENDEZVOUS_ADDR") == "127.0.0.1";
    options.advertiseHost = local || host.empty() ? "127.0.0.1" : host;
    if (const std::string& interface = env->text("HVD_NETWORK_INTERFACE"); !interface.empty()) {
      auto address = interfaceAddress(interface);
      if (!address) return address.status().withContext("HVD_NETWORK_INTERFACE on " + (host.empty() ? "this host" : host));
      options.advertiseHost = *address;
    }
    options.secret = env->text("HVD_SECRET_KEY");
    // Spin before sleeping only when this node's ranks each have a core to spin on.
    options.spinTries = c->localSize <= static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) ? 2000 : 0;
    HVD_RETURN_IF_ERROR(client->set(rendezvous::readyKey(c->rank), options.advertiseHost));
    ClientStore store(*client);
    auto ring = backends::tcp::TcpRing::connect(c->rank, c->size, store, options);
    if (!ring) return ring.status().withContext("connecting rank " + std::to_string(c->rank) + " to its neighbours");
    c->ring = std::move(*ring);
  } else {
    options.timeout = std::chrono::milliseconds(1000);
    struct NoStore : Store {
      Status set(const std::string&, const std::string&) override { return Status::ok(); }
      Result<std::string> get(const std::string& key, std::chrono::milliseconds) override { return notFound(key); }
    } none;
    c->ring = backends::tcp::TcpRing::connect(0, 1, none, options).value();
  }
  detail::installPreemptionHandler(*env);
  context = std::move(c);
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

Status allreduce(void* data, size_t count, DataType type, ReduceOp op) {
  if (!context) return notInitialized();
  return collectives::ringAllreduce(*context->ring, data, count, type, op);
}

Status allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  if (!context) return notInitialized();
  if (in != out) std::memmove(out, in, count * collectives::dataTypeSize(type));
  return collectives::ringAllreduce(*context->ring, out, count, type, op);
}

Status broadcast(void* data, size_t bytes, int root) {
  if (!context) return notInitialized();
  if (root < 0 || root >= context->size) return invalidArgument("broadcast root " + std::to_string(root) + " is not a rank");
  return collectives::ringBroadcast(*context->ring, data, bytes, root);
}

Status allgather(const void* mine, size_t bytes, void* out) {
  if (!context) return notInitialized();
  return collectives::ringAllgather(*context->ring, mine, bytes, out);
}

Status allgatherv(const void* mine, const size_t* bytesPerRank, void* out) {
  if (!context) return notInitialized();
  return collectives::ringAllgatherv(*context->ring, mine, {bytesPerRank, static_cast<size_t>(context->size)}, out);
}

Result<std::vector<std::byte>> allgatherv(const void* mine, size_t bytes, std::vector<size_t>* bytesPerRank) {
  if (!context) return notInitialized();
  std::vector<uint64_t> sizes(static_cast<size_t>(context->size));
  uint64_t own = bytes;
  HVD_RETURN_IF_ERROR(collectives::ringAllgather(*context->ring, &own, sizeof own, sizes.data()));
  std::vector<size_t> asSizes(sizes.begin(), sizes.end());
  size_t total = 0;
  for (size_t s : asSizes) total += s;
  std::vector<std::byte> out(total);
  HVD_RETURN_IF_ERROR(collectives::ringAllgatherv(*context->ring, mine, asSizes, out.data()));
  if (bytesPerRank != nullptr) *bytesPerRank = std::move(asSizes);
  return out;
}

Status barrier() {
  if (!context) return notInitialized();
  return collectives::ringBarrier(*context->ring);
}

}  // namespace hvd

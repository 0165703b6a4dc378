// runtime/bootstrap/join.cc: the three ways into a job. Only identities and a Store come out
// of here; which backends connect through the Store is the registry's business.
#include "runtime/bootstrap/join.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/backends/launcher_job.h"
#include "runtime/common/hex.h"
#include "runtime/common/network_interface.h"
#include "runtime/rendezvous/client.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::bootstrap {
namespace {

// The rendezvous client as the Store a communicator is built with.
class ClientStore : public Store {
 public:
  explicit ClientStore(rendezvous::Client client) : client_(std::move(client)) {}
  Status set(const std::string& key, const std::string& value) override { return client_.set(key, value); }
  Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override {
    return client_.get(key, timeout);
  }
  Result<long long> add(const std::string& key, long long delta) override { return client_.add(key, delta); }

 private:
  rendezvous::Client client_;
};

// The keys of one join: hvd::init() again after hvd::shutdown() (Horovod allows it) joins
// the job anew, and must not read what the earlier join left there (the addresses of
// listeners closed since: rank 0 was refused by rank 1). Every rank joins as often, so the
// nth joins of all ranks meet under the same prefix. (PMIx's store needs none: each
// PMIx_Init starts afresh.)
class JoinStore : public Store {
 public:
  JoinStore(std::unique_ptr<Store> inner, std::string prefix) : inner_(std::move(inner)), prefix_(std::move(prefix)) {}
  Status set(const std::string& key, const std::string& value) override { return inner_->set(prefix_ + key, value); }
  Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override {
    return inner_->get(prefix_ + key, timeout);
  }
  Result<long long> add(const std::string& key, long long delta) override { return inner_->add(prefix_ + key, delta); }

 private:
  std::unique_ptr<Store> inner_;
  std::string prefix_;
};

// This process's joins so far: the first one's keys are unprefixed.
std::string nextJoinPrefix() {
  static std::atomic<int> joins{0};
  int n = joins.fetch_add(1);
  return n == 0 ? std::string() : "join" + std::to_string(n) + "/";
}

// A world of one started as one of several srun tasks: every copy thinks it is rank 0 of
// 1 and trains alone (a plain srun without --mpi=pmix). Worth a loud warning, not an error:
// srun -n 4 of a single-process program is legitimate.
std::string oneOfManySrunTasks(const EnvSnapshot& env) {
  const std::string& tasks = env.text("SLURM_NTASKS");
  long long n = 0;
  for (char c : tasks) n = (c >= '0' && c <= '9' && n < 1000000000) ? n * 10 + (c - '0') : -1;
  if (tasks.empty() || n <= 1) return "";
  return "this process runs alone (rank 0 of 1), but SLURM_NTASKS=" + tasks + ": srun started " + tasks +
         " copies that do not know each other and will each train alone. Start them with hvdrun (inside the "
         "allocation), or srun --mpi=pmix";
}

// A copy torchrun (or torch.distributed.launch, or a job script exporting torch's variables
// before a plain srun) started as one of WORLD_SIZE: hvd's ranks find each other through
// hvdrun's rendezvous, mpirun or srun's PMIx, never torch's, so each copy would be rank 0
// of 1 and train alone, silently. Refused, unlike a plain srun's copies (WORLD_SIZE says the
// program is meant to be distributed); hvdrun takes torchrun's flags.
Status torchrunCopy(const EnvSnapshot& env) {
  auto count = [](const std::string& text) {
    long long n = 0;
    for (char c : text) n = (c >= '0' && c <= '9' && n < 1000000000) ? n * 10 + (c - '0') : -1;
    return text.empty() ? -1 : n;
  };
  const long long world = count(env.text("WORLD_SIZE"));
  if (world <= 1 || !env.isSet("MASTER_ADDR")) return Status::ok();
  const long long perNode = count(env.text("LOCAL_WORLD_SIZE"));
  return Status(Errc::kInvalidUsage,
                "WORLD_SIZE=" + std::to_string(world) +
                    " says this process is one of that many copies, but hvd's ranks find each other through "
                    "hvdrun, mpirun or srun --mpi=pmix, not torchrun's rendezvous (nor a job script's exported torch "
                    "variables): each copy would train alone as rank 0 of 1")
      .withHint("start the program with hvdrun instead, which takes torchrun's flags: hvdrun --nproc-per-node " +
                std::to_string(perNode > 0 ? perNode : world) + " python <script> ...");
}

// The generation this process last joined (elastic training), -1 before its first: each
// init() joins the world hvdrun published after it.
std::atomic<long long> lastGeneration{-1};

// Elastic training: this worker's identity in the newest world hvdrun has published.
Status joinElasticWorld(const EnvSnapshot& env, rendezvous::Client& client, int worker, JoinedJob& job) {
  // A worker hvdrun added to a running job first joins the world made for it.
  long long after = lastGeneration.load();
  if (after < 0) after = env.integer("HVD_ELASTIC_AFTER");
  auto next = client.get(rendezvous::elasticNextKey(after), job.timeout);
  if (!next) return next.status().withContext("learning the job's newest world");
  if (next->rfind(rendezvous::kElasticEnded, 0) == 0) {
    return Status(Errc::kRemote, "hvdrun ended the elastic job: " + next->substr(rendezvous::kElasticEnded.size()));
  }
  auto generation = rendezvous::parseGeneration(*next);
  if (!generation) return Status(Errc::kRemote, "hvdrun named the job's next world '" + *next + "', not a number");
  auto text = client.get(rendezvous::elasticIdentityKey(*generation, worker), job.timeout);
  if (!text) return text.status().withContext("learning this worker's rank in the job's world " + *next);
  auto id = rendezvous::parseElasticIdentity(*text);
  if (!id) return Status(Errc::kRemote, "hvdrun gave worker " + std::to_string(worker) + " the identity '" + *text + "'");
  job.identity = {id->rank, id->size, id->localRank, id->localSize, id->crossRank, id->crossSize};
  job.elasticGeneration = *generation;
  lastGeneration.store(*generation);
  // Every rank of the world arrives before any sets its backends up: a rank hvdrun added
  // waits here for the running ones, which come at their next commit, however long their
  // steps take (up to HVD_ELASTIC_TIMEOUT: horovodrun's --elastic-timeout, 600 s by
  // default), rather than for HVD_TIMEOUT in the backends' set-up. A world abandoned
  // meanwhile ends the wait.
  const std::string prefix = rendezvous::elasticJoinPrefix(*generation);
  HVD_RETURN_IF_ERROR(client.set(rendezvous::elasticArrivedKey(*generation, worker), "1"));
  auto arrived = client.add(prefix + "arrived", 1);
  if (!arrived) return arrived.status().withContext("joining the job's world " + *next);
  const std::string formed = rendezvous::elasticFormedKey(*generation);
  if (*arrived == id->size) HVD_RETURN_IF_ERROR(client.set(formed, "1"));
  const long long wait = env.integer("HVD_ELASTIC_TIMEOUT");
  auto all = client.get(formed, std::chrono::seconds(wait));
  if (!all) {
    return all.status().withContext("waiting for the other ranks of the job's world " + *next + " (up to " +
                                    std::to_string(wait) + " s, hvdrun --elastic-timeout; running ranks join it at "
                                    "their next commit)");
  }
  return Status::ok();
}

// Started by hvdrun: identities from HVD_* variables (elastic training: from hvdrun's newest
// world); the rendezvous sees the rank ready.
Status joinHvdrunJob(const EnvSnapshot& env, JoinedJob& job) {
  auto client = rendezvous::Client::fromEnvironment(env, job.timeout);
  if (!client) return client.status().withContext("joining the job");
  job.secret = env.text("HVD_SECRET_KEY");
  // One process per rank: a process started by a rank with its variables (a worker of the
  // spawn start method runs the script's top level again) would otherwise read and replace
  // the rank's addresses, failing with a stale one or forming a world with other workers.
  // An elastic job's worker keeps its number while its rank changes: that is what it claims.
  const int worker = static_cast<int>(env.integer("HVD_ELASTIC_WORKER"));
  const int rank = worker >= 0 ? worker : job.identity.rank;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string self = "pid " + std::to_string(::getpid()) + " on " + host;
  auto holder = client->claim(rendezvous::rankClaimKey(rank), self);
  if (!holder) return holder.status().withContext("joining the job");
  if (*holder) {
    return Status(Errc::kInvalidUsage,
                  "rank " + std::to_string(rank) + " of this job is already running (" + **holder + "), and this " +
                      "process (" + self + ") has its environment, so it cannot join as that rank: a worker started " +
                      "with the spawn start method (a DataLoader's or multiprocessing's) runs the script's top level " +
                      "again, hvd.init() included; call hvd.init() under `if __name__ == \"__main__\":` or in main()");
  }
  if (worker >= 0) HVD_RETURN_IF_ERROR(joinElasticWorld(env, *client, worker, job));
  HVD_RETURN_IF_ERROR(client->set(rendezvous::readyKey(rank), job.advertiseHost));
  std::string prefix = worker >= 0 ? rendezvous::elasticJoinPrefix(job.elasticGeneration) : nextJoinPrefix();
  job.store = std::make_unique<JoinStore>(std::make_unique<ClientStore>(std::move(*client)), std::move(prefix));
  return Status::ok();
}

// Started by mpirun or srun --mpi=pmix without hvdrun: rank and size from PMIx; every rank
// publishes its host name (rank 0 also a fresh secret for the ring) in one collective
// exchange, and local and cross ranks follow from the names the way hvdrun numbers them:
// hosts in order of their lowest rank.
Status joinLauncherJob(backends::LauncherJob launched, JoinedJob& job, const std::string& hostName) {
  Identity& id = job.identity;
  id.rank = launched.rank, id.size = launched.size;
  job.launcherSession = launched.session;
  std::string secret;
  if (id.rank == 0) {
    auto fresh = randomHex(32);
    if (!fresh) return fresh.status().withContext("making the ring's secret");
    secret = std::move(*fresh);
  }
  Store& store = *launched.store;
  HVD_RETURN_IF_ERROR(store.set("hvd.secret/" + std::to_string(id.rank), secret));
  HVD_RETURN_IF_ERROR(store.set("hvd.host/" + std::to_string(id.rank), hostName));
  auto shared = store.get("hvd.secret/0", job.timeout);
  if (!shared) return shared.status().withContext("joining the " + launched.launcher + " job");
  job.secret = *shared;
  std::vector<std::string> hostOf(static_cast<size_t>(id.size)), hosts;  // hosts: first-seen order
  for (int r = 0; r < id.size; ++r) {
    auto name = store.get("hvd.host/" + std::to_string(r), job.timeout);
    if (!name) return name.status().withContext("learning where rank " + std::to_string(r) + " runs");
    hostOf[static_cast<size_t>(r)] = *name;
    if (std::find(hosts.begin(), hosts.end(), *name) == hosts.end()) hosts.push_back(*name);
  }
  id.crossSize = static_cast<int>(hosts.size());
  id.crossRank = static_cast<int>(std::find(hosts.begin(), hosts.end(), hostName) - hosts.begin());
  id.localRank = static_cast<int>(std::count(hostOf.begin(), hostOf.begin() + id.rank, hostName));
  id.localSize = static_cast<int>(std::count(hostOf.begin(), hostOf.end(), hostName));
  if (id.crossSize == 1) job.advertiseHost = "127.0.0.1";  // one machine: loopback
  job.store = std::move(launched.store);
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Store>> processSetStore(const EnvSnapshot& env, std::chrono::milliseconds timeout,
                                               const std::string& prefix) {
  if (!env.isSet("HVD_RENDEZVOUS_ADDR")) {
    return Status(Errc::kUnavailable,
                  "process sets connect their ranks through hvdrun's rendezvous, and hvdrun did not start this job")
        .withHint("start it with hvdrun (hvdrun --mpi for an MPI program)");
  }
  auto client = rendezvous::Client::fromEnvironment(env, timeout);
  if (!client) return client.status().withContext("connecting a process set");
  return std::unique_ptr<Store>(new JoinStore(std::make_unique<ClientStore>(std::move(*client)), prefix));
}

long long lastElasticGeneration() { return lastGeneration.load(); }

namespace {

// A look (no wait) is rank 0's at every commit of an elastic job, so its connection is kept:
// with a new one each time (connect and the secret's handshake) a commit's question took
// 141 us here, 44 with it kept. One that fails is made again once (the server may have dropped it); a process
// forked since (a data loader's worker) makes its own rather than share the socket.
Result<bool> lookForNextWorld(const EnvSnapshot& env, long long generation) {
  static std::mutex mutex;
  static std::optional<rendezvous::Client> kept;
  static pid_t keptBy = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (keptBy != ::getpid()) kept.reset();
  for (int attempt = 0;; ++attempt) {
    if (!kept) {
      auto client = rendezvous::Client::fromEnvironment(env, std::chrono::seconds(5));
      if (!client) return client.status().withContext("asking hvdrun whether the job's world changed");
      kept.emplace(std::move(*client));
      keptBy = ::getpid();
    }
    auto there = kept->check(rendezvous::elasticNextKey(generation));
    if (there) return *there;
    kept.reset();
    if (attempt > 0) return there.status().withContext("asking hvdrun whether the job's world changed");
  }
}

}  // namespace

Result<bool> elasticWorldChanged(const EnvSnapshot& env, long long generation, std::chrono::milliseconds wait) {
  if (wait.count() == 0) return lookForNextWorld(env, generation);  // a look, not a wait
  auto client = rendezvous::Client::fromEnvironment(env, std::max<std::chrono::milliseconds>(wait, std::chrono::seconds(5)));
  if (!client) return client.status().withContext("asking hvdrun whether the job's world changed");
  auto next = client->get(rendezvous::elasticNextKey(generation), wait);
  // No next world when the job ended: a join would only fail again, saying so.
  if (next) return next->rfind(rendezvous::kElasticEnded, 0) != 0;
  if (next.status().code() == Errc::kTimeout) return false;
  return next.status().withContext("asking hvdrun whether the job's world changed");
}

Result<JoinedJob> joinJob(const EnvSnapshot& env) {
  JoinedJob job;
  Identity& id = job.identity;
  id.rank = static_cast<int>(env.integer("HVD_RANK"));
  id.size = static_cast<int>(env.integer("HVD_SIZE"));
  id.localRank = static_cast<int>(env.integer("HVD_LOCAL_RANK"));
  id.localSize = static_cast<int>(env.integer("HVD_LOCAL_SIZE"));
  id.crossRank = static_cast<int>(env.integer("HVD_CROSS_RANK"));
  id.crossSize = static_cast<int>(env.integer("HVD_CROSS_SIZE"));
  if (id.rank >= id.size || id.localRank >= id.localSize || id.crossRank >= id.crossSize) {
    return invalidArgument("HVD_RANK=" + std::to_string(id.rank) + " and HVD_SIZE=" + std::to_string(id.size) +
                           " (local " + std::to_string(id.localRank) + "/" + std::to_string(id.localSize) + ", cross " +
                           std::to_string(id.crossRank) + "/" + std::to_string(id.crossSize) +
                           ") do not describe a rank of a job");
  }
  job.timeout = std::chrono::milliseconds(env.integer("HVD_TIMEOUT") * 1000);
  const std::string& host = env.text("HVD_HOSTNAME");
  // Ranks all on one machine talk over loopback; otherwise by the plan's host name,
  // unless an interface was chosen: then by that interface's address.
  bool local = env.text("HVD_RENDEZVOUS_ADDR") == "127.0.0.1";
  job.advertiseHost = local || host.empty() ? "127.0.0.1" : host;
  char thisHost[256] = {};
  ::gethostname(thisHost, sizeof thisHost - 1);
  bool byLauncher = !env.isSet("HVD_RENDEZVOUS_ADDR") && backends::startedByPmixLauncher();
  if (byLauncher) job.advertiseHost = thisHost;
  if (const std::string& interface = env.text("HVD_NETWORK_INTERFACE"); !interface.empty()) {
    auto address = interfaceAddress(interface);
    if (!address) return address.status().withContext("HVD_NETWORK_INTERFACE on " + (host.empty() ? "this host" : host));
    job.advertiseHost = *address;
  }
  const bool elastic = env.integer("HVD_ELASTIC_WORKER") >= 0;
  if (env.isSet("HVD_RENDEZVOUS_ADDR") && (id.size > 1 || elastic)) {
    HVD_RETURN_IF_ERROR(joinHvdrunJob(env, job));
  } else if (byLauncher) {
    auto launched = backends::joinLauncherJob(job.timeout);
    if (!launched) return launched.status().withContext("joining the job mpirun or srun started (PMIX_RANK is set)");
    HVD_RETURN_IF_ERROR(joinLauncherJob(std::move(*launched), job, thisHost));
  } else if (id.size > 1) {
    return Status(Errc::kInvalidUsage, "HVD_SIZE=" + std::to_string(id.size) +
                                           " but no rendezvous (HVD_RENDEZVOUS_ADDR) to find the other ranks")
        .withHint("start the program with hvdrun, mpirun or srun --mpi=pmix");
  } else if (!env.isSet("HVD_RENDEZVOUS_ADDR")) {
    HVD_RETURN_IF_ERROR(torchrunCopy(env));
    job.warning = oneOfManySrunTasks(env);
  }
  return job;
}

}  // namespace hvd::bootstrap

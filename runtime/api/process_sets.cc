// runtime/api/process_sets.cc: Horovod's process sets: adding one is a collective over
// the whole job (every rank, member or not, agrees on the list and on its keys at hvdrun's
// rendezvous), after which its members run its calls on a runtime of their own.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>

#include "hvd/hvd.h"
#include "runtime/api/default_runtime.h"

namespace hvd {

using api::processSets;
using api::usable;

namespace {

// What each rank brings to addProcessSet's one exchange over the whole job.
struct SetOffer {
  std::uint64_t hash = 0;   // of the ranks this rank was given (0: not a valid list)
  std::uint64_t token = 0;  // rank 0's random number: the set's keys at the rendezvous
  std::int32_t host = 0;    // this rank's host (its cross rank)
  std::int32_t valid = 0;
};

std::uint64_t hashOf(const std::vector<int>& ranks) {
  std::uint64_t h = 14695981039346656037ull;
  for (int r : ranks) h = (h ^ static_cast<std::uint64_t>(r)) * 1099511628211ull;
  return h | 1;  // never 0
}

// This rank's identity within `ranks` (sorted job ranks; it is one of them): local ranks
// among members on its host, cross ranks over the members' hosts in order of their lowest
// member, as hvdrun numbers a job's.
bootstrap::Identity identityIn(const std::vector<int>& ranks, const std::vector<int>& hostOf, int jobRank) {
  bootstrap::Identity id;
  id.size = static_cast<int>(ranks.size());
  std::vector<int> hosts;
  const int myHost = hostOf[static_cast<size_t>(jobRank)];
  id.localSize = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int host = hostOf[static_cast<size_t>(ranks[i])];
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    if (ranks[i] == jobRank) id.rank = static_cast<int>(i), id.localRank = id.localSize;
    if (host == myHost) ++id.localSize;
  }
  id.crossSize = static_cast<int>(hosts.size());
  id.crossRank = static_cast<int>(std::find(hosts.begin(), hosts.end(), myHost) - hosts.begin());
  return id;
}

}  // namespace

Result<int> addProcessSet(std::span<const int> given) {
  auto found = usable();
  if (!found) return found.status();
  const auto job = *found;
  std::lock_guard<std::mutex> adding(api::processSetMutex());
  const bootstrap::Identity& me = job->identity();
  auto env = EnvSnapshot::fromProcess();
  if (!env) return env.status();
  // The same on every rank (a job hvdrun started, or not): refused by all before any exchange.
  if (me.size > 1 && !env->isSet("HVD_RENDEZVOUS_ADDR")) {
    return Status(Errc::kUnavailable,
                  "process sets connect their ranks through hvdrun's rendezvous, and hvdrun did not start this job")
        .withHint("start it with hvdrun (hvdrun --mpi for an MPI program)");
  }
  std::vector<int> ranks(given.begin(), given.end());
  std::sort(ranks.begin(), ranks.end());
  // What is wrong with the list, if anything; said only after the exchange, which every
  // rank reaches whatever its list, so that no rank waits in it alone.
  std::string wrong;
  if (ranks.empty()) wrong = "a process set needs at least one rank";
  for (int r : ranks) {
    if (wrong.empty() && (r < 0 || r >= me.size)) {
      wrong = "rank " + std::to_string(r) + " is not a rank of the job (0 to " + std::to_string(me.size - 1) + ")";
    }
  }
  if (wrong.empty() && std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    wrong = "rank " + std::to_string(*std::adjacent_find(ranks.begin(), ranks.end())) + " is given twice";
  }
  SetOffer mine{hashOf(ranks), 0, me.crossRank, wrong.empty() ? 1 : 0};
  if (me.rank == 0) {
    std::random_device random;
    mine.token = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  }
  std::vector<size_t> sizes;
  auto exchanged = allgatherv(&mine, sizeof mine, &sizes);
  if (!exchanged) return exchanged.status().withContext("adding a process set");
  std::vector<SetOffer> offers(static_cast<size_t>(me.size));
  std::memcpy(offers.data(), exchanged->data(), std::min(exchanged->size(), offers.size() * sizeof(SetOffer)));
  for (int r = 0; r < me.size; ++r) {
    if (offers[static_cast<size_t>(r)].hash != mine.hash) {
      return Status(Errc::kInvalidUsage, "add_process_set: rank " + std::to_string(r) +
                                             " asked for other ranks than this rank's (" + api::rankListText(ranks) +
                                             ")")
          .withHint("every rank, member or not, adds the same sets in the same order");
    }
  }
  if (!wrong.empty()) {
    return Status(Errc::kInvalidArgument, "add_process_set(" + api::rankListText(ranks) + "): " + wrong);
  }
  auto reserved = processSets().reserve(ranks, me.size);  // the same book, and answer, on every rank
  if (!reserved) return reserved.status();
  const int id = *reserved;
  std::vector<int> hostOf;
  for (const SetOffer& o : offers) hostOf.push_back(o.host);
  const bool member = std::binary_search(ranks.begin(), ranks.end(), me.rank);
  Result<std::unique_ptr<Runtime>> opened = std::unique_ptr<Runtime>();
  if (member) {
    char token[32];
    std::snprintf(token, sizeof token, "%016llx", static_cast<unsigned long long>(offers[0].token));
    opened = job->openProcessSet(identityIn(ranks, hostOf, me.rank), ranks, *env,
                                 "hvd.process_set/" + std::string(token) + "/" + std::to_string(id) + "/",
                                 api::setLabel(id, ranks), id);
  }
  // Every rank learns whether every member got its runtime, so the set exists everywhere
  // or nowhere.
  std::uint8_t ok = opened.isOk() ? 1 : 0;
  if (Status s = allreduce(&ok, &ok, 1, DataType::kUInt8, ReduceOp::kMin); !s.isOk()) {
    return s.withContext("adding a process set");
  }
  if (!opened) return opened.status().withContext("adding process set " + std::to_string(id));
  if (ok == 0) {
    if (*opened) (*opened)->shutdown();
    return Status(Errc::kRemote, "adding process set " + std::to_string(id) + " (" + api::rankListText(ranks) +
                                     "): a member could not connect (its own error says why)");
  }
  processSets().insert(id, {ranks, std::shared_ptr<Runtime>(std::move(*opened))});
  return id;
}

Status removeProcessSet(int processSet) {
  auto found = usable();
  if (!found) return found.status();
  std::lock_guard<std::mutex> adding(api::processSetMutex());
  if (processSet == 0) {
    return Status(Errc::kInvalidUsage, "process set 0 is the whole job and cannot be removed");
  }
  // Every rank removes the same set at the same point.
  std::int32_t mine = processSet;
  std::vector<size_t> sizes;
  auto all = allgatherv(&mine, sizeof mine, &sizes);
  if (!all) return all.status().withContext("removing process set " + std::to_string(processSet));
  for (size_t r = 0; r < all->size() / sizeof mine; ++r) {
    std::int32_t theirs = 0;
    std::memcpy(&theirs, all->data() + r * sizeof mine, sizeof mine);
    if (theirs != processSet) {
      return Status(Errc::kInvalidUsage, "remove_process_set(" + std::to_string(processSet) + "): rank " +
                                             std::to_string(r) + " removed process set " + std::to_string(theirs))
          .withHint("every rank, member or not, removes the same sets in the same order");
    }
  }
  auto entry = processSets().take(processSet);
  if (!entry) return entry.status();
  if (entry->runtime) entry->runtime->shutdown();
  return Status::ok();
}

Result<std::vector<int>> processSetRanks(int processSet) {
  if (processSet == 0) {
    std::vector<int> all(static_cast<size_t>(size()));
    for (int r = 0; r < size(); ++r) all[static_cast<size_t>(r)] = r;
    return all;
  }
  return processSets().ranksOf(processSet);
}

Result<int> processSetRank(int processSet) {
  if (processSet == 0) return rank();
  auto rt = usable(processSet);
  if (!rt) return rt.status();
  return (*rt)->identity().rank;
}

Result<int> processSetSize(int processSet) {
  auto ranks = processSetRanks(processSet);
  if (!ranks) return ranks.status();
  return static_cast<int>(ranks->size());
}

std::vector<int> processSetIds() { return processSets().ids(); }

}  // namespace hvd

// runtime/engine/engine_negotiation.cc: the cycle. Each cycle, on every rank in lockstep:
//  1. one control allreduce (agree) of the offer: shutdown, "I have new names", stall-check
//     wanted, the unnamed requests' count and hashes, one byte per cached response;
//  2. unnamed requests that every rank has, with agreeing hashes, become ready in order;
//     cached responses that every rank has pending become ready in slot order;
//  3. if anyone has new names, the announcements are allgathered and fed to every rank's
//     identical MessageTable; names now announced everywhere become ready (or fail with
//     the mismatch), and are cached;
//  4. the ready list is fused (fusion_plan.h) and run, in the same order everywhere.
// Steady state (every name cached) is therefore step 1 plus the data.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/backends/gather_bytes.h"
#include "runtime/common/log.h"
#include "runtime/common/pause_clock.h"
#include "runtime/engine/engine_parts.h"
#include "runtime/engine/reduction_identity.h"
#include "runtime/engine/stall_inspector.h"
#include "runtime/engine/wire.h"

namespace hvd::engine {

using backends::TensorRef;

namespace {

// Blocking allreduces up to this size ride in the control exchange (each step of which
// then moves them whole); larger ones run on their own, with the bandwidth-optimal
// algorithms.
constexpr std::uint64_t kMaxRiderBytes = 16 * 1024;

// A pending join() in stall reports: ranks that joined wait for the ones that never do.
constexpr const char* kJoinItem = "join()";

}  // namespace

Status Engine::negotiateAndRun(ControlWait wait) {
  bool shutdownAsked = false;
  takeIncoming(shutdownAsked);
  ++tick_;
  if (timeline_ && options_.timelineMarkCycles) {
    timeline::Event mark;
    mark.phase = 'i';
    mark.track = options_.timelineTrackBase;
    mark.name = "CYCLE_START";
    mark.tsUs = timeline::TimelineWriter::nowUs();
    events_.push_back(std::move(mark));
  }
  const bool joinedHere = joined_[static_cast<size_t>(rank_)];
  ControlOffer offer;
  offer.shutdownRank = shutdownAsked ? rank_ : -1;
  offer.joined = joinedHere;
  offer.cached.assign(cache_.slots(), 0);
  std::vector<std::shared_ptr<Operation>> announcing;
  for (auto& [name, op] : named_) {
    if (op->announced) continue;
    auto slot = cache_.find(name);
    if (slot && cache_.matches(*slot, rank_, op->spec)) offer.cached[*slot] = 1;
    else announcing.push_back(op);
  }
  // A join goes out once nothing submitted before it is pending here.
  bool joining = join_ && !joinAnnounced_ && named_.empty() && unnamed_.empty();
  offer.hasAnnouncements = !announcing.empty() || joining;
  size_t unnamedOffered = std::min<size_t>(unnamed_.size(), 255);
  offer.unnamedCount = static_cast<unsigned>(unnamedOffered);
  if (unnamedOffered > 0) {
    offer.headHash = agreementHash(unnamed_[0]->spec);
    std::uint64_t h = agreementHash(Spec{}, 7);
    for (size_t i = 0; i < unnamedOffered; ++i) h = agreementHash(unnamed_[i]->spec, h);
    offer.allHash = h;
  }
  offer.wantsStallCheck = rank_ == 0 && options_.stallCheck && cycleStart_ >= nextStallCheck_;
  // The rider: every rank sends one of the last unnamed request's shape (so all agree on
  // its length without asking), holding this rank's first unnamed request when it has that
  // shape; its result counts only if every rank's did.
  backends::CollectiveBackend& control = *backends_.front();
  // Adasum combines whole tensors, which a control agreement's element-wise reduction cannot.
  bool riding = lastUnnamed_ && lastUnnamed_->kind == OpKind::kAllreduce && lastUnnamed_->device == Device::kCpu &&
                lastUnnamed_->op != ReduceOp::kAdasum &&
                lastUnnamed_->bytes() <= kMaxRiderBytes && control.carriesRiders();
  if (riding) {
    rider_.assign(lastUnnamed_->bytes(), std::byte{0});
    offer.riderHoldsHead = !unnamed_.empty() && unnamed_[0]->spec == *lastUnnamed_;
    if (offer.riderHoldsHead && !rider_.empty()) std::memcpy(rider_.data(), unnamed_[0]->in, rider_.size());
    // A joined rank's rider holds what changes no one's result (its "holds" byte is neutral).
    if (joinedHere) fillReductionIdentity(rider_.data(), lastUnnamed_->count, lastUnnamed_->type, lastUnnamed_->op);
  }
  std::vector<std::uint8_t> bytes = encodeOffer(offer);
  double agreeStartUs = timeline_ ? timeline::TimelineWriter::nowUs() : 0;
  HVD_RETURN_IF_ERROR(riding ? control.agree(bytes, {rider_.data(), lastUnnamed_->count, lastUnnamed_->type, lastUnnamed_->op}, wait)
                             : control.agree(bytes, wait));
  ControlAgreement agreed = decodeAgreement(bytes);

  if (agreed.stallCheck) {
    nextStallCheck_ = cycleStart_ + stallCheckPeriod(options_);
    HVD_RETURN_IF_ERROR(runStallCheck());
  }

  ReadyList ready;
  HVD_RETURN_IF_ERROR(takeUnnamed(agreed, riding, agreeStartUs, ready));
  for (size_t slot = 0; slot < agreed.cachedEverywhere.size(); ++slot) {
    if (!agreed.cachedEverywhere[slot]) continue;
    const Response* response = cache_.at(slot);
    if (response == nullptr) return internalError("the response cache disagrees between ranks at slot " + std::to_string(slot));
    Response run = *response;
    cache_.touch(slot, tick_);
    if (joinedHere) {
      ready.emplace_back(run, standIn(run));
      continue;
    }
    auto it = named_.find(response->name);
    if (it == named_.end()) return internalError("the response cache disagrees between ranks at slot " + std::to_string(slot));
    ready.emplace_back(std::move(run), it->second);
    named_.erase(it);
  }
  if (agreed.anyAnnouncements) {
    std::vector<Response> decided;
    HVD_RETURN_IF_ERROR(exchangeAnnouncements(announcing, joining, decided));
    for (Response& response : decided) {
      auto it = named_.find(response.name);
      std::shared_ptr<Operation> op;
      if (it != named_.end()) {
        op = it->second;
        named_.erase(it);
      } else if (!joined_[static_cast<size_t>(rank_)]) {
        return internalError("tensor '" + response.name + "' was decided but is not pending here");
      }
      if (!response.error.empty()) {
        if (op) complete(op, Status(Errc::kInvalidUsage, response.error));
        continue;
      }
      cache_.insert(response, tick_);
      if (!op) op = standIn(response);
      ready.emplace_back(std::move(response), op);
    }
  }
  if (joinedCount_ > 0) {
    // Every rank drops the same requests: what cannot run with ranks joined.
    std::erase_if(ready, [&](auto& entry) {
      Status refused = refusedWhileJoined(entry.first.spec);
      if (refused.isOk()) return false;
      if (!entry.first.name.empty()) refused = refused.withContext("tensor '" + entry.first.name + "'");
      if (entry.second->id != 0) complete(entry.second, refused);
      return true;
    });
  }
  if (timeline_) {
    double nowUs = timeline::TimelineWriter::nowUs();
    for (auto& [response, op] : ready) {
      op->readyUs = nowUs;
      span(*op, negotiateName(op->spec.kind), toUs(op->submitted), nowUs);
    }
  }
  progressed_ = !ready.empty() || agreed.anyAnnouncements || agreed.shutdownRank >= 0 || agreed.unnamedMin > 0;
  HVD_RETURN_IF_ERROR(execute(ready));
  if (joinedCount_ == size_) {
    // Every rank joined: each one's join returns, and the job goes on as before it. The
    // state is reset first: the caller may submit the moment its join is seen done.
    std::shared_ptr<Operation> joined = std::move(join_);
    join_.reset();
    joinAnnounced_ = false;
    joined_.assign(static_cast<size_t>(size_), false);
    joinedCount_ = 0;
    table_.clearJoined();
    joinedHere_.store(false, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(queueMutex_);
      joinSubmitted_ = false;
    }
    if (joined) {
      joined->lastJoined = lastJoined_;
      complete(joined, Status::ok());
    }
  }
  if (agreed.shutdownRank >= 0) {
    stop(agreed.shutdownRank == rank_
             ? Status(Errc::kInvalidUsage, "hvd was shut down on this rank while the request was pending")
             : Status(Errc::kRemote, "rank " + std::to_string(agreed.shutdownRank) +
                                         " shut hvd down (hvd.shutdown(), or its program ended), so no collective "
                                         "runs after it"),
         agreed.shutdownRank == rank_ ? std::nullopt : std::optional<int>(agreed.shutdownRank));
  }
  return Status::ok();
}

Status Engine::takeUnnamed(const ControlAgreement& agreed, bool riding, double agreeStartUs, ReadyList& ready) {
  // Unnamed requests, in order: all offered when every rank offered the same ones, else
  // the first; a first that disagrees fails on every rank with each rank's description.
  if (agreed.unnamedMin == 0) return Status::ok();
  size_t take = agreed.unnamedMin == agreed.unnamedMax && agreed.allAgree ? agreed.unnamedMin
                : agreed.headsAgree                                        ? 1
                                                                           : 0;
  std::optional<Spec> ranLast;
  const bool joinedHere = joined_[static_cast<size_t>(rank_)];
  if (take > 0 && riding && agreed.ridersHoldHeads && agreed.headsAgree && joinedHere) {
    ++unnamedRun_;  // the others' first one ran in the control exchange, with this rank's identity
    ranLast = lastUnnamed_;
    --take;
  } else if (take > 0 && riding && agreed.ridersHoldHeads && agreed.headsAgree) {
    // The first one already ran, in the control exchange.
    auto head = unnamed_.front();
    unnamed_.pop_front();
    ++unnamedRun_;
    if (!rider_.empty()) std::memcpy(head->out, rider_.data(), rider_.size());
    if (timeline_) {
      double nowUs = timeline::TimelineWriter::nowUs();
      span(*head, negotiateName(head->spec.kind), toUs(head->submitted), agreeStartUs);
      span(*head, opName(head->spec.kind), agreeStartUs, nowUs, true);
      span(*head, "RING_ALLREDUCE_WITH_NEGOTIATION", agreeStartUs, nowUs);
    }
    ranLast = head->spec;
    complete(head, Status::ok());
    --take;
  }
  if (take == 0 && !agreed.headsAgree) HVD_RETURN_IF_ERROR(failDisagreeingHead(joinedHere));
  std::vector<Spec> theirs;
  if (joinedCount_ > 0 && take > 0) HVD_RETURN_IF_ERROR(shareUnnamedSpecs(take, joinedHere, theirs));
  for (size_t i = 0; i < take; ++i) {
    if (joinedHere) {
      ++unnamedRun_;
      ranLast = theirs[i];
      Response response{"", theirs[i], {}, ""};
      ready.emplace_back(response, standIn(response));
      continue;
    }
    auto op = unnamed_.front();
    unnamed_.pop_front();
    ++unnamedRun_;
    ranLast = op->spec;
    ready.emplace_back(Response{"", op->spec, {}, ""}, op);
  }
  // Allreduce specs that ran agree on every rank (allgather shares need not): only they
  // shape the next rider.
  if (!agreed.headsAgree) lastUnnamed_.reset();
  if (ranLast) lastUnnamed_ = ranLast->kind == OpKind::kAllreduce ? ranLast : std::nullopt;
  return Status::ok();
}

Status Engine::failDisagreeingHead(bool joinedHere) {
  std::shared_ptr<Operation> head;
  WireWriter w;
  if (!joinedHere) {
    head = unnamed_.front();
    unnamed_.pop_front();
    w.spec(head->spec);
  }
  ++unnamedRun_;
  std::vector<std::vector<std::byte>> specs;
  HVD_RETURN_IF_ERROR(backends::gatherBytes(*backends_.front(), size_, w.take(), specs));
  if (joinedHere) return Status::ok();
  MessageTable explain(size_);
  std::optional<Response> verdict;
  std::string name = "unnamed collective #" + std::to_string(unnamedRun_);
  for (int r = 0; r < size_; ++r) {
    if (joined_[static_cast<size_t>(r)]) {
      explain.join(r);  // sent nothing
      continue;
    }
    WireReader reader(specs[static_cast<size_t>(r)]);
    Spec spec;
    if (!reader.spec(spec)) return internalError("rank " + std::to_string(r) + " sent a request this rank cannot read");
    verdict = explain.record(r, Announcement{name, spec});
  }
  std::string why = verdict && !verdict->error.empty() ? verdict->error : name + " disagrees between ranks";
  complete(head, Status(Errc::kInvalidUsage, why)
                     .withHint("calls without a name must be made in the same order on every rank; name them to "
                               "submit in any order"));
  return Status::ok();
}

Status Engine::shareUnnamedSpecs(size_t take, bool joinedHere, std::vector<Spec>& specs) {
  WireWriter w;
  if (!joinedHere) {
    w.u64(take);
    for (size_t i = 0; i < take; ++i) w.spec(unnamed_[i]->spec);
  }
  std::vector<std::vector<std::byte>> perRank;
  HVD_RETURN_IF_ERROR(backends::gatherBytes(*backends_.front(), size_, w.take(), perRank));
  if (!joinedHere) return Status::ok();
  // The specs agree (their hashes did), but for an allgather's share, which a joined rank
  // does not use: the first working rank's list serves.
  for (int r = 0; r < size_; ++r) {
    if (joined_[static_cast<size_t>(r)]) continue;
    WireReader reader(perRank[static_cast<size_t>(r)]);
    std::uint64_t n = 0;
    bool ok = reader.u64(n) && n == take;
    for (std::uint64_t i = 0; ok && i < n; ++i) ok = reader.spec(specs.emplace_back());
    if (!ok || !reader.atEnd()) return internalError("rank " + std::to_string(r) + " sent specs this rank cannot read");
    return Status::ok();
  }
  return internalError("every rank joined, yet unnamed requests ran");
}

std::shared_ptr<Engine::Operation> Engine::standIn(const Response& response) {
  auto op = std::make_shared<Operation>();
  op->name = response.name;
  op->spec = response.spec;
  switch (op->spec.kind) {
    case OpKind::kAllreduce:
      op->standIn.resize(op->spec.bytes());
      fillReductionIdentity(op->standIn.data(), op->spec.count, op->spec.type, op->spec.op);
      op->in = op->out = op->standIn.data();
      break;
    case OpKind::kBroadcast:
    case OpKind::kAllgather:
    case OpKind::kAlltoall:  // refused while ranks have joined (refusedWhileJoined): never run
      op->spec.count = 0;
      op->sendCounts.assign(static_cast<size_t>(size_), 0);
      break;
    case OpKind::kBarrier:
      break;
    case OpKind::kReducescatter: {
      // The identity in, and room for this rank's rows (dropped).
      const std::uint64_t rows = op->spec.rows.elements == 0 ? 0 : op->spec.count / op->spec.rows.elements;
      op->outBytes = reducescatterShare(rows, rank_, size_).rows * op->spec.rows.elements * dataTypeSize(op->spec.type);
      op->standIn.resize(op->spec.bytes() + op->outBytes);
      fillReductionIdentity(op->standIn.data(), op->spec.count, op->spec.type, op->spec.op);
      op->in = op->standIn.data();
      op->out = op->standIn.data() + op->spec.bytes();
      break;
    }
  }
  return op;
}

Status Engine::refusedWhileJoined(const Spec& spec) const {
  std::vector<int> joined;
  for (int r = 0; r < size_; ++r) {
    if (joined_[static_cast<size_t>(r)]) joined.push_back(r);
  }
  if (spec.kind == OpKind::kBroadcast && joined_[static_cast<size_t>(spec.root)]) {
    return Status(Errc::kInvalidUsage, describe(spec) + ": the root has called join(), so it has nothing to send")
        .withHint("broadcast before join()");
  }
  // Horovod's rule, which programs written for it expect: only reductions run beside joined
  // ranks. An allgather or a broadcast fails on the ranks still working (the joined ones
  // stay in join), as an alltoall must: a joined rank has nothing to send and nowhere to
  // keep what it is sent.
  if (spec.kind == OpKind::kBroadcast || spec.kind == OpKind::kAllgather || spec.kind == OpKind::kAlltoall) {
    const char* hint = spec.kind == OpKind::kAllgather
                           ? "gather before join(); DistributedOptimizer(sparse_as_dense=True) reduces sparse "
                             "gradients as dense ones, which runs beside joined ranks"
                           : "run it before join()";
    return Status(Errc::kUnavailable, describe(spec) + " ran while " + rankList(joined) +
                                          " had joined; only reductions run beside joined ranks, as in Horovod")
        .withHint(hint);
  }
  if (spec.device != Device::kCpu) {
    return Status(Errc::kUnavailable, describe(spec) + " ran while " + rankList(joined) +
                                          " had joined; join() takes part only in CPU tensors' collectives here")
        .withHint("reduce GPU tensors before join(), or copy them to the CPU for the last uneven steps");
  }
  return Status::ok();
}

void Engine::recordJoins(const std::vector<int>& ranks, std::vector<Response>& decided) {
  for (int r : ranks) {
    joined_[static_cast<size_t>(r)] = true;
    ++joinedCount_;
    lastJoined_ = r;
    for (Response& response : table_.join(r)) decided.push_back(std::move(response));
  }
  if (joined_[static_cast<size_t>(rank_)]) joinedHere_.store(joinedCount_ < size_, std::memory_order_relaxed);
}

Status Engine::exchangeAnnouncements(std::vector<std::shared_ptr<Operation>>& announcing, bool joining,
                                     std::vector<Response>& decided) {
  WireWriter w;
  w.u64(announcing.size());
  for (auto& op : announcing) {
    w.text(op->name);
    w.spec(op->spec);
    op->announced = true;
  }
  w.u64(joining ? 1 : 0);
  if (joining) joinAnnounced_ = true;
  std::vector<int> joiners;
  std::vector<std::vector<std::byte>> perRank;
  HVD_RETURN_IF_ERROR(backends::gatherBytes(*backends_.front(), size_, w.take(), perRank));
  for (int r = 0; r < size_; ++r) {
    WireReader reader(perRank[static_cast<size_t>(r)]);
    std::uint64_t n = 0;
    bool ok = reader.u64(n);
    for (std::uint64_t i = 0; ok && i < n; ++i) {
      Announcement a;
      ok = reader.text(a.name) && reader.spec(a.spec);
      if (!ok) break;
      // A rank announcing a cached name submitted it differently from the cached run:
      // every rank drops the entry, and the ranks that had it pending announce it next.
      cache_.erase(a.name);
      if (timeline_) {
        // Horovod's ticks under the negotiation bar: one per rank, when it was seen ready
        // (kept until this rank submits the name, if it has not yet).
        auto local = named_.find(a.name);
        double nowUs = timeline::TimelineWriter::nowUs();
        if (local != named_.end()) tick(*local->second, r, nowUs);
        else earlyTicks_[a.name].emplace_back(r, nowUs);
      }
      if (auto response = table_.record(r, a)) decided.push_back(std::move(*response));
    }
    std::uint64_t joins = 0;
    ok = ok && reader.u64(joins) && joins <= 1;
    if (!ok || !reader.atEnd()) return internalError("rank " + std::to_string(r) + " sent announcements this rank cannot read");
    if (joins == 1) joiners.push_back(r);
  }
  recordJoins(joiners, decided);
  return Status::ok();
}

Status Engine::runStallCheck() {
  auto now = Clock::now();
  const Clock::duration paused = pausedSoFar();
  // How long a request has waited while this process ran: a job held as a whole (Ctrl-Z,
  // scontrol suspend) past the stall times has not stalled.
  auto waited = [&](const Operation& op) {
    return std::chrono::duration<double>(now - op.submitted - (paused - op.pausedBefore)).count();
  };
  WireWriter w;
  std::vector<std::pair<std::string, double>> items;
  for (const auto& [name, op] : named_) items.emplace_back(name, waited(*op));
  for (size_t i = 0; i < unnamed_.size(); ++i) {
    items.emplace_back("unnamed collective #" + std::to_string(unnamedRun_ + i + 1), waited(*unnamed_[i]));
  }
  if (join_) items.emplace_back(kJoinItem, waited(*join_));
  w.u64(items.size());
  for (const auto& [name, waited] : items) {
    w.text(name);
    w.u64(static_cast<std::uint64_t>(waited * 1000));
  }
  std::vector<std::vector<std::byte>> perRank;
  HVD_RETURN_IF_ERROR(backends::gatherBytes(*backends_.front(), size_, w.take(), perRank));
  std::vector<PendingReport> reports(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    WireReader reader(perRank[static_cast<size_t>(r)]);
    std::uint64_t n = 0;
    bool ok = reader.u64(n);
    for (std::uint64_t i = 0; ok && i < n; ++i) {
      PendingReport::Item item;
      std::uint64_t ms = 0;
      ok = reader.text(item.name) && reader.u64(ms);
      item.waitedSeconds = static_cast<double>(ms) / 1000.0;
      if (ok) reports[static_cast<size_t>(r)].items.push_back(std::move(item));
    }
    if (!ok) return internalError("rank " + std::to_string(r) + " sent a stall report this rank cannot read");
  }
  std::vector<StallFinding> findings = findStalls(reports);
  // A joined rank is not missing from the others' collectives: it takes part in them.
  if (joinedCount_ > 0) {
    for (auto& f : findings) {
      if (f.name == kJoinItem) continue;
      std::erase_if(f.missingRanks, [&](int r) { return joined_[static_cast<size_t>(r)]; });
    }
    std::erase_if(findings, [](const StallFinding& f) { return f.missingRanks.empty(); });
  }
  double warnAfter = std::chrono::duration<double>(options_.stallWarning).count();
  std::vector<StallFinding> fresh;
  for (const auto& f : findings) {
    if (f.waitedSeconds >= warnAfter && warnedStalls_.insert(f.name).second) fresh.push_back(f);
  }
  if (rank_ == 0 && !fresh.empty()) {
    const std::string context = options_.logContext.empty() ? "" : options_.logContext + ": ";
    logMessage(LogLevel::kWarning, context + formatStallWarning(fresh, warnAfter));
  }
  if (options_.stallShutdown.count() == 0) return Status::ok();
  double shutdownAfter = std::chrono::duration<double>(options_.stallShutdown).count();
  std::vector<StallFinding> fatal;
  for (const auto& f : findings) {
    if (f.waitedSeconds >= shutdownAfter) fatal.push_back(f);
  }
  if (fatal.empty()) return Status::ok();
  const StallFinding& f = fatal.front();
  Status stalled(Errc::kTimeout,
                 "collective '" + f.name + "' stalled: " + rankList(f.readyRanks) + " waited " +
                     std::to_string(static_cast<long long>(f.waitedSeconds)) + " s for " + rankList(f.missingRanks) +
                     ", which never submitted it (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=" +
                     std::to_string(static_cast<long long>(shutdownAfter)) + ")" +
                     (fatal.size() > 1 ? "; " + std::to_string(fatal.size() - 1) + " more stalled" : ""));
  stop(stalled);
  if (options_.onStallShutdown) {
    options_.onStallShutdown(options_.logContext.empty() ? stalled : stalled.withContext(options_.logContext));
  }
  return stalled;
}

}  // namespace hvd::engine

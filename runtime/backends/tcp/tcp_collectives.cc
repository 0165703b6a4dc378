// runtime/backends/tcp/tcp_collectives.cc: forwarding to collectives/.
#include "runtime/backends/tcp/tcp_collectives.h"

#include "collectives/adasum.h"
#include "collectives/allreduce.h"
#include "collectives/combine_allreduce.h"
#include "collectives/hypercube_alltoall.h"
#include "collectives/ring_collectives.h"
#include "runtime/backends/tcp/host_allreduce.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hvd::backends::tcp {
namespace {

constexpr WaitPolicy::Spin kControlSpin{200, false, std::chrono::microseconds(50)};

class RingCollectives : public CollectiveBackend {
 public:
  RingCollectives(std::unique_ptr<TcpTransport> ring, collectives::AllreduceAlgorithm algorithm,
                  std::unique_ptr<HostArena> arena, std::unique_ptr<ContentionPin> pin)
      : ring_(std::move(ring)), algorithm_(algorithm), arena_(std::move(arena)), pin_(std::move(pin)) {}
  std::string_view name() const override { return "tcp"; }
  bool supports(Device device) const override { return device == Device::kCpu; }
  Status allreduce(const TensorRef& t, ReduceOp op) override {
    placeCaller();
    if (!inArena(t.bytes())) return collectives::allreduce(*ring_, t.data, t.count, t.type, op, algorithm_);
    HVD_RETURN_IF_ERROR(hostAllreduce(*arena_, *ring_, {static_cast<std::byte*>(t.data), t.bytes()},
                                      [&](std::byte* dst, const std::byte* src, collectives::Operands order) {
                                        collectives::reduceInto(dst, src, t.count, t.type, op, order);
                                      }));
    if (op == ReduceOp::kAverage) collectives::divideForAverage(t.data, t.count, t.type, ring_->size());
    return Status::ok();
  }
  Status broadcast(const TensorRef& t, int root) override {
    placeCaller();
    return collectives::ringBroadcast(*ring_, t.data, t.bytes(), root);
  }
  Status allgatherv(const TensorRef& mine, std::span<const size_t> bytesPerRank, void* out) override {
    placeCaller();
    return collectives::ringAllgatherv(*ring_, mine.data, bytesPerRank, out);
  }
  bool hasAdasum() const override { return true; }
  Status adasum(const TensorRef& t, std::span<const size_t> tensorCounts) override {
    placeCaller();
    return collectives::adasumAllreduce(*ring_, t.data, t.type, tensorCounts, adasumScratch_);
  }
  bool hasReducescatter() const override { return true; }
  // The ring's reduce-scatter phase moves half an allreduce's bytes; up to the small
  // allreduce's size its n - 1 steps lose to the arena's single round or recursive
  // doubling's log n (np=4 over TCP, 1 KiB: 112 us against 87), so the part comes out of
  // an allreduce there.
  Status reducescatter(const TensorRef& t, std::span<const size_t> countsPerRank, ReduceOp op, void* out) override {
    if (t.bytes() > collectives::kSmallAllreduceBytes) {
      placeCaller();
      return collectives::ringReduceScatterv(*ring_, t.data, countsPerRank, t.type, op, out);
    }
    const size_t rank = static_cast<size_t>(ring_->rank()), width = dataTypeSize(t.type);
    if (countsPerRank.size() != static_cast<size_t>(ring_->size())) {
      return Status(Errc::kInvalidArgument, "reducescatter: " + std::to_string(countsPerRank.size()) +
                                                " counts given for " + std::to_string(ring_->size()) + " ranks");
    }
    HVD_RETURN_IF_ERROR(allreduce(t, op));
    size_t before = 0;
    for (size_t k = 0; k < rank; ++k) before += countsPerRank[k];
    if (countsPerRank[rank] > 0) {
      std::memcpy(out, static_cast<const std::byte*>(t.data) + before * width, countsPerRank[rank] * width);
    }
    return Status::ok();
  }
  bool hasAlltoall() const override { return true; }
  Status alltoallv(const TensorRef& send, std::span<const size_t> bytesMatrix, void* out) override {
    placeCaller();
    return collectives::alltoallv(*ring_, send.data, bytesMatrix, out, bundles_);
  }
  Status barrier() override {
    if (!inArena(0)) return collectives::ringBarrier(*ring_);
    return hostAllreduce(*arena_, *ring_, {}, [](std::byte*, const std::byte*, collectives::Operands) {});
  }
  std::optional<int> peerGone() const override { return ring_->peerGone(); }
  void abandon(const Status& why) override { ring_->abandon(why); }
  // Ranks reach a timed cycle's control allreduce up to a cycle time apart (each on its own
  // timer), so spinning the data path's full budget there burns a core per waiting rank:
  // 1.3 s of CPU in 3 s of waiting at 1 ms cycles, measured. A short spin still catches
  // ranks that arrive together. A cycle that a blocked caller drives waits as data does:
  // with the short spin, np=2 over TCP ran 4 MiB allreduces in 1.5-1.8 ms, 1.0-1.2 without.
  Status agree(std::span<std::uint8_t> bytes, ControlWait wait) override {
    capFor(wait);
    Status s = inArena(bytes.size())
                   ? hostAllreduce(*arena_, *ring_, std::as_writable_bytes(bytes),
                                   [&](std::byte* dst, const std::byte* src, collectives::Operands) {
                                     collectives::reduceInto(dst, src, bytes.size(), DataType::kUInt8, ReduceOp::kMin);
                                   })
                   : collectives::allreduce(*ring_, bytes.data(), bytes.size(), DataType::kUInt8, ReduceOp::kMin,
                                            algorithm_);
    ring_->capSpin(std::nullopt);
    return s;
  }
  bool carriesRiders() const override { return true; }
  // The control bytes and the rider in one buffer, each reduced with its own operation.
  Status agree(std::span<std::uint8_t> bytes, const Rider& rider, ControlWait wait) override {
    const size_t head = (bytes.size() + 15) / 16 * 16;  // the rider's elements stay aligned
    const size_t riderBytes = rider.count * dataTypeSize(rider.type);
    combined_.assign(head + riderBytes, std::byte{0});
    std::memcpy(combined_.data(), bytes.data(), bytes.size());
    if (riderBytes > 0) std::memcpy(combined_.data() + head, rider.data, riderBytes);
    auto combine = [&](std::byte* dst, const std::byte* src, collectives::Operands order) {
      collectives::reduceInto(dst, src, bytes.size(), DataType::kUInt8, ReduceOp::kMin);
      collectives::reduceInto(dst + head, src + head, rider.count, rider.type, rider.op, order);
    };
    capFor(wait);
    Status s = inArena(combined_.size()) ? hostAllreduce(*arena_, *ring_, combined_, combine)
                                         : collectives::combineAllreduce(*ring_, combined_, combine);
    ring_->capSpin(std::nullopt);
    if (!s.isOk()) return s;
    std::memcpy(bytes.data(), combined_.data(), bytes.size());
    if (riderBytes > 0) std::memcpy(rider.data, combined_.data() + head, riderBytes);
    if (rider.op == ReduceOp::kAverage) collectives::divideForAverage(rider.data, rider.count, rider.type, ring_->size());
    return s;
  }

 private:
  // Whether a buffer of `bytes` goes through the arena (there is one only where the
  // algorithm was left to hvd): the latency-bound sizes that fit.
  bool inArena(size_t bytes) const {
    return arena_ && bytes <= std::min(arena_->capacity(), collectives::kSmallAllreduceBytes);
  }
  // Data collectives only: the engine's agreements come from whichever thread drives a
  // cycle, and are small enough that where their thread runs hardly matters.
  void placeCaller() {
    if (pin_) pin_->beforeCall(ring_->waitPolicy(), WaitPolicy::Clock::now());
  }
  void capFor(ControlWait wait) {
    if (wait == ControlWait::kBrief) ring_->capSpin(kControlSpin);
  }

  std::unique_ptr<TcpTransport> ring_;
  collectives::AllreduceAlgorithm algorithm_;
  std::vector<std::byte> combined_;  // agree's buffer with a rider
  std::vector<std::byte> bundles_;   // alltoall's blocks in flight
  std::unique_ptr<HostArena> arena_;
  std::vector<std::byte> adasumScratch_;  // collectives/adasum.h
  // Declared last, so it lets its thread go before the links close.
  std::unique_ptr<ContentionPin> pin_;
};

}  // namespace

std::unique_ptr<CollectiveBackend> ringCollectives(std::unique_ptr<TcpTransport> ring,
                                                   collectives::AllreduceAlgorithm algorithm,
                                                   std::unique_ptr<HostArena> arena,
                                                   std::unique_ptr<ContentionPin> pin) {
  return std::make_unique<RingCollectives>(std::move(ring), algorithm, std::move(arena), std::move(pin));
}

}  // namespace hvd::backends::tcp

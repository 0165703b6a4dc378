// runtime/backends/tcp/tcp_collectives.cc: forwarding to collectives/.
#include "runtime/backends/tcp/tcp_collectives.h"

#include "collectives/allreduce.h"
#include "collectives/ring_collectives.h"

namespace hvd::backends::tcp {
namespace {

class RingCollectives : public CollectiveBackend {
 public:
  RingCollectives(std::unique_ptr<TcpTransport> ring, collectives::AllreduceAlgorithm algorithm)
      : ring_(std::move(ring)), algorithm_(algorithm) {}
  std::string_view name() const override { return "tcp"; }
  Status allreduce(void* data, size_t count, collectives::DataType type, collectives::ReduceOp op) override {
    return collectives::allreduce(*ring_, data, count, type, op, algorithm_);
  }
  Status broadcast(void* data, size_t bytes, int root) override {
    return collectives::ringBroadcast(*ring_, data, bytes, root);
  }
  Status allgatherv(const void* mine, std::span<const size_t> bytesPerRank, void* out) override {
    return collectives::ringAllgatherv(*ring_, mine, bytesPerRank, out);
  }
  Status barrier() override { return collectives::ringBarrier(*ring_); }

 private:
  std::unique_ptr<TcpTransport> ring_;
  collectives::AllreduceAlgorithm algorithm_;
};

}  // namespace

std::unique_ptr<CollectiveBackend> ringCollectives(std::unique_ptr<TcpTransport> ring,
                                                   collectives::AllreduceAlgorithm algorithm) {
  return std::make_unique<RingCollectives>(std::move(ring), algorithm);
}

}  // namespace hvd::backends::tcp

// runtime/backends/tcp/tcp_ring.h: the ring over TCP. Each rank listens, publishes its
// address in the Store, connects to its right neighbour and accepts its left one; both
// connections prove the job's secret (HMAC) and the rank they come from. exchange() sends
// right and receives left at the same time (full duplex), so a ring step costs one
// message time, not two.
#pragma once

#include <chrono>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectives/transport.h"
#include "runtime/backends/tcp/shm_link.h"
#include "runtime/common/socket.h"
#include "runtime/common/store.h"

namespace hvd::backends::tcp {

struct TcpRingOptions {
  std::string advertiseHost = "127.0.0.1";  // how other ranks reach this one
  std::string secret;
  std::chrono::milliseconds timeout{30000};  // for setup and for every exchange
  // Non-blocking attempts without yielding before the spin budget's clock is looked at:
  // cuts a small message's latency ~6x when each rank has a core (no scheduler wake-up).
  int spinTries = 0;
  // Give the core away (sched_yield) between spin attempts: for ranks that outnumber
  // cores, whose peer may be waiting for this very core to run.
  bool yieldWhileSpinning = false;
  // Keep trying for this long since the last byte moved before sleeping (in poll(), or on
  // a futex when every pending direction is shared memory).
  std::chrono::microseconds spinBudget{2000};
  // Neighbours on the same host exchange through shared memory (shm_link.h) instead of
  // the kernel's TCP stack; the TCP connections stay, to notice a neighbour that dies.
  bool sharedMemory = true;
};

class TcpRing : public collectives::RingTransport {
 public:
  // Blocks until both neighbours are connected or the timeout passes.
  static Result<std::unique_ptr<TcpRing>> connect(int rank, int size, Store& store, const TcpRingOptions& options);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status exchange(std::span<const std::byte> send, std::span<std::byte> recv) override;
  // Over shared memory, hands the arriving bytes to `consume` straight from the buffer.
  Status exchangeInto(std::span<const std::byte> send, size_t recvBytes, size_t unit, const Consumer& consume) override;

  // Closes both connections at once, as a crash would (for failure tests).
  void abortForTest();

  // Which directions go through shared memory (for tests and reports).
  bool sendsThroughSharedMemory() const { return shmOut_.has_value(); }
  bool receivesThroughSharedMemory() const { return shmIn_.has_value(); }

 private:
  TcpRing(int rank, int size, std::chrono::milliseconds timeout) : rank_(rank), size_(size), timeout_(timeout) {}
  Status fail(Status status);
  Status setUpSharedMemory(const std::string& secret, Deadline deadline);
  // The one exchange loop, over TCP, shared memory or both; readShm(done, max) moves what
  // has arrived on a shared-memory receive side and returns the bytes taken.
  using ShmReader = std::function<size_t(size_t done, size_t max)>;
  Status exchangeLoop(std::span<const std::byte> send, std::span<std::byte> recv, size_t recvBytes,
                      const ShmReader& readShm);
  Status waitForProgress(bool sendPending, bool recvPending, Deadline deadline, const std::function<size_t()>& drainShm);

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  int spinTries_ = 0;
  bool yieldWhileSpinning_ = false;
  std::chrono::microseconds spinBudget_{2000};
  Socket right_, left_;
  std::optional<ShmLink> shmOut_, shmIn_;  // set when that neighbour shares this host
  std::vector<std::byte> scratch_;         // exchangeInto's receive space over TCP
  std::string rightName_, leftName_;  // "rank 3 (node02:41234)", for messages
  Status poisoned_;
};

}  // namespace hvd::backends::tcp

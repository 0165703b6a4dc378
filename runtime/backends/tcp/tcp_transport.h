// runtime/backends/tcp/tcp_transport.h: links to the peers the collectives need (ring
// neighbours and halving-doubling partners, collectivePeers in collectives/allreduce.h)
// over TCP. Each rank listens, publishes its address in the Store, connects to its
// higher-numbered peers and accepts the lower ones; every connection proves the job's
// secret (HMAC) and the rank it comes from. An exchange sends and receives at the same
// time (full duplex), so a step costs one message time, not two.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectives/transport.h"
#include "runtime/backends/tcp/shm_link.h"
#include "runtime/backends/tcp/wait_policy.h"
#include "runtime/backends/tcp/wake_word.h"
#include "runtime/common/socket.h"
#include "runtime/common/store.h"
#include "runtime/common/wait_deadline.h"

namespace hvd::backends::tcp {

struct TcpTransportOptions {
  std::string advertiseHost = "127.0.0.1";  // how other ranks reach this one
  std::string secret;
  std::chrono::milliseconds timeout{30000};  // for setup and for every exchange
  // How a wait spins before it sleeps (in poll(), or on a futex when every pending direction
  // is shared memory): the backend's opener gives a policy for this host's cores and ranks;
  // ranks as threads in tests spin, yielding between tries, for up to 2 ms.
  WaitPolicy waiting{WaitPolicy::Spin{0, false, std::chrono::microseconds(2000)}};
  // Peers on the same host exchange through shared memory (shm_link.h) instead of the
  // kernel's TCP stack; the TCP connections stay, to notice a peer that dies.
  bool sharedMemory = true;
  // This rank's host in the job's plan (its cross rank), published with its address: ranks
  // the plan puts on different hosts never share memory, even where the "hosts" share one
  // kernel (containers, network namespaces) and could map each other's buffers, so traffic
  // between hosts always takes the network. -1: not known; offered to every peer.
  int host = -1;
};

// exchangeWithInto's receive block over TCP: the caller reduces one while the next arrives.
inline constexpr size_t kTcpPieceBytes = 64 * 1024;

// Where a rank's ring listener binds (runtime/common/socket.h).
using ::hvd::listenAddressFor;

class TcpTransport : public collectives::Transport {
 public:
  // Blocks until every peer is connected or the timeout passes.
  static Result<std::unique_ptr<TcpTransport>> connect(int rank, int size, Store& store, const TcpTransportOptions& options);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status exchangeWith(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) override;
  // Hands the arriving bytes to `consume` as they come: straight from the shared buffer,
  // or over TCP from a block of kTcpPieceBytes.
  Status exchangeWithInto(int to, std::span<const std::byte> send, int from, size_t recvBytes, size_t unit,
                          const Consumer& consume) override;
  Status relay(int from, int to, std::span<std::byte> data) override;

  // The engine's control path waits for peers' next cycle, not for data in flight, so it
  // spins less: within `cap`'s tries and budget until capSpin(std::nullopt).
  void capSpin(std::optional<WaitPolicy::Spin> cap) { spinCap_ = cap; }
  const WaitPolicy& waitPolicy() const { return policy_; }
  // The host's board (host_board.h), for the wait policy: once the local ranks have met.
  void shareBoard(std::shared_ptr<HostBoard> board, int localRank) {
    policy_.shareBoard(std::move(board), localRank);
  }

  // A wait on shared memory outside the links (host_arena.h), as the links' waits go: the
  // policy's spin, then sleeps while the word maySleep() gives holds its value (nullopt: no
  // sleep), awake() after each, looking at every link's socket each kDeathCheck for a peer
  // that went, until done(), the timeout (naming late(), the ranks waited for) or a peer's
  // failure. Poisons the transport as an exchange does; fails at once when it is poisoned
  // already.
  struct SharedWait {
    std::function<bool()> done;
    std::function<std::optional<SleepOn>()> maySleep;
    std::function<void()> awake;
    std::function<std::vector<int>()> late;
  };
  Status waitShared(const SharedWait& wait);
  // The first error, once the transport is poisoned; ok before.
  const Status& health() const { return poisoned_; }

  // Poisons the transport with `why` and closes every connection, as a crash would: the
  // rank failed outside the transport (CollectiveBackend::abandon). Nothing when poisoned.
  void abandon(Status why) { (void)fail(std::move(why)); }
  // Closes every connection at once, as a crash would (for failure tests).
  void abortForTest();
  // The peer whose closed connection poisoned this transport, when that is what did.
  std::optional<int> peerGone() const { return peerGone_; }

  // Whether the link to `peer` goes through shared memory (for tests and reports).
  bool sharedMemoryWith(int peer) const;
  std::vector<int> peers() const;

 private:
  // One peer: a TCP connection, and a shared-memory buffer each way when the peer shares
  // this host (both directions or neither, so both ends agree on what the socket carries).
  struct Link {
    int peer = -1;
    Socket socket;
    std::optional<ShmLink> shmOut, shmIn;
    std::string name;  // "rank 3 (node02:41234)", for messages
    int host = -1;     // the peer's host in the plan, -1 when not said
  };

  TcpTransport(int rank, int size, std::chrono::milliseconds timeout, const WaitPolicy& waiting)
      : rank_(rank), size_(size), timeout_(timeout), policy_(waiting) {}
  // Poisons the transport with the first error and closes every link, so that each peer
  // fails at once too (`rank R ... closed its connection`), not at its timeout.
  Status fail(Status status);
  // fail() because `link`'s peer closed its connection (it died or exited).
  Status lost(const Link& link);
  // The links a call uses (null for a direction it does not use); kInvalidArgument for a
  // rank that is not a peer.
  Status linksFor(int to, bool sending, int from, bool receiving, Link*& out, Link*& in);
  Status setUpSharedMemory(const std::string& secret, int host, Store& store, Deadline deadline);
  // The one exchange loop, over TCP, shared memory or both; receive(done, max) moves what
  // has arrived (done bytes so far, at most max more) and returns the bytes taken, 0 when
  // none have arrived, -1 when the connection closed; it is not called when `in` is null.
  // `out` is null when there is nothing to send, `in` when there is nothing to receive.
  // With `forward`, send is the receive buffer itself and only what has arrived is sent.
  using Receiver = std::function<ssize_t(size_t done, size_t max)>;
  Status exchangeLoop(Link* out, std::span<const std::byte> send, Link* in, size_t recvBytes,
                      const Receiver& receive, bool forward = false);
  // Receives into base + done, from shared memory or the socket.
  static Receiver receiverInto(Link* in, std::byte* base);
  // A wait's spin, from the policy (and the engine's cap), its thread's slice asked for.
  SpinLoop startSpin();
  // Fails with lost() when a peer closed its connection, naming one of `suspects` first
  // where one of them did; between collectives nothing else arrives on a socket.
  Status watchLinks(const std::vector<int>& suspects);
  Status waitForProgress(Link* out, Link* in, WaitDeadline& deadline, const std::function<size_t()>& drainShm);

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  WaitPolicy policy_;
  std::optional<WaitPolicy::Spin> spinCap_;
  std::vector<Link> links_;        // sorted by peer; fixed after connect
  std::vector<std::byte> scratch_;  // exchangeWithInto's receive block over TCP
  Status poisoned_;
  std::optional<int> peerGone_;  // set with poisoned_ by lost()
};

}  // namespace hvd::backends::tcp

// runtime/backends/tcp/tcp_ring.cc: setup handshake and the full-duplex exchange loop.
#include "runtime/backends/tcp/tcp_ring.h"

#include <sched.h>

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "runtime/backends/tcp/wake_word.h"
#include "runtime/common/hex.h"
#include "runtime/common/sha256.h"

namespace hvd::backends::tcp {
namespace {

std::string proofFor(const std::string& secret, int rank) {
  Sha256Digest d = hmacSha256(secret, "hvd-ring-v1/" + std::to_string(rank));
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

// How long a rank sleeping on shared memory goes without looking at its sockets for a
// neighbour that died (a live one wakes it as soon as it moves data).
constexpr std::chrono::microseconds kDeathCheck{10000};

int remainingMs(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

Result<std::unique_ptr<TcpRing>> TcpRing::connect(int rank, int size, Store& store, const TcpRingOptions& options) {
  std::unique_ptr<TcpRing> ring(new TcpRing(rank, size, options.timeout));
  ring->spinTries_ = options.spinTries;
  ring->yieldWhileSpinning_ = options.yieldWhileSpinning;
  ring->spinBudget_ = options.spinBudget;
  if (size == 1) return ring;
  Deadline deadline = deadlineIn(options.timeout);
  auto listener = Socket::listen("0.0.0.0", 0);
  if (!listener) return listener.status();
  std::string self = options.advertiseHost + ":" + std::to_string(listener->localPort());
  HVD_RETURN_IF_ERROR(store.set("ring/" + std::to_string(rank), self));
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  auto rightAddr = store.get("ring/" + std::to_string(right), options.timeout);
  if (!rightAddr) return rightAddr.status().withContext("waiting for rank " + std::to_string(right) + "'s address");
  size_t colon = rightAddr->rfind(':');
  auto out = Socket::connect(rightAddr->substr(0, colon), std::atoi(rightAddr->c_str() + colon + 1), deadline);
  if (!out) return out.status().withContext("connecting to rank " + std::to_string(right));
  // Say who we are, with the proof that we belong to the job.
  HVD_RETURN_IF_ERROR(out->sendFrame(std::to_string(rank) + ":" + proofFor(options.secret, rank), deadline));
  ring->right_ = std::move(*out);
  ring->rightName_ = "rank " + std::to_string(right) + " (" + *rightAddr + ")";
  // Accept until the left neighbour arrives with a valid proof; anything else is dropped.
  while (true) {
    auto in = listener->accept(deadline);
    if (!in) return in.status().withContext("waiting for rank " + std::to_string(left) + " to connect");
    auto hello = in->recvFrame(128, deadline);
    if (!hello) continue;
    size_t sep = hello->find(':');
    if (sep == std::string::npos || hello->substr(0, sep) != std::to_string(left) ||
        hello->substr(sep + 1) != proofFor(options.secret, left)) {
      continue;
    }
    ring->left_ = std::move(*in);
    ring->leftName_ = "rank " + std::to_string(left) + " (" + ring->left_.peerName() + ")";
    if (options.sharedMemory) HVD_RETURN_IF_ERROR(ring->setUpSharedMemory(options.secret, deadline));
    return ring;
  }
}

Status TcpRing::fail(Status status) {
  if (poisoned_.isOk()) poisoned_ = status;
  return poisoned_;
}

Status TcpRing::exchange(std::span<const std::byte> send, std::span<std::byte> recv) {
  if (!poisoned_.isOk()) return poisoned_;
  if (size_ == 1) return Status::ok();
  return exchangeLoop(send, recv, recv.size(),
                      [&](size_t done, size_t max) { return shmIn_->read(recv.data() + done, max); });
}

// Each rank offers its left neighbour an inbox by name over the TCP link; the neighbour
// answers OK when it could map it (it is on this host) and NO otherwise, so both ends of
// every link agree on shared memory or TCP. Frames: send on one link, then receive on the
// other, in the same order on every rank, so no rank waits for one that waits for it.
Status TcpRing::setUpSharedMemory(const std::string& secret, Deadline deadline) {
  Sha256Digest tag = hmacSha256(secret, "hvd-shm-v1/" + std::to_string(rank_) + "/" + std::to_string(::getpid()));
  std::string name = "/hvd-" + toHex(tag.data(), 8) + "-" + std::to_string(rank_);
  auto inbox = ShmLink::create(name);
  HVD_RETURN_IF_ERROR(left_.sendFrame("SHM:" + std::string(inbox ? name : ""), deadline));
  auto offer = right_.recvFrame(256, deadline);
  if (!offer || offer->rfind("SHM:", 0) != 0) {
    if (inbox) ShmLink::unlink(name);
    return Status(Errc::kRemote, rightName_ + " did not answer the shared-memory offer");
  }
  std::string theirs = offer->substr(4);
  if (!theirs.empty()) {
    auto outbox = ShmLink::open(theirs);
    if (outbox) shmOut_ = std::move(*outbox);
  }
  HVD_RETURN_IF_ERROR(right_.sendFrame(shmOut_ ? "OK" : "NO", deadline));
  auto answer = left_.recvFrame(16, deadline);
  if (inbox) ShmLink::unlink(name);  // mapped by both now, or not wanted
  if (!answer) return answer.status().withContext("waiting for " + leftName_ + "'s shared-memory answer");
  if (inbox && *answer == "OK") shmIn_ = std::move(*inbox);
  return Status::ok();
}

// Moves both directions without blocking, each over TCP or shared memory; when nothing
// has moved for the spin budget, sleeps until something can (waitForProgress).
Status TcpRing::exchangeLoop(std::span<const std::byte> send, std::span<std::byte> recv, size_t recvBytes,
                             const ShmReader& readShm) {
  Deadline deadline = deadlineIn(timeout_);
  size_t sent = 0, received = 0;
  int idle = 0;
  bool slept = false;  // since the last progress: then sleep again without spinning first
  Clock::time_point lastProgress = Clock::now();
  while (sent < send.size() || received < recvBytes) {
    bool moved = false;
    if (sent < send.size()) {
      if (shmOut_) {
        size_t k = shmOut_->write(send.data() + sent, send.size() - sent);
        sent += k, moved |= k > 0;
      } else {
        ssize_t k = ::send(right_.fd(), send.data() + sent, send.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) sent += static_cast<size_t>(k), moved = true;
        if (k < 0 && errno != EAGAIN && errno != EINTR) {
          return fail(Status(Errc::kRemote, rightName_ + " closed its connection (it failed or exited)"));
        }
      }
    }
    if (received < recvBytes) {
      if (shmIn_) {
        size_t k = readShm(received, recvBytes - received);
        received += k, moved |= k > 0;
      } else {
        ssize_t k = ::recv(left_.fd(), recv.data() + received, recvBytes - received, MSG_DONTWAIT);
        if (k > 0) received += static_cast<size_t>(k), moved = true;
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
          return fail(Status(Errc::kRemote, leftName_ + " closed its connection (it failed or exited)"));
        }
      }
    }
    if (moved) {
      idle = 0, slept = false;
      continue;
    }
    // A neighbour busy copying a few MiB takes about a millisecond: keep trying (yielding
    // the core when it is shared, or after the plain spins) for the spin budget since the
    // last progress before sleeping. A fixed number of tries ran out in microseconds and
    // then slept a whole millisecond per buffer-full (measured: 16 MiB allreduce at 1.2 GB/s).
    // A rank waiting long for a slow one spins once, then only sleeps (a 10 ms futex slice
    // ending with nothing moved does not earn another spin).
    if (idle++ == 0 && !slept) lastProgress = Clock::now();
    if (!slept && (idle < spinTries_ || (idle % 64 != 0) || Clock::now() - lastProgress < spinBudget_)) {
      if (yieldWhileSpinning_ || idle > spinTries_) ::sched_yield();
      continue;
    }
    if (Clock::now() >= deadline) {
      return fail(Status(Errc::kTimeout, received < recvBytes
                                             ? "no data from " + leftName_ + " within " + std::to_string(timeout_.count() / 1000.0).substr(0, 4) + " s"
                                             : "could not send to " + rightName_ + " within the timeout"));
    }
    HVD_RETURN_IF_ERROR(waitForProgress(sent < send.size(), received < recvBytes, deadline, [&] {
      size_t k = readShm(received, recvBytes - received);
      received += k;
      return k;
    }));
    slept = true;
  }
  return Status::ok();
}

// Sleeps until a pending direction can move, the deadline passes, or a neighbour goes.
// All pending directions through shared memory: a futex on their words, which the
// neighbour's next write or read wakes, in slices of kDeathCheck, after each of which the
// sockets are looked at. Otherwise poll() on the sockets: a TCP direction's data wakes it
// (and with a shared-memory direction pending too, it wakes every millisecond to look).
// On a shared-memory link the socket carries nothing, so readable means closed; what the
// neighbour wrote before it left is still in the buffer, so that is read first (drainShm).
Status TcpRing::waitForProgress(bool sendPending, bool recvPending, Deadline deadline,
                                const std::function<size_t()>& drainShm) {
  bool shmSend = sendPending && shmOut_, shmRecv = recvPending && shmIn_;
  bool allShared = (!sendPending || shmSend) && (!recvPending || shmRecv);
  int pollMs = 0;
  if (allShared) {
    std::atomic<uint32_t>* words[2];
    size_t n = 0;
    bool ready = false;
    if (shmRecv) ready |= (words[n] = shmIn_->readerMaySleep()) == nullptr, n += words[n] != nullptr;
    if (shmSend && !ready) ready |= (words[n] = shmOut_->writerMaySleep()) == nullptr, n += words[n] != nullptr;
    if (!ready) sleepWhileAllSet({words, n}, kDeathCheck);
    if (shmRecv) shmIn_->readerAwake();
    if (shmSend) shmOut_->writerAwake();
  } else {
    pollMs = (shmSend || shmRecv) ? 1 : remainingMs(deadline);
  }
  // Watch only the directions still pending: a neighbour that finished and left may
  // close its socket while this rank still talks to the other one.
  pollfd fds[2];
  int n = 0, leftIndex = -1, rightIndex = -1;
  if (recvPending) leftIndex = n, fds[n++] = {left_.fd(), POLLIN, 0};
  if (sendPending) rightIndex = n, fds[n++] = {right_.fd(), static_cast<short>(shmSend ? POLLIN : POLLOUT), 0};
  int rc = ::poll(fds, static_cast<nfds_t>(n), pollMs);
  if (rc < 0 && errno != EINTR) return fail(systemError("poll"));
  if (rc <= 0) return Status::ok();
  if (shmRecv && (fds[leftIndex].revents & (POLLIN | POLLHUP | POLLERR)) && drainShm() == 0) {
    return fail(Status(Errc::kRemote, leftName_ + " closed its connection (it failed or exited)"));
  }
  if (shmSend && (fds[rightIndex].revents & (POLLIN | POLLHUP | POLLERR))) {
    return fail(Status(Errc::kRemote, rightName_ + " closed its connection (it failed or exited)"));
  }
  return Status::ok();
}

Status TcpRing::exchangeInto(std::span<const std::byte> send, size_t recvBytes, size_t unit, const Consumer& consume) {
  if (!shmIn_) {
    // Nothing to gain over TCP: receive into scratch space, then hand it over at once.
    if (scratch_.size() < recvBytes) scratch_.resize(recvBytes);
    HVD_RETURN_IF_ERROR(exchange(send, {scratch_.data(), recvBytes}));
    if (recvBytes > 0) consume({scratch_.data(), recvBytes});
    return Status::ok();
  }
  if (!poisoned_.isOk()) return poisoned_;
  return exchangeLoop(send, {}, recvBytes,
                        [&](size_t, size_t max) { return shmIn_->consume(max, unit, consume); });
}

void TcpRing::abortForTest() {
  right_.shutdownBoth();
  left_.shutdownBoth();
}

}  // namespace hvd::backends::tcp

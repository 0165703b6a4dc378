// runtime/backends/tcp/tcp_ring.cc: setup handshake and the full-duplex poll loop.
#include "runtime/backends/tcp/tcp_ring.h"

#include <sched.h>

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "runtime/common/sha256.h"

namespace hvd::backends::tcp {
namespace {

std::string proofFor(const std::string& secret, int rank) {
  Sha256Digest d = hmacSha256(secret, "hvd-ring-v1/" + std::to_string(rank));
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

int remainingMs(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

Result<std::unique_ptr<TcpRing>> TcpRing::connect(int rank, int size, Store& store, const TcpRingOptions& options) {
  std::unique_ptr<TcpRing> ring(new TcpRing(rank, size, options.timeout));
  ring->spinTries_ = options.spinTries;
  ring->yieldWhileSpinning_ = options.yieldWhileSpinning;
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
  Deadline deadline = deadlineIn(timeout_);
  size_t sent = 0, received = 0;
  // Small messages: a short spin of non-blocking attempts before sleeping in poll() saves
  // the scheduler's wake-up on every ring step (where the peer is already running).
  for (int spin = 0; spin < spinTries_ && (sent < send.size() || received < recv.size()); ++spin) {
    if (sent < send.size()) {
      ssize_t k = ::send(right_.fd(), send.data() + sent, send.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0) sent += static_cast<size_t>(k);
    }
    if (received < recv.size()) {
      ssize_t k = ::recv(left_.fd(), recv.data() + received, recv.size() - received, MSG_DONTWAIT);
      if (k > 0) received += static_cast<size_t>(k);
      if (k == 0) return fail(Status(Errc::kRemote, leftName_ + " closed its connection (it failed or exited)"));
    }
    if (yieldWhileSpinning_) ::sched_yield();
  }
  while (sent < send.size() || received < recv.size()) {
    pollfd fds[2];
    int n = 0, sendIndex = -1, recvIndex = -1;
    if (sent < send.size()) sendIndex = n, fds[n++] = {right_.fd(), POLLOUT, 0};
    if (received < recv.size()) recvIndex = n, fds[n++] = {left_.fd(), POLLIN, 0};
    int rc = ::poll(fds, static_cast<nfds_t>(n), remainingMs(deadline));
    if (rc == 0) {
      return fail(Status(Errc::kTimeout, received < recv.size()
                                             ? "no data from " + leftName_ + " within " + std::to_string(timeout_.count() / 1000.0).substr(0, 4) + " s"
                                             : "could not send to " + rightName_ + " within the timeout"));
    }
    if (rc < 0) {
      if (errno == EINTR) continue;
      return fail(systemError("poll"));
    }
    if (sendIndex >= 0 && (fds[sendIndex].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t k = ::send(right_.fd(), send.data() + sent, send.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0) {
        sent += static_cast<size_t>(k);
      } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
        return fail(Status(Errc::kRemote, rightName_ + " closed its connection (it failed or exited)"));
      }
    }
    if (recvIndex >= 0 && (fds[recvIndex].revents & (POLLIN | POLLERR | POLLHUP))) {
      ssize_t k = ::recv(left_.fd(), recv.data() + received, recv.size() - received, MSG_DONTWAIT);
      if (k > 0) {
        received += static_cast<size_t>(k);
      } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
        return fail(Status(Errc::kRemote, leftName_ + " closed its connection (it failed or exited)"));
      }
    }
  }
  return Status::ok();
}

void TcpRing::abortForTest() {
  right_.shutdownBoth();
  left_.shutdownBoth();
}

}  // namespace hvd::backends::tcp

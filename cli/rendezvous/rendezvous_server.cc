// cli/rendezvous/rendezvous_server.cc: handshake, requests, orderly stop.
#include "cli/rendezvous/rendezvous_server.h"

#include <pthread.h>
#include <signal.h>
#include <sys/random.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "runtime/common/sha256.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {

using namespace std::chrono_literals;
using rendezvous::Op;
using rendezvous::Reply;

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::start(int port, std::string secret,
                                                                  const std::string& bindAddress) {
  auto listener = Socket::listen(bindAddress, port);
  if (!listener) return listener.status().withContext("starting the rendezvous server");
  std::unique_ptr<RendezvousServer> server(new RendezvousServer(std::move(*listener), std::move(secret)));
  // The server's threads (and the workers they start) must never take a signal: hvdrun's
  // supervisor waits for SIGCHLD, SIGINT, ... on a signalfd, which sees only signals that
  // no thread accepts. New threads inherit the creating thread's mask.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &previous);
  server->acceptor_ = std::thread([s = server.get()] { s->acceptLoop(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return server;
}

RendezvousServer::RendezvousServer(Socket listener, std::string secret)
    : listener_(std::move(listener)), secret_(std::move(secret)), port_(listener_.localPort()) {}

RendezvousServer::~RendezvousServer() {
  stopping_ = true;
  listener_.shutdownBoth();
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& w : workers_) w.socket->shutdownBoth();
  }
  changed_.notify_all();
  for (auto& w : workers_) w.thread.join();
  if (refused_ > 1) {
    std::fprintf(stderr, "hvdrun: warning: rendezvous: refused %zu clients in all without the job's secret\n",
                 refused_.load());
  }
}

void RendezvousServer::reapFinishedWorkers() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->done->load()) {
      it->thread.join();  // it has returned from serve(): joins at once
      it = workers_.erase(it);  // the last reference to its socket: the fd closes
    } else {
      ++it;
    }
  }
}

std::optional<std::string> RendezvousServer::value(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = store_.find(key);
  if (it == store_.end()) return std::nullopt;
  return it->second;
}

std::set<int> RendezvousServer::readyRanks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ready_;
}

void RendezvousServer::acceptLoop() {
  while (!stopping_) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reapFinishedWorkers();
    }
    auto connection = listener_.accept(deadlineIn(200ms));
    if (!connection) {
      if (stopping_) break;  // the destructor shut the listener down
      if (connection.status().code() != Errc::kTimeout) {
        // Out of descriptors (EMFILE) or another failure: say so once, and back off instead
        // of spinning; finished connections are reaped meanwhile, which frees descriptors.
        if (acceptFailures_++ == 0) {
          std::fprintf(stderr, "hvdrun: warning: rendezvous: cannot accept a connection: %s (retrying)\n",
                       connection.status().message().c_str());
        }
        std::this_thread::sleep_for(50ms);
      }
      continue;
    }
    auto shared = std::make_shared<Socket>(std::move(*connection));
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      std::thread thread([this, shared, done] {
        serve(shared);
        done->store(true);
      });
      workers_.push_back(Worker{std::move(thread), shared, done});
    } catch (const std::system_error& e) {
      // No thread to be had (ulimit -u, address space): this client is dropped; the rank
      // behind it retries or fails with a clear message on its side.
      std::fprintf(stderr, "hvdrun: warning: rendezvous: no thread for a connection from %s: %s\n",
                   shared->peerName().c_str(), e.what());
    }
  }
}

void RendezvousServer::serve(std::shared_ptr<Socket> connection) {
  // However this ends, the client sees the connection close at once (a refused client
  // must not wait for an answer that never comes).
  struct Closer {
    Socket& socket;
    ~Closer() { socket.shutdownBoth(); }
  } closer{*connection};
  // The handshake must finish promptly: a silent client cannot hold a thread for long.
  Deadline handshake = deadlineIn(10s);
  std::string challenge(rendezvous::kChallengeSize, '\0');
  if (::getrandom(challenge.data(), challenge.size(), 0) != static_cast<ssize_t>(challenge.size())) return;
  if (!connection->sendFrame(std::string(rendezvous::kGreeting) + challenge, handshake).isOk()) return;
  auto proof = connection->recvFrame(64, handshake);
  Sha256Digest expected = hmacSha256(secret_, std::string(rendezvous::kProofLabel) + challenge);
  Sha256Digest given{};
  bool valid = proof && proof->size() == given.size();
  if (valid) std::copy(proof->begin(), proof->end(), given.begin());
  if (!valid || !constantTimeEqual(given, expected)) {
    // A client that closed before answering (a port scan, a rank killed mid-handshake) is
    // no intruder; one that answered wrongly is, and only the first is named (the total
    // comes at the end): a flood must not flood hvdrun's stderr too.
    if (!proof) return;
    if (refused_++ == 0) {
      std::fprintf(stderr, "hvdrun: warning: rendezvous: refused a client from %s: it does not hold the job's secret\n",
                   connection->peerName().c_str());
    }
    return;
  }
  if (!connection->sendFrame("OK", handshake).isOk()) return;
  while (!stopping_) {
    auto request = connection->recvFrame(rendezvous::kMaxFrame, deadlineIn(24h));
    if (!request) return;  // the rank closed its connection, or we are stopping
    if (!connection->sendFrame(handle(*request), deadlineIn(30s)).isOk()) return;
  }
}

std::string RendezvousServer::handle(std::string_view request) {
  auto reply = [](Reply r, std::string_view value = {}) { return static_cast<char>(r) + std::string(value); };
  if (request.size() < 5) return reply(Reply::kError, "malformed request");
  uint32_t keySize = uint32_t(uint8_t(request[1])) << 24 | uint32_t(uint8_t(request[2])) << 16 |
                     uint32_t(uint8_t(request[3])) << 8 | uint8_t(request[4]);
  if (keySize > request.size() - 5) return reply(Reply::kError, "malformed request");
  std::string key(request.substr(5, keySize));
  std::string_view value = request.substr(5 + keySize);
  std::unique_lock<std::mutex> lock(mutex_);
  switch (static_cast<Op>(request[0])) {
    case Op::kSet: {
      store_[key] = std::string(value);
      if (key.rfind("ready/", 0) == 0) ready_.insert(std::atoi(key.c_str() + 6));
      changed_.notify_all();
      return reply(Reply::kOk);
    }
    case Op::kGet: {
      long long ms = 0;
      std::from_chars(value.data(), value.data() + value.size(), ms);
      Deadline deadline = deadlineIn(std::chrono::milliseconds(std::clamp<long long>(ms, 0, 24LL * 3600 * 1000)));
      changed_.wait_until(lock, deadline, [&] { return stopping_ || store_.count(key) > 0; });
      auto it = store_.find(key);
      return it == store_.end() ? reply(Reply::kTimeout) : reply(Reply::kOk, it->second);
    }
    case Op::kCheck:
      return reply(store_.count(key) ? Reply::kOk : Reply::kMissing);
    case Op::kAdd: {
      long long delta = 0, current = 0;
      std::from_chars(value.data(), value.data() + value.size(), delta);
      if (auto it = store_.find(key); it != store_.end()) std::from_chars(it->second.data(), it->second.data() + it->second.size(), current);
      store_[key] = std::to_string(current + delta);
      changed_.notify_all();
      return reply(Reply::kOk, store_[key]);
    }
  }
  return reply(Reply::kError, "unknown request");
}

}  // namespace hvd::cli

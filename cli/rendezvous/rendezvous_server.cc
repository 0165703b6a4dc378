// cli/rendezvous/rendezvous_server.cc: handshake, requests and orderly stop, in one poll
// loop over the listener and every connection.
#include "cli/rendezvous/rendezvous_server.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/common/hmac.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::cli {

using namespace std::chrono_literals;
using rendezvous::Op;
using rendezvous::Reply;

namespace {

// A client that does not read its replies is dropped once this much waits for it.
constexpr size_t kMaxPendingOutput = size_t{4} << 20;
// After accept() failed (out of descriptors) with nothing to shed: the listener rests.
constexpr auto kAcceptBackoff = 50ms;
// A rank answers the challenge within milliseconds: a connection silent this long is
// shed first when descriptors run out or too many wait for their handshake.
constexpr auto kShedAfter = 1s;
constexpr size_t kMaxUnproven = 1024;

// What the tally says, on stderr.
void warn(const std::optional<std::string>& line) {
  if (line) std::fprintf(stderr, "hvdrun: warning: rendezvous: %s\n", line->c_str());
}

}  // namespace

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::start(int port, std::string secret,
                                                                  const std::string& bindAddress,
                                                                  std::chrono::milliseconds handshake) {
  auto listener = Socket::listen(bindAddress, port);
  if (!listener) return listener.status().withContext("starting the rendezvous server");
  int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return systemError("starting the rendezvous server: eventfd");
  ::fcntl(listener->fd(), F_SETFL, ::fcntl(listener->fd(), F_GETFL) | O_NONBLOCK);
  std::unique_ptr<RendezvousServer> server(new RendezvousServer(std::move(*listener), std::move(secret), wake));
  server->handshake_ = handshake;
  // The server's thread must never take a signal: hvdrun's supervisor waits for SIGCHLD,
  // SIGINT, ... on a signalfd, which sees only signals that no thread accepts. New threads
  // inherit the creating thread's mask.
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &previous);
  server->thread_ = std::thread([s = server.get()] { s->loop(); });
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return server;
}

RendezvousServer::RendezvousServer(Socket listener, std::string secret, int wakeFd)
    : listener_(std::move(listener)), secret_(std::move(secret)), port_(listener_.localPort()), wakeFd_(wakeFd) {}

RendezvousServer::~RendezvousServer() {
  stopping_ = true;
  uint64_t one = 1;
  (void)!::write(wakeFd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  connections_.clear();  // closes every connection: waiting clients see it at once
  ::close(wakeFd_);
  warn(intruders_.summary());
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

void RendezvousServer::publish(const std::map<std::string, std::string>& values, const std::string& abandonPrefix,
                               const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, value] : values) {
      store_[key] = value;
      published_.push_back(key);
    }
    if (!abandonPrefix.empty()) abandoned_.emplace_back(abandonPrefix, why);
  }
  uint64_t one = 1;
  (void)!::write(wakeFd_, &one, sizeof one);
}

std::optional<std::string> RendezvousServer::abandonedWhy(const std::string& key) const {
  for (const auto& [prefix, why] : abandoned_) {
    if (key.rfind(prefix, 0) == 0) return why;
  }
  return std::nullopt;
}

void RendezvousServer::takePublished() {
  uint64_t count = 0;
  (void)!::read(wakeFd_, &count, sizeof count);
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keys.swap(published_);
  }
  for (const std::string& key : keys) answerWaiting(key);
  for (Connection& c : connections_) {
    if (!c.waitingKey || c.closing) continue;
    std::optional<std::string> why;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      why = abandonedWhy(*c.waitingKey);
    }
    if (!why) continue;
    c.waitingKey.reset();
    queueFrame(c, static_cast<char>(Reply::kError) + *why);
    writeTo(c);
  }
}

void RendezvousServer::loop() {
  std::vector<pollfd> fds;
  std::vector<Connection*> owners;
  while (!stopping_) {
    Clock::time_point now = Clock::now();
    // Deadlines first: a silent handshake is dropped, a waiting get answered kTimeout.
    for (Connection& c : connections_) {
      if (c.closing || now < c.deadline) continue;
      if (!c.proven) {
        warn(intruders_.note(Intrusion::kSilent, c.peer, 0, handshake_));
        drop(c);
      } else if (c.waitingKey) {
        c.waitingKey.reset();
        queueFrame(c, std::string(1, static_cast<char>(Reply::kTimeout)));
      }
    }
    connections_.remove_if([](const Connection& c) { return c.closing && c.out.empty(); });

    fds.clear();
    owners.clear();
    fds.push_back({wakeFd_, POLLIN, 0});
    bool listening = now >= acceptPausedUntil_;
    fds.push_back({listener_.fd(), static_cast<short>(listening ? POLLIN : 0), 0});
    Clock::time_point next = now + 24h;
    if (!listening) next = std::min(next, acceptPausedUntil_);
    for (Connection& c : connections_) {
      short events = c.closing ? 0 : POLLIN;
      if (!c.out.empty()) events |= POLLOUT;
      fds.push_back({c.socket.fd(), events, 0});
      owners.push_back(&c);
      if (!c.closing && (!c.proven || c.waitingKey)) next = std::min(next, c.deadline);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
    int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait, 0, 60000)));
    if (rc < 0 && errno != EINTR) {
      std::fprintf(stderr, "hvdrun: warning: rendezvous: poll failed: %s\n", std::strerror(errno));
      std::this_thread::sleep_for(kAcceptBackoff);
      continue;
    }
    if (rc <= 0 || stopping_) continue;
    if (fds[0].revents & POLLIN) takePublished();
    for (size_t i = 2; i < fds.size(); ++i) {
      Connection& c = *owners[i - 2];
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) readFrom(c);
      if ((fds[i].revents & POLLOUT) && !c.out.empty()) writeTo(c);
    }
    if (fds[1].revents & POLLIN) accept(Clock::now());
  }
}

void RendezvousServer::accept(Clock::time_point now) {
  while (true) {
    size_t unproven = static_cast<size_t>(std::count_if(connections_.begin(), connections_.end(),
                                                        [](const Connection& c) { return !c.proven; }));
    if (unproven >= kMaxUnproven && !shedSilent(now)) {
      acceptPausedUntil_ = now + kAcceptBackoff;
      return;
    }
    auto connection = listener_.accept(deadlineIn(0ms));
    if (!connection) {
      if (connection.status().code() == Errc::kTimeout) return;  // none left
      // Out of descriptors (EMFILE): silent connections (a flood's) make room first, so the
      // ranks queued behind them get in; else say so once and rest instead of spinning.
      if (shedSilent(now)) continue;
      if (acceptFailures_++ == 0) {
        std::fprintf(stderr, "hvdrun: warning: rendezvous: cannot accept a connection: %s (retrying)\n",
                     connection.status().message().c_str());
      }
      acceptPausedUntil_ = now + kAcceptBackoff;
      return;
    }
    Connection& c = connections_.emplace_back();
    c.socket = std::move(*connection);
    c.peer = c.socket.peerName();  // while it is known: a peer that closed has none
    c.accepted = now;
    c.deadline = now + handshake_;
    c.challenge.assign(rendezvous::kChallengeSize, '\0');
    if (::getrandom(c.challenge.data(), c.challenge.size(), 0) != static_cast<ssize_t>(c.challenge.size())) {
      drop(c);
      continue;
    }
    queueFrame(c, std::string(rendezvous::kGreeting) + c.challenge);
    writeTo(c);
  }
}

bool RendezvousServer::shedSilent(Clock::time_point now) {
  size_t before = connections_.size();
  connections_.remove_if([&](const Connection& c) { return !c.proven && now - c.accepted >= kShedAfter; });
  size_t shed = before - connections_.size();
  if (shed == 0) return false;
  warn(intruders_.noteShed(shed, std::chrono::duration_cast<std::chrono::milliseconds>(kShedAfter)));
  return true;
}

void RendezvousServer::drop(Connection& c) {
  c.out.clear();
  c.closing = true;
}

void RendezvousServer::queueFrame(Connection& c, std::string_view payload) {
  uint32_t size = static_cast<uint32_t>(payload.size());
  char header[4] = {static_cast<char>(size >> 24), static_cast<char>(size >> 16), static_cast<char>(size >> 8),
                    static_cast<char>(size)};
  c.out.append(header, 4);
  c.out.append(payload);
  if (c.out.size() > kMaxPendingOutput) {
    drop(c);
  }
}

void RendezvousServer::writeTo(Connection& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.socket.fd(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // the client is gone
      if (!c.proven && !c.closing) warn(intruders_.note(Intrusion::kClosedEarly, c.peer));
      drop(c);
      return;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
}

void RendezvousServer::readFrom(Connection& c) {
  char buf[65536];
  while (!c.closing) {
    ssize_t n = ::recv(c.socket.fd(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // closed (a rank that ended, a port scan) or reset
      if (!c.proven) warn(intruders_.note(Intrusion::kClosedEarly, c.peer));
      drop(c);
      return;
    }
    c.in.append(buf, static_cast<size_t>(n));
    // Whole frames: a 4-byte length, then that many bytes.
    while (c.in.size() >= 4 && !c.closing) {
      uint32_t size = uint32_t(uint8_t(c.in[0])) << 24 | uint32_t(uint8_t(c.in[1])) << 16 |
                      uint32_t(uint8_t(c.in[2])) << 8 | uint8_t(c.in[3]);
      size_t limit = c.proven ? rendezvous::kMaxFrame : 64;
      if (size > limit) {  // not a client of ours, or a broken one
        if (!c.proven) warn(intruders_.note(Intrusion::kOversized, c.peer, size));
        drop(c);
        return;
      }
      if (c.in.size() < 4 + size) break;
      std::string frame = c.in.substr(4, size);
      c.in.erase(0, 4 + size);
      onFrame(c, std::move(frame));
    }
  }
  if (!c.out.empty()) writeTo(c);
}

void RendezvousServer::onFrame(Connection& c, std::string frame) {
  if (!c.proven) {
    onProof(c, frame);
    return;
  }
  if (c.waitingKey) {  // one request at a time: a client that does not wait is broken
    drop(c);
    return;
  }
  if (auto reply = handle(c, frame)) queueFrame(c, *reply);
}

void RendezvousServer::onProof(Connection& c, const std::string& proof) {
  HmacDigest expected = hmacSha256(secret_, std::string(rendezvous::kProofLabel) + c.challenge);
  HmacDigest given{};
  bool valid = proof.size() == given.size();
  if (valid) std::copy(proof.begin(), proof.end(), given.begin());
  if (!valid || !constantTimeEqual(given, expected)) {
    // An intruder: only the first of its kind is named, the total comes at the end
    // (intruder_tally.h). It sees its connection close at once.
    warn(intruders_.note(valid ? Intrusion::kWrongSecret : Intrusion::kNotAProof, c.peer, proof.size()));
    drop(c);
    return;
  }
  c.proven = true;
  queueFrame(c, "OK");
}

std::optional<std::string> RendezvousServer::handle(Connection& c, std::string_view request) {
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
      lock.unlock();
      answerWaiting(key);
      if (onSet_) onSet_(key, std::string(value));
      return reply(Reply::kOk);
    }
    case Op::kGet: {
      if (auto why = abandonedWhy(key)) return reply(Reply::kError, *why);
      if (auto it = store_.find(key); it != store_.end()) return reply(Reply::kOk, it->second);
      long long ms = 0;
      std::from_chars(value.data(), value.data() + value.size(), ms);
      c.waitingKey = key;
      c.deadline = Clock::now() + std::chrono::milliseconds(std::clamp<long long>(ms, 0, 24LL * 3600 * 1000));
      return std::nullopt;
    }
    case Op::kCheck:
      return reply(store_.count(key) ? Reply::kOk : Reply::kMissing);
    case Op::kAdd: {
      long long delta = 0, current = 0;
      std::from_chars(value.data(), value.data() + value.size(), delta);
      if (auto it = store_.find(key); it != store_.end()) std::from_chars(it->second.data(), it->second.data() + it->second.size(), current);
      std::string now = std::to_string(current + delta);
      store_[key] = now;
      lock.unlock();
      answerWaiting(key);
      return reply(Reply::kOk, now);
    }
    case Op::kClaim: {
      auto [it, fresh] = store_.try_emplace(key, value);
      return fresh || it->second == value ? reply(Reply::kOk) : reply(Reply::kTaken, it->second);
    }
  }
  return reply(Reply::kError, "unknown request");
}

void RendezvousServer::answerWaiting(const std::string& key) {
  std::string value;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    value = store_[key];
  }
  for (Connection& c : connections_) {
    if (!c.waitingKey || *c.waitingKey != key || c.closing) continue;
    c.waitingKey.reset();
    queueFrame(c, static_cast<char>(Reply::kOk) + value);
    writeTo(c);
  }
}

}  // namespace hvd::cli

// runtime/rendezvous/client.cc: the challenge-response handshake and the four requests.
#include "runtime/rendezvous/client.h"

#include <cstdlib>

#include "runtime/common/hmac.h"
#include "runtime/rendezvous/protocol.h"

namespace hvd::rendezvous {

using namespace std::chrono_literals;

Result<Client> Client::connect(const std::string& host, int port, const std::string& secret,
                               std::chrono::milliseconds timeout) {
  std::string server = "hvdrun's rendezvous at " + host + ":" + std::to_string(port);
  Deadline deadline = deadlineIn(timeout);
  // hvdrun's server listens before any rank starts: refused for 3 s means it has gone.
  auto socket = Socket::connect(host, port, deadline, 3s);
  if (!socket) {
    Status s = socket.status().withContext(server);
    if (s.message().find("Connection refused") != std::string::npos) {
      return s.withHint("nothing listens there: the hvdrun that started this rank has ended, or HVD_RENDEZVOUS_PORT is wrong");
    }
    return s;
  }
  auto challenge = socket->recvFrame(64, deadline);
  if (!challenge) return challenge.status().withContext(server);
  if (challenge->size() != kGreeting.size() + kChallengeSize || challenge->compare(0, kGreeting.size(), kGreeting) != 0) {
    return Status(Errc::kRemote, server + " does not speak the rendezvous protocol");
  }
  HmacDigest proof = hmacSha256(secret, std::string(kProofLabel) + challenge->substr(kGreeting.size()));
  HVD_RETURN_IF_ERROR(socket->sendFrame(std::string_view(reinterpret_cast<const char*>(proof.data()), proof.size()), deadline));
  auto ok = socket->recvFrame(16, deadline);
  if (!ok || *ok != "OK") {
    return Status(Errc::kRemote, server + " refused this client: the secret (HVD_SECRET_KEY) does not match the job's");
  }
  return Client(std::move(*socket), server);
}

Result<Client> Client::fromEnvironment(const EnvSnapshot& env, std::chrono::milliseconds timeout) {
  if (!env.isSet("HVD_RENDEZVOUS_ADDR") || !env.isSet("HVD_RENDEZVOUS_PORT") || !env.isSet("HVD_SECRET_KEY")) {
    return notFound("HVD_RENDEZVOUS_ADDR, HVD_RENDEZVOUS_PORT and HVD_SECRET_KEY are not all set: start with hvdrun");
  }
  return connect(env.text("HVD_RENDEZVOUS_ADDR"), static_cast<int>(env.integer("HVD_RENDEZVOUS_PORT")),
                 env.text("HVD_SECRET_KEY"), timeout);
}

Result<Client> Client::fromEnvironment(std::chrono::milliseconds timeout) {
  auto env = EnvSnapshot::fromProcess();
  if (!env) return env.status();
  return fromEnvironment(*env, timeout);
}

Result<std::string> Client::call(const std::string& request, std::chrono::milliseconds timeout) {
  Deadline deadline = deadlineIn(timeout + 5s);  // the server answers a wait at its own deadline
  HVD_RETURN_IF_ERROR(socket_.sendFrame(request, deadline));
  auto reply = socket_.recvFrame(kMaxFrame, deadline);
  if (!reply) return reply.status().withContext(server_);
  if (reply->empty()) return Status(Errc::kRemote, server_ + " sent an empty reply");
  return reply;
}

Status Client::set(const std::string& key, const std::string& value) {
  auto r = call(encodeRequest(Op::kSet, key, value), 10s);
  if (!r) return r.status();
  return (*r)[0] == static_cast<char>(Reply::kOk) ? Status::ok() : Status(Errc::kRemote, server_ + " refused to set " + key);
}

Result<std::string> Client::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::string ms = std::to_string(timeout.count());
  auto r = call(encodeRequest(Op::kGet, key, ms), timeout);
  if (!r) return r.status();
  if ((*r)[0] == static_cast<char>(Reply::kOk)) return r->substr(1);
  if ((*r)[0] == static_cast<char>(Reply::kTimeout)) {
    return Status(Errc::kTimeout, "'" + key + "' was not set at " + server_ + " within " + ms + " ms");
  }
  // The server's reason, when it gave one (an elastic job's world changed under this get).
  if ((*r)[0] == static_cast<char>(Reply::kError) && r->size() > 1) return Status(Errc::kRemote, r->substr(1));
  return Status(Errc::kRemote, server_ + " could not get " + key);
}

Result<bool> Client::check(const std::string& key) {
  auto r = call(encodeRequest(Op::kCheck, key, ""), 10s);
  if (!r) return r.status();
  return (*r)[0] == static_cast<char>(Reply::kOk);
}

Result<std::optional<std::string>> Client::claim(const std::string& key, const std::string& who) {
  auto r = call(encodeRequest(Op::kClaim, key, who), 10s);
  if (!r) return r.status();
  if ((*r)[0] == static_cast<char>(Reply::kOk)) return std::optional<std::string>();
  if ((*r)[0] == static_cast<char>(Reply::kTaken)) return std::optional<std::string>(r->substr(1));
  return Status(Errc::kRemote, server_ + " could not claim " + key + ": " + r->substr(1));
}

Result<long long> Client::add(const std::string& key, long long delta) {
  auto r = call(encodeRequest(Op::kAdd, key, std::to_string(delta)), 10s);
  if (!r) return r.status();
  if ((*r)[0] != static_cast<char>(Reply::kOk)) return Status(Errc::kRemote, server_ + ": " + r->substr(1));
  return std::atoll(r->c_str() + 1);
}

}  // namespace hvd::rendezvous

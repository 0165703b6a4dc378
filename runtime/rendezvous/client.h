// runtime/rendezvous/client.h: a rank's connection to hvdrun's rendezvous store, for
// building a communicator (addresses, readiness), never inside a collective.
// Not thread-safe: one thread uses a client at a time. Every call blocks at most until
// its timeout; errors name the server and say what failed.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "runtime/common/env_registry.h"
#include "runtime/common/socket.h"
#include "runtime/common/status.h"

namespace hvd::rendezvous {

class Client {
 public:
  // Connects and proves the secret. kUnavailable / kTimeout when the server cannot be
  // reached; kRemote when it closes the connection (a wrong secret).
  static Result<Client> connect(const std::string& host, int port, const std::string& secret,
                                std::chrono::milliseconds timeout);

  // From HVD_RENDEZVOUS_ADDR, HVD_RENDEZVOUS_PORT and HVD_SECRET_KEY; kNotFound when unset,
  // kInvalidArgument when malformed.
  static Result<Client> fromEnvironment(const EnvSnapshot& env, std::chrono::milliseconds timeout);
  static Result<Client> fromEnvironment(std::chrono::milliseconds timeout);  // the process's

  Status set(const std::string& key, const std::string& value);
  Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout);  // waits for the key
  Result<bool> check(const std::string& key);
  Result<long long> add(const std::string& key, long long delta);
  // Claims key as `who` (Op::kClaim): nullopt once claimed, else who holds it.
  Result<std::optional<std::string>> claim(const std::string& key, const std::string& who);

 private:
  explicit Client(Socket socket, std::string server) : socket_(std::move(socket)), server_(std::move(server)) {}
  Result<std::string> call(const std::string& request, std::chrono::milliseconds timeout);

  Socket socket_;
  std::string server_;
};

}  // namespace hvd::rendezvous

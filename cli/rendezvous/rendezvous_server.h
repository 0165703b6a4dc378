// cli/rendezvous/rendezvous_server.h: hvdrun's key/value store for its ranks
// (runtime/rendezvous/protocol.h). Every connection must prove it holds the job's secret
// before it may read or write; a client that cannot is logged once and dropped, and the
// job goes on. A thread per connection: a job has one connection per rank at most.
#pragma once

#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/common/socket.h"
#include "runtime/common/status.h"

namespace hvd::cli {

class RendezvousServer {
 public:
  // Listens on `bindAddress` ("127.0.0.1" for a job on this machine alone, so nothing
  // outside it can reach the server; "0.0.0.0": every interface), on `port` (0: any free
  // port). Returns once listening.
  static Result<std::unique_ptr<RendezvousServer>> start(int port, std::string secret,
                                                         const std::string& bindAddress = "0.0.0.0");
  ~RendezvousServer();  // stops accepting, closes every connection, joins the threads

  int port() const { return port_; }
  std::set<int> readyRanks() const;        // ranks that set ready/<rank>
  std::optional<std::string> value(const std::string& key) const;  // what a rank stored, if any
  size_t refusedClients() const { return refused_; }

 private:
  RendezvousServer(Socket listener, std::string secret);
  void acceptLoop();
  void serve(std::shared_ptr<Socket> connection);
  std::string handle(std::string_view request);

  Socket listener_;
  std::string secret_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> refused_{0};
  std::thread acceptor_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> store_;
  std::set<int> ready_;
  // One per connection being served; finished ones are joined and their sockets closed by
  // the accept loop, so connect-and-close from anyone leaks neither fds nor threads.
  struct Worker {
    std::thread thread;
    std::shared_ptr<Socket> socket;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<Worker> workers_;
  void reapFinishedWorkers();  // with mutex_ held
  size_t acceptFailures_ = 0;  // accept thread only
};

}  // namespace hvd::cli

// cli/rendezvous/rendezvous_server.h: hvdrun's key/value store for its ranks
// (runtime/rendezvous/protocol.h). Every connection must prove it holds the job's secret
// before it may read or write; a client that cannot is logged once and dropped, and the
// job goes on. One thread serves every connection (a poll loop): a rank keeps its
// connection for the whole job, so a thread each cost hvdrun 400 threads for 400 ranks.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/rendezvous/intruder_tally.h"
#include "runtime/common/socket.h"
#include "runtime/common/status.h"

namespace hvd::cli {

class RendezvousServer {
 public:
  // Listens on `bindAddress` ("127.0.0.1" for a job on this machine alone, so nothing
  // outside it can reach the server; "0.0.0.0": every interface), on `port` (0: any free
  // port). Returns once listening.
  // `handshake`: how long a new connection may take to prove itself.
  static Result<std::unique_ptr<RendezvousServer>> start(int port, std::string secret,
                                                         const std::string& bindAddress = "0.0.0.0",
                                                         std::chrono::milliseconds handshake = std::chrono::seconds(10));
  ~RendezvousServer();  // stops serving, closes every connection, joins the thread

  int port() const { return port_; }
  std::set<int> readyRanks() const;        // ranks that set ready/<rank>
  std::optional<std::string> value(const std::string& key) const;  // what a rank stored, if any
  size_t refusedClients() const { return intruders_.count(Intrusion::kWrongSecret); }
  const IntruderTally& intruders() const { return intruders_; }

  // Elastic training (elastic_world.h): stores `values`, answering gets that wait for them,
  // and abandons every key under `abandonPrefix` (empty: none): a get waiting for one, or
  // asking for one later, is answered with an error saying `why`. A rank still joining a
  // world that has changed under it fails at once, instead of waiting for a peer that left.
  void publish(const std::map<std::string, std::string>& values, const std::string& abandonPrefix,
               const std::string& why);
  // Called on the server's thread after each key a client sets (an elastic job under srun
  // learns of its ranks' ends from the task shims' reports this way). Set before any rank
  // starts; it may publish().
  void onSet(std::function<void(const std::string& key, const std::string& value)> callback) {
    onSet_ = std::move(callback);
  }

 private:
  using Clock = std::chrono::steady_clock;
  // One client. Bytes in and out are buffered; a get whose key is missing waits here
  // (waitingKey) until a set or add of that key, or its deadline.
  struct Connection {
    Socket socket;
    bool proven = false;  // it answered the challenge with the secret
    std::string peer;     // its address, for what the intruder tally says
    Clock::time_point accepted;
    std::string challenge;
    std::string in, out;
    Clock::time_point deadline;  // the handshake's, or a waiting get's
    std::optional<std::string> waitingKey;
    bool closing = false;  // drop once `out` is sent (or at once when empty)
  };

  RendezvousServer(Socket listener, std::string secret, int wakeFd);
  void loop();
  void accept(Clock::time_point now);
  bool shedSilent(Clock::time_point now);  // drops unproven connections silent for long; any?
  void readFrom(Connection& c);
  void writeTo(Connection& c);
  void onFrame(Connection& c, std::string frame);
  void onProof(Connection& c, const std::string& proof);
  // A request's reply, or nothing for a get that waits for its key.
  std::optional<std::string> handle(Connection& c, std::string_view request);
  void answerWaiting(const std::string& key);  // after the key was set
  void takePublished();                        // the loop's side of publish()
  std::optional<std::string> abandonedWhy(const std::string& key) const;  // under mutex_
  static void queueFrame(Connection& c, std::string_view payload);  // drops a client that does not read
  static void drop(Connection& c);  // closed at the loop's next turn, nothing more sent

  Socket listener_;
  std::string secret_;
  int port_ = 0;
  int wakeFd_ = -1;  // an eventfd the destructor writes to end the loop
  std::atomic<bool> stopping_{false};
  IntruderTally intruders_;
  std::chrono::milliseconds handshake_{10000};
  std::thread thread_;
  std::list<Connection> connections_;  // the loop's own
  size_t acceptFailures_ = 0;          // the loop's own
  Clock::time_point acceptPausedUntil_{};

  mutable std::mutex mutex_;  // the store, read by hvdrun's other threads
  std::map<std::string, std::string> store_;
  std::set<int> ready_;
  std::function<void(const std::string&, const std::string&)> onSet_;
  std::vector<std::string> published_;                          // keys publish() set, for the loop
  std::vector<std::pair<std::string, std::string>> abandoned_;  // prefix, why
};

}  // namespace hvd::cli

// tests/e2e/rendezvous_e2e_test.cc: hvdrun's rendezvous server with real clients: the
// store's four operations, refusal of clients without the secret, and --start-timeout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>
#include <thread>

#include "cli/rendezvous/rendezvous_server.h"
#include "runtime/common/socket.h"
#include "runtime/rendezvous/client.h"
#include "runtime/rendezvous/protocol.h"
#include "tests/support/hvdrun_runner.h"

using namespace std::chrono_literals;
using hvd::rendezvous::Client;
using hvd::test::environmentWith;
using hvd::test::runHvdrun;
using hvd::test::withEnv;

namespace {

const std::string kRank = HVD_TEST_RANK_PATH;

std::vector<std::string> plainEnv() {
  return environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent/slurm.conf", "CUDA_VISIBLE_DEVICES"});
}

}  // namespace

TEST_CASE("clients holding the secret set, get, check and add keys; a get waits for its key", "[unit][mp]") {
  auto server = hvd::cli::RendezvousServer::start(0, "s3cret");
  REQUIRE(server.isOk());
  int port = (*server)->port();
  auto a = Client::connect("127.0.0.1", port, "s3cret", 5s);
  auto b = Client::connect("127.0.0.1", port, "s3cret", 5s);
  REQUIRE(a.isOk());
  REQUIRE(b.isOk());
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    (void)b->set("addr/1", "10.0.0.2:4000");
  });
  auto got = a->get("addr/1", 5s);  // blocks until the other client sets it
  later.join();
  REQUIRE(got.isOk());
  CHECK(*got == "10.0.0.2:4000");
  CHECK(*a->check("addr/1"));
  CHECK_FALSE(*a->check("addr/2"));
  CHECK(*a->add("counter", 2) == 2);
  CHECK(*b->add("counter", 3) == 5);
  CHECK(a->get("never", 300ms).status().code() == hvd::Errc::kTimeout);
  CHECK(a->set(hvd::rendezvous::readyKey(7), "host").isOk());
  CHECK((*server)->readyRanks() == std::set<int>{7});
}

TEST_CASE("keys hvdrun publishes answer waiting gets and an abandoned prefix fails its gets at once saying why",
          "[unit][mp]") {
  auto server = hvd::cli::RendezvousServer::start(0, "s3cret");
  REQUIRE(server.isOk());
  int port = (*server)->port();
  auto waiting = Client::connect("127.0.0.1", port, "s3cret", 5s);
  auto abandoned = Client::connect("127.0.0.1", port, "s3cret", 5s);
  REQUIRE(waiting.isOk());
  REQUIRE(abandoned.isOk());
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    (*server)->publish({{"elastic/next/0", "1"}}, "elastic/0/join/", "the world changed");
  });
  std::optional<hvd::Result<std::string>> lost;
  std::thread joiner([&] { lost = abandoned->get("elastic/0/join/ring/2", 5s); });
  auto next = waiting->get("elastic/next/0", 5s);  // both wait until hvdrun publishes
  later.join();
  joiner.join();
  REQUIRE(next.isOk());
  CHECK(*next == "1");
  REQUIRE(lost.has_value());
  CHECK(lost->status().code() == hvd::Errc::kRemote);
  CHECK(lost->status().message() == "the world changed");
  // Later gets under the prefix fail at once; other keys are untouched.
  auto again = waiting->get("elastic/0/join/ring/0", 5s);
  CHECK(again.status().message() == "the world changed");
  CHECK(waiting->set("elastic/1/join/ring/0", "x").isOk());
  CHECK(*waiting->get("elastic/1/join/ring/0", 1s) == "x");
}

TEST_CASE("a rank claimed by one process is refused to any other for the rest of the job and not to itself",
          "[unit][mp]") {
  auto server = hvd::cli::RendezvousServer::start(0, "s3cret");
  REQUIRE(server.isOk());
  int port = (*server)->port();
  const std::string key = hvd::rendezvous::rankClaimKey(3);
  {
    auto parent = Client::connect("127.0.0.1", port, "s3cret", 5s);
    REQUIRE(parent.isOk());
    auto first = parent->claim(key, "pid 100 on vm");
    REQUIRE(first.isOk());
    CHECK_FALSE(first->has_value());
  }  // a rank lets its connection go once the addresses are exchanged
  auto worker = Client::connect("127.0.0.1", port, "s3cret", 5s);
  REQUIRE(worker.isOk());
  auto taken = worker->claim(key, "pid 200 on vm");
  REQUIRE(taken.isOk());
  CHECK(*taken == std::optional<std::string>("pid 100 on vm"));
  auto other = worker->claim(hvd::rendezvous::rankClaimKey(4), "pid 200 on vm");  // another rank is free
  REQUIRE(other.isOk());
  CHECK_FALSE(other->has_value());
  // The same process joining again (hvd.init() after hvd.shutdown()).
  auto again = Client::connect("127.0.0.1", port, "s3cret", 5s);
  REQUIRE(again.isOk());
  auto rejoin = again->claim(key, "pid 100 on vm");
  REQUIRE(rejoin.isOk());
  CHECK_FALSE(rejoin->has_value());
}

TEST_CASE("the rendezvous serves 400 connected ranks and their waiting gets with one thread", "[unit][mp]") {
  auto threads = [] {
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/task"); it != std::filesystem::directory_iterator(); ++it) ++n;
    return n;
  };
  size_t before = threads();
  auto server = hvd::cli::RendezvousServer::start(0, "s3cret");
  REQUIRE(server.isOk());
  int port = (*server)->port();
  std::vector<Client> clients;
  for (int i = 0; i < 400; ++i) {
    auto c = Client::connect("127.0.0.1", port, "s3cret", 5s);
    REQUIRE(c.isOk());
    clients.push_back(std::move(*c));
  }
  // Each client's connection stays open for the job (a rank's does): no thread each.
  CHECK(threads() <= before + 2);  // was one more thread per connection
  // Gets that wait do not hold up anyone: 3 clients wait for keys set later by others.
  std::vector<std::thread> waiters;
  std::vector<std::string> got(3);
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&, i] {
      auto value = clients[static_cast<size_t>(i)].get("late/" + std::to_string(i), 5s);
      got[static_cast<size_t>(i)] = value.isOk() ? *value : value.status().message();
    });
  }
  std::this_thread::sleep_for(100ms);
  for (int i = 0; i < 3; ++i) CHECK(clients[static_cast<size_t>(399 - i)].set("late/" + std::to_string(i), "v" + std::to_string(i)).isOk());
  for (auto& w : waiters) w.join();
  CHECK(got == std::vector<std::string>{"v0", "v1", "v2"});
  CHECK(*clients[10].add("n", 1) == 1);
  CHECK(*clients[11].add("n", 1) == 2);
}

TEST_CASE("a client with a wrong or empty secret is refused and cannot touch the store", "[unit][mp]") {
  auto server = hvd::cli::RendezvousServer::start(0, "right");
  REQUIRE(server.isOk());
  int port = (*server)->port();
  auto wrong = Client::connect("127.0.0.1", port, "wrong", 5s);
  REQUIRE_FALSE(wrong.isOk());
  CHECK(wrong.status().code() == hvd::Errc::kRemote);
  CHECK(wrong.status().message() == "hvdrun's rendezvous at 127.0.0.1:" + std::to_string(port) +
                                        " refused this client: the secret (HVD_SECRET_KEY) does not match the job's");
  CHECK_FALSE(Client::connect("127.0.0.1", port, "", 5s).isOk());
  CHECK((*server)->refusedClients() == 2);
  auto right = Client::connect("127.0.0.1", port, "right", 5s);  // the server still serves
  REQUIRE(right.isOk());
  CHECK(right->set("k", "v").isOk());
}

TEST_CASE("ranks that never reach the rendezvous while others do fail the job with 124", "[e2e][mp]") {
  hvd::test::TempDir pids;
  auto start = std::chrono::steady_clock::now();
  auto run = runHvdrun({"-np", "3", "--start-timeout", "1", "--kill-grace", "1", kRank, "register", "1", "30"},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "HVD_TEST_PIDDIR=" + pids.path()})));
  CHECK(run.exitCode == 124);
  CHECK(std::chrono::steady_clock::now() - start < 4s);
  CHECK(hvd::test::withoutThreadNote(run.err) == "hvdrun: error: rank(s) 1 did not reach the rendezvous in time, while the other 2 did; stopped the "
                   "job\n  hint: a rank stuck before the runtime's init, or unable to reach hvdrun; --start-timeout "
                   "gives start-up more time\n");
}

TEST_CASE("the start timeout spares programs that never use the runtime", "[e2e][mp]") {
  auto run = runHvdrun({"-np", "2", "--start-timeout", "0.3", kRank, "sleep", "1"}, withEnv(plainEnv()));
  CHECK(run.exitCode == 0);
  auto all = runHvdrun({"-np", "3", "--start-timeout", "0.5", kRank, "register", "-1", "1"}, withEnv(plainEnv()));
  CHECK(all.exitCode == 0);
  CHECK(hvd::test::withoutThreadNote(all.err).empty());
}

TEST_CASE("an intruder without the secret is refused and logged while the job goes on", "[e2e][mp]") {
  auto run = runHvdrun({"-np", "1", kRank, "intrude"}, withEnv(plainEnv()));
  CHECK(run.exitCode == 0);
  CHECK(run.out.find("intruder: hvdrun's rendezvous at 127.0.0.1:") != std::string::npos);
  CHECK(run.out.find("refused this client: the secret (HVD_SECRET_KEY) does not match the job's") != std::string::npos);
  CHECK(std::regex_search(run.err, std::regex("hvdrun: warning: rendezvous: refused a client from 127\\.0\\.0\\.1:\\d+: "
                                              "it does not hold the job's secret")));
}

TEST_CASE("intruders of every kind are named once each and totalled at the end while the job goes on", "[e2e][mp]") {
  auto run = runHvdrun({"-np", "1", kRank, "intrude", "all"}, withEnv(plainEnv()));
  INFO(run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.out.find("intruded all") != std::string::npos);
  const std::string from = "from 127\\.0\\.0\\.1:\\d+";
  for (const std::string& line :
       {"refused a client " + from + ": it does not hold the job's secret",
        "refused a client " + from + ": it answered the challenge with 5 byte\\(s\\) that are no proof",
        "refused a client " + from + ": it announced a frame of 100000 bytes before proving itself",
        "20 connections closed before their handshake, the last " + from}) {
    CHECK(std::regex_search(run.err, std::regex("hvdrun: warning: rendezvous: " + line)));
  }
  // Then, once each kind was named, only the total: 28 connections, by kind.
  CHECK(run.err.find("hvdrun: warning: rendezvous: 28 connection(s) that were not the job's ranks refused or dropped in "
                     "all: 1 without the job's secret, 1 that sent no proof (garbage), 1 that announced oversized frames, "
                     "25 that closed before their handshake\n") != std::string::npos);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 5 + (run.err.find("OMP_NUM_THREADS") != std::string::npos));
}

TEST_CASE("a connection that stays silent past its handshake's deadline is dropped and counted", "[unit][mp]") {
  auto server = hvd::cli::RendezvousServer::start(0, "right", "127.0.0.1", std::chrono::milliseconds(200));
  REQUIRE(server.isOk());
  auto silent = hvd::Socket::connect("127.0.0.1", (*server)->port(), hvd::deadlineIn(5s));
  REQUIRE(silent.isOk());
  (void)silent->recvFrame(64, hvd::deadlineIn(5s));  // the challenge, left unanswered
  char byte;
  auto closed = silent->recvAll(&byte, 1, hvd::deadlineIn(5s));  // the server drops it
  CHECK_FALSE(closed.isOk());
  CHECK((*server)->intruders().count(hvd::cli::Intrusion::kSilent) == 1);
  auto right = Client::connect("127.0.0.1", (*server)->port(), "right", 5s);
  REQUIRE(right.isOk());
  CHECK(right->set("k", "v").isOk());
}

TEST_CASE("a job on this machine alone has its rendezvous server listen on loopback only", "[e2e]") {
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  // The rank looks up the server's listening socket (state 0A) in the kernel's table.
  auto run = hvd::test::runHvdrun(
      {"-np", "1", "--no-prefix", "sh", "-c",
       "p=$(printf '%04X' \"$HVD_RENDEZVOUS_PORT\"); awk -v p=\":$p\" '$2 ~ (p \"$\") && $4 == \"0A\" {print $2}' /proc/net/tcp"},
      o);
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(std::regex_match(run.out, std::regex("0100007F:[0-9A-F]{4}\n")));  // 127.0.0.1, not 00000000
}

TEST_CASE("hundreds of connect-and-close clients cost the rendezvous no descriptors, and the ranks still join", "[e2e][mp]") {
  // hvdrun may hold 128 descriptors; each rank first opens and closes 300 connections to
  // its rendezvous (a port scan, a client without the secret), then joins the job.
  std::string flood =
      "for i in $(seq 300); do exec 3<>/dev/tcp/127.0.0.1/$HVD_RENDEZVOUS_PORT || exit 9; exec 3>&-; done; exec \"$0\" check";
  auto run = hvd::cli::runAndCapture(
      {"bash", "-c", "ulimit -n 128 && exec \"$0\" -np 2 bash -c \"$1\" \"$2\"", HVD_HVDRUN_PATH, flood,
       HVD_COLLECTIVE_RANK_PATH},
      hvd::test::withTimeout(std::chrono::seconds(90)));
  REQUIRE(run.isOk());
  INFO(run->out << run->err);
  CHECK(run->exitCode == 0);
  CHECK(run->out.find("[0]<stdout>:ok ") != std::string::npos);
  CHECK(run->out.find("[1]<stdout>:ok ") != std::string::npos);
  CHECK(run->err.find("refused a client") == std::string::npos);  // closing without a word is no intrusion
}

TEST_CASE("a thousand idle connections held open during start-up under a low descriptor limit do not keep the ranks out", "[e2e][mp]") {
  // hvdrun may hold 256 descriptors; rank 0 first opens 1000 connections to the rendezvous
  // and keeps them open, silent, for its whole life (its exec keeps the fds), then joins.
  // Before: the ranks' own connections queued behind the flood, and the job failed at the
  // 30 s start deadline blaming rank 0.
  std::string flood =
      "ulimit -S -n 4096; if [ \"$RANK\" = 0 ]; then for i in $(seq 1000); do "
      "exec {fd}<>/dev/tcp/127.0.0.1/$HVD_RENDEZVOUS_PORT || exit 9; done; fi; exec \"$0\" check";
  auto started = std::chrono::steady_clock::now();
  auto run = hvd::cli::runAndCapture(
      {"bash", "-c", "ulimit -S -n 256 && exec \"$0\" -np 2 bash -c \"$1\" \"$2\"", HVD_HVDRUN_PATH, flood,
       HVD_COLLECTIVE_RANK_PATH},
      hvd::test::withTimeout(std::chrono::seconds(90)));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(run.isOk());
  INFO(run->out << run->err);
  CHECK(run->exitCode == 0);
  CHECK(run->out.find("[0]<stdout>:ok ") != std::string::npos);
  CHECK(run->out.find("[1]<stdout>:ok ") != std::string::npos);
  CHECK(run->err.find("hvdrun: warning: rendezvous: dropped ") != std::string::npos);  // the flood is named
  CHECK(seconds < 20);
}

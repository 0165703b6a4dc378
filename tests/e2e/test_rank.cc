// tests/e2e/test_rank.cc: a rank whose behaviour the launcher tests choose by argument.
// With HVD_TEST_IGNORE_TERM set, every mode ignores SIGTERM.
// Every mode first writes $HVD_TEST_PIDDIR/<rank>.pid (when set) so a test can check
// afterwards, through /proc, that no rank survived.
//   args                  print each argument as "arg <i> <length>:<bytes>"
//   identity [s]          print the identity hvdrun gave this rank, then sleep s
//   fail <rank> <code|KILL> <sleep-s>  rank <rank> writes 3 stderr lines and exits
//                         <code> (or SIGKILLs itself) after 0.2 s; others sleep
//   fail-starts <rank> <n> <s>  print "start <TORCHELASTIC_RESTART_COUNT> of <..._MAX_RESTARTS>
//                         restarts"; rank <rank> exits 3 after 0.2 s in the first <n>
//                         starts, the others (and later starts) sleep s and exit 0
//   sleep <s>             sleep
//   ignore-term <s>       ignore SIGTERM, then sleep
//   register <skip-rank> <sleep-s>  every rank but <skip-rank> sets ready/<rank> at
//                         hvdrun's rendezvous, then all sleep (-1: none is skipped)
//   signals <s>           print "got SIG..." for USR1, USR2 and HUP, exit 0 on TERM; sleep
//   ignore-int <s>        ignore SIGINT, then sleep
//   intrude [all]         connect to the rendezvous with a wrong secret; print what happened;
//                         with all, then also answer its challenge with 5 garbage bytes, announce
//                         a 100000-byte frame, and connect and close 25 times ("intruded all")
//   lines <count>         write <count> lines of pseudo-random length, checkable
//   blame-chain           a dying rank's peers failing in a chain, scripted: rank 0 is
//                         ending from the start (its main thread exits; another raises
//                         SIGTERM after 30 s); rank r > 0 sleeps (size - r) * 0.4 s, tells
//                         the rendezvous that rank r - 1's going failed it (as the runtime
//                         does) and exits 1: the last rank is reaped first, naming a rank
//                         that has not said yet whose going failed it
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "runtime/common/socket.h"
#include "runtime/rendezvous/client.h"
#include "runtime/rendezvous/protocol.h"

namespace {

int envInt(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : -1;
}

void writePidFile(int rank) {
  const char* dir = std::getenv("HVD_TEST_PIDDIR");
  if (dir == nullptr) return;
  std::string path = std::string(dir) + "/" + std::to_string(rank) + ".pid";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
    std::fclose(f);
  }
}

void sleepSeconds(double s) {
  ::usleep(static_cast<useconds_t>(s * 1e6));
}

// Line i of rank r: "r:i:len:" then len bytes derived from (r, i), so a reader can check
// that a line arrived whole and was not mixed with another.
std::string makeLine(int rank, int i, size_t len) {
  std::string line = std::to_string(rank) + ":" + std::to_string(i) + ":" + std::to_string(len) + ":";
  for (size_t k = 0; k < len; ++k) line += static_cast<char>('a' + (rank * 7 + i * 13 + k) % 26);
  return line;
}

// The signal "signals" mode last got; 0 once printed.
volatile sig_atomic_t gLastSignal = 0;

}  // namespace

int main(int argc, char** argv) {
  int rank = envInt("HVD_RANK");
  if (std::getenv("HVD_TEST_IGNORE_TERM") != nullptr) ::signal(SIGTERM, SIG_IGN);
  std::string mode = argc > 1 ? argv[1] : "";
  // Tests signal a rank once its pid file is there: its handlers must be in by then (a rank
  // preempted between the two was killed by the SIGUSR2 it was to print).
  if (mode == "signals") {
    for (int sig : {SIGUSR1, SIGUSR2, SIGHUP, SIGTERM, SIGQUIT}) ::signal(sig, [](int s) { gLastSignal = s; });
  }
  if (mode == "ignore-term") ::signal(SIGTERM, SIG_IGN);
  if (mode == "ignore-int") ::signal(SIGINT, SIG_IGN);
  writePidFile(rank);
  if (mode == "args") {
    for (int i = 2; i < argc; ++i) std::printf("arg %d %zu:%s\n", i - 2, std::strlen(argv[i]), argv[i]);
    return 0;
  }
  if (mode == "identity") {
    // gpus=: the rank's own GPU, the one at HVD_LOCAL_GPU in CUDA_VISIBLE_DEVICES (the whole
    // list where HVD_LOCAL_GPU is unset: Slurm's or mpirun's own binding).
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    std::string own = visible != nullptr ? visible : "unset";
    if (const char* at = std::getenv("HVD_LOCAL_GPU"); at != nullptr && visible != nullptr) {
      std::vector<std::string> list{""};
      for (const char* c = visible; *c != 0; ++c) {
        if (*c == ',') {
          list.emplace_back();
        } else {
          list.back().push_back(*c);
        }
      }
      const size_t index = static_cast<size_t>(std::atoi(at));
      own = index < list.size() ? list[index] : "beyond-" + own;
    }
    const char* gpus = own.c_str();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::printf("rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d cross_size=%d torch_rank=%s host=%s gpus=%s\n",
                rank, envInt("HVD_SIZE"), envInt("HVD_LOCAL_RANK"), envInt("HVD_LOCAL_SIZE"), envInt("HVD_CROSS_RANK"),
                envInt("HVD_CROSS_SIZE"), std::getenv("RANK") != nullptr ? std::getenv("RANK") : "unset", host,
                gpus != nullptr ? gpus : "unset");
    std::fflush(stdout);
    if (argc > 2) sleepSeconds(std::atof(argv[2]));
    return 0;
  }
  if (mode == "fail" && argc > 4) {
    int victim = std::atoi(argv[2]);
    std::string how = argv[3];
    if (rank == victim) {
      sleepSeconds(0.2);
      std::fprintf(stderr, "first complaint\nsecond complaint\nfinal words of rank %d\n", rank);
      std::fflush(stderr);
      if (how == "KILL") ::raise(SIGKILL);
      return std::atoi(how.c_str());
    }
    sleepSeconds(std::atof(argv[4]));
    return 0;
  }
  if (mode == "fail-starts" && argc > 4) {
    // hvdrun --max-restarts: every rank says which start this is; rank <rank> exits 3 in the
    // first <n> starts, after 0.2 s; otherwise each rank sleeps <s> and exits 0.
    const int start = envInt("TORCHELASTIC_RESTART_COUNT");
    std::printf("start %d of %d restarts\n", start, envInt("TORCHELASTIC_MAX_RESTARTS"));
    std::fflush(stdout);
    if (rank == std::atoi(argv[2]) && start < std::atoi(argv[3])) {
      sleepSeconds(0.2);
      std::fprintf(stderr, "rank %d failing in start %d\n", rank, start);
      return 3;
    }
    sleepSeconds(std::atof(argv[4]));
    return 0;
  }
  if (mode == "sleep" && argc > 2) {
    sleepSeconds(std::atof(argv[2]));
    return 0;
  }
  if (mode == "ignore-term" && argc > 2) {
    std::printf("ignoring SIGTERM\n");
    std::fflush(stdout);
    sleepSeconds(std::atof(argv[2]));
    return 0;
  }
  if (mode == "register" && argc > 3) {
    if (rank != std::atoi(argv[2])) {
      auto client = hvd::rendezvous::Client::fromEnvironment(std::chrono::seconds(10));
      if (!client) {
        std::fprintf(stderr, "register: %s\n", client.status().message().c_str());
        return 5;
      }
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      if (auto s = client->set(hvd::rendezvous::readyKey(rank), host); !s.isOk()) {
        std::fprintf(stderr, "register: %s\n", s.message().c_str());
        return 6;
      }
    }
    sleepSeconds(std::atof(argv[3]));
    return 0;
  }
  if (mode == "signals" && argc > 2) {
    auto deadline = std::time(nullptr) + static_cast<std::time_t>(std::atof(argv[2]));
    while (std::time(nullptr) < deadline) {
      ::pause();
      int sig = gLastSignal;
      gLastSignal = 0;
      if (sig == 0) continue;
      std::printf("got %s\n", sig == SIGUSR1   ? "SIGUSR1"
                              : sig == SIGUSR2 ? "SIGUSR2"
                              : sig == SIGHUP  ? "SIGHUP"
                              : sig == SIGQUIT ? "SIGQUIT"
                                               : "SIGTERM");
      std::fflush(stdout);
      if (sig == SIGTERM) return 0;
    }
    return 0;
  }
  if (mode == "ignore-int" && argc > 2) {
    std::printf("ignoring SIGINT\n");
    std::fflush(stdout);
    sleepSeconds(std::atof(argv[2]));
    return 0;
  }
  if (mode == "intrude") {
    const char* addr = std::getenv("HVD_RENDEZVOUS_ADDR");
    const char* port = std::getenv("HVD_RENDEZVOUS_PORT");
    auto client = hvd::rendezvous::Client::connect(addr ? addr : "", port ? std::atoi(port) : 0, "not-the-secret",
                                                   std::chrono::seconds(5));
    std::printf("intruder: %s\n", client ? "admitted" : client.status().message().c_str());
    if (argc > 2 && std::string(argv[2]) == "all") {
      auto raw = [&] {
        return hvd::Socket::connect(addr ? addr : "", port ? std::atoi(port) : 0, hvd::deadlineIn(std::chrono::seconds(5)));
      };
      auto deadline = hvd::deadlineIn(std::chrono::seconds(5));
      if (auto garbage = raw(); garbage) {
        (void)garbage->recvFrame(64, deadline);  // the challenge
        (void)garbage->sendFrame("hello", deadline);
        char byte;
        (void)garbage->recvAll(&byte, 1, deadline);  // until the server closes it
      }
      if (auto oversized = raw(); oversized) {
        (void)oversized->recvFrame(64, deadline);
        const char header[4] = {0, 1, static_cast<char>(0x86), static_cast<char>(0xa0)};  // 100000
        (void)oversized->sendAll(std::string_view(header, 4), deadline);
        char byte;
        (void)oversized->recvAll(&byte, 1, deadline);
      }
      for (int i = 0; i < 25; ++i) (void)raw();  // each closed as it goes out of scope
      std::printf("intruded all\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // for the server to see them all
    }
    return 0;
  }
  if (mode == "lines" && argc > 2) {
    int count = std::atoi(argv[2]);
    uint64_t state = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(rank + 1);
    for (int i = 0; i < count; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      size_t len = (state >> 33) % 3000;
      if (i == 0) len = (1 << 20) - 64;  // one line per rank just under hvdrun's 1 MiB cut
      std::string line = makeLine(rank, i, len);
      // Unbuffered writes in odd pieces, so lines reach the pipe torn.
      size_t cut = line.size() / 2;
      (void)!::write(1, line.data(), cut);
      (void)!::write(1, line.data() + cut, line.size() - cut);
      if (i + 1 < count) (void)!::write(1, "\n", 1);  // the last line has no newline
    }
    return 0;
  }
  if (mode == "blame-chain") {
    if (rank == 0) {
      std::thread([] {
        sleepSeconds(30);
        ::raise(SIGTERM);
      }).detach();
      ::pthread_exit(nullptr);
    }
    sleepSeconds((envInt("HVD_SIZE") - rank) * 0.4);
    auto client = hvd::rendezvous::Client::fromEnvironment(std::chrono::seconds(10));
    if (client) (void)client->set(hvd::rendezvous::peerGoneKey(rank), std::to_string(rank - 1));
    std::fprintf(stderr, "failed: rank %d closed its connection\n", rank - 1);
    return 1;
  }
  std::fprintf(stderr, "test_rank: unknown mode '%s'\n", mode.c_str());
  return 64;
}

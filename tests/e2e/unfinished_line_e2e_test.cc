// tests/e2e/unfinished_line_e2e_test.cc: a line a rank has begun and not ended (a prompt:
// input()'s "name? ", pdb's "(Pdb) ") reaches the console once its stream is quiet, and
// lines of different ranks still never share a console line.
#include <catch2/catch.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::spawnHvdrun;
using Clock = std::chrono::steady_clock;

namespace {

// What hvdrun wrote to the pipe until `until` appeared or the time ran out.
std::string readUntil(int fd, const std::string& until, std::chrono::milliseconds limit) {
  std::string text;
  char buf[4096];
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline && text.find(until) == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) != 1) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

// The rest of the pipe, and hvdrun's exit code (-1 if it did not end within 20 s).
int finish(int pid, int fd, std::string& text) {
  text += hvd::test::readToEnd(fd);
  auto deadline = Clock::now() + std::chrono::seconds(20);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("a prompt without a newline reaches the console while the rank waits and its line ends unprefixed",
          "[e2e]") {
  int console[2];
  REQUIRE(::pipe(console) == 0);
  auto env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  int pid = spawnHvdrun({"-np", "1", "sh", "-c", "printf 'name? '; sleep 2; echo done"}, env, console[1]);
  ::close(console[1]);
  // Held for its newline, the prompt showed only once the rank had gone past it.
  std::string text = readUntil(console[0], "name? ", std::chrono::milliseconds(1500));
  CHECK(text == "[0]<stdout>:name? ");
  REQUIRE(finish(pid, console[0], text) == 0);
  CHECK(text == "[0]<stdout>:name? done\n");
}

TEST_CASE("another rank's line ends a prompt's console line first and the prompt's rest comes prefixed", "[e2e]") {
  int console[2];
  REQUIRE(::pipe(console) == 0);
  auto env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  int pid = spawnHvdrun({"-np", "2", "sh", "-c",
                         "if [ $HOROVOD_RANK = 0 ]; then printf 'name? '; sleep 2; echo done; "
                         "else sleep 1; echo other; fi"},
                        env, console[1]);
  ::close(console[1]);
  std::string text = readUntil(console[0], "other\n", std::chrono::milliseconds(1800));
  CHECK(text == "[0]<stdout>:name? \n[1]<stdout>:other\n");
  REQUIRE(finish(pid, console[0], text) == 0);
  CHECK(text == "[0]<stdout>:name? \n[1]<stdout>:other\n[0]<stdout>:done\n");
}

TEST_CASE("a rank that ends on a prompt leaves the console at the start of a line", "[e2e]") {
  hvd::cli::RunOptions options = hvd::test::withTimeout(std::chrono::seconds(20));
  auto run = hvd::test::runHvdrun({"-np", "2", "sh", "-c", "printf 'bye? '; sleep 0.5; [ $HOROVOD_RANK = 0 ]"}, options);
  CHECK(run.exitCode == 1);
  // The partial lines went out after 150 ms quiet; each still ends its own console line,
  // and the failure summary on stderr starts on a line of its own.
  CHECK(run.out.find("[0]<stdout>:bye? \n") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:bye? \n") != std::string::npos);
}

TEST_CASE("under --mpi a prompt and a quiet progress bar reach the console while the rank waits", "[e2e][mpi]") {
  if (!hvd::test::haveMpirun()) hvd::test::skipTest("mpirun is not installed");
  int console[2];
  REQUIRE(::pipe(console) == 0);
  auto env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "OMPI_ALLOW_RUN_AS_ROOT=1",
                              "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  int pid = spawnHvdrun({"--mpi", "-np", "1", "sh", "-c", "printf 'name? '; sleep 2; printf 'x\\n\\r 50%%'; sleep 2; echo"},
                        env, console[1]);
  ::close(console[1]);
  std::string text = readUntil(console[0], "name? ", std::chrono::seconds(4));
  CHECK(text == "[0]<stdout>:name? ");
  text += readUntil(console[0], "50%", std::chrono::milliseconds(3500));  // the bar comes 2 s on
  CHECK(text == "[0]<stdout>:name? x\n[0]<stdout>: 50%\r");
  REQUIRE(finish(pid, console[0], text) == 0);
}

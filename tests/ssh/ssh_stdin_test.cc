// tests/ssh/ssh_stdin_test.cc: hvdrun's stdin over ssh (tests/ssh/sshbed.sh): the rank
// --stdin names reads it byte for byte wherever it runs, the others read none, and an
// endless or unread stdin never holds a job up.
#include <catch2/catch.hpp>

#include "tests/ssh/ssh_bed.h"

using namespace hvd::test::sshbed;

TEST_CASE("over ssh the rank --stdin names on another host reads hvdrun's stdin byte for byte and the others read none",
          "[ssh]") {
  hvd::test::TempDir dir;
  std::string input;  // 1 MiB: every byte value, NULs and newlines among them, no final newline
  for (int i = 0; i < (1 << 20); ++i) input += static_cast<char>((i * 131 + i / 4096) % 256);
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({});
  options.stdinText = input;
  // Rank 3 runs on the second host.
  auto run = hvd::test::runHvdrun(sshJob(2, {"--stdin", "3", "sh", "-c", "cat > " + dir.path() + "/in.$HOROVOD_RANK"}),
                                  options);
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int rank = 0; rank < 6; ++rank) {
    INFO("rank " << rank);
    std::string got = fileText(dir.path() + "/in." + std::to_string(rank));
    if (rank == 3) {
      CHECK(got.size() == input.size());
      CHECK(got == input);
    } else {
      CHECK(got.empty());
    }
  }
  CHECK(run.err.find("input-taken") == std::string::npos);  // the agents' records stay between agent and hvdrun
}

TEST_CASE("over ssh rank 0 reads hvdrun's stdin by default as under mpirun", "[ssh]") {
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({});
  options.stdinText = "a\nb\nc\n";
  auto run = hvd::test::runHvdrun(sshJob(1, {"sh", "-c", "echo \"read $HOROVOD_RANK:$(tr '\\n' ' ')\""}), options);
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("[0]<stdout>:read 0:a b c \n") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:read 1:\n") != std::string::npos);
  CHECK(run.out.find("[2]<stdout>:read 2:\n") != std::string::npos);
}

TEST_CASE("in an ssh job the rank on this machine reads hvdrun's stdin through its local agent", "[ssh]") {
  const Bed& b = bed();
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({});
  options.stdinText = "from here\n";
  // Rank 0 on this machine (started by an agent without ssh), rank 1 on the first host.
  auto run = hvd::test::runHvdrun({"-H", "localhost:1," + b.hosts[0] + ":1", "--ssh-command", b.ssh, "-p", b.port, "-i",
                                   b.key, "sh", "-c", "echo \"read $HOROVOD_RANK on $(hostname):$(cat)\""},
                                  options);
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  char self[256] = {};
  ::gethostname(self, sizeof self - 1);
  CHECK(run.out.find("[0]<stdout>:read 0 on " + std::string(self) + ":from here\n") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:read 1 on " + b.names[0] + ":\n") != std::string::npos);
}

TEST_CASE("over ssh an endless stdin ends no later than the rank that reads a little of it and closes it", "[ssh]") {
  hvd::test::TempDir dir;
  EndlessInput endless;
  const std::string taken = dir.path() + "/taken";
  std::string shell = "if [ \"$HOROVOD_RANK\" = 3 ]; then head -c 10 > " + taken + "; fi; sleep 1";
  int hvdrun = hvd::test::spawnHvdrun(sshJob(2, {"--stdin", "3", "sh", "-c", shell}), hvd::test::environmentWith({}),
                                      -1, false, -1, endless.readFd());
  endless.closeReadEnd();  // hvdrun holds the only one left
  int status = 0;
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (::waitpid(hvdrun, &status, WNOHANG) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (Clock::now() >= deadline) {
    ::kill(hvdrun, SIGKILL);
    ::waitpid(hvdrun, &status, 0);
    FAIL("hvdrun ran on after its ranks were done");
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(fileText(taken) == "y\ny\ny\ny\ny\n");
}

TEST_CASE("over ssh SIGTERM ends a job at once while its stdin rank leaves an endless stdin unread", "[ssh]") {
  hvd::test::TempDir pids;
  EndlessInput endless;
  int hvdrun =
      startInBackground(sshJob(2, {"--stdin", "3", kRank, "sleep", "60"}), pids.path(), 6, false, endless.readFd());
  endless.closeReadEnd();
  auto ranks = hvd::test::readPidFiles(pids.path());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the window and rank 3's pipe fill meanwhile
  auto stoppedAt = Clock::now();
  REQUIRE(::kill(hvdrun, SIGTERM) == 0);
  CHECK(waitExit(hvdrun) == 143);
  CHECK(Clock::now() - stoppedAt < std::chrono::seconds(5));  // the kill grace: 5 s
  CHECK(hvd::test::survivorsAfter(ranks, std::chrono::seconds(1)).empty());
}

TEST_CASE("over ssh hvdrun run in the background of a terminal someone types into is not stopped by it", "[ssh]") {
  // A terminal session: its leader is the foreground job, hvdrun a background job (a group
  // of its own) whose stdin is that terminal. Reading it there would stop hvdrun (SIGTTIN).
  std::vector<std::string> argv{HVD_HVDRUN_PATH};
  for (const std::string& a : sshJob(1, {"sh", "-c", "sleep 1"})) argv.push_back(a);
  std::vector<std::string> env = hvd::test::environmentWith({});
  std::vector<char*> a, e;
  for (auto& arg : argv) a.push_back(arg.data());
  a.push_back(nullptr);
  for (auto& kv : env) e.push_back(kv.data());
  e.push_back(nullptr);
  int master = -1;
  pid_t leader = ::forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(leader >= 0);
  if (leader == 0) {
    pid_t job = ::fork();
    if (job == 0) {
      ::setpgid(0, 0);
      ::execve(a[0], a.data(), e.data());
      _exit(127);
    }
    ::setpgid(job, job);
    int status = 0;
    while (::waitpid(job, &status, WUNTRACED) < 0) {
    }
    if (WIFSTOPPED(status)) {
      ::kill(job, SIGKILL);
      _exit(100 + WSTOPSIG(status));
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 99);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(::write(master, "typed\n", 6) == 6);
  std::string screen;
  int status = 0;
  for (auto deadline = Clock::now() + std::chrono::seconds(30); Clock::now() < deadline;) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 50) == 1) {
      char buf[4096];
      ssize_t n = ::read(master, buf, sizeof buf);
      if (n > 0) screen.append(buf, static_cast<size_t>(n));
    }
    if (::waitpid(leader, &status, WNOHANG) == leader) break;
  }
  if (::waitpid(leader, nullptr, WNOHANG) == 0) {
    ::kill(leader, SIGKILL);
    ::waitpid(leader, &status, 0);
  }
  ::close(master);
  INFO(screen);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 100 + SIGTTIN);  // stopped by SIGTTIN
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("over ssh --stdin none leaves hvdrun's stdin unread for what runs after it", "[ssh]") {
  std::vector<std::string> argv{"sh", "-c", "\"$0\" \"$@\"; cat", HVD_HVDRUN_PATH};
  for (const std::string& a : sshJob(1, {"--stdin", "none", "true"})) argv.push_back(a);
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.stdinText = "left for the next command\n";
  auto run = hvd::cli::runAndCapture(argv, options);
  REQUIRE(run.isOk());
  INFO(run->out << run->err);
  CHECK(run->exitCode == 0);
  CHECK(run->out == "left for the next command\n");
}

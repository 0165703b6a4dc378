// tests/e2e/launch_e2e_test.cc: `hvdrun -np N prog` on this machine with real processes:
// identity, verbatim arguments, whole prefixed lines, fail-fast teardown, no survivors.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sys/resource.h>
#include <sys/stat.h>

#include <map>
#include <set>
#include <regex>
#include <sstream>
#include <thread>

#include "cli/os/machine.h"
#include "runtime/backends/backend_probe.h"
#include "tests/support/cpu_list.h"
#include "tests/support/hvdrun_runner.h"
#include "tests/support/memory_cgroup.h"

using hvd::test::environmentWith;
using hvd::test::processGone;
using hvd::test::readPidFiles;
using hvd::test::runHvdrun;
using hvd::test::spawnHvdrun;
using hvd::test::survivorsAfter;
using hvd::test::withEnv;
using hvd::test::withTimeout;
using hvd::test::TempDir;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kRank = HVD_TEST_RANK_PATH;

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}


void waitForPidFiles(const std::string& dir, size_t count) {
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (readPidFiles(dir).size() < count && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(readPidFiles(dir).size() == count);
}

}  // namespace

TEST_CASE("hvdrun -np 4 starts four ranks that each know who they are", "[e2e][mp]") {
  auto run = runHvdrun({"-np", "4", kRank, "identity"},
                       withEnv(environmentWith({"CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  REQUIRE(run.exitCode == 0);
  CHECK(hvd::test::withoutThreadNote(run.err).empty());
  auto lines = linesOf(run.out);
  REQUIRE(lines.size() == 4);
  std::sort(lines.begin(), lines.end());
  for (int r = 0; r < 4; ++r) {
    CHECK(lines[static_cast<size_t>(r)] ==
          "[" + std::to_string(r) + "]<stdout>:rank=" + std::to_string(r) +
              " size=4 local_rank=" + std::to_string(r) +
              " local_size=4 cross_rank=0 cross_size=1 torch_rank=" + std::to_string(r) + " host=" +
              hvd::test::hostName() + " gpus=unset");
  }
}

TEST_CASE("arguments with spaces, quotes, dollars and empty strings arrive verbatim", "[e2e][mp]") {
  std::vector<std::string> odd = {"two words", "'single'", "\"double\"", "$HOME", "", "back`tick`", "a\\b", "-np"};
  std::vector<std::string> args{"-np", "2", kRank, "args"};
  args.insert(args.end(), odd.begin(), odd.end());
  auto run = runHvdrun(args);
  REQUIRE(run.exitCode == 0);
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < odd.size(); ++i) {
      std::string expected = "[" + std::to_string(r) + "]<stdout>:arg " + std::to_string(i) + " " +
                             std::to_string(odd[i].size()) + ":" + odd[i] + "\n";
      INFO(expected);
      CHECK(run.out.find(expected) != std::string::npos);
    }
  }
}

TEST_CASE("hvdrun -x sets or passes on a variable for every rank as mpirun's does and refuses one hvdrun sets", "[e2e][mp]") {
  // Before, '-x' was an unknown option, and the hint asked whether -H was meant.
  const bool haveMpirun = hvd::test::haveMpirun();
  for (bool mpi : {false, true}) {
    if (mpi && !haveMpirun) continue;
    INFO((mpi ? "--mpi" : "forked by hvdrun"));
    auto options = withTimeout(std::chrono::seconds(30));
    options.env = environmentWith({"FROM_HERE=outer", "UNSET_HERE", "OMP_NUM_THREADS"});
    std::vector<std::string> args{"-np", "2", "-x", "SET=a b=c", "-x", "FROM_HERE", "-x", "UNSET_HERE",
                                  "-x", "OMP_NUM_THREADS=3", "sh", "-c",
                                  "echo \"$SET|$FROM_HERE|${UNSET_HERE-unset}|$OMP_NUM_THREADS|"
                                  "$(env | grep -c '^OMP_NUM_THREADS=')\""};
    if (mpi) args.insert(args.begin(), "--mpi");
    auto run = runHvdrun(args, options);
    INFO(run.out << run.err);
    CHECK(run.exitCode == 0);
    // One OMP_NUM_THREADS, the one given: hvdrun's default for shared CPUs stands aside.
    for (int r = 0; r < 2; ++r) {
      CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:a b=c|outer|unset|3|1\n") != std::string::npos);
    }
  }
  // The runtime's settings and names hvdrun does not set pass; what it sets per rank does not.
  auto passed = runHvdrun({"-np", "1", "-x", "HVD_TIMEOUT=45", "-x", "HVD_FOO=1", "-x", "HVD_SHARED_MEMORY=0", "sh",
                           "-c", "echo \"$HVD_TIMEOUT|$HVD_FOO|$HVD_SHARED_MEMORY\""});
  INFO(passed.err);
  CHECK(passed.exitCode == 0);
  CHECK(passed.out == "[0]<stdout>:45|1|0\n");
  for (const char* bad : {"HVD_RANK=5", "RANK=1", "1BAD=x", "=x", "CUDA_VISIBLE_DEVICES=0", "HVD_SECRET_KEY=00",
                          "HVD_RENDEZVOUS_PORT=1", "HVD_LOCAL_GPU=0"}) {
    auto run = runHvdrun({"-np", "1", "-x", bad, "true"});
    INFO(bad << ": " << run.err);
    CHECK(run.exitCode == 2);
    CHECK(run.err.find(std::string("-x ") + bad) != std::string::npos);
    CHECK(run.err.find("hint:") != std::string::npos);
  }
}

TEST_CASE("a missing program is named and nothing is launched", "[e2e]") {
  auto run = runHvdrun({"-np", "2", "/nonexistent/train"});
  CHECK(run.exitCode == 3);
  CHECK(run.out.empty());
  CHECK(run.err == "hvdrun: error: cannot run the program: '/nonexistent/train' does not exist\n"
                   "  hint: nothing was started; check the program's name, PATH and its execute permission\n");
  auto inPath = runHvdrun({"-np", "2", "no-such-trainer"}, withEnv(environmentWith({"PATH=/usr/bin:/bin"})));
  CHECK(inPath.exitCode == 3);
  CHECK(inPath.err.rfind("hvdrun: error: cannot run the program: 'no-such-trainer' is not in PATH (/usr/bin:/bin)\n",
                         0) == 0);
}

TEST_CASE("a Python script given as the program without its interpreter is refused with the command that runs it",
          "[e2e]") {
  // torchrun runs `torchrun train.py` with Python itself; horovodrun and hvdrun take the
  // interpreter on the command line.
  hvd::test::TempDir dir;
  const std::string script = dir.path() + "/train.py";
  std::ofstream(script) << "print('hi')\n";
  for (const std::string& program : {script, std::string("train.py")}) {
    INFO(program);
    auto run = runHvdrun({"--nproc-per-node", "2", program, "--epochs", "3"});
    CHECK(run.exitCode == 3);
    CHECK(run.err.find("  hint: nothing was started; a Python script runs with its interpreter first, as under "
                       "horovodrun: hvdrun [options] python " + program + " --epochs 3\n") != std::string::npos);
  }
}

TEST_CASE("without PATH a program is looked up where execvp and the shell look, and the ranks start", "[e2e][mp]") {
  // env -i, a bare systemd unit: "'true' is not in PATH (empty)" although every shell runs it.
  auto run = runHvdrun({"-np", "2", "sh", "-c", "echo ran"}, withEnv(environmentWith({"PATH"})));
  INFO(run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.out.find("[0]<stdout>:ran\n") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:ran\n") != std::string::npos);
  auto missing = runHvdrun({"-np", "2", "no-such-trainer"}, withEnv(environmentWith({"PATH"})));
  CHECK(missing.err.rfind("hvdrun: error: cannot run the program: 'no-such-trainer' is not in PATH (/bin:/usr/bin)\n",
                          0) == 0);
}

TEST_CASE("an environment that fits hvdrun but not its ranks, with hvdrun's variables, is named with sizes", "[e2e]") {
  // exec said only "Argument list too long": nothing told that hvdrun's own variables had
  // tipped it, nor what to do.
  std::vector<std::string> env = environmentWith({});
  // Variables of nearly the 128 KiB a string may take, to within 192-320 KiB of what exec
  // allows (ARG_MAX: a quarter of the stack limit, 2 MiB here) ...
  const long limit = ::sysconf(_SC_ARG_MAX);
  for (long i = 0; i < (limit - 196608) / 131100; ++i) {
    env.push_back("HVD_TEST_BIG" + std::to_string(i) + "=" + std::string(131000, 'x'));
  }
  // ... then as much padding, in variables of at most 128 KiB, as hvdrun itself still starts
  // with: the variables hvdrun adds for its ranks then tip them over.
  auto padded = [&](size_t bytes) {
    auto all = env;
    for (size_t i = 0; bytes > 0; ++i) {
      size_t piece = std::min<size_t>(bytes, 130000);
      all.push_back("HVD_TEST_PAD" + std::to_string(i) + "=" + std::string(piece, 'y'));
      bytes -= piece;
    }
    return all;
  };
  size_t low = 0, high = 400000;
  while (low < high) {
    size_t mid = (low + high + 1) / 2;
    auto version = hvd::cli::runAndCapture({HVD_HVDRUN_PATH, "-np", "2", "--version"}, withEnv(padded(mid)));
    if (version.isOk() && version->exitCode == 0) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  REQUIRE(low < 400000);  // hvdrun itself failed past it
  auto run = runHvdrun({"-np", "2", "true"}, withEnv(padded(low)));  // "true": 5 bytes less than "--version"
  INFO(run.err);
  CHECK(run.exitCode == 3);
  CHECK(run.err.find("hvdrun: error: cannot start rank 0 (") != std::string::npos);
  CHECK(run.err.find("Argument list too long") != std::string::npos);
  CHECK(run.err.find("  hint: the rank's arguments and environment take ") != std::string::npos);
  CHECK(run.err.find(" KiB (the largest variable 127 KiB), with the variables hvdrun adds; the kernel allows ") !=
        std::string::npos);
}

// A script's "#!" line that cannot work: exec fails with a bare ENOENT that names neither the
// interpreter nor the Windows line end, though the script itself is right there.
TEST_CASE(
    "a script whose interpreter is missing or ends in a carriage return is named with the reason and nothing starts",
    "[e2e]") {
  TempDir dir;
  std::string marker = dir.path() + "/started";
  std::string missing = dir.path() + "/train.sh";
  std::ofstream(missing) << "#!/nonexistent/interpreter -u\ntouch " << marker << "\n";
  std::string crlf = dir.path() + "/windows.sh";
  std::ofstream(crlf) << "#!/bin/sh\r\ntouch " << marker << "\r\n";
  for (const std::string& script : {missing, crlf}) ::chmod(script.c_str(), 0755);
  auto run = runHvdrun({"-np", "2", missing});
  CHECK(run.exitCode == 3);
  CHECK(run.out.empty());
  CHECK(run.err.find("hvdrun: error: cannot run the program: " + missing +
                     ": its #! line names /nonexistent/interpreter, which does not exist\n") != std::string::npos);
  CHECK(run.err.find("  hint: nothing was started; ") != std::string::npos);
  auto windows = runHvdrun({"-np", "2", crlf});
  CHECK(windows.exitCode == 3);
  CHECK(windows.err.find("its #! line ends in a carriage return") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(marker));
}

// The program exists and is executable, so only exec itself can fail: the child's errno
// must travel back through the exec pipe and name the rank, with what to do.
TEST_CASE("a script without a #! line fails with the system's reason the rank it was for and a hint", "[e2e]") {
  TempDir dir;
  std::string script = dir.path() + "/train.sh";
  std::ofstream(script) << "echo hello\n";
  ::chmod(script.c_str(), 0755);
  auto run = runHvdrun({"-np", "2", script});
  CHECK(run.exitCode == 3);
  CHECK(run.out.empty());
  CHECK(hvd::test::withoutThreadNote(run.err).rfind(
            "hvdrun: error: cannot start rank 0 (" + script + "): Exec format error\n  hint: ", 0) == 0);
  CHECK(run.err.find("#!") != std::string::npos);
}

TEST_CASE("with no prefix the ranks' lines are printed as they are", "[e2e][mp]") {
  auto run = runHvdrun({"-np", "1", "--no-prefix", kRank, "args", "x"});
  CHECK(run.exitCode == 0);
  CHECK(run.out == "arg 0 1:x\n");
}

namespace {

// Checks what test_rank's "lines" mode wrote through hvdrun: every line whole, prefixed
// with its rank, in order, `count` per rank.
void checkTornLines(const std::string& out, int np, int count) {
  std::vector<int> next(static_cast<size_t>(np), 0);
  size_t bad = 0;
  std::string firstBad;  // the first torn lines, cut short, to see how they tore
  auto noteBad = [&](const std::string& line) {
    if (++bad <= 3) firstBad += "  " + line.substr(0, 160) + (line.size() > 160 ? "..." : "") + "\n";
  };
  // Parsed by hand: std::regex recurses per character and overflows on the 1 MiB lines.
  for (const std::string& line : linesOf(out)) {
    // "[r]<stdout>:r:i:len:payload"
    if (line.size() < 13 || line[0] != '[' || line.compare(2, 10, "]<stdout>:") != 0) {
      noteBad(line);
      continue;
    }
    int rank = line[1] - '0';
    std::istringstream fields(line.substr(12));
    std::string r, i, l;
    std::getline(fields, r, ':');
    std::getline(fields, i, ':');
    std::getline(fields, l, ':');
    std::string payload;
    std::getline(fields, payload);
    if (rank < 0 || rank >= np || r != std::to_string(rank) || i.empty() || l.empty()) {
      noteBad(line);
      continue;
    }
    int index = std::stoi(i);
    size_t len = std::stoul(l);
    bool ok = index == next[static_cast<size_t>(rank)] && payload.size() == len;
    for (size_t k = 0; ok && k < len; ++k) ok = payload[k] == static_cast<char>('a' + (rank * 7 + index * 13 + k) % 26);
    if (!ok) noteBad(line);
    next[static_cast<size_t>(rank)] = index + 1;
  }
  INFO("torn lines, the first ones:\n" << firstBad);
  CHECK(bad == 0);
  CHECK(next == std::vector<int>(static_cast<size_t>(np), count));
}

}  // namespace

TEST_CASE("four ranks writing 10,000 torn lines each deliver every line whole and prefixed", "[e2e][mp]") {
  auto run = runHvdrun({"-np", "4", kRank, "lines", "10000"}, withTimeout(std::chrono::seconds(60)));
  REQUIRE(run.exitCode == 0);
  checkTornLines(run.out, 4, 10000);
}

TEST_CASE("under --mpi, lines the ranks write in pieces come out whole (Open MPI tags each piece)", "[e2e][mp][mpi]") {
  auto run = runHvdrun({"--mpi", "-np", "3", kRank, "lines", "300"}, withTimeout(std::chrono::seconds(60)));
  INFO(run.err.substr(0, 2000));
  REQUIRE(run.exitCode == 0);
  checkTornLines(run.out, 3, 300);
}

TEST_CASE("mpirun failing on its own is named as such with its last words and not blamed on rank 0", "[e2e][mpi]") {
  // An Open MPI setting mpirun cannot honour: it fails before starting any rank. Read as a
  // rank's end, the summary would say "rank 0 exited with code 1 ... rank 0 wrote nothing
  // to stderr".
  hvd::cli::RunOptions options = withTimeout(std::chrono::seconds(60));
  options.env = environmentWith({"OMPI_MCA_plm=no-such-component"});
  auto run = runHvdrun({"--mpi", "-np", "2", "true"}, options);
  INFO(run.err);
  CHECK(run.exitCode == 1);
  CHECK(run.err.find("hvdrun: error: mpirun exited with code 1, and no rank reported a failure of its own") !=
        std::string::npos);
  CHECK(run.err.find("  mpirun's last words:\n") != std::string::npos);
  CHECK(run.err.find("    |   orte_plm_base_open failed\n") != std::string::npos);
  CHECK(run.err.find("rank 0") == std::string::npos);
}

TEST_CASE("horovodrun's --mpi-args reach mpirun's command line and mpirun's refusal of one comes back in its words",
          "[e2e][mp][mpi]") {
  // Before, --mpi-args was an unknown option, and a ported horovodrun line failed on it.
  auto run = runHvdrun({"--mpi", "--mpi-args", "-x MPI_ARGS_SEEN=yes --mca btl self,vader,tcp", "-np", "2", "sh", "-c",
                        "echo seen=$MPI_ARGS_SEEN"},
                       withTimeout(std::chrono::seconds(60)));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("[0]<stdout>:seen=yes\n") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:seen=yes\n") != std::string::npos);
  auto refused = runHvdrun({"--mpi", "--mpi-args", "--no-such-mpirun-option", "-np", "2", "true"},
                           withTimeout(std::chrono::seconds(60)));
  INFO(refused.err);
  CHECK(refused.exitCode == 1);
  CHECK(refused.err.find("    | mpirun: Error: unknown option \"--no-such-mpirun-option\"\n") != std::string::npos);
}

TEST_CASE("under --mpi, a rank's line of nearly 1 MiB written in 200 pieces comes out as one line", "[e2e][mp][mpi]") {
  // Open MPI tags each piece, so mpirun's raw line is the payload plus 200 tags: past a raw
  // cap of exactly 1 MiB per rank, its rest (with no tag) came out as a line of mpirun's own.
  auto run = runHvdrun({"--mpi", "--no-prefix", "-np", "1", "sh", "-c",
                        "for i in $(seq 200); do head -c 5240 /dev/zero | tr '\\0' x; sleep 0.002; done; echo"},
                       withTimeout(std::chrono::seconds(60)));
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.size() == 200 * 5240 + 1);
  CHECK(run.out.find('\n') == 200 * 5240);
}

TEST_CASE("under --mpi a progress bar redrawn for megabytes without a newline comes out prefixed and never as mpirun's",
          "[e2e][mp][mpi]") {
  // 40,000 redraws of 90 bytes per rank, each its own chunk that Open MPI tags: mpirun's
  // output has no newline for 7 MB. Read in lines, it was cut at a raw cap and the rest
  // printed without prefixes, as mpirun's own words.
  auto run = runHvdrun({"--mpi", "-np", "2", "sh", "-c",
                        "i=0; while [ $i -lt 40000 ]; do printf '\\r%06d %s' $i "
                        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; "
                        "i=$((i+1)); done; printf '\\ndone\\n'"},
                       withTimeout(std::chrono::seconds(120)));
  REQUIRE(run.exitCode == 0);
  std::map<int, int> redraws;
  size_t untagged = 0;
  std::string first;
  for (size_t at = 0; at < run.out.size();) {
    size_t end = run.out.find_first_of("\r\n", at);
    if (end == std::string::npos) end = run.out.size();
    std::string_view piece(run.out.data() + at, end - at);
    at = end + 1;
    if (piece.empty()) continue;
    if (piece.size() > 12 && piece[0] == '[' && piece.substr(2, 10) == "]<stdout>:" && (piece[1] == '0' || piece[1] == '1')) {
      redraws[piece[1] - '0'] += piece.size() > 13 && piece[12] != 'd';
    } else if (++untagged == 1) {
      first = std::string(piece.substr(0, 80));
    }
  }
  INFO("first untagged: " << first);
  CHECK(untagged == 0);
  CHECK(redraws[0] == 40000);
  CHECK(redraws[1] == 40000);
  CHECK(run.out.find("[0]<stdout>:done\n") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:done\n") != std::string::npos);
}

TEST_CASE("the line cap of --max-line-kb cuts a rank's long line into lines of that size, locally and under --mpi", "[e2e][mp][mpi]") {
  // 10,000 bytes without a newline, then one: at 4 KiB, lines of 4096, 4096 and 1808.
  const std::vector<std::string> program{"sh", "-c", "head -c 10000 /dev/zero | tr '\\0' x; echo"};
  for (bool mpi : {false, true}) {
    INFO((mpi ? "--mpi" : "local"));
    std::vector<std::string> args{"--max-line-kb", "4", "-np", "2"};
    if (mpi) args.insert(args.begin(), "--mpi");
    args.insert(args.end(), program.begin(), program.end());
    auto run = runHvdrun(args, withTimeout(std::chrono::seconds(60)));
    INFO(run.err.substr(0, 2000));
    REQUIRE(run.exitCode == 0);
    for (int rank = 0; rank < 2; ++rank) {
      CHECK(hvd::test::stdoutLineLengths(run.out, rank) == std::vector<size_t>{4096, 4096, 1808});
    }
  }
}

TEST_CASE("a rank exiting 3 stops every other rank within the grace period, 20 times in a row", "[e2e][mp][slow]") {
  for (int repetition = 0; repetition < 20; ++repetition) {
    TempDir pids;
    auto start = Clock::now();
    auto run = runHvdrun({"-np", "4", "--kill-grace", "1", kRank, "fail", "2", "3", "60"},
                         withEnv(environmentWith({"HVD_TEST_PIDDIR=" + pids.path()})));
    auto took = Clock::now() - start;
    INFO("repetition " << repetition << "\n" << run.err);
    REQUIRE(run.exitCode == 3);
    CHECK(took < std::chrono::milliseconds(200 + 1000 + 1000));
    std::regex summary(
        R"(hvdrun: error: rank 2 exited with code 3 \(host [^,]+, pid \d+, at [0-9T:+\-]+\)\n)"
        R"(  last lines of rank 2's stderr:\n    \| first complaint\n    \| second complaint\n)"
        R"(    \| final words of rank 2\n  hvdrun stopped 3 other rank\(s\) of 4; exit code 3\n)");
    std::string tail = run.err.substr(run.err.find("hvdrun: error:"));
    CHECK(std::regex_match(tail, summary));
    auto pidList = readPidFiles(pids.path());
    CHECK(pidList.size() == 4);
    CHECK(survivorsAfter(pidList, std::chrono::milliseconds(500)).empty());
  }
}

TEST_CASE("a rank killed by SIGKILL makes hvdrun exit 137 and name the signal, 20 times in a row",
          "[e2e][mp][slow]") {
  for (int repetition = 0; repetition < 20; ++repetition) {
    TempDir pids;
    auto run = runHvdrun({"-np", "3", "--kill-grace", "1", kRank, "fail", "0", "KILL", "60"},
                         withEnv(environmentWith({"HVD_TEST_PIDDIR=" + pids.path()})));
    INFO("repetition " << repetition << "\n" << run.err);
    REQUIRE(run.exitCode == 128 + SIGKILL);
    CHECK(run.err.find("hvdrun: error: rank 0 was killed by SIGKILL (host ") != std::string::npos);
    CHECK(run.err.find("  hvdrun stopped 2 other rank(s) of 3; exit code 137\n") != std::string::npos);
    CHECK(survivorsAfter(readPidFiles(pids.path()), std::chrono::milliseconds(500)).empty());
  }
}

TEST_CASE("ranks that ignore SIGTERM are killed once the grace period ends", "[e2e][mp]") {
  TempDir pids;
  auto start = Clock::now();
  // Rank 1 fails; rank 0 ignores the SIGTERM hvdrun sends and must be SIGKILLed.
  auto run = runHvdrun({"-np", "2", "--kill-grace", "0.5", kRank, "fail", "1", "5", "60"},
                       withEnv(environmentWith({"HVD_TEST_PIDDIR=" + pids.path(), "HVD_TEST_IGNORE_TERM=1"})));
  auto took = Clock::now() - start;
  CHECK(run.exitCode == 5);
  CHECK(took < std::chrono::milliseconds(200 + 500 + 1000));
  CHECK(survivorsAfter(readPidFiles(pids.path()), std::chrono::milliseconds(200)).empty());
}

TEST_CASE("when hvdrun itself is SIGKILLed no rank survives", "[e2e][mp]") {
  TempDir pids;
  pid_t hvdrun = spawnHvdrun({"-np", "3", kRank, "sleep", "60"}, environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}));
  waitForPidFiles(pids.path(), 3);
  ::kill(hvdrun, SIGKILL);
  int status = 0;
  ::waitpid(hvdrun, &status, 0);
  CHECK(survivorsAfter(readPidFiles(pids.path()), std::chrono::milliseconds(2000)).empty());
}

namespace {

// Sends SIGINT to hvdrun and checks what Ctrl-C must do: hvdrun exits 130 within 2 s and
// no rank whose pid file is in `pidDir` outlives it.
void sigintEndsEverything(pid_t hvdrun, const std::string& pidDir) {
  auto start = Clock::now();
  ::kill(hvdrun, SIGINT);
  int status = 0;
  ::waitpid(hvdrun, &status, 0);
  CHECK(Clock::now() - start < std::chrono::seconds(2));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(survivorsAfter(readPidFiles(pidDir), std::chrono::milliseconds(500)).empty());
}

}  // namespace

TEST_CASE("SIGINT reaches every rank and hvdrun exits 130", "[e2e][mp]") {
  TempDir pids;
  pid_t hvdrun = spawnHvdrun({"-np", "3", kRank, "sleep", "60"}, environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}));
  waitForPidFiles(pids.path(), 3);
  sigintEndsEverything(hvdrun, pids.path());
}

TEST_CASE("output files hold every rank's lines while the console shows only the filtered ranks", "[e2e][mp]") {
  TempDir out;
  auto run = runHvdrun({"-np", "3", "--output-filename", out.path() + "/logs", "--ranks-filter", "0,2", kRank, "fail",
                        "1", "0", "0"});
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.empty());  // "fail" mode writes to stderr only
  CHECK(run.err.find("[1]<stderr>:") == std::string::npos);
  auto read = [&](const std::string& file) {
    std::ifstream in(out.path() + "/logs/" + file);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  CHECK(read("rank.1/stderr") == "first complaint\nsecond complaint\nfinal words of rank 1\n");
}

TEST_CASE("a ranks filter naming none of the job's ranks is refused before any rank starts", "[e2e][mp]") {
  // Before, the job ran with nothing at all on the console, as if every rank were silent.
  auto run = runHvdrun({"-np", "2", "--ranks-filter", "2-3", "sh", "-c", "echo started"});
  CHECK(run.exitCode == 2);
  CHECK(run.out.find("started") == std::string::npos);
  CHECK(run.err.find("hvdrun: error: --ranks-filter names no rank of this job, which has 2 ranks (0-1)\n") !=
        std::string::npos);
  // One rank in the job is enough: the filter serves jobs of other sizes too.
  auto some = runHvdrun({"-np", "2", "--ranks-filter", "1,7", "sh", "-c", "echo started"});
  CHECK(some.exitCode == 0);
  CHECK(some.out == "[1]<stdout>:started\n");
}

TEST_CASE("a rank the kernel's OOM killer ends is named as most likely out of memory", "[e2e][mp]") {
  // Rank 1 moves itself into a 64 MiB cgroup and allocates 256 MiB. Before, the summary said
  // only "was killed by SIGKILL", which at 2 a.m. could be anything.
  const std::string cgroup = hvd::test::makeMemoryCgroup(64u << 20);
  if (cgroup.empty()) {
    hvd::test::skipTest("no memory cgroup can be made here (needs root and cgroup v1's memory or v2's memory.max)");
  }
  auto run = runHvdrun({"-np", "2", "sh", "-c",
                        "if [ \"$HVD_RANK\" = 1 ]; then echo $$ > " + cgroup +
                            "/cgroup.procs && exec python3 -c 'b = bytearray(256 << 20)'; else sleep 30; fi"},
                       withTimeout(std::chrono::seconds(60)));
  hvd::test::removeCgroup(cgroup);
  INFO(run.err);
  CHECK(run.exitCode == 137);
  CHECK(run.err.find("hvdrun: error: rank 1 was killed by SIGKILL") != std::string::npos);
  CHECK(run.err.find("  the kernel's OOM killer ended 1 process(es) on " + hvd::test::hostName() +
                     " while the rank ran (oom_kill in /proc/vmstat): rank 1 most likely ran out of memory") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(cgroup));
}

TEST_CASE("a SIGKILL from outside while the OOM killer stayed quiet says nothing of memory", "[e2e][mp]") {
  auto run = runHvdrun({"-np", "2", "sh", "-c", "if [ \"$HVD_RANK\" = 1 ]; then kill -9 $$; fi; sleep 30"},
                       withTimeout(std::chrono::seconds(60)));
  CHECK(run.exitCode == 137);
  CHECK(run.err.find("hvdrun: error: rank 1 was killed by SIGKILL") != std::string::npos);
  CHECK(run.err.find("OOM") == std::string::npos);
}

TEST_CASE("timestamped output starts each console line with the time to the millisecond", "[e2e][mp]") {
  auto run = runHvdrun({"-np", "2", "--timestamp-output", kRank, "args", "x"});
  REQUIRE(run.exitCode == 0);
  std::regex line(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} \[[01]\]<stdout>:arg 0 1:x)");
  auto lines = linesOf(run.out);
  REQUIRE(lines.size() == 2);
  for (const auto& l : lines) CHECK(std::regex_match(l, line));
}

TEST_CASE("an output directory that cannot be made fails before any rank starts", "[e2e]") {
  TempDir pids;
  auto run = runHvdrun({"-np", "2", "--output-filename", "/proc/hvd-nope", kRank, "sleep", "0"},
                       withEnv(environmentWith({"HVD_TEST_PIDDIR=" + pids.path()})));
  CHECK(run.exitCode == 2);
  CHECK(hvd::test::withoutThreadNote(run.err).rfind("hvdrun: error: --output-filename: cannot create directory '/proc/hvd-nope'", 0) == 0);
  CHECK(readPidFiles(pids.path()).empty());
}

namespace {

// Runs hvdrun with `signals` ranks, sends the signals one by one, and returns its output
// and wait status.
std::pair<std::string, int> signalRanks(const std::vector<int>& signals) {
  TempDir pids;
  int outPipe[2];
  REQUIRE(::pipe(outPipe) == 0);
  pid_t hvdrun = spawnHvdrun({"-np", "3", "--kill-grace", "0.5", kRank, "signals", "20"},
                             environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}), outPipe[1]);
  ::close(outPipe[1]);
  waitForPidFiles(pids.path(), 3);
  // A rank writes its pid file once its handlers are in (test_rank.cc).
  for (int sig : signals) {
    ::kill(hvdrun, sig);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  int status = 0;
  ::waitpid(hvdrun, &status, 0);
  std::string out = hvd::test::readToEnd(outPipe[0]);
  CHECK(survivorsAfter(readPidFiles(pids.path()), std::chrono::milliseconds(500)).empty());
  return {out, status};
}

void checkEveryRankGot(const std::string& out, std::initializer_list<const char*> signals) {
  INFO(out);
  for (int r = 0; r < 3; ++r) {
    for (const char* sig : signals) CHECK(out.find("[" + std::to_string(r) + "]<stdout>:got " + sig + "\n") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("SIGUSR1 and SIGUSR2 reach every rank as notices; SIGHUP reaches them and stops the job with 129", "[e2e][mp]") {
  auto [out, status] = signalRanks({SIGUSR1, SIGUSR2, SIGHUP});
  checkEveryRankGot(out, {"SIGUSR1", "SIGUSR2", "SIGHUP"});
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGHUP);  // the ranks ignored it: SIGKILL after the grace
}

TEST_CASE("SIGTERM sent to hvdrun reaches every rank and hvdrun exits 143", "[e2e][mp]") {
  auto [out, status] = signalRanks({SIGTERM});
  checkEveryRankGot(out, {"SIGTERM"});
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
}

TEST_CASE("SIGQUIT (Ctrl-backslash) reaches every rank and stops the job with 131 where it killed hvdrun alone",
          "[e2e][mp]") {
  // Before, hvdrun died of it at once (core and all), and the ranks, which had not seen it,
  // were killed by its guardian: a rank's own SIGQUIT handler (a stack dump) never ran.
  auto [out, status] = signalRanks({SIGQUIT});
  checkEveryRankGot(out, {"SIGQUIT"});
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGQUIT);  // the ranks went on: SIGKILL after the grace
}

TEST_CASE("ranks ended by a SIGUSR1 notice they do not handle fail the job with 138 and a hint", "[e2e][mp]") {
  // The notice is passed on, not a stop: before, ranks it killed counted as stopped by
  // hvdrun, and the job exited 0.
  TempDir pids;
  int errPipe[2];
  REQUIRE(::pipe2(errPipe, O_CLOEXEC) == 0);
  pid_t hvdrun = spawnHvdrun({"-np", "2", kRank, "sleep", "60"}, environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}),
                             -1, false, errPipe[1]);
  ::close(errPipe[1]);
  waitForPidFiles(pids.path(), 2);
  ::kill(hvdrun, SIGUSR1);
  int status = 0;
  ::waitpid(hvdrun, &status, 0);
  std::string err = hvd::test::readToEnd(errPipe[0]);
  INFO(err);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGUSR1);
  CHECK(err.find("was killed by SIGUSR1") != std::string::npos);
  CHECK(err.find("hvdrun had passed SIGUSR1 on to every rank") != std::string::npos);
}

TEST_CASE("a second SIGINT kills ranks that ignore the first, and hvdrun exits 130", "[e2e][mp]") {
  TempDir pids;
  pid_t hvdrun = spawnHvdrun({"-np", "2", kRank, "ignore-int", "60"}, environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}));
  waitForPidFiles(pids.path(), 2);  // written once SIGINT is ignored (test_rank.cc)
  ::kill(hvdrun, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(survivorsAfter(readPidFiles(pids.path()), std::chrono::milliseconds(10)).size() == 2);  // still running
  sigintEndsEverything(hvdrun, pids.path());
}

TEST_CASE("ranks that outlast one SIGINT by --kill-grace are killed and hvdrun exits 130", "[e2e][mp]") {
  // A Python rank blocked in a collective cannot raise KeyboardInterrupt until the call
  // returns, and its peers wait for it: one Ctrl-C left such a job running for good.
  TempDir pids;
  pid_t hvdrun = spawnHvdrun({"-np", "2", "--kill-grace", "1", kRank, "ignore-int", "60"},
                             environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}));
  waitForPidFiles(pids.path(), 2);  // written once SIGINT is ignored (test_rank.cc)
  auto start = Clock::now();
  ::kill(hvdrun, SIGINT);
  int status = 0;
  auto deadline = start + std::chrono::seconds(10);
  while (::waitpid(hvdrun, &status, WNOHANG) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (Clock::now() >= deadline) {
    ::kill(hvdrun, SIGKILL);
    ::waitpid(hvdrun, &status, 0);
  }
  CHECK(Clock::now() - start >= std::chrono::milliseconds(900));  // the grace first
  CHECK(Clock::now() - start < std::chrono::seconds(4));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(survivorsAfter(readPidFiles(pids.path()), std::chrono::milliseconds(500)).empty());
}

TEST_CASE("ranks sharing the CPUs get OMP_NUM_THREADS, MKL's and OpenBLAS's at their share, unless the user set it",
          "[e2e][mp]") {
  const int cpus = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  const std::string script = "echo threads $OMP_NUM_THREADS $MKL_NUM_THREADS $OPENBLAS_NUM_THREADS";
  auto run = runHvdrun({"-np", "4", "--no-prefix", "sh", "-c", script},
                       withEnv(environmentWith({"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                "SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  REQUIRE(run.exitCode == 0);
  const std::string share = std::to_string(std::max(1, cpus / 4));
  CHECK(run.out == [&] {
    std::string all;
    for (int i = 0; i < 4; ++i) all += "threads " + share + " " + share + " " + share + "\n";
    return all;
  }());
  CHECK(run.err.find("hvdrun: 4 ranks share ") == 0);
  CHECK(run.err.find("OMP_NUM_THREADS=" + share + " for each (set OMP_NUM_THREADS to choose)\n") != std::string::npos);

  auto mine = runHvdrun({"-np", "2", "--no-prefix", "sh", "-c", script},
                        withEnv(environmentWith({"OMP_NUM_THREADS=3", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                 "SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  REQUIRE(mine.exitCode == 0);
  CHECK(mine.out == "threads 3\nthreads 3\n");
  CHECK(mine.err.empty());
}

TEST_CASE("a parameter server job ends with 0 once its chief exits 0, stopping the ranks that would wait forever",
          "[e2e][mp]") {
  TempDir pids;
  auto start = Clock::now();
  // The chief is rank 0; "sleep 60" stands for server.join() on the others, "sh -c" for
  // the chief finishing first.
  auto run = runHvdrun({"-np", "4", "--tf-config", "--tf-ps", "1", "--tf-chief", "--kill-grace", "1", "sh", "-c",
                        "if [ \"$RANK\" = 0 ]; then exit 0; fi; exec " + kRank + " sleep 60"},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent",
                                                "HVD_TEST_PIDDIR=" + pids.path()})));
  CHECK(run.exitCode == 0);
  CHECK(Clock::now() - start < std::chrono::seconds(10));
  CHECK(run.err.find("hvdrun: the chief finished (exit 0), so the job is done: stopped its 3 parameter server, worker "
                     "and evaluator rank(s)\n") != std::string::npos);
  CHECK(survivorsAfter(readPidFiles(pids.path()), std::chrono::milliseconds(500)).empty());

  // Without a parameter server (MultiWorkerMirroredStrategy) worker 0 is only a worker.
  auto mwms = runHvdrun({"-np", "2", "--tf-config", "sh", "-c", "if [ \"$RANK\" = 0 ]; then exit 0; fi; sleep 0.5"},
                        withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  CHECK(mwms.exitCode == 0);
  CHECK(mwms.err.find("chief finished") == std::string::npos);
}

TEST_CASE("every rank has both files of --output-filename, empty for a rank that never writes", "[e2e][mp]") {
  TempDir out;
  auto run = runHvdrun({"-np", "3", "--output-filename", out.path() + "/logs", "sh", "-c",
                        "if [ \"$RANK\" = 1 ]; then echo one; fi"},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  REQUIRE(run.exitCode == 0);
  for (int rank = 0; rank < 3; ++rank) {
    for (const char* stream : {"stdout", "stderr"}) {
      std::string path = out.path() + "/logs/rank." + std::to_string(rank) + "/" + stream;
      std::ifstream file(path);
      INFO(path);
      REQUIRE(file.good());
      std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
      CHECK(text == (rank == 1 && std::string(stream) == "stdout" ? "one\n" : ""));
    }
  }
}

TEST_CASE("the failure summary counts ranks that ended with errors of their own apart from those hvdrun stopped",
          "[e2e][mp]") {
  // Rank 1 fails first; rank 2 ignores the SIGTERM and fails by itself a moment later (a
  // peer's death seen first); ranks 0 and 3 are stopped.
  const std::string script =
      "case $RANK in 1) sleep 0.3; exit 3 ;; 2) trap '' TERM; sleep 1; exit 4 ;; *) exec sleep 30 ;; esac";
  auto run = runHvdrun({"-np", "4", "sh", "-c", script},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  CHECK(run.exitCode == 3);
  CHECK(run.err.find("hvdrun: error: rank 1 exited with code 3") != std::string::npos);
  CHECK(run.err.find("  hvdrun stopped 2 other rank(s) of 4; 1 other(s) ended with errors of their own (rank(s) 2); "
                     "exit code 3\n") != std::string::npos);
}

TEST_CASE("hvdrun exits with the rank's code when nobody reads its output any more", "[e2e][mp]") {
  // `| true` has exited before the ranks end: hvdrun's own report of their failure meets
  // EPIPE. The ranks write nothing: output of a rank still running into that pipe stops the
  // job as SIGPIPE would (141, closed_console_e2e_test.cc), and a rank that writes and then
  // exits 3 at once races that stop.
  std::string script = "\"$0\" -np 2 sh -c 'sleep 0.3; exit 3' 2>&1 | true; echo \"rc=${PIPESTATUS[0]}\"";
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  auto run = hvd::cli::runAndCapture({"bash", "-c", script, HVD_HVDRUN_PATH}, o);
  REQUIRE(run.isOk());
  CHECK(run->out == "rc=3\n");
  // And a rank's own pipes still end it by SIGPIPE as usual (hvdrun's ignoring is not inherited).
  auto rank = hvd::test::runHvdrun({"-np", "1", "sh", "-c", "yes | head -c 10 >/dev/null; echo done"}, o);
  CHECK(rank.exitCode == 0);
  CHECK(rank.out.find("done") != std::string::npos);
  CHECK(rank.err.find("Broken pipe") == std::string::npos);  // yes(1) says so when SIGPIPE is ignored
}

TEST_CASE("running out of file descriptors names the limit and how many the job needs", "[e2e][mp]") {
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  auto run = hvd::cli::runAndCapture({"sh", "-c", "ulimit -n 40 && exec \"$0\" -np 16 true", HVD_HVDRUN_PATH}, o);
  REQUIRE(run.isOk());
  INFO(run->err);
  CHECK(run->exitCode == 3);
  CHECK(run->err.find(": Too many open files\n") != std::string::npos);
  CHECK(run->err.find("  hint: hvdrun needs about 128 file descriptors for 16 ranks on this machine, and this process "
                      "may open 40 (ulimit -n)") != std::string::npos);
}

TEST_CASE("a job whose ranks' pipes cannot fit under the descriptor limit fails before any rank starts", "[e2e][mp]") {
  // -np 100000 for -np 10: before, hvdrun forked ranks until the descriptors ran out (44 s
  // at a limit of 20000), and the first ones ran the program.
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  auto run = hvd::cli::runAndCapture(
      {"sh", "-c", "ulimit -n 200 && exec \"$0\" -np 20000 sh -c 'echo started'", HVD_HVDRUN_PATH}, o);
  REQUIRE(run.isOk());
  INFO(run->err);
  CHECK(run->exitCode == 3);
  CHECK(run->out.find("started") == std::string::npos);
  CHECK(run->err.find("hvdrun: error: starting 20000 ranks: Too many open files\n  hint: hvdrun needs about 80064 file "
                      "descriptors for 20000 ranks on this machine, and this process may open 200 (ulimit -n)") !=
        std::string::npos);
}

TEST_CASE("a typo'd np of a million is refused on the descriptor limit before anything per rank is built", "[e2e][mp]") {
  // Before, hvdrun built every rank's environment first: 7.5 KB a rank, a million of them in
  // 37 s and 7.5 GB before the same error, and under a 2 GB address-space limit it died of
  // std::bad_alloc ("internal error").
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(30);
  auto run = hvd::cli::runAndCapture(
      {"sh", "-c", "ulimit -n 200 && ulimit -v 2000000 && exec \"$0\" -np 1000000 sh -c 'echo started'", HVD_HVDRUN_PATH},
      o);
  REQUIRE(run.isOk());
  INFO(run->err);
  CHECK(run->exitCode == 3);
  CHECK(run->out.find("started") == std::string::npos);
  CHECK(run->err.find("internal error") == std::string::npos);
  CHECK(run->err.find("hvdrun: error: starting 1000000 ranks: Too many open files\n  hint: hvdrun needs about 4000064 "
                      "file descriptors for 1000000 ranks on this machine, and this process may open 200 (ulimit -n)") !=
        std::string::npos);
}

TEST_CASE("a fork refused by the user's process limit names the limit and how many ranks had started", "[e2e][mp]") {
  // RLIMIT_NPROC binds no root process: as root the job runs as nobody (setpriv), else as is.
  const bool root = ::geteuid() == 0;
  if (root && ::access("/usr/bin/setpriv", X_OK) != 0) hvd::test::skipTest("running as root and without setpriv to become another user");
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  const std::vector<std::string> asNobody = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  if (root) {
    std::vector<std::string> probe = asNobody;
    probe.insert(probe.end(), {"test", "-x", HVD_HVDRUN_PATH});
    auto can = hvd::cli::runAndCapture(probe, o);
    if (!can.isOk() || can->exitCode != 0) hvd::test::skipTest("user nobody cannot run " HVD_HVDRUN_PATH " (the checkout's permissions)");
  }
  std::string script = "cd /tmp && ulimit -u 60 && exec \"$0\" -np 100 sleep 3";
  std::vector<std::string> argv = {"bash", "-c", script, HVD_HVDRUN_PATH};  // dash has no ulimit -u
  if (root) argv.insert(argv.begin(), asNobody.begin(), asNobody.end());
  auto run = hvd::cli::runAndCapture(argv, o);
  REQUIRE(run.isOk());
  INFO(run->err);
  CHECK(run->exitCode == 3);
  CHECK(run->err.find("hvdrun: error: fork for rank ") != std::string::npos);
  CHECK(run->err.find(": Resource temporarily unavailable\n  hint: this user may run 60 processes at once (ulimit -u)") !=
        std::string::npos);
  CHECK(run->err.find("ranks of 100 had started; raise the limit or start fewer ranks here") != std::string::npos);
}

TEST_CASE("a soft descriptor limit too low for the job is raised for hvdrun and left as it was for the ranks", "[e2e][mp]") {
  // 60 ranks hold 120 pipe ends and more while they start: before, a soft limit of 100 under
  // a higher hard one failed the job, as a hard limit of 100 still does.
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  auto run = hvd::cli::runAndCapture(
      {"sh", "-c", "ulimit -S -n 100 && exec \"$0\" -np 60 sh -c 'ulimit -Sn'", HVD_HVDRUN_PATH}, o);
  REQUIRE(run.isOk());
  INFO(run->out << run->err);
  CHECK(run->exitCode == 0);
  for (int rank = 0; rank < 60; ++rank) CHECK(run->out.find("[" + std::to_string(rank) + "]<stdout>:100\n") != std::string::npos);
}

TEST_CASE("a rank's detached child holding its output pipe delays hvdrun's end by the drain grace only, without spinning", "[e2e][mp]") {
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(20);
  auto cpuOfChildren = [] {
    rusage usage{};
    ::getrusage(RUSAGE_CHILDREN, &usage);  // every waited-for descendant: hvdrun included
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  };
  double cpuBefore = cpuOfChildren();
  auto started = std::chrono::steady_clock::now();
  auto run = hvd::test::runHvdrun({"-np", "1", "sh", "-c", "setsid sleep 7.77 & echo rank-done"}, o);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  double cpu = cpuOfChildren() - cpuBefore;
  (void)hvd::cli::runAndCapture({"pkill", "-f", "sleep 7.77"});  // the detached child is not the job's: stop it here
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.out.find("[0]<stdout>:rank-done") != std::string::npos);
  CHECK(seconds < 4);  // was the child's whole 7.77 s
  CHECK(cpu < 0.5);    // was ~7 s of CPU spinning on EAGAIN
}

TEST_CASE("output files that cannot be written are reported once each with the reason and a successful job exits 3", "[e2e][mp]") {
  hvd::cli::RunOptions o = hvd::test::withEnv(hvd::test::environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  hvd::test::TempDir dir;
  auto probe = hvd::cli::runAndCapture({"unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs \"$0\"", dir.path()}, o);
  if (!probe.isOk() || probe->exitCode != 0) hvd::test::skipTest("cannot mount a tmpfs in a private mount namespace here (needs root)");
  // A 64 KiB file system and 2 ranks writing 200 KB each: the files fill it up.
  auto full = hvd::cli::runAndCapture(
      {"unshare", "-m", "sh", "-c",
       "mount -t tmpfs -o size=64k tmpfs \"$1\" && exec \"$0\" -np 2 --output-filename \"$1/out\" sh -c "
       "'head -c 200000 /dev/zero | tr \"\\0\" x | fold -w 100'",
       HVD_HVDRUN_PATH, dir.path()},
      o);
  REQUIRE(full.isOk());
  INFO(full->err);
  CHECK(full->exitCode == 3);
  for (int r = 0; r < 2; ++r) {
    std::string warning = "hvdrun: warning: writing " + dir.path() + "/out/rank." + std::to_string(r) +
                          "/stdout: No space left on device; that rank's output file is incomplete\n";
    size_t at = full->err.find(warning);
    CHECK(at != std::string::npos);
    CHECK(full->err.find(warning, at + 1) == std::string::npos);  // once
  }
  CHECK(full->err.find("hvdrun: error: 2 of the ranks' output files in " + dir.path() + "/out are incomplete") !=
        std::string::npos);
  // A read-only file system: the reason is mkdir's, not the open's ENOENT.
  auto readOnly = hvd::cli::runAndCapture(
      {"unshare", "-m", "sh", "-c",
       "mount -t tmpfs tmpfs \"$1\" && mkdir \"$1/out\" && mount -o remount,ro \"$1\" && "
       "exec \"$0\" -np 1 --output-filename \"$1/out\" true",
       HVD_HVDRUN_PATH, dir.path()},
      o);
  REQUIRE(readOnly.isOk());
  INFO(readOnly->err);
  CHECK(readOnly->exitCode == 3);
  CHECK(readOnly->err.find("creating " + dir.path() + "/out/rank.0: Read-only file system") != std::string::npos);
  CHECK(readOnly->err.find("No such file") == std::string::npos);
}

// Waits up to `limit` for pid to end; its wait status, or nullopt when it still runs.
static std::optional<int> waitFor(int pid, std::chrono::milliseconds limit) {
  auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

TEST_CASE("a console that stopped reading does not keep hvdrun from obeying SIGTERM", "[e2e][mp]") {
  // A terminal paused with Ctrl-S, or a pipe nobody reads: hvdrun's stdout is full, alone
  // or with stderr in the same pipe (`hvdrun ... 2>&1 | (sleep 60)`), where its own last
  // words would block too.
  const bool stderrToo = GENERATE(false, true);
  INFO((stderrToo ? "2>&1" : "stdout only"));
  int console[2];
  REQUIRE(::pipe(console) == 0);
  auto env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  int pid = spawnHvdrun({"-np", "2", "sh", "-c", "head -c 2000000 /dev/zero | tr '\\0' x | fold -w 99; exec sleep 30"},
                        env, console[1], false, stderrToo ? console[1] : -1);
  ::close(console[1]);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the pipe and hvdrun's buffer are full by now
  REQUIRE(::kill(pid, SIGTERM) == 0);
  auto sent = Clock::now();
  auto status = waitFor(pid, std::chrono::seconds(4));
  double seconds = std::chrono::duration<double>(Clock::now() - sent).count();
  if (!status) {
    ::kill(pid, SIGKILL);
    (void)waitFor(pid, std::chrono::seconds(5));
  }
  ::close(console[0]);
  REQUIRE(status.has_value());  // was blocked in write() until someone read the console
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 128 + SIGTERM);
  CHECK(seconds < 3);
}

TEST_CASE("a console that stalls and then reads again gets every line whole and in each rank's order", "[e2e][mp]") {
  int console[2];
  REQUIRE(::pipe(console) == 0);
  auto env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  int pid = spawnHvdrun({"-np", "4", "sh", "-c", "seq 1 50000"}, env, console[1]);
  ::close(console[1]);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // nobody reads: the ranks must wait, not lose lines
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(console[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    REQUIRE(n > 0);
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(console[0]);
  auto status = waitFor(pid, std::chrono::seconds(20));
  REQUIRE(status.has_value());
  CHECK(WEXITSTATUS(*status) == 0);
  std::vector<int> next(4, 1);
  size_t lines = 0, bad = 0;
  std::regex form(R"(\[([0-3])\]<stdout>:([0-9]+))");
  for (const std::string& line : linesOf(text)) {
    ++lines;
    std::smatch m;
    if (!std::regex_match(line, m, form)) {
      ++bad;
      continue;
    }
    int rank = std::stoi(m[1]);
    if (std::stoi(m[2]) != next[static_cast<size_t>(rank)]++) ++bad;
  }
  CHECK(lines == 200000);
  CHECK(bad == 0);
}

TEST_CASE("a rank that writes hundreds of megabytes without a newline does not make hvdrun hold them", "[e2e][mp]") {
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  auto run = hvd::cli::runAndCapture(
      {"sh", "-c", "\"$0\" -np 1 sh -c 'head -c 300000000 /dev/zero' >/dev/null; echo rc=$?", HVD_HVDRUN_PATH}, o);
  REQUIRE(run.isOk());
  CHECK(run->out == "rc=0\n");
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);  // the largest of every waited-for descendant: hvdrun's
  INFO("max RSS of a child: " << usage.ru_maxrss << " KiB");
  CHECK(usage.ru_maxrss < 150 * 1024);  // was ~590 MB: the whole "line"
}

TEST_CASE("with stderr closed hvdrun keeps its summary in the output directory and writes it nowhere else", "[e2e][mp]") {
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  TempDir dir;
  const std::string out = dir.path() + "/out";
  // 2>&-: hvdrun starts without an fd 2; unless hvdrun fills it first, the first file it
  // opens becomes its "stderr" (the rendezvous socket, a rank's output file). Rank 1 fails only once rank 0
  // has written both lines (its mark, up to 10 s): stopped before its second echo, rank 0
  // would have no stderr to keep.
  auto run = hvd::cli::runAndCapture(
      {"sh", "-c",
       "MARK=\"$1.written\" \"$0\" -np 2 --output-filename \"$1\" sh -c 'echo out; echo err >&2; "
       "if [ $RANK = 1 ]; then for i in $(seq 1000); do [ -e \"$MARK\" ] && break; sleep 0.01; done; exit 3; fi; "
       "touch \"$MARK\"; exec sleep 30' 2>&-; echo rc=$?",
       HVD_HVDRUN_PATH, out},
      o);
  REQUIRE(run.isOk());
  CHECK(run->out.find("rc=3\n") != std::string::npos);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  std::string summary = slurp(out + "/summary");
  INFO(summary);
  CHECK(summary.rfind("hvdrun: error: rank 1 exited with code 3 (host ", 0) == 0);
  CHECK(summary.find("  hvdrun stopped 1 other rank(s) of 2; exit code 3\n") != std::string::npos);
  for (int rank : {0, 1}) {
    CHECK(slurp(out + "/rank." + std::to_string(rank) + "/stdout") == "out\n");
    CHECK(slurp(out + "/rank." + std::to_string(rank) + "/stderr") == "err\n");
  }
}

TEST_CASE("a job that ends well leaves no summary from an earlier run in the output directory", "[e2e][mp]") {
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  TempDir dir;
  auto failed = runHvdrun({"-np", "1", "--output-filename", dir.path(), "sh", "-c", "exit 4"}, o);
  CHECK(failed.exitCode == 4);
  CHECK(::access((dir.path() + "/summary").c_str(), F_OK) == 0);
  auto ok = runHvdrun({"-np", "1", "--output-filename", dir.path(), "true"}, o);
  CHECK(ok.exitCode == 0);
  CHECK(::access((dir.path() + "/summary").c_str(), F_OK) != 0);
}

TEST_CASE("a file named summary in the output directory that hvdrun did not write is left as it was", "[e2e]") {
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  TempDir dir;
  const std::string mine = dir.path() + "/summary";
  std::ofstream(mine) << "my notes on the last run\n";
  for (const char* code : {"0", "4"}) {
    auto run = runHvdrun({"-np", "1", "--output-filename", dir.path(), "sh", "-c", std::string("exit ") + code}, o);
    CHECK(run.exitCode == std::stoi(code));
    std::ifstream in(mine);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str() == "my notes on the last run\n");
    if (std::string(code) == "4") CHECK(run.err.find(mine + " is not hvdrun's") != std::string::npos);
  }
}

TEST_CASE("a rank frozen by SIGSTOP is named when a peer fails waiting for it and is stopped without waiting for SIGKILL", "[e2e][mp]") {
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "HVD_TIMEOUT=3"}));
  o.timeout = std::chrono::seconds(60);
  // Rank 2 freezes itself once the loop runs; its peers give up after HVD_TIMEOUT. The
  // loop ignores SIGTERM, but once continued, rank 2 finds its peers gone and ends.
  auto started = Clock::now();
  auto run = runHvdrun({"-np", "3", "--kill-grace", "20", "sh", "-c",
                        "if [ $RANK = 2 ]; then (sleep 1; kill -STOP $$) & fi; exec \"$0\" loop -1", HVD_COLLECTIVE_RANK_PATH},
                       o);
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  INFO(run.err);
  CHECK(run.exitCode == 1);
  CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [01] exited with code 1)")));
  CHECK(std::regex_search(run.err, std::regex(R"(\n  rank\(s\) 2 was stopped \(SIGSTOP, or a debugger\) when rank [01] failed: )"
                                              R"(a stopped rank stalls its peers until their timeout, so look there first\n)")));
  CHECK(seconds < 15);  // the frozen rank was continued with its SIGTERM, not left for the 20 s grace
}

namespace {

// The CPUs this test process may use (what hvdrun started from here may use too).
std::vector<int> usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  ::sched_getaffinity(0, sizeof set, &set);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace

TEST_CASE("with --bind-to core each local rank runs on CPUs of its own and its children inherit them", "[e2e][mp]") {
  const auto usable = usableCpus();
  if (usable.size() < 2) hvd::test::skipTest("needs 2 usable CPUs; this process may use " + std::to_string(usable.size()));
  auto run = runHvdrun({"-np", "2", "--bind-to", "core", "sh", "-c", "sh -c 'grep Cpus_allowed_list /proc/self/status'"},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  auto cpus = hvd::test::cpusByRank(run.out);
  REQUIRE(cpus.size() == 2);
  CHECK(!cpus[0].empty());
  CHECK(!cpus[1].empty());
  for (int c : cpus[0]) CHECK(cpus[1].count(c) == 0);
  for (const auto& [rank, set] : cpus) {
    for (int c : set) CHECK(std::find(usable.begin(), usable.end(), c) != usable.end());
  }
}

TEST_CASE("hvdrun --bind-to core with more ranks than usable cores is refused before any rank starts and names both counts", "[e2e][mp]") {
  const int cores = static_cast<int>(usableCpus().size());  // at most this many cores, with SMT fewer
  auto run = runHvdrun({"-np", std::to_string(cores + 1), "--bind-to", "core", "sh", "-c", "echo started"},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  INFO(run.err);
  CHECK(run.exitCode == 2);
  CHECK(run.out.find("started") == std::string::npos);
  CHECK(std::regex_search(run.err, std::regex("hvdrun: error: --bind-to core: " + std::to_string(cores + 1) +
                                              R"( ranks on this host, but hvdrun may use only \d+ core\(s\) here)")));
}

TEST_CASE("hvdrun --bind-to core:overload-allowed with more ranks than cores deals them round robin over the cores",
          "[e2e][mp]") {
  // One rank more than the usable CPUs, so more than the cores whatever the SMT: each rank is
  // on one whole core, ranks sharing a core have the same CPUs and the first `cores` ranks
  // have a core each, as mpirun -bind-to core:overload-allowed -map-by slot places them.
  const auto usable = usableCpus();
  const int np = static_cast<int>(usable.size()) + 1;
  auto run = runHvdrun({"-np", std::to_string(np), "--bind-to", "core:overload-allowed", "sh", "-c",
                        "sh -c 'grep Cpus_allowed_list /proc/self/status'"},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  auto cpus = hvd::test::cpusByRank(run.out);
  REQUIRE(static_cast<int>(cpus.size()) == np);
  std::set<std::set<int>> cores;
  for (const auto& [rank, set] : cpus) {
    CHECK(!set.empty());
    for (int c : set) CHECK(std::find(usable.begin(), usable.end(), c) != usable.end());
    for (const auto& [other, otherSet] : cpus) {
      std::vector<int> common;
      std::set_intersection(set.begin(), set.end(), otherSet.begin(), otherSet.end(), std::back_inserter(common));
      CHECK((set == otherSet || common.empty()));
    }
    cores.insert(set);
  }
  const int coreCount = static_cast<int>(cores.size());
  CHECK(coreCount < np);
  for (int r = 0; r < np; ++r) CHECK(cpus[r] == cpus[r % coreCount]);
}

TEST_CASE("without --bind-to even ranks that outnumber the cores keep every usable CPU", "[e2e][mp]") {
  // Binding is opt-in whatever the count: frameworks size their thread pools from the CPUs a
  // process may use, and TensorFlow's parameter-server job hung with one CPU a rank (np=4
  // on 2 cores, 2026-11-25; docs/benchmarks.md).
  const auto usable = usableCpus();
  std::set<int> all(usable.begin(), usable.end());
  auto run = runHvdrun({"-np", std::to_string(usable.size() + 1), "sh", "-c", "grep Cpus_allowed_list /proc/self/status"},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"})));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  auto cpus = hvd::test::cpusByRank(run.out);
  REQUIRE(cpus.size() == usable.size() + 1);
  for (const auto& [rank, set] : cpus) CHECK(set == all);
}

TEST_CASE("a rank that may use one CPU is given two TensorFlow inter-op threads unless the user chose", "[e2e][mp]") {
  // TensorFlow's parameter-server workers hang with an inter-op pool of one (thread_defaults.h).
  const auto usable = usableCpus();
  const int np = static_cast<int>(usable.size()) + 1;
  const std::string probe = "grep Cpus_allowed_list /proc/self/status; echo \"interop ${TF_NUM_INTEROP_THREADS:-unset}\"";
  auto run = runHvdrun({"-np", std::to_string(np), "--bind-to", "core:overload-allowed", "sh", "-c", probe},
                       withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "TF_NUM_INTEROP_THREADS"})));
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  auto cpus = hvd::test::cpusByRank(run.out);
  REQUIRE(static_cast<int>(cpus.size()) == np);
  for (const auto& [rank, set] : cpus) {
    const std::string want = set.size() == 1 ? "2" : "unset";
    CHECK(run.out.find("[" + std::to_string(rank) + "]<stdout>:interop " + want + "\n") != std::string::npos);
  }
  auto chosen = runHvdrun({"-np", std::to_string(np), "--bind-to", "core:overload-allowed", "sh", "-c", probe},
                          withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "TF_NUM_INTEROP_THREADS=5"})));
  INFO(chosen.out << chosen.err);
  REQUIRE(chosen.exitCode == 0);
  for (int rank = 0; rank < np; ++rank) {
    CHECK(chosen.out.find("[" + std::to_string(rank) + "]<stdout>:interop 5\n") != std::string::npos);
  }
}

TEST_CASE("a rank that shut hvd down early and lingers is stopped soon after its peers fail and they stay the cause", "[e2e][mp]") {
  // Rank 0's peers fail when it shuts down and name it (rendezvous peerGoneKey), so hvdrun
  // gives rank 0 a moment to end by itself; it does not (it sleeps 30 s), so it is stopped
  // with the others after that moment, and the peer that exited 1 is the cause.
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  auto started = Clock::now();
  auto run = runHvdrun({"-np", "3", "--kill-grace", "20", HVD_COLLECTIVE_RANK_PATH, "leave-early", "30"}, o);
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  INFO(run.err);
  CHECK(run.exitCode == 1);
  CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [12] exited with code 1)")));
  CHECK(run.err.find("rank 0 shut hvd down") != std::string::npos);
  CHECK(seconds < 10);  // SIGTERM after about 2 s, not the 20 s grace or the 30 s sleep
}

TEST_CASE("a rank that returned early with exit 0 is named in the report of the peer that failed for want of it", "[e2e][mp]") {
  // Rank 0 shuts hvd down and exits 0 (a script whose rank 0 returns before the others are
  // done); its peers fail. The report named only the peer, whose stderr said "rank 0 shut
  // hvd down", and not that rank 0 had simply ended.
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  for (int trial = 0; trial < 3; ++trial) {
    auto run = runHvdrun({"-np", "3", HVD_COLLECTIVE_RANK_PATH, "leave-early", "0"}, o);
    INFO(run.err);
    CHECK(run.exitCode == 1);
    CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [12] exited with code 1)")));
    CHECK(std::regex_search(run.err, std::regex(R"(\n  rank 0 had ended with exit code 0 while rank [12] still ran )"
                                                R"(collectives: every rank must make the same collective calls)")));
  }
}

TEST_CASE("under mpirun a rank that returned early with exit 0 is named in the report of the peer that failed for want of it",
          "[e2e][mp]") {
  // Through the task shims, which tell hvdrun of a clean end (they did in elastic jobs alone).
  if (!hvd::test::haveMpirun()) hvd::test::skipTest("no mpirun here");
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  auto run = runHvdrun({"--mpi", "-np", "3", HVD_COLLECTIVE_RANK_PATH, "leave-early", "0"}, o);
  INFO(run.err);
  CHECK(run.exitCode == 1);
  CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [12] exited with code 1)")));
  CHECK(std::regex_search(run.err, std::regex(R"(\n  rank 0 had ended with exit code 0 while rank [12] still ran )"
                                              R"(collectives: every rank must make the same collective calls)")));
}

TEST_CASE("a rank that shut hvd down early and is still ending when its moment passes is the cause and not its peers", "[e2e][mp]") {
  // As above, but rank 0 is already ending when its moment passes (on a loaded machine a
  // rank killed from outside may take that long to end): hvdrun's SIGTERM then only finds
  // it dying, as one sent to the others would, and its death is its own. Counted as a rank
  // hvdrun stopped, it would name a peer that failed for want of it (1 in 200 trials of the
  // orphans test's SIGTERM kills, in a full suite run).
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  auto started = Clock::now();
  auto run = runHvdrun({"-np", "3", "--kill-grace", "20", HVD_COLLECTIVE_RANK_PATH, "leave-early", "30", "0", "ending"}, o);
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  INFO(run.err);
  CHECK(run.exitCode == 128 + SIGTERM);
  CHECK(run.err.find("hvdrun: error: rank 0 was killed by SIGTERM") != std::string::npos);
  CHECK(seconds < 10);  // SIGTERM after about 2 s, not the 20 s grace or the 30 s sleep
}

TEST_CASE("a dying rank stays the cause when a peer that failed for want of it ends after it with an error", "[e2e][mp]") {
  // Rank 2 fails first and names rank 1, which has not yet said whose going failed it, so
  // hvdrun leaves rank 1 to end by itself; rank 0, ending all along, is stopped with the
  // rest and its death is its own. Rank 1 then exits 1 naming rank 0: it took the cause
  // over from the dying rank (1 in 200 trials of the orphans test's SIGTERM kills, in full
  // suite runs, where hvdrun was reaping late).
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"}));
  o.timeout = std::chrono::seconds(60);
  auto run = runHvdrun({"-np", "3", "--kill-grace", "20", HVD_TEST_RANK_PATH, "blame-chain"}, o);
  INFO(run.err);
  CHECK(run.exitCode == 128 + SIGTERM);
  CHECK(run.err.find("hvdrun: error: rank 0 was killed by SIGTERM") != std::string::npos);
}

TEST_CASE("a progress bar's carriage-return redraws reach the console as they come, each prefixed", "[e2e][mp]") {
  // tqdm writes "\r" before each redraw and "\n" only at the end: held for a newline, the
  // bar showed nothing until the rank was done. A redraw goes out when the next one begins,
  // or once the stream is quiet for a moment: the console shows the bar's state.
  int console[2];
  REQUIRE(::pipe(console) == 0);
  auto env = environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent"});
  int pid = spawnHvdrun({"-np", "1", "sh", "-c", "printf '\\r  0%%'; printf '\\r 50%%'; sleep 3; printf '\\r100%%\\n'"}, env,
                        console[1]);
  ::close(console[1]);
  std::string text;
  char buf[4096];
  auto deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline && text.find(" 50%\r") == std::string::npos) {
    pollfd p{console[0], POLLIN, 0};
    if (::poll(&p, 1, 100) == 1) {
      ssize_t n = ::read(console[0], buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
  }
  CHECK(text == "[0]<stdout>:  0%\r[0]<stdout>: 50%\r");  // within 2 s, while the rank still sleeps
  for (ssize_t n; (n = ::read(console[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(console[0]);
  auto status = waitFor(pid, std::chrono::seconds(20));
  REQUIRE(status.has_value());
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(text == "[0]<stdout>:  0%\r[0]<stdout>: 50%\r[0]<stdout>:100%\n");
}

TEST_CASE("torchrun's --nproc-per-node cpu starts a rank per CPU with GPUs left alone and gpu without a GPU says so",
          "[e2e]") {
  // Before, both were "--nproc-per-node expects a whole number".
  hvd::cli::RunOptions o = withEnv(environmentWith({"SLURM_JOB_ID", "SLURM_CONF=/nonexistent", "CUDA_VISIBLE_DEVICES"}));
  const int cpus = hvd::cli::usableCpuCount();
  auto run = runHvdrun({"--nproc-per-node", "cpu", "sh", "-c", "echo size=$HVD_SIZE gpus=${CUDA_VISIBLE_DEVICES-unset}"},
                       o);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  for (int r = 0; r < cpus; ++r) {
    CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:size=" + std::to_string(cpus) + " gpus=unset\n") !=
          std::string::npos);
  }
  if (hvd::backends::countLocalGpus() > 0) return;  // a GPU machine: gpu counts its GPUs
  auto none = runHvdrun({"--nproc-per-node", "gpu", "true"}, o);
  CHECK(none.exitCode == 2);
  CHECK(none.err.find("hvdrun: error: --nproc-per-node gpu, but host ") != std::string::npos);
  CHECK(none.err.find(" shows no GPU\n  hint: ") != std::string::npos);
}

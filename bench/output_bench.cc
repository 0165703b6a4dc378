// bench/output_bench.cc: how fast ranks' output gets through the launcher to a console
// that keeps up (a pipe this program drains). The same ranks writing straight to that pipe
// are the reference; hvdrun (prefixing every line, as by default) and mpirun beside them,
// in the same run. Prints the median of interleaved runs; asserts nothing.
//   output_bench [--ranks N] [--mb MB_PER_RANK] [--repeat N]
// HVD_BENCH_HVDRUN=/path/to/hvdrun compares another build (an older one, say).
// The ranks are this program itself in its writer mode (--write BYTES): lines of 100
// bytes, written 64 KiB at a time (the writer is never the bottleneck), then one write()
// per line (the writer sets the pace, as a line-buffered program's does).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

// lineWrites: one write() per line, as from a program whose stdout is unbuffered or
// line-buffered (python -u, PYTHONUNBUFFERED=1, stdbuf -oL): the case where the writer,
// not the launcher, sets the pace.
int writeLines(long long bytes, const char* rank, bool lineWrites) {
  std::string line = std::string("rank ") + rank + " ";
  line.resize(99, 'x');
  line += '\n';
  std::string block;
  while (block.size() + line.size() <= (lineWrites ? line.size() : 65536)) block += line;
  for (long long left = bytes; left > 0;) {
    size_t n = static_cast<size_t>(std::min<long long>(left, static_cast<long long>(block.size())));
    n -= n % line.size();
    if (n == 0) break;
    for (const char* p = block.data(); n > 0;) {
      ssize_t w = ::write(1, p, n);
      if (w < 0) return 1;
      p += w, n -= static_cast<size_t>(w), left -= w;
    }
  }
  return 0;
}

// Runs argv (ranks forked directly when `direct`) with stdout into a pipe drained here;
// seconds from start to the last byte and every process's end; -1 on failure.
double timedRun(const std::vector<std::string>& argv, int directRanks, long long* bytesSeen) {
  int pipeFds[2];
  if (::pipe(pipeFds) != 0) return -1;
  std::vector<pid_t> pids;
  auto start = std::chrono::steady_clock::now();
  int processes = directRanks > 0 ? directRanks : 1;
  for (int i = 0; i < processes; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(pipeFds[1], 1);
      ::close(pipeFds[0]);
      ::close(pipeFds[1]);
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 2);
      std::vector<std::string> args = argv;
      if (directRanks > 0) args.push_back(std::to_string(i));
      std::vector<char*> a;
      for (auto& s : args) a.push_back(s.data());
      a.push_back(nullptr);
      ::execvp(a[0], a.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  ::close(pipeFds[1]);
  static char buf[1 << 20];
  long long total = 0;
  for (ssize_t n; (n = ::read(pipeFds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) break;
    total += n;
  }
  ::close(pipeFds[0]);
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  *bytesSeen = total;
  if (!ok) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && (std::string(argv[1]) == "--write" || std::string(argv[1]) == "--write-lines")) {
    bool lineWrites = std::string(argv[1]) == "--write-lines";
    const char* rank = argc >= 4 ? argv[3] : std::getenv("HOROVOD_RANK");
    if (rank == nullptr) rank = std::getenv("OMPI_COMM_WORLD_RANK");
    return writeLines(std::atoll(argv[2]), rank != nullptr ? rank : "?", lineWrites);
  }
  int ranks = 4, repeat = 5;
  long long mb = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--ranks") ranks = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--mb") mb = std::max(1LL, std::atoll(argv[i + 1]));
    else if (flag == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
  }
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  ::unsetenv("SLURM_JOB_ID");
  const char* launcher = std::getenv("HVD_BENCH_HVDRUN");
  const std::string hvdrun = launcher != nullptr ? launcher : HVD_HVDRUN_PATH;
  const std::string self = argv[0][0] == '/' ? argv[0] : std::string(::get_current_dir_name()) + "/" + argv[0];
  const std::string bytes = std::to_string(mb * 1000 * 1000);
  const std::string np = std::to_string(ranks);
  for (const char* mode : {"--write", "--write-lines"}) {
    struct Row {
      const char* label;
      std::vector<std::string> argv;
      int directRanks;
      std::vector<double> seconds;
    };
    std::vector<Row> rows = {
        {"ranks straight into the pipe (reference)", {self, mode, bytes}, ranks, {}},
        {"hvdrun -np N (prefixed lines)", {hvdrun, "-np", np, self, mode, bytes}, 0, {}},
        {"hvdrun -np N --no-prefix", {hvdrun, "-np", np, "--no-prefix", self, mode, bytes}, 0, {}},
        {"mpirun -np N", {"mpirun", "-np", np, "--oversubscribe", self, mode, bytes}, 0, {}},
        {"mpirun -np N --tag-output", {"mpirun", "-np", np, "--oversubscribe", "--tag-output", self, mode, bytes}, 0, {}},
    };
    for (int r = 0; r < repeat; ++r) {
      for (Row& row : rows) {  // interleaved: a slow moment of the machine hits every row
        long long seen = 0;
        row.seconds.push_back(timedRun(row.argv, row.directRanks, &seen));
      }
    }
    std::printf("# %d ranks, %lld MB of 100-byte lines each, %s, into a pipe read at once; median of %d interleaved runs\n",
                ranks, mb, std::string(mode) == "--write" ? "written 64 KiB at a time" : "one write() per line", repeat);
    std::printf("# MB/s counts the ranks' own bytes (prefixes not included)\n");
    std::printf("%-44s %9s %9s %9s\n", "launcher", "seconds", "MB/s", "of ref");
    double reference = 0;
    for (Row& row : rows) {
      std::sort(row.seconds.begin(), row.seconds.end());
      double median = row.seconds[row.seconds.size() / 2];
      bool failed = std::any_of(row.seconds.begin(), row.seconds.end(), [](double s) { return s < 0; });
      if (failed) {
        std::printf("%-44s %9s\n", row.label, "failed");
        continue;
      }
      double rate = static_cast<double>(ranks) * static_cast<double>(mb) / median;
      if (reference == 0) reference = rate;
      std::printf("%-44s %9.2f %9.1f %8.0f%%\n", row.label, median, rate, 100.0 * rate / reference);
    }
    std::printf("\n");
  }
  return 0;
}

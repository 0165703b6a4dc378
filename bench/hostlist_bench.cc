// bench/hostlist_bench.cc: hostlist expansion and compression, ours beside Slurm's own
// `scontrol` on the same inputs in the same run. Prints medians; asserts nothing.
//   hostlist_bench [--repeat N]
// Three figures per case: our library call, our `hvdrun hostlist` process (the fair peer
// of a scontrol process), and `scontrol show ...` (needs only a slurm.conf, written here).
#include <unistd.h>

extern char** environ;

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cli/os/subprocess.h"
#include "slurm/hostlist.h"

namespace {

using Clock = std::chrono::steady_clock;

double medianMs(int repeat, const std::function<void()>& work) {
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto start = Clock::now();
    work();
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Median wall time of running a program; -1 when it fails or cannot run.
double processMs(int repeat, const std::vector<std::string>& argv, const std::vector<std::string>& env,
                 size_t* lines = nullptr) {
  hvd::cli::RunOptions options;
  options.env = env;
  options.timeout = std::chrono::seconds(60);
  bool ok = true;
  double ms = medianMs(repeat, [&] {
    auto r = hvd::cli::runAndCapture(argv, options);
    ok = ok && r.isOk() && r->succeeded();
    if (ok && lines != nullptr) *lines = static_cast<size_t>(std::count(r->out.begin(), r->out.end(), '\n'));
  });
  return ok ? ms : -1;
}

std::string cell(double ms) {
  if (ms < 0) return "      n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%9.2f", ms);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 11;
  if (argc == 3 && std::string(argv[1]) == "--repeat") repeat = std::max(1, std::atoi(argv[2]));

  char dir[] = "/tmp/hvd-bench.XXXXXX";
  if (::mkdtemp(dir) == nullptr) return 1;
  std::string conf = std::string(dir) + "/slurm.conf";
  // Slurm's clients fall back to DNS without a configuration: always give one.
  std::ofstream(conf) << "ClusterName=bench\nSlurmctldHost=localhost(127.0.0.1)\n";
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.push_back("SLURM_CONF=" + conf);
  auto scontrol = hvd::cli::findExecutable("scontrol", std::getenv("PATH") ? std::getenv("PATH") : "");

  std::printf("hostlist: median of %d runs, milliseconds (lower is better)\n", repeat);
  std::printf("%-44s %8s %9s %9s %9s %8s\n", "case", "names", "ours/lib", "ours/proc", "scontrol", "speedup");

  struct Case {
    std::string label, expression, mode;  // mode: hostnames | hostlist | hostlistsorted
  };
  // Slurm caps one range at 65536 hosts, so node[000001-100000] is written as two ranges.
  std::vector<Case> cases = {
      {"expand node[000001-065536,065537-100000]", "node[000001-065536,065537-100000]", "hostnames"},
      {"expand r[1-100]-n[1-1000]", "r[1-100]-n[1-1000]", "hostnames"},
      {"compress r[1-100]-n[1-1000] (100k names)", "r[1-100]-n[1-1000]", "hostlist"},
      {"sorted-compress n[1-50000],n[25000-75000]", "n[1-50000],n[25000-75000]", "hostlistsorted"},
  };
  for (const Case& c : cases) {
    auto names = hvd::slurm::expandHostlist(c.expression);
    if (!names) return 1;
    double lib = medianMs(repeat, [&] {
      auto n = hvd::slurm::expandHostlist(c.expression);
      if (c.mode == "hostlist") (void)hvd::slurm::compressHostlist(*n);
      if (c.mode == "hostlistsorted") (void)hvd::slurm::compressHostlistSorted(*n);
    });
    std::string flag = c.mode == "hostnames" ? "--expand" : c.mode == "hostlist" ? "--compress" : "--sorted";
    double ours = processMs(repeat, {HVD_HVDRUN_PATH, "hostlist", flag, c.expression}, env);
    double theirs = scontrol ? processMs(repeat, {*scontrol, "show", c.mode, c.expression}, env) : -1;
    char speedup[32] = "     n/a";
    if (theirs > 0 && ours > 0) std::snprintf(speedup, sizeof speedup, "%7.1fx", theirs / ours);
    std::printf("%-44s %8zu %s %s %s %s\n", c.label.c_str(), names->size(), cell(lib).c_str(), cell(ours).c_str(),
                cell(theirs).c_str(), speedup);
  }

  // Compression of an unordered list has no scontrol peer: 100,000 names exceed the 128 KiB
  // a single argument may hold, and scontrol's interactive mode splits long lines.
  std::vector<std::string> shuffled = *hvd::slurm::expandHostlist("node[000001-065536,065537-100000]");
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(1));
  double plain = medianMs(repeat, [&] { (void)hvd::slurm::compressHostlist(shuffled); });
  double sorted = medianMs(repeat, [&] { (void)hvd::slurm::compressHostlistSorted(shuffled); });
  std::printf("%-44s %8zu %s %9s %9s %8s\n", "compress 100k shuffled names", shuffled.size(), cell(plain).c_str(), "-",
              "n/a", "-");
  std::printf("%-44s %8zu %s %9s %9s %8s\n", "sorted-compress 100k shuffled names", shuffled.size(),
              cell(sorted).c_str(), "-", "n/a", "-");

  // Linear time: the cost per name should stay flat as the list grows.
  std::printf("\nexpansion cost per name (linear time means a flat column)\n%10s %12s\n", "names", "ns/name");
  for (int exponent : {3, 4, 5, 6}) {
    int hosts = 1;
    for (int i = 0; i < exponent; ++i) hosts *= 10;
    int groups = std::max(1, hosts / 1000);
    std::string e = "r[1-" + std::to_string(groups) + "]-n[1-" + std::to_string(hosts / groups) + "]";
    double ms = medianMs(repeat, [&] { (void)hvd::slurm::expandHostlist(e); });
    std::printf("%10d %12.1f\n", hosts, ms * 1e6 / hosts);
  }
  std::string cleanup = std::string("rm -rf ") + dir;
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}

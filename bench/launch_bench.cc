// bench/launch_bench.cc: the cost of starting and ending ranks that do nothing, hvdrun
// beside mpirun (and, inside a Slurm allocation, beside bare srun), in the same run.
// Prints medians; asserts nothing.
//   launch_bench [--repeat N]
// Inside an allocation (SLURM_JOB_ID set) it adds the srun rows; the project's test
// cluster gives one: tests/slurm/testbed.sh run -- salloc -N3 -n4 build/bench/launch_bench
// Under the ssh test hosts (HVD_SSHBED_HOSTS set) it compares 12 ranks on 3 hosts over ssh
// with mpirun's own ssh launch (its rsh agent) to the same hosts:
//   tests/ssh/sshbed.sh run -- build/bench/launch_bench
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/os/subprocess.h"

extern char** environ;

namespace {

// Median wall time of a command in ms; -1 when it fails.
double medianMs(int repeat, const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  hvd::cli::RunOptions options;
  options.env = env;
  options.timeout = std::chrono::seconds(60);
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto run = hvd::cli::runAndCapture(argv, options);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!run || !run->succeeded()) return -1;
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void row(const char* label, double ms, double reference) {
  if (ms < 0) {
    std::printf("%-46s %10s\n", label, "failed");
  } else if (reference > 0) {
    std::printf("%-46s %10.1f  (%.2fx of the peer)\n", label, ms, ms / reference);
  } else {
    std::printf("%-46s %10.1f\n", label, ms);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 11;
  if (argc == 3 && std::string(argv[1]) == "--repeat") repeat = std::max(1, std::atoi(argv[2]));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  const std::string hvdrun = HVD_HVDRUN_PATH;
  const bool inSlurm = std::getenv("SLURM_JOB_ID") != nullptr;
  std::printf("launch: median wall time of %d runs, milliseconds (lower is better)%s\n", repeat,
              inSlurm ? ", inside a Slurm allocation" : "");
  if (const char* sshHosts = std::getenv("HVD_SSHBED_HOSTS")) {
    // The same hosts, key, port and client configuration for both.
    std::string hosts, net = sshHosts;
    for (std::string rest = sshHosts; !rest.empty();) {
      size_t comma = rest.find(',');
      hosts += (hosts.empty() ? "" : ",") + rest.substr(0, comma) + ":4";
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
    net = net.substr(0, net.find(','));
    net = net.substr(0, net.rfind('.')) + ".0/24";
    const std::string ssh = std::getenv("HVD_SSHBED_SSH"), port = std::getenv("HVD_SSHBED_PORT"),
                      key = std::getenv("HVD_SSHBED_KEY");
    const std::string config = ssh.substr(ssh.rfind(' ') + 1);
    double mpirun = medianMs(repeat,
                             {"mpirun", "-np", "12", "-H", hosts, "--mca", "plm_rsh_agent", "ssh", "--mca",
                              "plm_rsh_args", "-F " + config + " -p " + port + " -i " + key, "--mca",
                              "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net, "true"},
                             env);
    row("mpirun -np 12 -H 3 ssh hosts true (peer)", mpirun, 0);
    row("hvdrun -np 12 -H 3 ssh hosts true",
        medianMs(repeat, {hvdrun, "-np", "12", "-H", hosts, "--ssh-command", ssh, "-p", port, "-i", key, "true"}, env),
        mpirun);
    row("ssh to one host, true (one login)",
        medianMs(repeat, {"ssh", "-F", config, "-p", port, "-i", key, hosts.substr(0, hosts.find(':')), "true"}, env), mpirun);
    return 0;
  }
  if (!inSlurm) {
    // --oversubscribe: four processes on a 2-core machine, as hvdrun runs them.
    double mpirun4 = medianMs(repeat, {"mpirun", "--oversubscribe", "-np", "4", "true"}, env);
    row("mpirun --oversubscribe -np 4 true (peer)", mpirun4, 0);
    row("hvdrun -np 1 true", medianMs(repeat, {hvdrun, "-np", "1", "true"}, env), mpirun4);
    row("hvdrun -np 4 true", medianMs(repeat, {hvdrun, "-np", "4", "true"}, env), mpirun4);
    row("hvdrun --mpi -np 4 true", medianMs(repeat, {hvdrun, "--mpi", "-np", "4", "true"}, env), mpirun4);
#ifdef HVD_MPI_HELLO_PATH
    // Start-up including each side's init: MPI_Init (+ one allreduce) against our runtime's
    // rendezvous (connect, prove the secret, register).
    double mpiInit = medianMs(repeat, {"mpirun", "--oversubscribe", "-np", "4", HVD_MPI_HELLO_PATH, "quiet"}, env);
    row("mpirun -np 4 + MPI_Init + allreduce (peer)", mpiInit, 0);
    row("hvdrun -np 4 + rendezvous registration", medianMs(repeat, {hvdrun, "-np", "4", HVD_TEST_RANK_PATH, "register", "-1", "0"}, env), mpiInit);
#endif
  } else {
    double srun4 = medianMs(repeat, {"srun", "-n", "4", "true"}, env);
    row("srun -n 4 true (peer)", srun4, 0);
    row("hvdrun -np 4 true (through srun)", medianMs(repeat, {hvdrun, "-np", "4", "true"}, env), srun4);
  }
  return 0;
}

// tests/e2e/plan_e2e_test.cc: `hvdrun --dry-run` / `hvdrun plan` as a user sees them,
// above all the exact error for each kind of bad input.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;
using hvd::test::withEnv;

namespace {

// Outside Slurm, with a Slurm configuration that cannot be read (no DNS lookups).
std::vector<std::string> plainEnv(std::vector<std::string> extra = {}) {
  extra.insert(extra.end(), {"SLURM_JOB_ID", "SLURM_JOBID", "CUDA_VISIBLE_DEVICES", "SLURM_CONF=/nonexistent/slurm.conf"});
  return environmentWith(extra);
}

hvd::cli::CapturedRun plan(const std::vector<std::string>& args, std::vector<std::string> extraEnv = {}) {
  std::vector<std::string> full{"plan"};
  full.insert(full.end(), args.begin(), args.end());
  return runHvdrun(full, withEnv(plainEnv(std::move(extraEnv))));
}

void checkUsageError(const hvd::cli::CapturedRun& run, const std::string& expected) {
  CHECK(run.exitCode == 2);
  CHECK(run.out.empty());
  CHECK(run.err == expected);
}

}  // namespace

TEST_CASE("bad host syntax names the item", "[e2e][plan]") {
  checkUsageError(plan({"-H", "a:2,b:x"}),
                  "hvdrun: error: -H item 2: 'b:x' has slot count 'x', which is not a whole number\n"
                  "  hint: write -H host:slots,host:slots, e.g. -H node01:4,node[02-03]:4\n");
}

TEST_CASE("a host that is no host name is refused naming it and what is wrong", "[e2e][plan]") {
  // 'a::2' was host 'a:' with 2 slots, and became MASTER_ADDR=a:.
  checkUsageError(plan({"-H", "a::2"}),
                  "hvdrun: error: -H item 1: 'a::2': host 'a:' holds ':', which no host name has (letters, digits, "
                  "'-', '_' and '.') (IPv6 addresses are not taken here: give the host's name; a slot count follows "
                  "one ':', as in 'node1:4')\n"
                  "  hint: write -H host:slots,host:slots, e.g. -H node01:4,node[02-03]:4\n");
  hvd::test::TempDir dir;
  std::ofstream(dir.path() + "/hosts") << "good slots=2\n" << std::string(100000, 'n') << " slots=1\n";
  auto run = plan({"--hostfile", dir.path() + "/hosts"});
  CHECK(run.exitCode == 2);
  CHECK(run.err.rfind("hvdrun: error: " + dir.path() + "/hosts:2:1: a host name of 100000 characters (at most 253)\n", 0) == 0);
}

TEST_CASE("zero or negative slots are refused", "[e2e][plan]") {
  checkUsageError(plan({"-H", "a:0"}), "hvdrun: error: -H item 1: 'a:0' has 0 slots; a host needs at least 1\n"
                                       "  hint: write -H host:slots,host:slots, e.g. -H node01:4,node[02-03]:4\n");
}

TEST_CASE("an -np larger than the slots names both numbers", "[e2e][plan]") {
  checkUsageError(plan({"-np", "5", "-H", "a:2,b:2"}), "hvdrun: error: -np 5 is more than the 4 slot(s) of -H a:2,b:2\n"
                                                       "  hint: lower -np, or give more hosts or slots (-H host:slots)\n");
}

TEST_CASE("more ranks than GPUs names the host and the counts", "[e2e][plan]") {
  checkUsageError(plan({"-np", "3"}, {"CUDA_VISIBLE_DEVICES=0,1"}),
                  "hvdrun: error: host " + hvd::test::hostName() + " offers 2 GPU(s) but its 3 rank(s) need 3 (1 each)\n"
                  "  hint: lower --gpus-per-rank, share GPUs with --oversubscribe-gpus, or run without them with --no-gpu\n");
}

TEST_CASE("TF roles that do not add up are refused", "[e2e][plan]") {
  checkUsageError(plan({"-np", "2", "--tf-config", "--tf-ps", "1", "--tf-evaluator"}),
                  "hvdrun: error: TF roles do not add up: 2 rank(s) cannot hold 1 parameter server(s), an evaluator and "
                  "at least one worker\n  hint: raise -np or lower --tf-ps\n");
}

TEST_CASE("two sources of hosts at once are refused", "[e2e][plan]") {
  hvd::test::TempDir dir;
  std::ofstream(dir.path() + "/hosts") << "a slots=2\n";
  checkUsageError(plan({"-H", "a:2", "--hostfile", dir.path() + "/hosts"}),
                  "hvdrun: error: -H and --hostfile both name the hosts: give one of them\n"
                  "  hint: -H suits a few hosts, --hostfile many\n");
}

TEST_CASE("hostfile errors give file, line and column", "[e2e][plan]") {
  hvd::test::TempDir dir;
  std::string path = dir.path() + "/hosts";
  std::ofstream(path) << "# two nodes\nnode1 slots=4\nnode2 slots=two\n";
  checkUsageError(plan({"--hostfile", path}), "hvdrun: error: " + path + ":3:13: slot count 'two' is not a whole number\n"
                                              "  hint: hostfile lines are 'host slots=N', 'host:N' or 'host'; # starts a comment\n");
  checkUsageError(plan({"--hostfile", dir.path() + "/missing"}),
                  "hvdrun: error: cannot read --hostfile: '" + dir.path() + "/missing' does not exist\n"
                  "  hint: --hostfile names a file of 'host slots=N' lines\n");
}

TEST_CASE("an unknown format lists the ones there are", "[e2e][plan]") {
  checkUsageError(plan({"-np", "1", "--format", "yaml"}),
                  "hvdrun: error: --format 'yaml' is not one of table, json, sh, hostfile, tf_config, mpi\n");
}

TEST_CASE("a broken Slurm environment explains how to get around it", "[e2e][plan]") {
  auto run = plan({}, {"SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n[1-3]", "SLURM_TASKS_PER_NODE=2(x2)"});
  checkUsageError(run, "hvdrun: error: reading the Slurm allocation: SLURM_TASKS_PER_NODE describes 2 node(s) but "
                       "SLURM_JOB_NODELIST lists 3\n"
                       "  hint: --no-slurm ignores the allocation; -H or --hostfile name hosts instead\n");
}

TEST_CASE("the dry run prints the plan and exits 0 without starting anything", "[e2e][plan]") {
  auto run = runHvdrun({"--dry-run", "-H", "a:2,b:1", "--format", "hostfile", "/nonexistent/prog"}, withEnv(plainEnv()));
  CHECK(run.exitCode == 0);
  CHECK(run.out == "a slots=2\nb slots=1\n");
  auto json = plan({"-np", "2", "--format", "json"}, {"CUDA_VISIBLE_DEVICES=4,5"});
  CHECK(json.exitCode == 0);
  CHECK(json.out.find(R"("gpus":["5"],"gpu_slots":[1],"role":"worker")") != std::string::npos);
  auto sh = plan({"-H", "a:1,b:1", "--format", "sh", "--rank", "1"});
  CHECK(sh.out.find("export RANK=1\nexport WORLD_SIZE=2\n") != std::string::npos);
}

TEST_CASE("other hosts that ssh cannot reach are reported with a hint before anything starts", "[e2e][plan]") {
  // 127.0.0.2 is not this machine's name, so hvdrun goes through ssh; port 1 has no sshd.
  // (tests/ssh/ssh_launch_test.cc runs real ssh launches against real sshd hosts.)
  auto started = std::chrono::steady_clock::now();
  auto run = runHvdrun({"-H", "127.0.0.2:2", "-p", "1", "/bin/true"}, withEnv(plainEnv()));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  INFO(run.err);
  CHECK(run.exitCode == 3);
  CHECK(run.err.rfind("hvdrun: error: 1 of 1 host(s) cannot start ranks; nothing was started:\n"
                      "  HOST       PROBLEM\n"
                      "  127.0.0.2  ssh: connect to host 127.0.0.2 port 1: Connection refused\n"
                      "               hint: no sshd listens on that host and port: start sshd there, or give its port "
                      "with -p/--ssh-port\n", 0) == 0);
}

TEST_CASE("every launched rank gets the same fresh secret, which no plan shows", "[e2e][plan]") {
  auto run = runHvdrun({"-np", "2", "/usr/bin/printenv", "HVD_SECRET_KEY"}, withEnv(plainEnv()));
  CHECK(run.exitCode == 0);
  auto lines = run.out;
  REQUIRE(lines.size() == 2 * (std::string("[0]<stdout>:").size() + 64 + 1));
  std::string first = lines.substr(lines.find(':') + 1, 64), second = lines.substr(lines.rfind(':') + 1, 64);
  CHECK(first == second);
  CHECK(first.find_first_not_of("0123456789abcdef") == std::string::npos);
  auto again = runHvdrun({"-np", "1", "/usr/bin/printenv", "HVD_SECRET_KEY"}, withEnv(plainEnv()));
  CHECK(again.out.find(first) == std::string::npos);
  CHECK(plan({"-np", "1", "--format", "json"}).out.find("SECRET") == std::string::npos);
}

TEST_CASE("ranks launched here see the job's GPUs with their planned one at their local rank", "[e2e][plan]") {
  // What torch.cuda.set_device(hvd.local_rank()) and LOCAL_RANK pick must be the rank's own.
  auto run = runHvdrun({"-np", "2", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES at $HVD_LOCAL_GPU local $LOCAL_RANK"},
                       withEnv(plainEnv({"CUDA_VISIBLE_DEVICES=6,7,9"})));
  CHECK(run.exitCode == 0);
  CHECK((run.out == "[0]<stdout>:6,7 at 0 local 0\n[1]<stdout>:6,7 at 1 local 1\n" ||
         run.out == "[1]<stdout>:6,7 at 1 local 1\n[0]<stdout>:6,7 at 0 local 0\n"));
}

namespace {

// Holds a TCP port (bound and listening on every address) for as long as it lives.
class HeldPort {
 public:
  explicit HeldPort(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    held_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd_, 1) == 0;
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~HeldPort() { ::close(fd_); }
  // False when another process already held it: taken either way.
  bool heldByUs() const { return held_; }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  bool held_ = false;
  int port_ = 0;
};

std::vector<int> tfPorts(const std::string& tfConfig) {
  std::vector<int> ports;
  std::regex address(R"(:(\d+)\")");
  for (auto it = std::sregex_iterator(tfConfig.begin(), tfConfig.end(), address); it != std::sregex_iterator(); ++it)
    ports.push_back(std::stoi((*it)[1]));
  return ports;
}

}  // namespace

TEST_CASE("without --tf-port-base, TF_CONFIG gets ports free on this machine, not a fixed 8888", "[e2e][plan]") {
  HeldPort old(8888);  // the old fixed default, taken (by us, or by whoever already had it)
  // A port free when hvdrun planned may be taken a moment later by a test running beside
  // this one (each binds ephemeral ports): a plan whose every port is still free when probed,
  // in one of three tries, shows they were chosen free. One try failed once in the suite.
  bool allFree = false;
  for (int attempt = 0; attempt < 3 && !allFree; ++attempt) {
    auto run = plan({"-np", "3", "--tf-config", "--format", "tf_config", "--rank", "0"});
    INFO(run.err);
    REQUIRE(run.exitCode == 0);
    auto ports = tfPorts(run.out);
    REQUIRE(ports.size() == 3);
    CHECK(std::set<int>(ports.begin(), ports.end()).size() == 3);
    allFree = true;
    for (int port : ports) {
      CHECK(port != 8888);
      HeldPort probe(port);
      allFree &= probe.heldByUs();
    }
  }
  CHECK(allFree);
}

TEST_CASE("an explicit --tf-port-base whose port is taken fails before any rank starts, naming port, rank and host", "[e2e][plan]") {
  HeldPort taken(0);
  REQUIRE(taken.heldByUs());
  auto run = runHvdrun({"-np", "2", "--tf-config", "--tf-port-base", std::to_string(taken.port()), "/bin/true"},
                       withEnv(plainEnv()));
  CHECK(run.exitCode == 3);
  CHECK(run.out.empty());
  CHECK(std::regex_search(run.err, std::regex("^hvdrun: error: TF_CONFIG port " + std::to_string(taken.port()) +
                                              R"( \(rank 0's, on \S+\) is in use\n  hint: another job)")));
}

TEST_CASE("torchrun's one-machine command line and mpirun's -n plan as they would there", "[e2e][plan]") {
  // PyTorch's documented single-node line: --standalone --nnodes=1 --nproc-per-node=K.
  auto torch = plan({"--standalone", "--nnodes=1", "--nproc-per-node=3", "--format", "json", "train.py"});
  INFO(torch.err);
  CHECK(torch.exitCode == 0);
  CHECK(torch.out.find("\"size\":3,") != std::string::npos);
  auto hosts = plan({"-H", "a:4,b:4", "--nproc_per_node", "2", "--format", "hostfile", "train.py"});
  CHECK(hosts.exitCode == 0);
  CHECK(hosts.out == "a slots=2\nb slots=2\n");
  auto mpi = plan({"-n", "2", "--format", "json", "prog"});
  CHECK(mpi.out.find("\"size\":2,") != std::string::npos);
  checkUsageError(plan({"--nnodes", "2", "--nproc-per-node", "2", "train.py"}),
                  "hvdrun: error: --nnodes 2, but this machine is 1 host\n"
                  "  hint: hvdrun starts every host's ranks itself from one command: leave --nnodes out, or give that "
                  "many hosts\n");
}

TEST_CASE("srun's ntasks-per-node given to a launch places that many a host and an allocation's options are refused",
          "[e2e][plan]") {
  // Both were ignored: --ntasks-per-node 1 planned 4 ranks, two on each host.
  auto perNode = plan({"-H", "a:2,b:2", "--ntasks-per-node", "1", "--format", "hostfile", "prog"});
  INFO(perNode.err);
  CHECK(perNode.exitCode == 0);
  CHECK(perNode.out == "a slots=1\nb slots=1\n");
  auto partition = plan({"-np", "2", "--partition", "gpu", "prog"});
  CHECK(partition.exitCode == 2);
  CHECK(partition.out.empty());
  CHECK(partition.err.rfind("hvdrun: error: --partition is for hvdrun sbatch: it shapes the allocation", 0) == 0);
  // In a profile, the same key stays quiet (it is there for hvdrun sbatch).
  auto profile = plan({"-np", "2", "--format", "hostfile", "prog"}, {"HVDRUN_PARTITION=gpu"});
  CHECK(profile.exitCode == 0);
}

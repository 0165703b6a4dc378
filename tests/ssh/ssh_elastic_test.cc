// tests/ssh/ssh_elastic_test.cc: elastic jobs over ssh (tests/ssh/sshbed.sh): a rank or a
// host lost, hosts a discovery script adds or drops, and each host's agent keeping its
// ranks' GPUs and cores as the world changes.
#include <catch2/catch.hpp>

#include "tests/ssh/ssh_bed.h"

using namespace hvd::test::sshbed;

TEST_CASE("over ssh an elastic job goes on without a rank killed on another host as a smaller world", "[ssh]") {
  // Ranks 0-1, 2-3 and 4-5 on the three hosts; rank 4 SIGKILLs itself mid-job.
  auto run = runSshJob(2, {"--min-np", "3", kCollectiveRank, "elastic", "4"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("hvdrun: rank 4 was killed by SIGKILL; the other 5 rank(s) go on without it as the job's "
                     "world 1 (--min-np 3)") != std::string::npos);
  const std::vector<std::pair<int, int>> workerRank{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {5, 4}};
  for (auto [worker, rank] : workerRank) {
    CHECK(run.out.find("[" + std::to_string(worker) + "]<stdout>:elastic done worker " + std::to_string(worker) +
                       " rank " + std::to_string(rank) + " size 5 worlds 2") != std::string::npos);
  }
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh an elastic job goes on without a host whose agent was lost", "[ssh]") {
  // Rank 4 SIGKILLs the third host's agent: its two ranks go with it, and hvdrun hears of
  // the host only from the ssh connection's end. Both leave in one new world, one reset,
  // so --reset-limit 1 lets the job go on.
  auto run = runSshJob(2, {"--min-np", "3", "--reset-limit", "1", kCollectiveRank, "elastic", "4", "agent"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("hvdrun: ranks 4, 5 were lost with host " + bed().hosts[2] + " (its agent ") != std::string::npos);
  CHECK(run.err.find("; the other 4 rank(s) go on without them as the job's world 1 (--min-np 3)") !=
        std::string::npos);
  CHECK(run.err.find("hvdrun: rank 5 ") == std::string::npos);  // one line for the host
  for (int worker = 0; worker < 4; ++worker) {
    CHECK(run.out.find("[" + std::to_string(worker) + "]<stdout>:elastic done worker " + std::to_string(worker) +
                       " rank " + std::to_string(worker) + " size 4") != std::string::npos);
  }
  CHECK(run.out.find("[5]<stdout>:elastic done") == std::string::npos);
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh an elastic job grows onto a host its discovery script adds through a new host agent", "[ssh]") {
  // Ranks 0-3 on the first two hosts; worker 0 adds the third host (2 slots) to the
  // script's answer after its 5th allreduce: a new agent there starts ranks 4 and 5.
  const Bed& b = bed();
  hvd::test::DiscoveryScript discovery(b.hosts[0] + ":2\n" + b.hosts[1] + ":2\n");
  const std::string& script = discovery.path();
  std::string grown = b.hosts[0] + ":2\n" + b.hosts[1] + ":2\n" + b.hosts[2] + ":2\n";
  std::vector<std::string> args{"-H", b.hosts[0] + ":2," + b.hosts[1] + ":2", "--ssh-command", b.ssh, "-p", b.port,
                                "-i", b.key, "--host-discovery-script", script, kCollectiveRank, "elastic-grow", "150"};
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({discovery.fileVariable(), "DISCOVERY_GROWN=" + grown});
  auto run = hvd::test::runHvdrun(args, options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("hvdrun: the host discovery script gives " + b.hosts[2] + " 2 more slot(s): started rank(s) "
                     "4-5 there; the job's world 1 has 6 rank(s)") != std::string::npos);
  for (int worker = 0; worker < 6; ++worker) {
    CHECK(run.out.find("[" + std::to_string(worker) + "]<stdout>:elastic grown worker " + std::to_string(worker) +
                       " rank " + std::to_string(worker) + " size 6 worlds " + (worker < 4 ? "2" : "1")) !=
          std::string::npos);
  }
  // The added ranks are launched as what they are in the world they join: the third host's
  // local ranks 0 and 1 of 6 ranks (before: worker numbers, "rank=4 size=5 local=4").
  CHECK(run.out.find("[4]<stdout>:elastic grown worker 4 rank 4 size 6 worlds 1 launched as rank=4 size=6 local=0 ") !=
        std::string::npos);
  CHECK(run.out.find("[5]<stdout>:elastic grown worker 5 rank 5 size 6 worlds 1 launched as rank=5 size=6 local=1 ") !=
        std::string::npos);
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh under --bind-to core a rank added on a host takes the cores the rank that failed there held",
          "[ssh]") {
  // Two ranks a host, a core each; worker 1 (the first host's local rank 1) dies, and after
  // the cooldown a new agent there starts worker 4, which its agent pins to the block worker
  // 1 held: the cores worker 3 holds on the second host (the bed's hosts share this
  // machine's CPUs), not unpinned.
  if (usableCores() < 2) hvd::test::skipTest("needs 2 cores");
  const Bed& b = bed();
  hvd::test::DiscoveryScript discovery(b.hosts[0] + ":2\n" + b.hosts[1] + ":2\n");
  std::vector<std::string> args{"-H", b.hosts[0] + ":2," + b.hosts[1] + ":2", "--ssh-command", b.ssh, "-p", b.port,
                                "-i", b.key, "--host-discovery-script", discovery.path(), "--min-np", "1",
                                "--bind-to", "core", "--blacklist-cooldown-range", "1", "1", kCollectiveRank,
                                "elastic-grow", "150"};
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({discovery.fileVariable(), "ELASTIC_VICTIM=1@5"});
  auto run = hvd::test::runHvdrun(args, options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("1 more slot(s): started rank(s) 4 there") != std::string::npos);
  std::map<int, std::string> cpus;
  std::smatch m;
  const std::regex line(R"(\[\d+\]<stdout>:elastic cpus worker (\d+): ([0-9,]+)\n)");
  for (auto it = std::sregex_iterator(run.out.begin(), run.out.end(), line); it != std::sregex_iterator(); ++it) {
    cpus[std::stoi((*it)[1])] = (*it)[2];
  }
  REQUIRE(cpus.count(0) == 1);
  REQUIRE(cpus.count(3) == 1);
  REQUIRE(cpus.count(4) == 1);
  CHECK(cpus[4] == cpus[3]);
  CHECK(cpus[4] != cpus[0]);
  CHECK(processesMentioning("host-agent").empty());
}

namespace {

// An elastic job of `perHost` ranks on each of the first two hosts, whose discovery script's
// answer becomes `changed` after worker 0's 5th allreduce; `extra`: more of hvdrun's options.
hvd::cli::CapturedRun runDiscoveryJob(int perHost, const std::string& changed, const std::vector<std::string>& extra) {
  const Bed& b = bed();
  const std::string slots = std::to_string(perHost);
  hvd::test::DiscoveryScript discovery(b.hosts[0] + ":" + slots + "\n" + b.hosts[1] + ":" + slots + "\n");
  std::vector<std::string> args{"-H", b.hosts[0] + ":" + slots + "," + b.hosts[1] + ":" + slots, "--ssh-command", b.ssh,
                                "-p", b.port, "-i", b.key, "--host-discovery-script", discovery.path()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {kCollectiveRank, "elastic-grow", "150"});
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({discovery.fileVariable(), "DISCOVERY_GROWN=" + changed});
  return hvd::test::runHvdrun(args, options);
}

// 2 ranks on each of the first two hosts, the script's answer becoming `shrunk`.
hvd::cli::CapturedRun runShrinkingJob(const std::string& shrunk) { return runDiscoveryJob(2, shrunk, {"--min-np", "2"}); }

}  // namespace

TEST_CASE("over ssh a host the discovery script no longer lists has its agent stopped and the others go on", "[ssh]") {
  const Bed& b = bed();
  auto run = runShrinkingJob(b.hosts[0] + ":2\n");  // the second host dropped
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("hvdrun: the host discovery script no longer lists " + b.hosts[1] + ": stopping rank(s) 2, 3 "
                     "there; the job's world 1 has the other 2 rank(s)") != std::string::npos);
  CHECK(run.out.find("[0]<stdout>:elastic grown worker 0 rank 0 size 2 worlds 2") != std::string::npos);
  CHECK(run.out.find("[1]<stdout>:elastic grown worker 1 rank 1 size 2 worlds 2") != std::string::npos);
  CHECK(run.out.find("[2]<stdout>:elastic grown") == std::string::npos);
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh a host given fewer slots loses its newest rank while its agent keeps the other running", "[ssh]") {
  // Ranks 2 and 3 share the second host's agent; worker 0 cuts that host to 1 slot after
  // its 5th allreduce: rank 3 alone is stopped (before: only whole hosts went over ssh, and
  // the job ran on with 4 ranks).
  const Bed& b = bed();
  auto run = runShrinkingJob(b.hosts[0] + ":2\n" + b.hosts[1] + ":1\n");
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("hvdrun: the host discovery script gives 1 slot(s) on " + b.hosts[1] + ": stopping rank(s) 3 "
                     "there; the job's world 1 has the other 3 rank(s)") != std::string::npos);
  for (int worker = 0; worker < 3; ++worker) {
    CHECK(run.out.find("[" + std::to_string(worker) + "]<stdout>:elastic grown worker " + std::to_string(worker) +
                       " rank " + std::to_string(worker) + " size 3 worlds 2") != std::string::npos);
  }
  CHECK(run.out.find("[3]<stdout>:elastic grown") == std::string::npos);
  CHECK(run.err.find("error") == std::string::npos);
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh a job that grows after its ranks' last commit stops the new host's agent when they finish",
          "[ssh]") {
  const Bed& b = bed();
  hvd::test::DiscoveryScript discovery(b.hosts[0] + ":2\n");
  const std::string& script = discovery.path();
  std::vector<std::string> args{"-H", b.hosts[0] + ":2", "--ssh-command", b.ssh, "-p", b.port, "-i", b.key,
                                "--host-discovery-script", script, kCollectiveRank, "elastic-grow", "20", "late"};
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({discovery.fileVariable(), "DISCOVERY_GROWN=" + b.hosts[0] + ":2\n" +
                                                                           b.hosts[1] + ":2\n",
                                            "ELASTIC_ADDED_MARK=" + discovery.inDir("added")});
  const auto start = std::chrono::steady_clock::now();
  auto run = hvd::test::runHvdrun(args, options);
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("started rank(s) 2-3 there; the job's world 1 has 4 rank(s)") != std::string::npos);
  CHECK(run.err.find(" finished (exit 0) before the job's world 1 formed, so the job's training is done: stopping "
                     "rank(s) 2, 3, which were waiting for that world") != std::string::npos);
  // Stopped before anything told them their world would not form: no word of their own.
  CHECK(run.err.find("init failed") == std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  CHECK(processesMentioning("host-agent").empty());
}

namespace {

// Worker 0 on the first host, 1 on the second; after worker 0's 5th allreduce the script
// gives the first host a second slot, and worker 2 starts there through a new agent.
hvd::cli::CapturedRun runGrownBesideRank0(const std::vector<std::string>& extra) {
  const Bed& b = bed();
  return runDiscoveryJob(1, b.hosts[0] + ":2\n" + b.hosts[1] + ":1\n", extra);
}

}  // namespace

TEST_CASE("over ssh an elastic job grows beside the rank running on rank 0's host", "[ssh]") {
  // Two faults met here: rank 0's host was taken for hvdrun's own machine, so worker 2 was
  // started there under that host's name (and could not listen on its address); started on
  // the right host, it then took the second host's only rank for its local rank 0, whose
  // host board entry never came, and waited the whole timeout with its peers in the ring.
  auto run = runGrownBesideRank0({});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("more slot(s): started rank(s) 2 there; the job's world 1 has 3 rank(s)") != std::string::npos);
  CHECK(std::regex_search(run.out, std::regex(R"(\[2\]<stdout>:elastic grown worker 2 rank \d size 3 worlds 1 )"
                                              R"(launched as rank=\d size=3 local=1 )")));
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh a rank an elastic job adds beside a running one gets GPUs no running rank there holds", "[ssh]") {
  // The added rank's agent cannot tell which of its host's devices the first agent gave out:
  // hvdrun says which positions in the host's list are free, so it neither sees the host's
  // every device nor lacks HVD_LOCAL_GPU. Both hosts offer devices 4-7.
  hvd::test::TempDir dir;
  const std::string remote = hvdrunWithGpus(dir, "4,5,6,7");
  for (const char* perRank : {"1", "2"}) {
    auto run = runGrownBesideRank0({"--remote-hvdrun", remote, "--gpus-per-rank", perRank});
    INFO("--gpus-per-rank " << perRank << "\n" << run.out << run.err);
    CHECK(run.exitCode == 0);
    const bool one = std::string(perRank) == "1";
    // One a rank: the host's GPUs of the job in the new world's local order, its own at its
    // local rank; two: its own two alone.
    CHECK(std::regex_search(run.out, std::regex(R"(\[0\]<stdout>:elastic grown worker 0 rank \d size 3 worlds 2 )"
                                                R"(launched as rank=0 size=2 local=0 gpus=)" +
                                                std::string(one ? "4" : "4,5") + " at=0\n")));
    CHECK(std::regex_search(run.out, std::regex(R"(\[2\]<stdout>:elastic grown worker 2 rank \d size 3 worlds 1 )"
                                                R"(launched as rank=\d size=3 local=1 gpus=)" +
                                                std::string(one ? "4,5 at=1" : "6,7 at=0") + "\n")));
  }
  // Three a rank on a host of four: the added rank's three are not there; it is said, and the
  // rank runs seeing the host's.
  auto few = runGrownBesideRank0({"--remote-hvdrun", remote, "--gpus-per-rank", "3"});
  INFO(few.out << few.err);
  CHECK(few.exitCode == 0);
  CHECK(few.err.find(" offers 4 GPU(s), fewer than rank 2 added there needs beside the ranks running there: it gets "
                     "none of its own (it sees the host's)") != std::string::npos);
  CHECK(std::regex_search(few.out, std::regex(R"(\[2\]<stdout>:elastic grown worker 2 .* local=1 gpus=unset at=unset\n)")));
}

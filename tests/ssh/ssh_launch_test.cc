// tests/ssh/ssh_launch_test.cc: `hvdrun -H host:slots,...` outside Slurm, against real
// OpenSSH servers in network namespaces (tests/ssh/sshbed.sh): every rank runs on its host
// with its identity and the runtime's collectives work across hosts; a failing rank, a
// killed hvdrun or a signal end the job on every host; hosts that cannot start ranks are
// reported together before anything starts; arguments and the secret travel safely.
#include <catch2/catch.hpp>

#include "tests/ssh/ssh_bed.h"

using namespace hvd::test::sshbed;

TEST_CASE("over ssh each rank runs on its planned host with its planned identity", "[ssh]") {
  auto run = runSshJob(2, {kRank, "identity"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  checkTwoRanksPerHost(run.out);
}

TEST_CASE("a PBS node file and an LSF host list start each rank on its host over ssh as the same -H does", "[ssh]") {
  const Bed& b = bed();
  const std::string nodefile = b.dir + "/pbs_nodefile";
  {
    std::ofstream out(nodefile);
    for (int slot = 0; slot < 2; ++slot) {
      for (const auto& h : b.hosts) out << h << "\n";  // one line per slot, hosts interleaved
    }
  }
  std::string lsf;
  for (const auto& h : b.hosts) lsf += (lsf.empty() ? "" : " ") + h + " 2";
  const std::vector<std::string> ssh{"--ssh-command", b.ssh, "-p", b.port, "-i", b.key};
  for (const auto& env : {std::vector<std::string>{"PBS_NODEFILE=" + nodefile, "PBS_JOBID=7.pbs"},
                          std::vector<std::string>{"LSB_MCPU_HOSTS=" + lsf, "LSB_JOBID=8"}}) {
    hvd::cli::RunOptions options;
    options.timeout = std::chrono::seconds(60);
    options.env = hvd::test::environmentWith(env);
    std::vector<std::string> args = ssh;
    args.insert(args.end(), {"--dry-run"});
    auto plan = hvd::test::runHvdrun(args, options);
    INFO(env[0] << "\n" << plan.out << plan.err);
    CHECK(plan.exitCode == 0);
    CHECK(plan.out.find(env[0].rfind("PBS", 0) == 0 ? "PBS job 7.pbs (PBS_NODEFILE " + nodefile + ")"
                                                    : std::string("LSF job 8 (LSB_MCPU_HOSTS)")) != std::string::npos);
    args = ssh;
    args.insert(args.end(), {kRank, "identity"});
    auto run = hvd::test::runHvdrun(args, options);
    INFO(run.out << run.err);
    REQUIRE(run.exitCode == 0);
    checkTwoRanksPerHost(run.out);
  }
}

TEST_CASE("over ssh a rank that failed by itself is the root cause when the console's reader went away too, 200 times",
          "[ssh][slow]") {
  // Rank 1, on the second host, exits 3 right after its one line; `head -1` goes with the
  // first line. Its agent's report, the broken pipe and the agents' ends race; rank 1's
  // failure came first every time.
  const Bed& b = bed();
  std::string command = "\"$0\" -H " + b.hosts[0] + ":1," + b.hosts[1] + ":1 --ssh-command '" + b.ssh + "' -p " + b.port +
                        " -i " + b.key + " sh -c 'echo x; [ $HOROVOD_RANK = 1 ] && exit 3; sleep 5'";
  std::string script = "for i in $(seq 200); do " + command + " 2>&1 | head -1 >/dev/null; echo ${PIPESTATUS[0]}; done";
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(300);
  auto run = hvd::cli::runAndCapture({"bash", "-c", script, HVD_HVDRUN_PATH}, options);
  REQUIRE(run.isOk());
  std::map<int, int> codes;
  std::istringstream lines(run->out);
  for (std::string line; std::getline(lines, line);) ++codes[std::atoi(line.c_str())];
  CHECK(codes == std::map<int, int>{{3, 200}});
}

TEST_CASE("over ssh hvdrun says which of its addresses the other hosts reach it at and why", "[ssh]") {
  auto run = runSshJob(1, {"--verbose", "true"});
  INFO(run.err);
  REQUIRE(run.exitCode == 0);
  std::string net = bed().hosts[0].substr(0, bed().hosts[0].rfind('.'));
  CHECK(run.err.find("hvdrun: ranks on other hosts reach hvdrun at " + net + ".1 (this machine's address on the route to " +
                     bed().hosts[0] + "; --network-interface picks another)") != std::string::npos);
}

namespace {

// Three ranks, one per host, print each signal their handlers get; hvdrun is sent `signals`
// in turn. Returns the ranks' output and hvdrun's exit code.
std::pair<std::string, int> signalSshRanks(const std::vector<int>& signals) {
  hvd::test::TempDir pids, out;
  int fd = ::open((out.path() + "/out").c_str(), O_WRONLY | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  int hvdrun = hvd::test::spawnHvdrun(sshJob(1, {"--kill-grace", "1", kRank, "signals", "30"}),
                                      hvd::test::environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}), fd);
  ::close(fd);
  auto deadline = Clock::now() + std::chrono::seconds(20);
  while (hvd::test::readPidFiles(pids.path()).size() < 3 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(hvd::test::readPidFiles(pids.path()).size() == 3);
  // A rank writes its pid file once its handlers are in (test_rank.cc).
  for (size_t i = 0; i < signals.size(); ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    REQUIRE(::kill(hvdrun, signals[i]) == 0);
  }
  int code = waitExit(hvdrun);
  std::ifstream f(out.path() + "/out");
  return {std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()), code};
}

}  // namespace

TEST_CASE("SIGUSR1 and SIGHUP sent to hvdrun reach every rank on every host", "[ssh]") {
  auto [text, code] = signalSshRanks({SIGUSR1, SIGHUP});
  INFO(text);
  for (int r = 0; r < 3; ++r) {
    CHECK(text.find("[" + std::to_string(r) + "]<stdout>:got SIGUSR1\n") != std::string::npos);
    CHECK(text.find("[" + std::to_string(r) + "]<stdout>:got SIGHUP\n") != std::string::npos);
  }
  CHECK(code == 128 + SIGHUP);
}

TEST_CASE("SIGQUIT sent to hvdrun reaches every rank on every host and the job exits 131", "[ssh]") {
  // The agents raise it on themselves for their supervisor, so it does not kill them.
  auto [text, code] = signalSshRanks({SIGQUIT});
  INFO(text);
  for (int r = 0; r < 3; ++r) {
    CHECK(text.find("[" + std::to_string(r) + "]<stdout>:got SIGQUIT\n") != std::string::npos);
  }
  CHECK(code == 128 + SIGQUIT);
}

TEST_CASE("over ssh a rank the OOM killer ends is named by its host's agent as most likely out of memory", "[ssh]") {
  // Rank 1, on the second host, moves itself into a 64 MiB cgroup and allocates 256 MiB.
  const std::string cgroup = hvd::test::makeMemoryCgroup(64u << 20);
  if (cgroup.empty()) {
    hvd::test::skipTest("no memory cgroup can be made here (needs root and cgroup v1's memory or v2's memory.max)");
  }
  auto run = runSshJob(1, {"sh", "-c",
                           "if [ \"$HVD_RANK\" = 1 ]; then echo $$ > " + cgroup +
                               "/cgroup.procs && exec python3 -c 'b = bytearray(256 << 20)'; else sleep 30; fi"});
  hvd::test::removeCgroup(cgroup);
  INFO(run.err);
  const std::string host = bed().hosts[1];
  CHECK(run.exitCode == 137);
  CHECK(run.err.find("hvdrun: error: rank 1 was killed by SIGKILL (host " + host) != std::string::npos);
  CHECK(run.err.find("  the kernel's OOM killer ended 1 process(es) on " + host +
                     " while the rank ran (oom_kill in /proc/vmstat): rank 1 most likely ran out of memory") !=
        std::string::npos);
}

TEST_CASE("over ssh the runtime's collectives agree across three hosts", "[ssh]") {
  auto run = runSshJob(2, {kCollectiveRank, "check"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int rank = 0; rank < 6; ++rank) {
    CHECK(run.out.find("[" + std::to_string(rank) + "]<stdout>:ok ") != std::string::npos);
  }
  // Ranks on one host share memory; ranks on different hosts use TCP.
  auto identity = runSshJob(2, {kCollectiveRank, "identity"});
  INFO(identity.out << identity.err);
  CHECK(identity.out.find("[5]<stdout>:rank=5 size=6 local_rank=1 local_size=2 cross_rank=2 cross_size=3 homogeneous=1") !=
        std::string::npos);
  // Five ranks on hosts of two slots: 2, 2 and 1, which every rank sees as not homogeneous,
  // the ranks of the hosts of 2 as well as the one alone.
  auto uneven = runSshJob(2, {"-np", "5", kCollectiveRank, "identity"});
  INFO(uneven.out << uneven.err);
  CHECK(uneven.exitCode == 0);
  for (int rank = 0; rank < 5; ++rank) {
    CHECK(std::regex_search(uneven.out, std::regex("\\[" + std::to_string(rank) + "\\]<stdout>:rank=" +
                                                   std::to_string(rank) + " size=5 .* homogeneous=0 ops=tcp\n")));
  }
}

TEST_CASE("over ssh every rank's timeline is on rank 0's clock although each host's steady clock is 1000 s apart",
          "[ssh]") {
  const Bed& b = bed();
  REQUIRE(b.clockAheadSeconds.size() == b.hosts.size());
  char dir[] = "/tmp/hvd-ssh-timeline-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  std::string path = std::string(dir) + "/trace.json";
  auto run = runSshJob(1, {"--timeline-filename", path, kEngineRank, "stall", "1"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  auto trace = hvd::readJsonFile(path);
  std::filesystem::remove_all(dir);
  REQUIRE(trace.isOk());
  // Per rank: the offset it wrote, when its negotiation of 'late' ended, and when it saw
  // the last rank ready (its tick).
  int ranks = static_cast<int>(b.hosts.size());
  std::map<int, double> offsetUs, decidedUs, lateTickUs;
  std::map<std::pair<int, int>, std::string> trackName;
  for (const auto& e : trace->array()) {
    if (e["name"].str() == "thread_name") trackName[{int(e["pid"].number()), int(e["tid"].number())}] = e["args"]["name"].str();
  }
  for (const auto& e : trace->array()) {
    int pid = static_cast<int>(e["pid"].number());
    if (e["name"].str() == "clock_offset") offsetUs[pid] = e["args"]["offset_to_rank_0_us"].number();
    if (!e.has("tid") || trackName[{pid, int(e["tid"].number())}] != "late") continue;
    if (e["name"].str() == "NEGOTIATE_ALLREDUCE") decidedUs[pid] = e["ts"].number() + e["dur"].number();
    if (e["name"].str() == std::to_string(ranks - 1)) lateTickUs[pid] = e["ts"].number();
  }
  REQUIRE(static_cast<int>(decidedUs.size()) == ranks);
  REQUIRE(static_cast<int>(lateTickUs.size()) == ranks);
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r << " on " << b.names[static_cast<size_t>(r)]);
    // Rank 0 reads its own clock; the others measured how far theirs is from it.
    double want = (b.clockAheadSeconds[0] - b.clockAheadSeconds[static_cast<size_t>(r)]) * 1e6;
    CHECK(std::abs(offsetUs[r] - want) < 500000);
    // The same moments, seen from every host, land together on rank 0's clock (without the
    // offsets they would be 1000 s apart).
    CHECK(std::abs(decidedUs[r] - decidedUs[0]) < 250000);
    CHECK(std::abs(lateTickUs[r] - lateTickUs[0]) < 250000);
  }
}

TEST_CASE("over ssh the line cap of --max-line-kb cuts a rank's long line where the rank runs", "[ssh]") {
  // Exactly 4 KiB, then 4 KiB and 1808 bytes: the agent cuts, hvdrun leaves its lines whole.
  auto run = runSshJob(1, {"--max-line-kb", "4", "sh", "-c", "head -c 10000 /dev/zero | tr '\\0' x; echo"});
  INFO(run.err);
  REQUIRE(run.exitCode == 0);
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(hvd::test::stdoutLineLengths(run.out, rank) == std::vector<size_t>{4096, 4096, 1808});
  }
  CHECK(run.out.find("\nxxxx") == std::string::npos);  // no piece without its prefix
}

TEST_CASE("over ssh --bind-to core gives each host's ranks cores of their own there and a host with too few fails before its ranks start",
          "[ssh]") {
  // The bed's hosts share this machine's CPUs, so each host's ranks split the same cores.
  const int cores = usableCores();
  if (cores < 2) hvd::test::skipTest("needs 2 cores; this process may use " + std::to_string(cores));
  auto run = runSshJob(2, {"--bind-to", "core", "sh", "-c", "grep Cpus_allowed_list /proc/self/status"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  auto cpus = hvd::test::cpusByRank(run.out);
  REQUIRE(cpus.size() == 6);
  for (int host = 0; host < 3; ++host) {
    const auto& first = cpus[2 * host];
    const auto& second = cpus[2 * host + 1];
    CHECK(!first.empty());
    CHECK(!second.empty());
    for (int c : first) CHECK(second.count(c) == 0);
  }

  // One rank more than cores on every host: each agent refuses before starting its ranks.
  auto tooMany = runSshJob(cores + 1, {"--bind-to", "core", "sh", "-c", "echo started"});
  INFO(tooMany.err);
  CHECK(tooMany.exitCode == 3);
  CHECK(tooMany.out.find("started") == std::string::npos);
  CHECK(tooMany.err.find(": --bind-to core: " + std::to_string(cores + 1) + " ranks on this host, but hvdrun may use only " +
                         std::to_string(cores) + " core(s) here") != std::string::npos);
  CHECK(tooMany.err.find("on " + bed().hosts[1] + ": --bind-to core") != std::string::npos);
}

TEST_CASE("over ssh --bind-to core:overload-allowed deals each host's ranks round robin over that host's cores",
          "[ssh]") {
  // One rank more than cores on every host: the host's last rank shares its first one's core.
  const int cores = usableCores();
  if (cores < 2) hvd::test::skipTest("needs 2 cores; this process may use " + std::to_string(cores));
  auto run = runSshJob(cores + 1,
                       {"--bind-to", "core:overload-allowed", "sh", "-c", "grep Cpus_allowed_list /proc/self/status"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  auto cpus = hvd::test::cpusByRank(run.out);
  REQUIRE(static_cast<int>(cpus.size()) == 3 * (cores + 1));
  for (int host = 0; host < 3; ++host) {
    const int first = host * (cores + 1);
    CHECK(!cpus[first].empty());
    CHECK(cpus[first + cores] == cpus[first]);
    for (int c : cpus[first]) CHECK(cpus[first + 1].count(c) == 0);
  }
}

TEST_CASE("a rank failing on another host ends the ssh job with its code and summary and no rank survives", "[ssh]") {
  const Bed& b = bed();
  hvd::test::TempDir pids;
  auto started = Clock::now();
  auto run = runSshJob(2, {kRank, "fail", "4", "7", "60"}, {"HVD_TEST_PIDDIR=" + pids.path()});
  double took = std::chrono::duration<double>(Clock::now() - started).count();
  INFO(run.out << run.err);
  CHECK(run.exitCode == 7);
  CHECK(run.err.find("hvdrun: error: rank 4 exited with code 7 (host " + b.hosts[2] + ", pid ") != std::string::npos);
  CHECK(run.err.find("    | final words of rank 4\n") != std::string::npos);
  CHECK(run.err.find("hvdrun stopped 5 other rank(s) of 6; exit code 7") != std::string::npos);
  CHECK(took < 15);  // the others sleep 60 s: they were stopped, not waited for
  auto ranks = hvd::test::readPidFiles(pids.path());
  CHECK(ranks.size() == 6);
  CHECK(hvd::test::survivorsAfter(ranks, std::chrono::seconds(2)).empty());
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh --max-restarts starts every rank again on every host and the runtime forms its world anew",
          "[ssh]") {
  // Start 0: rank 4 (the third host) SIGKILLs itself mid-allreduce; start 1 runs on fresh
  // agents, a fresh rendezvous and fresh links, and every rank sums 1 + ... + 6.
  auto run = runSshJob(2, {"--max-restarts", "1", kCollectiveRank, "restarted", "4"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("hvdrun: error: rank 4 was killed by SIGKILL (host " + bed().hosts[2]) != std::string::npos);
  CHECK(run.err.find("hvdrun: starting every rank again: restart 1 of 1 (--max-restarts)") != std::string::npos);
  for (int rank = 0; rank < 6; ++rank) {
    CHECK(run.out.find("[" + std::to_string(rank) + "]<stdout>:start 1 sum 21") != std::string::npos);
  }
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh a frozen rank is killed by its host's agent once its peers have waited the timeout for it",
          "[ssh]") {
  // Rank 4 SIGSTOPs itself: its peers' collectives time out (HVD_TIMEOUT 3 s), and its
  // agent fails it after as long; the others re-form without it (before: they waited for it
  // in the next world's init for the elastic timeout, 10 minutes).
  const auto start = std::chrono::steady_clock::now();
  auto run = runSshJob(2, {"--min-np", "3", "--gloo-timeout-seconds", "3", kCollectiveRank, "elastic", "4", "freeze"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.err.find("hvdrun: rank 4 was frozen (stopped, state T) for 3 s, as long as its peers wait in a collective "
                     "(HVD_TIMEOUT), and hvdrun killed it; the other 5 rank(s) go on without it") != std::string::npos);
  for (auto [worker, rank] : std::vector<std::pair<int, int>>{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {5, 4}}) {
    CHECK(run.out.find("[" + std::to_string(worker) + "]<stdout>:elastic done worker " + std::to_string(worker) +
                       " rank " + std::to_string(rank) + " size 5") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(40));
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh a rank that returned early with exit 0 is named in the report of the peer that failed for want of it",
          "[ssh]") {
  // One rank a host; rank 0 shuts hvd down and exits 0, its peers on the other hosts fail.
  // The agent reports the early exit too, as a local launch's report does.
  for (int trial = 0; trial < 2; ++trial) {
    auto run = runSshJob(1, {kCollectiveRank, "leave-early", "0"});
    INFO(run.out << run.err);
    CHECK(run.exitCode == 1);
    CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [12] exited with code 1)")));
    CHECK(std::regex_search(run.err, std::regex(R"(\n  rank 0 had ended with exit code 0 while rank [12] still ran )"
                                                R"(collectives: every rank must make the same collective calls)")));
  }
}

TEST_CASE("over ssh what a rank left running in a session of its own is stopped by its host's agent at the end",
          "[ssh]") {
  hvd::test::TempDir dir;
  // Each rank starts `sleep 300` under setsid (out of its session), notes its pid, exits 0.
  auto run = runSshJob(1, {"sh", "-c",
                           "setsid sh -c 'echo $$ > " + dir.path() +
                               "/daemon.$HOROVOD_RANK; exec sleep 300' & sleep 0.5"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  std::vector<int> daemons;
  for (int r = 0; r < 3; ++r) {
    int pid = 0;
    std::ifstream(dir.path() + "/daemon." + std::to_string(r)) >> pid;
    if (pid > 0) daemons.push_back(pid);
  }
  REQUIRE(daemons.size() == 3);
  auto left = hvd::test::survivorsAfter(daemons, std::chrono::seconds(1));
  CHECK(left.empty());
  for (int pid : left) ::kill(pid, SIGKILL);
  for (const auto& host : bed().hosts) {
    CHECK(run.err.find("hvdrun: stopped 1 process(es) the ranks left running outside their sessions on " + host) !=
          std::string::npos);
  }
}

TEST_CASE("a rank killed by a signal on another host ends the ssh job with 128 plus the signal", "[ssh]") {
  auto run = runSshJob(1, {kRank, "fail", "1", "KILL", "60"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 137);
  CHECK(run.err.find("hvdrun: error: rank 1 was killed by SIGKILL (host " + bed().hosts[1]) != std::string::npos);
}

TEST_CASE("a rank SIGKILLed mid-allreduce on another host is the named cause with 137 over TCP, 20 times", "[ssh]") {
  // Its peers on the other hosts fail at once ("closed its connection", exit 1) over the
  // network, and their reports race the victim's through its host's agent.
  for (int trial = 0; trial < 20; ++trial) {
    const int victim = 1 + trial % 5;
    auto started = Clock::now();
    auto run = runSshJob(2, {kCollectiveRank, "loop", std::to_string(victim)});
    const double took = std::chrono::duration<double>(Clock::now() - started).count();
    INFO("trial " << trial << ", victim " << victim << ", " << took << " s\n" << run.err);
    CHECK(run.exitCode == 137);
    CHECK(run.err.find("hvdrun: error: rank " + std::to_string(victim) + " was killed by SIGKILL (host " +
                       bed().hosts[static_cast<size_t>(victim / 2)]) != std::string::npos);
    CHECK(took < 10);
  }
  CHECK(hvd::test::survivorsAfter(processesMentioning("host-agent"), std::chrono::seconds(2)).empty());
}

TEST_CASE("over ssh the ranks' traffic between hosts goes over the network, never through shared memory", "[ssh]") {
  // The bed's hosts share one kernel, so ranks on different hosts could map each other's
  // ring buffers; what the plan puts on different hosts must not. Two ranks a host: each
  // has a neighbour on another host, so 32 MiB allreduced moves megabytes over eth0.
  auto run = runSshJob(2, {kCollectiveRank, "traffic"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  const auto traffic = hvd::test::networkTrafficByRank(run.out);
  CHECK(static_cast<int>(traffic.size()) == 2 * static_cast<int>(bed().hosts.size()));
  for (auto [rank, bytes] : traffic) {
    INFO("rank " << rank);
    CHECK(bytes > (8ull << 20));  // 0 when the links between hosts were shared memory
  }
}

TEST_CASE("over ssh a host agent frozen by SIGSTOP is named once silent for 5 s, ends the job with 255 and leaves "
          "nothing on its host",
          "[ssh]") {
  // Rank 1 stops its parent, the second host's agent: its ranks run on, but nothing it
  // would report can reach hvdrun, which must not wait for it.
  const std::string frozen = "if [ \"$HOROVOD_RANK\" = 1 ]; then sleep 1; kill -STOP $PPID; fi; exec sleep 37.25";
  auto started = Clock::now();
  auto run = runSshJob(1, {"sh", "-c", frozen});
  const double took = std::chrono::duration<double>(Clock::now() - started).count();
  INFO(run.out << run.err << took << " s");
  CHECK(run.exitCode == 255);
  CHECK(run.err.find("hvdrun: error: the host agent for " + bed().hosts[1] + " (rank 1 and the others there) stopped "
                     "answering: nothing came from it for 5 s") != std::string::npos);
  CHECK(took < 12);
  CHECK(hvd::test::survivorsAfter(processesMentioning("host-agent"), std::chrono::seconds(3)).empty());
  CHECK(hvd::test::survivorsAfter(processesMentioning("sleep 37.25"), std::chrono::seconds(3)).empty());
  // Told to stop meanwhile (SIGTERM), hvdrun kills it there at the kill grace's end.
  hvd::test::TempDir pids;
  int hvdrun = startInBackground(sshJob(1, {"--kill-grace", "2", "sh", "-c", kRank + " sleep 1; " + frozen}), pids.path(), 3);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the agent stopped 2 s in
  REQUIRE(::kill(hvdrun, SIGTERM) == 0);
  auto told = Clock::now();
  CHECK(waitExit(hvdrun) == 143);
  CHECK(std::chrono::duration<double>(Clock::now() - told).count() < 5);
  CHECK(hvd::test::survivorsAfter(processesMentioning("host-agent"), std::chrono::seconds(3)).empty());
  CHECK(hvd::test::survivorsAfter(processesMentioning("sleep 37.25"), std::chrono::seconds(3)).empty());
}

TEST_CASE("over ssh a host cut off from the network is the one named, within seconds, not a healthy peer at the "
          "collectives' timeout",
          "[ssh]") {
  // The second host's link goes down while every rank allreduces: the healthy hosts' ranks
  // would time out at HVD_TIMEOUT (30 s) naming whichever peer they waited on; the cut-off
  // host's agent falls silent at once.
  const Bed& b = bed();
  const std::string ns = std::string(std::getenv("HVD_SSHBED_NAMESPACE_PREFIX")) + b.names[1];
  hvd::test::TempDir pids;
  const std::string errPath = pids.path() + "/hvdrun.err";
  const int errFd = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(errFd >= 0);
  int hvdrun = hvd::test::spawnHvdrun(
      sshJob(1, {"sh", "-c", kRank + " sleep 0; exec " + kCollectiveRank + " loop-dies-of-term"}),
      hvd::test::environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}), -1, false, errFd);
  ::close(errFd);
  for (auto until = Clock::now() + std::chrono::seconds(20);
       hvd::test::readPidFiles(pids.path()).size() < 3 && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  REQUIRE(std::system(("ip -n " + ns + " link set eth0 down").c_str()) == 0);
  auto cut = Clock::now();
  const int code = waitExit(hvdrun);
  const double took = std::chrono::duration<double>(Clock::now() - cut).count();
  // The cut-off host cleans itself up, its link still down: its agent hears nothing from
  // hvdrun for 10 s and ends, and its guardian stops its ranks.
  auto left = hvd::test::survivorsAfter(processesMentioning("host-agent"), std::chrono::seconds(15));
  auto ranksLeft = hvd::test::survivorsAfter(processesMentioning("loop-dies-of-term"), std::chrono::seconds(3));
  REQUIRE(std::system(("ip -n " + ns + " link set eth0 up").c_str()) == 0);
  CHECK(left.empty());
  CHECK(ranksLeft.empty());
  const std::string err = fileText(errPath);
  INFO(err);
  CHECK(code == 255);
  CHECK(took < 12);
  CHECK(err.find("hvdrun: error: the host agent for " + b.hosts[1] + " (rank 1 and the others there) stopped "
                 "answering") != std::string::npos);
}

TEST_CASE("a host agent killed by SIGKILL ends the ssh job with 255, ssh's code for a lost connection, naming the host",
          "[ssh]") {
  // Rank 2 (the second host's first) SIGKILLs its parent, that host's agent.
  auto run = runSshJob(1, {"sh", "-c", "if [ \"$HOROVOD_RANK\" = 1 ]; then sleep 1; kill -KILL $PPID; fi; exec sleep 30"});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 255);
  CHECK(run.err.find("hvdrun: error: the host agent for " + bed().hosts[1] + " (rank 1 and the others there) lost its "
                     "ssh connection (ssh exit code 255)") != std::string::npos);
  CHECK(run.err.find("exit code 255") != std::string::npos);
  CHECK(hvd::test::survivorsAfter(processesMentioning("host-agent"), std::chrono::seconds(2)).empty());
}

TEST_CASE("when hvdrun is SIGKILLed during an ssh job no rank survives on any host within 5 s", "[ssh]") {
  hvd::test::TempDir pids;
  // Ranks behind a shell, whose child PR_SET_PDEATHSIG does not reach.
  std::string shell = kRank + " sleep 60; true";
  int hvdrun = startInBackground(sshJob(2, {"sh", "-c", shell}), pids.path(), 6);
  auto ranks = hvd::test::readPidFiles(pids.path());
  REQUIRE(::kill(hvdrun, SIGKILL) == 0);
  auto killed = Clock::now();
  waitExit(hvdrun);
  CHECK(hvd::test::survivorsAfter(ranks, std::chrono::seconds(5)).empty());
  double took = std::chrono::duration<double>(Clock::now() - killed).count();
  if (took > 1.0) WARN("ranks were gone only after " << took << " s");
  CHECK(hvd::test::survivorsAfter(processesMentioning("host-agent"), std::chrono::seconds(2)).empty());
}

TEST_CASE("SIGTERM to hvdrun stops every rank on every host and exits 143", "[ssh]") {
  hvd::test::TempDir pids;
  int hvdrun = startInBackground(sshJob(2, {kRank, "sleep", "60"}), pids.path(), 6);
  auto ranks = hvd::test::readPidFiles(pids.path());
  REQUIRE(::kill(hvdrun, SIGTERM) == 0);
  CHECK(waitExit(hvdrun) == 143);
  CHECK(hvd::test::survivorsAfter(ranks, std::chrono::seconds(1)).empty());
}

TEST_CASE("over ssh hvdrun piped into a reader that exits stops every rank on every host and exits 141",
          "[ssh]") {
  hvd::test::TempDir pids;
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  // Each rank writes its pid file, then floods its stdout.
  std::string shell = "echo $$ > $HVD_TEST_PIDDIR/$HOROVOD_RANK.pid; exec yes";
  int hvdrun = hvd::test::spawnHvdrun(sshJob(2, {"--kill-grace", "2", "sh", "-c", shell}),
                                      hvd::test::environmentWith({"HVD_TEST_PIDDIR=" + pids.path()}), fds[1]);
  ::close(fds[1]);
  // Read until every rank has started (the far hosts' may come after 64 KiB of the first
  // ones' output), then go away.
  char buf[4096];
  size_t got = 0;
  for (auto deadline = Clock::now() + std::chrono::seconds(20);
       (got < 65536 || hvd::test::readPidFiles(pids.path()).size() < 6) && Clock::now() < deadline;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fds[0]);
  auto ranks = hvd::test::readPidFiles(pids.path());
  CHECK(ranks.size() == 6);
  int status = 0;
  for (auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
    if (::waitpid(hvdrun, &status, WNOHANG) == hvdrun) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (::waitpid(hvdrun, nullptr, WNOHANG) == 0) {  // still running while nobody reads: a failure
    ::kill(hvdrun, SIGTERM);
    ::waitpid(hvdrun, &status, 0);
    FAIL("hvdrun ran on after its stdout's reader had gone");
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 141);
  CHECK(hvd::test::survivorsAfter(ranks, std::chrono::seconds(2)).empty());
}

TEST_CASE("Ctrl-Z on hvdrun holds every rank on every host until hvdrun is continued", "[ssh]") {
  hvd::test::TempDir pids;
  int hvdrun = startInBackground(sshJob(1, {kRank, "sleep", "4"}), pids.path(), 3, /*asShellJob=*/true);
  auto ranks = hvd::test::readPidFiles(pids.path());
  auto allIn = [&](auto pred) {
    auto until = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < until) {
      if (std::all_of(ranks.begin(), ranks.end(), pred)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  REQUIRE(::kill(hvdrun, SIGTSTP) == 0);
  CHECK(allIn([&](int pid) { return hvd::test::processState(pid) == 'T'; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(std::all_of(ranks.begin(), ranks.end(), [&](int pid) { return hvd::test::processState(pid) == 'T'; }));
  REQUIRE(::kill(hvdrun, SIGCONT) == 0);
  CHECK(allIn([&](int pid) { return hvd::test::processState(pid) != 'T'; }));
  CHECK(waitExit(hvdrun) == 0);
}

TEST_CASE("arguments reach ranks on other hosts byte for byte and the secret is on no command line", "[ssh]") {
  hvd::test::TempDir pids;
  std::vector<std::string> hostile{"two words", "$HOME", "", "'q'", "a\"b", "`id`; rm -rf /nonexistent", "line\nbreak",
                                   "-H", "--", "*"};
  std::vector<std::string> rest{kRank, "args"};
  rest.insert(rest.end(), hostile.begin(), hostile.end());
  auto run = runSshJob(1, rest);
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int r = 0; r < 3; ++r) {
    for (size_t i = 0; i < hostile.size(); ++i) {
      if (hostile[i].find('\n') != std::string::npos) continue;  // printed over two lines: checked below
      std::string line = "[" + std::to_string(r) + "]<stdout>:arg " + std::to_string(i) + " " +
                         std::to_string(hostile[i].size()) + ":" + hostile[i] + "\n";
      CHECK(run.out.find(line) != std::string::npos);
    }
    CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:arg 6 10:line\n[" + std::to_string(r) + "]<stdout>:break\n") !=
          std::string::npos);
  }
  // While a job runs, no process (ssh, the agents, the ranks) shows the secret on its command
  // line. The job's own secret, read from a rank's environment, is what is looked for: other
  // tests running beside this one may name the variable (printenv HVD_SECRET_KEY) on theirs.
  int hvdrun = startInBackground(sshJob(1, {kRank, "sleep", "60"}), pids.path(), 3);
  auto ranks = hvd::test::readPidFiles(pids.path());
  CHECK(!ranks.empty());  // not REQUIRE: hvdrun must still be stopped below
  std::ifstream environ(ranks.empty() ? std::string("/nonexistent") : "/proc/" + std::to_string(ranks.front()) + "/environ");
  std::string secret;
  for (std::string kv; std::getline(environ, kv, '\0');) {
    if (kv.rfind("HVD_SECRET_KEY=", 0) == 0) secret = kv.substr(std::string("HVD_SECRET_KEY=").size());
  }
  CHECK(secret.size() == 64);
  if (!secret.empty()) CHECK(processesMentioning(secret).empty());
  ::kill(hvdrun, SIGTERM);
  waitExit(hvdrun);
}

TEST_CASE("over ssh hvdrun -x gives every rank on every host the variable and the only OMP_NUM_THREADS", "[ssh]") {
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({"FROM_HERE=outer", "OMP_NUM_THREADS"});
  auto run = hvd::test::runHvdrun(
      sshJob(1, {"-x", "SET=a b", "-x", "FROM_HERE", "-x", "OMP_NUM_THREADS=3", "sh", "-c",
                 "echo \"$SET|$FROM_HERE|$OMP_NUM_THREADS|$(env | grep -c '^OMP_NUM_THREADS=')\""}),
      options);
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int r = 0; r < 3; ++r) {
    CHECK(run.out.find("[" + std::to_string(r) + "]<stdout>:a b|outer|3|1\n") != std::string::npos);
  }
}

TEST_CASE("over ssh --output-filename gets every rank's lines while --ranks-filter narrows the console", "[ssh]") {
  hvd::test::TempDir out;
  auto run = runSshJob(1, {"--output-filename", out.path(), "--ranks-filter", "2", "--timestamp-output", kRank,
                           "identity"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  CHECK(run.out.find("[0]<stdout>:") == std::string::npos);
  CHECK(run.out.find("[2]<stdout>:rank=2 size=3") != std::string::npos);
  CHECK(run.out.substr(0, 2) == "20");  // the local time first
  for (int r = 0; r < 3; ++r) {
    std::ifstream f(out.path() + "/rank." + std::to_string(r) + "/stdout");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(text.rfind("rank=" + std::to_string(r) + " size=3", 0) == 0);
  }
}

// A directory only this machine sees: a tmpfs mounted after the hosts started (their mount
// namespaces are private copies, so the mount does not reach them).
class OnlyHere {
 public:
  OnlyHere() : path_(dir_.path() + "/here") {
    REQUIRE(::mkdir(path_.c_str(), 0755) == 0);
    REQUIRE(std::system(("mount -t tmpfs tmpfs " + path_).c_str()) == 0);
  }
  ~OnlyHere() { (void)!std::system(("umount -l " + path_).c_str()); }
  const std::string& path() const { return path_; }

 private:
  hvd::test::TempDir dir_;
  std::string path_;
};

TEST_CASE("a program or working directory missing on the other hosts fails the ssh job naming host and reason",
          "[ssh]") {
  OnlyHere here;
  std::string program = here.path() + "/train";
  {
    std::ofstream f(program);
    f << "#!/bin/sh\nexit 0\n";
  }
  REQUIRE(::chmod(program.c_str(), 0755) == 0);
  auto run = runSshJob(1, {program});
  INFO(run.out << run.err);
  CHECK(run.exitCode == 3);
  // Every host says so; whichever agent ended first is the summary's.
  for (size_t h = 0; h < 3; ++h) {
    CHECK(run.err.find("on " + bed().hosts[h] + ": cannot run the program for rank " + std::to_string(h) + ": '" +
                       program + "' does not exist") != std::string::npos);
  }
  CHECK(run.err.find(" (rank ") != std::string::npos);
  CHECK(run.err.find(" and the others there) exited with code 3\n  its last words:\n") != std::string::npos);

  // hvdrun started in a directory the hosts lack (the mount point itself exists there).
  std::string sub = here.path() + "/sub";
  REQUIRE(::mkdir(sub.c_str(), 0755) == 0);
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(30);
  std::vector<std::string> argv{"sh", "-c", "cd \"$0\" && exec \"$@\"", sub, HVD_HVDRUN_PATH};
  for (const auto& a : sshJob(1, {"true"})) argv.push_back(a);
  auto elsewhere = hvd::cli::runAndCapture(argv, options);
  REQUIRE(elsewhere.isOk());
  INFO(elsewhere->err);
  CHECK(elsewhere->exitCode == 3);
  CHECK(elsewhere->err.find("cannot enter the working directory " + sub + ": No such file or directory") !=
        std::string::npos);
  CHECK(elsewhere->err.find("(a shared file system)") != std::string::npos);
}

TEST_CASE("a host without hvdrun or with another build of it is named and no rank starts anywhere", "[ssh]") {
  hvd::test::TempDir dir, pids;
  // Says hello as an agent of another build would, then waits for a job that never comes.
  std::string other = dir.path() + "/other-hvdrun";
  {
    std::ofstream f(other);
    f << "#!/bin/sh\necho 'hvdrun-agent: hello 0.0.1 0123abc'\nexec cat >/dev/null\n";
  }
  REQUIRE(::chmod(other.c_str(), 0755) == 0);
  auto run = runSshJob(1, {"--remote-hvdrun", other, kRank, "sleep", "30"}, {"HVD_TEST_PIDDIR=" + pids.path()});
  INFO(run.err);
  CHECK(run.exitCode == 3);
  CHECK(run.err.find("3 of 3 host(s) cannot start ranks; nothing was started") != std::string::npos);
  CHECK(run.err.find(bed().hosts[0] + "  its hvdrun is 0.0.1 0123abc, this one ") != std::string::npos);

  auto missing = runSshJob(1, {"--remote-hvdrun", "/nonexistent/hvdrun", kRank, "sleep", "30"},
                           {"HVD_TEST_PIDDIR=" + pids.path()});
  INFO(missing.err);
  CHECK(missing.exitCode == 3);
  CHECK(missing.err.find(bed().hosts[2] + "  no hvdrun at /nonexistent/hvdrun there") != std::string::npos);
  CHECK(missing.err.find("--remote-hvdrun") != std::string::npos);
  CHECK(hvd::test::readPidFiles(pids.path()).empty());
  CHECK(processesMentioning(other).empty());
}

// Last: it stops two of the bed's sshds (and starts them again at the end).
TEST_CASE("hosts whose sshd is down or hangs are reported together within the start timeout and nothing starts",
          "[ssh]") {
  const Bed& b = bed();
  hvd::test::TempDir pids;
  auto pidOf = [&](const std::string& name) {
    int pid = 0;
    std::ifstream(b.dir + "/run/sshd-" + name + ".pid") >> pid;
    return pid;
  };
  int hung = pidOf(b.names[1]), down = pidOf(b.names[2]);
  REQUIRE(hung > 0);
  REQUIRE(down > 0);
  REQUIRE(::kill(hung, SIGSTOP) == 0);
  REQUIRE(::kill(down, SIGTERM) == 0);
  REQUIRE(hvd::test::survivorsAfter({down}, std::chrono::seconds(2)).empty());

  auto started = Clock::now();
  auto run = runSshJob(1, {"--start-timeout", "3", kRank, "sleep", "30"}, {"HVD_TEST_PIDDIR=" + pids.path()});
  double took = std::chrono::duration<double>(Clock::now() - started).count();

  ::kill(hung, SIGCONT);
  REQUIRE(std::system(("sh " + b.dir + "/run/start-sshd-" + b.names[2] + ".sh").c_str()) == 0);

  INFO(run.out << run.err);
  CHECK(run.exitCode == 3);
  CHECK(took < 6);
  CHECK(run.err.find("2 of 3 host(s) cannot start ranks; nothing was started") != std::string::npos);
  // Whichever comes first: hvdrun's deadline or ssh's ConnectTimeout (the same 3 s).
  CHECK((run.err.find(b.hosts[1] + "  no answer within 3 s") != std::string::npos ||
         run.err.find(b.hosts[1] + "  Connection timed out during banner exchange") != std::string::npos));
  CHECK(run.err.find("Connection refused") != std::string::npos);
  CHECK(run.err.find("hint: no sshd listens on that host and port") != std::string::npos);
  CHECK(hvd::test::readPidFiles(pids.path()).empty());
}

TEST_CASE("over ssh a ParameterServerStrategy job ends with exit 0 when its chief is done on another host", "[ssh][python]") {
  const std::string python = std::string(HVD_SOURCE_DIR) + "/.venv/bin/python";
  if (::access(python.c_str(), X_OK) != 0) hvd::test::skipTest("no .venv (scripts/setup.sh makes it)");
  // A chief, a worker and a ps, one per host: the worker and the ps wait in server.join()
  // forever on hosts whose agents only learn of the chief's end through hvdrun.
  auto run = runSshJob(1, {"--tf-config", "--tf-ps", "1", "--tf-chief", python,
                           std::string(HVD_SOURCE_DIR) + "/python/tests/ranks/tf_ps_train.py"},
                       {}, std::chrono::seconds(150));
  INFO(run.out << run.err);
  CHECK(run.exitCode == 0);
  CHECK(run.out.find("[0]<stdout>:chief trained 20 steps, loss ") != std::string::npos);
  CHECK(run.err.find("hvdrun: the chief finished (exit 0), so the job is done: stopped its 2 parameter server, worker "
                     "and evaluator rank(s)\n") != std::string::npos);
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh a rank that raises under torch's @record has its exception and line in hvdrun's summary",
          "[ssh][python]") {
  const std::string python = std::string(HVD_SOURCE_DIR) + "/.venv/bin/python";
  if (::access(python.c_str(), X_OK) != 0) hvd::test::skipTest("no .venv (scripts/setup.sh makes it)");
  const std::string source = std::string(HVD_SOURCE_DIR) + "/python/tests/ranks/torch_record.py";
  const int raiseLine = hvd::test::lineContaining(source, "raise ValueError");
  REQUIRE(raiseLine > 0);
  auto run = runSshJob(1, {python, source}, {}, std::chrono::seconds(120));
  INFO(run.out << run.err);
  CHECK(run.exitCode == 1);
  CHECK(run.err.find("hvdrun: error: rank 1 exited with code 1 (host " + bed().hosts[1]) != std::string::npos);
  CHECK(run.err.find("  rank 1 raised (recorded by torch's @record): ValueError: batch 7 has 3 columns, the model wants "
                     "4\n    at " + source + ":" + std::to_string(raiseLine) + " in load_batch\n") != std::string::npos);
}

TEST_CASE("over ssh a rank that shuts hvd down and later dies of SIGTERM is the cause and not its peers that failed when it left",
          "[ssh]") {
  // A checkpoint-on-SIGTERM handler that leaves hvd first and saves for a second: its peers
  // fail at once naming it (peerGoneKey), and their agents report them long before it ends.
  // hvdrun must not stop its agent meanwhile, nor its own agent stop it for the failure of
  // the rank beside it, or its SIGTERM would pass for hvdrun's. Victims on the far host and
  // on the first, each beside another rank.
  const Bed& b = bed();
  for (int victim : {4, 1}) {
    auto run = runSshJob(2, {kCollectiveRank, "leave-early", "1", std::to_string(victim), "die"}, {"HVD_TIMEOUT=20"});
    INFO("victim " << victim << ":\n" << run.err);
    CHECK(run.exitCode == 143);
    CHECK(run.err.find("hvdrun: error: rank " + std::to_string(victim) + " was killed by SIGTERM (host " +
                       b.hosts[static_cast<size_t>(victim / 2)]) != std::string::npos);
    CHECK(run.err.find("rank " + std::to_string(victim) + " shut hvd down") != std::string::npos);
  }
}

TEST_CASE("over ssh a rank that shut hvd down early and lingers is stopped soon after its peers fail and they stay the cause",
          "[ssh]") {
  auto started = Clock::now();
  auto run = runSshJob(2, {"--kill-grace", "20", kCollectiveRank, "leave-early", "30", "4"}, {"HVD_TIMEOUT=20"});
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  INFO(run.err);
  CHECK(run.exitCode == 1);
  CHECK(std::regex_search(run.err, std::regex(R"(hvdrun: error: rank [01235] exited with code 1)")));
  CHECK(seconds < 10);  // stopped about 2 s after, not after the 20 s grace or the 30 s sleep
}

TEST_CASE("over ssh each host's agent gives its ranks that host's GPUs by local rank and none of hvdrun's list",
          "[ssh]") {
  hvd::test::TempDir dir;
  const std::string remote = hvdrunWithGpus(dir, "4,5,6,7");
  // hvdrun's own machine has device 9: a list of this machine, which no other host's rank may get.
  auto one = runSshJob(2, {"--remote-hvdrun", remote, "sh", "-c", kShowGpus}, {"CUDA_VISIBLE_DEVICES=9"});
  INFO(one.out << one.err);
  REQUIRE(one.exitCode == 0);
  for (int rank = 0; rank < 6; ++rank) {
    CHECK(one.out.find("[" + std::to_string(rank) + "]<stdout>:cvd=4,5 at=" + std::to_string(rank % 2) + "\n") !=
          std::string::npos);
  }
  // Two a rank: each rank its own two, alone (model parallel: devices 0 and 1 are its own).
  auto two = runSshJob(2, {"--remote-hvdrun", remote, "--gpus-per-rank", "2", "sh", "-c", kShowGpus},
                       {"CUDA_VISIBLE_DEVICES=9"});
  INFO(two.out << two.err);
  REQUIRE(two.exitCode == 0);
  for (int rank = 0; rank < 6; ++rank) {
    CHECK(two.out.find("[" + std::to_string(rank) + "]<stdout>:cvd=" + (rank % 2 == 0 ? "4,5" : "6,7") + " at=0\n") !=
          std::string::npos);
  }
}

TEST_CASE("over ssh torchrun's nproc-per-node gpu and cpu count each host's GPUs and CPUs there", "[ssh]") {
  // `torchrun --nnodes 2 --nproc-per-node gpu` on each node, as one hvdrun line: each host's
  // agent counts what it sees, so hvdrun need not see other hosts' GPUs itself.
  const Bed& b = bed();
  hvd::test::TempDir dir;
  const std::string remote = hvdrunWithGpus(dir, "4,5,6");
  const std::string hosts = b.hosts[0] + "," + b.hosts[1];
  const std::vector<std::string> ssh{"--ssh-command", b.ssh, "-p", b.port, "-i", b.key, "--remote-hvdrun", remote};
  auto job = [&](std::vector<std::string> args) {
    args.insert(args.begin(), ssh.begin(), ssh.end());
    hvd::cli::RunOptions options;
    options.timeout = std::chrono::seconds(60);
    options.env = hvd::test::environmentWith({});
    return hvd::test::runHvdrun(args, options);
  };
  auto gpu = job({"-H", hosts, "--nproc-per-node", "gpu", "sh", "-c", kShowGpus});
  INFO(gpu.out << gpu.err);
  REQUIRE(gpu.exitCode == 0);
  for (int rank = 0; rank < 6; ++rank) {
    CHECK(gpu.out.find("[" + std::to_string(rank) + "]<stdout>:cvd=4,5,6 at=" + std::to_string(rank % 3) + "\n") !=
          std::string::npos);
  }
  CHECK(gpu.out.find("[6]") == std::string::npos);
  // cpu: a rank per CPU the host's agent may use. The bed's hosts share this machine's CPUs
  // and cgroup, so they count what hvdrun counts here.
  hvd::cli::RunOptions local;
  local.env = hvd::test::environmentWith({"SLURM_JOB_ID"});
  auto here = hvd::test::runHvdrun({"--nproc-per-node", "cpu", "--dry-run", "true"}, local);
  REQUIRE(here.exitCode == 0);
  const int cpus = std::atoi(here.out.substr(here.out.find("# ") + 2).c_str());
  REQUIRE(cpus >= 1);
  auto cpu = job({"-H", hosts, "--nproc-per-node", "cpu", "sh", "-c", kShowGpus});
  INFO(cpu.out << cpu.err);
  REQUIRE(cpu.exitCode == 0);
  CHECK(cpu.out.find("[" + std::to_string(2 * cpus - 1) + "]<stdout>:cvd=unset at=unset\n") != std::string::npos);
  CHECK(cpu.out.find("[" + std::to_string(2 * cpus) + "]") == std::string::npos);
  // The plan shows the counts too, without starting anything.
  auto plan = job({"-H", hosts, "--nproc-per-node", "gpu", "--dry-run", "true"});
  INFO(plan.out << plan.err);
  CHECK(plan.exitCode == 0);
  CHECK(plan.out.find(b.hosts[1]) != std::string::npos);
}

TEST_CASE("over ssh nproc-per-node gpu names a host that shows no GPU and hosts that cannot count", "[ssh]") {
  const Bed& b = bed();
  const std::vector<std::string> ssh{"--ssh-command", b.ssh, "-p", b.port, "-i", b.key};
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.env = hvd::test::environmentWith({});
  hvd::test::TempDir dir;
  const std::string noGpus = hvdrunWithGpus(dir, "");  // an empty CUDA_VISIBLE_DEVICES hides every device
  std::vector<std::string> args = ssh;
  args.insert(args.end(), {"-H", b.hosts[0] + "," + b.hosts[1], "--remote-hvdrun", noGpus, "--nproc-per-node", "gpu",
                           "true"});
  auto none = hvd::test::runHvdrun(args, options);
  INFO(none.out << none.err);
  CHECK(none.exitCode == 2);
  CHECK(none.err.find("--nproc-per-node gpu, but host " + b.hosts[0] + " shows no GPU") != std::string::npos);
  // Hosts that cannot count: the hosts' table, as for a launch, before anything starts.
  args = ssh;
  args.insert(args.end(), {"-H", b.hosts[0] + "," + b.hosts[1], "--remote-hvdrun", "/nonexistent/hvdrun",
                           "--nproc-per-node", "gpu", "true"});
  auto missing = hvd::test::runHvdrun(args, options);
  INFO(missing.out << missing.err);
  CHECK(missing.exitCode == 3);
  CHECK(missing.err.find("2 of 2 host(s) cannot start ranks; nothing was started:") != std::string::npos);
  CHECK(missing.err.find("no hvdrun at /nonexistent/hvdrun there") != std::string::npos);
}

TEST_CASE("over ssh a host with too few GPUs for its ranks is named with the counts and no rank starts", "[ssh]") {
  hvd::test::TempDir dir, pids;
  const std::string remote = hvdrunWithGpus(dir, "4,5,6,7");
  auto run = runSshJob(2, {"--remote-hvdrun", remote, "--gpus-per-rank", "3", kRank, "sleep", "30"},
                       {"HVD_TEST_PIDDIR=" + pids.path()});
  INFO(run.out << run.err);
  CHECK(run.exitCode != 0);
  CHECK(run.err.find("offers 4 GPU(s) but its 2 rank(s) need 6 (3 each)") != std::string::npos);
  CHECK(run.err.find("--oversubscribe-gpus") != std::string::npos);
  CHECK(hvd::test::readPidFiles(pids.path()).empty());
  CHECK(processesMentioning("host-agent").empty());
}

TEST_CASE("over ssh ranks on hosts without GPUs get no CUDA_VISIBLE_DEVICES and none of hvdrun's", "[ssh]") {
  auto run = runSshJob(1, {"sh", "-c", kShowGpus}, {"CUDA_VISIBLE_DEVICES=9"});
  INFO(run.out << run.err);
  REQUIRE(run.exitCode == 0);
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(run.out.find("[" + std::to_string(rank) + "]<stdout>:cvd=unset at=unset\n") != std::string::npos);
  }
}

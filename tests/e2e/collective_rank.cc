// tests/e2e/collective_rank.cc: a rank using the runtime library for real, started by
// hvdrun: it checks every type and operation of allreduce, broadcast from every root,
// allgather and barrier against a serial computation, then prints "ok <checks>".
//   collective_rank check            the checks above
//   collective_rank loop <victim>    allreduce in a loop; rank <victim> SIGKILLs itself
//                                    after 20 rounds; survivors print the error they get
//   collective_rank loop-dies-of-term the loop without a victim, SIGTERM left to its default
//   collective_rank loop-cleans-up-on-term  the loop without a victim; SIGTERM is caught: the
//                                    rank finishes its step, "saves" for 50 ms, shuts hvd
//                                    down and dies of the same signal (a training script's
//                                    checkpoint-on-SIGTERM handler)
//   collective_rank leave-early <s> [<rank> [die|ending|fail]]  one allreduce; then rank <rank> (0)
//                                    shuts hvd down and sleeps <s> seconds, while the others
//                                    try a second one (and exit 1 when it fails); with die it
//                                    then dies of SIGTERM (a checkpoint-on-SIGTERM handler
//                                    that left hvd first, then saved), else exits 0; with
//                                    ending its main thread ends at once and another sleeps
//                                    the <s> seconds and then raises SIGTERM: the process is
//                                    ending (its leader a zombie) all that time; with fail it
//                                    exits 3 (an exception raised after hvd was shut down)
//   collective_rank identity         prints "rank=R size=N local_rank=L local_size=M
//                                    cross_rank=C cross_size=K homogeneous=0|1 ops=tcp|mpi" as the
//                                    runtime sees it
//   collective_rank preempt          prints "started restart=<SLURM_RESTART_COUNT>", then
//                                    allreduces until hvd::preemptionAgreed(); prints
//                                    "checkpoint at step S (seen here|seen by a peer)",
//                                    then waits up to 5 s for the notice to reach this
//                                    rank too ("notice reached rank R") and exits 0
//   collective_rank restarted <victim>  under hvdrun --max-restarts: the first start is the
//                                    loop with <victim>; later ones allreduce rank+1 once
//                                    and print "start <TORCHELASTIC_RESTART_COUNT> sum <sum>"
//   collective_rank elastic <victim> under hvdrun --min-np: 20 allreduces of rank+1, each
//                                    checked against the world's size; worker <victim>
//                                    (HVD_ELASTIC_WORKER) SIGKILLs itself before its 6th;
//                                    on a failed one: shutdown, init (the next world) and
//                                    on from there. Prints "elastic done worker W rank R
//                                    size N worlds K". With "agent" after <victim>, the
//                                    victim SIGKILLs its parent (a host agent: its host is
//                                    lost) instead of itself; with "freeze", it SIGSTOPs
//                                    itself
//   collective_rank elastic-grow <n> under hvdrun --host-discovery-script: n allreduces of
//                                    rank+1, 20 ms apart, each checked against the world's
//                                    size; after each, hvd::elasticWorldChanged() and, when
//                                    true, shutdown and init. Every world starts from rank
//                                    0's count. Worker 0 writes $DISCOVERY_GROWN into
//                                    $DISCOVERY_FILE after its 5th. Prints "elastic grown
//                                    worker W rank R size N worlds K launched as rank=..
//                                    size=.. local=.. gpus=.. at=.." (its launch variables,
//                                    CUDA_VISIBLE_DEVICES, HVD_LOCAL_GPU). With "late" after
//                                    <n>, worker 0 writes it after the last allreduce instead,
//                                    and the ranks end once an added one has started (it
//                                    creates $ELASTIC_ADDED_MARK before its init). With
//                                    "late-rejoin", worker 1 then joins the next world by
//                                    itself (shutdown, init) and worker 0 ends a second after.
//                                    ELASTIC_VICTIM=W@S: worker W SIGKILLs itself before its
//                                    allreduce number S
//   collective_rank process-sets     on 4 ranks: three process sets, every collective in each,
//                                    the refusals; prints "process sets ok (the job's
//                                    collectives on tcp|mpi)"
//   collective_rank process-set-victim <rank>  on 4 ranks: the set {1, 2, 3} allreduces in a
//                                    loop and <rank> SIGKILLs itself after 20 rounds; rank 0
//                                    allreduces in the job; survivors print their error
//   collective_rank wait <seconds>   rank 0 sleeps that long before a barrier; every rank
//                                    then prints "cpu R <seconds of CPU it used>"
//   collective_rank compute-first <ms>  prints "computing R"; rank 0 then uses <ms> of CPU time
//                                    (its own: a stopped job's time does not count) before
//                                    one allreduce of a float and one of 1 MiB, which the other
//                                    ranks wait in; every rank then prints "done R <sum>"
//   collective_rank rejoin <n>       shuts hvd down and inits it again n times, an allreduce
//                                    each time; prints "rejoined n times on rank R"
//   collective_rank slices           200 one-int allreduces, then prints "slices R <shortest>
//                                    <longest>", the time slices (us) of this rank's threads
//                                    from /proc/self/task/*/sched ("slices R unknown" without)
//   collective_rank pinned <seconds>  256 KiB allreduces until every rank's thread is held on
//                                    one CPU or <seconds> pass; prints "pinned R <cpu>|none"
//   collective_rank forked           rank 0 forks a child that prints "child rank R size N"
//                                    and "child refused: <message>" for an allreduce (or
//                                    "child allreduced") and ends with exit(0) (its atexit
//                                    shutdown runs); every rank then allreduces three times
//                                    and prints "sums R <s1> <s2> <s3>" (rank 0 first "child
//                                    exit <code>")
//   collective_rank traffic          4 allreduces of 8 MiB of floats, checked; prints "traffic R
//                                    <bytes>", what this rank's network namespace sent and
//                                    received meanwhile on interfaces other than loopback
//                                    (/proc/self/net/dev): between hosts, the ring's share
//   collective_rank rings            prints "rings R memfd=<n> named=<m>", the ring buffers
//                                    this rank has mapped (from /proc/self/maps), then checks
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"

using hvd::DataType;
using hvd::ReduceOp;

namespace {

double valueFor(int rank, size_t i) { return static_cast<double>((rank * 5 + static_cast<int>(i) * 3) % 11 - 5); }

template <typename T>
bool checkType(DataType type, ReduceOp op, size_t count) {
  int n = hvd::size(), r = hvd::rank();
  std::vector<T> data(count), expected(count);
  for (size_t i = 0; i < count; ++i) {
    data[i] = static_cast<T>(valueFor(r, i));
    double acc = valueFor(0, i);
    for (int k = 1; k < n; ++k) {
      double v = valueFor(k, i);
      if (op == ReduceOp::kSum || op == ReduceOp::kAverage) acc += v;
      if (op == ReduceOp::kMin) acc = std::min(acc, v);
      if (op == ReduceOp::kMax) acc = std::max(acc, v);
      if (op == ReduceOp::kProduct) acc *= v;
    }
    if (op == ReduceOp::kAverage) acc = std::is_integral_v<T> ? static_cast<double>(static_cast<long long>(acc) / n) : acc / n;
    expected[i] = static_cast<T>(acc);
  }
  auto s = hvd::allreduce(data.data(), count, type, op);
  if (!s.isOk()) {
    std::fprintf(stderr, "allreduce failed: %s\n", s.message().c_str());
    return false;
  }
  // Sums of small integers are exact in every type; averages are compared within 1e-6.
  for (size_t i = 0; i < count; ++i) {
    double got = static_cast<double>(data[i]), want = static_cast<double>(expected[i]);
    if (std::abs(got - want) > 1e-6 * (1 + std::abs(want))) {
      std::fprintf(stderr, "%s %s count %zu index %zu: got %g, expected %g\n", std::string(hvd::dataTypeName(type)).c_str(),
                   std::string(hvd::reduceOpName(op)).c_str(), count, i, got, want);
      return false;
    }
  }
  return true;
}

// bool is logical: sum and max "any rank", min and product "every rank" (average refused).
bool checkBool(ReduceOp op, size_t count) {
  auto bit = [](int rank, size_t i) -> std::uint8_t { return (rank * 5 + static_cast<int>(i) * 3) % 11 > 6 ? 1 : 0; };
  bool all = op == ReduceOp::kMin || op == ReduceOp::kProduct;
  std::vector<std::uint8_t> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = bit(hvd::rank(), i);
  if (auto s = hvd::allreduce(data.data(), count, DataType::kBool, op); !s.isOk()) {
    std::fprintf(stderr, "bool allreduce failed: %s\n", s.message().c_str());
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    std::uint8_t want = all ? 1 : 0;
    for (int k = 0; k < hvd::size(); ++k) want = all ? (want & bit(k, i)) : (want | bit(k, i));
    if (data[i] != want) {
      std::fprintf(stderr, "bool %s count %zu index %zu: got %d, expected %d\n",
                   std::string(hvd::reduceOpName(op)).c_str(), count, i, data[i], want);
      return false;
    }
  }
  return true;
}

int check() {
  int checks = 0;
  int n = hvd::size();
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1009), size_t(n * 5 + 3), size_t(1) << 20}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      if (count == (size_t(1) << 20) && op != ReduceOp::kSum) continue;  // one large case is enough
      bool ok = checkType<float>(DataType::kFloat32, op, count) && checkType<double>(DataType::kFloat64, op, count) &&
                checkType<int32_t>(DataType::kInt32, op, count) && checkType<int64_t>(DataType::kInt64, op, count) &&
                (op == ReduceOp::kProduct || checkType<int8_t>(DataType::kInt8, op, count)) &&
                (op == ReduceOp::kProduct || checkType<int16_t>(DataType::kInt16, op, count)) &&
                (op == ReduceOp::kAverage || checkBool(op, count));
      if (!ok) return 1;
      checks += 7;
    }
  }
  for (int root = 0; root < n; ++root) {
    std::vector<int> data(1000, hvd::rank() == root ? root + 1 : -1);
    if (!hvd::broadcast(data.data(), data.size() * sizeof(int), root).isOk()) return 1;
    for (int v : data) {
      if (v != root + 1) {
        std::fprintf(stderr, "broadcast from %d wrong\n", root);
        return 1;
      }
    }
    ++checks;
  }
  std::vector<int> all(static_cast<size_t>(n));
  int mine = hvd::rank() * 10;
  if (!hvd::allgather(&mine, sizeof mine, all.data()).isOk()) return 1;
  for (int k = 0; k < n; ++k) {
    if (all[static_cast<size_t>(k)] != k * 10) return 1;
  }
  // Variable sizes, learnt by the library: rank k sends k + 1 copies of the byte 'a' + k.
  std::vector<char> block(static_cast<size_t>(hvd::rank()) + 1, static_cast<char>('a' + hvd::rank()));
  std::vector<size_t> sizes;
  auto gathered = hvd::allgatherv(block.data(), block.size(), &sizes);
  if (!gathered.isOk() || sizes.size() != static_cast<size_t>(n)) return 1;
  size_t at = 0;
  for (int k = 0; k < n; ++k) {
    if (sizes[static_cast<size_t>(k)] != static_cast<size_t>(k) + 1) return 1;
    for (int i = 0; i <= k; ++i, ++at) {
      if (static_cast<char>((*gathered)[at]) != 'a' + k) return 1;
    }
  }
  if (!hvd::barrier().isOk()) return 1;
  std::printf("ok %d checks on rank %d of %d\n", checks + 3, hvd::rank(), n);
  return 0;
}

int loop(int victim, bool ignoreTerm = true) {
  if (ignoreTerm) ::signal(SIGTERM, SIG_IGN);  // let survivors report; hvdrun SIGKILLs after its grace
  std::vector<float> data(10000, 1.0f);
  for (int i = 0; i < 100000; ++i) {
    if (hvd::rank() == victim && i == 20) ::raise(SIGKILL);
    auto start = std::chrono::steady_clock::now();
    auto s = hvd::allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kAverage);
    if (!s.isOk()) {
      double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "allreduce failed after %.2f s: %s\n", took, s.message().c_str());
      return 1;
    }
  }
  return 0;
}

// hvdrun --max-restarts: in the first start, rank <victim> SIGKILLs itself in the loop
// above; in later starts every rank allreduces rank + 1 once and prints "start S sum X".
int restarted(int victim) {
  const char* count = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const int start = count != nullptr ? std::atoi(count) : -1;
  if (start == 0) return loop(victim);
  float sum = static_cast<float>(hvd::rank() + 1);
  if (!hvd::allreduce(&sum, 1, DataType::kFloat32, ReduceOp::kSum).isOk()) return 1;
  std::printf("start %d sum %g\n", start, sum);
  return 0;
}

// Elastic training from C++: what hvd.elastic.run does in Python, the count of allreduces
// done being the state. A rank whose peer dies mid-collective may fail a collective that
// its other peers finished, so after each re-forming every rank takes rank 0's count.
int elastic(int victim, bool killAgent, bool freeze) {
  const char* workerText = std::getenv("HVD_ELASTIC_WORKER");
  const int worker = workerText != nullptr ? std::atoi(workerText) : -1;
  std::int32_t done = 0;
  int worlds = 1;
  while (true) {
    const int size = hvd::size(), rank = hvd::rank();
    bool failed = worlds > 1 && !hvd::broadcast(&done, sizeof done, 0).isOk();
    for (; done < 20 && !failed; ++done) {
      if (worker == victim && done == 5) {
        if (freeze) ::raise(SIGSTOP);  // until hvdrun (or its host's agent) kills it
        if (killAgent) {
          ::kill(::getppid(), SIGKILL);
          ::pause();  // until the agent's death (PR_SET_PDEATHSIG) ends this rank too
        }
        ::raise(SIGKILL);
      }
      float sum = static_cast<float>(rank + 1);
      if (!hvd::allreduce(&sum, 1, DataType::kFloat32, ReduceOp::kSum).isOk()) {
        failed = true;
        break;
      }
      if (sum != static_cast<float>(size * (size + 1) / 2)) {
        std::printf("elastic wrong sum %g in a world of %d\n", sum, size);
        return 1;
      }
    }
    if (!failed) break;
    hvd::shutdown();
    if (auto joined = hvd::init(); !joined.isOk()) {
      std::printf("elastic init failed: %s\n", joined.message().c_str());
      return 1;
    }
    ++worlds;
  }
  std::printf("elastic done worker %d rank %d size %d worlds %d\n", worker, hvd::rank(), hvd::size(), worlds);
  return 0;
}

// An elastic job that grows, from C++: what hvd.elastic.run and commit() do in Python.
int elasticGrow(int total, const std::string& how) {
  const bool late = how == "late" || how == "late-rejoin";
  // ELASTIC_VICTIM=W@S: worker W SIGKILLs itself before its allreduce number S.
  int victim = -1, victimAt = -1;
  if (const char* v = std::getenv("ELASTIC_VICTIM"); v != nullptr) std::sscanf(v, "%d@%d", &victim, &victimAt);
  const char* workerText = std::getenv("HVD_ELASTIC_WORKER");
  const int worker = workerText != nullptr ? std::atoi(workerText) : -1;
  const char* file = std::getenv("DISCOVERY_FILE");
  const char* grown = std::getenv("DISCOVERY_GROWN");
  std::int32_t done = 0;
  int worlds = 1;
  bool wrote = false;
  while (true) {
    const int size = hvd::size(), rank = hvd::rank();
    bool leave = !hvd::broadcast(&done, sizeof done, 0).isOk();  // a new rank learns where the others are
    while (!leave && done < total) {
      if (!late && worker == 0 && done == 5 && !wrote && file != nullptr && grown != nullptr) {
        std::FILE* f = std::fopen(file, "w");
        if (f != nullptr) {
          std::fputs(grown, f);
          std::fclose(f);
        }
        wrote = true;
      }
      if (worker == victim && done == victimAt) ::raise(SIGKILL);
      float sum = static_cast<float>(rank + 1);
      if (!hvd::allreduce(&sum, 1, DataType::kFloat32, ReduceOp::kSum).isOk()) break;
      if (sum != static_cast<float>(size * (size + 1) / 2)) {
        std::printf("elastic wrong sum %g in a world of %d\n", sum, size);
        return 1;
      }
      ++done;
      auto changed = hvd::elasticWorldChanged();
      leave = !changed || *changed;
      ::usleep(20000);
    }
    if (!leave && done >= total) break;
    hvd::shutdown();
    if (auto joined = hvd::init(); !joined.isOk()) {
      std::printf("elastic init failed: %s\n", joined.message().c_str());
      return 1;
    }
    ++worlds;
  }
  if (late) {  // the job grows after its ranks' last commit
    if (worker == 0 && file != nullptr && grown != nullptr) {
      std::FILE* f = std::fopen(file, "w");
      if (f != nullptr) {
        std::fputs(grown, f);
        std::fclose(f);
      }
    }
    const char* mark = std::getenv("ELASTIC_ADDED_MARK");
    for (int i = 0; i < 600 && mark != nullptr && ::access(mark, F_OK) != 0; ++i) ::usleep(50000);
    if (how == "late-rejoin" && mark != nullptr) {
      const std::string rejoining = std::string(mark) + ".rejoin";
      if (worker == 1) {
        if (std::FILE* f = std::fopen(rejoining.c_str(), "w")) std::fclose(f);
        hvd::shutdown();
        if (auto joined = hvd::init(); !joined.isOk()) {
          std::printf("elastic init failed: %s\n", joined.message().c_str());
          return 1;
        }
        std::printf("elastic rejoined worker 1 rank %d size %d\n", hvd::rank(), hvd::size());
        return 1;  // the world it joined had to wait for worker 0, which finished instead
      }
      for (int i = 0; i < 600 && ::access(rejoining.c_str(), F_OK) != 0; ++i) ::usleep(50000);
      ::sleep(1);  // worker 1 arrives in the next world meanwhile
    }
  }
  auto var = [](const char* name) { return std::getenv(name) != nullptr ? std::getenv(name) : "unset"; };
  std::printf("elastic grown worker %d rank %d size %d worlds %d launched as rank=%s size=%s local=%s gpus=%s at=%s\n",
              worker, hvd::rank(), hvd::size(), worlds, var("HVD_RANK"), var("HVD_SIZE"), var("LOCAL_RANK"),
              var("CUDA_VISIBLE_DEVICES"), var("HVD_LOCAL_GPU"));
  // Where it may run (--bind-to): "0,1" (all of the machine's CPUs when unpinned).
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string cpus;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
    }
  }
  std::printf("elastic cpus worker %d: %s\n", worker, cpus.c_str());
  return 0;
}

// Process sets on 4 ranks: A = {0, 1}, B = {2, 3}, C = {1, 2, 3}, every rank adding all
// three; each member runs every collective in its sets (results known in advance), the
// sets' requests in flight together; the refusals; B removed. Prints "process sets ok" or
// the first thing wrong, and exits 1 then.
int processSets() {
  const int me = hvd::rank();
  auto fail = [&](const std::string& what) {
    std::printf("process sets wrong on rank %d: %s\n", me, what.c_str());
    return 1;
  };
  const std::vector<std::vector<int>> members{{0, 1}, {2, 3}, {1, 2, 3}};
  std::vector<int> ids;
  for (const auto& ranks : members) {
    auto id = hvd::addProcessSet(ranks);
    if (!id) return fail("add: " + id.status().message());
    ids.push_back(*id);
  }
  if (hvd::size() != 4) return fail("needs 4 ranks");
  if (ids != std::vector<int>{1, 2, 3} || hvd::processSetIds() != std::vector<int>{0, 1, 2, 3}) return fail("ids");
  // Every set this rank is in, at once: async allreduces of (job rank + 1) and allgathers.
  std::vector<std::pair<size_t, hvd::Handle>> sums, gathers;
  std::vector<float> values(3);
  std::vector<std::int32_t> mineInt(3, me);
  for (size_t s = 0; s < members.size(); ++s) {
    const auto& ranks = members[s];
    const bool in = std::find(ranks.begin(), ranks.end(), me) != ranks.end();
    auto rank = hvd::processSetRank(ids[s]);
    if (in != rank.isOk()) return fail("processSetRank of set " + std::to_string(ids[s]));
    if (!in) {
      float x = 1;
      auto refused = hvd::allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum, hvd::Device::kCpu, ids[s]);
      if (refused.isOk() || refused.message().find("is not in process set") == std::string::npos) {
        return fail("a non-member's allreduce: " + refused.message());
      }
      continue;
    }
    if (*rank != static_cast<int>(std::find(ranks.begin(), ranks.end(), me) - ranks.begin())) return fail("set rank");
    values[s] = static_cast<float>(me + 1);
    auto h = hvd::allreduceAsync("sum", &values[s], &values[s], 1, DataType::kFloat32, ReduceOp::kSum,
                                 hvd::Device::kCpu, ids[s]);
    if (!h) return fail("allreduceAsync: " + h.status().message());
    sums.emplace_back(s, *h);
    auto g = hvd::allgatherAsync("who", &mineInt[s], 1, DataType::kInt32, hvd::Device::kCpu, {}, ids[s]);
    if (!g) return fail("allgatherAsync: " + g.status().message());
    gathers.emplace_back(s, *g);
  }
  for (auto [s, h] : sums) {
    if (auto st = hvd::synchronize(h); !st.isOk()) return fail("allreduce: " + st.message());
    float want = 0;
    for (int r : members[s]) want += static_cast<float>(r + 1);
    if (values[s] != want) return fail("allreduce in set " + std::to_string(ids[s]) + ": " + std::to_string(values[s]));
  }
  for (auto [s, h] : gathers) {
    auto got = hvd::synchronizeAllgather(h);
    if (!got) return fail("allgather: " + got.status().message());
    std::vector<std::int32_t> who(got->data.size() / 4);
    std::memcpy(who.data(), got->data.data(), got->data.size());
    if (who != std::vector<std::int32_t>(members[s].begin(), members[s].end())) return fail("allgather order");
  }
  // Set C: a broadcast from job rank 3 (its last member), a reducescatter, an alltoall.
  if (me != 0) {
    std::int64_t b = me == 3 ? 42 : -1;
    if (auto st = hvd::broadcast(&b, 1, DataType::kInt64, 3, hvd::Device::kCpu, ids[2]); !st.isOk() || b != 42) {
      return fail("broadcast in C: " + st.message());
    }
    std::int64_t c = 0;
    auto outside = hvd::broadcast(&c, 1, DataType::kInt64, 0, hvd::Device::kCpu, ids[2]);
    if (outside.isOk() || outside.message().find("broadcast root 0 is not in process set 3") == std::string::npos) {
      return fail("a root outside the set: " + outside.message());
    }
    std::vector<float> in(7, static_cast<float>(me)), out(hvd::reducescatterRows(7, ids[2]));
    if (out.size() != (me == 1 ? 3u : 2u) || hvd::reducescatterFirstRow(7, ids[2]) != (me == 1 ? 0u : me == 2 ? 3u : 5u)) {
      return fail("reducescatter rows in C");
    }
    if (auto st = hvd::reducescatter(in.data(), out.data(), 7, DataType::kFloat32, ReduceOp::kSum, {}, ids[2]);
        !st.isOk() || out != std::vector<float>(out.size(), 6.0f)) {
      return fail("reducescatter in C: " + st.message());
    }
    std::vector<std::int32_t> send{me * 10, me * 10 + 1, me * 10 + 2};
    auto got = hvd::alltoall(send.data(), 3, DataType::kInt32, {}, {}, ids[2]);
    if (!got) return fail("alltoall in C: " + got.status().message());
    std::vector<std::int32_t> received(3);
    std::memcpy(received.data(), got->data.data(), 12);
    const std::int32_t at = me - 1;  // this rank's place in C
    if (received != std::vector<std::int32_t>{10 + at, 20 + at, 30 + at}) return fail("alltoall in C");
    if (!hvd::barrier(ids[2]).isOk()) return fail("barrier in C");
  }
  // The job's own collectives still run beside the sets.
  float all = 1;
  if (!hvd::allreduce(&all, &all, 1, DataType::kFloat32, ReduceOp::kSum).isOk() || all != 4) return fail("set 0");
  // Refused on every rank: ranks that disagree, a repeat, the whole job, a rank outside it.
  std::vector<int> differs{0, me == 0 ? 2 : 3};
  auto mismatch = hvd::addProcessSet(differs);
  if (mismatch || mismatch.status().message().find("asked for other ranks") == std::string::npos) {
    return fail("ranks that disagree: " + mismatch.status().message());
  }
  for (const std::vector<int>& bad : {std::vector<int>{0, 1}, std::vector<int>{0, 1, 2, 3}, std::vector<int>{1, 4},
                                      std::vector<int>{2, 2}}) {
    auto refused = hvd::addProcessSet(bad);
    if (refused) return fail("a bad set was added");
  }
  if (hvd::removeProcessSet(ids[1]).isOk() == false) return fail("remove B");
  float x = 1;
  auto gone = hvd::allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kSum, hvd::Device::kCpu, ids[1]);
  if (gone.isOk() || gone.message().find("process set 2 does not exist") == std::string::npos) {
    return fail("a removed set: " + gone.message());
  }
  if (hvd::removeProcessSet(0).isOk()) return fail("set 0 was removed");
  std::printf("process sets ok (the job's collectives on %s)\n", hvd::operationsBackend());
  return 0;
}

// A member dying inside a process set: the set {1, 2, 3} allreduces in a loop and job rank
// <victim> SIGKILLs itself after 20 rounds; rank 0, outside the set, allreduces in the job.
// Survivors print the error they get (with SIGTERM ignored, so they can) and exit 1.
int processSetVictim(int victim) {
  ::signal(SIGTERM, SIG_IGN);
  const std::vector<int> trio{1, 2, 3};
  auto id = hvd::addProcessSet(trio);
  if (!id) {
    std::fprintf(stderr, "add: %s\n", id.status().message().c_str());
    return 2;
  }
  const bool member = hvd::rank() != 0;
  std::vector<float> data(1000, 1.0f);
  for (int i = 0; i < 1000000; ++i) {
    if (hvd::rank() == victim && i == 20) ::raise(SIGKILL);
    auto s = hvd::allreduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kAverage,
                            hvd::Device::kCpu, member ? *id : 0);
    if (!s.isOk()) {
      std::fprintf(stderr, "allreduce failed: %s\n", s.message().c_str());
      return 1;
    }
  }
  return 0;
}

volatile sig_atomic_t gTermSeen = 0;

int loopCleaningUpOnTerm() {
  ::signal(SIGTERM, [](int) { gTermSeen = 1; });
  std::vector<float> data(10000, 1.0f);
  for (int i = 0; i < 100000; ++i) {
    if (gTermSeen) {
      ::usleep(50000);
      hvd::shutdown();
      ::signal(SIGTERM, SIG_DFL);
      ::raise(SIGTERM);
    }
    if (auto s = hvd::allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kAverage); !s.isOk()) {
      std::fprintf(stderr, "allreduce failed: %s\n", s.message().c_str());
      return 1;
    }
  }
  return 0;
}

int leaveEarly(int seconds, int leaver, bool die, bool ending, bool fail) {
  std::vector<float> data(16, 1.0f);
  if (!hvd::allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum).isOk()) return 2;
  if (hvd::rank() == leaver) {
    hvd::shutdown();
    if (ending) {
      // A process slow to end (a large address space to unmap on a loaded machine), made
      // long: /proc shows it ending from here on, and it cannot be reaped until it dies.
      std::thread([seconds] {
        ::sleep(static_cast<unsigned>(seconds));
        ::raise(SIGTERM);
      }).detach();
      ::pthread_exit(nullptr);
    }
    ::sleep(static_cast<unsigned>(seconds));
    if (die) ::raise(SIGTERM);
    return fail ? 3 : 0;
  }
  if (auto s = hvd::allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum); !s.isOk()) {
    std::fprintf(stderr, "allreduce failed: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

// What a training loop does with the notice: agree on a step, save, leave.
int preempt() {
  const char* restarts = std::getenv("SLURM_RESTART_COUNT");
  std::printf("started restart=%s\n", restarts != nullptr ? restarts : "0");
  std::fflush(stdout);
  std::vector<float> data(1000, 1.0f);
  for (long step = 0;; ++step) {
    bool mine = hvd::preemptionRequested();
    auto agreed = hvd::preemptionAgreed();
    if (!agreed.isOk()) {
      std::fprintf(stderr, "preemptionAgreed failed: %s\n", agreed.status().message().c_str());
      return 1;
    }
    if (*agreed) {
      std::printf("checkpoint at step %ld (%s)\n", step, mine ? "seen here" : "seen by a peer");
      // Slurm signals the ranks one by one, so a rank may agree before its own signal
      // arrives; waiting for it shows the notice reached every rank.
      for (int i = 0; i < 500 && !hvd::preemptionRequested(); ++i) ::usleep(10000);
      if (hvd::preemptionRequested()) std::printf("notice reached rank %d\n", hvd::rank());
      return 0;
    }
    if (auto s = hvd::allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kAverage); !s.isOk()) return 1;
    ::usleep(20000);
  }
}

// A rank waiting for a slow peer (rank 0 reading data, say) should sleep, not spin.
int waitForSlowRank(int seconds) {
  if (hvd::rank() == 0) ::sleep(static_cast<unsigned>(seconds));
  if (auto s = hvd::barrier(); !s.isOk()) return 1;
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto secondsOf = [](timeval t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  std::printf("cpu %d %.3f\n", hvd::rank(), secondsOf(usage.ru_utime) + secondsOf(usage.ru_stime));
  return 0;
}

int computeFirst(int ms) {
  std::printf("computing %d\n", hvd::rank());
  std::fflush(stdout);
  if (hvd::rank() == 0) {
    auto cpuMs = [] {
      timespec t{};
      ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
      return static_cast<long long>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
    };
    const long long until = cpuMs() + ms;
    volatile unsigned spin = 0;
    while (cpuMs() < until) spin = spin + 1;
  }
  float one = static_cast<float>(hvd::rank() + 1);
  if (!hvd::allreduce(&one, 1, DataType::kFloat32, ReduceOp::kSum).isOk()) return 1;
  std::vector<float> big(256 * 1024, 1.0f);
  if (!hvd::allreduce(big.data(), big.size(), DataType::kFloat32, ReduceOp::kSum).isOk()) return 1;
  std::printf("done %d %g %g\n", hvd::rank(), one, big[0]);
  return 0;
}

// The shared-memory ring buffers this rank maps: unnamed (memfd) ones, and /dev/shm names.
void printRings() {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  int memfd = 0, named = 0;
  char line[4096];
  while (maps != nullptr && std::fgets(line, sizeof line, maps) != nullptr) {
    memfd += std::strstr(line, "/memfd:hvd-ring") != nullptr;
    named += std::strstr(line, "/dev/shm/hvd-") != nullptr;
  }
  if (maps != nullptr) std::fclose(maps);
  std::printf("rings %d memfd=%d named=%d\n", hvd::rank(), memfd, named);
  std::fflush(stdout);
}

// Bytes received and sent on every interface but loopback, in this process's network
// namespace (its host's, in the test beds).
unsigned long long networkBytes() {
  std::FILE* dev = std::fopen("/proc/self/net/dev", "r");
  unsigned long long total = 0;
  char line[512];
  while (dev != nullptr && std::fgets(line, sizeof line, dev) != nullptr) {
    char name[64];
    unsigned long long rx = 0, tx = 0, skip = 0;
    // "  eth0: rx_bytes packets errs drop fifo frame compressed multicast tx_bytes ..."
    if (std::sscanf(line, " %63[^:]: %llu %llu %llu %llu %llu %llu %llu %llu %llu", name, &rx, &skip, &skip, &skip,
                    &skip, &skip, &skip, &skip, &tx) == 10 &&
        std::string(name) != "lo") {
      total += rx + tx;
    }
  }
  if (dev != nullptr) std::fclose(dev);
  return total;
}

int printTraffic() {
  std::vector<float> data(size_t{2} << 20);
  const unsigned long long before = networkBytes();
  for (int round = 0; round < 4; ++round) {
    std::fill(data.begin(), data.end(), static_cast<float>(hvd::rank() + 1));
    if (auto s = hvd::allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum); !s.isOk()) {
      std::printf("traffic failed: %s\n", s.message().c_str());
      return 1;
    }
    const float want = static_cast<float>(hvd::size() * (hvd::size() + 1) / 2);
    if (std::any_of(data.begin(), data.end(), [&](float v) { return v != want; })) return 1;
  }
  std::printf("traffic %d %llu\n", hvd::rank(), networkBytes() - before);
  return 0;
}

// The time slices of this rank's threads, as the scheduler's debug file shows them (se.slice, in
// ns; kernels from 6.6 with CONFIG_SCHED_DEBUG).
int printSlices() {
  for (int i = 0; i < 200; ++i) {
    int32_t v = 1;
    if (auto s = hvd::allreduce(&v, 1, DataType::kInt32, ReduceOp::kSum); !s.isOk() || v != hvd::size()) return 1;
  }
  long shortest = -1, longest = -1;
  if (DIR* tasks = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(tasks)) {
      if (entry->d_name[0] == '.') continue;
      std::FILE* sched = std::fopen(("/proc/self/task/" + std::string(entry->d_name) + "/sched").c_str(), "r");
      char line[256];
      while (sched != nullptr && std::fgets(line, sizeof line, sched) != nullptr) {
        long ns = 0;
        if (std::sscanf(line, "se.slice : %ld", &ns) != 1) continue;
        shortest = shortest < 0 ? ns / 1000 : std::min(shortest, ns / 1000);
        longest = std::max(longest, ns / 1000);
      }
      if (sched != nullptr) std::fclose(sched);
    }
    ::closedir(tasks);
  }
  if (shortest < 0) std::printf("slices %d unknown\n", hvd::rank());
  else std::printf("slices %d %ld %ld\n", hvd::rank(), shortest, longest);
  return 0;
}

// The one CPU the calling thread may use, or -1 while it may use more.
int heldOn() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1) return -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  return -1;
}

int printPinned(int seconds) {
  std::vector<float> data(64 * 1024, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 20; ++i) {
      if (!hvd::allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kMin).isOk()) return 1;
    }
    // Every rank stops in the same round: when all are held, or when any rank's time is up.
    int32_t flags[2] = {heldOn() >= 0 ? 1 : 0,
                        std::chrono::steady_clock::now() - start < std::chrono::seconds(seconds) ? 1 : 0};
    if (!hvd::allreduce(flags, 2, DataType::kInt32, ReduceOp::kMin).isOk()) return 1;
    if (flags[0] == 1 || flags[1] == 0) break;
  }
  const int cpu = heldOn();
  if (cpu < 0) std::printf("pinned %d none\n", hvd::rank());
  else std::printf("pinned %d %d\n", hvd::rank(), cpu);
  return 0;
}

// Leaves the job and joins it again, `times` times, each time with a collective (Horovod
// allows hvd.init() after hvd.shutdown()).
int rejoin(int times) {
  for (int round = 1; round <= times; ++round) {
    hvd::shutdown();
    if (auto s = hvd::init(); !s.isOk()) {
      std::fprintf(stderr, "init %d failed: %s\n", round + 1, s.message().c_str());
      return 1;
    }
    int value = hvd::rank() + round;
    if (!hvd::allreduce(&value, 1, DataType::kInt32, ReduceOp::kSum).isOk()) return 1;
    const int size = hvd::size();
    if (value != size * (size - 1) / 2 + size * round) return 1;
  }
  std::printf("rejoined %d times on rank %d\n", times, hvd::rank());
  return 0;
}

// A process forked after init() (a worker) must not take its parent's place in the
// collectives, nor say goodbye for it when it exits.
int forked() {
  const int rank = hvd::rank();
  float one = 1;
  if (!hvd::allreduce(&one, 1, hvd::DataType::kFloat32, hvd::ReduceOp::kSum).isOk()) return 1;
  if (rank == 0) {
    pid_t child = ::fork();
    if (child == 0) {
      std::printf("child rank %d size %d\n", hvd::rank(), hvd::size());
      float hundred = 100;
      auto s = hvd::allreduce(&hundred, 1, hvd::DataType::kFloat32, hvd::ReduceOp::kSum);
      if (s.isOk()) {
        std::printf("child allreduced\n");
      } else {
        std::printf("child refused: %s\n", s.message().c_str());
      }
      std::fflush(stdout);
      std::exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    std::printf("child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  float sums[3];
  for (int step = 1; step <= 3; ++step) {
    sums[step - 1] = static_cast<float>((rank + 1) * step);
    if (!hvd::allreduce(&sums[step - 1], 1, hvd::DataType::kFloat32, hvd::ReduceOp::kSum).isOk()) return 1;
  }
  std::printf("sums %d %g %g %g\n", rank, sums[0], sums[1], sums[2]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* mark = std::getenv("ELASTIC_ADDED_MARK"); mark != nullptr && std::getenv("HVD_ELASTIC_AFTER")) {
    if (std::FILE* f = std::fopen(mark, "w")) std::fclose(f);
  }
  if (auto s = hvd::init(); !s.isOk()) {
    std::fprintf(stderr, "init failed: %s\n", s.message().c_str());
    return 2;
  }
  std::string mode = argc > 1 ? argv[1] : "check";
  if (mode == "identity") {
    std::printf("rank=%d size=%d local_rank=%d local_size=%d cross_rank=%d cross_size=%d homogeneous=%d ops=%s\n",
                hvd::rank(), hvd::size(), hvd::localRank(), hvd::localSize(), hvd::crossRank(), hvd::crossSize(),
                hvd::isHomogeneous() ? 1 : 0, hvd::operationsBackend());
    return hvd::barrier().isOk() ? 0 : 1;
  }
  if (mode == "rings") printRings();
  if (mode == "traffic") return printTraffic() == 0 && hvd::barrier().isOk() ? 0 : 1;
  int rc = mode == "loop" && argc > 2   ? loop(std::atoi(argv[2]))
           : mode == "loop-dies-of-term" ? loop(-1, /*ignoreTerm=*/false)
           : mode == "loop-cleans-up-on-term" ? loopCleaningUpOnTerm()
           : mode == "leave-early" && argc > 2
               ? leaveEarly(std::atoi(argv[2]), argc > 3 ? std::atoi(argv[3]) : 0, argc > 4 && std::string(argv[4]) == "die",
                            argc > 4 && std::string(argv[4]) == "ending", argc > 4 && std::string(argv[4]) == "fail")
           : mode == "wait" && argc > 2 ? waitForSlowRank(std::atoi(argv[2]))
           : mode == "compute-first" && argc > 2 ? computeFirst(std::atoi(argv[2]))
           : mode == "preempt"          ? preempt()
           : mode == "rejoin" && argc > 2 ? rejoin(std::atoi(argv[2]))
           : mode == "slices"           ? printSlices()
           : mode == "forked"           ? forked()
           : mode == "pinned" && argc > 2 ? printPinned(std::atoi(argv[2]))
           : mode == "restarted" && argc > 2 ? restarted(std::atoi(argv[2]))
           : mode == "elastic" && argc > 2 ? elastic(std::atoi(argv[2]), argc > 3 && std::string(argv[3]) == "agent",
                                                         argc > 3 && std::string(argv[3]) == "freeze")
           : mode == "elastic-grow" && argc > 2 ? elasticGrow(std::atoi(argv[2]), argc > 3 ? argv[3] : "")
           : mode == "process-sets"     ? processSets()
           : mode == "process-set-victim" && argc > 2 ? processSetVictim(std::atoi(argv[2]))
                                        : check();
  hvd::shutdown();
  return rc;
}

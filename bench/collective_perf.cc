// bench/collective_perf.cc: one side of the collective benchmark, run as N ranks. With
// --impl hvd (started by hvdrun) it times our runtime; with --impl mpi (started by mpirun,
// only built with MPI) it times Open MPI; with --impl tcp-wire (started by hvdrun) it times
// plain loopback sockets moving the same bytes with no collective logic (tcp_wire.h).
// Rank 0 prints nccl-tests columns:
//   size count type redop root time(us) algbw busbw #wrong
// busbw = algbw x 2(n-1)/n for allreduce, x 1 for broadcast, x (n-1)/n for reducescatter and
// alltoall (nccl-tests' factors; size is each rank's input, cut into n equal parts for
// those two). Each size is checked.
// With --samples 1 each iteration is timed on its own and rank 0 adds, after a size's line,
//   #samples size us us ...       (as many such lines as 1000 figures a line needs)
// one figure per iteration, the slowest rank's (so the spread of single collectives can be
// told: bench/contention_bench.sh pools them into median, p10 and p90).
//   collective_perf --impl hvd|mpi|tcp-wire --op allreduce|broadcast|reducescatter|alltoall [--min 4] [--max 67108864] [--iters N]
//                   [--factor 2] [--samples 1] [--seconds S]
// --factor is nccl-tests' -f: the next size is the last one times it. --seconds S raises each
// size's iterations until they take about S seconds (the median of a few after the warm-up,
// the slowest rank's, so every rank runs the same count; a run that still falls short of 0.8 S
// goes on, sized from its own time, up to 10^6 calls): a fixed count is a job's first
// milliseconds at the small sizes beside busy loops, and minutes at the large ones.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/tcp_wire.h"
#include "hvd/hvd.h"
#ifdef HVD_BENCH_MPI
#include <mpi.h>
#endif

namespace {

struct Impl {
  int rank = 0, size = 1;
  bool mpi = false;
  hvd::bench::TcpWire* wire = nullptr;
  std::vector<std::byte> wireOut, wireIn;

  // What each rank sends and receives in a bandwidth-optimal collective on `bytes`:
  // allreduce (reduce-scatter then allgather) sends and receives 2(n-1)/n of them, which
  // makes the wire's busbw its per-direction rate; a pipelined broadcast passes all of them
  // down the chain 0 -> 1 -> ... -> n-1.
  size_t wireSends(size_t bytes, bool reduce) const {
    if (reduce) return bytes * 2 * static_cast<size_t>(size - 1) / static_cast<size_t>(size);
    return rank == size - 1 ? 0 : bytes;
  }
  size_t wireReceives(size_t bytes, bool reduce) const {
    if (reduce) return wireSends(bytes, reduce);
    return rank == 0 ? 0 : bytes;
  }
  void wireCollective(size_t bytes, bool reduce) {
    auto e = wire->exchange(wireOut.data(), wireSends(bytes, reduce), wireIn.data(), wireReceives(bytes, reduce));
    if (!e.empty()) fail(e);
  }
  static std::byte wirePattern(int rank, size_t i) { return static_cast<std::byte>((rank * 31 + i) & 0xff); }
  long wireWrong(size_t bytes, bool reduce) const {
    long wrong = 0;
    const int left = (rank + size - 1) % size;
    const size_t n = size > 1 ? wireReceives(bytes, reduce) : 0;
    for (size_t i = 0; i < n; ++i) wrong += wireIn[i] != wirePattern(left, i);
    return wrong;
  }

  void allreduce(float* data, size_t n) {
#ifdef HVD_BENCH_MPI
    if (mpi) {
      MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      return;
    }
#endif
    if (auto s = hvd::allreduce(data, n, hvd::DataType::kFloat32, hvd::ReduceOp::kSum); !s.isOk()) fail(s.message());
  }
  void broadcast(float* data, size_t n) {
#ifdef HVD_BENCH_MPI
    if (mpi) {
      MPI_Bcast(data, static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD);
      return;
    }
#endif
    if (auto s = hvd::broadcast(data, n * sizeof(float), 0); !s.isOk()) fail(s.message());
  }
  // count: this rank's input, a multiple of size; `out` receives count / size elements.
  void reducescatter(const float* in, float* out, size_t count) {
#ifdef HVD_BENCH_MPI
    if (mpi) {
      MPI_Reduce_scatter_block(in, out, static_cast<int>(count) / size, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      return;
    }
#endif
    if (auto s = hvd::reducescatter(in, out, count, hvd::DataType::kFloat32, hvd::ReduceOp::kSum); !s.isOk()) {
      fail(s.message());
    }
  }
  // count / size elements to each rank; the result, count elements, in `out` (MPI) or
  // `received` (hvd hands its own buffer over: the time includes no copy out of it).
  const float* alltoall(const float* in, float* out, size_t count) {
#ifdef HVD_BENCH_MPI
    if (mpi) {
      const int each = static_cast<int>(count) / size;
      MPI_Alltoall(in, each, MPI_FLOAT, out, each, MPI_FLOAT, MPI_COMM_WORLD);
      return out;
    }
#endif
    auto got = hvd::alltoall(in, count, hvd::DataType::kFloat32);
    if (!got) fail(got.status().message());
    received = std::move(got->data);
    return reinterpret_cast<const float*>(received.data());
  }
  std::vector<std::byte> received;
  void barrier() {
#ifdef HVD_BENCH_MPI
    if (mpi) {
      MPI_Barrier(MPI_COMM_WORLD);
      return;
    }
#endif
    (void)hvd::barrier();
  }
  double maxOverRanks(double v) {
    maxOverRanks(&v, 1);
    return v;
  }
  void maxOverRanks(double* v, size_t n) {
#ifdef HVD_BENCH_MPI
    if (mpi) {
      MPI_Allreduce(MPI_IN_PLACE, v, static_cast<int>(n), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return;
    }
#endif
    (void)hvd::allreduce(v, n, hvd::DataType::kFloat64, hvd::ReduceOp::kMax);
  }
  [[noreturn]] static void fail(const std::string& what) {
    std::fprintf(stderr, "collective_perf: %s\n", what.c_str());
    std::exit(1);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string implName = "hvd", op = "allreduce";
  size_t minBytes = 4, maxBytes = 64u << 20;
  int fixedIters = 0;  // 0: by size, as below
  double minSeconds = 0;
  bool samples = false;
  size_t factor = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--impl") implName = argv[i + 1];
    else if (flag == "--op") op = argv[i + 1];
    else if (flag == "--min") minBytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--max") maxBytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--iters") fixedIters = std::atoi(argv[i + 1]);
    else if (flag == "--factor") factor = std::max<size_t>(2, std::strtoull(argv[i + 1], nullptr, 10));
    else if (flag == "--samples") samples = std::string(argv[i + 1]) == "1";
    else if (flag == "--seconds") minSeconds = std::strtod(argv[i + 1], nullptr);
  }
  if (implName != "hvd" && implName != "mpi" && implName != "tcp-wire") {
    Impl::fail("unknown --impl '" + implName + "' (hvd, mpi or tcp-wire)");
  }
  if (op != "allreduce" && op != "broadcast" && op != "reducescatter" && op != "alltoall") {
    Impl::fail("unknown --op '" + op + "' (allreduce, broadcast, reducescatter or alltoall)");
  }
  if (implName == "tcp-wire" && op != "allreduce" && op != "broadcast") {
    Impl::fail("--impl tcp-wire moves an allreduce's or a broadcast's bytes only");
  }
  Impl impl;
  impl.mpi = implName == "mpi";
#ifdef HVD_BENCH_MPI
  if (impl.mpi) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &impl.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &impl.size);
  }
#endif
  if (!impl.mpi) {
    if (auto s = hvd::init(); !s.isOk()) Impl::fail(s.message());
    impl.rank = hvd::rank();
    impl.size = hvd::size();
  }
  hvd::bench::TcpWire wire;
  if (implName == "tcp-wire") {
    if (auto e = wire.open(impl.rank, impl.size); !e.empty()) Impl::fail(e);
    impl.wire = &wire;
    impl.wireOut.resize(impl.wireSends(maxBytes, op == "allreduce"));
    impl.wireIn.resize(impl.wireReceives(maxBytes, op == "allreduce"));
    for (size_t i = 0; i < impl.wireOut.size(); ++i) impl.wireOut[i] = Impl::wirePattern(impl.rank, i);
  }
  const int n = impl.size;
  const bool reduce = op == "allreduce", scatter = op == "reducescatter", exchange = op == "alltoall";
  const size_t un = static_cast<size_t>(n);
  if (impl.rank == 0) {
    std::printf("#%11s %12s %6s %6s %5s %10s %8s %8s %6s\n", "size", "count", "type", "redop", "root", "time(us)",
                "algbw", "busbw", "#wrong");
  }
  std::vector<float> data(maxBytes / sizeof(float) + 1), out(scatter || exchange ? data.size() : 0);
  for (size_t step = minBytes; step <= maxBytes; step *= factor) {
    size_t bytes = step, count = bytes / sizeof(float);
    if (scatter || exchange) {  // n equal parts
      count = count / un * un;
      if (count == 0) continue;
      bytes = count * sizeof(float);
    }
    const float* result = nullptr;  // alltoall's
    int iters = static_cast<int>(std::max<size_t>(5, std::min<size_t>(200, (256u << 20) / (bytes * 8 + 1))));
    if (fixedIters > 0) iters = fixedIters;
    auto fill = [&] {
      for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((impl.rank + 1) * ((i % 7) + 1));
    };
    // Warm up, then check correctness once per size.
    auto once = [&] {
      if (impl.wire) impl.wireCollective(bytes, reduce);
      else if (scatter) impl.reducescatter(data.data(), out.data(), count);
      else if (exchange) result = impl.alltoall(data.data(), out.data(), count);
      else reduce ? impl.allreduce(data.data(), count) : impl.broadcast(data.data(), count);
    };
    fill();
    once();
    long wrong = 0;
    if (impl.wire) wrong = impl.wireWrong(bytes, reduce);
    // Element i of rank k's input is (k + 1) * ((i % 7) + 1).
    const size_t part = count / un, mine = static_cast<size_t>(impl.rank) * part;
    for (size_t i = 0; i < part && scatter; ++i) {
      wrong += out[i] != static_cast<float>(n * (n + 1) / 2 * (((mine + i) % 7) + 1));
    }
    for (size_t i = 0; i < count && exchange; ++i) {
      const size_t from = i / part, at = mine + i % part;  // element `at` of rank from's input
      wrong += result[i] != static_cast<float>((from + 1) * ((at % 7) + 1));
    }
    for (size_t i = 0; i < count && !impl.wire && !scatter && !exchange; ++i) {
      float expect = reduce ? static_cast<float>(n * (n + 1) / 2 * ((i % 7) + 1)) : static_cast<float>((i % 7) + 1);
      wrong += data[i] != expect;
    }
    if (minSeconds > 0) {
      // The median of a few (the same count on every rank): one start-up stall of
      // milliseconds in a mean would cut a small size's run to a few hundred iterations.
      std::vector<double> probes(static_cast<size_t>(std::min(21, iters)));
      for (double& p : probes) {
        auto probeStart = std::chrono::steady_clock::now();
        once();
        p = std::chrono::duration<double>(std::chrono::steady_clock::now() - probeStart).count();
      }
      std::nth_element(probes.begin(), probes.begin() + probes.size() / 2, probes.end());
      double each = impl.maxOverRanks(probes[probes.size() / 2]);
      iters = std::max(iters, static_cast<int>(std::min(1e6, minSeconds / std::max(each, 1e-7))));
    }
    impl.barrier();
    std::vector<double> each;
    // Runs iterations [from, to), adding their time to `timed`.
    double timed = 0;
    auto run = [&](int from, int to) {
      if (samples) each.resize(static_cast<size_t>(to));
      auto start = std::chrono::steady_clock::now();
      for (int it = from; it < to; ++it) {
        auto begin = samples ? std::chrono::steady_clock::now() : start;
        once();
        if (samples) each[static_cast<size_t>(it)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      }
      timed += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    run(0, iters);
    double slowest = impl.maxOverRanks(timed);
    // The probes can fall in a job's first moments, several times slower than the rest (runs
    // of 0.2 s seen for --seconds 1): a run that fell short goes on, sized from its own time.
    // Every rank extends by the same count, from the slowest rank's figure.
    while (minSeconds > 0 && slowest < 0.8 * minSeconds && iters < 1000000) {
      const double perCall = std::max(slowest / iters, 1e-7);
      const int more = static_cast<int>(std::clamp((minSeconds - slowest) / perCall, 1.0, 1e6 - iters));
      run(iters, iters + more);
      iters += more;
      slowest = impl.maxOverRanks(timed);
    }
    double seconds = slowest / iters;
    if (samples) impl.maxOverRanks(each.data(), each.size());
    double algbw = static_cast<double>(bytes) / seconds / 1e9;
    double busbw = reduce ? algbw * 2 * (n - 1) / n : scatter || exchange ? algbw * (n - 1) / n : algbw;
    if (impl.rank == 0) {
      std::printf("%12zu %12zu %6s %6s %5d %10.2f %8.3f %8.3f %6ld\n", bytes, count, "float",
                  reduce || scatter ? "sum" : "none", op == "broadcast" ? 0 : -1, seconds * 1e6, algbw, busbw, wrong);
      // Lines of at most 1000 figures: hvdrun cuts a rank's line at --max-line-kb (1 MiB by default).
      for (size_t i = 0; i < each.size(); ++i) {
        if (i % 1000 == 0) std::printf("%s#samples %zu", i == 0 ? "" : "\n", bytes);
        std::printf(" %.1f", each[i] * 1e6);
      }
      if (!each.empty()) std::printf("\n");
    }
  }
#ifdef HVD_BENCH_MPI
  if (impl.mpi) MPI_Finalize();
#endif
  if (!impl.mpi) hvd::shutdown();
  return 0;
}

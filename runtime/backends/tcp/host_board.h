// runtime/backends/tcp/host_board.h: a counter the job's ranks on one host share: how many of
// them sleep in a wait right now. The wait policy (wait_policy.h) needs it to tell a core
// taken by the job from one taken by other work. A rank that lost its core for a time slice
// while more tasks are runnable on the host than the job's ranks that are awake lost it to
// something else (busy loops, data loaders, another job). Comparing with all of the job's
// ranks instead missed most of it: ranks sleep in their waits, so beside two busy loops the
// host's runnable count seldom passed the job's ranks (measured at np=4 on 2 cores: 12 of 29
// lost slices counted, against 29 of 29 with the sleepers taken off; 2 of 20 either way
// with nothing else running).
//
// The board also pools the local ranks' CPUs. A rank bound to a core (hvdrun --bind-to core,
// srun --cpu-bind=cores, mpirun -bind-to core) sees one CPU and would take itself for one of
// several ranks sharing it, waiting with yields and a short slice; only the ranks' CPUs
// together say that each has its own.
//
// Local rank 0 makes it (a memfd, offered by handle, fd_handle.h) and publishes the handle in
// the store under its own rank, before the ring's addresses (so that a PMIx store's one fence
// carries it); the other local ranks read it, once connected, from the rank that local rank 0
// has under block placement (hvdrun's, and mpirun's and srun's defaults) and check the host
// index it carries. Ranks placed otherwise, or that cannot open it, go without: the policy
// then counts every rank awake, as before.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/common/status.h"
#include "runtime/common/store.h"

namespace hvd::backends::tcp {

class HostBoard {
 public:
  // A board in this process's memory alone (tests).
  static std::shared_ptr<HostBoard> inProcess(size_t arenaBytes = 0);
  // A new board in a memfd, offered by *handle while this board lives, with `arenaBytes`
  // of zeroed shared memory after its page for the host's arena (host_arena.h).
  static Result<std::shared_ptr<HostBoard>> create(std::string* handle, size_t arenaBytes = 0);
  // Another process's board by its handle (fd_handle.h's errors), its arena with it.
  static Result<std::shared_ptr<HostBoard>> open(const std::string& handle);
  ~HostBoard();
  HostBoard(const HostBoard&) = delete;
  HostBoard& operator=(const HostBoard&) = delete;

  // Around a wait's sleep: relaxed, since the count is a hint read at one moment.
  void asleep() { page_->sleeping.fetch_add(1, std::memory_order_relaxed); }
  void awake() { page_->sleeping.fetch_sub(1, std::memory_order_relaxed); }
  int sleeping() const { return page_->sleeping.load(std::memory_order_relaxed); }

  // Once per local rank: the CPUs its affinity allows (affinityCpus(); empty when unknown)
  // and the cores its cgroup quota allows (nullopt: none).
  void join(const std::vector<int>& cpus, std::optional<int> quotaCores);
  // The cores the host's `localSize` ranks have together: their CPUs counted once, capped by
  // the smallest quota; nullopt until all of them have joined, or where one could not say
  // (an affinity unread, or a CPU past the page's kCpus).
  std::optional<int> ranksCores(int localSize) const;

  static constexpr int kCpus = 1024;  // CPU_SETSIZE, all sched_getaffinity with cpu_set_t shows

  // Where each local rank's waiting thread last ran, noted as its waits start (wait_policy.h):
  // a rank with a core of its own asks whether another rank of the host last ran on its CPU,
  // where the scheduler stacked them, and then yields to it instead of spinning flat out.
  // Relaxed: a hint read at one moment, written only when it changes; the question reads
  // one int per local rank, from 2 KiB that change only when a rank moves.
  static constexpr int kSeats = 512;  // local ranks the board tracks
  void ranOn(int localRank, int cpu) {
    if (localRank < 0 || localRank >= kSeats || cpu < 0) return;
    auto& seat = page_->lastCpu[localRank];
    if (seat.load(std::memory_order_relaxed) != cpu + 1) seat.store(cpu + 1, std::memory_order_relaxed);
  }
  // Whether another of the host's `localSize` ranks last ran on the CPU `localRank` last ran
  // on; nullopt when that rank has noted none or has no seat.
  std::optional<bool> cpuShared(int localRank, int localSize) const;

  // The shared bytes after the page, page-aligned: as many as the maker asked for, rounded up
  // to whole pages (empty when it asked for none).
  std::span<std::byte> arena() const { return arena_; }

 private:
  // The shared page's layout. Every field starts at zero (a quota of 0 is none), which a
  // fresh memfd page is too; the maker constructs it before offering the handle.
  struct Page {
    std::atomic<int> sleeping{0};
    std::atomic<int> joined{0};
    std::atomic<int> unknown{0};     // ranks that joined without their CPUs
    std::atomic<int> quotaCores{0};  // the smallest quota, or 0 for none
    std::atomic<uint64_t> cpus[kCpus / 64] = {};
    std::atomic<int> lastCpu[kSeats] = {};  // ranOn's CPU + 1, or 0 for none noted
  };

  HostBoard() = default;
  Page* page_ = nullptr;
  void* mapping_ = nullptr;    // the shared page and arena, or null for inProcess()'s
  size_t mapped_ = 0;
  std::span<std::byte> arena_;
  int offered_ = -1;           // create()'s descriptor, which the handle names
  std::unique_ptr<Page> own_;  // inProcess()'s page
  struct FreeAligned {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], FreeAligned> ownArena_;  // inProcess()'s arena
};

// Where a rank sits on its host, for the board's exchange.
struct BoardPlace {
  int rank = 0, localRank = 0, localSize = 1, crossRank = 0;
};

// Every rank, before the ring's addresses: publishes "hvd.board/<rank>": "<crossRank>
// <localRank> <handle>", the handle "-" but on local rank 0 of a host with more than one
// rank, which makes the board, with `arenaBytes` for the arena (logged at debug level where
// it cannot: "-" then too). That rank gets its board, where made; the others nullptr. An
// error only when the store fails.
Result<std::shared_ptr<HostBoard>> offerHostBoard(Store& store, const BoardPlace& place, size_t arenaBytes = 0);
// The other local ranks, once connected: local rank 0's board, waiting up to `timeout` for
// its entry; an error where it is not to be had (placement other than block, no board made,
// a handle this rank cannot open). nullptr for local rank 0 and hosts of one rank.
Result<std::shared_ptr<HostBoard>> joinHostBoard(Store& store, const BoardPlace& place,
                                                 std::chrono::milliseconds timeout);

}  // namespace hvd::backends::tcp

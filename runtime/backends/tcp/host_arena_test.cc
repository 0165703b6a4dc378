// runtime/backends/tcp/host_arena_test.cc: the arena with ranks as threads over one region:
// the reduction tree, the two slot sets used by turns, sleeping ranks woken, late ranks named.
// Waits through a transport, and ranks that fail, are in tcp_transport_test.cc.
#include "runtime/backends/tcp/host_arena.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/backends/tcp/host_board.h"
#include "runtime/backends/tcp/wake_word.h"

using namespace std::chrono_literals;
using hvd::backends::tcp::HostArena;
using hvd::backends::tcp::HostBoard;
namespace hc = hvd::collectives;

namespace {

// Waits for the call to complete: spinning with yields, or (sleep) on the arena's word.
void waitFor(HostArena& arena, bool sleep) {
  while (!arena.complete()) {
    if (!sleep) {
      std::this_thread::yield();
      continue;
    }
    if (auto on = arena.maySleep()) {
      hvd::backends::tcp::sleepWhileEqual(*on->word, on->value, 5s);
      arena.awake();
    }
  }
}

// Runs body(rank, arena) on `ranks` threads over one region; returns each rank's message.
template <typename Body>
std::vector<std::string> onArena(int ranks, Body body) {
  auto board = HostBoard::inProcess(HostArena::bytesFor(ranks));
  std::vector<std::string> out(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      HostArena arena(board->arena(), ranks, r);
      out[static_cast<size_t>(r)] = body(r, arena);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// The tree as text: each rank's buffer is its digit, and combining writes "(" dst src ")".
constexpr size_t kText = 128;
void combineAsText(std::byte* dst, const std::byte* src, hc::Operands order) {
  std::string a(reinterpret_cast<const char*>(dst)), b(reinterpret_cast<const char*>(src));
  if (order == hc::Operands::kSourceFirst) std::swap(a, b);
  std::string joined = "(" + a + b + ")";
  std::memset(dst, 0, kText);
  std::memcpy(dst, joined.data(), std::min(joined.size(), kText - 1));
}

}  // namespace

TEST_CASE("the arena reduces in recursive doubling's tree: pairs folded first then halves with lower ranks first", "[unit]") {
  const std::vector<std::pair<int, std::string>> trees = {
      {1, "0"},
      {2, "(01)"},
      {3, "((01)2)"},
      {4, "((01)(23))"},
      {5, "(((01)2)(34))"},
      {6, "(((01)(23))(45))"},
      {8, "(((01)(23))((45)(67)))"},
      {9, "((((01)2)(34))((56)(78)))"},
  };
  for (const auto& [ranks, tree] : trees) {
    INFO("ranks " << ranks);
    auto out = onArena(ranks, [](int rank, HostArena& arena) {
      std::vector<std::byte> text(kText);
      text[0] = static_cast<std::byte>('0' + rank);
      arena.arrive(text);
      waitFor(arena, false);
      arena.reduce(text, combineAsText);
      arena.finish();
      return std::string(reinterpret_cast<const char*>(text.data()));
    });
    CHECK(out == std::vector<std::string>(static_cast<size_t>(ranks), tree));
  }
}

TEST_CASE("calls in a row take the two slot sets by turns without mixing one call's buffers with the next", "[unit]") {
  constexpr int kRanks = 4, kCalls = 3000;
  const auto start = std::chrono::steady_clock::now();
  auto out = onArena(kRanks, [](int rank, HostArena& arena) -> std::string {
    for (int call = 0; call < kCalls; ++call) {
      // Odd calls sleep on the arena's word: a wake-up lost would cost the 5 s sleep.
      std::vector<int64_t> v(3, int64_t{call} * 100 + rank);
      arena.arrive(std::as_bytes(std::span(v)));
      waitFor(arena, call % 2 == 1);
      arena.reduce(std::as_writable_bytes(std::span(v)), [](std::byte* dst, const std::byte* src, hc::Operands) {
        hc::reduceInto(dst, src, 3, hc::DataType::kInt64, hc::ReduceOp::kSum);
      });
      arena.finish();
      const int64_t want = int64_t{call} * 100 * kRanks + (0 + 1 + 2 + 3);
      if (v[0] != want || v[2] != want) return "call " + std::to_string(call) + ": " + std::to_string(v[0]);
    }
    return "";
  });
  CHECK(out == std::vector<std::string>(kRanks));
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("the arena takes buffers up to its slots which shrink as ranks are added", "[unit]") {
  CHECK(HostArena(std::span<std::byte>(), 4, 0).capacity() == 8 * 1024);
  CHECK(HostArena(std::span<std::byte>(), 64, 0).capacity() == 512);
  CHECK(HostArena(std::span<std::byte>(), 3, 0).capacity() % HostArena::kLine == 0);
  CHECK(HostArena::bytesFor(4) >= 2 * 4 * 8 * 1024);
}

TEST_CASE("ranks that have not counted themselves into a call are named as late, and none once all have", "[unit]") {
  auto board = HostBoard::inProcess(HostArena::bytesFor(4));
  HostArena a0(board->arena(), 4, 0), a2(board->arena(), 4, 2);
  std::byte one{1};
  a0.arrive({&one, 1});
  a2.arrive({&one, 1});
  CHECK(a0.late() == std::vector<int>{1, 3});
  CHECK_FALSE(a0.complete());
  HostArena a1(board->arena(), 4, 1), a3(board->arena(), 4, 3);
  a1.arrive({&one, 1});
  a3.arrive({&one, 1});
  CHECK(a0.complete());
  CHECK(a0.late().empty());
  CHECK_FALSE(a0.maySleep().has_value());  // complete: nothing to sleep for
}

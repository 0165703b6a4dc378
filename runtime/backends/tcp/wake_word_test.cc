// runtime/backends/tcp/wake_word_test.cc: the sleep/wake protocol of a shared link, with
// both ends mapped in this process and the sleeping side on its own thread, and of a word
// many sleep on. The waits are given 20 s and must end in well under that: only a wake-up
// ends them early.
#include "runtime/backends/tcp/wake_word.h"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runtime/backends/tcp/shm_link.h"
#include "runtime/backends/tcp/shm_link_ends.h"

using hvd::backends::tcp::ShmLink;
using hvd::backends::tcp::sleepWhileAllSet;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::seconds kLongSleep{20};

hvd::backends::tcp::testing::LinkEnds makeLink(const char* what) {
  return hvd::backends::tcp::testing::freshLink(std::string("wake-") + what);
}

// Writes until the link is full (a write moves at most ShmLink::kMaxMove); returns the bytes.
size_t fillUp(ShmLink& writer) {
  std::vector<std::byte> chunk(ShmLink::kMaxMove);
  size_t total = 0;
  while (size_t k = writer.write(chunk.data(), chunk.size())) total += k;
  return total;
}

// Runs `sleeper` on a thread, does `act` here after 100 ms, and returns how long the
// sleeper took.
template <typename Sleep, typename Act>
double secondsAsleep(Sleep sleeper, Act act) {
  double took = 0;
  std::thread t([&] {
    auto start = Clock::now();
    sleeper();
    took = std::chrono::duration<double>(Clock::now() - start).count();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  act();
  t.join();
  return took;
}

}  // namespace

TEST_CASE("a reader may not sleep while data waits in its link, and may once it is empty", "[unit]") {
  auto link = makeLink("reader");
  std::byte b{7};
  REQUIRE(link.writer.write(&b, 1) == 1);
  CHECK(link.reader.readerMaySleep() == nullptr);
  REQUIRE(link.reader.read(&b, 1) == 1);
  auto* word = link.reader.readerMaySleep();
  REQUIRE(word != nullptr);
  CHECK(word->load() == 1);
  link.reader.readerAwake();
  CHECK(word->load() == 0);
}

TEST_CASE("a reader asleep on an empty link wakes when the writer writes", "[unit]") {
  auto link = makeLink("wake-reader");
  std::atomic<uint32_t>* word = link.reader.readerMaySleep();
  REQUIRE(word != nullptr);
  std::byte b{1};
  double took = secondsAsleep([&] { sleepWhileAllSet({&word, 1}, kLongSleep); },
                              [&] { REQUIRE(link.writer.write(&b, 1) == 1); });
  CHECK(took < 10.0);
  CHECK(word->load() == 0);  // the writer cleared it when it woke the reader
}

TEST_CASE("a writer asleep on a full link wakes when the reader makes room", "[unit]") {
  auto link = makeLink("wake-writer");
  std::vector<std::byte> fill(ShmLink::kCapacity);
  REQUIRE(fillUp(link.writer) == fill.size());
  std::atomic<uint32_t>* word = link.writer.writerMaySleep();
  REQUIRE(word != nullptr);
  double took = secondsAsleep([&] { sleepWhileAllSet({&word, 1}, kLongSleep); },
                              [&] { REQUIRE(link.reader.read(fill.data(), 4096) == 4096); });
  CHECK(took < 10.0);
  CHECK(link.writer.writerMaySleep() == nullptr);  // there is room now
}

TEST_CASE("a rank asleep on two links wakes when either moves", "[unit]") {
  // A ring rank waiting for data from the left and for room towards the right at once.
  auto in = makeLink("two-in");
  auto out = makeLink("two-out");
  std::vector<std::byte> fill(ShmLink::kCapacity);
  REQUIRE(fillUp(out.writer) == fill.size());
  std::atomic<uint32_t>* words[2] = {in.reader.readerMaySleep(), out.writer.writerMaySleep()};
  REQUIRE(words[0] != nullptr);
  REQUIRE(words[1] != nullptr);
  // The second word is the one woken. With futex_waitv (Linux 5.16 on) that wake ends the
  // sleep; without it the fallback sleeps on the first word for at most 1 ms, and the
  // caller's loop looks again. Either way the sleep ends long before 20 s.
  double took = secondsAsleep([&] { sleepWhileAllSet({words, 2}, kLongSleep); },
                              [&] { REQUIRE(out.reader.read(fill.data(), 64) == 64); });
  CHECK(took < 10.0);
}

TEST_CASE("a side that wakes clears only its own word, never the neighbour's", "[unit]") {
  // Both sides of one link asleep at once cannot happen in a ring step, but a reader that
  // wakes must not clear the writer's word: the writer would then sleep with nobody to
  // wake it (found as 10 ms stalls at np=4 before this was split).
  auto link = makeLink("own-word");
  std::vector<std::byte> fill(ShmLink::kCapacity);
  REQUIRE(fillUp(link.writer) == fill.size());
  std::atomic<uint32_t>* writerWord = link.writer.writerMaySleep();
  REQUIRE(writerWord != nullptr);
  link.reader.readerAwake();
  CHECK(writerWord->load() == 1);
  REQUIRE(link.reader.read(fill.data(), 1) == 1);
  CHECK(writerWord->load() == 0);  // cleared by the read that made room, which woke it
}

TEST_CASE("every thread asleep on one word wakes from a single wakeAll once the word changes", "[unit]") {
  // The host arena's sleepers: all wait on the call counter, which the last rank in bumps.
  std::atomic<uint32_t> word{5};
  std::vector<double> took(3);
  std::vector<std::thread> sleepers;
  for (size_t i = 0; i < took.size(); ++i) {
    sleepers.emplace_back([&, i] {
      auto start = Clock::now();
      while (word.load() == 5) hvd::backends::tcp::sleepWhileEqual(word, 5, kLongSleep);
      took[i] = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  word.store(6);
  hvd::backends::tcp::wakeAll(word);
  for (auto& t : sleepers) t.join();
  for (double t : took) CHECK(t < 10.0);
}

TEST_CASE("a sleep on a word that no longer holds the value returns at once", "[unit]") {
  std::atomic<uint32_t> word{6};
  auto start = Clock::now();
  hvd::backends::tcp::sleepWhileEqual(word, 5, kLongSleep);
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 10.0);
}

// runtime/backends/tcp/shm_link_test.cc: the shared ring buffer in one process (both ends
// mapped here): streams through many wrap-arounds, and consume() keeps whole, aligned units
// even when the stream position is odd and a unit straddles the end of the buffer.
#include "runtime/backends/tcp/shm_link.h"

#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/backends/tcp/shm_link_ends.h"

using hvd::backends::tcp::ShmLink;
using hvd::backends::tcp::testing::freshLink;

namespace {

std::string uniqueName(const char* what) { return "/hvd-test-" + std::string(what) + "-" + std::to_string(::getpid()); }

}  // namespace

TEST_CASE("bytes written to a shared link come out in order through many wrap-arounds", "[unit]") {
  std::string name = uniqueName("order");
  auto reader = ShmLink::create(name);
  REQUIRE(reader.isOk());
  auto writer = ShmLink::open(name);
  ShmLink::unlink(name);
  REQUIRE(writer.isOk());
  std::vector<std::byte> in(3 * ShmLink::kCapacity + 12345), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>((i * 131) % 251);
  size_t written = 0, read = 0;
  while (read < in.size()) {
    // Odd piece sizes on both sides, so the positions never line up.
    written += writer->write(in.data() + written, std::min<size_t>(in.size() - written, 777777));
    read += reader->read(out.data() + read, std::min<size_t>(written - read, 123457));
  }
  CHECK(out == in);
  CHECK(ShmLink::open(name).status().code() == hvd::Errc::kNotFound);  // unlinked: nothing left
}

TEST_CASE("each call moves at most kMaxMove bytes, so the other side can start on the first ones", "[unit]") {
  auto link = freshLink("max-move");
  std::vector<std::byte> bytes(ShmLink::kCapacity);
  CHECK(link.writer.write(bytes.data(), bytes.size()) == ShmLink::kMaxMove);
  CHECK(link.writer.write(bytes.data(), bytes.size()) == ShmLink::kMaxMove);
  CHECK(link.reader.read(bytes.data(), bytes.size()) == ShmLink::kMaxMove);
  size_t handed = 0;
  CHECK(link.reader.consume(bytes.size(), 8, [&](std::span<const std::byte> piece) { handed += piece.size(); }) ==
        ShmLink::kMaxMove);
  CHECK(handed == ShmLink::kMaxMove);
}

TEST_CASE("consume hands over whole aligned units, also across the buffer's end at an odd position", "[unit]") {
  auto link = freshLink("consume");
  // Move the stream to an odd position first, as an allgatherv of 3-byte blocks would.
  std::byte three[3] = {};
  REQUIRE(link.writer.write(three, 3) == 3);
  REQUIRE(link.reader.read(three, 3) == 3);
  std::vector<double> values(ShmLink::kCapacity / 8 + 1000);  // longer than the buffer: wraps
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) * 0.5;
  const auto* bytes = reinterpret_cast<const std::byte*>(values.data());
  size_t total = values.size() * 8, written = 0, consumed = 0;
  std::vector<double> seen;
  bool aligned = true;
  while (consumed < total) {
    written += link.writer.write(bytes + written, std::min<size_t>(total - written, 100003));
    consumed += link.reader.consume(total - consumed, 8, [&](std::span<const std::byte> piece) {
      aligned &= reinterpret_cast<uintptr_t>(piece.data()) % 8 == 0 && piece.size() % 8 == 0;
      for (size_t k = 0; k < piece.size(); k += 8) {
        double v;
        std::memcpy(&v, piece.data() + k, 8);
        seen.push_back(v);
      }
    });
  }
  CHECK(aligned);
  CHECK(seen == values);
}

TEST_CASE("an unnamed link opened by its handle in another process carries bytes and leaves no name", "[unit]") {
  int keep = -1;
  std::string handle;
  auto reader = ShmLink::createUnnamed(64 * 1024, &keep, &handle);
  REQUIRE(reader.isOk());
  REQUIRE(ShmLink::isHandle(handle));
  // The writer is a child process, as a peer rank is: it maps the ring through our /proc.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto writer = ShmLink::openHandle(handle);
    if (!writer) _exit(2);
    const char text[] = "through a memfd";
    size_t sent = 0;
    while (sent < sizeof text) sent += writer->write(reinterpret_cast<const std::byte*>(text) + sent, sizeof text - sent);
    _exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  ::close(keep);  // the peer has it mapped: the descriptor is no longer needed
  char got[32] = {};
  CHECK(reader->read(reinterpret_cast<std::byte*>(got), sizeof got) == sizeof "through a memfd");
  CHECK(std::string(got) == "through a memfd");
  // Nothing in /dev/shm: the whole point.
  CHECK(handle.find('/') == std::string::npos);
}

TEST_CASE("a handle naming another file or a closed descriptor is refused and a malformed one named", "[unit]") {
  int keep = -1;
  std::string handle;
  auto reader = ShmLink::createUnnamed(64 * 1024, &keep, &handle);
  REQUIRE(reader.isOk());
  // The same pid and descriptor with another inode: a process of another pid namespace.
  std::string wrongInode = handle.substr(0, handle.rfind(':') + 1) + "1";
  auto wrong = ShmLink::openHandle(wrongInode);
  REQUIRE_FALSE(wrong.isOk());
  CHECK(wrong.status().code() == hvd::Errc::kNotFound);
  ::close(keep);
  auto closed = ShmLink::openHandle(handle);
  REQUIRE_FALSE(closed.isOk());
  CHECK(closed.status().code() == hvd::Errc::kNotFound);
  for (const char* bad : {"fd:", "fd:1:2:3", "fd:1:2:3:4x", "fd:a:2:3:4"}) {
    auto r = ShmLink::openHandle(bad);
    REQUIRE_FALSE(r.isOk());
    CHECK(r.status().code() == hvd::Errc::kInvalidArgument);
  }
}

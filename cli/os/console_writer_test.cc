// cli/os/console_writer_test.cc: the console writer over real pipes and sockets.
#include "cli/os/console_writer.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

using hvd::cli::ConsoleWriter;
using Clock = std::chrono::steady_clock;

namespace {

bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::string readAll(int fd) {
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  return text;
}

std::string numberedLines(int from, int count, size_t width) {
  std::string text;
  for (int i = from; i < from + count; ++i) {
    std::string line = std::to_string(i) + ' ';
    line.resize(width, 'x');
    text += line + '\n';
  }
  return text;
}

}  // namespace

TEST_CASE("text given to the console writer arrives whole and in order", "[console]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::string expected;
  {
    ConsoleWriter console;
    for (int i = 0; i < 2000; ++i) {
      std::string chunk = numberedLines(i * 10, 10, 37);
      console.write(fds[1], chunk);
      expected += chunk;
    }
    std::string got;
    std::thread reader([&] { got = readAll(fds[0]); });
    CHECK(waitUntil([&] { return console.drained(); }));
    CHECK(console.stalledFd() == -1);
    ::close(fds[1]);
    reader.join();
    CHECK(got == expected);
  }
  ::close(fds[0]);
}

TEST_CASE("a console that stops reading fills the writer without blocking its caller and loses nothing", "[console]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ConsoleWriter console(256 * 1024);
  std::string expected = numberedLines(0, 40000, 50);  // 2 MB: far beyond the pipe and the capacity
  auto start = Clock::now();
  for (size_t at = 0; at < expected.size(); at += 51 * 100) console.write(fds[1], std::string_view(expected).substr(at, 51 * 100));
  CHECK(Clock::now() - start < std::chrono::seconds(1));  // nobody reads, yet write() returned
  CHECK(console.full());
  CHECK_FALSE(console.drained());
  CHECK(console.stalledFd() == fds[1]);
  // The wake fd tells the caller when the writer has made progress.
  console.clearWake();
  std::string got;
  std::thread reader([&] { got = readAll(fds[0]); });
  pollfd wake{console.wakeFd(), POLLIN, 0};
  CHECK(::poll(&wake, 1, 5000) == 1);
  CHECK(waitUntil([&] { return console.drained(); }));
  CHECK_FALSE(console.full());
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  CHECK(got == expected);
}

TEST_CASE("each write the console writer makes ends at a line's end and fits in PIPE_BUF unless one line is longer", "[console]") {
  // A SOCK_SEQPACKET socket keeps every write() a record of its own.
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) == 0);
  int size = 4 << 20;
  ::setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  std::string longLine(3 * PIPE_BUF, 'L');
  std::string text = numberedLines(0, 500, 99) + longLine + "\n" + numberedLines(500, 500, 99);
  ConsoleWriter console;
  console.write(fds[1], text);
  std::string got;
  size_t records = 0, bad = 0;
  std::vector<char> buf(1 << 20);
  while (got.size() < text.size()) {
    ssize_t n = ::recv(fds[0], buf.data(), buf.size(), 0);
    REQUIRE(n > 0);
    if (n <= 0) break;  // (for the compiler's bounds analysis)
    std::string_view record(buf.data(), static_cast<size_t>(n));
    ++records;
    bool oneLine = record.find('\n') == record.size() - 1;
    if (buf[static_cast<size_t>(n) - 1] != '\n' || (record.size() > PIPE_BUF && !oneLine)) ++bad;
    got += record;
  }
  CHECK(got == text);
  CHECK(bad == 0);
  CHECK(records > 2);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("a console nobody reads any more drops the rest of its output and the writer carries on with the others", "[console]") {
  int gone[2], alive[2];
  REQUIRE(::pipe(gone) == 0);
  REQUIRE(::pipe(alive) == 0);
  ::close(gone[0]);  // EPIPE (SIGPIPE is blocked in the writer's thread)
  ConsoleWriter console;
  console.write(gone[1], "lost\n");
  console.write(alive[1], "kept 1\n");
  console.write(gone[1], "lost too\n");
  console.write(alive[1], "kept 2\n");
  CHECK(waitUntil([&] { return console.drained(); }));
  ::close(alive[1]);
  CHECK(readAll(alive[0]) == "kept 1\nkept 2\n");
  ::close(alive[0]);
  ::close(gone[1]);
}

TEST_CASE("a failed console write is reported once with its fd and errno through the failure fd", "[console]") {
  int gone[2];
  REQUIRE(::pipe(gone) == 0);
  ::close(gone[0]);
  int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  REQUIRE(full >= 0);
  ConsoleWriter console;
  pollfd none{console.failureFd(), POLLIN, 0};
  CHECK(::poll(&none, 1, 0) == 0);
  console.write(gone[1], "lost\n");
  console.write(full, "no room\n");
  console.write(gone[1], "not tried\n");
  CHECK(waitUntil([&] { return console.drained(); }));
  pollfd failed{console.failureFd(), POLLIN, 0};
  CHECK(::poll(&failed, 1, 1000) == 1);
  auto failures = console.takeFailures();
  REQUIRE(failures.size() == 2);
  CHECK(failures[0].fd == gone[1]);
  CHECK(failures[0].error == EPIPE);
  CHECK(failures[1].fd == full);
  CHECK(failures[1].error == ENOSPC);
  CHECK(console.takeFailures().empty());
  pollfd taken{console.failureFd(), POLLIN, 0};
  CHECK(::poll(&taken, 1, 0) == 0);
  ::close(gone[1]);
  ::close(full);
}

// runtime/common/socket_test.cc: frames over real loopback sockets, deadlines, closed peers.
#include "runtime/common/socket.h"

#include <catch2/catch.hpp>

#include <thread>

using namespace std::chrono_literals;

TEST_CASE("frames cross a loopback connection intact, large ones too", "[unit][mp]") {
  auto server = hvd::Socket::listen("127.0.0.1", 0);
  REQUIRE(server.isOk());
  int port = server->localPort();
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i / 4096);
  std::thread peer([&] {
    auto c = hvd::Socket::connect("127.0.0.1", port, hvd::deadlineIn(5s));
    if (!c) return;
    (void)c->sendFrame("hello", hvd::deadlineIn(5s));
    (void)c->sendFrame(big, hvd::deadlineIn(5s));
  });
  auto conn = server->accept(hvd::deadlineIn(5s));
  REQUIRE(conn.isOk());
  CHECK(*conn->recvFrame(16, hvd::deadlineIn(5s)) == "hello");
  auto got = conn->recvFrame(4 << 20, hvd::deadlineIn(5s));
  REQUIRE(got.isOk());
  CHECK(*got == big);
  peer.join();
}

TEST_CASE("waiting past the deadline is a timeout, a closed peer a remote error", "[unit][mp]") {
  auto server = hvd::Socket::listen("127.0.0.1", 0);
  REQUIRE(server.isOk());
  auto client = hvd::Socket::connect("127.0.0.1", server->localPort(), hvd::deadlineIn(5s));
  REQUIRE(client.isOk());
  auto conn = server->accept(hvd::deadlineIn(5s));
  REQUIRE(conn.isOk());
  auto start = hvd::Clock::now();
  auto timedOut = conn->recvFrame(16, hvd::deadlineIn(200ms));
  CHECK(timedOut.status().code() == hvd::Errc::kTimeout);
  CHECK(hvd::Clock::now() - start < 2s);
  *client = hvd::Socket();  // closes
  CHECK(conn->recvFrame(16, hvd::deadlineIn(5s)).status().code() == hvd::Errc::kRemote);
}

TEST_CASE("an oversized frame is refused without reading it", "[unit][mp]") {
  auto server = hvd::Socket::listen("127.0.0.1", 0);
  auto client = hvd::Socket::connect("127.0.0.1", server->localPort(), hvd::deadlineIn(5s));
  auto conn = server->accept(hvd::deadlineIn(5s));
  REQUIRE(client->sendFrame(std::string(100, 'x'), hvd::deadlineIn(5s)).isOk());
  CHECK(conn->recvFrame(10, hvd::deadlineIn(5s)).status().message() ==
        "a frame of 100 bytes exceeds the limit of 10");
}

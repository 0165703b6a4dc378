// cli/plan/host_name_test.cc: which host names -H and hostfiles take.
#include "cli/plan/host_name.h"

#include <catch2/catch.hpp>

#include <string>

using hvd::cli::checkHostName;

TEST_CASE("host names and IPv4 addresses are taken as written", "[unit]") {
  for (const char* host : {"node01", "a", "gpu-node-7.cluster.example.org", "10.0.0.5", "127.0.0.1", "node_3",
                           "fqdn.example.", "localhost", "7"}) {
    INFO(host);
    CHECK(checkHostName(host).isOk());
  }
  CHECK(checkHostName(std::string(63, 'a') + "." + std::string(63, 'b')).isOk());
}

TEST_CASE("a host name with a character no host name has is refused naming that character", "[unit]") {
  auto colon = checkHostName("a:");
  REQUIRE_FALSE(colon.isOk());
  CHECK(colon.message() ==
        "host 'a:' holds ':', which no host name has (letters, digits, '-', '_' and '.') (IPv6 addresses are not taken "
        "here: give the host's name; a slot count follows one ':', as in 'node1:4')");
  CHECK(checkHostName("a b").message() == "host 'a b' holds byte 0x20, which no host name has (letters, digits, '-', '_' and '.')");
  CHECK(checkHostName("x;rm").message().find("holds ';'") != std::string::npos);
  CHECK(checkHostName("-oProxyCommand=x").message() == "host '-oProxyCommand=x' starts with '-' (it would read as an option)");
  CHECK(checkHostName("a..b").message() == "host 'a..b' has an empty part between dots");
  CHECK(checkHostName(".").message() == "'.' is not a host name");
}

TEST_CASE("host names longer than DNS allows are refused with their length", "[unit]") {
  CHECK(checkHostName(std::string(100000, 'a')).message() == "a host name of 100000 characters (at most 253)");
  auto label = checkHostName(std::string(64, 'a') + ".b");
  CHECK(label.message().find("has a part of 64 characters between dots (at most 63)") != std::string::npos);
}

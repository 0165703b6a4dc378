// runtime/common/network_interface_test.cc: interface addresses on this machine.
#include "runtime/common/network_interface.h"

#include <catch2/catch.hpp>

TEST_CASE("the loopback interface has 127.0.0.1", "[unit]") {
  auto address = hvd::interfaceAddress("lo");
  REQUIRE(address.isOk());
  CHECK(*address == "127.0.0.1");
  auto names = hvd::ipv4InterfaceNames();
  CHECK(std::count(names.begin(), names.end(), "lo") == 1);
}

TEST_CASE("an interface this host lacks is named, with the ones it has", "[unit]") {
  auto address = hvd::interfaceAddress("nosuch0");
  REQUIRE_FALSE(address.isOk());
  CHECK(address.status().code() == hvd::Errc::kNotFound);
  CHECK(address.status().message() == "network interface 'nosuch0' has no IPv4 address here");
  CHECK(address.status().hint().find("lo") != std::string::npos);
}

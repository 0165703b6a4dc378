// runtime/common/ascii_case_test.cc: asciiLower on mixed, empty and non-ASCII text.
#include "runtime/common/ascii_case.h"

#include <catch2/catch.hpp>

TEST_CASE("asciiLower turns upper-case letters to lower case and keeps every other byte", "[ascii_case]") {
  CHECK(hvd::asciiLower("INFO") == "info");
  CHECK(hvd::asciiLower("Gloo-TCP_2") == "gloo-tcp_2");
  CHECK(hvd::asciiLower("") == "");
  CHECK(hvd::asciiLower("ÄÖ\xff") == "ÄÖ\xff");  // bytes past ASCII stay as they are
  CHECK(hvd::asciiLower(std::string_view("A\0B", 3)) == std::string("a\0b", 3));
}

// runtime/common/json_test.cc
#include "runtime/common/json.h"

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("a document nested deeper than the reader allows is refused at the offset where it goes too deep not a crash",
          "[json]") {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  auto fine = hvd::parseJson(nested(hvd::kMaxJsonDepth));
  CHECK(fine);
  for (int depth : {hvd::kMaxJsonDepth + 1, 1000000}) {
    auto deep = hvd::parseJson(nested(depth));
    REQUIRE_FALSE(deep);
    CHECK(deep.status().message() ==
          "offset " + std::to_string(hvd::kMaxJsonDepth) + ": nested deeper than " + std::to_string(hvd::kMaxJsonDepth) + " levels");
  }
  auto objects = hvd::parseJson(std::string(1000000, '{'));
  CHECK_FALSE(objects);
}

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

TEST_CASE("\\u escapes become UTF-8, surrogate pairs included, as Python's json.dump writes non-ASCII text", "[json]") {
  auto text = hvd::parseJson(R"({"message": "caf\u00e9 \u2192 \ud83d\ude00", "plain": "ok"})");
  REQUIRE(text);
  CHECK((*text)["message"].str() == "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
  CHECK((*text)["plain"].str() == "ok");
}

TEST_CASE("numbers, literals and nesting come back as written", "[json]") {
  auto doc = hvd::parseJson(R"([0, -1.5e3, 18446744073709551615, true, false, null, {"a": [{}], "a2": []}])");
  REQUIRE(doc);
  const auto& a = doc->array();
  REQUIRE(a.size() == 7);
  CHECK(a[0].number() == 0);
  CHECK(a[1].number() == -1500);
  CHECK(a[2].number() == 18446744073709551615.0);
  CHECK(std::get<bool>(a[3].value));
  CHECK_FALSE(std::get<bool>(a[4].value));
  CHECK(std::holds_alternative<std::nullptr_t>(a[5].value));
  CHECK(a[6]["a"].array()[0].isObject());
  CHECK(a[6]["a2"].array().empty());
}

TEST_CASE("text that is not JSON is refused at the offset where it stops being JSON, saying what was wrong", "[json]") {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {Case{"[1, 2,]", "offset 6: syntax error while parsing value - unexpected ']'; expected '[', "
                                        "'{', or a literal"},
                        Case{"{\"a\": tru}", "offset 9: syntax error while parsing value - invalid literal; last read: "
                                             "'\"a\": tru}'"},
                        Case{"[01]", "offset 2: syntax error while parsing array - unexpected number literal; expected "
                                     "']'"},
                        Case{"[1] x", "offset 4: syntax error while parsing value - invalid literal; last read: '1] x'; "
                                      "expected end of input"},
                        Case{"\"caf\\u00e\"", "offset 9: syntax error while parsing value - invalid string: '\\u' must "
                                              "be followed by 4 hex digits; last read: '\"caf\\u00e\"'"}}) {
    INFO(c.text);
    auto doc = hvd::parseJson(c.text);
    REQUIRE_FALSE(doc);
    CHECK(doc.status().message() == c.message);
  }
}

TEST_CASE("brackets inside strings do not count as nesting", "[json]") {
  std::string deep = "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  auto doc = hvd::parseJson(deep);
  REQUIRE(doc);
  CHECK(doc->array()[0].str().size() == 2001);
  auto tooDeep = hvd::parseJson("[\"[[\\\"[[\"," + std::string(hvd::kMaxJsonDepth, '[') + std::string(hvd::kMaxJsonDepth, ']') + "]");
  REQUIRE_FALSE(tooDeep);
  CHECK(tooDeep.status().message() == "offset " + std::to_string(10 + hvd::kMaxJsonDepth - 1) + ": nested deeper than " +
                                          std::to_string(hvd::kMaxJsonDepth) + " levels");
}

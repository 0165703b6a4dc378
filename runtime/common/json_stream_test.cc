// runtime/common/json_stream_test.cc
#include "runtime/common/json_stream.h"

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& text) {
    char name[] = "/tmp/hvd_json_stream.XXXXXX";
    int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path, std::ios::binary) << text;
  }
  ~ScratchFile() { ::unlink(path.c_str()); }
};

// Every element, or the error's message.
std::vector<hvd::Json> elements(const std::string& text, std::string& error, size_t maxElementBytes = 1 << 20) {
  ScratchFile file(text);
  std::vector<hvd::Json> out;
  hvd::Status s = hvd::forEachArrayElement(file.path, [&](hvd::Json e) {
    out.push_back(std::move(e));
    return hvd::Status::ok();
  }, maxElementBytes);
  error = s.isOk() ? "" : s.message();
  return out;
}

}  // namespace

TEST_CASE("every element of a file's array comes out in order whatever brackets commas and escapes its strings hold",
          "[json_stream]") {
  std::string error;
  auto got = elements(" [ {\"name\": \"a,]}\\\"[\", \"args\": {\"x\": [1, {\"y\": 2}]}},\n 3.5 , \"s\\\\\", [ ], true, null ]\n",
                      error);
  REQUIRE(error.empty());
  REQUIRE(got.size() == 6);
  CHECK(got[0]["name"].str() == "a,]}\"[");
  CHECK(got[0]["args"]["x"].array()[1]["y"].number() == 2);
  CHECK(got[1].number() == 3.5);
  CHECK(got[2].str() == "s\\");
  CHECK(got[3].array().empty());
  CHECK(std::get<bool>(got[4].value));
  CHECK(std::holds_alternative<std::nullptr_t>(got[5].value));
  CHECK(elements("[]", error).empty());
  CHECK(error.empty());
}

TEST_CASE("an element longer than the read buffer comes out whole", "[json_stream]") {
  std::string big(3 << 20, 'x');
  std::string error;
  auto got = elements("[\"" + big + "\", 1]", error, 8 << 20);
  REQUIRE(error.empty());
  REQUIRE(got.size() == 2);
  CHECK(got[0].str() == big);
}

TEST_CASE("a file that is not one whole array is refused naming the offset", "[json_stream]") {
  std::string error;
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"{\"a\": 1}", "offset 0: expected '['"},
           {"", "offset 0: unexpected end"},
           {"[1, 2", "offset 5: unexpected end"},
           {"[1 2]", "offset 3: expected ',' or ']'"},
           {"[1,,2]", "offset 3: unexpected character"},
           {"[1,]", "offset 3: unexpected character"},
           {"[1] x", "offset 4: text after the array"},
           {"[{\"a\": tru}]", "the element at offset 1: offset 9: syntax error while parsing value - invalid "
                              "literal; last read: '\"a\": tru}'"},
       }) {
    INFO(text);
    elements(text, error);
    CHECK(error == expected);
  }
}

TEST_CASE("an element past the size cap is refused instead of growing without end", "[json_stream]") {
  std::string error;
  elements("[\"" + std::string(5000, 'a') + "\"]", error, 4096);
  CHECK(error == "offset 1: an element of more than 4096 bytes");
}

TEST_CASE("the callback's error stops the walk and comes back unchanged", "[json_stream]") {
  ScratchFile file("[1, 2, 3]");
  int seen = 0;
  hvd::Status s = hvd::forEachArrayElement(file.path, [&](hvd::Json) {
    return ++seen == 2 ? hvd::invalidArgument("stop here") : hvd::Status::ok();
  });
  CHECK(seen == 2);
  CHECK(s.message() == "stop here");
}

// cli/plan/shell_quote_test.cc: what shellQuote writes, /bin/sh reads back unchanged.
#include "cli/plan/shell_quote.h"

#include <catch2/catch.hpp>

#include "cli/os/subprocess.h"

using hvd::cli::shellJoin;
using hvd::cli::shellQuote;

TEST_CASE("plain words stay plain and awkward ones are single-quoted", "[unit][plan]") {
  CHECK(shellQuote("train.py") == "train.py");
  CHECK(shellQuote("") == "''");
  CHECK(shellQuote("a b") == "'a b'");
  CHECK(shellQuote("it's") == "'it'\\''s'");
  CHECK(shellQuote("A=1") == "'A=1'");
  CHECK(shellQuote("A=1", true) == "A=1");
  CHECK(shellJoin({"A=1", "A=1"}) == "'A=1' A=1");
}

TEST_CASE("quoted words survive a real /bin/sh verbatim", "[unit][plan]") {
  std::vector<std::string> words = {"plain", "two words", "'single'", "\"double\"", "$HOME", "`date`", "",
                                    "back\\slash", "new\nline", "tab\there", "*", "a=b", "!bang", "semi;colon", "#hash"};
  std::string script = "printf '%s\\0' " + shellJoin(words);
  auto run = hvd::cli::runAndCapture({"/bin/sh", "-c", script});
  REQUIRE(run.isOk());
  REQUIRE(run->succeeded());
  std::vector<std::string> back;
  size_t start = 0;
  for (size_t i = 0; i < run->out.size(); ++i) {
    if (run->out[i] == '\0') {
      back.push_back(run->out.substr(start, i - start));
      start = i + 1;
    }
  }
  CHECK(back == words);
}

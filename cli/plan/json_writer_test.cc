// cli/plan/json_writer_test.cc: what the writer produces is JSON a strict parser reads back
// to the same values, in the order written.
#include "cli/plan/json_writer.h"

#include <catch2/catch.hpp>

#include "runtime/common/json.h"

TEST_CASE("written strings with quotes, backslashes, control bytes and UTF-8 parse back unchanged", "[unit]") {
  std::string tricky = "a \"quoted\" \\ path\t\n\r\b\f bell\x07 caf\xc3\xa9 ";
  tricky += '\x1f';
  hvd::cli::JsonWriter w;
  w.beginObject().key(tricky).value(tricky).key("n").value(-42).key("yes").value(true).key("none").null();
  w.key("list").beginArray().value("x").value(7).beginObject().endObject().endArray().endObject();
  auto doc = hvd::parseJson(w.str());
  REQUIRE(doc);
  CHECK((*doc)[tricky].str() == tricky);
  CHECK((*doc)["n"].number() == -42);
  CHECK(std::get<bool>((*doc)["yes"].value));
  CHECK(std::holds_alternative<std::nullptr_t>((*doc)["none"].value));
  REQUIRE((*doc)["list"].array().size() == 3);
  CHECK((*doc)["list"].array()[2].isObject());
}

TEST_CASE("keys stay in the order they were written", "[unit]") {
  hvd::cli::JsonWriter w;
  w.beginObject().key("zeta").value(1).key("alpha").value(2).endObject();
  CHECK(w.str().find("zeta") < w.str().find("alpha"));
}

// runtime/common/regular_file_test.cc
#include "runtime/common/regular_file.h"

#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace {

struct ScratchDir {
  std::string path;
  ScratchDir() {
    char name[] = "/tmp/hvd_regular_file.XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~ScratchDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

}  // namespace

TEST_CASE("a regular file opens and reads whole while a pipe a device a directory and a missing path are refused by kind",
          "[regular_file]") {
  ScratchDir dir;
  std::string file = dir.path + "/trace.json";
  std::ofstream(file) << "[1, 2]";
  auto opened = hvd::openRegularFile(file);
  REQUIRE(opened);
  auto text = hvd::readWhole(*opened, file);
  REQUIRE(text);
  CHECK(*text == "[1, 2]");

  // A FIFO with no writer: the open itself must not wait for one.
  std::string fifo = dir.path + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const auto& [path, kind] : {std::pair<std::string, std::string>{fifo, "a pipe"},
                                  {"/dev/zero", "a device"},
                                  {dir.path, "a directory"}}) {
    auto refused = hvd::openRegularFile(path);
    REQUIRE_FALSE(refused);
    CHECK(refused.status().code() == hvd::Errc::kInvalidArgument);
    CHECK(refused.status().message() == "'" + path + "' is " + kind + ", not a regular file");
    CHECK_FALSE(refused.status().hint().empty());
  }
  auto missing = hvd::openRegularFile(dir.path + "/none");
  REQUIRE_FALSE(missing);
  CHECK(missing.status().code() == hvd::Errc::kNotFound);
}

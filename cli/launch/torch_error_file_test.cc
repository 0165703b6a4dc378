// cli/launch/torch_error_file_test.cc
#include "cli/launch/torch_error_file.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

namespace hvd::cli {

TEST_CASE("a recorded error travels as one string and reads back, with or without a place", "[torch]") {
  RecordedError full{"ValueError: batch 7 has 3 columns", "at /home/me/train.py:12 in load_batch"};
  RecordedError back = decodeRecordedError(encodeRecordedError(full));
  CHECK(back.message == full.message);
  CHECK(back.where == full.where);
  RecordedError bare = decodeRecordedError(encodeRecordedError({"KeyError: 'x'", ""}));
  CHECK(bare.message == "KeyError: 'x'");
  CHECK(bare.where.empty());
  CHECK(decodeRecordedError("no newline at all").message == "no newline at all");
}

TEST_CASE("the ranks' error-file directory is private to the job and gone with it", "[torch]") {
  std::string file;
  {
    TorchErrorFiles files;
    file = files.path(3);
    REQUIRE_FALSE(file.empty());
    CHECK(file.substr(file.size() - 11) == "/rank3.json");
    std::ofstream(file) << "{}";
    CHECK(std::filesystem::exists(file));
    auto perms = std::filesystem::status(std::filesystem::path(file).parent_path()).permissions();
    CHECK((perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all)) ==
          std::filesystem::perms::none);
  }
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(file).parent_path()));
}

}  // namespace hvd::cli

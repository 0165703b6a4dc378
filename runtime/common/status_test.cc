// runtime/common/status_test.cc: the error model's small contract.
#include "runtime/common/status.h"

#include <catch2/catch.hpp>

#include <cerrno>

namespace {

hvd::Result<int> half(int x) {
  if (x % 2 != 0) return hvd::invalidArgument("odd number " + std::to_string(x));
  return x / 2;
}

hvd::Status quarter(int x, int* out) {
  auto h = half(x);
  HVD_RETURN_IF_ERROR(h);
  auto q = half(*h);
  HVD_RETURN_IF_ERROR(q);
  *out = *q;
  return hvd::Status::ok();
}

}  // namespace

TEST_CASE("a Result holds either the value or the error that explains its absence", "[unit]") {
  CHECK(half(8).isOk());
  CHECK(*half(8) == 4);
  auto bad = half(3);
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().code() == hvd::Errc::kInvalidArgument);
  CHECK(bad.status().message() == "odd number 3");
}

TEST_CASE("HVD_RETURN_IF_ERROR passes the first failure up unchanged", "[unit]") {
  int out = 0;
  CHECK(quarter(8, &out).isOk());
  CHECK(out == 2);
  hvd::Status s = quarter(6, &out);
  CHECK(s.code() == hvd::Errc::kInvalidArgument);
  CHECK(s.message() == "odd number 3");
}

TEST_CASE("context is prepended and system errors carry strerror", "[unit]") {
  CHECK(hvd::notFound("x").withContext("reading hostfile").message() == "reading hostfile: x");
  CHECK(hvd::Status::ok().withContext("ignored").isOk());
  hvd::Status s = hvd::systemError("open /nope", ENOENT);
  CHECK(s.code() == hvd::Errc::kSystem);
  CHECK(s.message() == "open /nope: No such file or directory");
  CHECK(hvd::errcName(hvd::Errc::kTimeout) == "timeout");
}

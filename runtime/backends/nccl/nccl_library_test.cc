// runtime/backends/nccl/nccl_library_test.cc: loading libnccl, and failing to, with the
// loader's reason in the message.
#include <catch2/catch.hpp>

#include "runtime/backends/nccl/nccl_library.h"

using namespace hvd::backends::nccl;

TEST_CASE("a missing libnccl is reported with every name tried", "[unit]") {
  auto nccl = NcclLibrary::loadFrom({"libnccl-not-here.so.2", "/nowhere/libnccl.so"});
  REQUIRE_FALSE(nccl.isOk());
  CHECK(nccl.status().code() == hvd::Errc::kUnavailable);
  CHECK(nccl.status().message().rfind("libnccl cannot be loaded (", 0) == 0);
  CHECK(nccl.status().message().find("libnccl-not-here.so.2") != std::string::npos);
  CHECK(nccl.status().message().find("/nowhere/libnccl.so") != std::string::npos);
}

TEST_CASE("a library that is not NCCL is refused naming the missing functions", "[unit]") {
  auto nccl = NcclLibrary::loadFrom({"libm.so.6"});
  REQUIRE_FALSE(nccl.isOk());
  CHECK(nccl.status().message().find("lacks ncclGetVersion") != std::string::npos);
  CHECK(nccl.status().hint().find("2.14") != std::string::npos);
}

TEST_CASE("the NCCL built against loads here and reports its version", "[unit]") {
  auto nccl = NcclLibrary::load();
  if (!nccl.isOk()) {
    WARN("libnccl is not loadable on this machine: " << nccl.status().message());
    return;
  }
  CHECK((*nccl)->versionCode >= 21400);
  // What reducescatter and alltoall run on (the loader refuses a library without them).
  CHECK((*nccl)->ncclReduceScatter != nullptr);
  CHECK((*nccl)->ncclReduce != nullptr);
  CHECK((*nccl)->ncclSend != nullptr);
  CHECK((*nccl)->ncclRecv != nullptr);
  CHECK(ncclVersionText((*nccl)->versionCode).rfind("NCCL 2.", 0) == 0);
}

TEST_CASE("NCCL version codes print in both encodings", "[unit]") {
  CHECK(ncclVersionText(22803) == "NCCL 2.28.3");
  CHECK(ncclVersionText(2804) == "NCCL 2.8.4");
}

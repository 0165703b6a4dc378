// runtime/backends/tcp/shm_link_ends.h: for tests: both ends of a fresh shared link, mapped
// in this process, its name already unlinked.
#pragma once

#include <catch2/catch.hpp>
#include <unistd.h>

#include <string>

#include "runtime/backends/tcp/shm_link.h"

namespace hvd::backends::tcp::testing {

struct LinkEnds {
  ShmLink reader, writer;
};

inline LinkEnds freshLink(const std::string& what) {
  std::string name = "/hvd-test-" + what + "-" + std::to_string(::getpid());
  auto reader = ShmLink::create(name);
  auto writer = ShmLink::open(name);
  ShmLink::unlink(name);
  REQUIRE(reader.isOk());
  REQUIRE(writer.isOk());
  return {std::move(*reader), std::move(*writer)};
}

}  // namespace hvd::backends::tcp::testing

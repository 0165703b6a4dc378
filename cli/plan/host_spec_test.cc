// cli/plan/host_spec_test.cc: -H lists and hostfiles, good and bad.
#include "cli/plan/host_spec.h"

#include <catch2/catch.hpp>

using hvd::cli::HostSlots;
using hvd::cli::parseHostfile;
using hvd::cli::parseHostList;

namespace {

std::string shown(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const auto& h : hosts) out += (out.empty() ? "" : " ") + h.host + ":" + std::to_string(h.slots);
  return out;
}

}  // namespace

TEST_CASE("host lists take slots after a colon, default 1, and hostlist expressions", "[unit][plan]") {
  CHECK(shown(*parseHostList("a:2,b:4,c")) == "a:2 b:4 c:1");
  CHECK(shown(*parseHostList("node[01-02,05]:4, gpu1")) == "node01:4 node02:4 node05:4 gpu1:1");
}

TEST_CASE("bad host list items are named with their fault", "[unit][plan]") {
  CHECK(parseHostList("a:x").status().message() == "-H item 1: 'a:x' has slot count 'x', which is not a whole number");
  CHECK(parseHostList("a:2,b:0").status().message() == "-H item 2: 'b:0' has 0 slots; a host needs at least 1");
  CHECK(parseHostList("a:-1").status().message() == "-H item 1: 'a:-1' has -1 slots; a host needs at least 1");
  // A count past int's range is a whole number too: it is too large (was "not a whole number").
  CHECK(parseHostList("a:99999999999").status().message() == "-H item 1: 'a:99999999999' has more than 1048576 slots");
  CHECK(parseHostList("a,,b").status().message() == "-H 'a,,b': an empty item at position 3");
  CHECK(parseHostList(":3").status().message() == "-H item 1: ':3' names no host");
  CHECK(parseHostList("a:1,b,a:2").status().message() == "-H: host 'a' is listed twice ('a:1' and 'a:2')");
  CHECK(parseHostList("n[3-1]:2").status().message().rfind("-H: invalid hostlist 'n[3-1]'", 0) == 0);
  CHECK(parseHostList("").status().message() == "-H: the host list is empty");
}

TEST_CASE("hostfiles accept slots=N, host:N, bare hosts, comments and blank lines", "[unit][plan]") {
  auto hosts = parseHostfile("# cluster\nnode1 slots=4\n\nnode2:2   # two\nnode3\nnode4 slots=8 max_slots=8\n", "hosts");
  REQUIRE(hosts.isOk());
  CHECK(shown(*hosts) == "node1:4 node2:2 node3:1 node4:8");
}

TEST_CASE("a hostfile saved with a UTF-8 byte order mark and CRLF line ends reads as without", "[unit][plan]") {
  // Windows editors write the mark; it was read as part of the first host ("holds byte 0xef").
  auto hosts = parseHostfile("\xEF\xBB\xBFnode1 slots=4\r\nnode2:2\r\n", "hosts");
  REQUIRE(hosts.isOk());
  CHECK(shown(*hosts) == "node1:4 node2:2");
  auto bad = parseHostfile("\xEF\xBB\xBFnode1 slots=x\n", "hosts");
  REQUIRE(!bad.isOk());
  CHECK(bad.status().message().rfind("hosts:1:13: ", 0) == 0);  // columns as an editor counts them
}

TEST_CASE("bad hostfile lines are reported as file:line:column", "[unit][plan]") {
  CHECK(parseHostfile("a slots=2\nb slots=x\n", "hf").status().message() ==
        "hf:2:9: slot count 'x' is not a whole number");
  CHECK(parseHostfile("a slots=-99999999999\n", "hf").status().message() ==
        "hf:1:1: 'a slots=-99999999999' has -99999999999 slots; a host needs at least 1");
  CHECK(parseHostfile("a slot=2\n", "hf").status().message() == "hf:1:3: unknown field 'slot=2' (did you mean 'slots=N'?)");
  CHECK(parseHostfile("a slots=0\n", "hf").status().message() == "hf:1:1: 'a slots=0' has 0 slots; a host needs at least 1");
  CHECK(parseHostfile("# nothing\n\n", "hf").status().message() == "hf: lists no host");
}

TEST_CASE("a host on several hostfile lines has their slots added up, as mpirun and PBS node files count them",
          "[unit][plan]") {
  auto perSlot = parseHostfile("n1\nn1\nn2\nn1\nn2\n", "PBS_NODEFILE");
  REQUIRE(perSlot.isOk());
  REQUIRE(perSlot->size() == 2);
  CHECK(((*perSlot)[0].host == "n1" && (*perSlot)[0].slots == 3 && (*perSlot)[0].slotsGiven));
  CHECK(((*perSlot)[1].host == "n2" && (*perSlot)[1].slots == 2 && (*perSlot)[1].slotsGiven));
  auto mixed = parseHostfile("a slots=2\nb\na slots=1\n", "hf");
  REQUIRE(mixed.isOk());
  CHECK(((*mixed)[0].host == "a" && (*mixed)[0].slots == 3));
  CHECK(((*mixed)[1].host == "b" && (*mixed)[1].slots == 1 && !(*mixed)[1].slotsGiven));
  CHECK(parseHostfile("a slots=1048576\na\n", "hf").status().message() ==
        "hf:2:1: host 'a' has more than 1048576 slots over its lines");
}

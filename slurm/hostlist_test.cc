// slurm/hostlist_test.cc: expansion and compression cases (the expected values are what
// Slurm 22.05's scontrol printed for them), error messages, and round-trip properties.
// tests/slurm/hostlist_oracle_test.cc compares against the real scontrol at scale.
#include "slurm/hostlist.h"

#include <catch2/catch.hpp>

#include <random>

using hvd::slurm::compressHostlist;
using hvd::slurm::compressHostlistSorted;
using hvd::slurm::expandHostlist;
using Names = std::vector<std::string>;

namespace {

Names expand(std::string_view text) {
  auto r = expandHostlist(text);
  INFO(text << ": " << r.status().message());
  REQUIRE(r.isOk());
  return *r;
}

std::string errorOf(std::string_view text) {
  auto r = expandHostlist(text);
  INFO(text);
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().code() == hvd::Errc::kInvalidArgument);
  return r.status().message();
}

std::string joined(const Names& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

}  // namespace

TEST_CASE("padding comes from the lower bound's text, as Slurm does it", "[unit][hostlist]") {
  CHECK(joined(expand("n[09-10]")) == "n09 n10");
  CHECK(joined(expand("node[8-10]")) == "node8 node9 node10");
  CHECK(joined(expand("n[01-1]")) == "n01");
  CHECK(joined(expand("n[001-003],n[4-5]")) == "n001 n002 n003 n4 n5");
  CHECK(joined(expand("n[00-01]")) == "n00 n01");
  CHECK(joined(expand("n[ 1-3]")) == "n01 n02 n03");
  CHECK(joined(expand("n[1 -3]")) == "n01 n02 n03");
  CHECK(joined(expand("n[+1-+3]")) == "n01 n02 n03");
}

TEST_CASE("lists and ranges inside brackets keep their order and duplicates", "[unit][hostlist]") {
  CHECK(joined(expand("node[01-03,07]")) == "node01 node02 node03 node07");
  CHECK(joined(expand("n[3,1,2]")) == "n3 n1 n2");
  CHECK(joined(expand("n1,n1,n2")) == "n1 n1 n2");
  CHECK(joined(expand(" n1  n2\tn3")) == "n1 n2 n3");
  CHECK(joined(expand("n[1-2] , m3")) == "n1 n2 m3");
  CHECK(joined(expand("n[1-3],")) == "n1 n2 n3");
  CHECK(joined(expand("[1-3]")) == "1 2 3");
  CHECK(joined(expand("n[1-]")) == "n1");
  CHECK(joined(expand("n[1, 3]")) == "n1 n03");
  CHECK(expand("").empty());
  CHECK(expand(" ,, ").empty());
}

TEST_CASE("several bracket groups expand in Slurm's order", "[unit][hostlist]") {
  CHECK(joined(expand("rack[1-2]-node[01-02]")) == "rack1-node01 rack1-node02 rack2-node01 rack2-node02");
  CHECK(joined(expand("a[1-2][3-4]")) == "a13 a14 a23 a24");
  // Three groups: the last varies fastest, then the first, then the middle (Slurm's order).
  CHECK(joined(expand("a[1-2]b[3-4]c[5-6]")) == "a1b3c5 a1b3c6 a2b3c5 a2b3c6 a1b4c5 a1b4c6 a2b4c5 a2b4c6");
  CHECK(joined(expand("n[9-11]x[1]")) == "n9x1 n10x1 n11x1");
  CHECK(joined(expand("n[[1-2]")) == "n[1 n[2");
  CHECK(joined(expand("a]b[1-2]")) == "a]b1 a]b2");
  CHECK(joined(expand("n[1]-[2]")) == "n1-2");
  CHECK(expand("r[1-100]-n[1-1000]").size() == 100000);
}

TEST_CASE("names without brackets are kept as written", "[unit][hostlist]") {
  CHECK(joined(expand("123,0001,a b,n-1")) == "123 0001 a b n-1");
  CHECK(joined(expand("n00000000000000000000001")) == "n00000000000000000000001");
}

TEST_CASE("invalid hostlists are rejected with the position and the offending text", "[unit][hostlist]") {
  CHECK(errorOf("n[1-3]x") ==
        "invalid hostlist 'n[1-3]x' at position 7: 'x' follows the last ']' in 'n[1-3]x' "
        "(text may stand between bracket groups, not after the last one)");
  CHECK(errorOf("a,tux[0-3]-ib") ==
        "invalid hostlist 'a,tux[0-3]-ib' at position 11: '-ib' follows the last ']' in 'tux[0-3]-ib' "
        "(text may stand between bracket groups, not after the last one)");
  CHECK(errorOf("node[3-1]") ==
        "invalid hostlist 'node[3-1]' at position 6: '3-1' runs downwards; write the smaller number first");
  CHECK(errorOf("n[]") == "invalid hostlist 'n[]' at position 3: an empty range (two commas, or '[]')");
  CHECK(errorOf("n[1,,2]") == "invalid hostlist 'n[1,,2]' at position 5: an empty range (two commas, or '[]')");
  CHECK(errorOf("n[1-x]") == "invalid hostlist 'n[1-x]' at position 5: '1-x' is not a number or range "
                             "(multi-dimensional boxes are not supported)");
  CHECK(errorOf("n[1a]") == "invalid hostlist 'n[1a]' at position 4: '1a' is not a number or range");
  CHECK(errorOf("n[1 ]") == "invalid hostlist 'n[1 ]' at position 4: '1 ' is not a number or range");
  CHECK(errorOf("n[-1]") == "invalid hostlist 'n[-1]' at position 3: '-1' is not a number or range");
  CHECK(errorOf("n[1--2]") == "invalid hostlist 'n[1--2]' at position 5: '1--2': negative numbers are not allowed");
  CHECK(errorOf("n[0-65536]") == "invalid hostlist 'n[0-65536]' at position 3: '0-65536' has 65537 hosts; "
                                 "Slurm allows at most 65536 in one range");
  CHECK(errorOf("a[x]b[1-2]") == "invalid hostlist 'a[x]b[1-2]' at position 3: 'x' is not a number or range "
                                 "(multi-dimensional boxes are not supported)");
  CHECK(errorOf("a[1-60000,1-60000]b[1]").find("expands to more than 65536 values") != std::string::npos);
  // An IPv6 literal in brackets, as in URLs: the brackets read as a range, and the words
  // said nothing of addresses.
  CHECK(errorOf("[::1]") == "invalid hostlist '[::1]' at position 2: '::1' is not a number or range "
                            "(IPv6 addresses are not taken here: give the host's name)");
}

TEST_CASE("inputs Slurm would silently corrupt are refused", "[unit][hostlist]") {
  CHECK(errorOf("n[1-3") == "invalid hostlist 'n[1-3' at position 2: '[' is never closed in 'n[1-3'");
  CHECK(errorOf("n99999999999999999999999") ==
        "invalid hostlist 'n99999999999999999999999' at position 2: the number '99999999999999999999999' in "
        "'n99999999999999999999999' is larger than 18446744073709551615");
  CHECK(errorOf("n[18446744073709551616]").find("larger than 18446744073709551615") != std::string::npos);
  CHECK(joined(expand("n[18446744073709551615]")) == "n18446744073709551615");
}

TEST_CASE("limits hold without exhausting memory", "[unit][hostlist]") {
  CHECK(expand("n[0-65535]").size() == 65536);
  CHECK(expand("a[1-65536]b[1]").size() == 65536);
  CHECK(errorOf("a[1-65536]b[1-65536]c[1-65536]").find("expands to more than 16777216 names") != std::string::npos);
  CHECK(expand(std::string(5000, 'n') + "[1-2]").size() == 2);  // Slurm 22.05 has no length limit
}

TEST_CASE("compression matches scontrol show hostlist", "[unit][hostlist]") {
  auto c = [](const Names& names) { return *compressHostlist(names); };
  CHECK(c({"n1", "n2", "n3"}) == "n[1-3]");
  CHECK(c({"n3", "n2", "n1"}) == "n[3,2,1]");
  CHECK(c({"n1", "n1", "n2"}) == "n[1,1-2]");
  CHECK(c({"n01", "n2", "n03"}) == "n[01,2,03]");
  CHECK(c({"n9", "n10", "n11"}) == "n[9-11]");
  CHECK(c({"n09", "n10"}) == "n[09-10]");
  CHECK(c({"a1", "b1", "a2"}) == "a1,b1,a2");
  CHECK(c({"x", "y", "n1"}) == "x,y,n1");
  CHECK(c({"a1b1", "a1b2", "a2b1"}) == "a1b[1-2],a2b1");
  CHECK(c({"1", "2", "3"}) == "[1-3]");
  CHECK(c({"n001", "n002", "n1000"}) == "n[001-002,1000]");
  CHECK(c({"n8", "n9", "n010"}) == "n[8-9,010]");
  CHECK(c({"n", "n1", "n2"}) == "n,n[1-2]");
  CHECK(c({"n01", "n1"}) == "n[01,1]");
  CHECK(c({}) == "");
}

TEST_CASE("sorted compression matches scontrol show hostlistsorted", "[unit][hostlist]") {
  auto s = [](const Names& names) { return *compressHostlistSorted(names); };
  CHECK(s({"n3", "n2", "n1"}) == "n[1-3]");
  CHECK(s({"a1", "b1", "a2"}) == "a[1-2],b1");
  CHECK(s({"x", "y", "n1"}) == "n1,x,y");
  CHECK(s({"n01", "n2", "n03"}) == "n[2,01,03]");
  CHECK(s({"n01", "n1"}) == "n[1,01]");
  CHECK(s(expand("n[1-3],n[2-5]")) == "n[1-2,2-3,3-5]");
  CHECK(s({"b1", "a10", "a9", "a1b", "a10b", "a9b"}) == "a[9-10],a1b,a9b,a10b,b1");
  CHECK(s(expand("n[1-9],n9")) == "n[1-9,9]");
}

TEST_CASE("expanding a compressed list gives the same names back, for generated lists", "[unit][hostlist]") {
  std::mt19937 rng(2026);
  const char* prefixes[] = {"n", "node", "gpu-a", "rack1-n", "x", "", "a.b", "n0"};
  for (int trial = 0; trial < 3000; ++trial) {
    Names names;
    int count = static_cast<int>(rng() % 40);
    for (int i = 0; i < count; ++i) {
      std::string prefix = prefixes[rng() % 8];
      switch (rng() % 5) {
        case 0:
          names.push_back(prefix.empty() ? "solo" : prefix);
          break;
        case 1: {  // zero padded
          std::string num = std::to_string(rng() % 120);
          names.push_back(prefix + std::string(rng() % 3, '0') + num);
          break;
        }
        default:
          names.push_back(prefix + std::to_string(rng() % 30));
      }
    }
    std::string compressed = *compressHostlist(names);
    INFO("names: " << joined(names) << "\ncompressed: " << compressed);
    REQUIRE(expand(compressed) == names);
    // The sorted form holds the same multiset of names.
    Names sortedBack = expand(*compressHostlistSorted(names));
    Names a = names, b = sortedBack;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    REQUIRE(a == b);
  }
}

TEST_CASE("names that no hostlist can spell are refused by compression, naming them", "[unit][hostlist]") {
  auto r = compressHostlist(Names{"n1", "n[2"});
  REQUIRE_FALSE(r.isOk());
  CHECK(r.status().message() == "name 2 ('n[2') contains '[', which a Slurm hostlist cannot represent");
  CHECK(compressHostlistSorted(Names{"a b"}).status().message() ==
        "name 1 ('a b') contains the character 0x20, which a Slurm hostlist cannot represent");
  CHECK(compressHostlist(Names{"n1", std::string("a\0b1", 4)}).status().message().find("0x00") != std::string::npos);
  CHECK(hvd::slurm::isSpellableName("gpu-a01.cluster"));
  CHECK(compressHostlist(Names{"n323000000000000000000000"}).status().message() ==
        "name 1 ('n323000000000000000000000') ends in a number larger than 18446744073709551615, which a Slurm "
        "hostlist cannot represent");
  CHECK_FALSE(hvd::slurm::isSpellableName("a\n1"));
  CHECK(compressHostlist(Names{""}).status().message() == "name 1 ('') is empty, which a Slurm hostlist cannot represent");
}

TEST_CASE("sorted compression orders numbers 2^31 apart correctly, where Slurm loses a host", "[unit][hostlist]") {
  // scontrol show hostlistsorted 666666,66966666106669042 prints [66966666106669042].
  auto sorted = compressHostlistSorted(Names{"666666", "66966666106669042"});
  CHECK(*sorted == "[666666,66966666106669042]");
}

TEST_CASE("sorted compression of large overlapping lists takes linear time, not Slurm's cubic", "[unit][hostlist]") {
  Names names = expand("n[1-20000],n[1-20000],n[5000-30000]");
  auto sorted = compressHostlistSorted(names);
  REQUIRE(sorted.isOk());
  Names back = expand(*sorted);
  std::sort(names.begin(), names.end());
  std::sort(back.begin(), back.end());
  CHECK(back == names);
}

// runtime/engine/negotiation_test.cc: the engine's pure parts without sockets: the message
// table's verdicts, the response cache's slots, the control bytes under a byte-wise
// minimum, fusion groups, stall findings and the wire format.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "runtime/engine/control_message.h"
#include "runtime/engine/fusion_plan.h"
#include "collectives/reduce.h"
#include "runtime/engine/message_table.h"
#include "runtime/engine/reduction_identity.h"
#include "runtime/engine/response_cache.h"
#include "runtime/engine/stall_inspector.h"
#include "runtime/engine/wire.h"
#include "tests/support/reduce_cases.h"

using namespace hvd::engine;
using hvd::DataType;
using hvd::ReduceOp;

namespace {

Spec allreduce(std::uint64_t count, DataType type = DataType::kFloat32, ReduceOp op = ReduceOp::kSum) {
  return Spec{OpKind::kAllreduce, type, op, 0, count, hvd::Device::kCpu};
}

// The byte-wise minimum over the ranks' offers, as agree() computes it.
std::vector<std::uint8_t> agreeOver(const std::vector<ControlOffer>& offers) {
  std::vector<std::uint8_t> agreed = encodeOffer(offers[0]);
  for (const auto& o : offers) {
    auto bytes = encodeOffer(o);
    REQUIRE(bytes.size() == agreed.size());
    for (size_t i = 0; i < bytes.size(); ++i) agreed[i] = std::min(agreed[i], bytes[i]);
  }
  return agreed;
}

}  // namespace

TEST_CASE("a name is decided only once every rank announced it, in any order", "[unit]") {
  MessageTable table(3);
  CHECK_FALSE(table.record(2, {"w", allreduce(10)}));
  CHECK_FALSE(table.record(0, {"w", allreduce(10)}));
  CHECK(table.waiting() == std::map<std::string, std::vector<int>>{{"w", {0, 2}}});
  auto decided = table.record(1, {"w", allreduce(10)});
  REQUIRE(decided);
  CHECK(decided->error.empty());
  CHECK(decided->spec == allreduce(10));
  CHECK(table.waiting().empty());
}

TEST_CASE("specs that disagree give every rank one error naming the tensor, the ranks and what each asked", "[unit]") {
  MessageTable table(3);
  table.record(0, {"grad/w", allreduce(100)});
  table.record(1, {"grad/w", allreduce(99)});
  auto decided = table.record(2, {"grad/w", allreduce(100)});
  REQUIRE(decided);
  CHECK(decided->error ==
        "tensor 'grad/w' was submitted differently by different ranks: ranks 0, 2 asked for allreduce of 100 float32 "
        "(sum) but rank 1 asked for allreduce of 99 float32 (sum)");
  MessageTable types(2);
  types.record(0, {"b", allreduce(4, DataType::kFloat32, ReduceOp::kMax)});
  auto byOp = types.record(1, {"b", allreduce(4, DataType::kInt32, ReduceOp::kMin)});
  REQUIRE(byOp);
  CHECK(byOp->error.find("rank 0 asked for allreduce of 4 float32 (max) but rank 1 asked for allreduce of 4 int32 (min)") !=
        std::string::npos);
}

TEST_CASE("allgather shares may differ in length, and the response carries each rank's", "[unit]") {
  MessageTable table(3);
  Spec g{OpKind::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, 0, hvd::Device::kCpu};
  for (int r = 0; r < 2; ++r) {
    g.count = static_cast<std::uint64_t>(r + 1);
    CHECK_FALSE(table.record(r, {"g", g}));
  }
  g.count = 0;
  auto decided = table.record(2, {"g", g});
  REQUIRE(decided);
  CHECK(decided->error.empty());
  CHECK(decided->counts == std::vector<std::uint64_t>{1, 2, 0});
}

TEST_CASE("allgathers whose rows differ give every rank one error naming each rank's row shape", "[unit]") {
  MessageTable table(3);
  Spec g{OpKind::kAllgather, DataType::kFloat32, ReduceOp::kSum, 0, 6, hvd::Device::kCpu};
  const std::int64_t wide[] = {2, 3}, tall[] = {3, 2};
  g.rows = rowShapeOf(wide);
  CHECK_FALSE(table.record(0, {"g", g}));
  CHECK_FALSE(table.record(1, {"g", g}));
  g.rows = rowShapeOf(tall);  // as many elements a row, not the same rows
  auto decided = table.record(2, {"g", g});
  REQUIRE(decided);
  CHECK(decided->error ==
        "tensor 'g' was submitted differently by different ranks: ranks 0, 1 asked for allgather of float32 in rows "
        "of shape (2, 3) but rank 2 asked for allgather of float32 in rows of shape (3, 2)");
}

TEST_CASE("allreduces and broadcasts of as many elements in different shapes disagree, naming each rank's shape", "[unit]") {
  const std::int64_t six[] = {6}, four[] = {4};
  Spec a{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 0, 12, hvd::Device::kCpu};
  Spec b = a, flat = a;
  a.rows = rowShapeOf(six);
  b.rows = rowShapeOf(four);
  CHECK_FALSE(compatible(a, b));
  CHECK(agreementHash(a) != agreementHash(b));
  CHECK(compatible(a, a));
  CHECK(describe(a) == "allreduce of 12 float32 (sum) of shape (2, 6)");
  MessageTable table(3);
  CHECK_FALSE(table.record(0, {"w", a}));
  CHECK_FALSE(table.record(1, {"w", b}));
  auto decided = table.record(2, {"w", flat});
  REQUIRE(decided);
  CHECK(decided->error ==
        "tensor 'w' was submitted differently by different ranks: rank 0 asked for allreduce of 12 float32 (sum) of "
        "shape (2, 6), rank 1 asked for allreduce of 12 float32 (sum) of shape (3, 4) but rank 2 asked for allreduce "
        "of 12 float32 (sum) of shape (12,)");
  Spec c{OpKind::kBroadcast, DataType::kUInt8, ReduceOp::kSum, 1, 12, hvd::Device::kCpu};
  Spec d = c;
  c.rows = rowShapeOf(six);
  d.rows = rowShapeOf(four);
  CHECK_FALSE(compatible(c, d));
  CHECK(describe(d) == "broadcast of 12 uint8 from root 1 of shape (3, 4)");
}

TEST_CASE("an allreduce's shape travels only when given: a 1-D request stays three words", "[unit]") {
  Spec plain{OpKind::kAllreduce, DataType::kFloat32, ReduceOp::kAverage, 0, 12, hvd::Device::kCpu};
  Spec shaped = plain;
  const std::int64_t rows[] = {3, 2};
  shaped.rows = rowShapeOf(rows);
  for (const Spec& s : {plain, shaped}) {
    WireWriter w;
    w.spec(s);
    auto bytes = w.take();
    CHECK(bytes.size() == (s.rows.dims == 0 ? 24u : 24u + 16u + 8u * RowShape::kMaxDims));
    Spec back;
    WireReader r(bytes);
    REQUIRE(r.spec(back));
    CHECK(r.atEnd());
    CHECK(back == s);
  }
  Spec barrier{OpKind::kBarrier};
  WireWriter w;
  w.spec(barrier);
  auto bytes = w.take();
  bytes[4] = std::byte{1};  // a barrier claiming rows
  Spec back;
  WireReader r(bytes);
  CHECK_FALSE(r.spec(back));
}

TEST_CASE("a row shape too long or too wide to hold is described and compared by its element count", "[unit]") {
  const std::int64_t one[] = {7}, none[] = {0, 4};
  CHECK(describe(rowShapeOf(one)) == "(7,)");
  CHECK(describe(rowShapeOf({})) == "()");
  CHECK(rowShapeOf(none).elements == 0);
  std::vector<std::int64_t> many(RowShape::kMaxDims + 1, 2);
  RowShape folded = rowShapeOf(many);
  CHECK(folded.dims == RowShape::kNotHeld);
  CHECK(describe(folded) == "(512 elements)");
  const std::int64_t huge[] = {std::int64_t{1} << 33};
  CHECK(describe(rowShapeOf(huge)) == "(8589934592 elements)");
  std::vector<std::int64_t> sameCount(RowShape::kMaxDims + 1, 2);
  sameCount[0] = 4;
  sameCount[1] = 1;
  CHECK(rowShapeOf(sameCount) == folded);
}

TEST_CASE("rank lists read as people write them", "[unit]") {
  CHECK(rankList({3}) == "rank 3");
  CHECK(rankList({0, 1}) == "ranks 0, 1");
  CHECK(rankList({0, 1, 2, 3, 7}) == "ranks 0-3, 7");
}

TEST_CASE("the response cache reuses erased slots and evicts the least recently used when full", "[unit]") {
  ResponseCache cache(2);
  CHECK(cache.insert({"a", allreduce(1), {}, ""}, 1) == 0u);
  CHECK(cache.insert({"b", allreduce(2), {}, ""}, 2) == 1u);
  cache.touch(0, 3);  // a is now the more recent
  CHECK(cache.insert({"c", allreduce(3), {}, ""}, 4) == 1u);  // evicts b
  CHECK_FALSE(cache.find("b"));
  CHECK(cache.find("a") == 0u);
  cache.erase("a");
  CHECK(cache.at(0) == nullptr);
  CHECK(cache.insert({"d", allreduce(4), {}, ""}, 5) == 0u);
  CHECK(cache.slots() == 2);
  CHECK(cache.matches(0, 0, allreduce(4)));
  CHECK_FALSE(cache.matches(0, 0, allreduce(5)));
  ResponseCache off(0);
  CHECK_FALSE(off.insert({"a", allreduce(1), {}, ""}, 1));
  CHECK(off.slots() == 0);
}

TEST_CASE("two caches fed the same sequence of operations hold the same slots", "[unit]") {
  std::mt19937 rng(7);
  ResponseCache a(8), b(8);
  for (std::uint64_t tick = 1; tick < 2000; ++tick) {
    std::string name = "t" + std::to_string(rng() % 20);
    switch (rng() % 3) {
      case 0: a.insert({name, allreduce(tick), {}, ""}, tick), b.insert({name, allreduce(tick), {}, ""}, tick); break;
      case 1: a.erase(name), b.erase(name); break;
      default:
        if (auto s = a.find(name)) a.touch(*s, tick), b.touch(*s, tick);
    }
  }
  REQUIRE(a.slots() == b.slots());
  for (size_t s = 0; s < a.slots(); ++s) {
    REQUIRE((a.at(s) == nullptr) == (b.at(s) == nullptr));
    if (a.at(s) != nullptr) CHECK(a.at(s)->name == b.at(s)->name);
  }
}

TEST_CASE("under a byte-wise minimum the control bytes give AND, OR, the lowest shutdown rank and count ranges", "[unit]") {
  ControlOffer quiet, busy, leaving;
  quiet.cached = {1, 1, 0};
  busy.cached = {1, 0, 0};
  busy.hasAnnouncements = true;
  busy.unnamedCount = 3;
  busy.headHash = 42, busy.allHash = 99;
  leaving.cached = {1, 1, 1};
  leaving.shutdownRank = 5;
  leaving.unnamedCount = 300;  // capped at 255
  leaving.headHash = 42, leaving.allHash = 98;
  quiet.unnamedCount = 1;
  quiet.headHash = 42, quiet.allHash = 7;
  ControlOffer other = leaving;
  other.shutdownRank = 2;
  ControlAgreement a = decodeAgreement(agreeOver({quiet, busy, leaving, other}));
  CHECK(a.shutdownRank == 2);
  CHECK(a.anyAnnouncements);
  CHECK_FALSE(a.stallCheck);
  CHECK(a.unnamedMin == 1);
  CHECK(a.unnamedMax == 255);
  CHECK(a.headsAgree);
  CHECK_FALSE(a.allAgree);
  CHECK(a.cachedEverywhere == std::vector<bool>{true, false, false});
  ControlAgreement none = decodeAgreement(agreeOver({quiet, quiet}));
  CHECK(none.shutdownRank == -1);
  CHECK_FALSE(none.anyAnnouncements);
  CHECK(none.allAgree);
  busy.headHash = 41;
  CHECK_FALSE(decodeAgreement(agreeOver({quiet, busy})).headsAgree);
}

TEST_CASE("a joined rank's control offer leaves the other ranks' minimum as it was, save its own shutdown", "[unit]") {
  ControlOffer busy, plain, joined;
  busy.cached = {1, 0, 1};
  busy.hasAnnouncements = true;
  busy.unnamedCount = 3;
  busy.headHash = 42, busy.allHash = 99;
  busy.riderHoldsHead = true;
  plain.cached = {0, 0, 0};
  joined.cached = {0, 0, 0};  // what it has pending does not count: nothing
  joined.joined = true;
  CHECK(agreeOver({busy, joined}) == agreeOver({busy}));
  CHECK(agreeOver({plain, joined}) == agreeOver({plain}));
  joined.shutdownRank = 3;
  joined.wantsStallCheck = true;  // rank 0 joined: the rank that never joins is found by stall checks
  ControlAgreement a = decodeAgreement(agreeOver({busy, joined}));
  CHECK(a.shutdownRank == 3);
  CHECK(a.stallCheck);
}

TEST_CASE("a name is decided once every rank that has not joined announced it, and a join decides what waited for the joiner",
          "[unit]") {
  MessageTable table(3);
  CHECK_FALSE(table.record(0, {"w", allreduce(10)}));
  CHECK_FALSE(table.record(0, {"v", allreduce(4)}));
  CHECK_FALSE(table.record(1, {"w", allreduce(10)}));
  // Rank 2 joins (with nothing of its own pending): "w" waited only for it; "v" still waits for rank 1.
  std::vector<Response> decided = table.join(2);
  REQUIRE(decided.size() == 1);
  CHECK(decided[0].name == "w");
  CHECK(decided[0].error.empty());
  CHECK(table.waiting() == std::map<std::string, std::vector<int>>{{"v", {0}}});
  auto v = table.record(1, {"v", allreduce(4)});
  REQUIRE(v);
  CHECK(v->spec == allreduce(4));
  // With rank 0 joined too, rank 1 alone decides, and its spec is the response's.
  CHECK(table.join(0).empty());
  auto alone = table.record(1, {"u", allreduce(7, DataType::kInt32)});
  REQUIRE(alone);
  CHECK(alone->spec == allreduce(7, DataType::kInt32));
  // Once every rank joined the job starts over: all three must announce again.
  CHECK(table.join(1).empty());
  table.clearJoined();
  CHECK_FALSE(table.record(1, {"u", allreduce(7)}));
}

TEST_CASE("an allgather decided after a rank joined gives that rank a share of nothing", "[unit]") {
  MessageTable table(3);
  Spec g{OpKind::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, 5, hvd::Device::kCpu};
  CHECK(table.join(0).empty());
  CHECK_FALSE(table.record(1, {"g", g}));
  g.count = 2;
  auto decided = table.record(2, {"g", g});
  REQUIRE(decided);
  CHECK(decided->error.empty());
  CHECK(decided->counts == std::vector<std::uint64_t>{0, 5, 2});
  CHECK(decided->spec.count == 5);  // the lowest rank that announced it
}

TEST_CASE("specs that disagree after a join name only the ranks that announced them", "[unit]") {
  MessageTable table(3);
  CHECK(table.join(1).empty());
  table.record(0, {"grad/w", allreduce(100)});
  auto decided = table.record(2, {"grad/w", allreduce(99)});
  REQUIRE(decided);
  CHECK(decided->error ==
        "tensor 'grad/w' was submitted differently by different ranks: rank 0 asked for allreduce of 100 float32 "
        "(sum) but rank 2 asked for allreduce of 99 float32 (sum)");
}

TEST_CASE("the value a joined rank contributes leaves every type's sum, average, min, max and product as it was", "[unit]") {
  namespace hc = hvd::collectives;
  for (int t = 0; t < hvd::kDataTypeCount; ++t) {
    for (int o = 0; o < hvd::kElementwiseReduceOpCount; ++o) {
      auto type = static_cast<DataType>(t);
      auto op = static_cast<ReduceOp>(o);
      if (type == DataType::kBool && op == ReduceOp::kAverage) continue;  // refused at submission
      INFO(hvd::dataTypeName(type) << " " << hvd::reduceOpName(op));
      const size_t n = 13;  // small integers from -6 to 6 (0 to 12 unsigned), and 0 and 1 for bool
      std::vector<std::byte> data = hvd::test::input(type, 5, n);
      std::vector<std::byte> identity(data.size(), std::byte{0x5a});
      fillReductionIdentity(identity.data(), n, type, op);
      std::vector<std::byte> reduced = data;
      hc::reduceInto(reduced.data(), identity.data(), n, type, op == ReduceOp::kAverage ? ReduceOp::kSum : op);
      CHECK(reduced == data);
      reduced = identity;
      hc::reduceInto(reduced.data(), data.data(), n, type, op == ReduceOp::kAverage ? ReduceOp::kSum : op);
      CHECK(reduced == data);
    }
  }
}

TEST_CASE("agreement hashes are equal exactly when specs are compatible", "[unit]") {
  std::vector<Spec> specs;
  for (auto kind : {OpKind::kAllreduce, OpKind::kBroadcast, OpKind::kAllgather, OpKind::kBarrier}) {
    for (auto type : {DataType::kFloat32, DataType::kInt64}) {
      for (auto op : {ReduceOp::kSum, ReduceOp::kMax}) {
        for (int root : {0, 1}) {
          for (std::uint64_t count : {0, 6}) specs.push_back(Spec{kind, type, op, root, count, hvd::Device::kCpu});
        }
      }
    }
  }
  const std::int64_t wide[] = {2, 3}, tall[] = {3, 2};
  for (auto rows : {rowShapeOf(wide), rowShapeOf(tall)}) {
    Spec g{OpKind::kAllgather, DataType::kFloat32, ReduceOp::kSum, 0, 6, hvd::Device::kCpu};
    g.rows = rows;
    specs.push_back(g);
  }
  for (const auto& a : specs) {
    for (const auto& b : specs) {
      INFO(describe(a) << " / " << describe(b));
      CHECK((agreementHash(a) == agreementHash(b)) == compatible(a, b));
    }
  }
}

TEST_CASE("fusion packs allreduces of one type and op up to the threshold and leaves the rest alone", "[unit]") {
  std::vector<Spec> ready{allreduce(100),                                      // 400 B
                          allreduce(100, DataType::kFloat64),                  // 800 B, own group
                          allreduce(100),                                      // joins the first
                          Spec{OpKind::kBroadcast, DataType::kUInt8, ReduceOp::kSum, 0, 10, hvd::Device::kCpu},
                          allreduce(100),                                      // 1200 > 1000: new group
                          allreduce(1000),                                     // over the threshold: alone
                          allreduce(10, DataType::kFloat32, ReduceOp::kMax)};  // another op
  auto groups = planFusion(ready, 1000);
  std::vector<std::vector<size_t>> members;
  for (const auto& g : groups) members.push_back(g.members);
  CHECK(members == std::vector<std::vector<size_t>>{{0, 2}, {1}, {3}, {4}, {5}, {6}});
  CHECK(groups[0].bytes == 800);
  auto off = planFusion(ready, 0);
  CHECK(off.size() == ready.size());
  CHECK(planFusion({}, 1000).empty());
}

TEST_CASE("fusion packs host reducescatters of one type and op apart from allreduces and leaves GPU ones alone", "[unit]") {
  auto scatter = [](std::uint64_t count, ReduceOp op = ReduceOp::kSum, hvd::Device device = hvd::Device::kCpu) {
    Spec s{OpKind::kReducescatter, DataType::kFloat32, op, 0, count, device};
    s.rows.elements = 1;
    return s;
  };
  std::vector<Spec> ready{scatter(10),                                   // 40 B
                          allreduce(10),                                 // an allreduce: its own group
                          scatter(20),                                   // joins the first
                          scatter(10, ReduceOp::kAverage),               // another op
                          scatter(10, ReduceOp::kSum, hvd::Device::kCuda),  // on a GPU: alone
                          scatter(10, ReduceOp::kSum, hvd::Device::kCuda),
                          allreduce(5)};                                 // joins the allreduce
  std::vector<std::vector<size_t>> members;
  for (const auto& g : planFusion(ready, 1000)) members.push_back(g.members);
  CHECK(members == std::vector<std::vector<size_t>>{{0, 2}, {1, 6}, {3}, {4}, {5}});
}

TEST_CASE("fusion keeps every request exactly once, each group of one kind and under the threshold, on random lists", "[unit]") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<Spec> ready;
    size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) {
      ready.push_back(allreduce(rng() % 300, rng() % 2 ? DataType::kFloat32 : DataType::kInt8,
                                rng() % 2 ? ReduceOp::kSum : ReduceOp::kMin));
      if (rng() % 3 == 0) ready.back().kind = OpKind::kReducescatter, ready.back().rows.elements = 1;
    }
    std::uint64_t threshold = rng() % 2000;
    std::vector<int> seen(n, 0);
    for (const auto& g : planFusion(ready, threshold)) {
      std::uint64_t bytes = 0;
      for (size_t m : g.members) {
        ++seen[m];
        bytes += ready[m].bytes();
        CHECK(ready[m].kind == ready[g.members[0]].kind);
        CHECK(ready[m].type == ready[g.members[0]].type);
        CHECK(ready[m].op == ready[g.members[0]].op);
      }
      CHECK(std::is_sorted(g.members.begin(), g.members.end()));
      if (g.members.size() > 1) CHECK(bytes <= threshold);
      CHECK(g.bytes == bytes);
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
  }
}

TEST_CASE("stall findings name the tensors some ranks wait for and the ranks that never submitted them", "[unit]") {
  std::vector<PendingReport> reports(4);
  reports[0].items = {{"a", 70.0}, {"b", 3.0}, {"everywhere", 1.0}};
  reports[1].items = {{"everywhere", 1.5}};
  reports[2].items = {{"a", 65.0}, {"everywhere", 1.0}};
  reports[3].items = {{"everywhere", 0.5}};
  auto findings = findStalls(reports);
  REQUIRE(findings.size() == 2);
  CHECK(findings[0].name == "a");
  CHECK(findings[0].readyRanks == std::vector<int>{0, 2});
  CHECK(findings[0].missingRanks == std::vector<int>{1, 3});
  CHECK(findings[0].waitedSeconds == 70.0);
  CHECK(findings[1].name == "b");
  std::string text = formatStallWarning(findings, 60, 1);
  CHECK(text.find("'a': waiting 70 s on ranks 0, 2; never submitted by ranks 1, 3") != std::string::npos);
  CHECK(text.find("... and 1 more") != std::string::npos);
}

TEST_CASE("announcements survive the wire, and truncated or corrupt bytes are refused", "[unit]") {
  WireWriter w;
  Spec s{OpKind::kBroadcast, DataType::kBFloat16, ReduceOp::kAverage, 3, 1234567890123ull, hvd::Device::kCuda};
  w.text("layer.0/weight");
  w.spec(s);
  auto bytes = w.take();
  WireReader r(bytes);
  std::string name;
  Spec back;
  REQUIRE(r.text(name));
  REQUIRE(r.spec(back));
  CHECK(r.atEnd());
  CHECK(name == "layer.0/weight");
  CHECK(back == s);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    WireReader shortReader(std::span<const std::byte>(bytes.data(), cut));
    std::string n;
    Spec sp;
    CHECK_FALSE((shortReader.text(n) && shortReader.spec(sp)));
  }
  auto bad = bytes;
  bad[8 + 14 + 1] = std::byte{0x7f};  // the data type
  WireReader badReader(bad);
  REQUIRE(badReader.text(name));
  CHECK_FALSE(badReader.spec(back));
}

TEST_CASE("an allgather's row shape survives the wire and an impossible one is refused", "[unit]") {
  Spec g{OpKind::kAllgather, DataType::kInt32, ReduceOp::kSum, 0, 30, hvd::Device::kCpu};
  const std::int64_t rows[] = {3, 5};
  g.rows = rowShapeOf(rows);
  WireWriter w;
  w.spec(g);
  auto bytes = w.take();
  Spec back;
  WireReader r(bytes);
  REQUIRE(r.spec(back));
  CHECK(r.atEnd());
  CHECK(back == g);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    WireReader shortReader(std::span<const std::byte>(bytes.data(), cut));
    Spec sp;
    CHECK_FALSE(shortReader.spec(sp));
  }
  auto bad = bytes;
  bad[3 * 8 + 8] = std::byte{9};  // 9 dims: more than a row shape holds, and not kNotHeld
  WireReader badReader(bad);
  CHECK_FALSE(badReader.spec(back));
}

TEST_CASE("reducescatter shares split the rows as Horovod does and cover every row once", "[unit]") {
  CHECK(reducescatterShare(7, 0, 3).firstRow == 0);
  CHECK(reducescatterShare(7, 0, 3).rows == 3);
  CHECK(reducescatterShare(7, 1, 3).firstRow == 3);
  CHECK(reducescatterShare(7, 2, 3).rows == 2);
  CHECK(reducescatterShare(2, 2, 3).rows == 0);  // more ranks than rows
  for (int size = 1; size <= 9; ++size) {
    for (std::uint64_t rows = 0; rows <= 40; ++rows) {
      std::uint64_t next = 0;
      for (int r = 0; r < size; ++r) {
        auto share = reducescatterShare(rows, r, size);
        CHECK(share.firstRow == next);
        CHECK((share.rows == rows / size || share.rows == rows / size + 1));
        next += share.rows;
      }
      CHECK(next == rows);
    }
  }
}

TEST_CASE("a reducescatter's spec is described with its op and rows and survives the wire", "[unit]") {
  Spec s{OpKind::kReducescatter, DataType::kFloat32, ReduceOp::kMax, 0, 12, hvd::Device::kCpu};
  const std::int64_t trailing[] = {2, 3};
  s.rows = rowShapeOf(trailing);
  CHECK(describe(s) == "reducescatter of 12 float32 (max) in rows of shape (2, 3)");
  WireWriter w;
  w.spec(s);
  auto bytes = w.take();
  WireReader r(bytes);
  Spec back;
  REQUIRE(r.spec(back));
  CHECK(back == s);
  Spec other = s;
  other.rows = rowShapeOf(std::vector<std::int64_t>{3, 2});
  CHECK_FALSE(compatible(s, other));
  CHECK(agreementHash(s) != agreementHash(other));
}

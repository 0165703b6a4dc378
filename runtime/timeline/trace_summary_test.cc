// runtime/timeline/trace_summary_test.cc
#include "runtime/timeline/trace_summary.h"

#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace {

std::string track(int pid, int tid, const std::string& name) {
  return R"({"name": "thread_name", "ph": "M", "pid": )" + std::to_string(pid) + R"(, "tid": )" + std::to_string(tid) +
         R"(, "args": {"name": ")" + name + R"("}})";
}

std::string span(int pid, int tid, const std::string& name, double ts, double dur, double bytes = -1) {
  std::string args = bytes < 0 ? "" : R"(, "args": {"bytes": )" + std::to_string(bytes) + "}";
  return R"({"name": ")" + name + R"(", "ph": "X", "pid": )" + std::to_string(pid) + R"(, "tid": )" +
         std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) + args + "}";
}

hvd::Json parsed(const std::string& text) {
  auto json = hvd::parseJson(text);
  REQUIRE(json);
  return *json;
}

const hvd::timeline::TensorSummary* row(const std::vector<hvd::timeline::TensorSummary>& rows, const std::string& name) {
  for (const auto& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a reducescatter and an alltoall count as operations of their tensors", "[timeline][summary]") {
  std::string trace = "[" + track(0, 1, "rs") + "," + track(0, 2, "a2a") + "," +
                      span(0, 1, "NEGOTIATE_REDUCESCATTER", 0, 10) + "," + span(0, 1, "REDUCESCATTER", 10, 2000, 64) + "," +
                      span(0, 1, "RING_REDUCESCATTER", 11, 1000) + "," + span(0, 2, "ALLTOALL", 20, 4000, 128) + "]";
  auto rows = hvd::timeline::summarizeTrace(parsed(trace));
  REQUIRE(rows);
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].name == "a2a");  // most operation time first
  CHECK((*rows)[0].ops == 1);
  CHECK((*rows)[0].opMeanMs == Approx(4.0));
  CHECK((*rows)[0].bytesPerOp == 128);
  CHECK((*rows)[1].name == "rs");
  CHECK((*rows)[1].ops == 1);  // the backend's own call is not a second operation
  CHECK((*rows)[1].negotiateMeanMs == Approx(0.01));
}

TEST_CASE("events before the metadata that names their track still count and ranks' tracks join by name",
          "[timeline][summary]") {
  // Rank 1 submitted later than rank 0 both times: it is the last ready, 2 of 2.
  std::string trace = "[" + span(0, 3, "NEGOTIATE_ALLREDUCE", 100, 50) + "," + span(0, 3, "ALLREDUCE", 150, 1000, 8) + "," +
                      span(1, 7, "NEGOTIATE_ALLREDUCE", 140, 10) + "," + span(1, 7, "ALLREDUCE", 150, 3000, 8) + "," +
                      span(0, 3, "NEGOTIATE_ALLREDUCE", 5000, 50) + "," + span(1, 7, "NEGOTIATE_ALLREDUCE", 5040, 10) + "," +
                      track(1, 7, "grad") + "," + track(0, 3, "grad") + "]";
  auto rows = hvd::timeline::summarizeTrace(parsed(trace));
  REQUIRE(rows);
  const auto* grad = row(*rows, "grad");
  REQUIRE(grad != nullptr);
  CHECK(grad->ops == 2);
  CHECK(grad->opMeanMs == Approx(2.0));
  CHECK(grad->opMaxMs == Approx(3.0));
  CHECK(grad->negotiateMaxMs == Approx(0.05));
  CHECK(grad->lastRank == 1);
  CHECK(grad->lastTimes == 2);
  CHECK(grad->compared == 2);
}

TEST_CASE("a trace file is summarized one event at a time to the same rows as its parsed document", "[timeline][summary]") {
  std::string trace = "[\n";
  for (int rank = 0; rank < 3; ++rank) {
    trace += track(rank, 1, "a") + ",\n" + track(rank, 2, "b") + ",\n";
    for (int k = 0; k < 50; ++k) {
      double t = k * 1000 + rank * 7 * (k % 3);
      trace += span(rank, 1, "NEGOTIATE_ALLREDUCE", t, 5 + rank) + ",\n" + span(rank, 1, "ALLREDUCE", t + 10, 100 + k, 4096) + ",\n";
      trace += span(rank, 2, "NEGOTIATE_BROADCAST", t, 3) + ",\n" + span(rank, 2, "BROADCAST", t + 5, 40, 16) + ",\n";
    }
  }
  trace += track(0, 9, "empty") + "\n]\n";
  char name[] = "/tmp/hvd_trace_summary.XXXXXX";
  int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::ofstream(name) << trace;
  auto fromFile = hvd::timeline::summarizeTraceFile(name);
  ::unlink(name);
  auto fromDocument = hvd::timeline::summarizeTrace(parsed(trace));
  REQUIRE(fromFile);
  REQUIRE(fromDocument);
  CHECK(hvd::timeline::formatSummary(*fromFile) == hvd::timeline::formatSummary(*fromDocument));
  REQUIRE(fromFile->size() == 2);
  CHECK((*fromFile)[0].name == "a");
  CHECK((*fromFile)[0].ops == 150);
}

TEST_CASE("a trace file that is no array of events is refused naming the file", "[timeline][summary]") {
  char name[] = "/tmp/hvd_trace_summary.XXXXXX";
  int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::ofstream(name) << "{\"traceEvents\": []}";
  auto rows = hvd::timeline::summarizeTraceFile(name);
  ::unlink(name);
  REQUIRE_FALSE(rows);
  CHECK(rows.status().message() == "'" + std::string(name) + "' is not a Chrome trace in the JSON array format: offset 0: expected '['");
}

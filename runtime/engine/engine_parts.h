// runtime/engine/engine_parts.h: what the engine's source files share, private to them:
// a request's state (Engine::Operation) and the names its timeline events carry. The
// engine is one class in four files: engine.cc (submission, handles, the thread and its
// cycle), engine_negotiation.cc (agreeing what runs), engine_execution.cc (running it)
// and engine_timeline.cc (recording it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/engine/engine.h"

namespace hvd::engine {

using Clock = std::chrono::steady_clock;

struct Engine::Operation {
  HandleId id = 0;
  std::string name;
  Spec spec;
  const void* in = nullptr;
  void* out = nullptr;
  std::uint64_t outBytes = 0;
  Clock::time_point submitted;
  Clock::duration pausedBefore{};  // pausedSoFar() at submission: a stall's age leaves pauses out
  Status status;  // written before done
  Gathered gathered;
  std::atomic<bool> done{false};
  bool announced = false;  // cycle state
  int track = -1;          // timeline track; -1 without a timeline
  double readyUs = 0;      // when negotiation decided it (timeline)
  std::vector<std::uint64_t> sendCounts;  // alltoall: elements to each rank
  bool join = false;       // a join(): lastJoined is its result
  int lastJoined = -1;
  std::vector<std::byte> standIn;  // a joined rank's stand-in: its buffer
};

inline double toUs(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

// How often the stall check runs: a quarter of its shortest limit, within 0.1-10 s.
std::chrono::milliseconds stallCheckPeriod(const EngineOptions& o);

// Timeline names (engine_timeline.cc): Horovod's event names where the thing is the same.
const char* negotiateName(OpKind kind);
const char* opName(OpKind kind);
// The collective itself, named after what moved it (see engine_timeline.cc).
const char* activityName(const backends::CollectiveBackend* backend, const Spec& spec);

}  // namespace hvd::engine

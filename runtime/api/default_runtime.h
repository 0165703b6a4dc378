// runtime/api/default_runtime.h: the process's one Runtime behind the public API, as the
// API's source files share it: the runtime a call may use (never a forked child's), the
// process sets' book, and a set's failures said with the job's ranks. Private to
// runtime/api; hvd.cc (the collectives), default_runtime.cc (init and shutdown) and
// process_sets.cc (adding and removing sets) use it.
#pragma once

#include <memory>
#include <mutex>

#include "runtime/api/process_set_table.h"
#include "runtime/core/runtime.h"

namespace hvd::api {

// The runtime init() made, or null; any thread, any time.
std::shared_ptr<Runtime> current();
// The runtime, when this process may make collectives with it (initialized, not a child
// forked after init()).
Result<std::shared_ptr<Runtime>> usable();
// The runtime that runs the calls of `processSet` on this rank (0: the job's).
Result<std::shared_ptr<Runtime>> usable(int processSet);
// Whether this process was forked from the one that called init().
bool forkedChild();

// Process sets: the job's runtime is set 0; the others are in this book. Adds and removes
// take processSetMutex(): each is a collective over the whole job.
ProcessSetTable& processSets();
std::mutex& processSetMutex();

// A set's failures name its ranks as its engine numbers them: said with the job's.
Status inSet(Status s, int processSet);
template <typename T>
Result<T> inSet(Result<T> r, int processSet) {
  if (r) return r;
  return inSet(r.status(), processSet);
}
// A broadcast's root is a job rank (Horovod's convention); the set's engine counts its own.
Result<int> rootInSet(int processSet, int root);

}  // namespace hvd::api

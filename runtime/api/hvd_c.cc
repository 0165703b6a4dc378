// runtime/api/hvd_c.cc: C wrappers; errors become codes plus a per-thread message.
#include "hvd/hvd_c.h"

#include <cstdint>
#include <vector>

#include <string>

#include "hvd/hvd.h"

namespace {

thread_local std::string lastError;

int report(const hvd::Status& s) {
  if (s.isOk()) return 0;
  lastError = s.message();
  return static_cast<int>(s.code());
}

}  // namespace

extern "C" {

int hvd_init(void) { return report(hvd::init()); }
void hvd_shutdown(void) { hvd::shutdown(); }
int hvd_rank(void) { return hvd::rank(); }
int hvd_size(void) { return hvd::size(); }
int hvd_local_rank(void) { return hvd::localRank(); }
int hvd_local_size(void) { return hvd::localSize(); }
int hvd_allreduce(void* data, size_t count, enum hvd_datatype type, enum hvd_reduce_op op) {
  return report(hvd::allreduce(data, count, static_cast<hvd::DataType>(type), static_cast<hvd::ReduceOp>(op)));
}
int hvd_broadcast(void* data, size_t bytes, int root) { return report(hvd::broadcast(data, bytes, root)); }
int hvd_allgather(const void* mine, size_t bytes, void* out) { return report(hvd::allgather(mine, bytes, out)); }
int hvd_allgather_sizes(size_t bytes, size_t* sizes_out) {
  if (!hvd::initialized()) return report(hvd::Status(hvd::Errc::kInvalidUsage, "hvd_init() has not been called"));
  std::vector<uint64_t> sizes(static_cast<size_t>(hvd::size()));
  uint64_t own = bytes;
  int rc = report(hvd::allgather(&own, sizeof own, sizes.data()));
  if (rc == 0) {
    for (size_t i = 0; i < sizes.size(); ++i) sizes_out[i] = static_cast<size_t>(sizes[i]);
  }
  return rc;
}
int hvd_allgatherv(const void* mine, const size_t* bytes_per_rank, void* out) {
  return report(hvd::allgatherv(mine, bytes_per_rank, out));
}
int hvd_barrier(void) { return report(hvd::barrier()); }
int hvd_preemption_requested(void) { return hvd::preemptionRequested() ? 1 : 0; }
const char* hvd_last_error(void) { return lastError.c_str(); }

}

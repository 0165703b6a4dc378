// runtime/api/hvd_c.cc: C wrappers; errors become codes plus a per-thread message.
#include "hvd/hvd_c.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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
int hvd_is_homogeneous(void) { return hvd::isHomogeneous() ? 1 : 0; }
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
int hvd_reducescatter(const void* in, void* out, size_t count, enum hvd_datatype type, enum hvd_reduce_op op,
                      size_t row_elements) {
  const std::int64_t row[] = {static_cast<std::int64_t>(row_elements)};
  return report(hvd::reducescatter(in, out, count, static_cast<hvd::DataType>(type), static_cast<hvd::ReduceOp>(op),
                                   row_elements == 1 ? std::span<const std::int64_t>{} : std::span<const std::int64_t>(row)));
}
size_t hvd_reducescatter_rows(size_t rows) { return hvd::reducescatterRows(rows); }
int hvd_join(int* last_rank) {
  auto last = hvd::join();
  if (!last) return report(last.status());
  if (last_rank != nullptr) *last_rank = *last;
  return 0;
}
static int handleOut(const hvd::Result<hvd::Handle>& h, int64_t* handle) {
  if (!h) return report(h.status());
  *handle = *h;
  return 0;
}
// A gathered result in malloc'ed memory, as hvd_synchronize_allgather documents.
static int handOver(const hvd::Result<hvd::Gathered>& g, void** data, size_t* bytes, size_t* counts_per_rank) {
  if (!g) return report(g.status());
  if (g->device != hvd::Device::kCpu) {  // the C API submits host tensors only
    return report(hvd::Status(hvd::Errc::kInvalidUsage, "a GPU tensor's result stays on its GPU"));
  }
  *data = std::malloc(g->data.empty() ? 1 : g->data.size());
  if (*data == nullptr) return report(hvd::Status(hvd::Errc::kSystem, "out of memory for the allgather's result"));
  if (!g->data.empty()) std::memcpy(*data, g->data.data(), g->data.size());
  *bytes = g->data.size();
  if (counts_per_rank != nullptr) {
    for (size_t r = 0; r < g->counts.size(); ++r) counts_per_rank[r] = g->counts[r];
  }
  return 0;
}
int hvd_allreduce_async(const char* name, const void* in, void* out, size_t count, enum hvd_datatype type,
                        enum hvd_reduce_op op, int64_t* handle) {
  return handleOut(hvd::allreduceAsync(name != nullptr ? name : "", in, out, count, static_cast<hvd::DataType>(type),
                                       static_cast<hvd::ReduceOp>(op)),
                   handle);
}
int hvd_broadcast_async(const char* name, void* data, size_t count, enum hvd_datatype type, int root,
                        int64_t* handle) {
  return handleOut(hvd::broadcastAsync(name != nullptr ? name : "", data, count, static_cast<hvd::DataType>(type), root),
                   handle);
}
int hvd_allgather_async(const char* name, const void* in, size_t count, enum hvd_datatype type, int64_t* handle) {
  return handleOut(hvd::allgatherAsync(name != nullptr ? name : "", in, count, static_cast<hvd::DataType>(type)), handle);
}
int hvd_alltoall_async(const char* name, const void* in, size_t count, enum hvd_datatype type, const uint64_t* splits,
                       size_t row_elements, int64_t* handle) {
  const std::int64_t row[] = {static_cast<std::int64_t>(row_elements)};
  std::span<const std::uint64_t> perRank;
  if (splits != nullptr) perRank = {splits, static_cast<size_t>(hvd::size())};
  return handleOut(hvd::alltoallAsync(name != nullptr ? name : "", in, count, static_cast<hvd::DataType>(type), perRank,
                                      row_elements == 1 ? std::span<const std::int64_t>{} : std::span<const std::int64_t>(row)),
                   handle);
}
int hvd_alltoall(const void* in, size_t count, enum hvd_datatype type, const uint64_t* splits, size_t row_elements,
                 void** data, size_t* bytes, size_t* counts_per_rank) {
  const std::int64_t row[] = {static_cast<std::int64_t>(row_elements)};
  std::span<const std::uint64_t> perRank;
  if (splits != nullptr) perRank = {splits, static_cast<size_t>(hvd::size())};
  auto g = hvd::alltoall(in, count, static_cast<hvd::DataType>(type), perRank,
                         row_elements == 1 ? std::span<const std::int64_t>{} : std::span<const std::int64_t>(row));
  return handOver(g, data, bytes, counts_per_rank);
}
int hvd_poll(int64_t handle, int* done) {
  auto d = hvd::poll(handle);
  if (!d) return report(d.status());
  *done = *d ? 1 : 0;
  return 0;
}
int hvd_synchronize(int64_t handle) { return report(hvd::synchronize(handle)); }
int hvd_synchronize_allgather(int64_t handle, void** data, size_t* bytes, size_t* counts_per_rank) {
  return handOver(hvd::synchronizeAllgather(handle), data, bytes, counts_per_rank);
}
int hvd_add_process_set(const int* ranks, size_t count, int* id) {
  auto added = hvd::addProcessSet(std::span<const int>(ranks, ranks == nullptr ? 0 : count));
  if (!added) return report(added.status());
  *id = *added;
  return 0;
}
int hvd_remove_process_set(int id) { return report(hvd::removeProcessSet(id)); }
int hvd_process_set_rank(int id, int* rank) {
  auto r = hvd::processSetRank(id);
  if (!r) return report(r.status());
  *rank = *r;
  return 0;
}
int hvd_process_set_size(int id, int* size) {
  auto s = hvd::processSetSize(id);
  if (!s) return report(s.status());
  *size = *s;
  return 0;
}
int hvd_allreduce_async_in(int process_set, const char* name, const void* in, void* out, size_t count,
                           enum hvd_datatype type, enum hvd_reduce_op op, int64_t* handle) {
  return handleOut(hvd::allreduceAsync(name != nullptr ? name : "", in, out, count, static_cast<hvd::DataType>(type),
                                       static_cast<hvd::ReduceOp>(op), hvd::Device::kCpu, process_set),
                   handle);
}
int hvd_broadcast_async_in(int process_set, const char* name, void* data, size_t count, enum hvd_datatype type,
                           int root, int64_t* handle) {
  return handleOut(hvd::broadcastAsync(name != nullptr ? name : "", data, count, static_cast<hvd::DataType>(type), root,
                                       hvd::Device::kCpu, process_set),
                   handle);
}
int hvd_allgather_async_in(int process_set, const char* name, const void* in, size_t count, enum hvd_datatype type,
                           int64_t* handle) {
  return handleOut(hvd::allgatherAsync(name != nullptr ? name : "", in, count, static_cast<hvd::DataType>(type),
                                       hvd::Device::kCpu, {}, process_set),
                   handle);
}
int hvd_preemption_requested(void) { return hvd::preemptionRequested() ? 1 : 0; }
int hvd_elastic_world_changed(int* changed) {
  auto c = hvd::elasticWorldChanged();
  if (!c) return report(c.status());
  *changed = *c ? 1 : 0;
  return 0;
}
const char* hvd_last_error(void) { return lastError.c_str(); }

}

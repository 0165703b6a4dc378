/* hvd/hvd_c.h: the C API over hvd/hvd.h, for other languages to bind. Functions return
 * 0 on success and a positive error code otherwise (the Errc value); hvd_last_error()
 * describes the last failure of the calling thread. */
#ifndef HVD_HVD_C_H_
#define HVD_HVD_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// HVD_BOOL: one byte, 0 or 1; reduced as "any" (sum, max) or "all" (min, product).
enum hvd_datatype {
  HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16, HVD_INT8, HVD_UINT8, HVD_INT32, HVD_INT64,
  HVD_INT16, HVD_UINT16, HVD_BOOL
};
/* HVD_ADASUM: Horovod's Adasum, allreduce of float16, bfloat16, float32 and float64 only. */
enum hvd_reduce_op { HVD_SUM, HVD_AVERAGE, HVD_MIN, HVD_MAX, HVD_PRODUCT, HVD_ADASUM };

int hvd_init(void);
void hvd_shutdown(void);
int hvd_rank(void);
int hvd_size(void);
int hvd_local_rank(void);
int hvd_local_size(void);
int hvd_is_homogeneous(void); /* 1 when every host runs as many ranks */
int hvd_allreduce(void* data, size_t count, enum hvd_datatype type, enum hvd_reduce_op op);
int hvd_broadcast(void* data, size_t bytes, int root);
int hvd_allgather(const void* mine, size_t bytes, void* out);
/* Variable sizes: first learn every rank's size (sizes_out: hvd_size() entries), then
 * gather (out: the sum of sizes, blocks in rank order). */
int hvd_allgather_sizes(size_t bytes, size_t* sizes_out);
int hvd_allgatherv(const void* mine, const size_t* bytes_per_rank, void* out);
int hvd_barrier(void);
/* Horovod's reducescatter (hvd/hvd.h): count elements in rows of row_elements, reduced with
 * op; out receives this rank's hvd_reducescatter_rows(count / row_elements) rows. */
int hvd_reducescatter(const void* in, void* out, size_t count, enum hvd_datatype type, enum hvd_reduce_op op,
                      size_t row_elements);
size_t hvd_reducescatter_rows(size_t rows);
/* Horovod's alltoall (hvd/hvd.h): this rank's count elements in rows of row_elements (the
 * same on every rank), splits[d] rows of them to rank d in order (hvd_size() entries; NULL:
 * the rows split evenly, which they must). *data receives malloc'ed memory with the rows
 * every rank sent this one, in rank order (free() it), *bytes its size, and counts_per_rank
 * (hvd_size() entries, may be NULL) how many elements each rank sent. Host memory. */
int hvd_alltoall(const void* in, size_t count, enum hvd_datatype type, const uint64_t* splits, size_t row_elements,
                 void** data, size_t* bytes, size_t* counts_per_rank);
/* Horovod's join (hvd/hvd.h: hvd::join): blocks until every rank joined; stores the last
 * rank to join in last_rank (may be NULL). */
int hvd_join(int* last_rank);
/* Asynchronous, named requests (see hvd/hvd.h): each returns 0 and stores a handle, or an
 * error code. name may be NULL or "" (then matched by order of submission, like the
 * blocking calls). Buffers must stay valid and untouched until the handle completes. */
int hvd_allreduce_async(const char* name, const void* in, void* out, size_t count, enum hvd_datatype type,
                        enum hvd_reduce_op op, int64_t* handle);
int hvd_broadcast_async(const char* name, void* data, size_t count, enum hvd_datatype type, int root,
                        int64_t* handle);
int hvd_allgather_async(const char* name, const void* in, size_t count, enum hvd_datatype type, int64_t* handle);
/* hvd_alltoall's request: its result through hvd_synchronize_allgather. */
int hvd_alltoall_async(const char* name, const void* in, size_t count, enum hvd_datatype type, const uint64_t* splits,
                       size_t row_elements, int64_t* handle);
/* *done = 1 when the request has finished, else 0; never blocks. */
int hvd_poll(int64_t handle, int* done);
/* Blocks until the request finished and releases the handle; its outcome. */
int hvd_synchronize(int64_t handle);
/* For an allgather (or alltoall) handle, instead of hvd_synchronize: *data receives malloc'ed memory with
 * every rank's elements in rank order (free() it), *bytes its size, and counts_per_rank
 * (hvd_size() entries, may be NULL) how many elements each rank gave. */
int hvd_synchronize_allgather(int64_t handle, void** data, size_t* bytes, size_t* counts_per_rank);

/* Horovod's process sets (hvd/hvd.h: hvd::addProcessSet): subsets of the job's ranks whose
 * collectives run among their members alone. Adding and removing are collective over the
 * whole job: every rank, member or not, makes the same calls in the same order, and every
 * rank gets the same id. */
int hvd_add_process_set(const int* ranks, size_t count, int* id);
int hvd_remove_process_set(int id);
/* This rank's rank within the set (an error on a rank outside it), and the set's size. */
int hvd_process_set_rank(int id, int* rank);
int hvd_process_set_size(int id, int* size);
/* The async requests above, in process set `process_set` (0: the whole job); a broadcast's
 * root is a rank of the job. hvd_poll, hvd_synchronize and hvd_synchronize_allgather take
 * their handles as any other. */
int hvd_allreduce_async_in(int process_set, const char* name, const void* in, void* out, size_t count,
                           enum hvd_datatype type, enum hvd_reduce_op op, int64_t* handle);
int hvd_broadcast_async_in(int process_set, const char* name, void* data, size_t count, enum hvd_datatype type,
                           int root, int64_t* handle);
int hvd_allgather_async_in(int process_set, const char* name, const void* in, size_t count, enum hvd_datatype type,
                           int64_t* handle);

/* 1 when preemption was announced to this rank, else 0 (hvd::preemptionRequested). */
int hvd_preemption_requested(void);
/* Elastic jobs: *changed = 1 on every rank when hvdrun formed a new world since this one
 * (hvd::elasticWorldChanged; collective), else 0. */
int hvd_elastic_world_changed(int* changed);
const char* hvd_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* HVD_HVD_C_H_ */

/* hvd/hvd_c.h: the C API over hvd/hvd.h, for other languages to bind. Functions return
 * 0 on success and a positive error code otherwise (the Errc value); hvd_last_error()
 * describes the last failure of the calling thread. */
#ifndef HVD_HVD_C_H_
#define HVD_HVD_C_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum hvd_datatype { HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16, HVD_INT8, HVD_UINT8, HVD_INT32, HVD_INT64 };
enum hvd_reduce_op { HVD_SUM, HVD_AVERAGE, HVD_MIN, HVD_MAX, HVD_PRODUCT };

int hvd_init(void);
void hvd_shutdown(void);
int hvd_rank(void);
int hvd_size(void);
int hvd_local_rank(void);
int hvd_local_size(void);
int hvd_allreduce(void* data, size_t count, enum hvd_datatype type, enum hvd_reduce_op op);
int hvd_broadcast(void* data, size_t bytes, int root);
int hvd_allgather(const void* mine, size_t bytes, void* out);
/* Variable sizes: first learn every rank's size (sizes_out: hvd_size() entries), then
 * gather (out: the sum of sizes, blocks in rank order). */
int hvd_allgather_sizes(size_t bytes, size_t* sizes_out);
int hvd_allgatherv(const void* mine, const size_t* bytes_per_rank, void* out);
int hvd_barrier(void);
/* 1 when preemption was announced to this rank, else 0 (hvd::preemptionRequested). */
int hvd_preemption_requested(void);
const char* hvd_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* HVD_HVD_C_H_ */

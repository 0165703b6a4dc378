/* tests/e2e/c_api_rank.c: a rank written in C against hvd/hvd_c.h, so the C API is
 * compiled as C and used for real: every call checked against the serial answer, then
 * "c api ok" printed. Any mismatch prints what differed and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvd/hvd_c.h"

#define CHECK(cond, what)                                                           \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "rank %d: %s (%s)\n", hvd_rank(), what, hvd_last_error());    \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

int main(void) {
  CHECK(hvd_init() == 0, "hvd_init failed");
  int rank = hvd_rank(), size = hvd_size();
  CHECK(hvd_is_homogeneous() == 1, "ranks on one host are not homogeneous");

  double sum[3] = {rank, 2.0 * rank, 1.0};
  CHECK(hvd_allreduce(sum, 3, HVD_FLOAT64, HVD_SUM) == 0, "allreduce failed");
  double expected = size * (size - 1) / 2.0;
  CHECK(sum[0] == expected && sum[1] == 2 * expected && sum[2] == size, "allreduce sum wrong");

  /* A type the header does not have is refused by name (it once indexed past every table). */
  CHECK(hvd_allreduce(sum, 3, (enum hvd_datatype)42, HVD_SUM) != 0, "type 42 was accepted");
  CHECK(strcmp(hvd_last_error(), "element type 42 is not one hvd knows (0 to 10, hvd_c.h)") == 0, "type 42's error");
  unsigned char any[2] = {rank == 0, 0};
  CHECK(hvd_allreduce(any, 2, HVD_BOOL, HVD_MAX) == 0 && any[0] == 1 && any[1] == 0, "bool any wrong");

  /* Adasum of the same vector on every rank is that vector (a sum would be size times it). */
  float same[2] = {3.0f, -1.0f};
  CHECK(hvd_allreduce(same, 2, HVD_FLOAT32, HVD_ADASUM) == 0, "Adasum failed");
  CHECK(same[0] == 3.0f && same[1] == -1.0f, "Adasum of equal vectors wrong");

  int value = rank == size - 1 ? 4242 : -1;
  CHECK(hvd_broadcast(&value, sizeof value, size - 1) == 0, "broadcast failed");
  CHECK(value == 4242, "broadcast wrong");

  int* all = malloc(sizeof(int) * (size_t)size);
  int mine = rank * 7;
  CHECK(hvd_allgather(&mine, sizeof mine, all) == 0, "allgather failed");
  for (int k = 0; k < size; ++k) CHECK(all[k] == k * 7, "allgather wrong");

  /* Rank k contributes k bytes of 'A' + k (rank 0: none). */
  size_t* sizes = malloc(sizeof(size_t) * (size_t)size);
  char block[64];
  memset(block, 'A' + rank, sizeof block);
  CHECK(hvd_allgather_sizes((size_t)rank, sizes) == 0, "allgather_sizes failed");
  size_t total = 0;
  for (int k = 0; k < size; ++k) {
    CHECK(sizes[k] == (size_t)k, "allgather_sizes wrong");
    total += sizes[k];
  }
  char* gathered = malloc(total + 1);
  CHECK(hvd_allgatherv(block, sizes, gathered) == 0, "allgatherv failed");
  size_t at = 0;
  for (int k = 0; k < size; ++k) {
    for (int i = 0; i < k; ++i, ++at) CHECK(gathered[at] == 'A' + k, "allgatherv wrong");
  }

  /* Async, named, submitted in opposite orders on even and odd ranks. */
  float grads[2][4];
  int64_t handles[2];
  for (int i = 0; i < 2; ++i) {
    int k = rank % 2 == 0 ? i : 1 - i;
    for (int j = 0; j < 4; ++j) grads[k][j] = (float)(rank + k);
    CHECK(hvd_allreduce_async(k == 0 ? "grad.a" : "grad.b", grads[k], grads[k], 4, HVD_FLOAT32, HVD_SUM, &handles[k]) == 0,
          "allreduce_async failed");
  }
  int done = -1;
  CHECK(hvd_poll(handles[1], &done) == 0 && (done == 0 || done == 1), "poll failed");
  for (int k = 0; k < 2; ++k) {
    CHECK(hvd_synchronize(handles[k]) == 0, "synchronize failed");
    CHECK(grads[k][3] == (float)(expected + size * k), "async allreduce wrong");
  }
  CHECK(hvd_synchronize(handles[0]) != 0, "a handle was synchronized twice");
  long long root_value = rank == 0 ? 77 : 0;
  int64_t bh, gh;
  CHECK(hvd_broadcast_async("b", &root_value, 1, HVD_INT64, 0, &bh) == 0 && hvd_synchronize(bh) == 0, "broadcast_async failed");
  CHECK(root_value == 77, "async broadcast wrong");
  int share[2] = {rank, rank};
  CHECK(hvd_allgather_async("g", share, (size_t)(rank % 2 + 1), HVD_INT32, &gh) == 0, "allgather_async failed");
  void* gathered_async = NULL;
  size_t gathered_bytes = 0;
  CHECK(hvd_synchronize_allgather(gh, &gathered_async, &gathered_bytes, sizes) == 0, "synchronize_allgather failed");
  size_t expect_bytes = 0;
  for (int k = 0; k < size; ++k) {
    CHECK(sizes[k] == (size_t)(k % 2 + 1), "allgather_async counts wrong");
    expect_bytes += sizes[k] * sizeof(int);
  }
  CHECK(gathered_bytes == expect_bytes && ((int*)gathered_async)[gathered_bytes / sizeof(int) - 1] == size - 1,
        "allgather_async data wrong");
  free(gathered_async);

  CHECK(hvd_preemption_requested() == 0, "preemption announced without a notice");
  {
    int changed = -1;  /* not an elastic job: never changed */
    CHECK(hvd_elastic_world_changed(&changed) == 0 && changed == 0, "elastic_world_changed outside an elastic job");
  }
  CHECK(hvd_barrier() == 0, "barrier failed");

  /* reducescatter: 2 * size + 1 rows of 3 ints, rank k's row i all k + i; summed, row i is
   * size * i + size * (size - 1) / 2. Rank 0 gets one row more than the others. */
  {
    size_t rows = 2 * (size_t)size + 1, mine_rows = hvd_reducescatter_rows(rows);
    CHECK(mine_rows == (rank == 0 ? 3u : 2u) || size == 1, "reducescatter share wrong");
    int* rs_in = malloc(rows * 3 * sizeof(int));
    int* rs_out = malloc(mine_rows * 3 * sizeof(int));
    for (size_t i = 0; i < rows * 3; ++i) rs_in[i] = rank + (int)(i / 3);
    CHECK(hvd_reducescatter(rs_in, rs_out, rows * 3, HVD_INT32, HVD_SUM, 3) == 0, "reducescatter failed");
    size_t first = rank == 0 ? 0 : 3 + 2 * (size_t)(rank - 1);
    if (size == 1) first = 0;
    for (size_t i = 0; i < mine_rows * 3; ++i) {
      int row = (int)(first + i / 3);
      CHECK(rs_out[i] == size * row + size * (size - 1) / 2, "reducescatter data wrong");
    }
    free(rs_in);
    free(rs_out);
  }

  /* alltoall: rank k sends rank d k + d + 1 rows of 2 ints, each 100 * k + d; then, named
   * and asynchronous, the same without splits, 2 rows to each rank. */
  {
    uint64_t* splits = malloc((size_t)size * sizeof(uint64_t));
    size_t sent = 0, expected = 0;
    for (int d = 0; d < size; ++d) splits[d] = (uint64_t)(rank + d + 1), sent += splits[d];
    int* a2a = malloc(sent * 2 * sizeof(int));
    size_t at = 0;
    for (int d = 0; d < size; ++d) {
      for (uint64_t i = 0; i < splits[d] * 2; ++i) a2a[at++] = 100 * rank + d;
    }
    void* got = NULL;
    size_t got_bytes = 0;
    size_t* counts = malloc((size_t)size * sizeof(size_t));
    CHECK(hvd_alltoall(a2a, sent * 2, HVD_INT32, splits, 2, &got, &got_bytes, counts) == 0, "alltoall failed");
    at = 0;
    for (int k = 0; k < size; ++k) {
      CHECK(counts[k] == (size_t)(k + rank + 1) * 2, "alltoall counts wrong");
      for (size_t i = 0; i < counts[k]; ++i) CHECK(((int*)got)[at++] == 100 * k + rank, "alltoall data wrong");
      expected += counts[k];
    }
    CHECK(got_bytes == expected * sizeof(int), "alltoall size wrong");
    free(got);
    int even[64];
    for (int i = 0; i < 2 * size; ++i) even[i] = 1000 * rank + i;
    int64_t a2a_handle = 0;
    CHECK(hvd_alltoall_async("even", even, 2 * (size_t)size, HVD_INT32, NULL, 1, &a2a_handle) == 0,
          "even alltoall failed");
    CHECK(hvd_synchronize_allgather(a2a_handle, &got, &got_bytes, NULL) == 0, "even alltoall failed");
    CHECK(got_bytes == 2 * (size_t)size * sizeof(int), "even alltoall size wrong");
    for (int k = 0; k < size; ++k) {
      CHECK(((int*)got)[2 * k] == 1000 * k + 2 * rank && ((int*)got)[2 * k + 1] == 1000 * k + 2 * rank + 1,
            "even alltoall data wrong");
    }
    free(got);
    free(counts);
    free(a2a);
    free(splits);
  }

  /* Process sets: the even ranks (0, 2, ...) added on every rank; members allreduce, broadcast
   * from the last even rank (a job rank) and allgather in it; an odd rank is refused. */
  if (size >= 3) {
    int evens[8], count = 0;
    for (int r = 0; r < size; r += 2) evens[count++] = r;
    int id = -1;
    CHECK(hvd_add_process_set(evens, (size_t)count, &id) == 0 && id == 1, "adding the even ranks' set failed");
    int set_rank = -1, set_size = -1;
    CHECK(hvd_process_set_size(id, &set_size) == 0 && set_size == count, "process set size wrong");
    double mine = rank + 1;
    int64_t h = 0;
    if (rank % 2 == 0) {
      CHECK(hvd_process_set_rank(id, &set_rank) == 0 && set_rank == rank / 2, "process set rank wrong");
      CHECK(hvd_allreduce_async_in(id, "evens", &mine, &mine, 1, HVD_FLOAT64, HVD_SUM, &h) == 0, "set allreduce");
      CHECK(hvd_synchronize(h) == 0, "set allreduce failed");
      double want = 0;
      for (int k = 0; k < count; ++k) want += evens[k] + 1;
      CHECK(mine == want, "set allreduce wrong");
      int from = rank;
      CHECK(hvd_broadcast_async_in(id, "evens.b", &from, 1, HVD_INT32, evens[count - 1], &h) == 0, "set broadcast");
      CHECK(hvd_synchronize(h) == 0 && from == evens[count - 1], "set broadcast wrong");
      int me = rank;
      CHECK(hvd_allgather_async_in(id, "evens.g", &me, 1, HVD_INT32, &h) == 0, "set allgather");
      void* got = NULL;
      size_t got_bytes = 0;
      CHECK(hvd_synchronize_allgather(h, &got, &got_bytes, NULL) == 0 && got_bytes == count * sizeof(int),
            "set allgather failed");
      for (int k = 0; k < count; ++k) CHECK(((int*)got)[k] == evens[k], "set allgather order wrong");
      free(got);
    } else {
      CHECK(hvd_process_set_rank(id, &set_rank) != 0, "an odd rank has a rank in the even set");
      CHECK(hvd_allreduce_async_in(id, "evens", &mine, &mine, 1, HVD_FLOAT64, HVD_SUM, &h) != 0,
            "an odd rank's allreduce in the even set was taken");
      CHECK(strstr(hvd_last_error(), "is not in process set 1") != NULL, "the refusal's words");
    }
    CHECK(hvd_remove_process_set(id) == 0, "removing the set failed");
  }

  /* join: every rank but the last joins at once; the last one's sums then hold its value
   * alone, and it is the last to join on every rank. */
  int last_joined = -1;
  if (rank == size - 1) {
    long long mine = 1000 + rank;
    CHECK(hvd_allreduce(&mine, 1, HVD_INT64, HVD_SUM) == 0 && mine == 1000 + rank, "allreduce beside joined ranks wrong");
    long long low = rank;
    CHECK(hvd_allreduce(&low, 1, HVD_INT64, HVD_MIN) == 0 && low == rank, "min beside joined ranks wrong");
  }
  CHECK(hvd_join(&last_joined) == 0 && last_joined == size - 1, "join did not name the last rank");
  printf("c api ok on rank %d of %d\n", rank, size);
  free(all);
  free(sizes);
  free(gathered);
  hvd_shutdown();
  return 0;
}

// collectives/ring_collectives.h: bandwidth-optimal ring algorithms over Transport.
// Every call blocks until done; data belongs to the caller. Results are identical on every
// rank (the reduction order per element is the same on all ranks).
#pragma once

#include <cstddef>
#include <span>

#include "collectives/reduce.h"
#include "collectives/transport.h"

namespace hvd::collectives {

// The allreduces are in place; kAverage divides by size. allreduce.h chooses among them.
// Bandwidth-optimal: reduce-scatter then allgather, one chunk per rank (ring_schedule.h);
// reduce-scatter chunks are reduced as they arrive (exchange_reduce.h).
Status ringAllreduceLarge(Transport& t, void* data, size_t count, DataType type, ReduceOp op);

// The small-message algorithm: every rank's whole buffer goes round the ring (n-1 steps, not
// the bandwidth-optimal 2(n-1)), then each rank reduces the n buffers in rank order, so all
// ranks compute bit-identical results. n-1 times the traffic: worth it only while a ring
// step costs its latency rather than its bytes.
Status ringAllreduceSmall(Transport& t, void* data, size_t count, DataType type, ReduceOp op);

// The reduce-scatter phase of ringAllreduceLarge with a split of the caller's choosing:
// every rank's `data` (the sum of countsPerRank elements, the same counts on every rank)
// is reduced, and this rank's part, countsPerRank[rank] elements from the sum of the counts
// before it, lands in `out` (kAverage divides it by size). `data` is the call's scratch:
// it is left holding partial sums. Parts may be empty. Half an allreduce's traffic.
Status ringReduceScatterv(Transport& t, void* data, std::span<const size_t> countsPerRank, DataType type, ReduceOp op,
                          void* out);

// Every rank contributes `bytes`; `out` (size * bytes) receives all, in rank order.
Status ringAllgather(Transport& t, const void* mine, size_t bytes, void* out);

// Rank k contributes bytesPerRank[k] (size entries, the same on every rank); `out` (their
// sum) receives all blocks back to back in rank order. Blocks may be empty.
Status ringAllgatherv(Transport& t, const void* mine, std::span<const size_t> bytesPerRank, void* out);

// root's `bytes` reach every rank, passed along the ring, each rank between forwarding
// bytes as they arrive (Transport::relay).
Status ringBroadcast(Transport& t, void* data, size_t bytes, int root);

// Returns on every rank only once every rank has entered.
Status ringBarrier(Transport& t);

}  // namespace hvd::collectives

// hvd/hvd.h: the library ranks link. Started by hvdrun, init() joins the job through its
// rendezvous; started by mpirun or srun --mpi=pmix, through PMIx; alone, it is a world of
// one rank. Data moves over a ring (shared memory between neighbours on one host, TCP
// between hosts) or, with HOROVOD_CPU_OPERATIONS=mpi, through Open MPI.
// Every call blocks until done; data buffers stay the caller's. One thread at a time may
// call the collectives. Errors come back as a Status naming the peer rank and host; after
// a failure every later call fails fast with the same error.
#pragma once

#include <cstddef>
#include <vector>

#include "hvd/status.h"
#include "hvd/types.h"

namespace hvd {

// Joins the job described by hvdrun's environment (HVD_RANK, HVD_SIZE, ...,
// HVD_RENDEZVOUS_ADDR/PORT, HVD_SECRET_KEY), or by PMIx when a PMIx launcher started the
// rank; otherwise a world of one. Idempotent. Every variable it reads is listed in
// docs/environment.md. Timeout: HVD_TIMEOUT seconds (default 30) for joining and for every
// later call.
Status init();
void shutdown();
bool initialized();

int rank();
int size();
int localRank();
int localSize();
int crossRank();
int crossSize();
// What moves the data: "tcp" (hvd's ring) or "mpi" (HOROVOD_CPU_OPERATIONS=mpi); "" before init.
const char* operationsBackend();

Status allreduce(void* data, size_t count, DataType type, ReduceOp op);  // in place
Status allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op);
Status broadcast(void* data, size_t bytes, int root);
Status allgather(const void* mine, size_t bytes, void* out);  // out: size() * bytes, in rank order
// Variable sizes: rank k contributes bytesPerRank[k] (size() entries, equal on all ranks);
// out receives the blocks back to back in rank order.
Status allgatherv(const void* mine, const size_t* bytesPerRank, void* out);
// The same when ranks do not know each other's sizes: they are gathered first (one more,
// small allgather). Fills bytesPerRank when given.
Result<std::vector<std::byte>> allgatherv(const void* mine, size_t bytes, std::vector<size_t>* bytesPerRank = nullptr);
Status barrier();

// Preemption (hvdrun --signal, --requeue; docs/sbatch.md). True once this rank has been
// told the job is about to end: hvdrun created the file HVD_PREEMPT_FILE names, or the
// signal HVD_PREEMPT_SIGNAL names reached this process (init() installs a handler for it
// when the program has none, so the notice no longer kills the rank). Local and cheap (one
// stat() until true); ranks learn it at different steps.
bool preemptionRequested();
// Collective, like allreduce: true on every rank when any rank has seen preemption, so all
// ranks checkpoint at the same step. Call it at the same point in every rank.
Result<bool> preemptionAgreed();

}  // namespace hvd

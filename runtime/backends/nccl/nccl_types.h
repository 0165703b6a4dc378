// runtime/backends/nccl/nccl_types.h: hvd's element types and operations as NCCL's. Most
// hvd types have a native NCCL type (float16 and bfloat16 included) and every operation a
// native NCCL op (average is ncclAvg, NCCL >= 2.10), so nothing is converted or scaled.
// NCCL has no bool (reduced as uint8 with max or min, collectives/reduce.h logicalOf) and
// no 16-bit integers: int16 and uint16 reductions are refused, as Horovod refuses them
// with NCCL. Broadcasts and allgathers move bytes and take every type.
#pragma once

#include <nccl.h>

#include "hvd/status.h"
#include "hvd/types.h"

namespace hvd::backends::nccl {

ncclRedOp_t ncclOpOf(ReduceOp op);

// How NCCL reduces `type` with `op`; kInvalidUsage for the 16-bit integers.
struct NcclReduction {
  ncclDataType_t type;
  ncclRedOp_t op;
};
Result<NcclReduction> ncclReductionOf(DataType type, ReduceOp op);

}  // namespace hvd::backends::nccl

// runtime/backends/nccl/nccl_types.h: hvd's element types and operations as NCCL's. Every
// hvd type has a native NCCL type (float16 and bfloat16 included) and every operation a
// native NCCL op (average is ncclAvg, NCCL >= 2.10), so nothing is converted or scaled.
#pragma once

#include <nccl.h>

#include "hvd/types.h"

namespace hvd::backends::nccl {

ncclDataType_t ncclTypeOf(DataType type);
ncclRedOp_t ncclOpOf(ReduceOp op);

}  // namespace hvd::backends::nccl

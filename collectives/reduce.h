// collectives/reduce.h: element types, reduction operations and the kernels that apply
// them. Kernels are plain loops over contiguous arrays, written so the compiler
// vectorises them; float16 and bfloat16 are computed in float and rounded to nearest even.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hvd/types.h"

namespace hvd::collectives {

// The public enums themselves (hvd/types.h), so the API hands them down unconverted.
using hvd::DataType;
using hvd::ReduceOp;
using hvd::dataTypeName;
using hvd::dataTypeSize;
using hvd::isFloatingPoint;
using hvd::reduceOpName;

// Which operand comes first. min and max are not symmetric in their operands (-0 and +0,
// NaNs), nor is which NaN a sum keeps; algorithms that reduce on more than one rank use
// the same order everywhere so every rank ends up with the same bits.
enum class Operands { kTargetFirst, kSourceFirst };

// dst[i] = dst[i] op src[i] for i < count (kSourceFirst: src[i] op dst[i]). kAverage
// reduces as kSum; the caller divides once at the end with divideForAverage. Does not
// block; buffers stay the caller's.
void reduceInto(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
                Operands order = Operands::kTargetFirst);

// kBool's reduction as one on bytes of 0 and 1: kMax ("any") for sum and max, kMin ("all")
// for min and product. Backends without a boolean type (NCCL, MPI) reduce bool as uint8 so.
ReduceOp logicalOf(ReduceOp op);

// data[i] /= divisor (integers: truncating division; kBool: never asked, see hvd/types.h).
void divideForAverage(void* data, size_t count, DataType type, int divisor);

// IEEE binary16 and bfloat16 conversions, round to nearest even.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bfloat16ToFloat(uint16_t b);
uint16_t floatToBfloat16(float f);

}  // namespace hvd::collectives

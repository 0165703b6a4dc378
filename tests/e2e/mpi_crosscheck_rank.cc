// tests/e2e/mpi_crosscheck_rank.cc: the same allreduces through hvd and through Open MPI's
// MPI_Allreduce in one job (started by `hvdrun --mpi`), compared element by element, for
// every type MPI has and every operation. Prints "crosscheck ok <comparisons>" or the first
// difference. float16/bfloat16 have no MPI type; serial checks cover them elsewhere.
#define OMPI_SKIP_MPICXX 1  // the C API only: no Open MPI C++ bindings to link
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hvd/hvd.h"

using hvd::DataType;
using hvd::ReduceOp;

namespace {

// Small values, so that sums and products stay exact in every type (products: -1 and 1).
template <typename T>
T valueFor(int rank, size_t i, ReduceOp op) {
  if (op == ReduceOp::kProduct) return static_cast<T>(((rank + i) % 3 == 0) ? -1 : 1);
  long v = static_cast<long>((rank * 7 + static_cast<long>(i) * 13) % 11) - 5;
  if constexpr (std::is_unsigned_v<T>) v = v < 0 ? -v : v;
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v) + static_cast<T>(0.25);
  return static_cast<T>(v);
}

template <typename T>
bool compare(DataType type, MPI_Datatype mpiType, ReduceOp op, size_t count, long& comparisons) {
  int n = hvd::size(), r = hvd::rank();
  std::vector<T> ours(count), theirs(count);
  for (size_t i = 0; i < count; ++i) ours[i] = theirs[i] = valueFor<T>(r, i, op);
  MPI_Op mpiOp = op == ReduceOp::kMin ? MPI_MIN : op == ReduceOp::kMax ? MPI_MAX : op == ReduceOp::kProduct ? MPI_PROD : MPI_SUM;
  if (MPI_Allreduce(MPI_IN_PLACE, theirs.data(), static_cast<int>(count), mpiType, mpiOp, MPI_COMM_WORLD) != MPI_SUCCESS) {
    std::fprintf(stderr, "MPI_Allreduce failed\n");
    return false;
  }
  if (op == ReduceOp::kAverage) {
    for (T& v : theirs) {
      if constexpr (std::is_integral_v<T>) {
        v = static_cast<T>(static_cast<long long>(v) / n);  // the runtime's documented truncation
      } else {
        v = static_cast<T>(v / static_cast<T>(n));
      }
    }
  }
  if (auto s = hvd::allreduce(ours.data(), count, type, op); !s.isOk()) {
    std::fprintf(stderr, "hvd::allreduce failed: %s\n", s.message().c_str());
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    bool same = ours[i] == theirs[i];
    if constexpr (std::is_floating_point_v<T>) {
      same = std::fabs(static_cast<double>(ours[i]) - static_cast<double>(theirs[i])) <=
             1e-6 * std::max(1.0, std::fabs(static_cast<double>(theirs[i])));  // summation order differs
    }
    if (!same) {
      std::fprintf(stderr, "%s %s count %zu element %zu: hvd %g, MPI %g\n", std::string(hvd::dataTypeName(type)).c_str(),
                   op == ReduceOp::kSum ? "sum" : op == ReduceOp::kAverage ? "average" : op == ReduceOp::kMin ? "min" : op == ReduceOp::kMax ? "max" : "product",
                   count, i, static_cast<double>(ours[i]), static_cast<double>(theirs[i]));
      return false;
    }
    ++comparisons;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (auto s = hvd::init(); !s.isOk()) {
    std::fprintf(stderr, "hvd::init failed: %s\n", s.message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int mpiRank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpiRank);
  if (mpiRank != hvd::rank()) {
    std::fprintf(stderr, "MPI rank %d is hvd rank %d\n", mpiRank, hvd::rank());
    return 1;
  }
  long comparisons = 0;
  bool ok = true;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1009}, size_t{(1 << 16) + 3}}) {
      ok = ok && compare<float>(DataType::kFloat32, MPI_FLOAT, op, count, comparisons);
      ok = ok && compare<double>(DataType::kFloat64, MPI_DOUBLE, op, count, comparisons);
      ok = ok && compare<int8_t>(DataType::kInt8, MPI_INT8_T, op, count, comparisons);
      ok = ok && compare<uint8_t>(DataType::kUInt8, MPI_UINT8_T, op, count, comparisons);
      ok = ok && compare<int32_t>(DataType::kInt32, MPI_INT32_T, op, count, comparisons);
      ok = ok && compare<int64_t>(DataType::kInt64, MPI_INT64_T, op, count, comparisons);
      ok = ok && compare<int16_t>(DataType::kInt16, MPI_INT16_T, op, count, comparisons);
      ok = ok && compare<uint16_t>(DataType::kUInt16, MPI_UINT16_T, op, count, comparisons);
    }
  }
  if (ok) std::printf("crosscheck ok %ld comparisons on rank %d\n", comparisons, hvd::rank());
  hvd::shutdown();
  MPI_Finalize();
  return ok ? 0 : 1;
}

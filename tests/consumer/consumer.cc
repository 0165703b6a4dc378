// tests/consumer/consumer.cc: uses only <hvd/hvd.h> from an installed hvd: a blocking and
// an async allreduce; prints "consumer ok R of N".
#include <hvd/hvd.h>

#include <cstdio>

int main() {
  if (!hvd::init().isOk()) return 1;
  double x = hvd::rank() + 1.0;
  if (!hvd::allreduce(&x, 1, hvd::DataType::kFloat64, hvd::ReduceOp::kSum).isOk()) return 2;
  float y = 1.0f;
  auto h = hvd::allreduceAsync("y", &y, &y, 1, hvd::DataType::kFloat32, hvd::ReduceOp::kSum);
  if (!h || !hvd::synchronize(*h).isOk()) return 3;
  int n = hvd::size();
  if (x != n * (n + 1) / 2.0 || y != static_cast<float>(n)) return 4;
  std::printf("consumer ok %d of %d\n", hvd::rank(), n);
  hvd::shutdown();
  return 0;
}

// examples/hello_ranks.cc: the smallest hvdrun program. Each rank reads the identity the
// launcher gave it and reports it; rank 0 also checks that every rank agrees on the size.
// Run: hvdrun -np 4 ./hello_ranks
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

namespace {

int envInt(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    std::fprintf(stderr, "hello_ranks: %s is not set: start me with hvdrun\n", name);
    std::exit(2);
  }
  return std::atoi(value);
}

}  // namespace

int main() {
  int rank = envInt("HVD_RANK");
  int size = envInt("HVD_SIZE");
  int localRank = envInt("HVD_LOCAL_RANK");
  int localSize = envInt("HVD_LOCAL_SIZE");
  char host[HOST_NAME_MAX + 1] = {};
  ::gethostname(host, sizeof host);
  const char* gpus = std::getenv("CUDA_VISIBLE_DEVICES");
  std::printf("rank %d of %d (local %d of %d) on %s, pid %d, CUDA_VISIBLE_DEVICES=%s\n", rank, size, localRank,
              localSize, host, static_cast<int>(::getpid()), gpus != nullptr ? gpus : "(unset)");
  return rank < size && localRank < localSize ? 0 : 1;
}

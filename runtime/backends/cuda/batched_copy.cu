// runtime/backends/cuda/batched_copy.cu: the one kernel hvd has. nvcc turns it into PTX at
// build time (runtime/backends/cuda/CMakeLists.txt), embedded in the library and compiled
// by the driver when first needed, so ranks still need nothing from the toolkit. It copies
// many small buffers in one launch: a fusion packs each tensor into the fusion buffer and
// back, and a copy call per tensor cost ~4 us each (512 copies: 2.1 ms on an H200).
// Block b copies descriptor b (grid-stride over the descriptors), its threads striding over
// the bytes, 16 at a time where both ends are 16-byte aligned. Layout as in gpu_device.cc.
struct HvdCopy {
  const unsigned char* src;
  unsigned char* dst;
  unsigned long long bytes;
};

extern "C" __global__ void hvd_batched_copy(const HvdCopy* copies, int count) {
  for (int c = blockIdx.x; c < count; c += gridDim.x) {
    const HvdCopy k = copies[c];
    const bool wide = ((reinterpret_cast<unsigned long long>(k.src) | reinterpret_cast<unsigned long long>(k.dst)) & 15) == 0;
    const unsigned long long vectors = wide ? k.bytes / 16 : 0;
    const uint4* from = reinterpret_cast<const uint4*>(k.src);
    uint4* to = reinterpret_cast<uint4*>(k.dst);
    for (unsigned long long i = threadIdx.x; i < vectors; i += blockDim.x) to[i] = from[i];
    for (unsigned long long i = vectors * 16 + threadIdx.x; i < k.bytes; i += blockDim.x) k.dst[i] = k.src[i];
  }
}

// runtime/backends/gather_bytes.h: every rank's bytes of different lengths over any
// backend: two allgathers, the lengths then the bytes. For the rare exchanges that carry
// more than a fixed-size message (negotiation's full requests, the start-up GPU reports);
// never on a hot path. Collective; blocks like the backend's allgatherv.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/backends/collective_backend.h"

namespace hvd::backends {

inline Status gatherBytes(CollectiveBackend& backend, int size, std::vector<std::byte> mine,
                          std::vector<std::vector<std::byte>>& perRank) {
  std::vector<std::uint64_t> lengths(static_cast<size_t>(size));
  std::uint64_t own = mine.size();
  std::vector<size_t> eight(static_cast<size_t>(size), sizeof own);
  HVD_RETURN_IF_ERROR(backend.allgatherv(TensorRef{&own, sizeof own, DataType::kUInt8, Device::kCpu}, eight, lengths.data()));
  std::vector<size_t> bytesPerRank(lengths.begin(), lengths.end());
  size_t total = 0;
  for (size_t b : bytesPerRank) total += b;
  std::vector<std::byte> all(total);
  HVD_RETURN_IF_ERROR(backend.allgatherv(TensorRef{mine.data(), mine.size(), DataType::kUInt8, Device::kCpu},
                                         bytesPerRank, all.data()));
  perRank.clear();
  size_t at = 0;
  for (size_t b : bytesPerRank) {
    perRank.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + b));
    at += b;
  }
  return Status::ok();
}

}  // namespace hvd::backends

// runtime/backends/tcp/host_allreduce.cc
#include "runtime/backends/tcp/host_allreduce.h"

namespace hvd::backends::tcp {

Status hostAllreduce(HostArena& arena, TcpTransport& t, std::span<std::byte> data,
                     const collectives::Combine& combine) {
  // A failed call leaves the arena's count off by the ranks that never came: nothing may
  // count in after one.
  HVD_RETURN_IF_ERROR(t.health());
  if (data.size() > arena.capacity()) {
    return Status(Errc::kInternal, "a buffer of " + std::to_string(data.size()) + " bytes for a host arena of " +
                                       std::to_string(arena.capacity()));
  }
  arena.arrive(data);
  HVD_RETURN_IF_ERROR(t.waitShared({[&] { return arena.complete(); }, [&] { return arena.maySleep(); },
                                    [&] { arena.awake(); }, [&] { return arena.late(); }}));
  arena.reduce(data, combine);
  arena.finish();
  return Status::ok();
}

}  // namespace hvd::backends::tcp

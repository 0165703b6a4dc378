// runtime/backends/launcher_job.h: joining a job that another launcher started (Open MPI's
// mpirun, srun --mpi=pmix) without hvdrun. Both speak PMIx to their ranks, so PMIx tells a
// rank who it is, and a PMIx exchange carries the ring addresses hvdrun's rendezvous
// would otherwise carry.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/common/store.h"

namespace hvd::backends {

// Only rank and size: launchers disagree on what a node id is (mpirun numbers its own host
// too), so the runtime works out hosts, local and cross ranks from exchanged host names.
struct LauncherJob {
  int rank = 0, size = 1;
  std::string launcher;          // for messages: "PMIx (namespace ...)"
  std::unique_ptr<Store> store;  // set() publishes; get() of "<name>/<rank>" reads what that rank set
  // Holds the launcher connection; releasing the last copy says goodbye (PMIx_Finalize),
  // which mpirun requires before a rank exits. Keep it as long as the communicator.
  std::shared_ptr<void> session;
};

// Blocks for PMIx_Init and queries (a local round trip to the launcher's daemon).
// kUnavailable when PMIx is not compiled in, its library does not load, or no PMIx server
// is reachable; other errors name the PMIx call that failed.
Result<LauncherJob> joinLauncherJob(std::chrono::milliseconds timeout);  // in hvd_backends (factory_registry.cc)

// Whether this process was started by a PMIx launcher (PMIX_RANK and PMIX_NAMESPACE set).
bool startedByPmixLauncher();

}  // namespace hvd::backends

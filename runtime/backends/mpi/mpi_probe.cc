// runtime/backends/mpi/mpi_probe.cc: is Open MPI's library loadable now, and which one.
// libmpi is dlopened rather than linked so that hvdrun starts (and says why MPI is
// missing) on a machine where the build found Open MPI but the run does not.
#include <mpi.h>

#include <string>

#include "runtime/backends/backend_probe.h"
#include "runtime/common/dynamic_library.h"

namespace hvd::backends::mpi {
namespace {

std::string buildVersion() {
#ifdef OMPI_MAJOR_VERSION
  return "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION) +
         "." + std::to_string(OMPI_RELEASE_VERSION);
#else
  return "MPI " + std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION);
#endif
}

}  // namespace

BackendProbe probe() {
  BackendProbe result;
  result.buildVersion = buildVersion();
  auto lib = DynamicLibrary::open({"libmpi.so.40", "libmpi.so", HVD_MPI_LIBRARY});
  if (!lib) {
    result.reason = "the MPI library cannot be loaded (" + lib.status().message() + ")";
    return result;
  }
  // MPI-3 allows MPI_Get_library_version before MPI_Init.
  using GetVersionFn = int (*)(char*, int*);
  auto getVersion = lib->function<GetVersionFn>("MPI_Get_library_version");
  if (getVersion == nullptr) {
    result.reason = lib->path() + " lacks MPI_Get_library_version (not an MPI-3 library)";
    return result;
  }
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (getVersion(text, &length) != MPI_SUCCESS) {
    result.reason = "MPI_Get_library_version failed in " + lib->path();
    return result;
  }
  std::string version(text, static_cast<size_t>(length > 0 ? length : 0));
  // The full string runs over several lines (package, date); the first names the version.
  if (auto cut = version.find_first_of(",\n"); cut != std::string::npos) version.resize(cut);
  result.runVersion = version;
  result.usable = true;
  return result;
}

}  // namespace hvd::backends::mpi

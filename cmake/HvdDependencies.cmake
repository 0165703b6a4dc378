# Every third-party dependency is found here, and only here.
# Required: CLI11, fmt, toml++, OpenSSL's libcrypto, nlohmann/json (and Catch2 when
# testing). Optional backends (MPI, PMIx, CUDA, NCCL) take HVD_WITH_<X> = AUTO | ON | OFF:
# AUTO builds the backend when its dependency is found, ON fails configure when it is
# missing, OFF never builds it.
# HVD_BACKENDS lists what is compiled in; runtime/backends turns it into the registry.

find_package(PkgConfig REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(tomlplusplus QUIET)
if(NOT tomlplusplus_FOUND)
  pkg_check_modules(TOMLPLUSPLUS REQUIRED IMPORTED_TARGET tomlplusplus)
  add_library(tomlplusplus::tomlplusplus ALIAS PkgConfig::TOMLPLUSPLUS)
endif()
if(BUILD_TESTING OR NOT DEFINED BUILD_TESTING)
  find_package(Catch2 2 REQUIRED)
endif()
find_package(Threads REQUIRED)
# HMAC-SHA-256 for the rendezvous and transport handshakes (runtime/common/hmac.cc).
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# The JSON reader (runtime/common/json.cc; header-only).
find_package(nlohmann_json 3 REQUIRED)
# Only a peer in bench/json_bench.cc, when installed.
find_package(simdjson QUIET)

set(HVD_BACKENDS tcp)

# hvd_backend_option(X): declares HVD_WITH_X and checks its value.
macro(hvd_backend_option name)
  set(HVD_WITH_${name} AUTO CACHE STRING "Build the ${name} backend: AUTO, ON or OFF")
  set_property(CACHE HVD_WITH_${name} PROPERTY STRINGS AUTO ON OFF)
  if(NOT HVD_WITH_${name} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "HVD_WITH_${name}='${HVD_WITH_${name}}': use AUTO, ON or OFF")
  endif()
endmacro()

# hvd_backend_result(X found hint): records the outcome, failing when ON but not found.
macro(hvd_backend_result name found hint)
  string(TOLOWER ${name} _lower)
  if(${found})
    list(APPEND HVD_BACKENDS ${_lower})
    set(HVD_HAVE_${name} TRUE)
  else()
    set(HVD_HAVE_${name} FALSE)
    if(HVD_WITH_${name} STREQUAL "ON")
      message(FATAL_ERROR "HVD_WITH_${name}=ON but ${name} was not found. ${hint}")
    endif()
  endif()
endmacro()

# --- MPI (Open MPI) ---------------------------------------------------------------------
hvd_backend_option(MPI)
set(_found FALSE)
if(NOT HVD_WITH_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS C)
  set(_found ${MPI_C_FOUND})
endif()
hvd_backend_result(MPI _found "Install libopenmpi-dev openmpi-bin, or pass -DHVD_WITH_MPI=OFF.")

# --- PMIx -------------------------------------------------------------------------------
hvd_backend_option(PMIX)
set(_found FALSE)
if(NOT HVD_WITH_PMIX STREQUAL "OFF")
  pkg_check_modules(PMIX QUIET IMPORTED_TARGET pmix)
  set(_found ${PMIX_FOUND})
endif()
hvd_backend_result(PMIX _found "Install libpmix-dev, or pass -DHVD_WITH_PMIX=OFF.")

# --- CUDA toolkit -----------------------------------------------------------------------
hvd_backend_option(CUDA)
set(_found FALSE)
if(NOT HVD_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  set(_found ${CUDAToolkit_FOUND})
endif()
hvd_backend_result(CUDA _found "Put nvcc on PATH or set CUDAToolkit_ROOT, or pass -DHVD_WITH_CUDA=OFF.")

# --- NCCL (ships beside the CUDA toolkit on these machines) -----------------------------
hvd_backend_option(NCCL)
set(_found FALSE)
if(NOT HVD_WITH_NCCL STREQUAL "OFF" AND HVD_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(_found TRUE)
  endif()
endif()
hvd_backend_result(NCCL _found "NCCL needs the CUDA toolkit and nccl.h/libnccl beside it (or NCCL_INCLUDE_DIR/NCCL_LIBRARY), or pass -DHVD_WITH_NCCL=OFF.")

# Warnings and sanitizers for every target of the project (not for third-party code).
set(HVD_SANITIZE "" CACHE STRING "Sanitizers: empty, 'address' (ASan+UBSan) or 'thread' (TSan)")
set_property(CACHE HVD_SANITIZE PROPERTY STRINGS "" address thread)
option(HVD_WERROR "Treat warnings as errors" OFF)

add_library(hvd_warnings INTERFACE)
target_compile_options(hvd_warnings INTERFACE -Wall -Wextra -Wpedantic
  $<$<BOOL:${HVD_WERROR}>:-Werror>)

option(HVD_FUZZ "Build the libFuzzer targets (needs clang; implies ASan+UBSan instrumentation)" OFF)
if(HVD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "HVD_FUZZ=ON needs clang: configure with CC=clang CXX=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  set(HVD_SANITIZE address)
endif()

if(HVD_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(HVD_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT HVD_SANITIZE STREQUAL "")
  message(FATAL_ERROR "HVD_SANITIZE='${HVD_SANITIZE}': use '', 'address' or 'thread'")
endif()

# hvd_add_library(name SOURCES ...): a folder's target, with the project's warnings.
function(hvd_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE hvd_warnings)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

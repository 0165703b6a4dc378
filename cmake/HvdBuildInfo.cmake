# Run at build time: writes cli/build_info.h with the current git commit, touching the
# file only when its content changes so that an unchanged commit rebuilds nothing.
set(HVD_GIT_COMMIT "unknown")
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _commit)
    set(HVD_GIT_COMMIT ${_commit})
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE _dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_dirty)
      set(HVD_GIT_COMMIT "${HVD_GIT_COMMIT}-dirty")
    endif()
  endif()
endif()
configure_file(${SOURCE_DIR}/cli/build_info.h.in ${BINARY_DIR}/cli/build_info.h @ONLY)

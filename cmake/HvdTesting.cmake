# hvd_add_test(name source... LIBS lib...): a Catch2 test executable registered with CTest,
# one CTest entry per test case so a failure names the sentence that failed.
if(BUILD_TESTING)
  include(Catch)
  add_library(hvd_catch_main OBJECT ${PROJECT_SOURCE_DIR}/tests/support/catch_main.cc)
  target_link_libraries(hvd_catch_main PUBLIC Catch2::Catch2)
  target_include_directories(hvd_catch_main PRIVATE ${PROJECT_SOURCE_DIR})
endif()

function(hvd_add_test name)
  cmake_parse_arguments(ARG "" "" "LIBS;PROPERTIES" ${ARGN})
  # CTest runs each case by name; a name starting with '-' would be read as a Catch option.
  foreach(source IN LISTS ARG_UNPARSED_ARGUMENTS)
    file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/${source} dashed REGEX "TEST_CASE\\(\"-")
    # Looked at again whenever the file changes (a rename after configure slipped through once).
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${source})
    if(dashed)
      message(FATAL_ERROR "${source}: a test name starts with '-', which Catch reads as an option: ${dashed}")
    endif()
  endforeach()
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS} $<TARGET_OBJECTS:hvd_catch_main>)
  target_link_libraries(${name} PRIVATE Catch2::Catch2 hvd_warnings ${ARG_LIBS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  # 77: hvd::test::kSkipExitCode; a failing test exits 1 (tests/support/catch_main.cc).
  catch_discover_tests(${name} PROPERTIES ${ARG_PROPERTIES} SKIP_RETURN_CODE 77)
endfunction()

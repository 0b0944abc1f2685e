# Proves Ferry works as a package, in steps that ctest runs as four tests (the consumers in
# parallel once the install is done). Invoked as `cmake -P` with FERRY_SOURCE, FERRY_BUILD,
# WORK, GENERATOR and STEP:
#   install      install the library this build made (FERRY_BUILD) to ${WORK}/prefix
#   consumer     configure, build and run a project that uses find_package(ferry CONFIG REQUIRED)
#                and links ferry::ferry (the compiled kernels)
#   header_only  the same linking ferry::header-only (no library: FERRY_HEADER_ONLY)
#   subdir       add_subdirectory(<ferry source>) and ferry::ferry, built from source
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}")
  endif()
endfunction()
if(STEP STREQUAL "install")
  file(REMOVE_RECURSE "${WORK}")
  run("${CMAKE_COMMAND}" --install "${FERRY_BUILD}" --prefix "${WORK}/prefix")
  file(GLOB config "${WORK}/prefix/lib*/cmake/ferry/ferryConfig.cmake")
  file(GLOB lib "${WORK}/prefix/lib*/libferry.a")
  if(NOT config OR NOT lib)
    message(FATAL_ERROR "libferry.a and lib/cmake/ferry/ferryConfig.cmake were not installed")
  endif()
  message(STATUS "installed to ${WORK}/prefix")
elseif(STEP STREQUAL "consumer" OR STEP STREQUAL "header_only" OR STEP STREQUAL "subdir")
  file(REMOVE_RECURSE "${WORK}/${STEP}")
  run("${CMAKE_COMMAND}" -S "${FERRY_SOURCE}/tests/package/${STEP}" -B "${WORK}/${STEP}"
      -G "${GENERATOR}" -DCMAKE_PREFIX_PATH=${WORK}/prefix -DFERRY_SOURCE=${FERRY_SOURCE}
      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0)
  run("${CMAKE_COMMAND}" --build "${WORK}/${STEP}" --parallel 2)
  run("${WORK}/${STEP}/consumer")
  message(STATUS "${STEP} consumer built and ran")
else()
  message(FATAL_ERROR "STEP must be install, consumer, header_only or subdir, got '${STEP}'")
endif()

# Proves Ferry works as a package, in steps that ctest runs as three tests (the two consumers
# in parallel once the install is done). Invoked as `cmake -P` with FERRY_SOURCE, WORK,
# GENERATOR and STEP:
#   install   install Ferry to ${WORK}/prefix (FERRY_BUILD_TESTS/EXAMPLES off)
#   consumer  configure, build and run a project that uses find_package(ferry CONFIG REQUIRED)
#   subdir    the same with add_subdirectory(<ferry source>)
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}")
  endif()
endfunction()
if(STEP STREQUAL "install")
  file(REMOVE_RECURSE "${WORK}")
  run("${CMAKE_COMMAND}" -S "${FERRY_SOURCE}" -B "${WORK}/ferry-build" -G "${GENERATOR}"
      -DFERRY_BUILD_TESTS=OFF -DFERRY_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
  run("${CMAKE_COMMAND}" --install "${WORK}/ferry-build")
  if(NOT EXISTS "${WORK}/prefix/share/cmake/ferry/ferryConfig.cmake")
    message(FATAL_ERROR "ferryConfig.cmake was not installed under share/cmake/ferry")
  endif()
  message(STATUS "installed to ${WORK}/prefix")
elseif(STEP STREQUAL "consumer" OR STEP STREQUAL "subdir")
  file(REMOVE_RECURSE "${WORK}/${STEP}")
  run("${CMAKE_COMMAND}" -S "${FERRY_SOURCE}/tests/package/${STEP}" -B "${WORK}/${STEP}"
      -G "${GENERATOR}" -DCMAKE_PREFIX_PATH=${WORK}/prefix -DFERRY_SOURCE=${FERRY_SOURCE}
      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0)
  run("${CMAKE_COMMAND}" --build "${WORK}/${STEP}")
  run("${WORK}/${STEP}/consumer")
  message(STATUS "${STEP} consumer built and ran")
else()
  message(FATAL_ERROR "STEP must be install, consumer or subdir, got '${STEP}'")
endif()

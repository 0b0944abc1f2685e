# Proves Ferry works as a package: install it to a prefix, then configure, build and run a
# separate consumer project with find_package(ferry CONFIG REQUIRED), and another that uses
# add_subdirectory. Invoked by ctest as `cmake -P` with FERRY_SOURCE, WORK and GENERATOR.
file(REMOVE_RECURSE "${WORK}")
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}")
  endif()
endfunction()
run("${CMAKE_COMMAND}" -S "${FERRY_SOURCE}" -B "${WORK}/ferry-build" -G "${GENERATOR}"
    -DFERRY_BUILD_TESTS=OFF -DFERRY_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX=${WORK}/prefix)
run("${CMAKE_COMMAND}" --install "${WORK}/ferry-build")
if(NOT EXISTS "${WORK}/prefix/share/cmake/ferry/ferryConfig.cmake")
  message(FATAL_ERROR "ferryConfig.cmake was not installed under share/cmake/ferry")
endif()
foreach(kind consumer subdir)
  run("${CMAKE_COMMAND}" -S "${FERRY_SOURCE}/tests/package/${kind}" -B "${WORK}/${kind}"
      -G "${GENERATOR}" -DCMAKE_PREFIX_PATH=${WORK}/prefix -DFERRY_SOURCE=${FERRY_SOURCE}
      -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0)
  run("${CMAKE_COMMAND}" --build "${WORK}/${kind}")
  run("${WORK}/${kind}/consumer")
endforeach()
message(STATUS "find_package and add_subdirectory consumers built and ran")

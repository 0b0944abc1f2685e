# The libFuzzer targets over the library target `ferry` of the including build (clang only).
# Included by fuzz/CMakeLists.txt (a standalone tree: scripts/fuzz) and, with FERRY_BUILD_FUZZ,
# by Ferry's own CMakeLists.txt (the asan preset: CI builds the sanitized library once for the
# ASan tests and the fuzzers).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "the fuzz targets need clang (libFuzzer): configure with CXX=clang++-14")
endif()

# -gline-tables-only instead of -g: symbolised stack traces at a fraction of the compile time
# (Eigen's templates make full debug info the slowest part of the build).
set(FERRY_FUZZ_FLAGS -O1 -gline-tables-only -fno-omit-frame-pointer -fno-sanitize-recover=all)

# EigenCpu's kernels compile once, into the library, with the fuzzer's coverage instrumentation
# (fuzzer-no-link: coverage without libFuzzer's main; a test binary linked to the same library
# gets the sanitizer runtime's no-op coverage hooks) and the sanitizers, and both targets link it.
target_compile_options(ferry PRIVATE -fsanitize=fuzzer-no-link)
if(NOT FERRY_SANITIZE MATCHES "address")
  target_compile_options(ferry PRIVATE ${FERRY_FUZZ_FLAGS} -fsanitize=address,undefined)
endif()

foreach(target IN ITEMS fuzz_parts fuzz_ops)
  add_executable(${target} "${CMAKE_CURRENT_LIST_DIR}/${target}.cpp")
  target_link_libraries(${target} PRIVATE ferry::ferry)
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_compile_options(${target} PRIVATE ${FERRY_FUZZ_FLAGS} -fsanitize=fuzzer,address,undefined)
  target_link_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
endforeach()

# Both targets in one: `cmake --build --target fuzz_parts fuzz_ops` would build one after the
# other (the Makefile generator's top level is .NOTPARALLEL); scripts/fuzz builds this.
add_custom_target(fuzz_targets)
add_dependencies(fuzz_targets fuzz_parts fuzz_ops)

// Ferry: the compiled parallel loop of detail/parallel.hpp, over oneTBB. Compiled once by
// src/parallel.cpp, or included inline by detail/parallel.hpp with FERRY_HEADER_ONLY.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

#include "ferry/config.hpp"
#include "ferry/detail/parallel.hpp"

#ifndef FERRY_SERIAL_KERNELS
#  include <oneapi/tbb/blocked_range.h>
#  include <oneapi/tbb/parallel_for.h>
#  include <oneapi/tbb/task_arena.h>
#endif

namespace ferry::detail {

FERRY_FUNC std::int64_t concurrency() noexcept {
#ifdef FERRY_SERIAL_KERNELS
  return 1;
#else
  return oneapi::tbb::this_task_arena::max_concurrency();
#endif
}

FERRY_FUNC void parallel_for_range(std::int64_t begin, std::int64_t end, std::int64_t grain,
                                   RangeFn f) {
#ifdef FERRY_SERIAL_KERNELS
  (void)grain;
  f(begin, end);
#else
  oneapi::tbb::parallel_for(
      oneapi::tbb::blocked_range<std::int64_t>(begin, end, grain),
      [&](const oneapi::tbb::blocked_range<std::int64_t>& r) { f(r.begin(), r.end()); });
#endif
}

}  // namespace ferry::detail

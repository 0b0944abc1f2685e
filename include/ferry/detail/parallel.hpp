// Ferry: parallel_for, the one place kernels reach for threads.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#ifndef FERRY_SERIAL_KERNELS
#  include <oneapi/tbb/blocked_range.h>
#  include <oneapi/tbb/parallel_for.h>
#  include <oneapi/tbb/task_arena.h>
#endif

namespace ferry::detail {

/// @brief Runs `f(lo, hi)` over [begin, end) split into chunks of about `grain` indices.
///
/// @code
///   ferry::detail::parallel_for(0, n, 32768, [&](std::int64_t lo, std::int64_t hi) {
///     for (auto i = lo; i < hi; ++i) out[i] = a[i] + b[i];
///   });
/// @endcode
/// Runs serially (one call `f(begin, end)`) when the range fits in one grain, or always when
/// `FERRY_SERIAL_KERNELS` is defined: the ThreadSanitizer build defines it because Debian's
/// libtbb is not TSan-instrumented. Otherwise it is `tbb::parallel_for` on a blocked_range, so
/// it runs inside whatever `tbb::task_arena` the caller is in (the router gives each device
/// its own arena). Chunks must write disjoint outputs; an exception thrown by `f` reaches the
/// caller, but kernels check their inputs before they start so that none is thrown mid-way.
/// Threads parallel_for may use from here: the current task_arena's concurrency (1 in the
/// serial build). Kernels that pay a fixed cost per chunk (a GEMM packs its right operand)
/// size their chunks with it.
inline std::int64_t concurrency() noexcept {
#ifdef FERRY_SERIAL_KERNELS
  return 1;
#else
  return oneapi::tbb::this_task_arena::max_concurrency();
#endif
}

template <class F>
void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain, F&& f) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
#ifdef FERRY_SERIAL_KERNELS
  f(begin, end);
#else
  if (end - begin <= grain) {
    f(begin, end);
    return;
  }
  oneapi::tbb::parallel_for(
      oneapi::tbb::blocked_range<std::int64_t>(begin, end, grain),
      [&](const oneapi::tbb::blocked_range<std::int64_t>& r) { f(r.begin(), r.end()); });
#endif
}

}  // namespace ferry::detail

// Ferry: parallel_for, the one place kernels reach for threads.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include "ferry/config.hpp"

namespace ferry::detail {

/// A non-owning reference to a callable `void(std::int64_t lo, std::int64_t hi)`: what the
/// compiled parallel loop takes, so that a kernel's lambda costs one small thunk, not one more
/// instantiation of oneTBB's parallel_for machinery (which cost a kernel file seconds per dtype).
class RangeFn {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, RangeFn>)
  RangeFn(F& f) noexcept  // NOLINT(google-explicit-constructor): a view of f
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, std::int64_t lo, std::int64_t hi) { (*static_cast<F*>(o))(lo, hi); }) {}
  void operator()(std::int64_t lo, std::int64_t hi) const { call_(obj_, lo, hi); }

 private:
  void* obj_;
  void (*call_)(void*, std::int64_t, std::int64_t);
};

/// Threads parallel_for may use from here: the current task_arena's concurrency (1 in the
/// serial build). Kernels that pay a fixed cost per chunk (a GEMM packs its right operand)
/// size their chunks with it.
FERRY_FUNC std::int64_t concurrency() noexcept;

/// `tbb::parallel_for` on a blocked_range of [begin, end) with `grain` (serial with
/// FERRY_SERIAL_KERNELS); defined in detail/impl/parallel.hpp, compiled once.
FERRY_FUNC void parallel_for_range(std::int64_t begin, std::int64_t end, std::int64_t grain,
                                   RangeFn f);

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
template <class F>
void parallel_for(std::int64_t begin, std::int64_t end, std::int64_t grain, F&& f) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  if (end - begin <= grain) {
    f(begin, end);
    return;
  }
  parallel_for_range(begin, end, grain, RangeFn(f));
}

}  // namespace ferry::detail

#ifdef FERRY_HEADER_ONLY
#  include "ferry/detail/impl/parallel.hpp"
#endif

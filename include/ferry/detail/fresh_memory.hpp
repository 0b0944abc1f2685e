// Ferry: fresh memory made ready for its first write (huge pages, its faults taken in parallel).
// SPDX-License-Identifier: MIT
#pragma once

#if defined(__linux__)
#  include <sys/mman.h>
#endif

#include <cstddef>
#include <cstdint>

#include "ferry/detail/parallel.hpp"

namespace ferry::detail {

/// Fresh memory of 4 MiB or more from the allocator, about to be written whole: asks Linux for
/// transparent huge pages over its 2 MiB-aligned middle, then faults that middle in from every
/// thread of the caller's task_arena (MADV_POPULATE_WRITE, Linux 5.14+), before anything writes
/// it. Both are advice: a kernel that refuses either changes nothing, and the first write
/// faults the pages in as before.
///
/// Why (issue #33, measured on this project's 2-core VMs): a new tensor's first write faults
/// its pages in. With 4 KiB pages 64 MiB took ~180 ms (16384 faults), with huge pages 5 ms on
/// memory the VM's host has backed; but memory a process frees goes back to the host within
/// seconds, and faulting 64 MiB the host must back again costs 115-150 ms on one thread and
/// 58-82 ms on two: the host backs pages for each virtual CPU at once. One thread (a vector's
/// zero fill, a serial kernel) used to take every fault.
inline void prepare_fresh([[maybe_unused]] void* p, [[maybe_unused]] std::size_t n) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  if (p == nullptr || n < 2 * kHuge) return;
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = (b + kHuge - 1) & ~(kHuge - 1), hi = (b + n) & ~(kHuge - 1);
  if (hi <= lo) return;
  (void)::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#  if defined(MADV_POPULATE_WRITE)
  const auto pages = static_cast<std::int64_t>((hi - lo) / kHuge);
  try {
    parallel_for(0, pages, 2, [lo](std::int64_t i, std::int64_t e) {
      (void)::madvise(reinterpret_cast<void*>(lo + static_cast<std::uintptr_t>(i) * kHuge),
                      static_cast<std::size_t>(e - i) * kHuge, MADV_POPULATE_WRITE);
    });
  } catch (...) {  // the pool could not take the task: the first write faults the pages instead
  }
#  endif
#endif
}

}  // namespace ferry::detail

// Ferry: DeviceArena and CopyArena (detail/arena.hpp) over oneTBB. Compiled once by
// src/runtime.cpp, or included inline by detail/arena.hpp with FERRY_HEADER_ONLY.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ferry/config.hpp"
#include "ferry/detail/arena.hpp"
#include "ferry/detail/parallel.hpp"

#ifndef FERRY_SERIAL_KERNELS
#  include <oneapi/tbb/task_arena.h>
#endif

namespace ferry::detail {

#ifndef FERRY_SERIAL_KERNELS
struct DeviceArena::Impl {
  explicit Impl(int threads) : arena(threads) {}
  oneapi::tbb::task_arena arena;
};
struct CopyArena::Impl {
  oneapi::tbb::task_arena arena;  // initialised on first use (thread-safe in oneTBB)
};
#else
struct DeviceArena::Impl {
  explicit Impl(int) {}
};
struct CopyArena::Impl {};
#endif

FERRY_FUNC DeviceArena::DeviceArena(int threads) : impl_(std::make_unique<Impl>(threads)) {}
FERRY_FUNC DeviceArena::~DeviceArena() = default;
FERRY_FUNC void DeviceArena::run(void (*fn)(void*), void* ctx) {
#ifndef FERRY_SERIAL_KERNELS
  impl_->arena.execute([&] { fn(ctx); });
#else
  fn(ctx);
#endif
}

FERRY_FUNC CopyArena::CopyArena() : impl_(std::make_unique<Impl>()) {}
FERRY_FUNC CopyArena::~CopyArena() = default;
FERRY_FUNC void CopyArena::copy(std::byte* dst, const std::byte* src, std::size_t n) {
  if (n == 0) return;
#ifndef FERRY_SERIAL_KERNELS
  if (n >= kParallelBytes) {
    const auto chunks = static_cast<std::int64_t>((n + kChunkBytes - 1) / kChunkBytes);
    impl_->arena.execute([&] {
      parallel_for(0, chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
        const std::size_t b = static_cast<std::size_t>(lo) * kChunkBytes;
        const std::size_t e = std::min(n, static_cast<std::size_t>(hi) * kChunkBytes);
        std::memcpy(dst + b, src + b, e - b);
      });
    });
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

}  // namespace ferry::detail

// Ferry: the two oneTBB arenas the runtime holds — a device's (DeviceArena) and the one large
// copies use (CopyArena) — behind small classes, so that no user file parses oneTBB's headers.
// Defined in detail/impl/arena.hpp (compiled once, or inline with FERRY_HEADER_ONLY).
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "ferry/config.hpp"

namespace ferry::detail {

/// @brief The oneTBB task_arena a device's worker runs its kernels in (`threads` threads), so
/// that kernels for different devices do not steal each other's threads.
///
/// @code
///   DeviceArena a(2);
///   a.execute([&] { run_batch(batch); });   // parallel_for inside uses at most 2 threads
/// @endcode
/// Under FERRY_SERIAL_KERNELS (the ThreadSanitizer build) there is no arena: execute() calls f.
class DeviceArena {
 public:
  explicit DeviceArena(int threads);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  /// Runs `f()` inside the arena and returns when it has; exceptions reach the caller.
  template <class F>
  void execute(F&& f) {
    run([](void* ctx) { (*static_cast<std::remove_reference_t<F>*>(ctx))(); },
        static_cast<void*>(std::addressof(f)));
  }

 private:
  void run(void (*fn)(void*), void* ctx);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// @brief Copies large buffers over every hardware thread, whatever arena the caller is in.
///
/// A transfer runs on its source device's worker, whose arena may have one thread (two
/// devices on two cores get one each), and one core copies an L3-resident buffer at about half
/// the speed two do. A CopyArena is a task_arena of its own, of the machine's default
/// concurrency, entered only for a copy of at least `kParallelBytes`; smaller copies, and every
/// copy under `FERRY_SERIAL_KERNELS`, are one memcpy. Thread-safe; not copyable.
class CopyArena {
 public:
  static constexpr std::size_t kParallelBytes = std::size_t{1} << 20;
  static constexpr std::size_t kChunkBytes = std::size_t{256} << 10;

  CopyArena();
  ~CopyArena();
  CopyArena(const CopyArena&) = delete;
  CopyArena& operator=(const CopyArena&) = delete;

  /// memcpy(dst, src, n), split into chunks of about kChunkBytes when n is large.
  void copy(std::byte* dst, const std::byte* src, std::size_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::detail

#ifdef FERRY_HEADER_ONLY
#  include "ferry/detail/impl/arena.hpp"
#endif

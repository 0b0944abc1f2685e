// Ferry: EigenCpu's device, buffer (64-byte aligned, accounted per device) and tensor handle.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <ostream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ferry/detail/arena.hpp"
#include "ferry/detail/checked.hpp"
#include "ferry/detail/fresh_memory.hpp"
#include "ferry/detail/text.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/shape.hpp"

namespace ferry {

/// One logical CPU device of an EigenCpu backend; printed as `cpu:<index>`.
struct CpuDevice {
  int index = 0;
  friend bool operator==(CpuDevice, CpuDevice) = default;
};

inline std::ostream& operator<<(std::ostream& os, CpuDevice d) { return os << "cpu:" << d.index; }

namespace detail::cpu {

/// @brief Freed memory of one device, kept for reuse: aligned blocks (CpuBuffer) and byte
/// vectors (the parts of quantized tensors).
///
/// A model's ops allocate the same sizes again and again; fresh large allocations come from
/// the OS as untouched pages, so every first write page-faults, and a quantize or a transfer
/// then runs at a fraction of memcpy speed. Blocks are rounded up to size classes (64 bytes up
/// to 256 bytes, then eight classes per power of two: at most 12.5% slack) and kept per class
/// up to `limit` bytes in all; past that a freed block goes back to the allocator at once.
/// `release()` empties the cache. Thread-safe: tensors are freed on any thread.
///
/// **Poison mode** (`set_poison(true)`, or the environment variable FERRY_POISON_MEMORY=1 when
/// the backend is made): every block and sized vector handed out, fresh or recycled, is first
/// filled with 0xFF bytes: NaN in every float type, -1 in signed and the maximum in unsigned
/// ints, an invalid bool. A kernel that reads an output element it did not write then returns
/// those instead of zeros (fresh pages) or an earlier tensor's values (recycled ones), so the
/// test suite run in this mode (CI does) finds it. It costs a memset per allocation.
class MemoryCache {
 public:
  /// The byte poison mode fills handed-out memory with.
  static constexpr unsigned char kPoison = 0xFF;

  explicit MemoryCache(std::size_t limit = 0) : limit_(limit) {}
  MemoryCache(const MemoryCache&) = delete;
  MemoryCache& operator=(const MemoryCache&) = delete;
  ~MemoryCache() { release(); }

  /// The class a request of `n` bytes is served from (>= n).
  [[nodiscard]] static std::size_t size_class(std::size_t n) noexcept {
    if (n <= 256) return (n + 63) / 64 * 64;
    const std::size_t step = std::bit_floor(n) / 8;
    return (n + step - 1) / step * step;
  }
  /// The largest class <= `c` (a buffer of capacity c can serve it); 0 when c < 64.
  [[nodiscard]] static std::size_t floor_class(std::size_t c) noexcept {
    if (c <= 256) return c / 64 * 64;
    const std::size_t step = std::bit_floor(c) / 8;
    return c / step * step;
  }

  /// A block of exactly `cls` bytes (a size_class), kBlockAlign-aligned; recycled when one
  /// is cached.
  [[nodiscard]] std::byte* take_block(std::size_t cls) {
    if (cls == 0) return nullptr;
    std::byte* p = nullptr;
    {
      std::lock_guard lk(mu_);
      if (auto it = blocks_.find(cls); it != blocks_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        cached_ -= cls;
      }
    }
    if (p == nullptr) {
      p = static_cast<std::byte*>(::operator new (cls, std::align_val_t{kBlockAlign}));
      detail::prepare_fresh(p, cls);
    }
    if (poison()) std::memset(p, kPoison, cls);
    return p;
  }
  /// Keeps `p` (from take_block with the same `cls`) for reuse, or frees it.
  void give_block(std::byte* p, std::size_t cls) noexcept {
    if (p == nullptr) return;
    {
      std::lock_guard lk(mu_);
      if (cached_ + cls <= limit_) {
        try {
          blocks_[cls].push_back(p);
          cached_ += cls;
          return;
        } catch (...) {  // no memory for the list itself: free the block instead
        }
      }
    }
    ::operator delete (p, std::align_val_t{kBlockAlign});
  }

  /// An empty vector whose capacity is at least `n` (recycled when one is cached).
  [[nodiscard]] std::vector<std::byte> take_vector(std::size_t n) {
    if (n == 0) return {};
    std::vector<std::byte> v = pop_vector(size_class(n));
    if (v.capacity() < n) {
      v.reserve(size_class(n));
      detail::prepare_fresh(v.data(), n);
    }
    v.clear();
    return v;
  }
  /// A vector of exactly `n` bytes for the caller to overwrite whole: a recycled one keeps
  /// the bytes it held (only growth past its old size is zero-filled), so a transfer into it
  /// writes each byte once rather than zeroing it first.
  [[nodiscard]] std::vector<std::byte> take_sized_vector(std::size_t n) {
    if (n == 0) return {};
    std::vector<std::byte> v = pop_vector(size_class(n));
    if (v.capacity() < n) {
      v.clear();
      v.reserve(size_class(n));
      detail::prepare_fresh(v.data(), n);
    }
    v.resize(n);
    if (poison()) std::memset(v.data(), kPoison, n);
    return v;
  }
  /// Keeps `v`'s memory for reuse (or lets it go).
  void give_vector(std::vector<std::byte>&& v) noexcept {
    const std::size_t cls = floor_class(v.capacity());
    if (cls == 0) return;
    std::lock_guard lk(mu_);
    if (cached_ + cls > limit_) return;
    try {
      vectors_[cls].push_back(std::move(v));
      cached_ += cls;
    } catch (...) {  // no memory for the list itself: `v` is freed by its owner
    }
  }

  /// Frees everything cached.
  void release() noexcept {
    std::lock_guard lk(mu_);
    for (auto& [cls, list] : blocks_)
      for (std::byte* p : list) ::operator delete (p, std::align_val_t{kBlockAlign});
    blocks_.clear();
    vectors_.clear();
    cached_ = 0;
  }
  [[nodiscard]] std::size_t cached_bytes() const noexcept {
    std::lock_guard lk(mu_);
    return cached_;
  }
  void set_limit(std::size_t limit) noexcept {
    {
      std::lock_guard lk(mu_);
      limit_ = limit;
    }
    if (limit == 0) release();
  }

  /// Poison mode (see the class comment).
  void set_poison(bool on) noexcept { poison_.store(on, std::memory_order_relaxed); }
  [[nodiscard]] bool poison() const noexcept { return poison_.load(std::memory_order_relaxed); }

  static constexpr std::size_t kBlockAlign = 64;

 private:
  // A cached vector of class `cls` as it was given back (its size included), or an empty one.
  std::vector<std::byte> pop_vector(std::size_t cls) {
    std::lock_guard lk(mu_);
    auto it = vectors_.find(cls);
    if (it == vectors_.end() || it->second.empty()) return {};
    std::vector<std::byte> v = std::move(it->second.back());
    it->second.pop_back();
    cached_ -= cls;
    return v;
  }
  mutable std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<std::byte*>> blocks_;
  std::unordered_map<std::size_t, std::vector<std::vector<std::byte>>> vectors_;
  std::size_t cached_ = 0;
  std::size_t limit_;
  std::atomic<bool> poison_{false};
};

/// True when the environment asks for poison mode: FERRY_POISON_MEMORY set, and not to "0".
inline bool poison_from_env() noexcept {
  const char* v = std::getenv("FERRY_POISON_MEMORY");
  return v != nullptr && *v != '\0' && !(v[0] == '0' && v[1] == '\0');
}

/// Live bytes and buffers ever allocated on one device, and its cache of freed memory.
/// Buffers on any thread touch these, so they are atomics (and the cache locks).
struct DeviceCounters {
  std::atomic<std::int64_t> bytes{0};
  std::atomic<std::int64_t> allocations{0};
  /// Most live bytes the device may hold (a GPU's memory size, say); past it an allocation is
  /// std::bad_alloc before the system allocator is asked.
  std::atomic<std::int64_t> limit{std::numeric_limits<std::int64_t>::max()};
  MemoryCache cache;
};

/// The accounting of all devices of one EigenCpu (and of every copy of it). Buffers keep it
/// alive through a shared_ptr, so a tensor may outlive the backend object that made it.
class Accounts {
 public:
  explicit Accounts(int num_devices, std::size_t cache_limit = 0)
      : n_(num_devices),
        counters_(std::make_unique<DeviceCounters[]>(
            static_cast<std::size_t>(num_devices < 0 ? 0 : num_devices))) {
    const bool poison = poison_from_env();
    for (int i = 0; i < n_; ++i) {
      counters_[static_cast<std::size_t>(i)].cache.set_limit(cache_limit);
      counters_[static_cast<std::size_t>(i)].cache.set_poison(poison);
    }
  }
  [[nodiscard]] int size() const noexcept { return n_; }
  [[nodiscard]] DeviceCounters& operator[](int device) const noexcept {
    return counters_[static_cast<std::size_t>(device)];
  }
  /// memcpy for transfers between (into, out of) devices: large copies use every core.
  void copy(std::byte* dst, const std::byte* src, std::size_t n) const {
    copier_->copy(dst, src, n);
  }
  /// Throws DeviceError naming `op` unless 0 <= device < size().
  void check(int device, const char* op) const {
    if (device < 0 || device >= n_)
      detail::raise<DeviceError>("device",
                                 "{}: unknown device cpu:{} (this eigen-cpu backend has {} "
                                 "device{}: cpu:0..cpu:{})",
                                 op, device, n_, n_ == 1 ? "" : "s", n_ - 1);
  }

 private:
  int n_;
  std::unique_ptr<DeviceCounters[]> counters_;
  std::unique_ptr<CopyArena> copier_ = std::make_unique<CopyArena>();
};

using AccountsPtr = std::shared_ptr<Accounts>;

}  // namespace detail::cpu

namespace detail::cpu {
/// Bytes of a plain tensor of `shape` and `dtype`, checked: a count past 2^63 - 1 bytes is more
/// than any device holds (std::bad_alloc, which the interpreter reports as OutOfMemory).
inline std::size_t byte_size(const Shape& shape, DType dtype) {
  const auto n = bytes_i64(shape.numel(), dtype_size(dtype));
  if (!n) throw std::bad_alloc();
  return static_cast<std::size_t>(*n);
}
}  // namespace detail::cpu

/// @brief Storage of one CpuTensor: `size()` bytes, 64-byte aligned, counted on its device.
///
/// Construction adds its bytes to the device's live-byte counter and bumps the device's
/// allocation count; destruction subtracts the bytes. Not copyable: tensors share a buffer
/// through `std::shared_ptr`, and a buffer whose use_count is above one is never written.
class CpuBuffer {
 public:
  static constexpr std::size_t alignment = detail::cpu::MemoryCache::kBlockAlign;

  /// Bytes a buffer may keep in its own object (see detail::cpu::SmallCpuBuffer).
  static constexpr std::size_t inline_bytes = 64;

  CpuBuffer(detail::cpu::AccountsPtr accounts, int device, std::size_t bytes)
      : CpuBuffer(std::move(accounts), device, bytes, nullptr) {}
  ~CpuBuffer() {
    auto& c = (*accounts_)[device_];
    if (!inline_ && data_ != nullptr)
      c.cache.give_block(data_, detail::cpu::MemoryCache::size_class(size_));
    c.bytes.fetch_sub(static_cast<std::int64_t>(size_), std::memory_order_relaxed);
  }
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;

  [[nodiscard]] std::byte* data() noexcept { return data_; }
  [[nodiscard]] const std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] int device() const noexcept { return device_; }

 protected:
  /// With `storage` (inline_bytes, kBlockAlign-aligned, owned by a derived object) the buffer
  /// uses it instead of a block from the device's cache; accounting is the same either way.
  CpuBuffer(detail::cpu::AccountsPtr accounts, int device, std::size_t bytes, std::byte* storage)
      : accounts_(std::move(accounts)), device_(device), size_(bytes), inline_(storage != nullptr) {
    accounts_->check(device_, "alloc");
    auto& c = (*accounts_)[device_];
    // Reserve the bytes against the device's limit first (size_ < 2^63: byte_size checked it),
    // and give them back if the limit or the allocator says no.
    const auto n = static_cast<std::int64_t>(size_);
    const std::int64_t before = c.bytes.fetch_add(n, std::memory_order_relaxed);
    if (n > 0 && n > c.limit.load(std::memory_order_relaxed) - before) {
      c.bytes.fetch_sub(n, std::memory_order_relaxed);
      throw std::bad_alloc();
    }
    if (inline_) {
      data_ = storage;
      if (c.cache.poison()) std::memset(data_, detail::cpu::MemoryCache::kPoison, size_);
    } else {
      try {
        if (size_ > 0) data_ = c.cache.take_block(detail::cpu::MemoryCache::size_class(size_));
      } catch (...) {
        c.bytes.fetch_sub(n, std::memory_order_relaxed);
        throw;
      }
    }
    c.allocations.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  detail::cpu::AccountsPtr accounts_;
  int device_;
  std::size_t size_;
  std::byte* data_ = nullptr;
  bool inline_ = false;
};

namespace detail::cpu {
/// The bytes of a SmallCpuBuffer: a base class, so they exist before CpuBuffer is built. Room
/// for inline_bytes at a kBlockAlign boundary without asking the allocator for that alignment
/// (glibc's memalign costs more than the rest of a tiny op).
struct InlineBytes {
  static constexpr std::size_t kAlign = alignof(std::max_align_t);
  alignas(kAlign) std::byte storage[CpuBuffer::inline_bytes + MemoryCache::kBlockAlign - kAlign];
  [[nodiscard]] std::byte* aligned() noexcept {
    const auto p = reinterpret_cast<std::uintptr_t>(storage);
    const auto a = (p + MemoryCache::kBlockAlign - 1) & ~(MemoryCache::kBlockAlign - 1);
    return storage + (a - p);
  }
};
/// A buffer of at most CpuBuffer::inline_bytes whose bytes live in the object itself, so
/// `make_shared` allocates data and control block at once and the device's cache (a lock and
/// a hash lookup) is not asked: a tiny tensor's cost is bookkeeping, not arithmetic.
class SmallCpuBuffer final : private InlineBytes, public CpuBuffer {
 public:
  SmallCpuBuffer(AccountsPtr accounts, int device, std::size_t bytes)
      : CpuBuffer(std::move(accounts), device, bytes, InlineBytes::aligned()) {}
};
}  // namespace detail::cpu

/// @brief EigenCpu's handle for every plain kind (Float, Int, Bool): a contiguous row-major
/// tensor of `dtype` (bool stored as one byte, 0 or 1) in `buf`, living on device `device`.
///
/// Kernels take handles by value: a handle whose `buf.use_count()` is 1 is held by the kernel
/// alone (read-write) and its buffer may be reused for the output; a shared one is read-only.
struct CpuTensor {
  std::shared_ptr<CpuBuffer> buf;
  Shape shape;
  DType dtype = DType::f32;
  int device = 0;

  [[nodiscard]] std::int64_t numel() const { return shape.numel(); }
  /// numel() * dtype_size(dtype); OutOfMemory when that passes 2^63 - 1 bytes.
  [[nodiscard]] std::size_t nbytes() const { return detail::cpu::byte_size(shape, dtype); }
  /// Typed pointer to the first element (no dtype check; kernels check before they look).
  template <class T>
  [[nodiscard]] T* data() const noexcept {
    return buf ? reinterpret_cast<T*>(buf->data()) : nullptr;
  }
};

namespace detail::cpu {

/// A new, uninitialised tensor of `shape` and `dtype` on `device`.
inline CpuTensor alloc(const AccountsPtr& acc, int device, Shape shape, DType dtype) {
  const auto bytes = byte_size(shape, dtype);
  std::shared_ptr<CpuBuffer> buf;
  if (bytes > 0 && bytes <= CpuBuffer::inline_bytes)
    buf = std::make_shared<SmallCpuBuffer>(acc, device, bytes);
  else
    buf = std::make_shared<CpuBuffer>(acc, device, bytes);
  return CpuTensor{std::move(buf), std::move(shape), dtype, device};
}

/// True when the kernel holds `in` alone and its buffer has exactly the bytes of the output.
inline bool reusable(const CpuTensor& in, std::int64_t out_numel, DType out_dtype) {
  return in.buf && in.buf.use_count() == 1 && in.dtype == out_dtype &&
         in.shape.numel() == out_numel;
}

/// The output of an elementwise kernel: `in`'s own buffer when the kernel holds it alone
/// (read-write) and the output has its dtype and size, else a fresh buffer. Sharing `in`'s
/// buffer is safe because writes go element i -> element i after element i was read.
inline CpuTensor reuse_or_alloc(const AccountsPtr& acc, const CpuTensor& in, Shape shape,
                                DType dtype) {
  if (reusable(in, shape.numel(), dtype))
    return CpuTensor{in.buf, std::move(shape), dtype, in.device};
  return alloc(acc, in.device, std::move(shape), dtype);
}

/// Validates a handle reaching kernel `op`: a live, consistent buffer on a known device.
inline void check(const AccountsPtr& acc, const CpuTensor& t, const char* op) {
  if (!t.buf)
    detail::raise<HandleError>("cpu.handle", "{}: the handle has no buffer (moved from?)", op);
  if (t.dtype == DType::quantized)
    detail::raise<DTypeError>("cpu.dtype", "{}: a quantized tensor is not a plain handle", op);
  for (auto d : t.shape)
    if (d < 0)
      detail::raise<ShapeError>("cpu.shape", "{}: shape {} has a negative dim", op, t.shape);
  if (t.buf->size() != t.nbytes())
    detail::raise<ShapeError>("cpu.handle",
                              "{}: a {} handle of shape {} needs {} bytes but its buffer has {}",
                              op, t.dtype, t.shape, t.nbytes(), t.buf->size());
  acc->check(t.device, op);
  if (t.buf->device() != t.device)
    detail::raise<DeviceError>("device", "{}: handle says cpu:{} but its buffer is on cpu:{}", op,
                               t.device, t.buf->device());
}

/// Throws DTypeError naming `op` unless `t` is of kind `k`.
inline void check_kind(const CpuTensor& t, Kind k, const char* op) {
  if (kind_of(t.dtype) != k)
    detail::raise<DTypeError>("cpu.dtype", "{}: expected a {} tensor, got {}", op, k, t.dtype);
}

/// Throws unless two operands share dtype and device.
inline void check_same(const CpuTensor& a, const CpuTensor& b, const char* op) {
  if (a.dtype != b.dtype)
    detail::raise<DTypeError>("cpu.dtype", "{}: operands have different dtypes {} and {}", op,
                              a.dtype, b.dtype);
  if (a.device != b.device)
    detail::raise<DeviceError>("device", "{}: operands live on cpu:{} and cpu:{}", op, a.device,
                               b.device);
}

}  // namespace detail::cpu
}  // namespace ferry

template <>
struct fmt::formatter<ferry::CpuDevice> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(ferry::CpuDevice d, Ctx& ctx) const {
    return write(fmt::format("cpu:{}", d.index), ctx);
  }
};

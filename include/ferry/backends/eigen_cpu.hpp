// Ferry: EigenCpu, the reference backend: vectorised Eigen kernels on host memory, split
// into N logical devices with their own memory accounting. This header declares it; the kernels
// are defined per op family in eigen_cpu/impl/ (compiled once, or inline with FERRY_HEADER_ONLY).
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/math_ops.hpp"
#include "ferry/backends/eigen_cpu/qtensor.hpp"
#include "ferry/config.hpp"
#include "ferry/data.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/params.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

namespace ferry {

/// @brief The reference backend: every kernel on host memory with Eigen, parallel with oneTBB.
///
/// @code
///   ferry::EigenCpu cpu(2);                                  // devices cpu:0 and cpu:1
///   auto a = cpu.float_from_data(ferry::TensorData::from(std::vector<float>{1, 2}), {0});
///   auto b = cpu.add_scalar(std::move(a), 1.0);              // held once: written in place
///   auto c = cpu.float_to_device(b, {1});                    // a real copy, counted on cpu:1
///   cpu.float_into_data(std::move(c)).values<float>();       // {2, 3}
/// @endcode
///
/// **Ownership is the contract.** Kernels take handles by value. A handle the caller moved in
/// whose `buf.use_count()` is 1 is the kernel's alone: when the output has that input's dtype
/// and size, the kernel writes into it instead of allocating (check `allocations()`). A handle
/// whose buffer is shared is read-only: no kernel ever writes a buffer with use_count > 1, which
/// is also why reshape (and a few no-op layouts) can hand back a shared buffer without a copy.
///
/// **Threads.** Copies of an EigenCpu share one accounting block (atomic counters, each
/// device's cache of freed memory behind its lock, the arena transfers copy in) and nothing
/// else mutable, so kernels for different devices may run concurrently; large kernels split
/// their work with oneTBB inside the caller's task_arena, and copies between devices (or to and
/// from host data) of 1 MiB or more over every core (serially under FERRY_SERIAL_KERNELS).
///
/// **Numbers.** Integer add/sub/mul/neg/abs/sum/prod/matmul wrap on overflow (two's
/// complement, never UB). Integer div floors (Python's and torch's `//`) and remainder takes
/// the sign of the divisor (torch.remainder), so a == div(a, b) * b + remainder(a, b); fmod
/// truncates (C's `%`, torch.fmod) for ints and floats. Integer div, remainder and fmod by zero
/// throw ValueError; INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 is 0. Integer pow with a
/// negative exponent throws ValueError. maximum/minimum/max/min/clamp propagate NaN; argmax/argmin
/// return the first NaN, else the first of equal extremes. Float -> int casts truncate, map NaN to
/// 0 and saturate out-of-range values. Scalar operands of arithmetic ops must be exact in an
/// integer tensor's dtype (ValueError otherwise); comparisons with scalars are exact.
///
/// **Compile time.** This header declares the kernels and includes no Eigen header. Their
/// definitions, one file per op family under `eigen_cpu/impl/`, are compiled once into the
/// `ferry::ferry` library (`src/eigen_cpu/`); with `FERRY_HEADER_ONLY` (the `ferry::header-only`
/// target) this header includes them instead, inline. See docs/build.md.
class EigenCpu {
 public:
  using Device = CpuDevice;
  using FloatHandle = CpuTensor;
  using IntHandle = CpuTensor;
  using BoolHandle = CpuTensor;
  /// Packed data + scales + offsets in one device's memory; moved between devices bit-exact.
  using QuantizedHandle = CpuQTensor;

  [[nodiscard]] static constexpr std::string_view name() { return "eigen-cpu"; }

  /// Freed memory each device keeps for reuse unless told otherwise (see cached_bytes()).
  static constexpr std::size_t default_cache_bytes = std::size_t{1} << 30;

  /// `num_devices` logical devices cpu:0 .. cpu:N-1, each with its own accounting and a cache
  /// of up to `cache_bytes` of freed buffers (0: every free goes straight back to the system).
  /// The cache is what lets a loop of quantize / move / dequantize calls reuse warm memory
  /// instead of page-faulting fresh pages on every call.
  explicit EigenCpu(int num_devices = 1, std::size_t cache_bytes = default_cache_bytes)
      : acc_(make_accounts(num_devices, cache_bytes)) {}

  [[nodiscard]] std::vector<CpuDevice> devices() const {
    std::vector<CpuDevice> out;
    for (int i = 0; i < acc_->size(); ++i) out.push_back(CpuDevice{i});
    return out;
  }
  /// Bytes of the buffers alive on `d` right now.
  [[nodiscard]] std::int64_t allocated_bytes(CpuDevice d) const {
    acc_->check(d.index, "allocated_bytes");
    return (*acc_)[d.index].bytes.load(std::memory_order_relaxed);
  }
  /// Buffers ever allocated on `d` (never decreases; tests use it to prove in-place reuse).
  [[nodiscard]] std::int64_t allocations(CpuDevice d) const {
    acc_->check(d.index, "allocations");
    return (*acc_)[d.index].allocations.load(std::memory_order_relaxed);
  }
  /// Bytes of freed buffers `d` keeps for reuse (not counted in allocated_bytes()).
  [[nodiscard]] std::size_t cached_bytes(CpuDevice d) const {
    acc_->check(d.index, "cached_bytes");
    return (*acc_)[d.index].cache.cached_bytes();
  }
  /// Caps the live tensor bytes of every device at `bytes` (as a GPU's memory would): an op
  /// whose output passes it fails with OutOfMemory before the system allocator is asked. The
  /// default is no cap; a negative value means no cap. The fuzzers set 256 MiB.
  void set_memory_limit(std::int64_t bytes) const noexcept {
    const std::int64_t v = bytes < 0 ? std::numeric_limits<std::int64_t>::max() : bytes;
    for (int i = 0; i < acc_->size(); ++i) (*acc_)[i].limit.store(v, std::memory_order_relaxed);
  }
  /// The cap set by set_memory_limit (INT64_MAX when none).
  [[nodiscard]] std::int64_t memory_limit() const noexcept {
    return acc_->size() > 0 ? (*acc_)[0].limit.load(std::memory_order_relaxed)
                            : std::numeric_limits<std::int64_t>::max();
  }
  /// Poison mode on every device: memory handed to a kernel is filled with 0xFF bytes first, so
  /// a kernel that reads what it did not write shows NaN / -1 instead of stale values. Also on
  /// when FERRY_POISON_MEMORY=1 is set as the backend is made (CI runs the tests so).
  void set_poison_memory(bool on) const noexcept {
    for (int i = 0; i < acc_->size(); ++i) (*acc_)[i].cache.set_poison(on);
  }
  [[nodiscard]] bool poison_memory() const noexcept {
    return acc_->size() > 0 && (*acc_)[0].cache.poison();
  }
  /// Gives every device's cached memory back to the system (live tensors are untouched).
  void empty_cache() const noexcept {
    for (int i = 0; i < acc_->size(); ++i) (*acc_)[i].cache.release();
  }
  [[nodiscard]] std::size_t nbytes(const CpuTensor& t) const { return t.nbytes(); }
  [[nodiscard]] std::size_t nbytes(const CpuQTensor& q) const noexcept { return q.nbytes(); }

  // ---- data in / out, transfers (impl/data.hpp) -----------------------------------------------
  CpuTensor float_from_data(TensorData d, const CpuDevice& dev) const;
  CpuTensor int_from_data(TensorData d, const CpuDevice& dev) const;
  CpuTensor bool_from_data(TensorData d, const CpuDevice& dev) const;
  TensorData float_into_data(CpuTensor t) const;
  TensorData int_into_data(CpuTensor t) const;
  TensorData bool_into_data(CpuTensor t) const;
  CpuTensor float_to_device(CpuTensor t, const CpuDevice& dev) const;
  CpuTensor int_to_device(CpuTensor t, const CpuDevice& dev) const;
  CpuTensor bool_to_device(CpuTensor t, const CpuDevice& dev) const;

  // ---- creation (impl/creation.hpp) -------------------------------------------------------------
  CpuTensor float_full(const Shape& s, DType dt, Scalar v, const CpuDevice& dev) const;
  CpuTensor int_full(const Shape& s, DType dt, Scalar v, const CpuDevice& dev) const;
  CpuTensor bool_full(const Shape& s, DType dt, Scalar v, const CpuDevice& dev) const;
  CpuTensor bool_full(const Shape& s, Scalar v, const CpuDevice& dev) const;
  CpuTensor float_arange(Scalar start, Scalar step, std::int64_t n, DType dt,
                         const CpuDevice& dev) const;
  CpuTensor int_arange(Scalar start, Scalar step, std::int64_t n, DType dt,
                       const CpuDevice& dev) const;
  CpuTensor float_random(const Shape& s, DType dt, Distribution dist, std::uint64_t seed,
                         const CpuDevice& dev) const;
  CpuTensor int_random(const Shape& s, DType dt, Scalar low, Scalar high, std::uint64_t seed,
                       const CpuDevice& dev) const;

  // ---- elementwise: numpy broadcasting, operands of one dtype (impl/binary.hpp) -----------------
#define FERRY_CPU_BINARY(fn)                    \
  CpuTensor fn(CpuTensor a, CpuTensor b) const; \
  CpuTensor fn##_scalar(CpuTensor a, Scalar s) const;
  FERRY_CPU_BINARY(add)
  FERRY_CPU_BINARY(sub)
  FERRY_CPU_BINARY(mul)
  FERRY_CPU_BINARY(div)
  FERRY_CPU_BINARY(pow)
  FERRY_CPU_BINARY(maximum)
  FERRY_CPU_BINARY(minimum)
  FERRY_CPU_BINARY(remainder)
  FERRY_CPU_BINARY(fmod)
  // comparisons, to bool (impl/compare.hpp)
  FERRY_CPU_BINARY(equal)
  FERRY_CPU_BINARY(not_equal)
  FERRY_CPU_BINARY(greater)
  FERRY_CPU_BINARY(greater_equal)
  FERRY_CPU_BINARY(less)
  FERRY_CPU_BINARY(less_equal)
  FERRY_CPU_BINARY(atan2)
  FERRY_CPU_BINARY(hypot)
  FERRY_CPU_BINARY(prelu)  // x > 0 ? x : w x; the scalar form is leaky_relu
  // bitwise, integers only (impl/bitwise.hpp)
  FERRY_CPU_BINARY(bitwise_and)
  FERRY_CPU_BINARY(bitwise_or)
  FERRY_CPU_BINARY(bitwise_xor)
  FERRY_CPU_BINARY(bitwise_left_shift)
  FERRY_CPU_BINARY(bitwise_right_shift)
#undef FERRY_CPU_BINARY
  CpuTensor logical_and(CpuTensor a, CpuTensor b) const;
  CpuTensor logical_or(CpuTensor a, CpuTensor b) const;
  CpuTensor logical_xor(CpuTensor a, CpuTensor b) const;

  // ---- unary, clamp, where (impl/unary.hpp)
  // ------------------------------------------------------
  CpuTensor logical_not(CpuTensor a) const;
  CpuTensor neg(CpuTensor a) const;
  CpuTensor abs(CpuTensor a) const;
  CpuTensor relu(CpuTensor a) const;
  CpuTensor exp(CpuTensor a) const;
  CpuTensor log(CpuTensor a) const;
  CpuTensor sqrt(CpuTensor a) const;
  CpuTensor sin(CpuTensor a) const;
  CpuTensor cos(CpuTensor a) const;
  CpuTensor tanh(CpuTensor a) const;
  CpuTensor sigmoid(CpuTensor a) const;
  CpuTensor gelu(CpuTensor a) const;
  // libm functions, rounding, activations, predicates (impl/unary_math.hpp, see math_ops.hpp)
#define FERRY_CPU_UNARY_DECL(fn) CpuTensor fn(CpuTensor a) const;
  FERRY_CPU_MATH_FLOAT_OPS(FERRY_CPU_UNARY_DECL)
  FERRY_CPU_MATH_NUMERIC_OPS(FERRY_CPU_UNARY_DECL)
  FERRY_CPU_MATH_INT_OPS(FERRY_CPU_UNARY_DECL)
  FERRY_CPU_PREDICATE_OPS(FERRY_CPU_UNARY_DECL)
#undef FERRY_CPU_UNARY_DECL
  CpuTensor clamp(CpuTensor a, Scalar lo, Scalar hi) const;
  CpuTensor where(CpuTensor mask, CpuTensor a, CpuTensor b) const;

  // ---- casts (impl/cast.hpp) -------------------------------------------------------------------
  CpuTensor to_float(CpuTensor a, DType to) const;
  CpuTensor to_int(CpuTensor a, DType to) const;
  CpuTensor to_bool(CpuTensor a) const;

  // ---- reductions (impl/reduce.hpp), matmul (impl/matmul.hpp) -----------------------------------
  CpuTensor sum(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const;
  CpuTensor prod(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const;
  CpuTensor mean(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const;
  CpuTensor max(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const;
  CpuTensor min(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const;
  CpuTensor argmax(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const;
  CpuTensor argmin(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const;
  // inclusive scans along a dim (impl/scan.hpp)
  CpuTensor cumsum(CpuTensor a, std::size_t dim) const;
  CpuTensor cumprod(CpuTensor a, std::size_t dim) const;
  CpuTensor cummax(CpuTensor a, std::size_t dim) const;
  CpuTensor cummin(CpuTensor a, std::size_t dim) const;
  // fused softmax and log_softmax along a dim, float operands (impl/softmax.hpp)
  CpuTensor softmax(CpuTensor a, std::size_t dim) const;
  CpuTensor log_softmax(CpuTensor a, std::size_t dim) const;
  // fused scaled dot-product attention, float operands, additive mask (impl/attention.hpp)
  CpuTensor attention(CpuTensor q, CpuTensor k, CpuTensor v, std::optional<CpuTensor> mask,
                      bool causal, double scale) const;
  // the first k indices of a stable sort along a dim, NaN last (impl/sort.hpp)
  CpuTensor argsort(CpuTensor a, std::size_t dim, bool descending, std::size_t k) const;
  CpuTensor matmul(CpuTensor a, CpuTensor b) const;

  // ---- layout (impl/layout.hpp) ----------------------------------------------------------------
  CpuTensor reshape(CpuTensor a, const Shape& s) const;
  CpuTensor permute(CpuTensor a, std::span<const std::size_t> perm) const;
  CpuTensor flip(CpuTensor a, std::span<const std::size_t> axes) const;
  CpuTensor expand(CpuTensor a, const Shape& s) const;
  CpuTensor slice(CpuTensor a, std::span<const Range> ranges) const;
  CpuTensor slice_assign(CpuTensor a, std::span<const Range> ranges, CpuTensor value) const;
  CpuTensor cat(std::vector<CpuTensor> ts, std::size_t dim) const;
  CpuTensor gather(CpuTensor a, std::size_t dim, CpuTensor index) const;
  CpuTensor index_select(CpuTensor a, std::size_t dim, CpuTensor index) const;
  // scatter along a dim: assign or add (impl/scatter.hpp)
  CpuTensor scatter(CpuTensor a, std::size_t dim, CpuTensor index, CpuTensor src) const;
  CpuTensor scatter_add(CpuTensor a, std::size_t dim, CpuTensor index, CpuTensor src) const;
  CpuTensor gather_nd(CpuTensor a, CpuTensor index) const;
  CpuTensor scatter_nd(CpuTensor a, CpuTensor index, CpuTensor src) const;
  CpuTensor scatter_nd_add(CpuTensor a, CpuTensor index, CpuTensor src) const;
  CpuTensor repeat(CpuTensor a, std::span<const std::int64_t> times) const;

  // ---- quantized (impl/quantized.hpp)
  // ------------------------------------------------------------ Parts are copied into (out of,
  // between) devices exactly as they are: no dequantize.
  CpuQTensor q_from_parts(quant::QuantizedParts p, const CpuDevice& dev) const;
  quant::QuantizedParts q_into_parts(CpuQTensor q) const { return q.parts(); }
  CpuQTensor q_to_device(CpuQTensor q, const CpuDevice& dev) const;
  CpuQTensor quantize(CpuTensor x, const quant::Scheme& s, std::span<const float> scales,
                      std::span<const std::int32_t> offsets) const;
  CpuQTensor quantize_dynamic(CpuTensor x, const quant::Scheme& s) const;
  CpuTensor dequantize(CpuQTensor q, DType to) const;
  CpuQTensor q_reshape(CpuQTensor q, const Shape& s) const;
  CpuQTensor q_permute(CpuQTensor q, std::span<const std::int64_t> perm) const;
  CpuQTensor q_flip(CpuQTensor q, std::span<const std::int64_t> axes) const;
  CpuQTensor q_slice(CpuQTensor q,
                     std::span<const std::pair<std::int64_t, std::int64_t>> ranges) const;
  CpuTensor q_matmul(CpuTensor x, CpuQTensor w) const;  // w [K, N]
  CpuTensor q_linear(CpuTensor x, CpuQTensor w) const;  // w [N, K], used transposed

 private:
  CpuTensor q_product(CpuTensor x, CpuQTensor w, bool transposed) const;
  static detail::cpu::AccountsPtr make_accounts(int n, std::size_t cache_bytes) {
    if (n < 1)
      detail::raise<ValueError>("cpu.devices", "eigen-cpu: needs at least one device, got {}", n);
    return std::make_shared<detail::cpu::Accounts>(n, cache_bytes);
  }
  CpuTensor from_data(TensorData d, const CpuDevice& dev, Kind k, const char* op) const;
  TensorData into_data(CpuTensor t, Kind k, const char* op) const;
  CpuTensor to_device(CpuTensor t, const CpuDevice& dev, Kind k, const char* op) const;

  detail::cpu::AccountsPtr acc_;
};

/// Ferry 0.1 spelled the backend `BasicEigenCpu<>`; the name is kept.
template <class = void>
using BasicEigenCpu = EigenCpu;

}  // namespace ferry

#ifdef FERRY_HEADER_ONLY
#  include "ferry/backends/eigen_cpu/impl/all.hpp"
#endif

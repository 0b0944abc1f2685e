// Ferry: EigenCpu, the reference backend: vectorised Eigen kernels on host memory, split
// into N logical devices with their own memory accounting.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/creation.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/layout.hpp"
#include "ferry/backends/eigen_cpu/matmul.hpp"
#include "ferry/backends/eigen_cpu/quantized.hpp"
#include "ferry/backends/eigen_cpu/reduce.hpp"
#include "ferry/data.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/params.hpp"
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
/// complement, never UB). Integer div truncates toward zero; div and remainder by zero throw
/// ValueError; INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 is 0. remainder takes the sign of
/// the divisor (torch.remainder) for ints and floats. Integer pow with a negative exponent
/// throws ValueError. maximum/minimum/max/min/clamp propagate NaN; argmax/argmin return the
/// first NaN, else the first of equal extremes. Float -> int casts truncate, map NaN to 0 and
/// saturate out-of-range values. Scalar operands of arithmetic ops must be exact in an integer
/// tensor's dtype (ValueError otherwise); comparisons with scalars are exact.
///
/// **Compile time.** EigenCpu is `BasicEigenCpu<>`: being a class template, only the kernels a
/// translation unit calls are instantiated, so including this header costs little.
template <class Unused = void>
class BasicEigenCpu {
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
  explicit BasicEigenCpu(int num_devices = 1, std::size_t cache_bytes = default_cache_bytes)
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
  /// Gives every device's cached memory back to the system (live tensors are untouched).
  void empty_cache() const noexcept {
    for (int i = 0; i < acc_->size(); ++i) (*acc_)[i].cache.release();
  }
  [[nodiscard]] std::size_t nbytes(const CpuTensor& t) const noexcept { return t.nbytes(); }

  // ---- data in / out, transfers ---------------------------------------------------------------
  CpuTensor float_from_data(TensorData d, const CpuDevice& dev) const {
    return from_data(std::move(d), dev, Kind::Float, "float_from_data");
  }
  CpuTensor int_from_data(TensorData d, const CpuDevice& dev) const {
    return from_data(std::move(d), dev, Kind::Int, "int_from_data");
  }
  CpuTensor bool_from_data(TensorData d, const CpuDevice& dev) const {
    return from_data(std::move(d), dev, Kind::Bool, "bool_from_data");
  }
  TensorData float_into_data(CpuTensor t) const {
    return into_data(std::move(t), Kind::Float, "float_into_data");
  }
  TensorData int_into_data(CpuTensor t) const {
    return into_data(std::move(t), Kind::Int, "int_into_data");
  }
  TensorData bool_into_data(CpuTensor t) const {
    return into_data(std::move(t), Kind::Bool, "bool_into_data");
  }
  CpuTensor float_to_device(CpuTensor t, const CpuDevice& dev) const {
    return to_device(std::move(t), dev, Kind::Float, "float_to_device");
  }
  CpuTensor int_to_device(CpuTensor t, const CpuDevice& dev) const {
    return to_device(std::move(t), dev, Kind::Int, "int_to_device");
  }
  CpuTensor bool_to_device(CpuTensor t, const CpuDevice& dev) const {
    return to_device(std::move(t), dev, Kind::Bool, "bool_to_device");
  }

  // ---- creation -------------------------------------------------------------------------------
  CpuTensor float_full(const Shape& s, DType dt, Scalar v, const CpuDevice& dev) const {
    return detail::cpu::full(acc_, s, dt, v, dev.index, Kind::Float, "float_full");
  }
  CpuTensor int_full(const Shape& s, DType dt, Scalar v, const CpuDevice& dev) const {
    return detail::cpu::full(acc_, s, dt, v, dev.index, Kind::Int, "int_full");
  }
  CpuTensor bool_full(const Shape& s, DType dt, Scalar v, const CpuDevice& dev) const {
    return detail::cpu::full(acc_, s, dt, v, dev.index, Kind::Bool, "bool_full");
  }
  CpuTensor bool_full(const Shape& s, Scalar v, const CpuDevice& dev) const {
    return bool_full(s, DType::boolean, v, dev);
  }
  CpuTensor float_arange(Scalar start, Scalar step, std::int64_t n, DType dt,
                         const CpuDevice& dev) const {
    return detail::cpu::arange(acc_, start, step, n, dt, dev.index, Kind::Float, "float_arange");
  }
  CpuTensor int_arange(Scalar start, Scalar step, std::int64_t n, DType dt,
                       const CpuDevice& dev) const {
    return detail::cpu::arange(acc_, start, step, n, dt, dev.index, Kind::Int, "int_arange");
  }
  CpuTensor float_random(const Shape& s, DType dt, Distribution dist, std::uint64_t seed,
                         const CpuDevice& dev) const {
    return detail::cpu::random(acc_, s, dt, dist, seed, dev.index);
  }

  // ---- elementwise (numpy broadcasting; operands of one dtype) ---------------------------------
#define FERRY_CPU_BINARY(fn, op)                                                          \
  CpuTensor fn(CpuTensor a, CpuTensor b) const {                                          \
    return detail::cpu::binary<detail::cpu::BinOp::op>(acc_, std::move(a), std::move(b)); \
  }                                                                                       \
  CpuTensor fn##_scalar(CpuTensor a, Scalar s) const {                                    \
    return detail::cpu::binary_scalar<detail::cpu::BinOp::op>(acc_, std::move(a), s);     \
  }
  FERRY_CPU_BINARY(add, add)
  FERRY_CPU_BINARY(sub, sub)
  FERRY_CPU_BINARY(mul, mul)
  FERRY_CPU_BINARY(div, div)
  FERRY_CPU_BINARY(pow, pow)
  FERRY_CPU_BINARY(maximum, maximum)
  FERRY_CPU_BINARY(minimum, minimum)
  FERRY_CPU_BINARY(remainder, remainder)
#undef FERRY_CPU_BINARY

#define FERRY_CPU_COMPARE(fn, op)                                                          \
  CpuTensor fn(CpuTensor a, CpuTensor b) const {                                           \
    return detail::cpu::compare<detail::cpu::CmpOp::op>(acc_, std::move(a), std::move(b)); \
  }                                                                                        \
  CpuTensor fn##_scalar(CpuTensor a, Scalar s) const {                                     \
    return detail::cpu::compare_scalar<detail::cpu::CmpOp::op>(acc_, std::move(a), s);     \
  }
  FERRY_CPU_COMPARE(equal, eq)
  FERRY_CPU_COMPARE(not_equal, ne)
  FERRY_CPU_COMPARE(greater, gt)
  FERRY_CPU_COMPARE(greater_equal, ge)
  FERRY_CPU_COMPARE(less, lt)
  FERRY_CPU_COMPARE(less_equal, le)
#undef FERRY_CPU_COMPARE

  CpuTensor logical_and(CpuTensor a, CpuTensor b) const {
    return detail::cpu::binary<detail::cpu::BinOp::logical_and>(acc_, std::move(a), std::move(b));
  }
  CpuTensor logical_or(CpuTensor a, CpuTensor b) const {
    return detail::cpu::binary<detail::cpu::BinOp::logical_or>(acc_, std::move(a), std::move(b));
  }

#define FERRY_CPU_UNARY(fn)                                               \
  CpuTensor fn(CpuTensor a) const {                                       \
    return detail::cpu::unary<detail::cpu::UnOp::fn>(acc_, std::move(a)); \
  }
  FERRY_CPU_UNARY(logical_not)
  FERRY_CPU_UNARY(neg)
  FERRY_CPU_UNARY(abs)
  FERRY_CPU_UNARY(relu)
  FERRY_CPU_UNARY(exp)
  FERRY_CPU_UNARY(log)
  FERRY_CPU_UNARY(sqrt)
  FERRY_CPU_UNARY(sin)
  FERRY_CPU_UNARY(cos)
  FERRY_CPU_UNARY(tanh)
  FERRY_CPU_UNARY(sigmoid)
  FERRY_CPU_UNARY(gelu)
#undef FERRY_CPU_UNARY

  CpuTensor clamp(CpuTensor a, Scalar lo, Scalar hi) const {
    return detail::cpu::clamp(acc_, std::move(a), lo, hi);
  }
  CpuTensor where(CpuTensor mask, CpuTensor a, CpuTensor b) const {
    return detail::cpu::where(acc_, std::move(mask), std::move(a), std::move(b));
  }

  // ---- casts ----------------------------------------------------------------------------------
  CpuTensor to_float(CpuTensor a, DType to) const {
    if (kind_of(to) != Kind::Float)
      detail::raise<DTypeError>("cpu.dtype", "to_float: {} is not a float dtype", to);
    return detail::cpu::cast(acc_, std::move(a), to, "to_float");
  }
  CpuTensor to_int(CpuTensor a, DType to) const {
    if (kind_of(to) != Kind::Int)
      detail::raise<DTypeError>("cpu.dtype", "to_int: {} is not an int dtype", to);
    return detail::cpu::cast(acc_, std::move(a), to, "to_int");
  }
  CpuTensor to_bool(CpuTensor a) const {
    return detail::cpu::cast(acc_, std::move(a), DType::boolean, "to_bool");
  }

  // ---- reductions -----------------------------------------------------------------------------
#define FERRY_CPU_REDUCE(fn)                                                              \
  CpuTensor fn(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const {         \
    return detail::cpu::reduce<detail::cpu::RedOp::fn>(acc_, std::move(a), dim, keepdim); \
  }
  FERRY_CPU_REDUCE(sum)
  FERRY_CPU_REDUCE(prod)
  FERRY_CPU_REDUCE(mean)
  FERRY_CPU_REDUCE(max)
  FERRY_CPU_REDUCE(min)
#undef FERRY_CPU_REDUCE
  CpuTensor argmax(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const {
    return detail::cpu::arg_reduce<true>(acc_, std::move(a), dim, keepdim);
  }
  CpuTensor argmin(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) const {
    return detail::cpu::arg_reduce<false>(acc_, std::move(a), dim, keepdim);
  }

  CpuTensor matmul(CpuTensor a, CpuTensor b) const {
    return detail::cpu::matmul(acc_, std::move(a), std::move(b));
  }

  // ---- layout ---------------------------------------------------------------------------------
  CpuTensor reshape(CpuTensor a, const Shape& s) const {
    return detail::cpu::reshape(acc_, std::move(a), s);
  }
  CpuTensor permute(CpuTensor a, std::span<const std::size_t> perm) const {
    return detail::cpu::permute(acc_, std::move(a), perm);
  }
  CpuTensor flip(CpuTensor a, std::span<const std::size_t> axes) const {
    return detail::cpu::flip(acc_, std::move(a), axes);
  }
  CpuTensor expand(CpuTensor a, const Shape& s) const {
    return detail::cpu::expand(acc_, std::move(a), s);
  }
  CpuTensor slice(CpuTensor a, std::span<const Range> ranges) const {
    return detail::cpu::slice(acc_, std::move(a), ranges);
  }
  CpuTensor slice_assign(CpuTensor a, std::span<const Range> ranges, CpuTensor value) const {
    return detail::cpu::slice_assign(acc_, std::move(a), ranges, std::move(value));
  }
  CpuTensor cat(std::vector<CpuTensor> ts, std::size_t dim) const {
    return detail::cpu::cat(acc_, std::move(ts), dim);
  }
  CpuTensor gather(CpuTensor a, std::size_t dim, CpuTensor index) const {
    return detail::cpu::gather(acc_, std::move(a), dim, std::move(index));
  }
  CpuTensor index_select(CpuTensor a, std::size_t dim, CpuTensor index) const {
    return detail::cpu::index_select(acc_, std::move(a), dim, std::move(index));
  }
  CpuTensor repeat(CpuTensor a, std::span<const std::int64_t> times) const {
    return detail::cpu::repeat(acc_, std::move(a), times);
  }

  // ---- quantized ----------------------------------------------------------------------------
  // Parts are copied into (out of, between) devices exactly as they are: no dequantize.
  CpuQTensor q_from_parts(quant::QuantizedParts p, const CpuDevice& dev) const {
    acc_->check(dev.index, "q_from_parts");
    p.validate();
    return detail::cpu::make_q(acc_, dev.index, std::move(p));
  }
  quant::QuantizedParts q_into_parts(CpuQTensor q) const { return q.parts(); }
  CpuQTensor q_to_device(CpuQTensor q, const CpuDevice& dev) const {
    acc_->check(dev.index, "q_to_device");
    if (dev.index == q.device()) return q;
    return detail::cpu::copy_q(acc_, dev.index, q);
  }
  [[nodiscard]] std::size_t nbytes(const CpuQTensor& q) const noexcept { return q.nbytes(); }
  CpuQTensor quantize(CpuTensor x, const quant::Scheme& s, std::span<const float> scales,
                      std::span<const std::int32_t> offsets) const {
    std::vector<float> scratch;
    const detail::cpu::CacheSource src(acc_, x.device);
    return detail::cpu::make_q(
        acc_, x.device,
        quant::quantize(s, x.shape, detail::cpu::f32_view(x, scratch), scales, offsets, &src));
  }
  CpuQTensor quantize_dynamic(CpuTensor x, const quant::Scheme& s) const {
    std::vector<float> scratch;
    const detail::cpu::CacheSource src(acc_, x.device);
    return detail::cpu::make_q(
        acc_, x.device,
        quant::quantize_dynamic(s, x.shape, detail::cpu::f32_view(x, scratch), &src));
  }
  CpuTensor dequantize(CpuQTensor q, DType to) const {
    const auto& p = q.parts();
    CpuTensor f = detail::cpu::alloc(acc_, q.device(), p.shape, DType::f32);
    quant::dequantize(p,
                      std::span<float>(f.data<float>(), static_cast<std::size_t>(p.shape.numel())));
    return to == DType::f32 ? f : to_float(std::move(f), to);
  }
  CpuQTensor q_reshape(CpuQTensor q, const Shape& s) const {
    return detail::cpu::make_q(acc_, q.device(), quant::q_reshape(q.parts(), s));
  }
  CpuQTensor q_permute(CpuQTensor q, std::span<const std::int64_t> perm) const {
    return detail::cpu::make_q(acc_, q.device(), quant::q_permute(q.parts(), perm));
  }
  CpuQTensor q_flip(CpuQTensor q, std::span<const std::int64_t> axes) const {
    return detail::cpu::make_q(acc_, q.device(), quant::q_flip(q.parts(), axes));
  }
  CpuQTensor q_slice(CpuQTensor q,
                     std::span<const std::pair<std::int64_t, std::int64_t>> ranges) const {
    return detail::cpu::make_q(acc_, q.device(), quant::q_slice(q.parts(), ranges));
  }
  CpuTensor q_matmul(CpuTensor x, CpuQTensor w) const { return detail::cpu::q_matmul(acc_, x, w); }

 private:
  static detail::cpu::AccountsPtr make_accounts(int n, std::size_t cache_bytes) {
    if (n < 1)
      detail::raise<ValueError>("cpu.devices", "eigen-cpu: needs at least one device, got {}", n);
    return std::make_shared<detail::cpu::Accounts>(n, cache_bytes);
  }

  CpuTensor from_data(TensorData d, const CpuDevice& dev, Kind k, const char* op) const {
    acc_->check(dev.index, op);
    if (kind_of(d.dtype()) != k)
      detail::raise<DTypeError>("cpu.dtype", "{}: data of dtype {} is not of kind {}", op,
                                d.dtype(), k);
    CpuTensor t = detail::cpu::alloc(acc_, dev.index, d.shape(), d.dtype());
    const auto bytes = d.bytes();
    acc_->copy(t.buf->data(), bytes.data(), bytes.size());
    if (k == Kind::Bool)  // any non-zero byte is true; kernels rely on 0/1
      for (std::size_t i = 0; i < bytes.size(); ++i)
        t.buf->data()[i] = std::byte{bytes[i] != std::byte{0} ? std::uint8_t{1} : std::uint8_t{0}};
    return t;
  }

  TensorData into_data(CpuTensor t, Kind k, const char* op) const {
    detail::cpu::check(acc_, t, op);
    detail::cpu::check_kind(t, k, op);
    std::vector<std::byte> bytes(t.nbytes());
    acc_->copy(bytes.data(), t.buf->data(), bytes.size());
    return TensorData(t.shape, t.dtype, std::move(bytes));
  }

  CpuTensor to_device(CpuTensor t, const CpuDevice& dev, Kind k, const char* op) const {
    detail::cpu::check(acc_, t, op);
    detail::cpu::check_kind(t, k, op);
    acc_->check(dev.index, op);
    if (dev.index == t.device) return t;
    CpuTensor out = detail::cpu::alloc(acc_, dev.index, t.shape, t.dtype);
    acc_->copy(out.buf->data(), t.buf->data(), t.nbytes());
    return out;
  }

  detail::cpu::AccountsPtr acc_;
};

using EigenCpu = BasicEigenCpu<>;

}  // namespace ferry

// Ferry: EigenCpu's comparison kernels (tensor and scalar forms) -> bool, exact across
// signedness and through f32 for f16/bf16; over elementwise.hpp's broadcast machinery.
// SPDX-License-Identifier: MIT
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <variant>

#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {
// ---------------------------------------------------------------------------------------------
// Comparisons -> bool.

enum class CmpOp : std::uint8_t { eq, ne, gt, ge, lt, le };

constexpr const char* op_name(CmpOp op) noexcept {
  constexpr const char* names[] = {"equal",         "not_equal", "greater",
                                   "greater_equal", "less",      "less_equal"};
  return names[static_cast<int>(op)];
}

template <CmpOp op, class A, class B>
constexpr bool compare_one(A a, B b) noexcept {
  if constexpr (op == CmpOp::eq) return a == b;
  if constexpr (op == CmpOp::ne) return a != b;
  if constexpr (op == CmpOp::gt) return a > b;
  if constexpr (op == CmpOp::ge) return a >= b;
  if constexpr (op == CmpOp::lt) return a < b;
  if constexpr (op == CmpOp::le) return a <= b;
}

/// `a op v` on the exact values of an integer (or bool) element and a scalar: integers compare
/// as integers of any signedness (std::cmp_less), a floating scalar against the element as f64.
template <CmpOp op, class T, class V>
constexpr bool compare_exact(T a, V v) noexcept {
  if constexpr (std::is_same_v<V, double>) {
    return compare_one<op>(static_cast<double>(a), v);
  } else {
    using A = std::conditional_t<std::is_same_v<T, bool>, int, T>;
    using B = std::conditional_t<std::is_same_v<V, bool>, int, V>;
    const auto x = static_cast<A>(a);
    const auto y = static_cast<B>(v);
    if constexpr (op == CmpOp::eq) return std::cmp_equal(x, y);
    if constexpr (op == CmpOp::ne) return std::cmp_not_equal(x, y);
    if constexpr (op == CmpOp::gt) return std::cmp_greater(x, y);
    if constexpr (op == CmpOp::ge) return std::cmp_greater_equal(x, y);
    if constexpr (op == CmpOp::lt) return std::cmp_less(x, y);
    if constexpr (op == CmpOp::le) return std::cmp_less_equal(x, y);
  }
}

template <CmpOp op, class T>
void compare_run(std::uint8_t* o, const T* a, bool va, const T* b, bool vb, std::int64_t n) {
  if constexpr (is_half_v<T>) {  // exact in f32
    float x[kHalfChunk], y[kHalfChunk];
    if (!va) widen(a, x, 1);
    if (!vb) widen(b, y, 1);
    for (std::int64_t i = 0; i < n; i += kHalfChunk) {
      const std::int64_t len = std::min(kHalfChunk, n - i);
      if (va) widen(a + i, x, len);
      if (vb) widen(b + i, y, len);
      compare_run<op, float>(o + i, x, va, y, vb, len);
    }
  } else {
    const std::int64_t sa = va ? 1 : 0, sb = vb ? 1 : 0;
    for (std::int64_t i = 0; i < n; ++i) o[i] = compare_one<op>(a[i * sa], b[i * sb]) ? 1 : 0;
  }
}

template <CmpOp op, class T>
inline constexpr bool compare_valid_v = op == CmpOp::eq || op == CmpOp::ne || is_numeric_v<T>;

template <CmpOp op>
void check_compare_dtype(DType d) {
  constexpr bool eq = op == CmpOp::eq || op == CmpOp::ne;
  if (d == DType::quantized || (!eq && d == DType::boolean))
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported", op_name(op), d);
}

template <CmpOp op>
CpuTensor compare(const AccountsPtr& acc, CpuTensor a, CpuTensor b) {
  constexpr const char* name = op_name(op);
  check(acc, a, name);
  check(acc, b, name);
  check_same(a, b, name);
  check_compare_dtype<op>(a.dtype);
  Shape shape = a.shape == b.shape ? a.shape : broadcast_shapes(a.shape, b.shape, name);
  const std::int64_t n = shape.numel();
  CpuTensor out = reusable(a, n, DType::boolean) ? CpuTensor{a.buf, shape, DType::boolean, a.device}
                  : reusable(b, n, DType::boolean)
                      ? CpuTensor{b.buf, shape, DType::boolean, b.device}
                      : alloc(acc, a.device, shape, DType::boolean);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (compare_valid_v<op, T>) {
      auto* po = out.data<std::uint8_t>();
      const T* pa = a.data<const T>();
      const T* pb = b.data<const T>();
      if (a.shape == b.shape) {  // one flat loop, as binary's
        parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
          compare_run<op, T>(po + lo, pa + lo, true, pb + lo, true, hi - lo);
        });
        return;
      }
      const auto so = shape.strides();
      const auto sa = broadcast_strides(a.shape, shape);
      const auto sb = broadcast_strides(b.shape, shape);
      const auto l = make_loop<3>(shape.dims(), {so, sa, sb});
      const bool va = l.inner_stride(1) != 0, vb = l.inner_stride(2) != 0;
      run_loop(l, kGrain, [&](const std::array<std::int64_t, 3>& off, std::int64_t len) {
        compare_run<op, T>(po + off[0], pa + off[1], va, pb + off[2], vb, len);
      });
    }
  });
  return out;
}

/// `op(a, s)`. A float tensor compares with s rounded to its dtype (as torch does); an integer
/// or bool tensor compares exactly, against an integral s as i64 and a floating s as f64, so
/// `i32 > 2.5` and `i32 < 2^40` mean what they say.
template <CmpOp op>
CpuTensor compare_scalar(const AccountsPtr& acc, CpuTensor a, const Scalar& s) {
  constexpr const char* name = op_name(op);
  check(acc, a, name);
  check_compare_dtype<op>(a.dtype);
  const std::int64_t n = a.numel();
  CpuTensor out = reuse_or_alloc(acc, a, a.shape, DType::boolean);
  visit_dtype(a.dtype, [&]<class T>(T) {
    auto* po = out.data<std::uint8_t>();
    const T* pa = a.data<const T>();
    if constexpr (is_float_v<T>) {
      const T v = scalar_cast<T>(s);
      parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
        compare_run<op, T>(po + lo, pa + lo, true, &v, false, hi - lo);
      });
    } else if constexpr (compare_valid_v<op, T>) {
      auto run = [&](auto v) {
        parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
          for (std::int64_t i = lo; i < hi; ++i) po[i] = compare_exact<op>(pa[i], v) ? 1 : 0;
        });
      };
      std::visit(run, s.value());
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

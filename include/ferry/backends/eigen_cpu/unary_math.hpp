// Ferry: EigenCpu's second family of unary kernels — the libm functions (erf, log1p, expm1,
// tan, the hyperbolic and inverse trigonometric ones), rounding, sign, recip, bitwise_not, the
// activations silu, hard_sigmoid, log_sigmoid, gelu_tanh and the predicates isnan, isinf,
// isfinite. f32 is computed in double and rounded once (within a hair of correctly rounded);
// f64 uses glibc's double functions (their documented bounds, <= 2 ulp); f16/bf16 in f32 chunks.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/math_ops.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

#define FERRY_CPU_ENUM(n) n,
#define FERRY_CPU_NAME(n) #n,
enum class MathOp : std::uint8_t {
  FERRY_CPU_MATH_FLOAT_OPS(FERRY_CPU_ENUM) FERRY_CPU_MATH_NUMERIC_OPS(FERRY_CPU_ENUM)
      FERRY_CPU_MATH_INT_OPS(FERRY_CPU_ENUM) FERRY_CPU_PREDICATE_OPS(FERRY_CPU_ENUM)
};
constexpr const char* op_name(MathOp op) noexcept {
  constexpr const char* names[] = {
      FERRY_CPU_MATH_FLOAT_OPS(FERRY_CPU_NAME) FERRY_CPU_MATH_NUMERIC_OPS(FERRY_CPU_NAME)
          FERRY_CPU_MATH_INT_OPS(FERRY_CPU_NAME) FERRY_CPU_PREDICATE_OPS(FERRY_CPU_NAME)};
  return names[static_cast<int>(op)];
}
#undef FERRY_CPU_ENUM
#undef FERRY_CPU_NAME

constexpr bool is_predicate(MathOp op) noexcept { return op >= MathOp::isnan; }
constexpr bool is_numeric_op(MathOp op) noexcept {
  return op >= MathOp::round && op <= MathOp::sign;
}

/// x / (1 + exp(-x)) for x >= 0, x e / (1 + e) with e = exp(x) below: no overflow, and the
/// relative accuracy kept where the result is tiny. silu(-inf) is -0, the limit (as gelu's;
/// torch's x * sigmoid(x) gives NaN there).
template <class C>
C silu_of(C x) {
  if (x == -std::numeric_limits<C>::infinity()) return -C(0);
  if (x < 0) {
    const C e = std::exp(x);
    return x * e / (C(1) + e);
  }
  return x / (C(1) + std::exp(-x));
}

/// Round half to even, whatever the FPU's rounding mode.
template <class C>
C round_half_even(C x) {
  const C r = std::round(x);  // half away from zero
  if (std::fabs(x - std::trunc(x)) == C(0.5)) return C(2) * std::round(x / C(2));
  return r;
}

/// One element of a float op, in the compute type C.
template <MathOp op, class C>
C math_one(C x) {
  if constexpr (op == MathOp::erf) return std::erf(x);
  if constexpr (op == MathOp::recip) return C(1) / x;
  if constexpr (op == MathOp::log1p) return std::log1p(x);
  if constexpr (op == MathOp::expm1) return std::expm1(x);
  if constexpr (op == MathOp::tan) return std::tan(x);
  if constexpr (op == MathOp::sinh) return std::sinh(x);
  if constexpr (op == MathOp::cosh) return std::cosh(x);
  if constexpr (op == MathOp::asin) return std::asin(x);
  if constexpr (op == MathOp::acos) return std::acos(x);
  if constexpr (op == MathOp::atan) return std::atan(x);
  if constexpr (op == MathOp::asinh) return std::asinh(x);
  if constexpr (op == MathOp::acosh) return std::acosh(x);
  if constexpr (op == MathOp::atanh) return std::atanh(x);
  if constexpr (op == MathOp::silu) return silu_of(x);
  if constexpr (op == MathOp::hard_sigmoid) {  // torch: min(max(x + 3, 0), 6) / 6
    if (x != x) return x;
    return std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
  }
  if constexpr (op == MathOp::log_sigmoid)  // min(x, 0) - log1p(exp(-|x|))
    return std::min(x, C(0)) - std::log1p(std::exp(-std::fabs(x)));
  if constexpr (op == MathOp::round) return round_half_even(x);
  if constexpr (op == MathOp::floor) return std::floor(x);
  if constexpr (op == MathOp::ceil) return std::ceil(x);
  if constexpr (op == MathOp::trunc) return std::trunc(x);
  if constexpr (op == MathOp::sign) return x > 0 ? C(1) : x < 0 ? C(-1) : x;  // +-0, NaN: x
}

/// gelu with torch's approximate='tanh': x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
/// computed as x sigmoid(2u), the same function without 1 + tanh's cancellation for x << 0.
template <class C>
C gelu_tanh_of(C x) {
  if (x == -std::numeric_limits<C>::infinity()) return -C(0);
  const C u2 = C(2) * C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
  if (u2 < 0) {
    const C e = std::exp(u2);
    return x * e / (C(1) + e);
  }
  return x / (C(1) + std::exp(-u2));
}

/// A contiguous run: n outputs (of type O: T, or bool's bytes for the predicates) from n inputs.
template <MathOp op, class T, class O>
void math_run(const T* x, O* y, std::int64_t n) {
  if constexpr (is_predicate(op)) {
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (is_int_v<T>) {
        y[i] = op == MathOp::isfinite;
      } else {
        using C = std::conditional_t<is_half_v<T>, float, T>;
        const C v = static_cast<C>(x[i]);
        if constexpr (op == MathOp::isnan) y[i] = std::isnan(v);
        if constexpr (op == MathOp::isinf) y[i] = std::isinf(v);
        if constexpr (op == MathOp::isfinite) y[i] = std::isfinite(v);
      }
    }
  } else if constexpr (is_half_v<T>) {  // in f32, a chunk at a time, each result rounded once
    float a[kHalfChunk], b[kHalfChunk];
    for (std::int64_t i = 0; i < n; i += kHalfChunk) {
      const std::int64_t len = std::min(kHalfChunk, n - i);
      widen(x + i, a, len);
      math_run<op, float, float>(a, b, len);
      narrow(b, y + i, len);
    }
  } else if constexpr (is_int_v<T>) {
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (op == MathOp::bitwise_not)
        y[i] = static_cast<T>(~x[i]);
      else if constexpr (op == MathOp::sign)
        y[i] = x[i] > 0 ? T(1) : (std::is_signed_v<T> && x[i] < 0) ? static_cast<T>(-1) : T(0);
      else
        y[i] = x[i];  // round, floor, ceil, trunc of an integer
    }
  } else {
    using C = std::conditional_t<std::is_same_v<T, float>, double, T>;
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (op == MathOp::gelu_tanh)
        y[i] = static_cast<T>(gelu_tanh_of(static_cast<C>(x[i])));
      else if constexpr (op == MathOp::recip)
        y[i] = T(1) / x[i];  // IEEE division: correctly rounded in T itself
      else
        y[i] = static_cast<T>(math_one<op, C>(static_cast<C>(x[i])));
    }
  }
}

template <MathOp op, class T>
inline constexpr bool math_valid_v = is_predicate(op)            ? is_numeric_v<T>
                                     : is_numeric_op(op)         ? is_numeric_v<T>
                                     : op == MathOp::bitwise_not ? is_int_v<T>
                                                                 : is_float_v<T>;

/// `op(a)`: writes into a's buffer when the kernel holds it alone (never for a predicate,
/// whose result is bool).
template <MathOp op>
CpuTensor math_unary(const AccountsPtr& acc, CpuTensor a) {
  constexpr const char* name = op_name(op);
  check(acc, a, name);
  const Kind k = kind_of(a.dtype);
  const bool ok = is_predicate(op) || is_numeric_op(op) ? (k == Kind::Float || k == Kind::Int)
                  : op == MathOp::bitwise_not           ? k == Kind::Int
                                                        : k == Kind::Float;
  if (!ok)
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported", name, a.dtype);
  const DType od = is_predicate(op) ? DType::boolean : a.dtype;
  CpuTensor out = reuse_or_alloc(acc, a, a.shape, od);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (math_valid_v<op, T>) {
      using O = std::conditional_t<is_predicate(op), std::uint8_t, T>;
      O* po = out.data<O>();
      const T* pa = a.data<const T>();
      parallel_for(0, a.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
        math_run<op, T, O>(pa + lo, po + lo, hi - lo);
      });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

// Ferry: EigenCpu's unary kernels (neg, abs, relu, the math.hpp functions, logical_not),
// clamp and where; f16/bf16 in f32 chunks, over elementwise.hpp's helpers.
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
#include "ferry/backends/eigen_cpu/math.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {
// ---------------------------------------------------------------------------------------------
// Unary ops.

enum class UnOp : std::uint8_t {
  neg,
  abs,
  relu,
  exp,
  log,
  sqrt,
  sin,
  cos,
  tanh,
  sigmoid,
  gelu,
  logical_not
};

constexpr const char* op_name(UnOp op) noexcept {
  constexpr const char* names[] = {"neg", "abs", "relu", "exp",     "log",  "sqrt",
                                   "sin", "cos", "tanh", "sigmoid", "gelu", "logical_not"};
  return names[static_cast<int>(op)];
}

template <UnOp op, class T, class X>
auto unary_expr(const X& x) {
  if constexpr (op == UnOp::logical_not) {
    return x.unaryExpr([](T v) { return static_cast<T>(v ^ T(1)); });
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    using W = wrap_t<T>;
    if constexpr (op == UnOp::neg)  // wraps: -INT_MIN == INT_MIN; unsigned: 2^n - v, as torch
      return x.unaryExpr([](T v) {
        return static_cast<T>(static_cast<U>(W(0) - static_cast<W>(static_cast<U>(v))));
      });
    else if constexpr (op == UnOp::abs && std::is_unsigned_v<T>)  // the identity
      return x.unaryExpr([](T v) { return v; });
    else if constexpr (op == UnOp::abs)  // wraps: abs(INT_MIN) == INT_MIN, as in torch
      return x.unaryExpr([](T v) {
        return v < 0 ? static_cast<T>(static_cast<U>(W(0) - static_cast<W>(static_cast<U>(v)))) : v;
      });
    else
      return x.max(T(0));
  } else {
    if constexpr (op == UnOp::neg) return -x;
    if constexpr (op == UnOp::abs) return x.abs();
    if constexpr (op == UnOp::relu) return (x < T(0)).select(T(0), x);  // NaN stays NaN
  }
}

/// The transcendental float ops: math.hpp's kernels, not Eigen's array functions, whose f32
/// packets are wrong at the edges of the range (see math.hpp and docs/math.md).
template <UnOp op>
inline constexpr bool is_math_op_v =
    op == UnOp::exp || op == UnOp::log || op == UnOp::sqrt || op == UnOp::sin || op == UnOp::cos ||
    op == UnOp::tanh || op == UnOp::sigmoid || op == UnOp::gelu;

/// One contiguous run of a unary op: `n` outputs from `n` inputs.
template <UnOp op, class T>
void unary_run(const T* x, T* y, std::int64_t n) {
  if constexpr (is_half_v<T>) {  // in f32, a chunk at a time, each result rounded once
    float a[kHalfChunk], b[kHalfChunk];
    for (std::int64_t i = 0; i < n; i += kHalfChunk) {
      const std::int64_t len = std::min(kHalfChunk, n - i);
      widen(x + i, a, len);
      unary_run<op, float>(a, b, len);
      narrow(b, y + i, len);
    }
  } else if constexpr (is_math_op_v<op>) {
    if constexpr (op == UnOp::exp) math::exp(x, y, n);
    if constexpr (op == UnOp::log) math::log(x, y, n);
    if constexpr (op == UnOp::sqrt) math::sqrt(x, y, n);
    if constexpr (op == UnOp::sin) math::sin(x, y, n);
    if constexpr (op == UnOp::cos) math::cos(x, y, n);
    if constexpr (op == UnOp::tanh) math::tanh(x, y, n);
    if constexpr (op == UnOp::sigmoid) math::sigmoid(x, y, n);
    if constexpr (op == UnOp::gelu) math::gelu(x, y, n);
  } else {
    ArrMap<T>(y, n) = unary_expr<op, T>(ConstArrMap<T>(x, n));
  }
}

template <UnOp op>
void check_unary_dtype(DType d) {
  const Kind k = kind_of(d);
  const bool ok = op == UnOp::logical_not ? k == Kind::Bool
                  : (op == UnOp::neg || op == UnOp::abs || op == UnOp::relu)
                      ? (k == Kind::Float || k == Kind::Int)
                      : k == Kind::Float;
  if (!ok)
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported", op_name(op), d);
}

template <UnOp op>
CpuTensor unary(const AccountsPtr& acc, CpuTensor a) {
  constexpr const char* name = op_name(op);
  check(acc, a, name);
  check_unary_dtype<op>(a.dtype);
  CpuTensor out = reuse_or_alloc(acc, a, a.shape, a.dtype);
  visit_dtype(a.dtype, [&]<class T>(T) {
    constexpr bool valid = op == UnOp::logical_not ? !is_numeric_v<T>
                           : (op == UnOp::neg || op == UnOp::abs || op == UnOp::relu)
                               ? is_numeric_v<T>
                               : is_float_v<T>;
    if constexpr (valid) {
      T* po = out.data<T>();
      const T* pa = a.data<const T>();
      parallel_for(0, a.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
        unary_run<op, T>(pa + lo, po + lo, hi - lo);
      });
    }
  });
  return out;
}

/// clamp(x, lo, hi) = min(max(x, lo), hi): lo > hi gives hi everywhere (as torch), NaN stays.
/// An integer tensor takes the bounds rounded inwards (lo up, hi down, saturating), which
/// clamps exactly as the real-valued bounds would.
inline CpuTensor clamp(const AccountsPtr& acc, CpuTensor a, const Scalar& lo, const Scalar& hi) {
  check(acc, a, "clamp");
  if (a.dtype == DType::boolean)
    detail::raise<DTypeError>("cpu.dtype", "clamp: bool operands are not supported");
  CpuTensor out = reuse_or_alloc(acc, a, a.shape, a.dtype);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (is_numeric_v<T>) {
      using L = std::numeric_limits<T>;
      using C = std::conditional_t<is_half_v<T>, float, T>;  // halves clamp as exact f32
      C l, h;
      if constexpr (std::is_integral_v<T>) {
        auto bound = [](const Scalar& s, bool up) {
          return std::visit(
              [&]<class V>(V v) -> T {
                if constexpr (std::is_same_v<V, double>)
                  return convert<T>(up ? std::ceil(v) : std::floor(v));
                else if constexpr (std::is_same_v<V, bool>)
                  return static_cast<T>(v);
                else if (std::cmp_less(v, L::min()))
                  return L::min();
                else if (std::cmp_greater(v, L::max()))
                  return L::max();
                else
                  return static_cast<T>(v);
              },
              s.value());
        };
        l = bound(lo, true);
        h = bound(hi, false);
      } else {  // the bounds rounded to the dtype, so a clamped value is exactly one of them
        l = static_cast<C>(scalar_cast<T>(lo));
        h = static_cast<C>(scalar_cast<T>(hi));
      }
      T* po = out.data<T>();
      const T* pa = a.data<const T>();
      auto run = [&](const C* x, C* y, std::int64_t n) {
        ArrMap<C>(y, n) = binary_expr<BinOp::minimum, C>(
            binary_expr<BinOp::maximum, C>(ConstArrMap<C>(x, n), Arr<C>::Constant(n, l)),
            Arr<C>::Constant(n, h));
      };
      parallel_for(0, a.numel(), kGrain, [&](std::int64_t b, std::int64_t e) {
        if constexpr (is_half_v<T>) {
          float x[kHalfChunk];
          for (std::int64_t i = b; i < e; i += kHalfChunk) {
            const std::int64_t len = std::min(kHalfChunk, e - i);
            widen(pa + i, x, len);
            run(x, x, len);
            narrow(x, po + i, len);
          }
        } else {
          run(pa + b, po + b, e - b);
        }
      });
    }
  });
  return out;
}

/// where(mask, a, b): mask ? a : b with a 3-way broadcast; reuses a or b when held alone.
inline CpuTensor where(const AccountsPtr& acc, CpuTensor mask, CpuTensor a, CpuTensor b) {
  check(acc, mask, "where");
  check(acc, a, "where");
  check(acc, b, "where");
  check_kind(mask, Kind::Bool, "where");
  check_same(a, b, "where");
  if (mask.device != a.device)
    detail::raise<DeviceError>("device", "where: mask lives on cpu:{}, operands on cpu:{}",
                               mask.device, a.device);
  Shape shape = broadcast_shapes(mask.shape, broadcast_shapes(a.shape, b.shape, "where"), "where");
  const std::int64_t n = shape.numel();
  CpuTensor out = reusable(a, n, a.dtype)   ? CpuTensor{a.buf, shape, a.dtype, a.device}
                  : reusable(b, n, b.dtype) ? CpuTensor{b.buf, shape, b.dtype, b.device}
                                            : alloc(acc, a.device, shape, a.dtype);
  visit_dtype(a.dtype, [&]<class E>(E) {
    using T = std::conditional_t<is_half_v<E>, std::uint16_t, E>;  // moved as bits
    const auto so = shape.strides();
    const auto sm = broadcast_strides(mask.shape, shape);
    const auto sa = broadcast_strides(a.shape, shape);
    const auto sb = broadcast_strides(b.shape, shape);
    const auto l = make_loop<4>(shape.dims(), {so, sm, sa, sb});
    T* po = out.data<T>();
    const auto* pm = mask.data<const std::uint8_t>();
    const T* pa = a.data<const T>();
    const T* pb = b.data<const T>();
    const auto im = l.inner_stride(1), ia = l.inner_stride(2), ib = l.inner_stride(3);
    run_loop(l, kGrain, [&](const std::array<std::int64_t, 4>& off, std::int64_t len) {
      T* o = po + off[0];
      const std::uint8_t* m = pm + off[1];
      const T* x = pa + off[2];
      const T* y = pb + off[3];
      if (im == 1 && ia == 1 && ib == 1) {
        ArrMap<T>(o, len) = (ConstArrMap<std::uint8_t>(m, len) != std::uint8_t{0})
                                .select(ConstArrMap<T>(x, len), ConstArrMap<T>(y, len));
      } else {
        for (std::int64_t i = 0; i < len; ++i) o[i] = m[i * im] ? x[i * ia] : y[i * ib];
      }
    });
  });
  return out;
}

}  // namespace ferry::detail::cpu

// Ferry: EigenCpu's elementwise kernels: the dtype traits and f16/bf16 chunking every family
// uses, broadcast binary ops (arithmetic and the two logical ops) on Eigen array maps, and the
// cast kernel's declaration. Comparisons: compare.hpp; unary ops, clamp, where: unary.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>
#include <variant>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/convert.hpp"
#include "ferry/backends/eigen_cpu/loops.hpp"
#include "ferry/config.hpp"
#include "ferry/detail/half_bulk.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

template <class T>
using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using ArrMap = Eigen::Map<Arr<T>>;
template <class T>
using ConstArrMap = Eigen::Map<const Arr<T>>;

/// Every dtype's element but bool.
template <class T>
inline constexpr bool is_numeric_v = !std::is_same_v<T, bool>;
/// f32, f64, f16 and bf16 (the Float kind).
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;
/// The eight integer dtypes' elements (the Int kind).
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
/// The unsigned type integer arithmetic wraps in: T's own, or unsigned int for the types that
/// C++ would promote to (signed) int, whose products could otherwise overflow (UB).
template <class T>
using wrap_t =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

/// f16/bf16 kernels compute in f32 and round each result once, a chunk at a time.
inline constexpr std::int64_t kHalfChunk = 512;

/// n elements of a 16-bit float to f32 (exact), and back (rounded once to nearest even).
template <class H>
void widen(const H* in, float* out, std::int64_t n) noexcept {
  widen_n(in, out, n);
}
template <class H>
void narrow(const float* in, H* out, std::int64_t n) noexcept {
  narrow_n(in, out, n);
}

// ---------------------------------------------------------------------------------------------
// Binary arithmetic (and the two logical ops, which share the broadcast machinery).

enum class BinOp : std::uint8_t {
  add,
  sub,
  mul,
  div,
  pow,
  maximum,
  minimum,
  remainder,
  fmod,
  atan2,
  hypot,
  prelu,
  bitwise_and,
  bitwise_or,
  bitwise_xor,
  bitwise_left_shift,
  bitwise_right_shift,
  logical_and,
  logical_or,
  logical_xor
};

constexpr const char* op_name(BinOp op) noexcept {
  constexpr const char* names[] = {"add",
                                   "sub",
                                   "mul",
                                   "div",
                                   "pow",
                                   "maximum",
                                   "minimum",
                                   "remainder",
                                   "fmod",
                                   "atan2",
                                   "hypot",
                                   "prelu",
                                   "bitwise_and",
                                   "bitwise_or",
                                   "bitwise_xor",
                                   "bitwise_left_shift",
                                   "bitwise_right_shift",
                                   "logical_and",
                                   "logical_or",
                                   "logical_xor"};
  return names[static_cast<int>(op)];
}
constexpr bool is_logical(BinOp op) noexcept {
  return op == BinOp::logical_and || op == BinOp::logical_or || op == BinOp::logical_xor;
}
constexpr bool is_bitwise(BinOp op) noexcept {
  return op >= BinOp::bitwise_and && op <= BinOp::bitwise_right_shift;
}
/// The float-only ops (atan2, hypot, prelu).
constexpr bool is_float_only(BinOp op) noexcept {
  return op == BinOp::atan2 || op == BinOp::hypot || op == BinOp::prelu;
}

/// torch's shifts: a shift by a negative amount or by the width or more gives 0 to the left;
/// to the right, the sign (0 or -1) for signed types and 0 for unsigned ones. Otherwise `a << b`
/// in unsigned arithmetic (bits shifted out are lost, never UB) and `a >> b` arithmetic.
template <class T>
constexpr T shift_left(T a, T b) noexcept {
  using U = std::make_unsigned_t<T>;
  constexpr auto bits = static_cast<long long>(sizeof(T) * 8);
  const auto k = static_cast<long long>(b);
  if (k < 0 || k >= bits) return T(0);
  return static_cast<T>(static_cast<U>(static_cast<wrap_t<T>>(static_cast<U>(a)) << k));
}
template <class T>
constexpr T shift_right(T a, T b) noexcept {
  constexpr auto bits = static_cast<long long>(sizeof(T) * 8);
  const auto k = static_cast<long long>(b);
  if (k < 0 || k >= bits) return std::is_signed_v<T> && a < 0 ? T(-1) : T(0);
  return static_cast<T>(a >> k);  // arithmetic for signed (C++20 defines it)
}

/// x^e for integers by squaring, wrapping on overflow (e >= 0 is checked before).
template <class T>
constexpr T ipow(T x, T e) noexcept {
  using U = std::make_unsigned_t<T>;
  using W = wrap_t<T>;
  W base = static_cast<U>(x), r = 1;
  for (auto k = static_cast<U>(e); k != 0; k >>= 1) {
    if (k & 1U) r = static_cast<U>(r * base);
    base = static_cast<U>(base * base);
  }
  return static_cast<T>(r);
}

/// One element of a binary op. Integer add/sub/mul/neg wrap (computed unsigned, so never
/// UB); div floors (torch's and Python's `//`) and INT_MIN / -1 wraps to INT_MIN; remainder
/// takes the sign of the divisor (torch.remainder), so a == (a / b) * b + a % b always holds;
/// fmod takes the sign of the dividend (C's `%`, std::fmod, torch.fmod). Zero divisors and
/// negative integer exponents are rejected before any element is computed.
template <BinOp op, class T>
inline T binary_one(T a, T b) noexcept {
  if constexpr (op == BinOp::logical_and || op == BinOp::bitwise_and) {
    return static_cast<T>(a & b);
  } else if constexpr (op == BinOp::logical_or || op == BinOp::bitwise_or) {
    return static_cast<T>(a | b);
  } else if constexpr (op == BinOp::logical_xor || op == BinOp::bitwise_xor) {
    return static_cast<T>(a ^ b);
  } else if constexpr (op == BinOp::bitwise_left_shift) {
    return shift_left(a, b);
  } else if constexpr (op == BinOp::bitwise_right_shift) {
    return shift_right(a, b);
  } else if constexpr (op == BinOp::atan2 || op == BinOp::hypot) {
    // f32 through double: one rounding of a result within a hair of exact.
    using C = std::conditional_t<std::is_same_v<T, float>, double, T>;
    if constexpr (op == BinOp::atan2)
      return static_cast<T>(std::atan2(static_cast<C>(a), static_cast<C>(b)));
    else
      return static_cast<T>(std::hypot(static_cast<C>(a), static_cast<C>(b)));
  } else if constexpr (op == BinOp::prelu) {
    return a > T(0) ? a : b * a;  // NaN: b * NaN is NaN
  } else if constexpr (std::is_integral_v<T>) {
    using W = wrap_t<T>;
    using U = std::make_unsigned_t<T>;
    if constexpr (op == BinOp::add)
      return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) + static_cast<U>(b)));
    if constexpr (op == BinOp::sub)
      return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) - static_cast<U>(b)));
    if constexpr (op == BinOp::mul)
      return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<U>(b)));
    if constexpr (std::is_unsigned_v<T>) {
      if constexpr (op == BinOp::div) return static_cast<T>(a / b);
      if constexpr (op == BinOp::remainder || op == BinOp::fmod) return static_cast<T>(a % b);
    } else {
      if constexpr (op == BinOp::div) {
        if (b == T(-1)) return static_cast<T>(W(0) - static_cast<W>(static_cast<U>(a)));
        const T q = static_cast<T>(a / b);
        return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
      }
      if constexpr (op == BinOp::remainder) {
        if (b == T(-1)) return T(0);
        T r = static_cast<T>(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
      }
      if constexpr (op == BinOp::fmod) return b == T(-1) ? T(0) : static_cast<T>(a % b);
    }
    if constexpr (op == BinOp::pow) return ipow(a, b);
    if constexpr (op == BinOp::maximum) return a > b ? a : b;
    if constexpr (op == BinOp::minimum) return a < b ? a : b;
  } else {
    if constexpr (op == BinOp::add) return a + b;
    if constexpr (op == BinOp::sub) return a - b;
    if constexpr (op == BinOp::mul) return a * b;
    if constexpr (op == BinOp::div) return a / b;
    if constexpr (op == BinOp::pow) return std::pow(a, b);
    if constexpr (op == BinOp::remainder) {
      T r = std::fmod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    if constexpr (op == BinOp::fmod) return std::fmod(a, b);
    if constexpr (op == BinOp::maximum) return (a != a || b != b) ? a + b : (a > b ? a : b);
    if constexpr (op == BinOp::minimum) return (a != a || b != b) ? a + b : (a < b ? a : b);
  }
}

/// The Eigen expression of a binary op over two array expressions: Eigen's packet ops where
/// they exist with the right semantics, else a scalar functor Eigen still unrolls.
template <BinOp op, class T, class X, class Y>
auto binary_expr(const X& x, const Y& y) {
  if constexpr (std::is_floating_point_v<T> && op == BinOp::add) {
    return x + y;
  } else if constexpr (std::is_floating_point_v<T> && op == BinOp::sub) {
    return x - y;
  } else if constexpr (std::is_floating_point_v<T> && op == BinOp::mul) {
    return x * y;
  } else if constexpr (std::is_floating_point_v<T> && op == BinOp::div) {
    return x / y;
  } else if constexpr (op == BinOp::maximum) {
    return x.binaryExpr(y, Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>());
  } else if constexpr (op == BinOp::minimum) {
    return x.binaryExpr(y, Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>());
  } else {
    return x.binaryExpr(y, [](T a, T b) { return binary_one<op, T>(a, b); });
  }
}

template <BinOp op, class T>
void binary_run_plain(T* o, const T* a, bool va, const T* b, bool vb, std::int64_t n);

/// One inner run: `n` outputs from operands that step 1 (`va`/`vb` true) or 0 (broadcast).
/// Floats go through Eigen's packet ops; integer ops are plain loops (their wrap/trunc rules
/// have no packet form, and plain loops keep the instantiation cost of a TU down).
template <BinOp op, class T>
void binary_run(T* o, const T* a, bool va, const T* b, bool vb, std::int64_t n) {
  if constexpr (is_half_v<T>) {  // in f32, a chunk at a time, each result rounded once
    float x[kHalfChunk], y[kHalfChunk], z[kHalfChunk];
    if (!va) widen(a, x, 1);
    if (!vb) widen(b, y, 1);
    for (std::int64_t i = 0; i < n; i += kHalfChunk) {
      const std::int64_t len = std::min(kHalfChunk, n - i);
      if (va) widen(a + i, x, len);
      if (vb) widen(b + i, y, len);
      binary_run<op, float>(z, x, va, y, vb, len);
      narrow(z, o + i, len);
    }
  } else {
    binary_run_plain<op, T>(o, a, va, b, vb, n);
  }
}

template <BinOp op, class T>
void binary_run_plain(T* o, const T* a, bool va, const T* b, bool vb, std::int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    ArrMap<T> out(o, n);
    if (va && vb) {
      out = binary_expr<op, T>(ConstArrMap<T>(a, n), ConstArrMap<T>(b, n));
      return;
    }
    if (va) {
      out = binary_expr<op, T>(ConstArrMap<T>(a, n), Arr<T>::Constant(n, *b));
      return;
    }
  }
  const std::int64_t sa = va ? 1 : 0, sb = vb ? 1 : 0;
  for (std::int64_t i = 0; i < n; ++i) o[i] = binary_one<op, T>(a[i * sa], b[i * sb]);
}

/// Rejects the values an integer op has no answer for, before anything is computed.
template <BinOp op, class T>
void check_domain(const T* b, std::int64_t n) {
  if constexpr (is_int_v<T>) {
    if constexpr (op == BinOp::div || op == BinOp::remainder || op == BinOp::fmod) {
      for (std::int64_t i = 0; i < n; ++i)
        if (b[i] == T(0))
          detail::raise<ValueError>("cpu.zero_division", "{}: integer division by zero ({})",
                                    op_name(op), dtype_of<T>);
    } else if constexpr (op == BinOp::pow && std::is_signed_v<T>) {
      for (std::int64_t i = 0; i < n; ++i)
        if (b[i] < T(0))
          detail::raise<ValueError>("cpu.pow",
                                    "pow: integer base to the negative exponent {} ({}); "
                                    "cast to a float dtype first",
                                    b[i], dtype_of<T>);
    }
  }
}

/// The dtypes an op is instantiated for: logical ops on bool, bitwise ops on the integers,
/// atan2/hypot/prelu on the floats, the others on every numeric dtype.
template <BinOp op, class T>
inline constexpr bool binary_valid_v = is_logical(op)      ? !is_numeric_v<T>
                                       : is_bitwise(op)    ? is_int_v<T>
                                       : is_float_only(op) ? is_float_v<T>
                                                           : is_numeric_v<T>;

template <BinOp op>
void check_binary_dtype(DType d) {
  const Kind k = kind_of(d);
  const bool ok = is_logical(op)      ? k == Kind::Bool
                  : is_bitwise(op)    ? k == Kind::Int
                  : is_float_only(op) ? k == Kind::Float
                                      : (k == Kind::Float || k == Kind::Int);
  if (!ok)
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported{}", op_name(op), d,
                              is_logical(op)      ? " (bool only)"
                              : is_bitwise(op)    ? " (integer dtypes only)"
                              : is_float_only(op) ? " (float dtypes only)"
                                                  : " (float and integer dtypes only)");
}

/// `op(a, b)` with numpy broadcasting; writes into a or b when the kernel holds it alone.
template <BinOp op>
CpuTensor binary(const AccountsPtr& acc, CpuTensor a, CpuTensor b) {
  constexpr const char* name = op_name(op);
  check(acc, a, name);
  check(acc, b, name);
  check_same(a, b, name);
  check_binary_dtype<op>(a.dtype);
  Shape shape = a.shape == b.shape ? a.shape : broadcast_shapes(a.shape, b.shape, name);
  const std::int64_t n = shape.numel();
  CpuTensor out = reusable(a, n, a.dtype)   ? CpuTensor{a.buf, shape, a.dtype, a.device}
                  : reusable(b, n, b.dtype) ? CpuTensor{b.buf, shape, b.dtype, b.device}
                                            : alloc(acc, a.device, shape, a.dtype);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (binary_valid_v<op, T>) {
      if (n > 0) check_domain<op, T>(b.data<const T>(), b.numel());
      T* po = out.data<T>();
      const T* pa = a.data<const T>();
      const T* pb = b.data<const T>();
      if (a.shape == b.shape) {
        // Operands of one shape (the common case, and every tiny op): one flat loop, without
        // the strides and loop descriptor (heap vectors) that broadcasting needs.
        parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
          binary_run<op, T>(po + lo, pa + lo, true, pb + lo, true, hi - lo);
        });
        return;
      }
      const auto so = shape.strides();
      const auto sa = broadcast_strides(a.shape, shape);
      const auto sb = broadcast_strides(b.shape, shape);
      const auto l = make_loop<3>(shape.dims(), {so, sa, sb});
      const bool va = l.inner_stride(1) != 0, vb = l.inner_stride(2) != 0;
      run_loop(l, kGrain, [&](const std::array<std::int64_t, 3>& off, std::int64_t len) {
        binary_run<op, T>(po + off[0], pa + off[1], va, pb + off[2], vb, len);
      });
    }
  });
  return out;
}

/// `op(a, s)`: the scalar taken exactly in a's dtype (see scalar_operand).
template <BinOp op>
CpuTensor binary_scalar(const AccountsPtr& acc, CpuTensor a, const Scalar& s) {
  constexpr const char* name = op_name(op);
  check(acc, a, name);
  check_binary_dtype<op>(a.dtype);
  const std::int64_t n = a.numel();
  CpuTensor out = reuse_or_alloc(acc, a, a.shape, a.dtype);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (binary_valid_v<op, T>) {
      T v;
      if constexpr (is_numeric_v<T>)
        v = scalar_operand<T>(s, name);
      else
        v = scalar_cast<T>(s);
      check_domain<op, T>(&v, 1);
      T* po = out.data<T>();
      const T* pa = a.data<const T>();
      parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
        binary_run<op, T>(po + lo, pa + lo, true, &v, false, hi - lo);
      });
    }
  });
  return out;
}

/// Casts `a` to `to` (see convert for the rules); the same dtype returns `a` itself. Defined in
/// impl/cast.hpp and compiled once (src/eigen_cpu/cast.cpp), not in every kernel file that casts:
/// its 13 x 13 conversion loops would otherwise be compiled by each of them.
FERRY_FUNC CpuTensor cast(const AccountsPtr& acc, CpuTensor a, DType to, const char* op);

}  // namespace ferry::detail::cpu

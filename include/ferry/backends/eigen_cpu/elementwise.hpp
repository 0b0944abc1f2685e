// Ferry: EigenCpu's elementwise kernels: broadcast binary ops, comparisons, logical ops,
// unary maths, clamp, where and casts, on Eigen array maps.
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
#include "ferry/backends/eigen_cpu/math.hpp"
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
  logical_and,
  logical_or
};

constexpr const char* op_name(BinOp op) noexcept {
  constexpr const char* names[] = {"add",  "sub",         "mul",       "div",
                                   "pow",  "maximum",     "minimum",   "remainder",
                                   "fmod", "logical_and", "logical_or"};
  return names[static_cast<int>(op)];
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
  if constexpr (op == BinOp::logical_and) {
    return static_cast<T>(a & b);
  } else if constexpr (op == BinOp::logical_or) {
    return static_cast<T>(a | b);
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

/// The dtypes an op is instantiated for: logical ops on bool, the others on f32/f64/i32/i64.
template <BinOp op, class T>
inline constexpr bool binary_valid_v = (op == BinOp::logical_and || op == BinOp::logical_or)
                                           ? !is_numeric_v<T>
                                           : is_numeric_v<T>;

template <BinOp op>
void check_binary_dtype(DType d) {
  constexpr bool logical = op == BinOp::logical_and || op == BinOp::logical_or;
  if (logical ? d != DType::boolean : (d == DType::boolean || d == DType::quantized))
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported{}", op_name(op), d,
                              logical ? " (bool only)" : " (float and integer dtypes only)");
}

/// `op(a, b)` with numpy broadcasting; writes into a or b when the kernel holds it alone.
template <BinOp op>
CpuTensor binary(const AccountsPtr& acc, CpuTensor a, CpuTensor b) {
  constexpr const char* name = op_name(op);
  check(acc, a, name);
  check(acc, b, name);
  check_same(a, b, name);
  check_binary_dtype<op>(a.dtype);
  Shape shape = broadcast_shapes(a.shape, b.shape, name);
  const std::int64_t n = shape.numel();
  CpuTensor out = reusable(a, n, a.dtype)   ? CpuTensor{a.buf, shape, a.dtype, a.device}
                  : reusable(b, n, b.dtype) ? CpuTensor{b.buf, shape, b.dtype, b.device}
                                            : alloc(acc, a.device, shape, a.dtype);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (binary_valid_v<op, T>) {
      if (n > 0) check_domain<op, T>(b.data<const T>(), b.numel());
      const auto so = shape.strides();
      const auto sa = broadcast_strides(a.shape, shape);
      const auto sb = broadcast_strides(b.shape, shape);
      const auto l = make_loop<3>(shape.dims(), {so, sa, sb});
      T* po = out.data<T>();
      const T* pa = a.data<const T>();
      const T* pb = b.data<const T>();
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
  Shape shape = broadcast_shapes(a.shape, b.shape, name);
  const std::int64_t n = shape.numel();
  CpuTensor out = reusable(a, n, DType::boolean) ? CpuTensor{a.buf, shape, DType::boolean, a.device}
                  : reusable(b, n, DType::boolean)
                      ? CpuTensor{b.buf, shape, DType::boolean, b.device}
                      : alloc(acc, a.device, shape, DType::boolean);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (compare_valid_v<op, T>) {
      const auto so = shape.strides();
      const auto sa = broadcast_strides(a.shape, shape);
      const auto sb = broadcast_strides(b.shape, shape);
      const auto l = make_loop<3>(shape.dims(), {so, sa, sb});
      auto* po = out.data<std::uint8_t>();
      const T* pa = a.data<const T>();
      const T* pb = b.data<const T>();
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

/// Casts `a` to `to` (see convert for the rules); the same dtype returns `a` itself. Defined in
/// impl/cast.hpp and compiled once (src/eigen_cpu/cast.cpp), not in every kernel file that casts:
/// its 13 x 13 conversion loops would otherwise be compiled by each of them.
FERRY_FUNC CpuTensor cast(const AccountsPtr& acc, CpuTensor a, DType to, const char* op);

}  // namespace ferry::detail::cpu

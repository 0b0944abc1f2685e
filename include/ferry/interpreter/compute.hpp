// Ferry: the interpreter's op bodies for creation, element-wise ops, reductions, scans,
// sorting and matmul: Interpreter<B>::run for each (declared in ferry/interpreter.hpp).
// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <span>
#include <type_traits>
#include <utility>

#include "ferry/interpreter.hpp"

namespace ferry {

// ---- data in / out, creation -------------------------------------------------------
template <Backend B>
void Interpreter<B>::run(op::FromData& o) {
  detail::with_plain_kind(o.out.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    if constexpr (K == Kind::Float)
      put<K>(o.out, b_.float_from_data(std::move(o.data), device_));
    else if constexpr (K == Kind::Int)
      put<K>(o.out, b_.int_from_data(std::move(o.data), device_));
    else
      put<K>(o.out, b_.bool_from_data(std::move(o.data), device_));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Full& o) {
  const auto& s = o.out.shape;
  const auto d = o.out.dtype;
  detail::with_plain_kind(d, [&]<Kind K>(std::integral_constant<Kind, K>) {
    if constexpr (K == Kind::Float)
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, float_full, s, d, o.value, device_));
    else if constexpr (K == Kind::Int)
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, int_full, s, d, o.value, device_));
    else
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, bool_full, s, d, o.value, device_));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Arange& o) {
  const auto n = o.out.shape.numel();
  const auto d = o.out.dtype;
  detail::with_plain_kind(d, [&]<Kind K>(std::integral_constant<Kind, K>) {
    if constexpr (K == Kind::Float)
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, float_arange, o.start, o.step, n, d, device_));
    else if constexpr (K == Kind::Int)
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, int_arange, o.start, o.step, n, d, device_));
    else
      detail::raise<DTypeError>("dtype", "arange: bool is not a valid dtype");
  });
}

template <Backend B>
void Interpreter<B>::run(op::RandomInt& o) {
  put<Kind::Int>(o.out, FERRY_KERNEL(H<Kind::Int>, b_, int_random, o.out.shape, o.out.dtype, o.low,
                                     o.high, o.seed, device_));
}

template <Backend B>
void Interpreter<B>::run(op::Random& o) {
  put<Kind::Float>(o.out, FERRY_KERNEL(H<Kind::Float>, b_, float_random, o.out.shape, o.out.dtype,
                                       o.dist, o.seed, device_));
}

// ---- elementwise -------------------------------------------------------------------------
template <Backend B>
void Interpreter<B>::run(op::Unary& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, name(o.kind));
    switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                \
  case UnaryKind::n:                                        \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n, std::move(x))); \
    break;
      FERRY_UNARY_KINDS(FERRY_DETAIL_CASE)
      FERRY_UNARY_COMPOSITE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
#define FERRY_DETAIL_CASE(n)                                                  \
  case UnaryKind::n:                                                          \
    put<Kind::Bool>(o.out, FERRY_KERNEL(H<Kind::Bool>, b_, n, std::move(x))); \
    break;
      FERRY_PREDICATE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
    }
  });
}

template <Backend B>
void Interpreter<B>::run(op::Binary& o) {
  detail::with_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    const char* nm = name(o.kind);
    auto x = take<K>(o.lhs, nm);
    auto y = take<K>(o.rhs, nm);
    switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                              \
  case BinaryKind::n:                                                     \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n, std::move(x), std::move(y))); \
    break;
      FERRY_ARITH_KINDS(FERRY_DETAIL_CASE)
      FERRY_ARITH_COMPOSITE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
#define FERRY_DETAIL_CASE(n)                                                                \
  case BinaryKind::n:                                                                       \
    put<Kind::Bool>(o.out, FERRY_KERNEL(H<Kind::Bool>, b_, n, std::move(x), std::move(y))); \
    break;
      FERRY_COMPARE_KINDS(FERRY_DETAIL_CASE)
      FERRY_LOGICAL_KINDS(FERRY_DETAIL_CASE)
      FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
    }
  });
}

template <Backend B>
void Interpreter<B>::run(op::BinaryScalar& o) {
  detail::with_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.lhs, name(o.kind));
    switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                                \
  case BinaryKind::n:                                                       \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n##_scalar, std::move(x), o.rhs)); \
    break;
      FERRY_ARITH_KINDS(FERRY_DETAIL_CASE)
      FERRY_ARITH_COMPOSITE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
#define FERRY_DETAIL_CASE(n)                                                                  \
  case BinaryKind::n:                                                                         \
    put<Kind::Bool>(o.out, FERRY_KERNEL(H<Kind::Bool>, b_, n##_scalar, std::move(x), o.rhs)); \
    break;
      FERRY_COMPARE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
      default:
        detail::raise<Unsupported>("unsupported", "'{}' has no scalar form", name(o.kind));
    }
  });
}

template <Backend B>
void Interpreter<B>::run(op::Clamp& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, "clamp");
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, clamp, std::move(x), o.lo, o.hi));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Where& o) {
  auto m = take<Kind::Bool>(o.mask, "where");
  detail::with_plain_kind(o.a.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.a, "where");
    auto y = take<K>(o.b, "where");
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, where, std::move(m), std::move(x), std::move(y)));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Cast& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, "cast");
    detail::with_plain_kind(o.out.dtype, [&]<Kind KO>(std::integral_constant<Kind, KO>) {
      if constexpr (KO == Kind::Float)
        put<KO>(o.out, FERRY_KERNEL(H<KO>, b_, to_float, std::move(x), o.out.dtype));
      else if constexpr (KO == Kind::Int)
        put<KO>(o.out, FERRY_KERNEL(H<KO>, b_, to_int, std::move(x), o.out.dtype));
      else
        put<KO>(o.out, FERRY_KERNEL(H<KO>, b_, to_bool, std::move(x)));
    });
  });
}

// ---- reductions, matmul ------------------------------------------------------------------
template <Backend B>
void Interpreter<B>::run(op::Reduce& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, name(o.kind));
    switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                                  \
  case ReduceKind::n:                                                         \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n, std::move(x), o.dim, o.keepdim)); \
    break;
      FERRY_DETAIL_CASE(sum)
      FERRY_DETAIL_CASE(prod)
      FERRY_DETAIL_CASE(mean)
      FERRY_DETAIL_CASE(max)
      FERRY_DETAIL_CASE(min)
#undef FERRY_DETAIL_CASE
#define FERRY_DETAIL_CASE(n)                                                                  \
  case ReduceKind::n:                                                                         \
    put<Kind::Int>(o.out, FERRY_KERNEL(H<Kind::Int>, b_, n, std::move(x), o.dim, o.keepdim)); \
    break;
      FERRY_DETAIL_CASE(argmax) FERRY_DETAIL_CASE(argmin)
#undef FERRY_DETAIL_CASE
    }
  });
}

template <Backend B>
void Interpreter<B>::run(op::Scan& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, name(o.kind));
    switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                       \
  case ScanKind::n:                                                \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n, std::move(x), o.dim)); \
    break;
      FERRY_SCAN_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
    }
  });
}

template <Backend B>
void Interpreter<B>::run(op::Softmax& o) {
  auto x = take<Kind::Float>(o.in, name(o.kind));
  switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                                           \
  case SoftmaxKind::n:                                                                 \
    put<Kind::Float>(o.out, FERRY_KERNEL(H<Kind::Float>, b_, n, std::move(x), o.dim)); \
    break;
    FERRY_SOFTMAX_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
  }
}

template <Backend B>
void Interpreter<B>::run(op::Attention& o) {
  auto q = take<Kind::Float>(o.ins[0], "attention");
  auto k = take<Kind::Float>(o.ins[1], "attention");
  auto v = take<Kind::Float>(o.ins[2], "attention");
  std::optional<H<Kind::Float>> m;
  if (o.ins.size() > 3) m = take<Kind::Float>(o.ins[3], "attention");
  put<Kind::Float>(o.out, FERRY_KERNEL(H<Kind::Float>, b_, attention, std::move(q), std::move(k),
                                       std::move(v), std::move(m), o.causal, o.scale));
}

template <Backend B>
void Interpreter<B>::run(op::Argsort& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, "argsort");
    put<Kind::Int>(o.out,
                   FERRY_KERNEL(H<Kind::Int>, b_, argsort, std::move(x), o.dim, o.descending, o.k));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Matmul& o) {
  detail::with_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.lhs, "matmul");
    auto y = take<K>(o.rhs, "matmul");
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, matmul, std::move(x), std::move(y)));
  });
}

}  // namespace ferry

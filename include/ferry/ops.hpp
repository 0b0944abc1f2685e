// Ferry: the tensor operations — free functions and C++ operators over Tensor<B>.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "ferry/detail/has_kernel.hpp"
#include "ferry/detail/infer.hpp"
#include "ferry/ir.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/join.hpp"
#include "ferry/quant/transform.hpp"
#include "ferry/router.hpp"
#include "ferry/tensor.hpp"

// Every function takes its tensors by value: an lvalue argument is shared (read-only), a
// `std::move`d last copy may have its memory reused by the kernel. Checks of shapes, dtypes,
// axes and devices run here, at the call, in every execution mode.
namespace ferry {

namespace detail {
template <Backend B>
using TA = TensorAccess<B>;

/// The device all operands share, or DeviceError naming the devices. Operands of two routers
/// never share one: each router numbers its devices and its tensor ids from the start, so
/// the same index or id on another router names another registry's tensor.
template <Backend B, class... Ts>
std::size_t common_device(const char* op, const Tensor<B>& first, const Ts&... rest) {
  const auto& s0 = TA<B>::state(first, op);
  [[maybe_unused]] auto check = [&](const Tensor<B>& t) {
    const auto& s = TA<B>::state(t, op);
    if (s.core != s0.core)
      raise<DeviceError>("device",
                         "{}: operands belong to different routers (tensor {} on {} and tensor "
                         "{} on {} of another router); move data between routers through "
                         "to_data() and from_data()",
                         op, s0.id, s0.core->device(s0.device), s.id, s.core->device(s.device));
    if (s.device != s0.device)
      raise<DeviceError>("device",
                         "{}: operands are on different devices ({} and {}); move one with "
                         ".to(device) first",
                         op, s0.core->device(s0.device), s.core->device(s.device));
  };
  (check(rest), ...);
  return s0.device;
}

template <Backend B>
TensorRef out_ref(const Tensor<B>& like, Shape shape, DType dtype,
                  std::shared_ptr<const quant::Scheme> scheme = nullptr) {
  return TensorRef{TA<B>::state(like, "op").core->new_id(), std::move(shape), dtype,
                   Access::ReadOnly, std::move(scheme)};
}

/// The dtypes unary op `k` takes (DTypeError naming the op otherwise).
inline void check_unary(UnaryKind k, DType d) {
  const char* op = name(k);
  switch (k) {
    case UnaryKind::neg:
    case UnaryKind::abs:
    case UnaryKind::relu:
    case UnaryKind::round:
    case UnaryKind::floor:
    case UnaryKind::ceil:
    case UnaryKind::trunc:
    case UnaryKind::sign:
    case UnaryKind::isnan:
    case UnaryKind::isinf:
    case UnaryKind::isfinite:
      want_kind(op, d, {Kind::Float, Kind::Int}, "float or int operands");
      break;
    case UnaryKind::bitwise_not:
      want_kind(op, d, {Kind::Int}, "int operands (~ on bool is logical_not)");
      break;
    case UnaryKind::logical_not:
      want_kind(op, d, {Kind::Bool}, "bool operands");
      break;
    default:
      want_kind(op, d, {Kind::Float}, "float operands");
  }
}

template <Backend B>
Tensor<B> unary(UnaryKind k, Tensor<B> x) {
  const char* op = name(k);
  const auto dev = common_device(op, x);
  check_unary(k, x.dtype());
  op::Unary o{k, TA<B>::ref(x),
              out_ref(x, x.shape(), is_predicate(k) ? DType::boolean : x.dtype())};
  return emit(TA<B>::core(x, op), dev, std::move(o), x);
}

/// The dtypes binary op `k` takes, both operands of one dtype.
inline void check_binary(BinaryKind k, DType a, DType b) {
  const char* op = name(k);
  if (is_logical(k)) {
    want_kind(op, a, {Kind::Bool}, "bool operands");
    want_kind(op, b, {Kind::Bool}, "bool operands");
  } else if (k == BinaryKind::equal || k == BinaryKind::not_equal) {
    not_quantized(op, a);
  } else if (is_bitwise(k)) {
    want_kind(op, a, {Kind::Int}, "int operands");
  } else if (k == BinaryKind::atan2 || k == BinaryKind::hypot || k == BinaryKind::prelu) {
    want_kind(op, a, {Kind::Float}, "float operands");
  } else {
    want_kind(op, a, {Kind::Float, Kind::Int}, "float or int operands");
  }
  same_dtype(op, a, b);
}

template <Backend B>
Tensor<B> binary(BinaryKind k, Tensor<B> a, Tensor<B> b) {
  const char* op = name(k);
  const auto dev = common_device(op, a, b);
  check_binary(k, a.dtype(), b.dtype());
  Shape s = broadcast(op, a.shape(), b.shape());
  const DType od = is_comparison(k) || is_logical(k) ? DType::boolean : a.dtype();
  op::Binary o{k, TA<B>::ref(a), TA<B>::ref(b), out_ref(a, std::move(s), od)};
  return emit(TA<B>::core(a, op), dev, std::move(o), a, b);
}

/// The checks of binary_scalar, for its decompositions too.
inline void check_binary_scalar(BinaryKind k, DType a, const Scalar& s) {
  const char* op = name(k);
  if (is_logical(k)) raise<Unsupported>("unsupported", "'{}' has no scalar form", op);
  check_binary(k, a, a);
  // Checked here, not only in the kernel, so async callers hear of it at the call.
  if (!is_comparison(k)) scalar_fits(op, "scalar", s, a);
}

template <Backend B>
Tensor<B> binary_scalar(BinaryKind k, Tensor<B> a, Scalar s) {
  const char* op = name(k);
  const auto dev = common_device(op, a);
  check_binary_scalar(k, a.dtype(), s);
  const DType od = is_comparison(k) ? DType::boolean : a.dtype();
  op::BinaryScalar o{k, TA<B>::ref(a), s, out_ref(a, a.shape(), od)};
  return emit(TA<B>::core(a, op), dev, std::move(o), a);
}

template <Backend B>
Tensor<B> reduce(ReduceKind k, Tensor<B> x, std::optional<std::int64_t> dim, bool keepdim) {
  const char* op = name(k);
  const auto dev = common_device(op, x);
  if (k == ReduceKind::mean)
    want_kind(op, x.dtype(), {Kind::Float}, "float operands");
  else if (k == ReduceKind::max || k == ReduceKind::min)  // on bool: any and all, as torch
    want_kind(op, x.dtype(), {Kind::Float, Kind::Int, Kind::Bool}, "float, int or bool operands");
  else
    want_kind(op, x.dtype(), {Kind::Float, Kind::Int}, "float or int operands");
  std::optional<std::size_t> d;
  if (dim) d = x.shape().axis(*dim, op);
  const bool is_arg = k == ReduceKind::argmax || k == ReduceKind::argmin;
  if (!d && x.numel() == 0 && (is_arg || k == ReduceKind::max || k == ReduceKind::min))
    raise<ValueError>("value", "{}: tensor of shape {} is empty", op, x.shape());
  if (d && x.shape()[*d] == 0 && (is_arg || k == ReduceKind::max || k == ReduceKind::min))
    raise<ValueError>("value", "{}: dim {} of shape {} is empty", op, *d, x.shape());
  // Integer sums and products are i64, as in torch and numpy (accumulated in 64 bits).
  const bool widen =
      (k == ReduceKind::sum || k == ReduceKind::prod) && kind_of(x.dtype()) == Kind::Int;
  op::Reduce o{k, TA<B>::ref(x), d, keepdim,
               out_ref(x, reduced(x.shape(), d, keepdim),
                       is_arg  ? DType::i64
                       : widen ? accumulate_dtype(x.dtype())
                               : x.dtype())};
  return emit(TA<B>::core(x, op), dev, std::move(o), x);
}

/// Inclusive scan `k` along `dim`. cumsum and cumprod of integers run in i64 (u64 for u64) and
/// of bool as i64, as torch.cumsum; cummax and cummin keep the dtype (not bool).
template <Backend B>
Tensor<B> scan(ScanKind k, Tensor<B> x, std::int64_t dim) {
  const char* op = name(k);
  const auto dev = common_device(op, x);
  const bool accumulates = k == ScanKind::cumsum || k == ScanKind::cumprod;
  if (accumulates)
    want_kind(op, x.dtype(), {Kind::Float, Kind::Int, Kind::Bool}, "float, int or bool operands");
  else
    want_kind(op, x.dtype(), {Kind::Float, Kind::Int}, "float or int operands");
  const std::size_t d = x.shape().axis(dim, op);
  if (accumulates && kind_of(x.dtype()) != Kind::Float) {
    const DType to = x.dtype() == DType::boolean ? DType::i64 : accumulate_dtype(x.dtype());
    if (to != x.dtype()) x = cast(std::move(x), to);
  }
  op::Scan o{k, TA<B>::ref(x), d, out_ref(x, x.shape(), x.dtype())};
  return emit(TA<B>::core(x, op), dev, std::move(o), x);
}
}  // namespace detail

// ---- elementwise ---------------------------------------------------------------------------
#define FERRY_DETAIL_UNARY_FN(n)                      \
  template <Backend B>                                \
  [[nodiscard]] Tensor<B> n(Tensor<B> x) {            \
    return detail::unary(UnaryKind::n, std::move(x)); \
  }
FERRY_UNARY_KINDS(FERRY_DETAIL_UNARY_FN)
#undef FERRY_DETAIL_UNARY_FN

#define FERRY_DETAIL_BINARY_FN(n)                                     \
  template <Backend B>                                                \
  [[nodiscard]] Tensor<B> n(Tensor<B> a, Tensor<B> b) {               \
    return detail::binary(BinaryKind::n, std::move(a), std::move(b)); \
  }
FERRY_ARITH_KINDS(FERRY_DETAIL_BINARY_FN)
FERRY_COMPARE_KINDS(FERRY_DETAIL_BINARY_FN)
FERRY_LOGICAL_KINDS(FERRY_DETAIL_BINARY_FN)
#undef FERRY_DETAIL_BINARY_FN

#define FERRY_DETAIL_SCALAR_FN(n)                                 \
  template <Backend B>                                            \
  [[nodiscard]] Tensor<B> n(Tensor<B> a, Scalar s) {              \
    return detail::binary_scalar(BinaryKind::n, std::move(a), s); \
  }
FERRY_ARITH_KINDS(FERRY_DETAIL_SCALAR_FN)
FERRY_COMPARE_KINDS(FERRY_DETAIL_SCALAR_FN)
#undef FERRY_DETAIL_SCALAR_FN

/// min(max(x, lo), hi), as torch.clamp and ONNX Clip: with lo > hi every element is hi; NaN
/// elements stay NaN.
template <Backend B>
[[nodiscard]] Tensor<B> clamp(Tensor<B> x, Scalar lo, Scalar hi) {
  const auto dev = detail::common_device("clamp", x);
  detail::want_kind("clamp", x.dtype(), {Kind::Float, Kind::Int}, "float or int operands");
  detail::scalar_fits("clamp", "min", lo, x.dtype());
  detail::scalar_fits("clamp", "max", hi, x.dtype());
  op::Clamp o{detail::TA<B>::ref(x), lo, hi, detail::out_ref(x, x.shape(), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "clamp"), dev, std::move(o), x);
}

/// mask ? a : b, elementwise with three-way broadcasting.
template <Backend B>
[[nodiscard]] Tensor<B> where(Tensor<B> mask, Tensor<B> a, Tensor<B> b) {
  const auto dev = detail::common_device("where", mask, a, b);
  detail::want_kind("where", mask.dtype(), {Kind::Bool}, "a bool mask");
  detail::not_quantized("where", a.dtype());
  detail::same_dtype("where", a.dtype(), b.dtype());
  Shape s =
      detail::broadcast("where", detail::broadcast("where", mask.shape(), a.shape()), b.shape());
  op::Where o{detail::TA<B>::ref(mask), detail::TA<B>::ref(a), detail::TA<B>::ref(b),
              detail::out_ref(a, std::move(s), a.dtype())};
  return detail::emit(detail::TA<B>::core(a, "where"), dev, std::move(o), mask, a, b);
}

/// Converts to another plain dtype (float -> int truncates toward zero).
template <Backend B>
[[nodiscard]] Tensor<B> cast(Tensor<B> x, DType to) {
  const auto dev = detail::common_device("cast", x);
  detail::not_quantized("cast", x.dtype());
  if (to == DType::quantized)
    detail::raise<DTypeError>("dtype",
                              "cast: cannot cast to quantized; use quantize() or "
                              "quantize_dynamic() with a quant::Scheme");
  if (x.dtype() == to) return x;
  op::Cast o{detail::TA<B>::ref(x), detail::out_ref(x, x.shape(), to)};
  return detail::emit(detail::TA<B>::core(x, "cast"), dev, std::move(o), x);
}

// ---- reductions ------------------------------------------------------------------------------
#define FERRY_DETAIL_REDUCE_FN(n)                                                  \
  template <Backend B>                                                             \
  [[nodiscard]] Tensor<B> n(Tensor<B> x) {                                         \
    return detail::reduce(ReduceKind::n, std::move(x), std::nullopt, false);       \
  }                                                                                \
  template <Backend B>                                                             \
  [[nodiscard]] Tensor<B> n(Tensor<B> x, std::int64_t dim, bool keepdim = false) { \
    return detail::reduce(ReduceKind::n, std::move(x), dim, keepdim);              \
  }
FERRY_REDUCE_KINDS(FERRY_DETAIL_REDUCE_FN)
#undef FERRY_DETAIL_REDUCE_FN

// ---- scans -----------------------------------------------------------------------------------
/// torch.cumsum / cumprod / cummax / cummin (values) along `dim`: element i holds the sum,
/// product, max or min of elements 0..i. cummax and cummin propagate NaN from its position on.
#define FERRY_DETAIL_SCAN_FN(n)                              \
  template <Backend B>                                       \
  [[nodiscard]] Tensor<B> n(Tensor<B> x, std::int64_t dim) { \
    return detail::scan(ScanKind::n, std::move(x), dim);     \
  }
FERRY_SCAN_KINDS(FERRY_DETAIL_SCAN_FN)
#undef FERRY_DETAIL_SCAN_FN

// ---- matmul -----------------------------------------------------------------------------------
/// a [..., M, K] x b [..., K, N] with broadcast batch dims. With a quantized `b` ([K, N]) it
/// runs the quantized kernel: float activations times packed weights, dequantized tile by tile.
template <Backend B>
[[nodiscard]] Tensor<B> matmul(Tensor<B> a, Tensor<B> b) {
  const auto dev = detail::common_device("matmul", a, b);
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  if (sa.rank() < 2 || sb.rank() < 2)
    detail::raise<ShapeError>("shape", "matmul: operands need rank >= 2, got {} and {}", sa, sb);
  if (sa[sa.rank() - 1] != sb[sb.rank() - 2])
    detail::raise<ShapeError>("shape", "matmul: shapes {} and {} do not fit ({} != {})", sa, sb,
                              sa[sa.rank() - 1], sb[sb.rank() - 2]);
  if (b.is_quantized()) {
    detail::want_kind("matmul", a.dtype(), {Kind::Float}, "float activations");
    if (sb.rank() != 2)
      detail::raise<ShapeError>("shape",
                                "matmul: a quantized right operand must be 2-D [K, N], got {}", sb);
    std::vector<std::int64_t> o = sa.to_vector();
    o.back() = sb[1];
    op::QMatmul q{detail::TA<B>::ref(a), detail::TA<B>::ref(b),
                  detail::out_ref(a, Shape(o), a.dtype())};
    return detail::emit(detail::TA<B>::core(a, "matmul"), dev, std::move(q), a, b);
  }
  detail::want_kind("matmul", a.dtype(), {Kind::Float, Kind::Int}, "float or int operands");
  detail::same_dtype("matmul", a.dtype(), b.dtype());
  const Shape ba(std::vector<std::int64_t>(sa.begin(), sa.end() - 2));
  const Shape bb(std::vector<std::int64_t>(sb.begin(), sb.end() - 2));
  std::vector<std::int64_t> o;
  try {
    o = detail::broadcast("matmul", ba, bb).to_vector();
  } catch (const ShapeError&) {  // say which operands the batch dims came from
    detail::raise<ShapeError>(
        "shape", "matmul: batch dims {} of {} and {} of {} cannot be broadcast", ba, sa, bb, sb);
  }
  o.push_back(sa[sa.rank() - 2]);
  o.push_back(sb[sb.rank() - 1]);
  op::Matmul m{detail::TA<B>::ref(a), detail::TA<B>::ref(b),
               detail::out_ref(a, Shape(o), a.dtype())};
  return detail::emit(detail::TA<B>::core(a, "matmul"), dev, std::move(m), a, b);
}

// ---- operators ----------------------------------------------------------------------------------
template <class S>
concept ScalarLike = std::is_arithmetic_v<S>;

#define FERRY_DETAIL_OPERATOR(sym, fn)                             \
  template <Backend B>                                             \
  [[nodiscard]] Tensor<B> operator sym(Tensor<B> a, Tensor<B> b) { \
    return fn(std::move(a), std::move(b));                         \
  }                                                                \
  template <Backend B, ScalarLike S>                               \
  [[nodiscard]] Tensor<B> operator sym(Tensor<B> a, S s) {         \
    return fn(std::move(a), Scalar(s));                            \
  }
FERRY_DETAIL_OPERATOR(+, add)
FERRY_DETAIL_OPERATOR(-, sub)
FERRY_DETAIL_OPERATOR(*, mul)
FERRY_DETAIL_OPERATOR(/, div)
FERRY_DETAIL_OPERATOR(%, remainder)
FERRY_DETAIL_OPERATOR(==, equal)
FERRY_DETAIL_OPERATOR(!=, not_equal)
FERRY_DETAIL_OPERATOR(<, less)
FERRY_DETAIL_OPERATOR(<=, less_equal)
FERRY_DETAIL_OPERATOR(>, greater)
FERRY_DETAIL_OPERATOR(>=, greater_equal)
#undef FERRY_DETAIL_OPERATOR

template <Backend B, ScalarLike S>
[[nodiscard]] Tensor<B> operator+(S s, Tensor<B> a) {
  return add(std::move(a), Scalar(s));
}
template <Backend B, ScalarLike S>
[[nodiscard]] Tensor<B> operator*(S s, Tensor<B> a) {
  return mul(std::move(a), Scalar(s));
}
template <Backend B, ScalarLike S>
[[nodiscard]] Tensor<B> operator-(S s, Tensor<B> a) {
  return add(neg(std::move(a)), Scalar(s));
}
template <Backend B>
[[nodiscard]] Tensor<B> operator-(Tensor<B> a) {
  return neg(std::move(a));
}
template <Backend B>
[[nodiscard]] Tensor<B> operator!(Tensor<B> a) {
  return logical_not(std::move(a));
}

}  // namespace ferry

// reshape, permute, swap_dims, flip, expand, slice, slice_assign, cat, gather, index_select,
// repeat: the layout ops of the IR.
#include "ferry/ops/layout_ops.hpp"
// quantize, quantize_dynamic, dequantize and the q_* layout ops.
#include "ferry/ops/quantized.hpp"
// The composite ops (recorded whole, or as their decomposition) and the bitwise operators.
#include "ferry/ops/composite.hpp"
// softmax, logsumexp, any, all, max_abs, norm: decompositions into the ops above.
#include "ferry/ops/reductions.hpp"
// squeeze, unsqueeze, flatten, narrow, split, chunk, triu, tril, mask_fill, mask_where, pad.
#include "ferry/ops/layout.hpp"
// argsort, sort, topk, cummax/cummin with indices.
#include "ferry/ops/sort.hpp"
// scatter, scatter_add, select_assign (index_add), one_hot, unfold.
#include "ferry/ops/indexing.hpp"
// bernoulli.
#include "ferry/ops/random.hpp"
// linear, embedding, layer_norm, rms_norm, group_norm, batch_norm (inference), attention.
#include "ferry/ops/nn.hpp"
// conv1d/2d/3d, conv_transpose1d/2d/3d, unfold4d.
#include "ferry/ops/conv.hpp"
// interpolate: nearest, linear, bicubic.
#include "ferry/ops/interpolate.hpp"
// max/avg pools 1-D and 2-D, with indices, and the adaptive pools.
#include "ferry/ops/pool.hpp"

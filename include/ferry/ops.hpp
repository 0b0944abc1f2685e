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

// ---- layout -----------------------------------------------------------------------------------
template <Backend B>
[[nodiscard]] Tensor<B> q_reshape(Tensor<B> x, Shape shape);
template <Backend B>
[[nodiscard]] Tensor<B> q_permute(Tensor<B> x, std::vector<std::int64_t> perm);
template <Backend B>
[[nodiscard]] Tensor<B> q_flip(Tensor<B> x, std::vector<std::int64_t> axes);
template <Backend B>
[[nodiscard]] Tensor<B> q_slice(Tensor<B> x, std::vector<Range> ranges);

/// Same elements in a new shape (one dim may be -1). Quantized tensors go to q_reshape.
template <Backend B>
[[nodiscard]] Tensor<B> reshape(Tensor<B> x, Shape shape) {
  if (x.is_quantized()) return q_reshape(std::move(x), std::move(shape));
  const auto dev = detail::common_device("reshape", x);
  Shape s = detail::reshape_target("reshape", x.shape(), shape);
  op::Reshape o{detail::TA<B>::ref(x), detail::out_ref(x, std::move(s), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "reshape"), dev, std::move(o), x);
}
template <Backend B>
[[nodiscard]] Tensor<B> permute(Tensor<B> x, std::vector<std::int64_t> perm) {
  if (x.is_quantized()) return q_permute(std::move(x), std::move(perm));
  const auto dev = detail::common_device("permute", x);
  auto p = detail::permutation("permute", x.shape(), perm);
  std::vector<std::int64_t> s(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) s[i] = x.shape()[p[i]];
  op::Permute o{detail::TA<B>::ref(x), std::move(p),
                detail::out_ref(x, Shape(std::move(s)), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "permute"), dev, std::move(o), x);
}
template <Backend B>
[[nodiscard]] Tensor<B> swap_dims(Tensor<B> x, std::int64_t a, std::int64_t b) {
  const auto ia = x.shape().axis(a, "swap_dims");
  const auto ib = x.shape().axis(b, "swap_dims");
  std::vector<std::int64_t> perm(x.rank());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
  std::swap(perm[ia], perm[ib]);
  return permute(std::move(x), std::move(perm));
}
template <Backend B>
[[nodiscard]] Tensor<B> flip(Tensor<B> x, std::vector<std::int64_t> axes) {
  if (x.is_quantized()) return q_flip(std::move(x), std::move(axes));
  const auto dev = detail::common_device("flip", x);
  auto a = detail::distinct_axes("flip", x.shape(), axes);
  op::Flip o{detail::TA<B>::ref(x), std::move(a), detail::out_ref(x, x.shape(), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "flip"), dev, std::move(o), x);
}
/// Broadcasts to `shape` (numpy rules; may add leading dims). A -1 keeps that dim of `x`, as
/// torch's expand does.
template <Backend B>
[[nodiscard]] Tensor<B> expand(Tensor<B> x, Shape shape) {
  const auto dev = detail::common_device("expand", x);
  detail::not_quantized("expand", x.dtype());
  const Shape asked = shape;
  if (shape.rank() < x.rank())
    detail::raise<ShapeError>("shape", "expand: shape {} cannot be expanded to {} (fewer dims)",
                              x.shape(), asked);
  const std::size_t lead = shape.rank() - x.rank();
  for (std::size_t i = 0; i < shape.rank(); ++i) {
    if (shape[i] == -1 && i >= lead) shape[i] = x.shape()[i - lead];
    if (shape[i] < 0)
      detail::raise<ShapeError>("shape", "expand: target {} has an invalid dim {} at {}", asked,
                                shape[i], i);
  }
  if (detail::broadcast("expand", x.shape(), shape) != shape)
    detail::raise<ShapeError>("shape", "expand: shape {} cannot be expanded to {}", x.shape(),
                              asked);
  op::Expand o{detail::TA<B>::ref(x), detail::out_ref(x, std::move(shape), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "expand"), dev, std::move(o), x);
}
namespace detail {
/// Turns each range with a negative step into the positive-step range of the same elements
/// (start..end read from end - 1 down, every |step|, as burn's and ndarray's slices) and
/// returns the dims whose result must then be flipped.
inline std::vector<std::int64_t> reversed_ranges(const Shape& s, std::vector<Range>& ranges) {
  std::vector<std::int64_t> flips;
  for (std::size_t i = 0; i < ranges.size() && i < s.rank(); ++i) {
    Range& r = ranges[i];
    if (r.step >= 0) continue;
    if (r.step == std::numeric_limits<std::int64_t>::min())
      raise<IndexError>("range", "slice: step {} on dim {} has no magnitude in i64", r.step, i);
    const std::int64_t step = -r.step;
    const Range n =
        normalise_ranges("slice", Shape{s[i]}, std::vector<Range>{{r.start, r.end, 1}})[0];
    if (n.end > n.start) {
      const std::int64_t last = n.end - 1;
      r = Range{last - (last - n.start) / step * step, n.end, step};
    } else {
      r = Range{n.start, n.start, 1};
    }
    flips.push_back(static_cast<std::int64_t>(i));
  }
  return flips;
}
}  // namespace detail

/// Python-style ranges per leading dim (negative start/end = from the end, clamped). A step
/// >= 1 takes start, start + step, ...; a negative step takes the range's elements from end - 1
/// down, every |step| (burn's and ndarray's rule: [0..5; -2] is 4, 2, 0); 0 is an IndexError.
template <Backend B>
[[nodiscard]] Tensor<B> slice(Tensor<B> x, std::vector<Range> ranges) {
  const auto flips = detail::reversed_ranges(x.shape(), ranges);
  if (!flips.empty()) {
    auto y = slice(std::move(x), std::move(ranges));
    return flip(std::move(y), flips);
  }
  if (x.is_quantized()) return q_slice(std::move(x), std::move(ranges));
  const auto dev = detail::common_device("slice", x);
  auto r = detail::normalise_ranges("slice", x.shape(), ranges);
  Shape s = detail::sliced(x.shape(), r);
  op::Slice o{detail::TA<B>::ref(x), std::move(r), detail::out_ref(x, std::move(s), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "slice"), dev, std::move(o), x);
}
/// A copy of `x` with the slice replaced by `value` (whose shape must be the slice's).
template <Backend B>
[[nodiscard]] Tensor<B> slice_assign(Tensor<B> x, std::vector<Range> ranges, Tensor<B> value) {
  const auto dev = detail::common_device("slice_assign", x, value);
  detail::not_quantized("slice_assign", x.dtype());
  detail::same_dtype("slice_assign", x.dtype(), value.dtype());
  auto r = detail::normalise_ranges("slice_assign", x.shape(), ranges);
  if (detail::sliced(x.shape(), r) != value.shape())
    detail::raise<ShapeError>("shape", "slice_assign: the slice of {} has shape {}, the value {}",
                              x.shape(), detail::sliced(x.shape(), r), value.shape());
  op::SliceAssign o{detail::TA<B>::ref(x), std::move(r), detail::TA<B>::ref(value),
                    detail::out_ref(x, x.shape(), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "slice_assign"), dev, std::move(o), x, value);
}
template <Backend B>
[[nodiscard]] Tensor<B> cat(std::vector<Tensor<B>> xs, std::int64_t dim) {
  if (xs.empty()) detail::raise<ShapeError>("shape", "cat: no tensors given");
  const auto& first = xs.front();
  const auto d = first.shape().axis(dim, "cat");
  std::vector<std::int64_t> s = first.shape().to_vector();
  s[d] = 0;
  op::Cat o;
  for (const auto& t : xs) {
    (void)detail::common_device("cat", first, t);
    detail::not_quantized("cat", t.dtype());
    detail::same_dtype("cat", first.dtype(), t.dtype());
    if (t.rank() != first.rank())
      detail::raise<ShapeError>("shape", "cat: shapes {} and {} differ in rank", first.shape(),
                                t.shape());
    for (std::size_t i = 0; i < t.rank(); ++i)
      if (i != d && t.shape()[i] != first.shape()[i])
        detail::raise<ShapeError>("shape",
                                  "cat: shapes {} and {} differ in dim {} (not the cat dim {})",
                                  first.shape(), t.shape(), i, d);
    const auto sum = detail::add_i64(s[d], t.shape()[d]);
    if (!sum)
      detail::raise<ShapeError>("shape", "cat: dim {} of the result passes 2^63 - 1 (at {})", d,
                                t.shape());
    s[d] = *sum;
  }
  // Refs are taken after all copies exist: a tensor listed twice is shared, hence read-only.
  for (const auto& t : xs) o.ins.push_back(detail::TA<B>::ref(t));
  o.dim = d;
  o.out = detail::out_ref(first, Shape(std::move(s)), first.dtype());
  const auto dev = detail::TA<B>::state(first, "cat").device;
  auto core = detail::TA<B>::core(first, "cat");
  std::vector<Access> acc;
  for (const auto& r : o.ins) acc.push_back(r.access);
  return detail::submit_op(core, dev, std::move(o), [&] {
    for (std::size_t i = 0; i < xs.size(); ++i) detail::TA<B>::release(xs[i], acc[i]);
  });
}
/// `cat({a, b}, 0)`: the same for a braced list, whose element type a vector parameter cannot
/// deduce. An initializer_list can only be copied from, so its tensors are passed shared
/// (read-only); to let the kernel reuse last copies, fill a vector with push_back(std::move(t))
/// and move that in.
template <Backend B>
[[nodiscard]] Tensor<B> cat(std::initializer_list<Tensor<B>> xs, std::int64_t dim) {
  return cat(std::vector<Tensor<B>>(xs), dim);
}
/// torch.gather: out[i][j] = x[index[i][j]][j] along `dim`; index is an int tensor of x's rank.
template <Backend B>
[[nodiscard]] Tensor<B> gather(Tensor<B> x, std::int64_t dim, Tensor<B> index) {
  const auto dev = detail::common_device("gather", x, index);
  detail::not_quantized("gather", x.dtype());
  detail::want_kind("gather", index.dtype(), {Kind::Int}, "an int index");
  const auto d = x.shape().axis(dim, "gather");
  if (index.rank() != x.rank())
    detail::raise<ShapeError>("shape", "gather: index shape {} must have the rank of {}",
                              index.shape(), x.shape());
  for (std::size_t i = 0; i < x.rank(); ++i)
    if (i != d && index.shape()[i] > x.shape()[i])
      detail::raise<ShapeError>("shape", "gather: index shape {} exceeds {} in dim {}",
                                index.shape(), x.shape(), i);
  op::Gather o{detail::TA<B>::ref(x), d, detail::TA<B>::ref(index),
               detail::out_ref(x, index.shape(), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "gather"), dev, std::move(o), x, index);
}
/// Picks the entries `index` (1-D int) along `dim`.
template <Backend B>
[[nodiscard]] Tensor<B> index_select(Tensor<B> x, std::int64_t dim, Tensor<B> index) {
  const auto dev = detail::common_device("index_select", x, index);
  detail::not_quantized("index_select", x.dtype());
  detail::want_kind("index_select", index.dtype(), {Kind::Int}, "an int index");
  const auto d = x.shape().axis(dim, "index_select");
  if (index.rank() != 1)
    detail::raise<ShapeError>("shape", "index_select: index must be 1-D, got {}", index.shape());
  std::vector<std::int64_t> s = x.shape().to_vector();
  s[d] = index.shape()[0];
  op::IndexSelect o{detail::TA<B>::ref(x), d, detail::TA<B>::ref(index),
                    detail::out_ref(x, Shape(std::move(s)), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "index_select"), dev, std::move(o), x, index);
}
/// torch.Tensor.repeat: tiles `x` times[i] along dim i (times.size() == rank).
template <Backend B>
[[nodiscard]] Tensor<B> repeat(Tensor<B> x, std::vector<std::int64_t> times) {
  const auto dev = detail::common_device("repeat", x);
  detail::not_quantized("repeat", x.dtype());
  if (times.size() != x.rank())
    detail::raise<ShapeError>("shape", "repeat: {} repeat counts for shape {} of rank {}",
                              times.size(), x.shape(), x.rank());
  std::vector<std::int64_t> s = x.shape().to_vector();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (times[i] < 0)
      detail::raise<ValueError>("value", "repeat: count {} on dim {} is negative", times[i], i);
    const auto d = detail::mul_i64(s[i], times[i]);
    if (!d)
      detail::raise<ShapeError>("shape", "repeat: dim {} of {} repeated {} times passes 2^63 - 1",
                                i, x.shape(), times[i]);
    s[i] = *d;
  }
  op::Repeat o{detail::TA<B>::ref(x), std::move(times),
               detail::out_ref(x, Shape(std::move(s)), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "repeat"), dev, std::move(o), x);
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

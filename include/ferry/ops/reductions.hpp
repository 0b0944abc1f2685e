// Ferry: softmax, log_softmax, softmin, logsumexp, any, all, argmax/argmin with Ties::last,
// max/min_dim_with_indices, max_abs and norm, as decompositions into the primitive ops (so every
// backend has them). Included by ferry/ops.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "ferry/detail/has_kernel.hpp"
#include "ferry/ops.hpp"

// Semantics are PyTorch's (torch.softmax, torch.logsumexp, torch.any, torch.linalg.vector_norm);
// docs/math.md says how each is computed. f16 and bf16 are computed in f32 and rounded once at
// the end, as torch's CPU kernels accumulate halves in float.
namespace ferry {

namespace detail {
/// Checks `x` for a float-only op along `dim` and returns the normalised dim.
template <Backend B>
std::size_t float_dim_op(const char* op, const Tensor<B>& x, std::int64_t dim) {
  (void)common_device(op, x);
  want_kind(op, x.dtype(), {Kind::Float}, "float operands");
  return x.shape().axis(dim, op);
}
/// x in the dtype its maths runs in: f32 for the 16-bit floats, else itself.
template <Backend B>
Tensor<B> widened(Tensor<B> x) {
  const DType d = x.dtype();
  return d == DType::f16 || d == DType::bf16 ? cast(std::move(x), DType::f32) : x;
}
template <Backend B>
Tensor<B> narrowed(Tensor<B> y, DType to) {
  return y.dtype() == to ? y : cast(std::move(y), to);
}
/// x - max(x, dim): the stable shift of softmax; every element <= 0 when the row is finite.
template <Backend B>
Tensor<B> shifted(const Tensor<B>& x, std::int64_t dim) {
  return sub(x, max(x, dim, true));
}
}  // namespace detail

namespace detail {
namespace decompose {
/// softmax along dim d of a non-empty float tensor: exp(x - m) / sum(exp(x - m)).
template <Backend B>
Tensor<B> softmax(Tensor<B> x, std::size_t d) {
  const DType dt = x.dtype();
  const auto di = static_cast<std::int64_t>(d);
  auto e = exp(shifted(widened(std::move(x)), di));
  auto s = sum(e, di, true);
  return narrowed(div(std::move(e), std::move(s)), dt);
}
/// log_softmax along dim d of a non-empty float tensor: (x - m) - log(sum(exp(x - m))).
template <Backend B>
Tensor<B> log_softmax(Tensor<B> x, std::size_t d) {
  const DType dt = x.dtype();
  const auto di = static_cast<std::int64_t>(d);
  auto z = shifted(widened(std::move(x)), di);
  auto l = log(sum(exp(z), di, true));
  return narrowed(sub(std::move(z), std::move(l)), dt);
}
}  // namespace decompose

/// softmax or log_softmax along dim d, checked: the fused op when B has its kernel (recorded
/// for empty tensors too, which the kernel returns as they are), else the decomposition.
template <Backend B>
Tensor<B> softmax_like(SoftmaxKind k, Tensor<B> x, std::int64_t dim) {
  const char* op = name(k);
  const std::size_t d = float_dim_op(op, x, dim);
  const bool fused = k == SoftmaxKind::softmax ? has_kernel_softmax<B> : has_kernel_log_softmax<B>;
  if (fused) {
    const auto dev = common_device(op, x);
    op::Softmax o{k, TA<B>::ref(x), d, out_ref(x, x.shape(), x.dtype())};
    return emit(TA<B>::core(x, op), dev, std::move(o), x);
  }
  if (x.numel() == 0) return x;
  return k == SoftmaxKind::softmax ? decompose::softmax(std::move(x), d)
                                   : decompose::log_softmax(std::move(x), d);
}
}  // namespace detail

/// torch.softmax(x, dim): exp(x - m) / sum(exp(x - m)) with m the row's max, so no exp
/// overflows; a row of -inf but one finite value gives exactly 1 there and 0 elsewhere; a row
/// of -inf only, or with +inf or NaN, gives NaN (as torch). An empty tensor gives itself.
/// One fused op on a backend with the kernel (EigenCpu), else its decomposition.
template <Backend B>
[[nodiscard]] Tensor<B> softmax(Tensor<B> x, std::int64_t dim) {
  return detail::softmax_like(SoftmaxKind::softmax, std::move(x), dim);
}

/// torch.log_softmax(x, dim): (x - m) - log(sum(exp(x - m))), without the log of a quotient.
template <Backend B>
[[nodiscard]] Tensor<B> log_softmax(Tensor<B> x, std::int64_t dim) {
  return detail::softmax_like(SoftmaxKind::log_softmax, std::move(x), dim);
}

/// torch.nn.functional.softmin(x, dim) = softmax(-x, dim).
template <Backend B>
[[nodiscard]] Tensor<B> softmin(Tensor<B> x, std::int64_t dim) {
  (void)detail::float_dim_op("softmin", x, dim);
  return softmax(neg(std::move(x)), dim);
}

/// torch.logsumexp(x, dim, keepdim): m + log(sum(exp(x - m))), with m the max clamped to the
/// finite range so that a row of -inf gives -inf and one with +inf gives +inf (not NaN); NaN
/// propagates. An empty dim gives -inf (log of an empty sum).
template <Backend B>
[[nodiscard]] Tensor<B> logsumexp(Tensor<B> x, std::int64_t dim, bool keepdim = false) {
  const std::size_t d = detail::float_dim_op("logsumexp", x, dim);
  const auto di = static_cast<std::int64_t>(d);
  const DType dt = x.dtype();
  if (x.shape()[d] == 0)  // log(0), in the reduced shape
    return log(sum(std::move(x), di, keepdim));
  Shape out = detail::reduced(x.shape(), d, keepdim);
  auto w = detail::widened(std::move(x));
  const double big = w.dtype() == DType::f64 ? std::numeric_limits<double>::max()
                                             : std::numeric_limits<float>::max();
  auto m = clamp(max(w, di, true), Scalar(-big), Scalar(big));
  auto r = add(log(sum(exp(sub(std::move(w), m)), di, true)), m);
  return detail::narrowed(reshape(std::move(r), std::move(out)), dt);
}

namespace detail {
/// any (max of x != 0, false over nothing) or all (min, true over nothing), whole or along dim.
template <Backend B>
Tensor<B> any_all(const char* op, Tensor<B> x, std::optional<std::int64_t> dim, bool keepdim,
                  bool is_any) {
  (void)common_device(op, x);
  not_quantized(op, x.dtype());
  const bool empty = dim ? x.shape()[x.shape().axis(*dim, op)] == 0 : x.numel() == 0;
  if (empty) {  // the count of elements (0) compared with 0: false for any, true for all
    auto n = dim ? sum(cast(std::move(x), DType::i64), *dim, keepdim)
                 : sum(cast(std::move(x), DType::i64));
    return is_any ? not_equal(std::move(n), Scalar(0)) : equal(std::move(n), Scalar(0));
  }
  auto nz = x.dtype() == DType::boolean ? std::move(x) : not_equal(std::move(x), Scalar(0));
  if (!dim) return is_any ? max(std::move(nz)) : min(std::move(nz));
  return is_any ? max(std::move(nz), *dim, keepdim) : min(std::move(nz), *dim, keepdim);
}
}  // namespace detail

/// torch.any: true where some element is nonzero (NaN counts), over all elements or along
/// `dim`; any dtype, bool result; false over nothing.
template <Backend B>
[[nodiscard]] Tensor<B> any(Tensor<B> x) {
  return detail::any_all("any", std::move(x), std::nullopt, false, true);
}
template <Backend B>
[[nodiscard]] Tensor<B> any(Tensor<B> x, std::int64_t dim, bool keepdim = false) {
  return detail::any_all("any", std::move(x), dim, keepdim, true);
}
/// torch.all: true where every element is nonzero; true over nothing.
template <Backend B>
[[nodiscard]] Tensor<B> all(Tensor<B> x) {
  return detail::any_all("all", std::move(x), std::nullopt, false, false);
}
template <Backend B>
[[nodiscard]] Tensor<B> all(Tensor<B> x, std::int64_t dim, bool keepdim = false) {
  return detail::any_all("all", std::move(x), dim, keepdim, false);
}

/// Which index argmax and argmin give among equal extremes: the first (torch's) or the last.
enum class Ties { first, last };

namespace detail {
/// argmax/argmin with Ties::last: (n - 1) minus the index found in x flipped along the dim, so
/// the last of equal extremes (and the last NaN) wins.
template <Backend B>
Tensor<B> arg_last(ReduceKind k, Tensor<B> x, std::optional<std::int64_t> dim, bool keepdim) {
  const char* op = name(k);
  (void)common_device(op, x);
  if (!dim) {  // over the flattened tensor
    const std::int64_t n = x.numel();
    auto flat = flip(reshape(std::move(x), Shape{n}), {0});
    return add(neg(reduce(k, std::move(flat), std::nullopt, false)), Scalar(n - 1));
  }
  const std::size_t d = x.shape().axis(*dim, op);
  const std::int64_t n = x.shape()[d];
  auto flipped = flip(std::move(x), {static_cast<std::int64_t>(d)});
  auto i = reduce(k, std::move(flipped), static_cast<std::int64_t>(d), keepdim);
  return add(neg(std::move(i)), Scalar(n - 1));
}
}  // namespace detail

/// argmax / argmin choosing among ties: Ties::first is the plain argmax (torch), Ties::last the
/// last index of the extreme (of the last NaN, where there are NaNs).
template <Backend B>
[[nodiscard]] Tensor<B> argmax(Tensor<B> x, Ties ties) {
  if (ties == Ties::first) return argmax(std::move(x));
  return detail::arg_last(ReduceKind::argmax, std::move(x), std::nullopt, false);
}
template <Backend B>
[[nodiscard]] Tensor<B> argmax(Tensor<B> x, std::int64_t dim, bool keepdim, Ties ties) {
  if (ties == Ties::first) return argmax(std::move(x), dim, keepdim);
  return detail::arg_last(ReduceKind::argmax, std::move(x), dim, keepdim);
}
template <Backend B>
[[nodiscard]] Tensor<B> argmin(Tensor<B> x, Ties ties) {
  if (ties == Ties::first) return argmin(std::move(x));
  return detail::arg_last(ReduceKind::argmin, std::move(x), std::nullopt, false);
}
template <Backend B>
[[nodiscard]] Tensor<B> argmin(Tensor<B> x, std::int64_t dim, bool keepdim, Ties ties) {
  if (ties == Ties::first) return argmin(std::move(x), dim, keepdim);
  return detail::arg_last(ReduceKind::argmin, std::move(x), dim, keepdim);
}

/// The max (min) along `dim` and the index of each, as torch.max(x, dim): values of x's dtype,
/// i64 indices; a NaN is the max and its (first) index is given. One pass over x finds the
/// indices; the values are gathered at them (a read of the output's size), so each value is the
/// element its index names, sign of zero included.
template <Backend B>
struct ValuesIndices {
  Tensor<B> values, indices;
};
namespace detail {
template <Backend B>
ValuesIndices<B> extreme_with_indices(ReduceKind k, Tensor<B> x, std::int64_t dim, bool keepdim) {
  const char* op = k == ReduceKind::argmax ? "max_dim_with_indices" : "min_dim_with_indices";
  const auto d = static_cast<std::int64_t>(x.shape().axis(dim, op));
  auto i = k == ReduceKind::argmax ? argmax(x, d, true) : argmin(x, d, true);
  auto v = gather(std::move(x), d, i);
  if (keepdim) return {std::move(v), std::move(i)};
  return {squeeze(std::move(v), d), squeeze(std::move(i), d)};
}
}  // namespace detail
template <Backend B>
[[nodiscard]] ValuesIndices<B> max_dim_with_indices(Tensor<B> x, std::int64_t dim,
                                                    bool keepdim = false) {
  return detail::extreme_with_indices(ReduceKind::argmax, std::move(x), dim, keepdim);
}
template <Backend B>
[[nodiscard]] ValuesIndices<B> min_dim_with_indices(Tensor<B> x, std::int64_t dim,
                                                    bool keepdim = false) {
  return detail::extreme_with_indices(ReduceKind::argmin, std::move(x), dim, keepdim);
}

/// max(|x|) over all elements or along `dim` (burn's max_abs); float and int dtypes, NaN
/// propagates.
template <Backend B>
[[nodiscard]] Tensor<B> max_abs(Tensor<B> x) {
  return max(abs(std::move(x)));
}
template <Backend B>
[[nodiscard]] Tensor<B> max_abs(Tensor<B> x, std::int64_t dim, bool keepdim = false) {
  return max(abs(std::move(x)), dim, keepdim);
}

/// torch.linalg.vector_norm(x, ord, dim, keepdim) over all elements or along `dim`: ord inf is
/// max |x|, -inf min |x|, 0 the count of nonzeros, 1 sum |x|, 2 sqrt(sum x^2), any other p
/// (sum |x|^p)^(1/p). Float dtypes. The sums are not rescaled: as torch, a 2-norm of values
/// past sqrt(max) overflows to inf.
template <Backend B>
[[nodiscard]] Tensor<B> norm(Tensor<B> x, double ord = 2.0, std::optional<std::int64_t> dim = {},
                             bool keepdim = false) {
  (void)detail::common_device("norm", x);
  detail::want_kind("norm", x.dtype(), {Kind::Float}, "float operands");
  if (std::isnan(ord))
    detail::raise<ValueError>("value", "norm: ord must be a number or +-inf, got {}", ord);
  if (dim) (void)x.shape().axis(*dim, "norm");
  const DType dt = x.dtype();
  auto reduce_sum = [&](Tensor<B> t) {
    return dim ? sum(std::move(t), *dim, keepdim) : sum(std::move(t));
  };
  auto a = abs(detail::widened(std::move(x)));
  const DType wd = a.dtype();
  auto r = [&]() -> Tensor<B> {
    if (std::isinf(ord))
      return ord > 0 ? (dim ? max(std::move(a), *dim, keepdim) : max(std::move(a)))
                     : (dim ? min(std::move(a), *dim, keepdim) : min(std::move(a)));
    if (ord == 0) return reduce_sum(cast(not_equal(std::move(a), Scalar(0.0)), wd));
    if (ord == 1) return reduce_sum(std::move(a));
    if (ord == 2) {
      auto sq = mul(a, a);
      return sqrt(reduce_sum(std::move(sq)));
    }
    return pow(reduce_sum(pow(std::move(a), Scalar(ord))), Scalar(1.0 / ord));
  }();
  return detail::narrowed(std::move(r), dt);
}

}  // namespace ferry

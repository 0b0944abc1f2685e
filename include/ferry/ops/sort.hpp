// Ferry: argsort, sort, topk (one primitive op, op::Argsort, and a gather of the values), and
// cummax/cummin with indices (a decomposition). Included by ferry/ops.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "ferry/ops.hpp"
#include "ferry/ops/layout.hpp"
#include "ferry/ops/reductions.hpp"

// PyTorch's names and semantics (torch.sort with stable=True, torch.argsort, torch.topk,
// torch.cummax), with one rule of the operations issue where torch has none: NaN sorts after
// every number in both directions (torch puts it first when descending), so topk(largest) picks
// NaN only when fewer than k numbers are left.
namespace ferry {

namespace detail {
/// Records op::Argsort: the first `k` indices (all when k is empty) of a stable sort of x along
/// `dim`. A 0-d tensor sorts as one element (index 0), as torch.
template <Backend B>
Tensor<B> argsort_first(const char* op, Tensor<B> x, std::int64_t dim, bool descending,
                        std::optional<std::int64_t> k) {
  const auto dev = common_device(op, x);
  want_kind(op, x.dtype(), {Kind::Float, Kind::Int, Kind::Bool}, "float, int or bool operands");
  if (x.rank() == 0) {
    (void)Shape{1}.axis(dim, op);
    if (k && (*k < 0 || *k > 1))
      raise<ValueError>("value", "{}: k = {} is out of range for a 0-d tensor (0 or 1)", op, *k);
    auto i = argsort_first(op, reshape(std::move(x), Shape{1}), 0, descending, k);
    return k && *k == 0 ? i : reshape(std::move(i), Shape{});
  }
  const std::size_t d = x.shape().axis(dim, op);
  const std::int64_t n = x.shape()[d];
  if (k && (*k < 0 || *k > n))
    raise<ValueError>("value", "{}: k = {} is out of range for dim {} of shape {} (0 to {})", op,
                      *k, d, x.shape(), n);
  const std::int64_t kk = k.value_or(n);
  op::Argsort o{TA<B>::ref(x), d, descending, static_cast<std::size_t>(kk),
                out_ref(x, with_dim(x.shape(), d, kk), DType::i64)};
  return emit(TA<B>::core(x, op), dev, std::move(o), x);
}
}  // namespace detail

/// torch.argsort(x, dim, descending, stable=True): the i64 indices that sort x along `dim`.
/// Equal values keep their order (-0 and +0 are equal); NaN comes after every number, also when
/// descending. Float, int and bool (false < true) dtypes.
template <Backend B>
[[nodiscard]] Tensor<B> argsort(Tensor<B> x, std::int64_t dim = -1, bool descending = false) {
  return detail::argsort_first("argsort", std::move(x), dim, descending, std::nullopt);
}

/// torch.sort(x, dim, descending, stable=True): the sorted values (bit copies of x's elements,
/// gathered) and their indices, as argsort orders them.
template <Backend B>
[[nodiscard]] ValuesIndices<B> sort(Tensor<B> x, std::int64_t dim = -1, bool descending = false) {
  auto i = detail::argsort_first("sort", x, dim, descending, std::nullopt);
  if (x.rank() == 0) return {std::move(x), std::move(i)};
  auto v = gather(std::move(x), dim, i);
  return {std::move(v), std::move(i)};
}

/// torch.topk(x, k, dim, largest, sorted=True): the k largest (smallest) elements along `dim`,
/// in order, and their indices; among equal values the lower index comes first, and NaN counts
/// as less than every number for largest and more for smallest (it comes last either way).
template <Backend B>
[[nodiscard]] ValuesIndices<B> topk(Tensor<B> x, std::int64_t k, std::int64_t dim = -1,
                                    bool largest = true) {
  auto i = detail::argsort_first("topk", x, dim, largest, k);
  if (x.rank() == 0) {  // k is 1 (i is 0-d) or 0 (i is [0])
    if (k == 1) return {std::move(x), std::move(i)};
    auto v = gather(reshape(std::move(x), Shape{1}), 0, i);
    return {std::move(v), std::move(i)};
  }
  auto v = gather(std::move(x), dim, i);
  return {std::move(v), std::move(i)};
}

namespace detail {
/// cummax/cummin with indices as torch gives them: index i updates whenever x[i] is the running
/// extreme (>= for cummax, so a later equal value takes over) or NaN, so the indices are the
/// running max of `i where x[i] == values[i] or x[i] is NaN, else 0`.
template <Backend B>
ValuesIndices<B> cum_with_indices(ScanKind k, Tensor<B> x, std::int64_t dim) {
  const char* op = name(k);
  (void)common_device(op, x);
  want_kind(op, x.dtype(), {Kind::Float, Kind::Int}, "float or int operands");
  if (x.rank() == 0) {  // its own running extreme, at index 0
    (void)Shape{1}.axis(dim, op);
    auto i = full_on(x, op, Shape{}, Scalar(0), DType::i64);
    return {std::move(x), std::move(i)};
  }
  const std::size_t d = x.shape().axis(dim, op);
  const std::int64_t n = x.shape()[d];
  if (x.numel() == 0) {  // no index table: the dim may be huge when another is 0 (fuzz_ops)
    auto i = full_on(x, op, x.shape(), Scalar(0), DType::i64);
    return {scan(k, std::move(x), static_cast<std::int64_t>(d)), std::move(i)};
  }
  auto v = scan(k, x, static_cast<std::int64_t>(d));
  auto hit = equal(x, v);
  if (kind_of(x.dtype()) == Kind::Float) hit = logical_or(std::move(hit), isnan(std::move(x)));
  std::vector<std::int64_t> at(static_cast<std::size_t>(n));
  std::iota(at.begin(), at.end(), std::int64_t{0});
  std::vector<std::int64_t> shape(v.rank() - d, 1);
  shape[0] = n;
  auto pos = from_host(v, op, TensorData::from(at, Shape(std::move(shape))));
  auto zero = full_on(v, op, Shape{}, Scalar(0), DType::i64);
  auto i = scan(ScanKind::cummax, where(std::move(hit), std::move(pos), std::move(zero)),
                static_cast<std::int64_t>(d));
  return {std::move(v), std::move(i)};
}
}  // namespace detail

/// torch.cummax(x, dim): the running max and, for each position, the index of the element it
/// came from (the latest, among equal values; the latest NaN once there is one).
template <Backend B>
[[nodiscard]] ValuesIndices<B> cummax_with_indices(Tensor<B> x, std::int64_t dim) {
  return detail::cum_with_indices(ScanKind::cummax, std::move(x), dim);
}
/// torch.cummin(x, dim): the running min and the index of each, as cummax_with_indices.
template <Backend B>
[[nodiscard]] ValuesIndices<B> cummin_with_indices(Tensor<B> x, std::int64_t dim) {
  return detail::cum_with_indices(ScanKind::cummin, std::move(x), dim);
}

}  // namespace ferry

// Ferry: squeeze, unsqueeze, flatten, narrow, chunk, split, triu, tril, mask_fill, mask_where and
// pad, as compositions of the layout and element-wise ops (so every backend has them). Included
// by ferry/ops.hpp. PyTorch's names and semantics.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "ferry/ops.hpp"

namespace ferry {

namespace detail {
/// A new tensor of `shape`, `dtype`, every element `value`, on x's device.
template <Backend B>
Tensor<B> full_on(const Tensor<B>& x, const char* op, Shape shape, Scalar value, DType dtype) {
  const auto dev = common_device(op, x);
  scalar_fits(op, "value", value, dtype);
  const auto& core = TA<B>::core(x, op);
  TensorRef out{core->new_id(), std::move(shape), dtype};
  check_output(*core, dev, op, out);
  return emit(core, dev, op::Full{value, std::move(out)});
}
/// Host values as a new tensor on x's device (index tensors the composition computes itself).
template <Backend B>
Tensor<B> from_host(const Tensor<B>& x, const char* op, TensorData d) {
  const auto dev = common_device(op, x);
  const auto& core = TA<B>::core(x, op);
  TensorRef out{core->new_id(), d.shape(), d.dtype()};
  return emit(core, dev, op::FromData{std::move(d), std::move(out)});
}
/// x's shape with dim `d` set to `n`.
inline Shape with_dim(const Shape& s, std::size_t d, std::int64_t n) {
  std::vector<std::int64_t> v = s.to_vector();
  v[d] = n;
  return Shape(v);
}
}  // namespace detail

/// torch.squeeze: drops every dim of size 1.
template <Backend B>
[[nodiscard]] Tensor<B> squeeze(Tensor<B> x) {
  std::vector<std::int64_t> v;
  for (auto d : x.shape())
    if (d != 1) v.push_back(d);
  return reshape(std::move(x), Shape(v));
}
/// torch.squeeze(x, dim): drops dim `dim` when its size is 1, else returns x as it is.
template <Backend B>
[[nodiscard]] Tensor<B> squeeze(Tensor<B> x, std::int64_t dim) {
  const std::size_t d = x.shape().axis(dim, "squeeze");
  if (x.shape()[d] != 1) return x;
  std::vector<std::int64_t> v = x.shape().to_vector();
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(d));
  return reshape(std::move(x), Shape(v));
}
/// torch.unsqueeze: a dim of size 1 inserted at `dim`, in [-rank - 1, rank].
template <Backend B>
[[nodiscard]] Tensor<B> unsqueeze(Tensor<B> x, std::int64_t dim) {
  std::vector<std::int64_t> v = x.shape().to_vector();
  const auto r = static_cast<std::int64_t>(v.size());
  const std::int64_t d = dim < 0 ? dim + r + 1 : dim;
  if (d < 0 || d > r)
    detail::raise<IndexError>("axis", "unsqueeze: dim {} is out of range for shape {} (rank {})",
                              dim, x.shape(), r);
  v.insert(v.begin() + static_cast<std::ptrdiff_t>(d), 1);
  return reshape(std::move(x), Shape(v));
}
/// torch.flatten: dims start..end (inclusive; negative count from the end) become one.
template <Backend B>
[[nodiscard]] Tensor<B> flatten(Tensor<B> x, std::int64_t start_dim = 0,
                                std::int64_t end_dim = -1) {
  if (x.rank() == 0) return reshape(std::move(x), Shape{1});
  const std::size_t s = x.shape().axis(start_dim, "flatten");
  const std::size_t e = x.shape().axis(end_dim, "flatten");
  if (s > e)
    detail::raise<IndexError>("axis", "flatten: start_dim {} comes after end_dim {} in shape {}",
                              start_dim, end_dim, x.shape());
  std::vector<std::int64_t> v;
  std::int64_t n = 1;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    if (i < s || i > e) {
      v.push_back(x.shape()[i]);
      continue;
    }
    n *= x.shape()[i];  // the product of a part of numel(), which fits
    if (i == e) v.push_back(n);
  }
  return reshape(std::move(x), Shape(v));
}

/// torch.narrow: `length` elements of dim `dim` from `start` (negative counts from the end).
template <Backend B>
[[nodiscard]] Tensor<B> narrow(Tensor<B> x, std::int64_t dim, std::int64_t start,
                               std::int64_t length) {
  const std::size_t d = x.shape().axis(dim, "narrow");
  const std::int64_t n = x.shape()[d];
  const std::int64_t s = start < 0 ? start + n : start;
  if (s < 0 || s > n || length < 0 || length > n - s)
    detail::raise<IndexError>("index",
                              "narrow: start {} and length {} do not fit dim {} of size {} "
                              "(shape {})",
                              start, length, d, n, x.shape());
  std::vector<Range> r(x.rank(), Range{0, INT64_MAX, 1});
  r[d] = Range{s, s + length, 1};
  return slice(std::move(x), std::move(r));
}

/// torch.split(x, split_size, dim): pieces of `split_size` along `dim`, the last smaller.
template <Backend B>
[[nodiscard]] std::vector<Tensor<B>> split(const Tensor<B>& x, std::int64_t split_size,
                                           std::int64_t dim = 0) {
  const std::size_t d = x.shape().axis(dim, "split");
  const std::int64_t n = x.shape()[d];
  if (split_size < 1 && !(split_size == 0 && n == 0))
    detail::raise<ValueError>("value", "split: split_size must be >= 1, got {} (shape {})",
                              split_size, x.shape());
  std::vector<Tensor<B>> out;
  if (n == 0) {
    out.push_back(x);
    return out;
  }
  for (std::int64_t s = 0; s < n; s += split_size)
    out.push_back(narrow(x, static_cast<std::int64_t>(d), s, std::min(split_size, n - s)));
  return out;
}
/// torch.split(x, sizes, dim): pieces of the given sizes, which must add up to the dim's size.
template <Backend B>
[[nodiscard]] std::vector<Tensor<B>> split(const Tensor<B>& x,
                                           const std::vector<std::int64_t>& sizes,
                                           std::int64_t dim = 0) {
  const std::size_t d = x.shape().axis(dim, "split");
  std::int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0)
      detail::raise<ValueError>("value", "split: size {} is negative (sizes [{}])", s,
                                detail::joined(sizes));
    total = detail::add_i64(total, s).value_or(-1);
    if (total < 0) break;
  }
  if (total != x.shape()[d])
    detail::raise<ValueError>("value", "split: sizes [{}] do not add up to dim {} of shape {}",
                              detail::joined(sizes), d, x.shape());
  std::vector<Tensor<B>> out;
  std::int64_t at = 0;
  for (auto s : sizes) {
    out.push_back(narrow(x, static_cast<std::int64_t>(d), at, s));
    at += s;
  }
  return out;
}
/// torch.chunk: `chunks` pieces of ceil(size / chunks) along `dim`, the last smaller; fewer
/// pieces when the size does not need them all.
template <Backend B>
[[nodiscard]] std::vector<Tensor<B>> chunk(const Tensor<B>& x, std::int64_t chunks,
                                           std::int64_t dim = 0) {
  const std::size_t d = x.shape().axis(dim, "chunk");
  if (chunks < 1) detail::raise<ValueError>("value", "chunk: chunks must be >= 1, got {}", chunks);
  const std::int64_t n = x.shape()[d];
  return split(x, n == 0 ? 0 : detail::ceil_div_i64(n, chunks), static_cast<std::int64_t>(d));
}

namespace detail {
/// The [M, N] bool mask of the last two dims: col - row >= diagonal (upper) or <= (lower).
template <Backend B>
Tensor<B> tri_mask(const Tensor<B>& x, const char* op, std::int64_t diagonal, bool upper) {
  if (x.rank() < 2)
    raise<ShapeError>("shape", "{}: needs at least 2 dims, got shape {}", op, x.shape());
  const std::int64_t m = x.shape()[x.rank() - 2], n = x.shape()[x.rank() - 1];
  std::vector<std::int64_t> rows(static_cast<std::size_t>(m)), cols(static_cast<std::size_t>(n));
  std::iota(rows.begin(), rows.end(), std::int64_t{0});
  std::iota(cols.begin(), cols.end(), std::int64_t{0});
  auto r = from_host(x, op, TensorData::from(rows, Shape{m, 1}));
  auto c = from_host(x, op, TensorData::from(cols, Shape{1, n}));
  auto off = sub(std::move(c), std::move(r));  // col - row, [M, N]
  return upper ? greater_equal(std::move(off), Scalar(diagonal))
               : less_equal(std::move(off), Scalar(diagonal));
}
}  // namespace detail

namespace detail {
template <Backend B>
Tensor<B> band(const char* op, Tensor<B> x, std::int64_t diagonal, bool upper) {
  (void)common_device(op, x);
  not_quantized(op, x.dtype());
  if (x.rank() >= 2 && x.numel() == 0) return x;  // nothing to mask; no [M, N] tables either
  auto mask = tri_mask(x, op, diagonal, upper);
  auto zero = full_on(x, op, Shape{}, Scalar(0), x.dtype());
  return where(std::move(mask), std::move(x), std::move(zero));
}
}  // namespace detail

/// torch.triu: the elements on and above diagonal `diagonal` of the last two dims; 0 elsewhere.
template <Backend B>
[[nodiscard]] Tensor<B> triu(Tensor<B> x, std::int64_t diagonal = 0) {
  return detail::band("triu", std::move(x), diagonal, true);
}
/// torch.tril: the elements on and below diagonal `diagonal` of the last two dims; 0 elsewhere.
template <Backend B>
[[nodiscard]] Tensor<B> tril(Tensor<B> x, std::int64_t diagonal = 0) {
  return detail::band("tril", std::move(x), diagonal, false);
}

/// torch.Tensor.masked_fill: `value` where `mask` (bool, broadcast to x) is true, else x. The
/// value must be exact in x's dtype (ValueError otherwise, as every scalar operand).
template <Backend B>
[[nodiscard]] Tensor<B> mask_fill(Tensor<B> x, Tensor<B> mask, Scalar value) {
  (void)detail::common_device("mask_fill", x, mask);
  detail::not_quantized("mask_fill", x.dtype());
  detail::want_kind("mask_fill", mask.dtype(), {Kind::Bool}, "a bool mask");
  if (detail::broadcast("mask_fill", mask.shape(), x.shape()) != x.shape())
    detail::raise<ShapeError>("shape", "mask_fill: mask of shape {} does not broadcast to {}",
                              mask.shape(), x.shape());
  auto v = detail::full_on(x, "mask_fill", Shape{}, value, x.dtype());
  return where(std::move(mask), std::move(v), std::move(x));
}
/// burn's mask_where: `source` where `mask` is true, else x (torch.where(mask, source, x));
/// the result has x's shape.
template <Backend B>
[[nodiscard]] Tensor<B> mask_where(Tensor<B> x, Tensor<B> mask, Tensor<B> source) {
  (void)detail::common_device("mask_where", x, mask, source);
  const Shape s = detail::broadcast(
      "mask_where", detail::broadcast("mask_where", mask.shape(), source.shape()), x.shape());
  if (s != x.shape())
    detail::raise<ShapeError>("shape",
                              "mask_where: mask {} and source {} do not broadcast to x's shape {}",
                              mask.shape(), source.shape(), x.shape());
  return where(std::move(mask), std::move(source), std::move(x));
}

/// How pad fills: with a value, by reflection (without repeating the edge), or by repeating it.
enum class PadMode { constant, reflect, replicate };
/// torch.nn.functional.pad: `pads` holds (before, after) pairs from the last dim backwards, as
/// torch's; negative pads crop (constant mode). reflect needs each pad < the dim's size;
/// replicate a non-empty dim.
template <Backend B>
[[nodiscard]] Tensor<B> pad(Tensor<B> x, const std::vector<std::int64_t>& pads,
                            PadMode mode = PadMode::constant, Scalar value = Scalar(0)) {
  (void)detail::common_device("pad", x);
  detail::not_quantized("pad", x.dtype());
  if (pads.size() % 2 != 0 || pads.size() / 2 > x.rank())
    detail::raise<ShapeError>("shape",
                              "pad: {} pad values for shape {}: needs (before, after) pairs, at "
                              "most one per dim",
                              pads.size(), x.shape());
  if (mode == PadMode::constant) detail::scalar_fits("pad", "value", value, x.dtype());
  for (std::size_t k = 0; k < pads.size() / 2; ++k) {
    const std::size_t d = x.rank() - 1 - k;
    const std::int64_t before = pads[2 * k], after = pads[2 * k + 1];
    const std::int64_t n = x.shape()[d];
    if (mode == PadMode::constant) {
      // A negative pad crops first; what is left is padded with full tensors.
      const std::int64_t cb = before < 0 ? -before : 0, ca = after < 0 ? -after : 0;
      if (cb + ca > n)
        detail::raise<ShapeError>("shape", "pad: crops {} and {} exceed dim {} of shape {}", cb, ca,
                                  d, x.shape());
      if (cb + ca > 0) x = narrow(std::move(x), static_cast<std::int64_t>(d), cb, n - cb - ca);
      std::vector<Tensor<B>> parts;
      if (before > 0)
        parts.push_back(
            detail::full_on(x, "pad", detail::with_dim(x.shape(), d, before), value, x.dtype()));
      parts.push_back(x);
      if (after > 0)
        parts.push_back(
            detail::full_on(x, "pad", detail::with_dim(x.shape(), d, after), value, x.dtype()));
      if (parts.size() > 1) x = cat(std::move(parts), static_cast<std::int64_t>(d));
      continue;
    }
    if (before < 0 || after < 0)
      detail::raise<ShapeError>("shape", "pad: negative pads crop only in constant mode");
    if (mode == PadMode::reflect ? (before >= n || after >= n) : n == 0)
      detail::raise<ShapeError>(
          "shape", "pad: {} padding of {} and {} needs dim {} of shape {} to be {}",
          mode == PadMode::reflect ? "reflect" : "replicate", before, after, d, x.shape(),
          mode == PadMode::reflect ? "larger than each pad" : "non-empty");
    if (x.numel() == 0) {  // no index table (the dim may be huge when another is 0)
      const auto grown = detail::add_i64(n, before);
      const auto total = grown ? detail::add_i64(*grown, after) : std::nullopt;
      if (!total)
        detail::raise<ShapeError>("shape",
                                  "pad: dim {} of shape {} padded by {} and {} passes "
                                  "2^63 - 1",
                                  d, x.shape(), before, after);
      x = detail::full_on(x, "pad", detail::with_dim(x.shape(), d, *total), Scalar(0), x.dtype());
      continue;
    }
    // The source index of every output position, computed here; one index_select.
    std::vector<std::int64_t> idx;
    for (std::int64_t i = -before; i < n + after; ++i) {
      std::int64_t j = i;
      if (mode == PadMode::reflect)
        j = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
      else
        j = i < 0 ? 0 : i >= n ? n - 1 : i;
      idx.push_back(j);
    }
    const auto len = static_cast<std::int64_t>(idx.size());
    auto index = detail::from_host(x, "pad", TensorData::from(idx, Shape{len}));
    x = index_select(std::move(x), static_cast<std::int64_t>(d), std::move(index));
  }
  return x;
}

}  // namespace ferry

// Ferry: q_cat and q_gather — quantized tensors joined along a dim, and elements gathered by
// index — with the params moved alongside, exactly or not at all.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/quant/layout.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/pick.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

// - q_cat: the tensors must share one scheme (a per-axis axis compared by position). Along the
//   cat dim, params are joined when the dim has block 1 (a per-axis axis, or a per-block dim
//   before the blocked ones), or when every tensor but the last holds whole blocks there (else
//   the next tensor would start inside a block: QuantError at the call). When the dim has one
//   param for the whole tensor (per_tensor, a per-axis axis elsewhere), the tensors must carry
//   the same params byte for byte, and with two levels the same tensor scale: that is known
//   only when the op runs, and a difference is a QuantError then.
// - q_gather (torch.gather): the gathered dim must have one param along it (per_tensor, a
//   per-axis axis elsewhere, or a dim that fits in one block), since each gathered element would
//   otherwise need a param of its own.

namespace ferry::quant {

/// The scheme of `q_cat` over tensors of these schemes and shapes along `dim` (shapes already
/// checked as cat checks them): the first scheme, with a per-axis axis made non-negative.
/// QuantError when the schemes differ or a tensor would leave a partial block mid-result.
[[nodiscard]] inline Scheme cat_scheme(std::span<const Scheme> schemes,
                                       std::span<const Shape> shapes, std::size_t dim) {
  const auto norm = [&](std::size_t k) {
    schemes[k].validate_for(shapes[k]);
    Scheme s = schemes[k];
    if (s.granularity == Granularity::per_axis)
      s.axis = static_cast<std::int64_t>(shapes[k].axis(s.axis, "q_cat"));
    return s;
  };
  const Scheme first = norm(0);
  for (std::size_t k = 1; k < schemes.size(); ++k)
    if (norm(k) != first)
      ferry::detail::raise<QuantError>(
          "quant.layout",
          "q_cat: tensor {} has scheme '{}', tensor 0 '{}'; quantized tensors join only under one "
          "scheme",
          k, schemes[k], schemes[0]);
  for (std::size_t k = 0; k + 1 < schemes.size(); ++k) {
    const detail::FullBlocks fb = detail::full_blocks(first, shapes[k]);
    const std::int64_t n = shapes[k][dim],
                       b = first.granularity == Granularity::per_block &&
                                   dim + first.block.size() >= shapes[k].rank()
                               ? first.block[dim + first.block.size() - shapes[k].rank()]
                               : 1;
    if (fb.whole[dim] || b == 1 || n % b == 0) continue;
    ferry::detail::raise<QuantError>(
        "quant.layout",
        "q_cat: scheme '{}': tensor {} has size {} along dim {}, not a multiple of its block {}, "
        "so the next tensor would start inside a block",
        first, k, n, dim, b);
  }
  return first;
}

/// Throws QuantError unless gathering along `dim` keeps every element's params: one param
/// along the dim.
inline void check_gather(const Scheme& s, const Shape& shape, std::size_t dim) {
  s.validate_for(shape);
  const detail::FullBlocks fb = detail::full_blocks(s, shape);
  if (dim >= shape.rank() || fb.grid[dim] <= 1) return;
  ferry::detail::raise<QuantError>(
      "quant.layout",
      "q_gather: scheme '{}' on shape {}: dim {} has {} params along it, and gathered elements "
      "would each need their own (gather along a dim with one param, or dequantize first)",
      s, shape, dim, fb.grid[dim]);
}

namespace detail {

/// Values of `q` unpacked to int32, row-major.
inline std::vector<std::int32_t> unpacked(const QuantizedParts& q) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(q.shape.numel()));
  unpack_range(slot_bits(q.scheme.value, q.scheme.storage), is_signed(q.scheme.value),
               reinterpret_cast<const unsigned char*>(q.data.data()), 0, q.shape.numel(), v.data());
  return v;
}

/// Concatenates `n` row-major arrays along `dim`: src[k] has dims `dk`, the others shared.
template <class T>
void join_along(std::span<const std::vector<T>> src, std::span<const std::vector<std::int64_t>> dk,
                std::size_t dim, std::size_t width, T* out) {
  std::int64_t outer = 1, inner = 1;
  const auto& d0 = dk[0];
  for (std::size_t i = 0; i < dim; ++i) outer *= d0[i];
  for (std::size_t i = dim + 1; i < d0.size(); ++i) inner *= d0[i];
  std::size_t at = 0;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < src.size(); ++k) {
      const auto run = static_cast<std::size_t>(dk[k][dim] * inner) * width;
      std::copy_n(src[k].data() + static_cast<std::size_t>(o) * run, run, out + at);
      at += run;
    }
}

}  // namespace detail

/// Concatenates quantized tensors along `dim` (negative counts from the end), as cat does.
/// ShapeError for shapes that differ off the dim, QuantError as cat_scheme says or when params
/// that must agree do not.
inline QuantizedParts q_cat(std::span<const QuantizedParts> xs, std::int64_t dim) {
  constexpr const char* op = "q_cat";
  if (xs.empty()) ferry::detail::raise<ShapeError>("quant.layout", "{}: no tensors given", op);
  std::vector<Scheme> schemes;
  std::vector<Shape> shapes;
  for (const QuantizedParts& q : xs) {
    q.validate();
    schemes.push_back(q.scheme);
    shapes.push_back(q.shape);
  }
  const std::size_t r = shapes[0].rank(), d = detail::norm_axis(dim, r, op);
  std::vector<std::int64_t> out_dims = shapes[0].to_vector();
  out_dims[d] = 0;
  for (const Shape& s : shapes) {
    bool same = s.rank() == r;
    for (std::size_t i = 0; same && i < r; ++i) same = i == d || s[i] == shapes[0][i];
    if (!same)
      ferry::detail::raise<ShapeError>("quant.layout", "{}: shapes {} and {} differ off dim {}", op,
                                       shapes[0], s, d);
    const auto sum = ferry::detail::add_i64(out_dims[d], s[d]);
    if (!sum) ferry::detail::raise<ShapeError>("quant.layout", "{}: dim {} passes 2^63 - 1", op, d);
    out_dims[d] = *sum;
  }
  QuantizedParts out;
  out.scheme = cat_scheme(schemes, shapes, d);
  out.shape = Shape(out_dims);
  (void)out.shape.numel();

  std::vector<std::vector<std::int32_t>> vals;
  std::vector<std::vector<std::int64_t>> dims;
  for (const QuantizedParts& q : xs) {
    vals.push_back(detail::unpacked(q));
    dims.push_back(q.shape.to_vector());
  }
  std::vector<std::int32_t> w(static_cast<std::size_t>(out.shape.numel()));
  detail::join_along<std::int32_t>(vals, dims, d, 1, w.data());
  const int slot = detail::slot_bits(out.scheme.value, out.scheme.storage);
  detail::alloc_zeroed(out.data, data_bytes(out.scheme, out.shape.numel()));
  detail::pack_range(slot, w.data(), 0, out.shape.numel(),
                     reinterpret_cast<unsigned char*>(out.data.data()));

  const std::size_t tb = tensor_scale_bytes(out.scheme);
  const auto group_bytes = [&](const QuantizedParts& q) { return q.scales.size() - tb; };
  const auto tail = [&](const QuantizedParts& q) {
    return std::span<const std::byte>(q.scales).last(tb);
  };
  for (std::size_t k = 1; k < xs.size(); ++k)
    if (!std::ranges::equal(tail(xs[k]), tail(xs[0])))
      detail::refuse(op, xs[k],
                     fmt::format("its tensor scale {} differs from tensor 0's {}; two-level "
                                 "tensors join only under one tensor scale",
                                 xs[k].tensor_scale(), xs[0].tensor_scale()));
  if (detail::full_blocks(out.scheme, out.shape).whole[d]) {
    // One param along the dim: the tensors must carry the same ones.
    for (std::size_t k = 1; k < xs.size(); ++k)
      if (xs[k].scales != xs[0].scales || xs[k].offsets != xs[0].offsets)
        detail::refuse(op, xs[k],
                       fmt::format("its scales or offsets differ from tensor 0's, and '{}' has "
                                   "one param along dim {} for the whole result (requantize "
                                   "with the same params, or use per_axis({}))",
                                   out.scheme, d, d));
    out.scales = xs[0].scales;
    out.offsets = xs[0].offsets;
    return out;
  }
  // Params joined along the dim, over each tensor's full-rank param grid.
  std::vector<std::vector<std::byte>> sc, of;
  std::vector<std::vector<std::int64_t>> grids;
  for (const QuantizedParts& q : xs) {
    sc.emplace_back(q.scales.begin(),
                    q.scales.begin() + static_cast<std::ptrdiff_t>(group_bytes(q)));
    of.push_back(q.offsets);
    grids.push_back(detail::full_blocks(q.scheme, q.shape).grid);
  }
  const std::size_t sb = scale_bytes(out.scheme.scale_type);
  std::int64_t np = 1;
  for (const std::int64_t g : detail::full_blocks(out.scheme, out.shape).grid) np *= g;
  out.scales.resize(static_cast<std::size_t>(np) * sb + tb);
  detail::join_along<std::byte>(sc, grids, d, sb, out.scales.data());
  if (tb != 0)
    std::memcpy(out.scales.data() + static_cast<std::size_t>(np) * sb,
                xs[0].scales.data() + group_bytes(xs[0]), tb);
  if (out.scheme.mode == Mode::affine) {
    out.offsets.resize(static_cast<std::size_t>(np));
    detail::join_along<std::byte>(of, grids, d, 1, out.offsets.data());
  }
  return out;
}

/// torch.gather: result element c is `q` at c with coordinate `dim` replaced by index[c]; the
/// index has shape `index_shape` (q's rank, each dim but `dim` at most q's) and values in
/// [0, size of dim) (not wrapped). QuantError as check_gather says.
inline QuantizedParts q_gather(const QuantizedParts& q, std::int64_t dim, const Shape& index_shape,
                               std::span<const std::int64_t> index) {
  constexpr const char* op = "q_gather";
  q.validate();
  const std::size_t r = q.shape.rank(), d = detail::norm_axis(dim, r, op);
  bool fits = index_shape.rank() == r;
  for (std::size_t i = 0; fits && i < r; ++i)
    fits = index_shape[i] >= 0 && (i == d || index_shape[i] <= q.shape[i]);
  if (!fits || static_cast<std::int64_t>(index.size()) != index_shape.numel())
    ferry::detail::raise<ShapeError>(
        "quant.layout",
        "{}: index of shape {} ({} values) does not fit {} (same rank, each dim but {} at most "
        "the tensor's)",
        op, index_shape, index.size(), q.shape, d);
  check_gather(q.scheme, q.shape, d);
  detail::check_index_range(op, q, d, index);
  QuantizedParts out;
  out.scheme = q.scheme;
  out.shape = index_shape;
  const detail::FullBlocks src = detail::full_blocks(q.scheme, q.shape),
                           dst = detail::full_blocks(out.scheme, out.shape);
  const std::vector<std::int64_t> es = q.shape.strides(), gs = detail::row_major_strides(src.grid);
  std::vector<std::vector<std::int64_t>> elem(r), param(r);
  for (std::size_t i = 0; i < r; ++i) {
    const auto m = static_cast<std::size_t>(index_shape[i]);
    elem[i].assign(m, 0);
    param[i].assign(static_cast<std::size_t>(dst.grid[i]), 0);
    if (i == d) continue;  // the index supplies it; one param along it
    for (std::size_t c = 0; c < m; ++c) elem[i][c] = static_cast<std::int64_t>(c) * es[i];
    // A prefix of the source dim: result block g lies in source block g.
    for (std::size_t g = 0; g < param[i].size(); ++g)
      param[i][g] = src.whole[i] ? 0 : static_cast<std::int64_t>(g) * gs[i];
  }
  detail::fill_values(q, out, [&](auto f) {
    detail::table_walk(elem, [&](std::int64_t dst_i, std::int64_t base) {
      f(dst_i, base + index[static_cast<std::size_t>(dst_i)] * es[d]);
    });
  });
  std::int64_t np = 1;
  for (const std::int64_t g : dst.grid) np *= g;
  detail::fill_params(q, out, np, [&](auto f) { detail::table_walk(param, f); });
  return out;
}

}  // namespace ferry::quant

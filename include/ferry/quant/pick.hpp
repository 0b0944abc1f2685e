// Ferry: quantized ops that pick, repeat or broadcast elements along dims — q_expand, q_repeat,
// q_select (index_select) — moving the values and their params together, exactly or not at all.
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

#include "ferry/detail/checked.hpp"
#include "ferry/error.hpp"
#include "ferry/quant/layout.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

// Each of these ops maps every result dim to one source dim (or to none: a new leading dim of
// q_expand) through a table of source coordinates. The result keeps the source's scheme (a
// per-axis axis shifts by the new leading dims), and each result block takes the params of the
// source block its elements come from — which is exact only when they all come from one. The
// rules, checked from the shapes alone (so the router checks them at the call, before any index
// value is known), are the *_scheme functions below; the ops check them again, and the walk
// checks every block against its table, so no op can return params that describe other values.
//
// - q_expand: always exact. A broadcast dim has size 1, so one block along it, whose params
//   every copy takes; new leading dims repeat everything.
// - q_repeat: a repeated dim must fit in one block or be a multiple of its block (else a copy
//   would start inside a block).
// - q_select (index_select): the selected dim must have block 1 there (a per-axis axis, or a
//   per-block dim before the blocked ones) — then the params are selected with the values — or
//   lie in one block.

namespace ferry::quant {

/// The scheme of `q_expand(q, to)`: `s` with a per-axis axis moved past the new leading dims.
/// `to` must be a broadcast of `from` (checked by q_expand; the router checks it as expand does).
[[nodiscard]] inline Scheme expanded_scheme(const Scheme& s, const Shape& from, const Shape& to) {
  s.validate_for(from);
  Scheme r = s;
  if (s.granularity == Granularity::per_axis)
    r.axis = static_cast<std::int64_t>(from.axis(s.axis, "q_expand") + (to.rank() - from.rank()));
  return r;
}

/// Throws QuantError unless repeating dim i `times[i]` times keeps every block inside one copy.
inline void check_repeat(const Scheme& s, const Shape& shape, std::span<const std::int64_t> times) {
  s.validate_for(shape);
  const detail::FullBlocks fb = detail::full_blocks(s, shape);
  for (std::size_t i = 0; i < times.size() && i < shape.rank(); ++i) {
    if (times[i] <= 1 || fb.whole[i] || fb.grid[i] <= 1 || shape[i] % fb.block[i] == 0) continue;
    ferry::detail::raise<QuantError>(
        "quant.layout",
        "q_repeat: scheme '{}' on shape {}: dim {} (size {}) is not a multiple of its block {}, "
        "so its second copy would start inside a block",
        s, shape, i, shape[i], fb.block[i]);
  }
}

/// Throws QuantError unless elements picked by index along `dim` keep their params: block 1
/// along it, or one block.
inline void check_select(const Scheme& s, const Shape& shape, std::size_t dim) {
  s.validate_for(shape);
  const detail::FullBlocks fb = detail::full_blocks(s, shape);
  if (dim >= shape.rank() || fb.whole[dim] || fb.grid[dim] <= 1 || fb.block[dim] == 1) return;
  ferry::detail::raise<QuantError>(
      "quant.layout",
      "q_select: scheme '{}' on shape {}: dim {} is split into blocks of {}, so elements picked "
      "by index would not keep the params of their block (select along a dim with block 1, or "
      "dequantize first)",
      s, shape, dim, fb.block[dim]);
}

namespace detail {

/// Result dim i reads source dim `src` at coordinate coord[c] (src < 0: a new dim, all 0).
struct DimMap {
  std::int64_t src = -1;
  std::vector<std::int64_t> coord;
};

/// Calls f(dst, src) for the row-major walk over the result dims, src = base + sum of
/// tables[i][c_i].
template <class F>
void table_walk(const std::vector<std::vector<std::int64_t>>& tables, F&& f) {
  const std::size_t r = tables.size();
  std::int64_t total = 1;
  for (const auto& t : tables) total *= static_cast<std::int64_t>(t.size());
  if (total == 0) return;
  if (r == 0) {
    f(std::int64_t{0}, std::int64_t{0});
    return;
  }
  std::vector<std::size_t> c(r, 0);
  std::int64_t head = 0;  // the sum over all dims but the last
  for (std::size_t i = 0; i + 1 < r; ++i) head += tables[i][0];
  const auto& last = tables[r - 1];
  for (std::int64_t dst = 0; dst < total;) {
    for (const std::int64_t o : last) f(dst++, head + o);
    for (std::size_t i = r - 1; i-- > 0;) {
      head -= tables[i][c[i]];
      if (++c[i] < tables[i].size()) {
        head += tables[i][c[i]];
        break;
      }
      c[i] = 0;
      head += tables[i][0];
    }
  }
}

/// The result of mapping `q` dim by dim: values through the coordinate tables, params through
/// the source block of each result block's first element, after checking that every element
/// of the block comes from that same source block.
inline QuantizedParts apply_dim_maps(const char* op, const QuantizedParts& q, Scheme scheme,
                                     const std::vector<DimMap>& maps) {
  std::vector<std::int64_t> dims;
  for (const DimMap& m : maps) dims.push_back(static_cast<std::int64_t>(m.coord.size()));
  Shape to{std::move(dims)};
  const FullBlocks src = full_blocks(q.scheme, q.shape), dst = full_blocks(scheme, to);
  const std::vector<std::int64_t> es = q.shape.strides(), gs = row_major_strides(src.grid);
  std::vector<std::vector<std::int64_t>> elem(maps.size()), param(maps.size());
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const DimMap& m = maps[i];
    const std::int64_t n = to[i];
    elem[i].assign(static_cast<std::size_t>(n), 0);
    param[i].assign(static_cast<std::size_t>(dst.grid[i]), 0);
    if (m.src < 0) continue;  // a new dim: every coordinate reads the source as it is
    const auto j = static_cast<std::size_t>(m.src);
    for (std::int64_t c = 0; c < n; ++c)
      elem[i][static_cast<std::size_t>(c)] = m.coord[static_cast<std::size_t>(c)] * es[j];
    if (src.whole[j]) continue;  // one param along the dim, whatever the coordinates
    for (std::int64_t g = 0; g < dst.grid[i]; ++g) {
      const std::int64_t lo = g * dst.block[i], hi = std::min(n, lo + dst.block[i]);
      const std::int64_t sb = m.coord[static_cast<std::size_t>(lo)] / src.block[j];
      for (std::int64_t c = lo + 1; c < hi; ++c)
        if (m.coord[static_cast<std::size_t>(c)] / src.block[j] != sb)
          refuse(op, q,
                 fmt::format("elements {} and {} of result dim {} come from blocks {} and {} of "
                             "source dim {}, so they cannot share one scale",
                             lo, c, i, sb, m.coord[static_cast<std::size_t>(c)] / src.block[j], j));
      param[i][static_cast<std::size_t>(g)] = sb * gs[j];
    }
  }
  QuantizedParts out;
  out.scheme = std::move(scheme);
  out.shape = std::move(to);
  fill_values(q, out, [&](auto f) { table_walk(elem, f); });
  std::int64_t np = 1;
  for (const std::int64_t g : dst.grid) np *= g;
  fill_params(q, out, np, [&](auto f) { table_walk(param, f); });
  return out;
}

/// IndexError unless every index is in [0, size of dim d of q) (negative ones are not wrapped).
inline void check_index_range(const char* op, const QuantizedParts& q, std::size_t d,
                              std::span<const std::int64_t> index) {
  const std::int64_t n = q.shape[d];
  for (std::size_t k = 0; k < index.size(); ++k)
    if (index[k] < 0 || index[k] >= n)
      ferry::detail::raise<IndexError>(
          "quant.layout",
          "{}: index {} at position {} is out of range for dim {} of shape {} (negative indices "
          "are not wrapped)",
          op, index[k], k, d, q.shape);
}

inline std::vector<std::int64_t> iota_coords(std::int64_t n) {
  std::vector<std::int64_t> c(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) c[static_cast<std::size_t>(i)] = i;
  return c;
}

}  // namespace detail

/// Broadcasts size-1 dims (and adds leading dims) to `to`, as expand does for float tensors:
/// every copy of an element keeps its code and its params. Always exact.
///
/// @code
///   auto b = q_expand(q, Shape{4, 3, 64});   // q: [3, 1] or [1, 64] or [64] ... -> [4, 3, 64]
/// @endcode
inline QuantizedParts q_expand(const QuantizedParts& q, const Shape& to) {
  constexpr const char* op = "q_expand";
  q.validate();
  const std::size_t r = q.shape.rank(), n = to.rank();
  const auto bad = [&] {
    ferry::detail::raise<ShapeError>(
        "quant.layout", "{}: shape {} cannot be expanded to {} (each dim must match or be 1)", op,
        q.shape, to);
  };
  if (n < r) bad();
  for (std::size_t i = 0; i < n; ++i)
    if (to[i] < 0) bad();
  (void)to.numel();  // ShapeError past int64, before any table is allocated
  std::vector<detail::DimMap> maps(n);
  for (std::size_t i = 0; i < n; ++i) {
    maps[i].coord.assign(static_cast<std::size_t>(to[i]), 0);
    if (i < n - r) continue;
    const std::size_t j = i - (n - r);
    maps[i].src = static_cast<std::int64_t>(j);
    if (q.shape[j] == to[i])
      maps[i].coord = detail::iota_coords(to[i]);
    else if (q.shape[j] != 1)
      bad();
  }
  return detail::apply_dim_maps(op, q, expanded_scheme(q.scheme, q.shape, to), maps);
}

/// Tiles the tensor `times[i]` times along each dim i (one count per dim, as repeat does).
/// QuantError when a repeated dim would split a block (check_repeat).
inline QuantizedParts q_repeat(const QuantizedParts& q, std::span<const std::int64_t> times) {
  constexpr const char* op = "q_repeat";
  q.validate();
  const std::size_t r = q.shape.rank();
  if (times.size() != r)
    ferry::detail::raise<ShapeError>("quant.layout", "{}: {} repeat counts for shape {} of rank {}",
                                     op, times.size(), q.shape, r);
  std::vector<std::int64_t> totals(r);
  for (std::size_t i = 0; i < r; ++i) {
    if (times[i] < 0)
      ferry::detail::raise<ShapeError>("quant.layout", "{}: repeat count {} of dim {} is negative",
                                       op, times[i], i);
    const auto total = ferry::detail::mul_i64(q.shape[i], times[i]);
    if (!total)
      ferry::detail::raise<ShapeError>("quant.layout",
                                       "{}: dim {} of size {} repeated {} times overflows int64",
                                       op, i, q.shape[i], times[i]);
    totals[i] = *total;
  }
  (void)Shape(totals).numel();  // ShapeError past int64, before any table is allocated
  check_repeat(q.scheme, q.shape, times);
  std::vector<detail::DimMap> maps(r);
  for (std::size_t i = 0; i < r; ++i) {
    maps[i].src = static_cast<std::int64_t>(i);
    maps[i].coord.resize(static_cast<std::size_t>(totals[i]));
    for (std::int64_t c = 0; c < totals[i]; ++c)
      maps[i].coord[static_cast<std::size_t>(c)] = c % q.shape[i];
  }
  return detail::apply_dim_maps(op, q, q.scheme, maps);
}

/// index_select: the elements at `index` (each in [0, n); negative indices are not wrapped, as
/// index_select does not wrap them) along `dim`, in index order, repeats allowed. QuantError when
/// the dim's blocks would split (check_select); IndexError for an index out of range.
inline QuantizedParts q_select(const QuantizedParts& q, std::int64_t dim,
                               std::span<const std::int64_t> index) {
  constexpr const char* op = "q_select";
  q.validate();
  const std::size_t r = q.shape.rank(), d = detail::norm_axis(dim, r, op);
  check_select(q.scheme, q.shape, d);
  detail::check_index_range(op, q, d, index);
  std::vector<detail::DimMap> maps(r);
  for (std::size_t i = 0; i < r; ++i) {
    maps[i].src = static_cast<std::int64_t>(i);
    maps[i].coord = i == d ? std::vector<std::int64_t>(index.begin(), index.end())
                           : detail::iota_coords(q.shape[i]);
  }
  return detail::apply_dim_maps(op, q, q.scheme, maps);
}

}  // namespace ferry::quant

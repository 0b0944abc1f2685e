// Ferry: layout ops (reshape, permute, flip, slice) on quantized tensors, moving the values and
// the scale/offset grid together.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferry/detail/checked.hpp"
#include "ferry/error.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

// Every op returns parts whose dequantized values are the op applied to the dequantized input,
// exactly, or throws: QuantError when the scale/offset layout cannot follow (naming the op, the
// scheme, the shape and why), IndexError for a bad perm/axis/range, ShapeError for a reshape
// that changes the element count. The rule everywhere: each block of the result must lie inside
// one block of the input, so it can take that block's scale and offset.
//
// - q_reshape: data and params are kept byte for byte; only the scheme's axis (per_axis) is
//   renumbered. Allowed iff element -> param stays the same map over the flat order: always for
//   per_tensor; per_axis when the axis' size and the product of the dims before it survive;
//   per_block when the blocked trailing dims survive (or more generally when blocks still tile
//   the flat order the same way, e.g. [N, 64] block [32] -> [2N, 32] block [32]).
// - q_permute / q_swap_dims: always allowed. per_axis: the axis follows. per_block: the block,
//   seen over every dim (1 on the leading dims), is permuted and its leading 1s trimmed.
// - q_flip: per_axis/per_tensor always; per_block iff every flipped blocked dim is a multiple of
//   its block, or fits in one block (else the partial last block would land first).
// - q_slice: per_tensor always; per_axis always (params sliced along the axis); per_block iff on
//   each blocked dim the start is a multiple of the block, or the slice lies within one block.
//   The end need not be a multiple: the result's last block is then partial and keeps the scale
//   and offset of the source block it lies in (correct values; they were calibrated over the
//   whole source block).
// Results of q_permute and q_reshape carry a non-negative per_axis axis.

namespace ferry::quant {
namespace detail {

/// Calls f(dst, src) for the row-major walk over `dims`, src = base + sum_i c_i * strides[i].
template <class F>
void strided_walk(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                  std::int64_t base, F&& f) {
  const std::size_t r = dims.size();
  std::int64_t total = 1;
  for (const std::int64_t d : dims) total *= d;
  if (total == 0) return;
  if (r == 0) {
    f(std::int64_t{0}, base);
    return;
  }
  std::vector<std::int64_t> c(r, 0);
  const std::int64_t last = dims[r - 1], ls = strides[r - 1];
  std::int64_t src = base;
  for (std::int64_t dst = 0; dst < total; dst += last) {
    for (std::int64_t j = 0; j < last; ++j) f(dst + j, src + j * ls);
    for (std::size_t i = r - 1; i-- > 0;) {
      src += strides[i];
      if (++c[i] < dims[i]) break;
      src -= c[i] * strides[i];
      c[i] = 0;
    }
  }
}

inline std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims) {
  return Shape(dims).strides();  // one rule for strides (and their overflow) in Ferry
}

/// Where the result's elements and params come from: a strided view of the source's elements
/// and one of the source's (full-rank) param grid.
struct Remap {
  std::vector<std::int64_t> elem_strides;
  std::int64_t elem_base = 0;
  std::vector<std::int64_t> param_dims;  // the result's full-rank param grid
  std::vector<std::int64_t> param_strides;
  std::int64_t param_base = 0;
};

/// out.data: values of `q` picked by `walk`, which calls f(dst, src) once per element of the
/// result (out.scheme and out.shape set).
template <class Walk>
void fill_values(const QuantizedParts& q, QuantizedParts& out, Walk&& walk) {
  const int slot = slot_bits(q.scheme.value, q.scheme.storage);
  const std::int64_t n_in = q.shape.numel(), n_out = out.shape.numel();
  std::vector<std::int32_t> v(static_cast<std::size_t>(n_in)), w(static_cast<std::size_t>(n_out));
  unpack_range(slot, is_signed(q.scheme.value),
               reinterpret_cast<const unsigned char*>(q.data.data()), 0, n_in, v.data());
  walk([&](std::int64_t d, std::int64_t s) {
    w[static_cast<std::size_t>(d)] = v[static_cast<std::size_t>(s)];
  });
  alloc_zeroed(out.data, data_bytes(out.scheme, n_out));
  pack_range(slot, w.data(), 0, n_out, reinterpret_cast<unsigned char*>(out.data.data()));
}

/// out.scales and out.offsets: `np` params of `q` picked by `walk` (f(dst, src) once per result
/// param), then q's tensor scale as it is (the result holds some of the same elements).
template <class Walk>
void fill_params(const QuantizedParts& q, QuantizedParts& out, std::int64_t np, Walk&& walk) {
  const std::size_t sb = scale_bytes(q.scheme.scale_type), tb = tensor_scale_bytes(q.scheme);
  out.scales.resize(static_cast<std::size_t>(np) * sb + tb);
  if (q.scheme.mode == Mode::affine) out.offsets.resize(static_cast<std::size_t>(np));
  walk([&](std::int64_t d, std::int64_t s) {
    const auto ud = static_cast<std::size_t>(d), us = static_cast<std::size_t>(s);
    std::memcpy(out.scales.data() + ud * sb, q.scales.data() + us * sb, sb);
    if (!out.offsets.empty()) out.offsets[ud] = q.offsets[us];
  });
  if (tb != 0)
    std::memcpy(out.scales.data() + static_cast<std::size_t>(np) * sb,
                q.scales.data() + (q.scales.size() - tb), tb);
}

inline QuantizedParts apply_remap(const QuantizedParts& q, Scheme scheme, Shape shape,
                                  const Remap& m) {
  QuantizedParts out;
  out.scheme = std::move(scheme);
  out.shape = std::move(shape);
  fill_values(q, out,
              [&](auto f) { strided_walk(out.shape.dims(), m.elem_strides, m.elem_base, f); });
  std::int64_t np = 1;
  for (const std::int64_t g : m.param_dims) np *= g;
  fill_params(q, out, np,
              [&](auto f) { strided_walk(m.param_dims, m.param_strides, m.param_base, f); });
  return out;
}

[[noreturn]] inline void refuse(const char* op, const QuantizedParts& q, const std::string& why) {
  ferry::detail::raise<QuantError>("quant.layout", "{}: '{}' over shape {}: {}", op, q.scheme,
                                   q.shape, why);
}

inline std::size_t norm_axis(std::int64_t a, std::size_t rank, const char* op) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t n = a < 0 ? a + r : a;
  if (n < 0 || n >= r)
    ferry::detail::raise<IndexError>("quant.layout", "{}: axis {} is out of range for rank {}", op,
                                     a, r);
  return static_cast<std::size_t>(n);
}

}  // namespace detail

/// Reshapes keeping data, scales and offsets byte for byte; see the header comment for when.
///
/// @code
///   auto r = q_reshape(q, Shape{8, 2, 64});   // q: [16, 64] int4 per_block[32] -> same blocks
/// @endcode
inline QuantizedParts q_reshape(const QuantizedParts& q, const Shape& to) {
  constexpr const char* op = "q_reshape";
  q.validate();
  for (std::size_t i = 0; i < to.rank(); ++i)
    if (to[i] < 0)
      ferry::detail::raise<ShapeError>("quant.layout", "{}: target shape {} has a negative dim", op,
                                       to);
  if (to.numel() != q.shape.numel())
    ferry::detail::raise<ShapeError>("quant.layout",
                                     "{}: cannot reshape {} ({} elements) to {} ({} elements)", op,
                                     q.shape, q.shape.numel(), to, to.numel());
  const detail::Canon from = detail::make_canon(q.scheme, q.shape);
  const std::int64_t np = from.nparams;
  const auto fits = [&](const Scheme& cand) {
    if (cand.granularity == Granularity::per_block && cand.block.size() > to.rank()) return false;
    if (cand.granularity == Granularity::per_axis &&
        (cand.axis < 0 || static_cast<std::size_t>(cand.axis) >= to.rank()))
      return false;
    const detail::Canon c = detail::make_canon(cand, to);
    return from.numel == 0 ? c.nparams == np : c == from;
  };
  std::vector<Scheme> cands;
  if (q.scheme.granularity == Granularity::per_axis) {
    const std::size_t a = q.shape.axis(q.scheme.axis, op);
    for (std::size_t i = 0; i < to.rank(); ++i)
      if (to[i] == q.shape[a]) cands.push_back(q.scheme.per_axis(static_cast<std::int64_t>(i)));
  } else {
    cands.push_back(q.scheme);
  }
  for (const Scheme& c : cands) {
    if (!fits(c)) continue;
    QuantizedParts out = q;
    out.scheme = c;
    out.shape = to;
    return out;
  }
  switch (q.scheme.granularity) {
    case Granularity::per_axis:
      detail::refuse(op, q,
                     fmt::format("no axis of {} has size {} with the same dims before it, so "
                                 "the per-axis params cannot follow",
                                 to, q.shape[q.shape.axis(q.scheme.axis, op)]));
    case Granularity::per_block:
      detail::refuse(op, q,
                     fmt::format("reshaping to {} would change the blocked trailing dims, "
                                 "so elements would move to other blocks",
                                 to));
    case Granularity::per_tensor:
      break;
  }
  detail::refuse(op, q, "unexpected scheme");
}

/// Permutes the dims: result dim i is source dim perm[i]. Always valid (see header comment).
///
/// @code
///   auto t = q_permute(q, std::array<std::int64_t, 2>{1, 0});   // transpose, blocks follow
/// @endcode
inline QuantizedParts q_permute(const QuantizedParts& q, std::span<const std::int64_t> perm) {
  constexpr const char* op = "q_permute";
  q.validate();
  const std::size_t r = q.shape.rank();
  if (perm.size() != r)
    ferry::detail::raise<IndexError>("quant.layout", "{}: perm [{}] has {} entries for rank {}", op,
                                     ::ferry::detail::joined(perm), perm.size(), r);
  std::vector<std::size_t> p(r);
  std::vector<bool> seen(r, false);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t a = perm[i];
    if (a < 0 || a >= static_cast<std::int64_t>(r) || seen[static_cast<std::size_t>(a)])
      ferry::detail::raise<IndexError>("quant.layout", "{}: [{}] is not a permutation of 0..{}", op,
                                       ::ferry::detail::joined(perm), r == 0 ? 0 : r - 1);
    p[i] = static_cast<std::size_t>(a);
    seen[p[i]] = true;
  }
  std::vector<std::int64_t> dims(r);
  for (std::size_t i = 0; i < r; ++i) dims[i] = q.shape[p[i]];
  Shape to{std::move(dims)};

  Scheme s = q.scheme;
  if (s.granularity == Granularity::per_axis) {
    const std::size_t a = q.shape.axis(s.axis, op);
    s.axis = static_cast<std::int64_t>(std::find(p.begin(), p.end(), a) - p.begin());
  } else if (s.granularity == Granularity::per_block) {
    std::vector<std::int64_t> full(r, 1);
    std::copy(s.block.begin(), s.block.end(),
              full.end() - static_cast<std::ptrdiff_t>(s.block.size()));
    std::vector<std::int64_t> nb(r);
    for (std::size_t i = 0; i < r; ++i) nb[i] = full[p[i]];
    const auto first =
        std::find_if(nb.begin(), nb.end() - 1, [](std::int64_t b) { return b != 1; });
    s.block.assign(first, nb.end());
  }

  const detail::FullBlocks src = detail::full_blocks(q.scheme, q.shape);
  const std::vector<std::int64_t> es = q.shape.strides(), gs = detail::row_major_strides(src.grid);
  detail::Remap m;
  m.elem_strides.resize(r);
  m.param_strides.resize(r);
  for (std::size_t i = 0; i < r; ++i) {
    m.elem_strides[i] = es[p[i]];
    m.param_strides[i] = gs[p[i]];
  }
  m.param_dims = detail::full_blocks(s, to).grid;
  return detail::apply_remap(q, std::move(s), std::move(to), m);
}

/// Swaps two dims (negative axes count from the end).
inline QuantizedParts q_swap_dims(const QuantizedParts& q, std::int64_t a, std::int64_t b) {
  const std::size_t r = q.shape.rank();
  const std::size_t x = detail::norm_axis(a, r, "q_swap_dims"),
                    y = detail::norm_axis(b, r, "q_swap_dims");
  std::vector<std::int64_t> perm(r);
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  std::swap(perm[x], perm[y]);
  return q_permute(q, perm);
}

/// Reverses the given dims (negative axes count from the end; no repeats).
///
/// @code
///   auto f = q_flip(q, std::array<std::int64_t, 1>{-1});
/// @endcode
inline QuantizedParts q_flip(const QuantizedParts& q, std::span<const std::int64_t> axes) {
  constexpr const char* op = "q_flip";
  q.validate();
  const std::size_t r = q.shape.rank();
  std::vector<bool> flip(r, false);
  for (const std::int64_t a : axes) {
    const std::size_t n = detail::norm_axis(a, r, op);
    if (flip[n])
      ferry::detail::raise<IndexError>("quant.layout", "{}: axis {} is given twice in [{}]", op, a,
                                       ::ferry::detail::joined(axes));
    flip[n] = true;
  }
  const detail::FullBlocks src = detail::full_blocks(q.scheme, q.shape);
  for (std::size_t i = 0; i < r; ++i)
    if (flip[i] && src.grid[i] > 1 && q.shape[i] % src.block[i] != 0)
      detail::refuse(op, q,
                     fmt::format("dim {} (size {}) is not a multiple of its block {}, so the "
                                 "partial last block would straddle blocks once flipped",
                                 i, q.shape[i], src.block[i]));
  detail::Remap m;
  m.elem_strides = q.shape.strides();
  m.param_dims = src.grid;
  m.param_strides = detail::row_major_strides(src.grid);
  for (std::size_t i = 0; i < r; ++i) {
    if (!flip[i]) continue;
    if (q.shape[i] > 0) m.elem_base += (q.shape[i] - 1) * m.elem_strides[i];
    m.elem_strides[i] = -m.elem_strides[i];
    if (src.grid[i] > 0) m.param_base += (src.grid[i] - 1) * m.param_strides[i];
    m.param_strides[i] = -m.param_strides[i];
  }
  return detail::apply_remap(q, q.scheme, q.shape, m);
}

/// Slices [start, end) on the leading ranges.size() dims (the rest are kept whole).
///
/// @code
///   std::vector<std::pair<std::int64_t, std::int64_t>> rows{{0, 8}};
///   auto top = q_slice(q, rows);   // first 8 rows, any granularity
/// @endcode
inline QuantizedParts q_slice(const QuantizedParts& q,
                              std::span<const std::pair<std::int64_t, std::int64_t>> ranges) {
  constexpr const char* op = "q_slice";
  q.validate();
  const std::size_t r = q.shape.rank();
  if (ranges.size() > r)
    ferry::detail::raise<IndexError>("quant.layout", "{}: {} ranges for shape {} of rank {}", op,
                                     ranges.size(), q.shape, r);
  std::vector<std::int64_t> start(r, 0), dims(q.shape.begin(), q.shape.end());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto [s, e] = ranges[i];
    if (s < 0 || s > e || e > q.shape[i])
      ferry::detail::raise<IndexError>("quant.layout",
                                       "{}: range [{}, {}) is not within dim {} of shape {}", op, s,
                                       e, i, q.shape);
    start[i] = s;
    dims[i] = e - s;
  }
  const detail::FullBlocks src = detail::full_blocks(q.scheme, q.shape);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t s = start[i], e = s + dims[i], b = src.block[i];
    if (src.whole[i] || e == s || s % b == 0 || s / b == (e - 1) / b) continue;
    detail::refuse(
        op, q,
        fmt::format("range [{}, {}) of dim {} starts inside block {} (block size {}), so "
                    "the result's blocks would straddle the source's",
                    s, e, i, s / b, b));
  }
  Shape to{std::move(dims)};
  detail::Remap m;
  m.elem_strides = q.shape.strides();
  m.param_strides = detail::row_major_strides(src.grid);
  m.param_dims = detail::full_blocks(q.scheme, to).grid;
  for (std::size_t i = 0; i < r; ++i) {
    m.elem_base += start[i] * m.elem_strides[i];
    if (!src.whole[i]) m.param_base += (start[i] / src.block[i]) * m.param_strides[i];
  }
  return detail::apply_remap(q, q.scheme, std::move(to), m);
}

}  // namespace ferry::quant

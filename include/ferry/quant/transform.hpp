// Ferry: what the quantized layout ops do to a Scheme, checked before any data moves.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

namespace ferry::quant {

/// The scheme of a reshaped tensor. Per-tensor survives any reshape. Per-axis survives when the
/// axis keeps its size and the product of the dims before it (the axis is renumbered). Per-block
/// survives when the blocked trailing dims are unchanged. Otherwise QuantError: the scales would
/// no longer describe the elements they were computed for.
[[nodiscard]] inline Scheme reshaped_scheme(const Scheme& s, const Shape& from, const Shape& to) {
  s.validate_for(from);
  switch (s.granularity) {
    case Granularity::per_tensor:
      return s;
    case Granularity::per_axis: {
      const auto ax = from.axis(s.axis, "q_reshape");
      std::int64_t before = 1;
      for (std::size_t i = 0; i < ax; ++i) before *= from[i];
      std::int64_t acc = 1;
      for (std::size_t j = 0; j < to.rank(); ++j) {
        if (acc == before && to[j] == from[ax]) {
          Scheme r = s;
          r.axis = static_cast<std::int64_t>(j);
          return r;
        }
        acc *= to[j];
      }
      ferry::detail::raise<QuantError>(
          "quant.layout",
          "q_reshape: scheme '{}' on shape {} cannot become shape {}: the quantization axis {} "
          "(size {}) does not survive as a dim of its own",
          s, from, to, ax, from[ax]);
    }
    case Granularity::per_block: {
      const std::size_t k = s.block.size();
      bool same = to.rank() >= k;
      for (std::size_t i = 0; same && i < k; ++i)
        same = from[from.rank() - k + i] == to[to.rank() - k + i];
      if (!same)
        ferry::detail::raise<QuantError>(
            "quant.layout",
            "q_reshape: scheme '{}' on shape {} cannot become shape {}: the {} blocked trailing "
            "dim(s) must stay as they are",
            s, from, to, k);
      return s;
    }
  }
  return s;
}

/// The scheme of a permuted tensor (perm already checked). Per-axis: the axis follows. Per-block:
/// the block, seen over every dim (1 on the leading ones), is permuted and its leading 1s are
/// trimmed, so every permutation keeps an exact scheme.
[[nodiscard]] inline Scheme permuted_scheme(const Scheme& s, const Shape& from,
                                            std::span<const std::int64_t> perm) {
  s.validate_for(from);
  Scheme r = s;
  if (s.granularity == Granularity::per_axis) {
    const auto ax = static_cast<std::int64_t>(from.axis(s.axis, "q_permute"));
    for (std::size_t j = 0; j < perm.size(); ++j)
      if (perm[j] == ax) r.axis = static_cast<std::int64_t>(j);
  } else if (s.granularity == Granularity::per_block) {
    const std::size_t n = from.rank(), k = s.block.size();
    std::vector<std::int64_t> full(n, 1), moved(n, 1);
    for (std::size_t i = 0; i < k; ++i) full[n - k + i] = s.block[i];
    // A block that covers a whole dim is the same as block 1 there only when the dim is 1;
    // keep the explicit sizes so the param grid stays exact.
    for (std::size_t j = 0; j < n; ++j) moved[j] = full[static_cast<std::size_t>(perm[j])];
    std::size_t first = 0;
    while (first + 1 < n && moved[first] == 1) ++first;
    r.block.assign(moved.begin() + static_cast<std::ptrdiff_t>(first), moved.end());
  }
  return r;
}

/// Flipping keeps the scheme; a per-block dim can be flipped only when it holds whole blocks
/// (a partial last block would become a partial first block, which the layout cannot express).
inline void check_flip(const Scheme& s, const Shape& shape, std::span<const std::int64_t> axes) {
  s.validate_for(shape);
  if (s.granularity != Granularity::per_block) return;
  const std::size_t n = shape.rank(), k = s.block.size();
  for (auto a : axes) {
    const auto ax = shape.axis(a, "q_flip");
    if (ax + k < n) continue;
    const auto b = s.block[ax - (n - k)];
    if (shape[ax] > b && shape[ax] % b != 0)  // a block as large as the dim flips whole
      ferry::detail::raise<QuantError>(
          "quant.layout",
          "q_flip: scheme '{}' on shape {}: dim {} (size {}) is not a multiple of its block {}, so "
          "flipping it would split a block",
          s, shape, ax, shape[ax], b);
  }
}

/// Slicing keeps the scheme. On a per-block dim the slice must start on a block boundary, or lie
/// inside one block; it may end anywhere (its last block is then partial and keeps the scale of
/// the block it came from, so the values stay exact) — the same rule as quant::q_slice.
inline void check_slice(const Scheme& s, const Shape& shape,
                        std::span<const std::pair<std::int64_t, std::int64_t>> ranges) {
  s.validate_for(shape);
  if (s.granularity != Granularity::per_block) return;
  const std::size_t n = shape.rank(), k = s.block.size();
  for (std::size_t i = 0; i < ranges.size() && i < n; ++i) {
    if (i + k < n) continue;
    const auto b = s.block[i - (n - k)];
    const auto [start, end] = ranges[i];
    if (end <= start || start % b == 0 || start / b == (end - 1) / b) continue;
    ferry::detail::raise<QuantError>(
        "quant.layout",
        "q_slice: scheme '{}' on shape {}: range {}:{} on dim {} starts inside a block (block {}) "
        "and runs past it",
        s, shape, start, end, i, b);
  }
}

}  // namespace ferry::quant

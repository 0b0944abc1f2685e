// Ferry: EigenCpu's loop engine: an N-operand strided walk over collapsed dims, in parallel.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ferry/detail/checked.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/error.hpp"
#include "ferry/shape.hpp"

namespace ferry::detail::cpu {

/// Elements per parallel chunk for cheap elementwise work (a few ns per element).
inline constexpr std::int64_t kGrain = 32768;

/// @brief A loop nest over `dims` (outermost first) where operand k steps `strides[k][d]`
/// elements along dim d. Built by make_loop, which drops size-1 dims and merges neighbours
/// that every operand walks contiguously, so a broadcast or a transposed copy becomes a few
/// outer dims around one long inner run.
template <std::size_t N>
struct Loop {
  std::vector<std::int64_t> dims;  // at least one; the last is the inner run
  std::array<std::vector<std::int64_t>, N> strides;
  std::int64_t numel = 0;

  /// Step of operand k along the inner run.
  [[nodiscard]] std::int64_t inner_stride(std::size_t k) const { return strides[k].back(); }
};

template <std::size_t N>
Loop<N> make_loop(std::span<const std::int64_t> dims,
                  const std::array<std::span<const std::int64_t>, N>& strides) {
  Loop<N> l;
  // An empty walk visits nothing: no stride product is formed (beside a 0 dim the others may be
  // near 2^63, and so may a stride times a dim, as in a permuted [2, 0, 2^62]).
  if (std::ranges::find(dims, std::int64_t{0}) != dims.end()) {
    l.dims.push_back(0);
    for (auto& st : l.strides) st.push_back(0);
    return l;
  }
  // Non-empty: the dims' product is the element count, which fits (checked when the shape was
  // made); each stride times its dim is checked anyway, and a product that does not fit merges
  // nothing.
  l.numel = product_i64(dims).value_or(0);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    bool merge = !l.dims.empty();
    for (std::size_t k = 0; merge && k < N; ++k)
      merge = mul_i64(strides[k][d], dims[d]) == l.strides[k].back();
    if (merge) {
      l.dims.back() *= dims[d];
      for (std::size_t k = 0; k < N; ++k) l.strides[k].back() = strides[k][d];
    } else {
      l.dims.push_back(dims[d]);
      for (std::size_t k = 0; k < N; ++k) l.strides[k].push_back(strides[k][d]);
    }
  }
  if (l.dims.empty()) {
    l.dims.push_back(1);
    for (auto& s : l.strides) s.push_back(0);
  }
  return l;
}

/// @brief Calls `f(offsets, len)` for every inner run of `l`, offsets being each operand's
/// element offset at the run's start; the run then continues `len` elements at each
/// operand's inner_stride. Work is split in chunks of about `grain` elements of the flat
/// index; a chunk finds its start coordinates by division once, then only increments.
template <std::size_t N, class F>
void run_loop(const Loop<N>& l, std::int64_t grain, F&& f) {
  if (l.numel <= 0) return;
  const std::size_t r = l.dims.size();
  const std::int64_t inner = l.dims[r - 1];
  parallel_for(0, l.numel, grain, [&](std::int64_t lo, std::int64_t hi) {
    std::vector<std::int64_t> idx(r);
    std::array<std::int64_t, N> off{};
    std::int64_t rem = lo;
    for (std::size_t d = r; d-- > 0;) {
      idx[d] = rem % l.dims[d];
      rem /= l.dims[d];
      for (std::size_t k = 0; k < N; ++k) off[k] += idx[d] * l.strides[k][d];
    }
    std::int64_t pos = lo;
    while (pos < hi) {
      const std::int64_t len = std::min(inner - idx[r - 1], hi - pos);
      f(off, len);
      pos += len;
      if (pos >= hi) break;
      // Advance the odometer by `len` along the inner run, carrying outwards.
      idx[r - 1] += len;
      for (std::size_t k = 0; k < N; ++k) off[k] += len * l.strides[k][r - 1];
      for (std::size_t d = r - 1; idx[d] == l.dims[d] && d > 0; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (std::size_t k = 0; k < N; ++k)
          off[k] += l.strides[k][d - 1] - l.dims[d] * l.strides[k][d];
      }
    }
  });
}

/// Broadcast shape of `a` and `b` (numpy rules); ShapeError naming `op` when they clash.
inline Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t r = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    const std::int64_t db = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    if (da != db && da != 1 && db != 1)
      detail::raise<ShapeError>("shape", "{}: shapes {} and {} cannot be broadcast", op, a, b);
    out[i] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

/// Strides (in elements) with which a contiguous tensor of `in` is read when broadcast to
/// `out` (right-aligned; 0 along broadcast dims). `in` must broadcast to `out`.
inline std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<std::int64_t> s(out.rank(), 0);
  const auto st = in.strides();
  const std::size_t lead = out.rank() - in.rank();
  for (std::size_t i = 0; i < in.rank(); ++i)
    s[lead + i] = (in[i] == 1 && out[lead + i] != 1) ? 0 : st[i];
  return s;
}

}  // namespace ferry::detail::cpu

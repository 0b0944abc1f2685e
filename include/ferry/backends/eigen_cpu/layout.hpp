// Ferry: EigenCpu's layout kernels: reshape, permute, flip, expand, slice, slice_assign, cat,
// gather, index_select, repeat. All but reshape are one strided copy (by element width, so
// one instantiation serves every dtype of that size).
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/loops.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/params.hpp"
#include "ferry/shape.hpp"

namespace ferry::detail::cpu {

/// Elements per parallel chunk for plain copies.
inline constexpr std::int64_t kCopyGrain = 65536;

/// Calls `f(W{})` with an unsigned type as wide as one element of `d`.
template <class F>
decltype(auto) visit_width(DType d, F&& f) {
  switch (dtype_size(d)) {
    case 1:
      return f(std::uint8_t{});
    case 2:
      return f(std::uint16_t{});
    case 4:
      return f(std::uint32_t{});
    default:
      return f(std::uint64_t{});
  }
}

/// out[sum i_d * so_d] = in[sum i_d * si_d] over `dims` (strides in elements, may be 0 or
/// negative); `out` and `in` point at the element of index 0 and never overlap.
inline void strided_copy(DType d, std::byte* out, std::span<const std::int64_t> so,
                         const std::byte* in, std::span<const std::int64_t> si,
                         std::span<const std::int64_t> dims) {
  visit_width(d, [&]<class W>(W) {
    auto* o = reinterpret_cast<W*>(out);
    const auto* i = reinterpret_cast<const W*>(in);
    const auto l = make_loop<2>(dims, {so, si});
    const std::int64_t os = l.inner_stride(0), is = l.inner_stride(1);
    run_loop(l, kCopyGrain, [&](const std::array<std::int64_t, 2>& off, std::int64_t len) {
      W* po = o + off[0];
      const W* pi = i + off[1];
      if (os == 1 && is == 1)
        std::memcpy(po, pi, static_cast<std::size_t>(len) * sizeof(W));
      else if (os == 1 && is == 0)
        std::fill(po, po + len, *pi);
      else
        for (std::int64_t k = 0; k < len; ++k) po[k * os] = pi[k * is];
    });
  });
}

inline std::byte* bytes_at(const CpuTensor& t, std::int64_t element) {
  return t.buf->data() + element * static_cast<std::int64_t>(dtype_size(t.dtype));
}

/// A contiguous copy of `t` on the same device.
inline CpuTensor clone(const AccountsPtr& acc, const CpuTensor& t) {
  CpuTensor out = alloc(acc, t.device, t.shape, t.dtype);
  if (t.nbytes() > 0) std::memcpy(out.buf->data(), t.buf->data(), t.nbytes());
  return out;
}

inline void check_dims(const Shape& s, const char* op) {
  for (auto d : s)
    if (d < 0) detail::raise<ShapeError>("shape", "{}: target shape {} has a negative dim", op, s);
}

/// Zero-copy: a buffer held alone moves to the result, a shared one is shared (safe: shared
/// buffers are never written).
inline CpuTensor reshape(const AccountsPtr& acc, CpuTensor a, const Shape& shape) {
  check(acc, a, "reshape");
  check_dims(shape, "reshape");
  if (shape.numel() != a.numel())
    detail::raise<ShapeError>("shape", "reshape: cannot reshape {} ({} elements) to {} ({})",
                              a.shape, a.numel(), shape, shape.numel());
  a.shape = shape;
  return a;
}

inline CpuTensor permute(const AccountsPtr& acc, CpuTensor a, std::span<const std::size_t> perm) {
  check(acc, a, "permute");
  const std::size_t r = a.shape.rank();
  if (perm.size() != r)
    detail::raise<IndexError>("axis", "permute: {} axes given for a tensor of rank {}", perm.size(),
                              r);
  std::vector<bool> seen(r, false);
  for (auto p : perm) {
    if (p >= r || seen[p])
      detail::raise<IndexError>("axis", "permute: [{}] is not a permutation of 0..{}",
                                fmt::join(perm, ", "), r == 0 ? 0 : r - 1);
    seen[p] = true;
  }
  std::vector<std::int64_t> dims(r), si(r);
  const auto st = a.shape.strides();
  for (std::size_t i = 0; i < r; ++i) {
    dims[i] = a.shape[perm[i]];
    si[i] = st[perm[i]];
  }
  // Only size-1 dims move: the same bytes in the same order, so a zero-copy reshape.
  std::size_t last = 0;
  bool ordered = true;
  for (auto p : perm)
    if (a.shape[p] != 1) {
      ordered = ordered && p >= last;
      last = p;
    }
  Shape shape(dims);
  if (ordered) return reshape(acc, std::move(a), shape);
  CpuTensor out = alloc(acc, a.device, shape, a.dtype);
  strided_copy(a.dtype, out.buf->data(), shape.strides(), a.buf->data(), si, dims);
  return out;
}

inline CpuTensor flip(const AccountsPtr& acc, CpuTensor a, std::span<const std::size_t> axes) {
  check(acc, a, "flip");
  const std::size_t r = a.shape.rank();
  std::vector<bool> flipped(r, false);
  for (auto ax : axes) {
    if (ax >= r)
      detail::raise<IndexError>("axis", "flip: axis {} is out of range for shape {} (rank {})", ax,
                                a.shape, r);
    if (flipped[ax])
      detail::raise<ValueError>("cpu.axes", "flip: axis {} appears more than once", ax);
    flipped[ax] = true;
  }
  bool noop = true;
  for (std::size_t d = 0; d < r; ++d) noop = noop && (!flipped[d] || a.shape[d] <= 1);
  if (noop || a.numel() == 0) return a;
  auto si = a.shape.strides();
  std::int64_t base = 0;
  for (std::size_t d = 0; d < r; ++d)
    if (flipped[d]) {
      base += (a.shape[d] - 1) * si[d];
      si[d] = -si[d];
    }
  CpuTensor out = alloc(acc, a.device, a.shape, a.dtype);
  strided_copy(a.dtype, out.buf->data(), a.shape.strides(), bytes_at(a, base), si, a.shape.dims());
  return out;
}

/// numpy broadcast of `a` to `shape` (leading dims may be added; -1 keeps a dim).
inline CpuTensor expand(const AccountsPtr& acc, CpuTensor a, const Shape& target) {
  check(acc, a, "expand");
  const std::size_t r = target.rank();
  if (r < a.shape.rank())
    detail::raise<ShapeError>("shape", "expand: cannot expand {} to the lower-rank {}", a.shape,
                              target);
  const std::size_t lead = r - a.shape.rank();
  std::vector<std::int64_t> dims(target.to_vector()), si(r, 0);
  const auto st = a.shape.strides();
  for (std::size_t i = 0; i < r; ++i) {
    if (i >= lead && dims[i] == -1) dims[i] = a.shape[i - lead];
    if (dims[i] < 0)
      detail::raise<ShapeError>("shape", "expand: target shape {} has a negative dim", target);
    if (i < lead) continue;
    const std::int64_t d = a.shape[i - lead];
    if (d != dims[i] && d != 1)
      detail::raise<ShapeError>("shape", "expand: cannot expand {} to {} (dim {}: {} vs {})",
                                a.shape, target, i, d, dims[i]);
    si[i] = d == dims[i] ? st[i - lead] : 0;
  }
  Shape shape(dims);
  if (shape.numel() == a.numel()) return reshape(acc, std::move(a), shape);
  CpuTensor out = alloc(acc, a.device, shape, a.dtype);
  strided_copy(a.dtype, out.buf->data(), shape.strides(), a.buf->data(), si, dims);
  return out;
}

/// Checks one normalised Range per dim; returns the slice's shape.
inline Shape slice_shape(const Shape& s, std::span<const Range> ranges, const char* op) {
  if (ranges.size() != s.rank())
    detail::raise<IndexError>("cpu.range", "{}: {} ranges given for shape {} (rank {})", op,
                              ranges.size(), s, s.rank());
  std::vector<std::int64_t> dims(s.rank());
  for (std::size_t d = 0; d < s.rank(); ++d) {
    const Range& rg = ranges[d];
    if (rg.step < 1 || rg.start < 0 || rg.end < rg.start || rg.end > s[d])
      detail::raise<IndexError>("cpu.range", "{}: range {} is invalid for dim {} of size {}", op,
                                rg, d, s[d]);
    dims[d] = rg.size();
  }
  return Shape(std::move(dims));
}

/// Element offset of the slice's first element and its strides in the sliced tensor.
inline std::int64_t slice_strides(const Shape& s, std::span<const Range> ranges,
                                  std::vector<std::int64_t>& strides) {
  strides = s.strides();
  std::int64_t base = 0;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    base += ranges[d].start * strides[d];
    // A dim the slice takes one element of never steps: its stride stays unscaled, so a step
    // near 2^63 cannot overflow it. Otherwise (size - 1) * step < dim bounds the product.
    if (ranges[d].size() > 1) strides[d] *= ranges[d].step;
  }
  return base;
}

inline CpuTensor slice(const AccountsPtr& acc, CpuTensor a, std::span<const Range> ranges) {
  check(acc, a, "slice");
  Shape shape = slice_shape(a.shape, ranges, "slice");
  if (shape == a.shape) return a;  // the whole tensor
  CpuTensor out = alloc(acc, a.device, shape, a.dtype);
  if (shape.numel() == 0) return out;
  std::vector<std::int64_t> si;
  const std::int64_t base = slice_strides(a.shape, ranges, si);
  strided_copy(a.dtype, out.buf->data(), shape.strides(), bytes_at(a, base), si, shape.dims());
  return out;
}

/// a[ranges] = value. Written in place when the kernel holds `a` alone, else into a copy (a
/// shared buffer is never written).
inline CpuTensor slice_assign(const AccountsPtr& acc, CpuTensor a, std::span<const Range> ranges,
                              CpuTensor value) {
  check(acc, a, "slice_assign");
  check(acc, value, "slice_assign");
  check_same(a, value, "slice_assign");
  Shape shape = slice_shape(a.shape, ranges, "slice_assign");
  if (value.shape != shape)
    detail::raise<ShapeError>("shape", "slice_assign: value of shape {} does not fit slice {}",
                              value.shape, shape);
  CpuTensor out = a.buf.use_count() == 1 ? std::move(a) : clone(acc, a);
  if (shape.numel() == 0) return out;
  std::vector<std::int64_t> so;
  const std::int64_t base = slice_strides(out.shape, ranges, so);
  strided_copy(out.dtype, bytes_at(out, base), so, value.buf->data(), shape.strides(),
               shape.dims());
  return out;
}

inline CpuTensor cat(const AccountsPtr& acc, std::vector<CpuTensor> ts, std::size_t dim) {
  if (ts.empty()) detail::raise<ValueError>("cpu.cat", "cat: no tensors to concatenate");
  for (const auto& t : ts) check(acc, t, "cat");
  const CpuTensor& first = ts.front();
  const std::size_t r = first.shape.rank();
  if (dim >= r)
    detail::raise<IndexError>("axis", "cat: dim {} is out of range for shape {} (rank {})", dim,
                              first.shape, r);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const auto& t = ts[i];
    check_same(first, t, "cat");
    bool ok = t.shape.rank() == r;
    for (std::size_t d = 0; ok && d < r; ++d) ok = d == dim || t.shape[d] == first.shape[d];
    if (!ok)
      detail::raise<ShapeError>("shape", "cat: tensor {} has shape {}, tensor 0 has {} (dim {})", i,
                                t.shape, first.shape, dim);
    total += t.shape[dim];
  }
  if (ts.size() == 1) return std::move(ts.front());
  std::vector<std::int64_t> dims(first.shape.to_vector());
  dims[dim] = total;
  Shape shape(std::move(dims));
  CpuTensor out = alloc(acc, first.device, shape, first.dtype);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < r; ++d) {
    if (d < dim) outer *= shape[d];
    if (d > dim) inner *= shape[d];
  }
  std::int64_t at = 0;
  for (const auto& t : ts) {
    const std::int64_t run = t.shape[dim] * inner;
    const std::array<std::int64_t, 2> cdims{outer, run};
    const std::array<std::int64_t, 2> so{total * inner, 1}, si{run, 1};
    // outer == 0 means an empty output whose data() is null: nothing to copy, no offset to take.
    if (run > 0 && outer > 0)
      strided_copy(out.dtype, bytes_at(out, at * inner), so, t.buf->data(), si, cdims);
    at += t.shape[dim];
  }
  return out;
}

/// Throws IndexError naming the first index value outside [0, size).
template <class I>
void check_indices(const I* idx, std::int64_t n, std::int64_t size, std::size_t dim,
                   const char* op) {
  for (std::int64_t k = 0; k < n; ++k)
    if (std::cmp_less(idx[k], 0) || std::cmp_greater_equal(idx[k], size))
      detail::raise<IndexError>("cpu.index",
                                "{}: index {} is out of range for dim {} of size {} (negative "
                                "indices are not wrapped)",
                                op, idx[k], dim, size);
}

/// torch.gather: out[i][j][k] = a[i][index[i][j][k]][k] for dim 1; out has index's shape.
inline CpuTensor gather(const AccountsPtr& acc, CpuTensor a, std::size_t dim, CpuTensor index) {
  check(acc, a, "gather");
  check(acc, index, "gather");
  check_kind(index, Kind::Int, "gather");
  if (a.device != index.device)
    detail::raise<DeviceError>("device", "gather: tensor on cpu:{}, index on cpu:{}", a.device,
                               index.device);
  const std::size_t r = a.shape.rank();
  if (dim >= r)
    detail::raise<IndexError>("axis", "gather: dim {} is out of range for shape {} (rank {})", dim,
                              a.shape, r);
  bool ok = index.shape.rank() == r;
  for (std::size_t d = 0; ok && d < r; ++d) ok = d == dim || index.shape[d] <= a.shape[d];
  if (!ok)
    detail::raise<ShapeError>("shape", "gather: index of shape {} does not fit tensor {} (dim {})",
                              index.shape, a.shape, dim);
  CpuTensor out = alloc(acc, a.device, index.shape, a.dtype);
  visit_dtype(index.dtype, [&]<class I>(I) {
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* idx = index.data<const I>();
      check_indices(idx, index.numel(), a.shape[dim], dim, "gather");
      auto si = a.shape.strides();
      const std::int64_t sdim = si[dim];
      si[dim] = 0;
      const auto so = index.shape.strides();
      const auto l = make_loop<2>(index.shape.dims(), {so, si});
      const std::int64_t is = l.inner_stride(1), os = l.inner_stride(0);
      visit_width(a.dtype, [&]<class W>(W) {
        W* o = out.data<W>();
        const W* in = a.data<const W>();
        run_loop(l, kGrain, [&](const std::array<std::int64_t, 2>& off, std::int64_t len) {
          for (std::int64_t k = 0; k < len; ++k) {
            const std::int64_t at = off[0] + k * os;  // index and out share offsets
            o[at] = in[off[1] + k * is + static_cast<std::int64_t>(idx[at]) * sdim];
          }
        });
      });
    }
  });
  return out;
}

/// torch.index_select with a 1-D (or 0-D) integer index.
inline CpuTensor index_select(const AccountsPtr& acc, CpuTensor a, std::size_t dim,
                              CpuTensor index) {
  check(acc, a, "index_select");
  check(acc, index, "index_select");
  check_kind(index, Kind::Int, "index_select");
  if (a.device != index.device)
    detail::raise<DeviceError>("device", "index_select: tensor on cpu:{}, index on cpu:{}",
                               a.device, index.device);
  const std::size_t r = a.shape.rank();
  if (dim >= r)
    detail::raise<IndexError>("axis", "index_select: dim {} is out of range for shape {} (rank {})",
                              dim, a.shape, r);
  if (index.shape.rank() > 1)
    detail::raise<ShapeError>("shape", "index_select: index must be 1-D, got shape {}",
                              index.shape);
  const std::int64_t len = index.numel(), n = a.shape[dim];
  std::vector<std::int64_t> dims(a.shape.to_vector());
  dims[dim] = len;
  Shape shape(std::move(dims));
  CpuTensor out = alloc(acc, a.device, shape, a.dtype);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < r; ++d) {
    if (d < dim) outer *= a.shape[d];
    if (d > dim) inner *= a.shape[d];
  }
  const auto row = static_cast<std::size_t>(inner) * dtype_size(a.dtype);
  visit_dtype(index.dtype, [&]<class I>(I) {
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* idx = index.data<const I>();
      check_indices(idx, len, n, dim, "index_select");
      if (row == 0) return;
      const std::byte* in = a.buf->data();
      std::byte* o = out.buf->data();
      parallel_for(0, outer * len, std::max<std::int64_t>(1, kCopyGrain / inner),
                   [&](std::int64_t lo, std::int64_t hi) {
                     for (std::int64_t t = lo; t < hi; ++t) {
                       const std::int64_t i = t / len, j = t % len;
                       std::memcpy(o + static_cast<std::size_t>(t) * row,
                                   in + static_cast<std::size_t>(i * n + idx[j]) * row, row);
                     }
                   });
    }
  });
  return out;
}

/// torch.Tensor.repeat: times.size() >= rank (extra leading dims are added).
inline CpuTensor repeat(const AccountsPtr& acc, CpuTensor a, std::span<const std::int64_t> times) {
  check(acc, a, "repeat");
  const std::size_t r = times.size();
  if (r < a.shape.rank())
    detail::raise<ShapeError>("shape", "repeat: {} repeat counts given for shape {} (rank {})", r,
                              a.shape, a.shape.rank());
  const std::size_t lead = r - a.shape.rank();
  std::vector<std::int64_t> in_dims(lead, 1);
  in_dims.insert(in_dims.end(), a.shape.begin(), a.shape.end());
  const auto st = Shape(in_dims).strides();
  // View the output as [t0, d0, t1, d1, ...]: the input read with stride 0 along each t.
  std::vector<std::int64_t> out_dims(r), dims(2 * r), si(2 * r);
  for (std::size_t i = 0; i < r; ++i) {
    if (times[i] < 0)
      detail::raise<ValueError>("cpu.repeat", "repeat: repeat count {} is negative", times[i]);
    out_dims[i] = times[i] * in_dims[i];
    dims[2 * i] = times[i];
    dims[2 * i + 1] = in_dims[i];
    si[2 * i] = 0;
    si[2 * i + 1] = st[i];
  }
  Shape shape(std::move(out_dims));
  if (shape.numel() == a.numel()) return reshape(acc, std::move(a), shape);
  CpuTensor out = alloc(acc, a.device, shape, a.dtype);
  strided_copy(a.dtype, out.buf->data(), Shape(dims).strides(), a.buf->data(), si, dims);
  return out;
}

}  // namespace ferry::detail::cpu

// Ferry: EigenCpu's gather_nd, scatter_nd and scatter_nd_add (ONNX GatherND / ScatterND with
// batch_dims 0).
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/layout.hpp"
#include "ferry/backends/eigen_cpu/loops.hpp"
#include "ferry/backends/eigen_cpu/scatter.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

/// The geometry of an nd index into `a`: index [..., m] holds `tuples` tuples of m coordinates
/// into a's first m dims, each naming a slice of `slice` elements (a.shape[m:]).
struct NdGeom {
  std::int64_t m = 0, tuples = 0, slice = 1;
  std::vector<std::int64_t> offsets;  ///< each tuple's first element in a
};

/// Checks an nd index against `a` and resolves every tuple to an element offset: IndexError
/// naming the tuple, the coordinate and the dim for the first coordinate outside [0, dim).
inline NdGeom nd_geom(const CpuTensor& a, const CpuTensor& index, const char* op) {
  check_kind(index, Kind::Int, op);
  if (index.device != a.device)
    detail::raise<DeviceError>("device", "{}: tensor on cpu:{}, index on cpu:{}", op, a.device,
                               index.device);
  const std::size_t q = index.shape.rank();
  if (q == 0 || index.shape[q - 1] > static_cast<std::int64_t>(a.shape.rank()))
    detail::raise<ShapeError>("shape",
                              "{}: index of shape {} needs a last dim of at most the rank of {}",
                              op, index.shape, a.shape);
  NdGeom g;
  g.m = index.shape[q - 1];
  g.tuples = 1;
  for (std::size_t d = 0; d + 1 < q; ++d) g.tuples *= index.shape[d];
  for (std::size_t d = static_cast<std::size_t>(g.m); d < a.shape.rank(); ++d)
    g.slice *= a.shape[d];
  const auto st = a.shape.strides();
  g.offsets.resize(static_cast<std::size_t>(g.tuples));
  visit_dtype(index.dtype, [&]<class I>(I) {
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* idx = index.data<const I>();
      for (std::int64_t k = 0; k < g.tuples; ++k) {
        std::int64_t off = 0;
        for (std::int64_t i = 0; i < g.m; ++i) {
          const I v = idx[k * g.m + i];
          const std::int64_t size = a.shape[static_cast<std::size_t>(i)];
          if (std::cmp_less(v, 0) || std::cmp_greater_equal(v, size))
            detail::raise<IndexError>("cpu.index",
                                      "{}: index {} (coordinate {} of tuple {}) is out of range "
                                      "for dim {} of size {} (negative indices are not wrapped)",
                                      op, v, i, k, i, size);
          off += static_cast<std::int64_t>(v) * st[static_cast<std::size_t>(i)];
        }
        g.offsets[static_cast<std::size_t>(k)] = off;
      }
    }
  });
  return g;
}

/// The shape index.shape[:-1] + a.shape[m:].
inline Shape nd_shape(const CpuTensor& a, const CpuTensor& index, std::int64_t m) {
  std::vector<std::int64_t> s(index.shape.begin(), index.shape.end() - 1);
  for (std::size_t d = static_cast<std::size_t>(m); d < a.shape.rank(); ++d)
    s.push_back(a.shape[d]);
  return Shape(std::move(s));
}

/// @brief out[k, ...] = a[index[k, 0], ..., index[k, m - 1], ...]: one slice copy per tuple, in
/// parallel; every coordinate checked first.
inline CpuTensor gather_nd(const AccountsPtr& acc, CpuTensor a, CpuTensor index) {
  check(acc, a, "gather_nd");
  check(acc, index, "gather_nd");
  const NdGeom g = nd_geom(a, index, "gather_nd");
  CpuTensor out = alloc(acc, a.device, nd_shape(a, index, g.m), a.dtype);
  const auto row = static_cast<std::size_t>(g.slice) * dtype_size(a.dtype);
  if (row == 0 || g.tuples == 0) return out;
  const std::byte* in = a.buf->data();
  std::byte* o = out.buf->data();
  const auto esz = static_cast<std::int64_t>(dtype_size(a.dtype));
  parallel_for(0, g.tuples, std::max<std::int64_t>(1, kCopyGrain / g.slice),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t k = lo; k < hi; ++k)
                   std::memcpy(o + static_cast<std::size_t>(k) * row,
                               in + g.offsets[static_cast<std::size_t>(k)] * esz, row);
               });
  return out;
}

/// @brief A copy of a with src[k, ...] written (added) at the slice tuple k names. Tuples run in
/// order, so a repeated tuple's last write wins (its sums run in order): deterministic, where
/// ONNX leaves repeats undefined without a reduction; each slice runs in parallel when large.
template <bool add>
CpuTensor scatter_nd(const AccountsPtr& acc, CpuTensor a, CpuTensor index, CpuTensor src) {
  constexpr const char* name = add ? "scatter_nd_add" : "scatter_nd";
  check(acc, a, name);
  check(acc, index, name);
  check(acc, src, name);
  check_same(a, src, name);
  if (add && kind_of(a.dtype) == Kind::Bool)
    detail::raise<DTypeError>("cpu.dtype", "{}: bool operands are not supported", name);
  const NdGeom g = nd_geom(a, index, name);
  const Shape want = nd_shape(a, index, g.m);
  if (src.shape != want)
    detail::raise<ShapeError>("shape", "{}: updates of shape {} must be {} (index {}, tensor {})",
                              name, src.shape, want, index.shape, a.shape);
  CpuTensor out = a.buf.use_count() == 1 ? std::move(a) : clone(acc, a);
  if (g.slice == 0 || g.tuples == 0) return out;
  visit_dtype(out.dtype, [&]<class T>(T) {
    T* o = out.data<T>();
    const T* s = src.data<const T>();
    for (std::int64_t k = 0; k < g.tuples; ++k) {
      T* dst = o + g.offsets[static_cast<std::size_t>(k)];
      const T* from = s + k * g.slice;
      parallel_for(0, g.slice, kGrain, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t j = lo; j < hi; ++j) {
          if constexpr (!add)
            dst[j] = from[j];
          else if constexpr (!std::is_same_v<T, bool>)  // refused above
            dst[j] = scatter_sum(dst[j], from[j]);
        }
      });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

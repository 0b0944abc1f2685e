// Ferry: EigenCpu's scatter and scatter_add along one dim (torch.Tensor.scatter / scatter_add).
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/layout.hpp"
#include "ferry/backends/eigen_cpu/loops.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

/// a + b as the dtype adds: integers wrap (in unsigned arithmetic, no UB), halves round once.
template <class T>
T scatter_sum(T a, T b) noexcept {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else if constexpr (is_half_v<T>) {
    return T(static_cast<float>(a) + static_cast<float>(b));
  } else {
    return a + b;
  }
}

/// @brief out = a, then for every position p of `index`: out[p with dim := index[p]] = src[p]
/// (`add`: += src[p]).
///
/// index has a's rank and fits in src in every dim and in a in every dim but `dim`; its values
/// must lie in [0, a.shape[dim]) (IndexError naming the first that does not, before anything is
/// written). Writes to one out position happen in the row-major order of `index`, so with
/// repeated indices the last one wins (assign) or the sum runs in that order (add):
/// deterministic, where torch leaves the order unspecified. The columns of `index` (every
/// position but along `dim`) write disjoint parts of out and run in parallel.
template <bool add>
CpuTensor scatter(const AccountsPtr& acc, CpuTensor a, std::size_t dim, CpuTensor index,
                  CpuTensor src) {
  constexpr const char* name = add ? "scatter_add" : "scatter";
  check(acc, a, name);
  check(acc, index, name);
  check(acc, src, name);
  check_kind(index, Kind::Int, name);
  check_same(a, src, name);
  if (index.device != a.device)
    detail::raise<DeviceError>("device", "{}: tensor on cpu:{}, index on cpu:{}", name, a.device,
                               index.device);
  if (add && kind_of(a.dtype) == Kind::Bool)
    detail::raise<DTypeError>("cpu.dtype", "{}: bool operands are not supported", name);
  const std::size_t r = a.shape.rank();
  if (dim >= r)
    detail::raise<IndexError>("axis", "{}: dim {} is out of range for shape {} (rank {})", name,
                              dim, a.shape, r);
  bool ok = index.shape.rank() == r && src.shape.rank() == r;
  for (std::size_t d = 0; ok && d < r; ++d)
    ok = index.shape[d] <= src.shape[d] && (d == dim || index.shape[d] <= a.shape[d]);
  if (!ok)
    detail::raise<ShapeError>("shape",
                              "{}: index of shape {} does not fit source {} and tensor {} (dim {})",
                              name, index.shape, src.shape, a.shape, dim);
  visit_dtype(index.dtype, [&]<class I>(I) {
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>)
      check_indices(index.data<const I>(), index.numel(), a.shape[dim], dim, name);
  });
  CpuTensor out = a.buf.use_count() == 1 ? std::move(a) : clone(acc, a);
  if (index.numel() == 0) return out;
  // Columns: every position of index but along dim, as (outer, inner) of index's shape.
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < r; ++d) {
    if (d < dim) outer *= index.shape[d];
    if (d > dim) inner *= index.shape[d];
  }
  const std::int64_t n = index.shape[dim];
  const auto so = out.shape.strides(), ss = src.shape.strides(), si = index.shape.strides();
  visit_dtype(index.dtype, [&]<class I>(I) {
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* idx = index.data<const I>();
      visit_dtype(out.dtype, [&]<class T>(T) {
        T* o = out.data<T>();
        const T* s = src.data<const T>();
        parallel_for(0, outer * inner, std::max<std::int64_t>(1, kGrain / n),
                     [&](std::int64_t lo, std::int64_t hi) {
                       for (std::int64_t t = lo; t < hi; ++t) {
                         // Unravel the column t into offsets of out, src and index.
                         std::int64_t rest = t, bo = 0, bs = 0, bi = 0;
                         for (std::size_t d = r; d-- > 0;) {
                           if (d == dim) continue;
                           const std::int64_t c = rest % index.shape[d];
                           rest /= index.shape[d];
                           bo += c * so[d];
                           bs += c * ss[d];
                           bi += c * si[d];
                         }
                         for (std::int64_t j = 0; j < n; ++j) {
                           const I at = idx[bi + j * si[dim]];
                           T& dst = o[bo + static_cast<std::int64_t>(at) * so[dim]];
                           const T v = s[bs + j * ss[dim]];
                           if constexpr (!add)
                             dst = v;
                           else if constexpr (!std::is_same_v<T, bool>)  // refused above
                             dst = scatter_sum(dst, v);
                         }
                       }
                     });
      });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

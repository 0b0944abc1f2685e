// Ferry: EigenCpu's argsort along one dim (sort and topk are built on it by the router).
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/reduce.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

/// The order argsort sorts (value, index) pairs in: by value (ascending, or descending), NaN
/// after every number in both directions, equal values by index. A strict total order, so any
/// sort that follows it, stable or not, partial or whole, serial or merged from chunks, gives
/// the one stable result.
template <class T, bool descending>
struct SortOrder {
  bool operator()(const std::pair<T, std::int64_t>& a,
                  const std::pair<T, std::int64_t>& b) const noexcept {
    if constexpr (std::is_floating_point_v<T>) {
      const bool na = a.first != a.first, nb = b.first != b.first;
      if (na || nb) return na == nb ? a.second < b.second : nb;
    }
    if (a.first != b.first) return descending ? b.first < a.first : a.first < b.first;
    return a.second < b.second;
  }
};

/// Sorts `v` by `less`: in place when it is short; else in chunks sorted in parallel and merged
/// pairwise, a round at a time (each round's merges in parallel too).
template <class P, class Less>
void sort_pairs(std::vector<P>& v, std::int64_t k, Less less) {
  const auto n = static_cast<std::int64_t>(v.size());
  constexpr std::int64_t kSerial = std::int64_t{1} << 15;
  if (n <= kSerial || concurrency() <= 1) {
    if (k < n)
      std::partial_sort(v.begin(), v.begin() + k, v.end(), less);
    else
      std::sort(v.begin(), v.end(), less);
    return;
  }
  const std::int64_t chunks = std::min<std::int64_t>(concurrency() * 2, n / kSerial + 1);
  const std::int64_t len = (n + chunks - 1) / chunks;
  parallel_for(0, chunks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t c = lo; c < hi; ++c)
      std::sort(v.begin() + std::min(n, c * len), v.begin() + std::min(n, (c + 1) * len), less);
  });
  std::vector<P> tmp(v.size());
  for (std::int64_t w = len; w < n; w *= 2) {
    const std::int64_t pairs = (n + 2 * w - 1) / (2 * w);
    parallel_for(0, pairs, 1, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t q = lo; q < hi; ++q) {
        const std::int64_t a = q * 2 * w, m = std::min(n, a + w), e = std::min(n, a + 2 * w);
        std::merge(v.begin() + a, v.begin() + m, v.begin() + m, v.begin() + e, tmp.begin() + a,
                   less);
      }
    });
    v.swap(tmp);
  }
}

/// @brief The indices (i64) of the first `k` elements of a stable sort of `a` along `dim`, for
/// each row: out[..., j, ...] is the index along `dim` of the j-th smallest (largest, with
/// `descending`) element. NaN sorts after every number either way; equal values (-0 and +0
/// too) keep their order. f16 and bf16 sort as f32 (exact); bool as false < true.
///
/// Each row is gathered with its indices into a scratch vector and sorted (a partial sort when
/// k is less than the row): rows in parallel, and one long row in parallel chunks.
inline CpuTensor argsort(const AccountsPtr& acc, CpuTensor a, std::size_t dim, bool descending,
                         std::size_t k) {
  constexpr const char* name = "argsort";
  check(acc, a, name);
  const ReduceGeom g = reduce_geom(a.shape, dim, true, name);  // checks dim
  if (k > static_cast<std::size_t>(g.n))
    detail::raise<ValueError>("cpu.value",
                              "{}: k = {} is more than the {} elements of dim {} of {}", name, k,
                              g.n, dim, a.shape);
  if (a.dtype == DType::f16 || a.dtype == DType::bf16)
    return argsort(acc, cast(acc, std::move(a), DType::f32, name), dim, descending, k);
  std::vector<std::int64_t> os = a.shape.to_vector();
  os[dim] = static_cast<std::int64_t>(k);
  CpuTensor out = alloc(acc, a.device, Shape(std::move(os)), DType::i64);
  const std::int64_t rows = g.outer * g.inner, kk = static_cast<std::int64_t>(k);
  if (rows == 0 || kk == 0) return out;
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (!is_half_v<T>) {
      const T* p = a.data<const T>();
      std::int64_t* o = out.data<std::int64_t>();
      auto one_row = [&](std::int64_t t, std::vector<std::pair<T, std::int64_t>>& v) {
        const std::int64_t r = t / g.inner, c = t % g.inner;
        const T* in = p + r * g.n * g.inner + c;
        for (std::int64_t j = 0; j < g.n; ++j)
          v[static_cast<std::size_t>(j)] = {in[j * g.inner], j};
        if (descending)
          sort_pairs(v, kk, SortOrder<T, true>{});
        else
          sort_pairs(v, kk, SortOrder<T, false>{});
        std::int64_t* dst = o + r * kk * g.inner + c;
        for (std::int64_t j = 0; j < kk; ++j)
          dst[j * g.inner] = v[static_cast<std::size_t>(j)].second;
      };
      parallel_for(0, rows, std::max<std::int64_t>(1, kGrain / g.n),
                   [&](std::int64_t lo, std::int64_t hi) {
                     std::vector<std::pair<T, std::int64_t>> v(static_cast<std::size_t>(g.n));
                     for (std::int64_t t = lo; t < hi; ++t) one_row(t, v);
                   });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

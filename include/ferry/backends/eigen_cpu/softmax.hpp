// Ferry: EigenCpu's fused softmax and log_softmax along one dim.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/math.hpp"
#include "ferry/backends/eigen_cpu/reduce.hpp"
#include "ferry/backends/eigen_cpu/softmax_rows.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

/// @brief softmax (log = false) or log_softmax (log = true) of a float tensor along `dim`.
///
/// The decomposition's formula (ferry/ops/reductions.hpp), fused: with m the max of a row, z =
/// x - m, s = sum(exp(z)), the result is exp(z) * (1 / s) or z - log(s). (m need not propagate
/// NaN: a NaN in the row makes its z, so s, so every result NaN; the plain max is half the time.
/// The reciprocal's multiply, as torch's CPU kernel, takes a fifth of a division's time and
/// rounds once more than the decomposition's exp(z) / s.)
/// So the edge rows come out as there: -inf everywhere but one finite value gives exactly 1
/// there and 0 elsewhere (log: 0 and -inf); a row of -inf only, or with +inf or NaN, gives NaN.
/// exp is math.hpp's (the exp kernel's). A contiguous row is read from memory once and written
/// once: after the max, one pass makes exp(z) and its sum (math::exp_sum, the same bits with or
/// without AVX2) and one scales, while the row is in cache, where the decomposition makes five
/// tensors. Along a strided dim, whole rows of inner elements go at once, vectorised, in column
/// chunks that run in parallel. f16 and bf16 run in f32, each result rounded once. The sums'
/// order is not the sum kernel's, so results may differ from the decomposition's in the last bit
/// or two.
template <bool log>
CpuTensor softmax(const AccountsPtr& acc, CpuTensor a, std::size_t dim, const char* name) {
  check(acc, a, name);
  if (kind_of(a.dtype) != Kind::Float)
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported", name, a.dtype);
  const ReduceGeom g = reduce_geom(a.shape, dim, true, name);  // checks dim
  if (a.dtype == DType::f16 || a.dtype == DType::bf16) {
    const DType h = a.dtype;
    return cast(acc, softmax<log>(acc, cast(acc, std::move(a), DType::f32, name), dim, name), h,
                name);
  }
  if (a.numel() == 0) return a;
  CpuTensor out = reuse_or_alloc(acc, a, a.shape, a.dtype);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T>) {
      const T* p = a.data<const T>();
      T* o = out.data<T>();  // may be p itself: each element is read before it is written
      const std::int64_t n = g.n;
      if (g.inner == 1) {  // contiguous rows
        parallel_for(0, g.outer, std::max<std::int64_t>(1, kGrain / n),
                     [&](std::int64_t lo, std::int64_t hi) {
                       std::vector<T> e;  // log_softmax: exp(z) of a row, for its sum only
                       if constexpr (log) e.resize(static_cast<std::size_t>(n));
                       for (std::int64_t r = lo; r < hi; ++r) {
                         const T* x = p + r * n;
                         T* y = o + r * n;
                         const T m = math::row_max(x, n);
                         const T* next = r + 1 < hi ? x + n : nullptr;
                         if constexpr (log) {
                           const T ls = std::log(math::exp_sum(x, m, e.data(), n, next));
                           ArrMap<T>(y, n) = (ConstArrMap<T>(x, n) - m) - ls;
                         } else {
                           const T s = math::exp_sum(x, m, y, n, next);
                           math::scale(y, T(1) / s, n);
                         }
                       }
                     });
        return;
      }
      for_inner_chunks(g, [&](std::int64_t r, std::int64_t c0, std::int64_t len) {
        const std::int64_t base = r * n * g.inner + c0;
        std::vector<T> mv(static_cast<std::size_t>(len)), sv(static_cast<std::size_t>(len), T(0));
        std::vector<T> ev(log ? static_cast<std::size_t>(len) : 0);
        ArrMap<T> m(mv.data(), len), s(sv.data(), len);
        m = ConstArrMap<T>(p + base, len);
        for (std::int64_t j = 1; j < n; ++j) {  // the max, NaN sticky
          const ConstArrMap<T> xj(p + base + j * g.inner, len);
          m = (xj > m || xj != xj).select(xj, m);
        }
        for (std::int64_t j = 0; j < n; ++j) {
          const std::int64_t at = base + j * g.inner;
          T* z = log ? ev.data() : o + at;
          ArrMap<T>(z, len) = ConstArrMap<T>(p + at, len) - m;
          math::exp(z, z, len);
          s += ArrMap<T>(z, len);
        }
        if constexpr (log) {
          for (auto& v : sv) v = std::log(v);
          for (std::int64_t j = 0; j < n; ++j) {
            const std::int64_t at = base + j * g.inner;
            ArrMap<T>(o + at, len) = (ConstArrMap<T>(p + at, len) - m) - s;
          }
        } else {
          s = s.inverse();
          for (std::int64_t j = 0; j < n; ++j) ArrMap<T>(o + base + j * g.inner, len) *= s;
        }
      });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

// Ferry: EigenCpu's inclusive scans along one dim: cumsum, cumprod, cummax, cummin.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/reduce.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

/// @brief out[..., j, ...] = fold of x[..., 0..j, ...] along `dim`.
///
/// Integer sums and products run in i64 (u64 for u64; the router casts before), wrapping; f16
/// and bf16 run in f32, each output rounded once (as torch's CPU scans, which accumulate halves
/// in float); max and min propagate NaN from its position on (torch.cummax). Along a contiguous
/// dim each row is one serial pass; otherwise whole rows of the inner dims are folded at once,
/// vectorised, in column chunks that run in parallel. A dim of size 1, or an empty tensor, is
/// its own scan: the input is returned (its buffer shared).
template <RedOp op>
CpuTensor scan(const AccountsPtr& acc, CpuTensor a, std::size_t dim, const char* name) {
  check(acc, a, name);
  const Kind k = kind_of(a.dtype);
  if (k != Kind::Float && k != Kind::Int)
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported", name, a.dtype);
  if constexpr (op == RedOp::sum || op == RedOp::prod)
    if (k == Kind::Int && a.dtype != accumulate_dtype(a.dtype))
      a = cast(acc, std::move(a), accumulate_dtype(a.dtype), name);
  if (a.dtype == DType::f16 || a.dtype == DType::bf16) {
    const DType h = a.dtype;
    return cast(acc, scan<op>(acc, cast(acc, std::move(a), DType::f32, name), dim, name), h, name);
  }
  const ReduceGeom g = reduce_geom(a.shape, dim, true, name);  // checks dim
  if (g.n <= 1 || a.numel() == 0) return a;
  CpuTensor out = reuse_or_alloc(acc, a, a.shape, a.dtype);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (is_numeric_v<T> && !is_half_v<T>) {
      const T* p = a.data<const T>();
      T* o = out.data<T>();  // may be p itself: each element is read before it is written
      constexpr BinOp f = fold_op(op);  // out[j] = f(out[j - 1], x[j])
      if (g.inner == 1) {               // contiguous rows: one serial pass each
        parallel_for(0, g.outer, std::max<std::int64_t>(1, kGrain / g.n),
                     [&](std::int64_t lo, std::int64_t hi) {
                       for (std::int64_t r = lo; r < hi; ++r) {
                         const T* x = p + r * g.n;
                         T* y = o + r * g.n;
                         T run = x[0];
                         y[0] = run;
                         for (std::int64_t j = 1; j < g.n; ++j)
                           y[j] = run = binary_one<f, T>(run, x[j]);
                       }
                     });
        return;
      }
      for_inner_chunks(g, [&](std::int64_t r, std::int64_t c0, std::int64_t len) {
        const std::int64_t base = r * g.n * g.inner + c0;
        if (o != p) std::copy(p + base, p + base + len, o + base);
        for (std::int64_t j = 1; j < g.n; ++j) {
          const std::int64_t at = base + j * g.inner;
          ArrMap<T>(o + at, len) =
              binary_expr<f, T>(ConstArrMap<T>(o + at - g.inner, len), ConstArrMap<T>(p + at, len));
        }
      });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

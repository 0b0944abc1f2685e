// Ferry: EigenCpu's batched matmul on Eigen's GEMM, numpy-broadcast batch dims.
// SPDX-License-Identifier: MIT
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/loops.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

/// Multiply-adds one matmul task should hold at least, so a thread's GEMM is worth waking for.
inline constexpr std::int64_t kGemmGrain = std::int64_t{1} << 21;

/// The scalar Eigen's GEMM runs on: T for floats, the unsigned type of T's width for ints.
template <class T, bool = std::is_integral_v<T>>
struct GemmScalar {
  using type = T;
};
template <class T>
struct GemmScalar<T, true> {
  using type = std::make_unsigned_t<T>;
};

/// a [..., M, K] x b [..., K, N] -> [..., M, N]. Each matrix is an Eigen::Map of row-major
/// storage (no copies) for floats; work is split over batch entries and blocks of rows of M.
/// Integer matmul is a plain i-k-j loop on the unsigned type of the same width, so overflow
/// wraps instead of being UB (and Eigen's GEMM is not instantiated twice more).
inline CpuTensor matmul(const AccountsPtr& acc, CpuTensor a, CpuTensor b) {
  check(acc, a, "matmul");
  check(acc, b, "matmul");
  check_same(a, b, "matmul");
  const Kind k = kind_of(a.dtype);
  if (k != Kind::Float && k != Kind::Int)
    detail::raise<DTypeError>("cpu.dtype", "matmul: {} operands are not supported", a.dtype);
  if (a.dtype == DType::f16 || a.dtype == DType::bf16) {  // f32 GEMM, each result rounded once
    const DType h = a.dtype;
    return cast(acc,
                matmul(acc, cast(acc, std::move(a), DType::f32, "matmul"),
                       cast(acc, std::move(b), DType::f32, "matmul")),
                h, "matmul");
  }
  const std::size_t ra = a.shape.rank(), rb = b.shape.rank();
  if (ra < 2 || rb < 2)
    detail::raise<ShapeError>("shape", "matmul: operands need rank >= 2, got {} and {}", a.shape,
                              b.shape);
  const std::int64_t m = a.shape[ra - 2], kk = a.shape[ra - 1], k2 = b.shape[rb - 2],
                     n = b.shape[rb - 1];
  if (kk != k2)
    detail::raise<ShapeError>("shape", "matmul: {} x {}: inner dims {} and {} differ", a.shape,
                              b.shape, kk, k2);
  const Shape ba(std::vector<std::int64_t>(a.shape.begin(), a.shape.end() - 2));
  const Shape bb(std::vector<std::int64_t>(b.shape.begin(), b.shape.end() - 2));
  const Shape batch = broadcast_shapes(ba, bb, "matmul");
  std::vector<std::int64_t> dims(batch.to_vector());
  dims.push_back(m);
  dims.push_back(n);
  CpuTensor out = alloc(acc, a.device, Shape(dims), a.dtype);
  const std::int64_t nb = batch.numel();
  if (nb == 0 || m == 0 || n == 0) return out;

  // Matrix offsets of each batch entry in a and b (broadcast batch dims step 0).
  std::vector<std::int64_t> aoff(static_cast<std::size_t>(nb)), boff(aoff.size());
  {
    const auto sa = broadcast_strides(ba, batch), sb = broadcast_strides(bb, batch);
    std::vector<std::int64_t> idx(batch.rank(), 0);
    std::int64_t oa = 0, ob = 0;
    for (std::int64_t t = 0; t < nb; ++t) {
      aoff[static_cast<std::size_t>(t)] = oa * m * kk;
      boff[static_cast<std::size_t>(t)] = ob * kk * n;
      for (std::size_t d = batch.rank(); d-- > 0;) {
        ++idx[d];
        oa += sa[d];
        ob += sb[d];
        if (idx[d] < batch[d]) break;
        oa -= idx[d] * sa[d];
        ob -= idx[d] * sb[d];
        idx[d] = 0;
      }
    }
  }
  const std::int64_t row_work = std::max<std::int64_t>(1, kk * n);
  // One block of rows per thread (not more): each GEMM call packs all of B again, so splitting
  // finer than the threads available only adds packing work.
  const std::int64_t threads = std::max<std::int64_t>(1, concurrency());
  const std::int64_t per_thread = nb >= threads ? m : (m * nb + threads - 1) / threads;
  const std::int64_t rows = std::clamp<std::int64_t>(
      std::max(per_thread, kGemmGrain / row_work),
      std::min<std::int64_t>(16, std::max<std::int64_t>(m, 1)), std::max<std::int64_t>(m, 1));
  const std::int64_t blocks = (m + rows - 1) / rows;
  const bool small = nb * m * row_work < 2 * kGemmGrain;

  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (is_numeric_v<T> && !is_half_v<T>) {
      using S = typename GemmScalar<T>::type;
      const S* pa = a.data<const S>();
      const S* pb = b.data<const S>();
      S* pc = out.data<S>();
      parallel_for(0, nb * blocks, small ? nb * blocks : 1, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t t = lo; t < hi; ++t) {
          const std::int64_t bi = t / blocks, r0 = (t % blocks) * rows;
          const std::int64_t r = std::min(rows, m - r0);
          const S* A = pa + aoff[static_cast<std::size_t>(bi)] + r0 * kk;
          const S* B = pb + boff[static_cast<std::size_t>(bi)];
          S* C = pc + (bi * m + r0) * n;
          if constexpr (std::is_floating_point_v<S>) {
            using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
            Eigen::Map<Mat>(C, r, n).noalias() =
                Eigen::Map<const Mat>(A, r, kk) * Eigen::Map<const Mat>(B, kk, n);
          } else {
            // Integer GEMM: i-k-j order, the inner loop a contiguous axpy over a row of B.
            using W = wrap_t<S>;  // no promotion to int: u16 products would overflow it
            std::fill(C, C + r * n, S{0});
            for (std::int64_t i = 0; i < r; ++i)
              for (std::int64_t q = 0; q < kk; ++q) {
                const W x = A[i * kk + q];
                const S* brow = B + q * n;
                S* crow = C + i * n;
                for (std::int64_t j = 0; j < n; ++j)
                  crow[j] = static_cast<S>(crow[j] + x * static_cast<W>(brow[j]));
              }
          }
        }
      });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

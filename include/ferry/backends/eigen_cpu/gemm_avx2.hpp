// Ferry: a small f32 GEMM for AVX2 + FMA, chosen at run time, for kernels whose operands are
// blocks that fit in cache (fused attention's q kᵀ and weights · v). Eigen picks its packets at
// compile time, so a library built for baseline x86-64 multiplies with SSE2; this multiplies
// with 256-bit FMAs on CPUs that have them.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FERRY_NO_AVX2)
#  define FERRY_GEMM_AVX2 1
#  include <immintrin.h>
#endif

namespace ferry::detail::cpu::gemm {

#ifdef FERRY_GEMM_AVX2

/// True when this CPU has AVX2 and FMA (and the OS saves the YMM registers).
inline bool available() noexcept {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

/// C[0, MR) x [0, 8 NB) = A[0, MR) x [0, k) · B[0, k) x [0, 8 NB): the tile in registers (6 x 16:
/// twelve accumulators, enough FMAs in flight to hide their latency), A's elements broadcast,
/// B's rows loaded.
template <int MR, int NB>
__attribute__((target("avx2,fma"))) inline void tile(std::int64_t k, const float* a,
                                                     std::int64_t lda, const float* b,
                                                     std::int64_t ldb, float* c,
                                                     std::int64_t ldc) noexcept {
  __m256 acc[MR][NB];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NB; ++v) acc[r][v] = _mm256_setzero_ps();
  for (std::int64_t p = 0; p < k; ++p) {
    __m256 bv[NB];
    for (int v = 0; v < NB; ++v) bv[v] = _mm256_loadu_ps(b + p * ldb + 8 * v);
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
      for (int v = 0; v < NB; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NB; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
}

template <int NB>
inline void column_panel(std::int64_t m, std::int64_t k, const float* a, std::int64_t lda,
                         const float* b, std::int64_t ldb, float* c, std::int64_t ldc) noexcept {
  std::int64_t i = 0;
  for (; i + 6 <= m; i += 6) tile<6, NB>(k, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
  a += i * lda;
  c += i * ldc;
  switch (m - i) {
    case 5:
      return tile<5, NB>(k, a, lda, b, ldb, c, ldc);
    case 4:
      return tile<4, NB>(k, a, lda, b, ldb, c, ldc);
    case 3:
      return tile<3, NB>(k, a, lda, b, ldb, c, ldc);
    case 2:
      return tile<2, NB>(k, a, lda, b, ldb, c, ldc);
    case 1:
      return tile<1, NB>(k, a, lda, b, ldb, c, ldc);
    default:
      return;
  }
}

/// C = A · B for row-major f32 A [m, k], B [k, n], C [m, n] with leading dims lda, ldb, ldc;
/// C is overwritten. Call only when available(). Columns go 16, then 8, at a time (a panel of
/// B stays in L1 while every row of A passes), the last n mod 8 by plain dot products.
inline void multiply(std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                     std::int64_t lda, const float* b, std::int64_t ldb, float* c,
                     std::int64_t ldc) noexcept {
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) column_panel<2>(m, k, a, lda, b + j, ldb, c + j, ldc);
  for (; j + 8 <= n; j += 8) column_panel<1>(m, k, a, lda, b + j, ldb, c + j, ldc);
  for (; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      float s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += a[i * lda + p] * b[p * ldb + j];
      c[i * ldc + j] = s;
    }
}

#endif  // FERRY_GEMM_AVX2

}  // namespace ferry::detail::cpu::gemm

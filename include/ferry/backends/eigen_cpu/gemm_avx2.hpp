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
  static_assert(MR >= 1 && MR <= 6 && (NB == 1 || NB == 2));
  // Twelve named accumulators, not an array: GCC keeps an array of vectors in registers but
  // also stores it to the stack on every step of the loop, which halved the tile's speed.
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const auto step = [&](const __m256 b0, const __m256 b1, const float* ap)
      __attribute__((always_inline, target("avx2,fma"))) {
    const auto row = [&](__m256 & x0, __m256 & x1, const float* ar)
        __attribute__((always_inline, target("avx2,fma"))) {
      const __m256 av = _mm256_broadcast_ss(ar);
      x0 = _mm256_fmadd_ps(av, b0, x0);
      if constexpr (NB == 2) x1 = _mm256_fmadd_ps(av, b1, x1);
    };
    row(c00, c01, ap);
    if constexpr (MR > 1) row(c10, c11, ap + lda);
    if constexpr (MR > 2) row(c20, c21, ap + 2 * lda);
    if constexpr (MR > 3) row(c30, c31, ap + 3 * lda);
    if constexpr (MR > 4) row(c40, c41, ap + 4 * lda);
    if constexpr (MR > 5) row(c50, c51, ap + 5 * lda);
  };
  for (std::int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * ldb);
    const __m256 b1 = NB == 2 ? _mm256_loadu_ps(b + p * ldb + 8) : b0;
    step(b0, b1, a + p);
  }
  const auto put = [&](float* cr, const __m256 x0, const __m256 x1)
      __attribute__((always_inline, target("avx2,fma"))) {
    _mm256_storeu_ps(cr, x0);
    if constexpr (NB == 2) _mm256_storeu_ps(cr + 8, x1);
  };
  put(c, c00, c01);
  if constexpr (MR > 1) put(c + ldc, c10, c11);
  if constexpr (MR > 2) put(c + 2 * ldc, c20, c21);
  if constexpr (MR > 3) put(c + 3 * ldc, c30, c31);
  if constexpr (MR > 4) put(c + 4 * ldc, c40, c41);
  if constexpr (MR > 5) put(c + 5 * ldc, c50, c51);
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

/// Floats pack() writes for `k` rows of `n` columns: the columns of whole 8-column panels.
inline std::int64_t packed_floats(std::int64_t k, std::int64_t n) noexcept {
  return k * (n / 8 * 8);
}

/// B [k, n] packed for multiply(): panels of 16 columns, then one of 8 when n mod 16 >= 8, each
/// panel's k rows contiguous (the tiles then read B in order, with no cache-set conflicts from a
/// long row stride). Element (p, j) of B is b[p * sp + j * sj]: sp = ldb, sj = 1 for a row-major
/// B; sp = 1, sj = ld for the transpose of a row-major [n, k] (attention's keys).
inline void pack(std::int64_t k, std::int64_t n, const float* b, std::int64_t sp, std::int64_t sj,
                 float* out) noexcept {
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t c = 0; c < 16; ++c) *out++ = b[p * sp + (j + c) * sj];
  if (j + 8 <= n)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t c = 0; c < 8; ++c) *out++ = b[p * sp + (j + c) * sj];
}

/// C [m, n] = A [m, k] · B [k, n] (row-major A and C, leading dims lda and ldc; C overwritten),
/// B given packed by pack() over `kp` >= k rows and `np` >= n columns, and unpacked as (b, sp,
/// sj) for the last n mod 8 columns, done as plain dot products. Call only when available().
/// The first k rows and n columns of the packed B are used, so one packing serves causal blocks
/// that see fewer keys.
inline void multiply(std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
                     std::int64_t lda, const float* bp, std::int64_t kp, std::int64_t np,
                     const float* b, std::int64_t sp, std::int64_t sj, float* c,
                     std::int64_t ldc) noexcept {
  const std::int64_t n16 = np / 16 * 16;  // columns in 16-column panels
  std::int64_t j = 0;
  for (; j + 16 <= n && j + 16 <= n16; j += 16)
    column_panel<2>(m, k, a, lda, bp + j * kp, 16, c + j, ldc);
  if (j + 8 <= n) {  // half of a 16-column panel, or the 8-column one
    column_panel<1>(m, k, a, lda, bp + j * kp, j < n16 ? 16 : 8, c + j, ldc);
    j += 8;
  }
  for (; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      float s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += a[i * lda + p] * b[p * sp + j * sj];
      c[i * ldc + j] = s;
    }
}

#endif  // FERRY_GEMM_AVX2

}  // namespace ferry::detail::cpu::gemm

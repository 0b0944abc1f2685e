// Ferry: linear_packed (quant/gemv.hpp) — the fused quantized GEMV. Compiled once by
// src/quant.cpp, or included inline by quant/gemv.hpp with FERRY_HEADER_ONLY.
//
// The AVX2 kernel is built for AVX2 + FMA with a function attribute and chosen at run time, so
// the library itself stays baseline x86-64 (and builds anywhere: other CPUs get `false`).
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "ferry/config.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/error.hpp"
#include "ferry/quant/gemv.hpp"
#include "ferry/quant/geometry.hpp"
#include "ferry/quant/impl/loops.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#  define FERRY_QUANT_AVX2 1
#  include <immintrin.h>
#endif

namespace ferry::quant {
namespace detail {

/// What one call of the fused kernel reads: w's stream and params, x, y and the geometry.
struct GemvArgs {
  const unsigned char* data;  // w's value stream
  ParamReader params;
  std::int64_t K, N;
  std::int64_t block;  // elements per param along the flat stream (a multiple of 32, or all)
  const float* x;
  float* y;
};

#ifdef FERRY_QUANT_AVX2

#  define FERRY_AVX2 __attribute__((target("avx2,fma")))

inline bool has_avx2_fma() noexcept {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

/// How a slot's bits read as a number: plain binary, two's complement, or an OCP E2M1 code read
/// as twice its value (0, 1, 2, 3, 4, 6, 8, 12 and their negatives: integers, so the integer
/// kernel runs MXFP4 / NVFP4 weights; the scale is halved to match).
enum Codes : int { kUnsigned = 0, kSigned = 1, kE2M1x2 = 2 };

/// E2M1 codes (0..15 in each int32 lane) as twice their values.
FERRY_AVX2 inline __m256i e2m1_x2(__m256i c) noexcept {
  const __m256i table = _mm256_setr_epi32(0, 1, 2, 3, 4, 6, 8, 12);
  const __m256i mag = _mm256_permutevar8x32_epi32(table, _mm256_and_si256(c, _mm256_set1_epi32(7)));
  const __m256i neg = _mm256_srai_epi32(_mm256_slli_epi32(c, 28), 31);  // all ones for sign bit 3
  return _mm256_sub_epi32(_mm256_xor_si256(mag, neg), neg);
}

/// The 32 values of a group as four vectors of eight int32. 8-bit slots come in element order;
/// 4-bit ones in the order nibble_order() gives x (a byte's two nibbles go to two vectors, so
/// no shuffle is needed: the byte is widened once and each nibble taken by a shift).
template <int Slot, int Signed>
FERRY_AVX2 inline void load32(const unsigned char* src, __m256i v[4]) noexcept {
  if constexpr (Signed == kE2M1x2) {
    for (int h = 0; h < 2; ++h) {
      const __m256i w =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 8 * h)));
      v[2 * h] = e2m1_x2(_mm256_and_si256(w, _mm256_set1_epi32(0x0F)));
      v[2 * h + 1] = e2m1_x2(_mm256_srli_epi32(w, 4));
    }
  } else if constexpr (Slot == 8) {
    for (int j = 0; j < 4; ++j) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 8 * j));
      v[j] = Signed == kSigned ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
    }
  } else {
    for (int h = 0; h < 2; ++h) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + 8 * h));
      if constexpr (Signed == kSigned) {  // the byte as int8 is hi * 16 + lo (lo unsigned)
        const __m256i w = _mm256_cvtepi8_epi32(b);
        v[2 * h] = _mm256_srai_epi32(_mm256_slli_epi32(w, 28), 28);
        v[2 * h + 1] = _mm256_srai_epi32(w, 4);
      } else {
        const __m256i w = _mm256_cvtepu8_epi32(b);
        v[2 * h] = _mm256_and_si256(w, _mm256_set1_epi32(0x0F));
        v[2 * h + 1] = _mm256_srli_epi32(w, 4);
      }
    }
  }
}

FERRY_AVX2 inline float hsum(__m256 v) noexcept {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

/// acc[m] += s · Σ (q - o)·x[m] over one group of 32 values at `src` (x at the group's column).
template <int Slot, int Signed, bool Affine, int M>
FERRY_AVX2 inline void group32(const unsigned char* src, const float* x, std::int64_t K, float s,
                               std::int32_t o, __m256 (&acc)[M]) noexcept {
  __m256i v[4];
  load32<Slot, Signed>(src, v);
  __m256 f[4];
  const __m256i ov = _mm256_set1_epi32(o);
  for (int i = 0; i < 4; ++i) f[i] = _mm256_cvtepi32_ps(Affine ? _mm256_sub_epi32(v[i], ov) : v[i]);
  const __m256 sv = _mm256_set1_ps(s);
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * K;
    __m256 t = _mm256_mul_ps(f[0], _mm256_loadu_ps(xm));
    for (int i = 1; i < 4; ++i) t = _mm256_fmadd_ps(f[i], _mm256_loadu_ps(xm + 8 * i), t);
    acc[m] = _mm256_fmadd_ps(t, sv, acc[m]);
  }
}

/// The same over a group of 32 that holds two blocks of 16 (NVFP4): values 0..15 are v[0..1]
/// and 16..31 are v[2..3] in both slot orders, so each half takes its own scale and offset.
template <int Slot, int Signed, bool Affine, int M>
FERRY_AVX2 inline void group32x2(const unsigned char* src, const float* x, std::int64_t K,
                                 const float* s, const std::int32_t* o, __m256 (&acc)[M]) noexcept {
  __m256i v[4];
  load32<Slot, Signed>(src, v);
  __m256 f[4];
  for (int i = 0; i < 4; ++i)
    f[i] = _mm256_cvtepi32_ps(Affine ? _mm256_sub_epi32(v[i], _mm256_set1_epi32(o[i / 2])) : v[i]);
  const __m256 s0 = _mm256_set1_ps(s[0]), s1 = _mm256_set1_ps(s[1]);
  for (int m = 0; m < M; ++m) {
    const float* xm = x + m * K;
    const __m256 t0 =
        _mm256_fmadd_ps(f[1], _mm256_loadu_ps(xm + 8), _mm256_mul_ps(f[0], _mm256_loadu_ps(xm)));
    const __m256 t1 = _mm256_fmadd_ps(f[3], _mm256_loadu_ps(xm + 24),
                                      _mm256_mul_ps(f[2], _mm256_loadu_ps(xm + 16)));
    acc[m] = _mm256_fmadd_ps(t1, s1, _mm256_fmadd_ps(t0, s0, acc[m]));
  }
}

/// How a row's params fall on its groups of 32: one per group, one per half group (blocks of
/// 16), or one per run of several groups.
enum Runs : int { kRun32 = 0, kRunLong = 1, kRun16 = 2 };

/// Outputs [n0, n1) for rows x[0, M) (M <= kPackedPassRows; x already in load32's order).
/// Blocks of 32 (kRun32): a scale per group, two accumulators taking groups in turn so that FMA
/// latency overlaps; blocks of 16 (kRun16) the same with two scales per group. Longer runs (per
/// axis, per tensor, blocks of 64, ...): t = Σ (q - o)·x over the run in A independent vectors,
/// then acc += t·s once per run.
template <int Slot, int Signed, bool Affine, int Run, int M>
FERRY_AVX2 void gemv_rows(const GemvArgs& g, std::int64_t n0, std::int64_t n1, float* sc,
                          std::int32_t* off) {
  const std::int64_t K = g.K;
  const unsigned char* const data = g.data;
  const float* const x = g.x;
  for (std::int64_t n = n0; n < n1; ++n) {
    const std::int64_t row = n * K, end = row + K;
    const std::int64_t p0 = row / g.block, np = (end - 1) / g.block - p0 + 1;
    g.params.decode(p0, np, sc, off);
    if constexpr (Signed == kE2M1x2)
      for (std::int64_t j = 0; j < np; ++j) sc[j] *= 0.5f;  // exact: the values read twice over
    const unsigned char* const wrow = data + static_cast<std::size_t>(row) * Slot / 8;
    float out[M];
    if constexpr (Run == kRun16) {  // np == K / 16: the row starts on a block
      __m256 a0[M], a1[M];
      for (int m = 0; m < M; ++m) a0[m] = a1[m] = _mm256_setzero_ps();
      for (std::int64_t j = 0; j < K / 32; ++j)
        group32x2<Slot, Signed, Affine, M>(wrow + j * 4 * Slot, x + 32 * j, K, sc + 2 * j,
                                           off + 2 * j, (j & 1) ? a1 : a0);
      for (int m = 0; m < M; ++m) out[m] = hsum(_mm256_add_ps(a0[m], a1[m]));
    } else if constexpr (Run == kRun32) {  // np == K / 32: the row starts on a block
      __m256 a0[M], a1[M];
      for (int m = 0; m < M; ++m) a0[m] = a1[m] = _mm256_setzero_ps();
      std::int64_t j = 0;
      for (; j + 1 < np; j += 2) {
        group32<Slot, Signed, Affine, M>(wrow + j * 4 * Slot, x + 32 * j, K, sc[j], off[j], a0);
        group32<Slot, Signed, Affine, M>(wrow + (j + 1) * 4 * Slot, x + 32 * (j + 1), K, sc[j + 1],
                                         off[j + 1], a1);
      }
      if (j < np)
        group32<Slot, Signed, Affine, M>(wrow + j * 4 * Slot, x + 32 * j, K, sc[j], off[j], a0);
      for (int m = 0; m < M; ++m) out[m] = hsum(_mm256_add_ps(a0[m], a1[m]));
    } else {
      constexpr int A = M == 1 ? 4 : 2;
      __m256 acc[M];
      for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
      std::int64_t e = row;
      for (std::int64_t j = 0; j < np; ++j) {
        const std::int64_t stop = std::min(end, (p0 + j + 1) * g.block);
        const __m256i o = _mm256_set1_epi32(off[j]);
        __m256 t[M][A];
        for (int m = 0; m < M; ++m)
          for (int a = 0; a < A; ++a) t[m][a] = _mm256_setzero_ps();
        for (; e < stop; e += 32) {
          __m256i v[4];
          load32<Slot, Signed>(wrow + (e - row) * Slot / 8, v);
          __m256 f[4];
          for (int i = 0; i < 4; ++i)
            f[i] = _mm256_cvtepi32_ps(Affine ? _mm256_sub_epi32(v[i], o) : v[i]);
          for (int m = 0; m < M; ++m) {
            const float* xm = x + m * K + (e - row);
            for (int i = 0; i < 4; ++i)
              t[m][i % A] = _mm256_fmadd_ps(f[i], _mm256_loadu_ps(xm + 8 * i), t[m][i % A]);
          }
        }
        const __m256 sv = _mm256_set1_ps(sc[j]);
        for (int m = 0; m < M; ++m) {
          __m256 r = t[m][0];
          for (int a = 1; a < A; ++a) r = _mm256_add_ps(r, t[m][a]);
          acc[m] = _mm256_fmadd_ps(r, sv, acc[m]);
        }
      }
      for (int m = 0; m < M; ++m) out[m] = hsum(acc[m]);
    }
    for (int m = 0; m < M; ++m) g.y[m * g.N + n] = out[m];
  }
}

template <int Slot, int Signed, bool Affine, int Run>
void gemv_pass(const GemvArgs& g, std::int64_t rows, std::int64_t n0, std::int64_t n1, float* sc,
               std::int32_t* off) {
  switch (rows) {
    case 1:
      return gemv_rows<Slot, Signed, Affine, Run, 1>(g, n0, n1, sc, off);
    case 2:
      return gemv_rows<Slot, Signed, Affine, Run, 2>(g, n0, n1, sc, off);
    case 3:
      return gemv_rows<Slot, Signed, Affine, Run, 3>(g, n0, n1, sc, off);
    default:
      return gemv_rows<Slot, Signed, Affine, Run, 4>(g, n0, n1, sc, off);
  }
}

template <int Slot, int Signed, bool Affine>
void gemv_pass(const GemvArgs& g, std::int64_t rows, std::int64_t n0, std::int64_t n1, float* sc,
               std::int32_t* off) {
  if (g.block == 32)
    gemv_pass<Slot, Signed, Affine, kRun32>(g, rows, n0, n1, sc, off);
  else if (g.block == 16)
    gemv_pass<Slot, Signed, Affine, kRun16>(g, rows, n0, n1, sc, off);
  else
    gemv_pass<Slot, Signed, Affine, kRunLong>(g, rows, n0, n1, sc, off);
}

template <int Slot>
void gemv_pass(const GemvArgs& g, int codes, bool affine, std::int64_t rows, std::int64_t n0,
               std::int64_t n1, float* sc, std::int32_t* off) {
  if constexpr (Slot == 4)
    if (codes == kE2M1x2)  // float codes are symmetric only
      return gemv_pass<Slot, kE2M1x2, false>(g, rows, n0, n1, sc, off);
  if (codes == kSigned)
    affine ? gemv_pass<Slot, kSigned, true>(g, rows, n0, n1, sc, off)
           : gemv_pass<Slot, kSigned, false>(g, rows, n0, n1, sc, off);
  else
    affine ? gemv_pass<Slot, kUnsigned, true>(g, rows, n0, n1, sc, off)
           : gemv_pass<Slot, kUnsigned, false>(g, rows, n0, n1, sc, off);
}

/// x [M, K] rearranged for 4-bit weights: within each group of 32, the elements a byte's low
/// nibbles meet (0, 2, ..., 14), then the high ones (1, 3, ..., 15), then the same for 16..31.
inline void nibble_order(const float* x, std::int64_t n, float* out) noexcept {
  for (std::int64_t g = 0; g < n; g += 32)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 8; ++i) {
        out[g + 16 * h + i] = x[g + 16 * h + 2 * i];
        out[g + 16 * h + 8 + i] = x[g + 16 * h + 2 * i + 1];
      }
}

#  undef FERRY_AVX2
#endif  // FERRY_QUANT_AVX2

}  // namespace detail

FERRY_FUNC bool linear_packed(const QuantizedParts& w, std::span<const float> x, std::int64_t M,
                              std::span<float> y) {
  detail::check_sizes(w);
  if (w.shape.rank() != 2 || M < 0)
    ferry::detail::raise<QuantError>("quant.args",
                                     "linear_packed: needs a weight [N, K] and M >= 0, got {} "
                                     "and M = {}",
                                     w.shape, M);
  const std::int64_t N = w.shape[0], K = w.shape[1];
  // M·K and M·N cannot overflow where x and y hold that many floats; check by division.
  const auto holds = [](std::size_t size, std::int64_t a, std::int64_t b) {
    return b == 0 ? size == 0
                  : (static_cast<std::size_t>(a) == size / static_cast<std::size_t>(b) &&
                     size % static_cast<std::size_t>(b) == 0);
  };
  if (!holds(x.size(), M, K) || !holds(y.size(), M, N))
    ferry::detail::raise<QuantError>(
        "quant.args", "linear_packed: x holds {} and y {} floats, expected {} x {} and {} x {}",
        x.size(), y.size(), M, K, M, N);
#ifdef FERRY_QUANT_AVX2
  if (M == 0 || N == 0 || K == 0 || K % 32 != 0 || !detail::has_avx2_fma()) return false;
  // Float codes: e2m1 (MXFP4, NVFP4) reads as integers (twice its values); FP8 codes and
  // codebook indices are decoded by the tiles.
  const bool e2m1 = w.scheme.value == ValueType::e2m1;
  if ((is_float(w.scheme.value) && !e2m1) || !w.scheme.codebook.empty()) return false;
  const int slot = detail::slot_bits(w.scheme.value, w.scheme.storage);
  if (slot != 8 && slot != 4) return false;
  const detail::Canon c = detail::make_canon(w.scheme, w.shape);
  if (c.dims.size() != 1 || c.gstride[0] != 1) return false;
  const std::int64_t block = c.block[0];
  // A group of 32 may hold two blocks of 16 (NVFP4), else it must lie in one param.
  if (block != 16 && block % 32 != 0 && block < c.numel) return false;
  const int codes = e2m1                        ? detail::kE2M1x2
                    : is_signed(w.scheme.value) ? detail::kSigned
                                                : detail::kUnsigned;
  const bool affine = w.scheme.mode == Mode::affine;
  std::vector<float> xo;
  if (slot == 4) {
    xo.resize(x.size());
    detail::nibble_order(x.data(), static_cast<std::int64_t>(x.size()), xo.data());
  }
  const detail::GemvArgs g{reinterpret_cast<const unsigned char*>(w.data.data()),
                           detail::ParamReader(w),
                           K,
                           N,
                           block,
                           slot == 4 ? xo.data() : x.data(),
                           y.data()};
  // The params one row spans, decoded per row into a task's own arrays.
  const std::int64_t row_params = std::min(K / std::min<std::int64_t>(block, 32), c.nparams) + 1;
  // About 64 Ki weight values per task.
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / K);
  ferry::detail::parallel_for(0, N, grain, [&](std::int64_t n0, std::int64_t n1) {
    std::vector<float> sc(static_cast<std::size_t>(row_params));
    std::vector<std::int32_t> off(static_cast<std::size_t>(row_params));
    for (std::int64_t m0 = 0; m0 < M; m0 += kPackedPassRows) {
      detail::GemvArgs part = g;
      part.x = g.x + m0 * K;
      part.y = g.y + m0 * N;
      const std::int64_t rows = std::min(kPackedPassRows, M - m0);
      if (slot == 4)
        detail::gemv_pass<4>(part, codes, affine, rows, n0, n1, sc.data(), off.data());
      else
        detail::gemv_pass<8>(part, codes, affine, rows, n0, n1, sc.data(), off.data());
    }
  });
  return true;
#else
  return false;
#endif
}

}  // namespace ferry::quant

// Ferry: the passes of softmax over one contiguous row: its max, y = exp(x - m) with the sum of
// y in one pass, and y scaled. AVX2 where the CPU has it (chosen at run time, as math.hpp's exp),
// with the same bits as the paths without.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ferry/backends/eigen_cpu/math.hpp"

namespace ferry::detail::cpu::math {

/// Bytes in a cache line, the step of the prefetches below.
inline constexpr std::int64_t kLine = 64;

/// Asks for the line holding `p` to be brought into cache; a hint, never a read (it cannot
/// fault, and `p` may be anywhere).
inline void prefetch([[maybe_unused]] const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 3);
#endif
}

/// The sum's fixed order: element i goes to lane i mod 8, in order of i, and the eight lanes are
/// added as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). Every path below keeps it, so a
/// softmax has the same bits on every x86-64 CPU, with or without AVX2.
template <class T>
T sum_lanes(const T (&l)[8]) {
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

/// exp_sum without AVX2: exp over chunks of the row (ExpF32's packets for f32, std::exp for
/// f64), each chunk summed into the lanes while it is in L1.
template <class T>
T exp_sum_generic(const T* x, T m, T* y, std::int64_t n, const T* next) {
  constexpr std::int64_t kChunk = 256;  // a multiple of 8: lane i mod 8 stays lane i mod 8
  T lanes[8] = {};
  for (std::int64_t c = 0; c < n; c += kChunk) {
    const std::int64_t len = std::min(kChunk, n - c);
    if (next != nullptr)
      for (std::int64_t i = 0; i < len; i += kLine / sizeof(T)) prefetch(next + c + i);
    for (std::int64_t i = 0; i < len; ++i) y[c + i] = x[c + i] - m;  // y may be x: in place
    if constexpr (std::is_same_v<T, float>)
      map_packets<ExpF32>(y + c, y + c, len);
    else
      for (std::int64_t i = 0; i < len; ++i) y[c + i] = std::exp(y[c + i]);
    std::int64_t i = 0;
    for (; i + 8 <= len; i += 8)
      for (int l = 0; l < 8; ++l) lanes[l] += y[c + i + l];
    for (int l = 0; i < len; ++i, ++l) lanes[l] += y[c + i];
  }
  return sum_lanes(lanes);
}

#ifdef FERRY_AVX2_DISPATCH
/// exp(bx[l] - m) for eight lanes, stored to by and returned; exp_avx2_block's bits.
__attribute__((target("avx2"))) inline __m256 exp_sum_avx2_block(const float* bx, __m256 vm,
                                                                 float* by) {
  const __m256 r = exp_avx2_lanes(_mm256_sub_ps(_mm256_loadu_ps(bx), vm));
  _mm256_storeu_ps(by, r);
  return r;
}
/// exp_sum, f32, eight lanes at a time: the sum in one register.
__attribute__((target("avx2"))) inline float exp_sum_avx2(const float* x, float m, float* y,
                                                          std::int64_t n, const float* next) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  std::int64_t i = 0;
  if (next != nullptr)
    for (; i + 16 <= n; i += 16) {  // a line of `next` per two blocks
      prefetch(next + i);
      acc = _mm256_add_ps(acc, exp_sum_avx2_block(x + i, vm, y + i));
      acc = _mm256_add_ps(acc, exp_sum_avx2_block(x + i + 8, vm, y + i + 8));
    }
  for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, exp_sum_avx2_block(x + i, vm, y + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  if (i < n) {  // the tail: a block padded with m (exp(0), not summed), as map_packets pads
    float bx[8], by[8];
    std::fill(bx, bx + 8, m);
    std::copy(x + i, x + n, bx);
    exp_sum_avx2_block(bx, vm, by);
    std::copy(by, by + (n - i), y + i);
    for (int l = 0; l < n - i; ++l) lanes[l] += by[l];
  }
  return sum_lanes(lanes);
}
#endif

/// y[i] = exp(x[i] - m) for i < n (math::exp's bits of the difference), and the sum of the y[i]
/// in sum_lanes' order. `y` may be `x`. One pass where softmax made three (subtract, exp, sum).
/// `next`, when given, is n elements the caller reads next (softmax: the next row): they are
/// prefetched while this row computes, so the caller's next pass over memory finds them in
/// cache instead of stalling on every line. A hint: `next` is never read.
template <class T>
T exp_sum(const T* x, T m, T* y, std::int64_t n, const T* next = nullptr) {
#ifdef FERRY_AVX2_DISPATCH
  if constexpr (std::is_same_v<T, float>)
    if (has_avx2()) return exp_sum_avx2(x, m, y, n, next);
#endif
  return exp_sum_generic(x, m, y, n, next);
}

#ifdef FERRY_AVX2_DISPATCH
__attribute__((target("avx2"))) inline void scale_avx2(float* y, float k, std::int64_t n) {
  const __m256 vk = _mm256_set1_ps(k);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vk));
  for (; i < n; ++i) y[i] *= k;
}

__attribute__((target("avx2"))) inline float max_avx2(const float* x, std::int64_t n) {
  __m256 a = _mm256_set1_ps(x[0]), b = a, c = a, d = a;
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = _mm256_max_ps(a, _mm256_loadu_ps(x + i));
    b = _mm256_max_ps(b, _mm256_loadu_ps(x + i + 8));
    c = _mm256_max_ps(c, _mm256_loadu_ps(x + i + 16));
    d = _mm256_max_ps(d, _mm256_loadu_ps(x + i + 24));
  }
  alignas(32) float l[8];
  _mm256_store_ps(l, _mm256_max_ps(_mm256_max_ps(a, b), _mm256_max_ps(c, d)));
  float m = l[0];
  for (int j = 1; j < 8; ++j) m = std::max(m, l[j]);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
#endif

/// The largest of x[0..n), n > 0, in any order: NaN may or may not win (softmax's result is NaN
/// for a row with a NaN either way).
template <class T>
T row_max(const T* x, std::int64_t n) {
#ifdef FERRY_AVX2_DISPATCH
  if constexpr (std::is_same_v<T, float>)
    if (has_avx2()) return max_avx2(x, n);
#endif
  return Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(x, n).maxCoeff();
}

/// y[i] *= k for i < n (each product IEEE's, so the same bits on every path).
template <class T>
void scale(T* y, T k, std::int64_t n) {
#ifdef FERRY_AVX2_DISPATCH
  if constexpr (std::is_same_v<T, float>)
    if (has_avx2()) return scale_avx2(y, k, n);
#endif
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(y, n) *= k;
}

}  // namespace ferry::detail::cpu::math

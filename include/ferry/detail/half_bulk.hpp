// Ferry: bulk f16 <-> f32 conversion for the kernels: the F16C instructions when the CPU has them
// (chosen at run time, so the library needs no -mf16c), else the bit code of ferry/half.hpp,
// which gives the same bits for every input (NaN payloads included; the tests check both).
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

#include "ferry/half.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FERRY_NO_F16C)
#  define FERRY_F16C_DISPATCH 1
#  include <cpuid.h>
#  include <immintrin.h>
#endif

namespace ferry::detail {

#ifdef FERRY_F16C_DISPATCH
__attribute__((target("avx,f16c"))) inline void f16_to_f32_f16c(const std::uint16_t* in, float* out,
                                                                std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = f16_bits_to_f32(in[i]);  // the same bits as vcvtph2ps
}
__attribute__((target("avx,f16c"))) inline void f32_to_f16_f16c(const float* in, std::uint16_t* out,
                                                                std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = f32_to_f16_bits(in[i]);  // the same bits as vcvtps2ph
}
/// True when this CPU has F16C and AVX and the OS saves the YMM registers (CPUID leaf 1: ECX
/// bits 29, 28, 27; XCR0 bits 1-2), read with cpuid/xgetbv, which GCC and Clang both accept (Clang
/// 14's __builtin_cpu_supports does not know "f16c"). FERRY_NO_F16C, a compile-time switch, turns
/// the dispatch off; the results are the same bits either way.
inline bool has_f16c() noexcept {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    constexpr unsigned kOsxsave = 1u << 27, kAvx = 1u << 28, kF16c = 1u << 29;
    if ((c & (kOsxsave | kAvx | kF16c)) != (kOsxsave | kAvx | kF16c)) return false;
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;
  }();
  return yes;
}
#endif

/// n f16 -> f32 (exact).
inline void widen_n(const f16* in, float* out, std::int64_t n) noexcept {
#ifdef FERRY_F16C_DISPATCH
  if (has_f16c()) return f16_to_f32_f16c(reinterpret_cast<const std::uint16_t*>(in), out, n);
#endif
  for (std::int64_t i = 0; i < n; ++i) out[i] = f16_bits_to_f32(in[i].bits);
}
/// n f32 -> f16, each rounded to nearest even.
inline void narrow_n(const float* in, f16* out, std::int64_t n) noexcept {
#ifdef FERRY_F16C_DISPATCH
  if (has_f16c()) return f32_to_f16_f16c(in, reinterpret_cast<std::uint16_t*>(out), n);
#endif
  for (std::int64_t i = 0; i < n; ++i) out[i] = f16::from_bits(f32_to_f16_bits(in[i]));
}
/// bf16 has no conversion instruction before AVX512-BF16; its bit code vectorises as it is.
inline void widen_n(const bf16* in, float* out, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_bits_to_f32(in[i].bits);
}
inline void narrow_n(const float* in, bf16* out, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) out[i] = bf16::from_bits(f32_to_bf16_bits(in[i]));
}

}  // namespace ferry::detail

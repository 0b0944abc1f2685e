// Ferry: EigenCpu's float maths (exp, log, sqrt, sin, cos, tanh, sigmoid, gelu) on contiguous
// runs, within 2 ulp of the correctly rounded result over the whole f32/f64 range (see
// docs/math.md for the bounds, the special values and the sweep that checks them).
// SPDX-License-Identifier: MIT
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// An AVX2 copy of exp's f32 packet path, chosen at run time, for builds whose baseline has no
// AVX2 (x86-64's is SSE2). FERRY_NO_AVX2 turns it off; the results are the same bits either way.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__AVX2__) && \
    !defined(FERRY_NO_AVX2)
#  define FERRY_AVX2_DISPATCH 1
#  include <cpuid.h>
#  include <immintrin.h>
#endif

namespace ferry::detail::cpu::math {

// Eigen 3.4's packet maths is fast and accurate in the middle of the range but not at its
// edges (measured with the project's flags, x86-64 SSE2): pexp<float> clamps x to +-88.72,
// plog<float> clamps subnormal inputs to FLT_MIN, psqrt<float> is an rsqrt approximation under
// EIGEN_FAST_MATH (the default), and ptanh/logistic<float> are 6 and ~9500 ulp off in places.
// So each function here takes the packet path where a sweep found it accurate, tests every
// packet for lanes outside that range with one vector compare, and recomputes only those lanes
// in scalar code (in double for f32). Nothing here depends on EIGEN_FAST_MATH: the packet
// functions called are the ones that are accurate under either setting, so a user's own choice
// of that macro does not change Ferry's results, and Ferry never defines it.
namespace ei = Eigen::internal;

template <class T>
using Packet = typename ei::packet_traits<T>::type;
template <class T>
inline constexpr int kWidth = ei::unpacket_traits<Packet<T>>::size;

// ---- sqrt: the hardware instruction, which IEEE 754 makes correctly rounded ---------------
// Not ei::psqrt: for float under EIGEN_FAST_MATH it is _mm_rsqrt_ps plus one Newton step (up to
// 3 ulp, sqrt(inf) = NaN, subnormals to 0), and which one a TU gets depends on a macro the user
// controls. These overloads are the exact instructions whatever the macro says.
#if defined(EIGEN_VECTORIZE_SSE)
inline ei::Packet4f exact_psqrt(const ei::Packet4f& v) { return _mm_sqrt_ps(v); }
inline ei::Packet2d exact_psqrt(const ei::Packet2d& v) { return _mm_sqrt_pd(v); }
#endif
#if defined(EIGEN_VECTORIZE_AVX)
inline ei::Packet8f exact_psqrt(const ei::Packet8f& v) { return _mm256_sqrt_ps(v); }
inline ei::Packet4d exact_psqrt(const ei::Packet4d& v) { return _mm256_sqrt_pd(v); }
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
inline ei::Packet16f exact_psqrt(const ei::Packet16f& v) { return _mm512_sqrt_ps(v); }
inline ei::Packet8d exact_psqrt(const ei::Packet8d& v) { return _mm512_sqrt_pd(v); }
#endif

/// Whether the overloads above cover Eigen's packet types here (every x86 build: AVX and AVX-512
/// imply SSE); elsewhere sqrt is a scalar loop of std::sqrt, exact too.
#if defined(EIGEN_VECTORIZE_SSE)
inline constexpr bool kExactPsqrt = true;
#else
inline constexpr bool kExactPsqrt = false;
#endif

// ---- the two drivers ------------------------------------------------------------------------

/// y = K(x) over n elements, one packet at a time. K::packet is the fast path, valid for
/// K::lo <= x <= K::hi; a packet with any lane outside (NaN included) has those lanes redone by
/// K::scalar. The tail is run as a zero-padded packet, so an element's result depends only on
/// its value, never on where a parallel chunk happened to end.
template <class K, class T>
void map_packets(const T* x, T* y, std::int64_t n) {
  using P = Packet<T>;
  constexpr int W = kWidth<T>;
  if constexpr (W == 1) {  // Eigen without vectorisation: nothing to fix up
    for (std::int64_t i = 0; i < n; ++i) y[i] = K::scalar(x[i]);
  } else {
    // bx and by may be the same memory (a kernel reuses a buffer it holds alone), so the
    // lanes to redo are taken from the loaded packet, not read back from bx.
    auto block = [](const T* bx, T* by) {
      const P v = ei::ploadu<P>(bx);
      const P r = K::packet(v);
      const P ok =
          ei::pand(ei::pcmp_le(ei::pset1<P>(K::lo), v), ei::pcmp_le(v, ei::pset1<P>(K::hi)));
      if (EIGEN_PREDICT_TRUE(!ei::predux_any(ei::pandnot(ei::ptrue(v), ok)))) {
        ei::pstoreu(by, r);
        return;
      }
      T in[W];
      ei::pstoreu(in, v);
      ei::pstoreu(by, r);
      for (int l = 0; l < W; ++l)
        if (!(in[l] >= K::lo && in[l] <= K::hi)) by[l] = K::scalar(in[l]);
    };
    std::int64_t i = 0;
    for (; i + W <= n; i += W) block(x + i, y + i);
    if (i < n) {
      T bx[W] = {}, by[W];
      std::copy(x + i, x + n, bx);
      block(bx, by);
      std::copy(by, by + (n - i), y + i);
    }
  }
}

/// y = K(x) for f32 data computed in f64 packets: K::packet maps a double packet, and the
/// result is rounded to f32 once. For functions whose f32 packet code is not accurate enough
/// (tanh, sigmoid): double's 29 spare bits absorb the formula's cancellation and rounding, so
/// the f32 result is within a hair of correctly rounded. Half the width of an f32 packet, still
/// several times a scalar loop.
template <class K>
void map_widened(const float* x, float* y, std::int64_t n) {
  using P = Packet<double>;
  constexpr int W = kWidth<double>;
  constexpr std::int64_t B = 16;
  static_assert(B % W == 0);
  for (std::int64_t i = 0; i < n; i += B) {
    const std::int64_t m = std::min(B, n - i);
    double d[B] = {};
    for (std::int64_t k = 0; k < m; ++k) d[k] = static_cast<double>(x[i + k]);
    for (std::int64_t j = 0; j < B; j += W) ei::pstoreu(d + j, K::packet(ei::ploadu<P>(d + j)));
    for (std::int64_t k = 0; k < m; ++k) y[i + k] = static_cast<float>(d[k]);
  }
}

/// `v` where v is NaN, else `r`: the packet formulas below do not all carry NaN through.
template <class P>
P keep_nan(const P& v, const P& r) {
  return ei::pselect(ei::pcmp_eq(v, v), r, v);
}

// ---- the kernels ------------------------------------------------------------------------------

/// exp, f32: Cody and Waite's reduction x = k ln2 + r (|r| <= ln2/2 or a hair more), cephes'
/// degree-5 polynomial for e^r (the one Eigen's pexp uses: <= 1 ulp), and 2^k made in the
/// exponent bits. k is rounded with the 1.5 * 2^23 shifter rather than Eigen's pfloor, which
/// SSE2 (the x86-64 baseline) has no instruction for: its emulation made pexp barely faster
/// than glibc's scalar expf there, this is 3-5 times faster (bench row `exp f32, 16 Mi`).
/// Valid for -87.33 <= x <= 88.3, where k is in [-126, 127] and 2^k a normal float; subnormal
/// and zero results, overflow, inf and NaN lanes are scalar, in double.
struct ExpF32 {
  static constexpr float lo = -87.33f, hi = 88.3f;
  template <class P>
  static P packet(const P& x) {
    using PI = typename ei::unpacket_traits<P>::integer_packet;
    const P shifter = ei::pset1<P>(12582912.0f);  // 1.5 * 2^23: t - shifter is an integer
    const P t = ei::pmadd(x, ei::pset1<P>(1.44269504088896341f), shifter);
    const P k = ei::psub(t, shifter);  // round(x / ln2), exactly
    // r = x - k ln2 in two steps: k * 0.693359375 (9 bits) is exact, and so is x minus it.
    P r = ei::pmadd(k, ei::pset1<P>(-0.693359375f), x);
    r = ei::pmadd(k, ei::pset1<P>(2.12194440e-4f), r);
    P y = ei::pset1<P>(1.9875691500e-4f);
    y = ei::pmadd(y, r, ei::pset1<P>(1.3981999507e-3f));
    y = ei::pmadd(y, r, ei::pset1<P>(8.3334519073e-3f));
    y = ei::pmadd(y, r, ei::pset1<P>(4.1665795894e-2f));
    y = ei::pmadd(y, r, ei::pset1<P>(1.6666665459e-1f));
    y = ei::pmadd(y, r, ei::pset1<P>(5.0000001201e-1f));
    y = ei::padd(ei::pmadd(y, ei::pmul(r, r), r), ei::pset1<P>(1.0f));
    // 2^k: k sits in t's low mantissa bits, so (bits(t) - bits(shifter) + 127) << 23.
    const PI ki = ei::psub(ei::preinterpret<PI>(t), ei::preinterpret<PI>(shifter));
    const PI e = ei::plogical_shift_left<23>(ei::padd(ki, ei::pset1<PI>(127)));
    return ei::pmul(y, ei::preinterpret<P>(e));
  }
  static float scalar(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }
};

/// log, f32: Eigen's plog (<= 1 ulp on normal inputs); subnormal inputs (which plog clamps to
/// FLT_MIN), zero, negatives, inf and NaN are scalar.
struct LogF32 {
  static constexpr float lo = std::numeric_limits<float>::min();
  static constexpr float hi = std::numeric_limits<float>::max();
  template <class P>
  static P packet(const P& v) {
    return ei::plog(v);
  }
  static float scalar(float x) { return static_cast<float>(std::log(static_cast<double>(x))); }
};

/// log, f64: Eigen's plog_double (<= 1 ulp measured on normal inputs), fixed up as for f32.
struct LogF64 {
  static constexpr double lo = std::numeric_limits<double>::min();
  static constexpr double hi = std::numeric_limits<double>::max();
  template <class P>
  static P packet(const P& v) {
    return ei::plog(v);
  }
  static double scalar(double x) { return std::log(x); }
};

/// sin and cos, f32: Eigen's psincos_float (called directly: Eigen only routes Array::sin to it
/// under EIGEN_FAST_MATH), <= 2 ulp over every f32 input in the sweep, inf -> NaN; it already
/// reduces huge arguments exactly, lane by lane, so there is nothing to fix up.
struct SinF32 {
  static constexpr float lo = -std::numeric_limits<float>::infinity(),
                         hi = std::numeric_limits<float>::infinity();
  template <class P>
  static P packet(const P& v) {
    return ei::psin(v);
  }
  static float scalar(float x) { return static_cast<float>(std::sin(static_cast<double>(x))); }
};
struct CosF32 {
  static constexpr float lo = -std::numeric_limits<float>::infinity(),
                         hi = std::numeric_limits<float>::infinity();
  template <class P>
  static P packet(const P& v) {
    return ei::pcos(v);
  }
  static float scalar(float x) { return static_cast<float>(std::cos(static_cast<double>(x))); }
};

/// tanh for f32 in f64 packets: sign(x) (1 - 2 / (exp(2|x|) + 1)). The subtraction cancels for
/// small |x|, losing up to 2^-52 absolutely, which is 2^-30 relative at |x| = 2^-22; below that
/// tanh(x) rounds to x itself (x^3/3 is under 2^-44 of x), which also keeps -0.
struct TanhWide {
  template <class P>
  static P packet(const P& v) {
    const P one = ei::pset1<P>(1.0), a = ei::pabs(v);
    const P e = ei::pexp(ei::padd(a, a));  // exp(2|x|); pexp_double saturates, 2/(big) -> 0
    P r = ei::psub(one, ei::pdiv(ei::pset1<P>(2.0), ei::padd(e, one)));
    r = ei::pselect(ei::pcmp_lt(v, ei::pzero(v)), ei::pnegate(r), r);
    r = ei::pselect(ei::pcmp_lt(a, ei::pset1<P>(0x1p-22)), v, r);
    return keep_nan(v, r);
  }
};

/// sigmoid (torch.sigmoid) for f32 in f64 packets: 1 / (1 + exp(-x)). Every f32 input's result
/// is far from double's limits (exp(-x) stays finite or saturates to a value whose reciprocal
/// is below f32's smallest subnormal), so the one formula serves the whole range.
struct SigmoidWide {
  template <class P>
  static P packet(const P& v) {
    const P one = ei::pset1<P>(1.0);
    return keep_nan(v, ei::pdiv(one, ei::padd(one, ei::pexp(ei::pnegate(v)))));
  }
};

/// sigmoid, f64, scalar: for x < 0, e / (1 + e) with e = exp(x), so that the result keeps its
/// relative accuracy down to subnormals (1 / (1 + exp(-x)) gives 0 once exp(-x) overflows,
/// while sigmoid(-720) is 1.9e-313); for x >= 0, 1 / (1 + exp(-x)).
inline double sigmoid_f64(double x) {
  if (x < 0) {
    const double e = std::exp(x);
    return e / (1.0 + e);
  }
  return 1.0 / (1.0 + std::exp(-x));
}

/// gelu, exact form (torch's default approximate='none'): x/2 (1 + erf(x/sqrt2)), computed as
/// x/2 erfc(-x/sqrt2), which keeps its relative accuracy where 1 + erf cancels (x << 0). erfc
/// there amplifies the rounding of its argument u = -x/sqrt2 by about 2u^2 (up to ~1500 for
/// f64), so u is formed with 11 extra bits: in double for f32, in long double for f64 (x86-64's
/// 64-bit mantissa; where long double is double, f64 gelu is only good to ~1500 ulp at the
/// far negative end). gelu(-inf) is -0, the limit (torch's erf form gives NaN there).
inline float gelu_f32(float x) {
  if (x == -std::numeric_limits<float>::infinity()) return -0.0f;
  const double d = x;
  return static_cast<float>(0.5 * d * std::erfc(-d * 0.70710678118654752440));
}
inline double gelu_f64(double x) {
  if (x == -std::numeric_limits<double>::infinity()) return -0.0;
  const long double d = x;
  return static_cast<double>(0.5L * d * std::erfc(-d * 0.707106781186547524400844362104849039L));
}

// ---- the entry points: y[i] = f(x[i]) for i < n -------------------------------------------

#ifdef FERRY_AVX2_DISPATCH
/// True when this CPU has AVX2 and the OS saves the YMM registers (CPUID leaf 1: ECX bits 27-28;
/// XCR0 bits 1-2; leaf 7: EBX bit 5), as detail::has_f16c reads them.
inline bool has_avx2() noexcept {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    constexpr unsigned kOsxsave = 1u << 27, kAvx = 1u << 28;
    if ((c & (kOsxsave | kAvx)) != (kOsxsave | kAvx)) return false;
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6u) != 6u) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & (1u << 5)) != 0;
  }();
  return yes;
}

/// ExpF32 eight lanes at a time: the same operations in the same order (a multiply then an add
/// where ExpF32 has pmadd, which is what pmadd is without FMA; "fma" is not among the targets, so
/// the compiler cannot contract them), so every lane gets ExpF32's bits; lanes outside
/// [lo, hi] are redone by ExpF32::scalar, as map_packets does.
__attribute__((target("avx2"))) inline __m256 madd_avx2(__m256 a, __m256 b, __m256 d) {
  return _mm256_add_ps(_mm256_mul_ps(a, b), d);
}
/// ExpF32::packet's fast path on eight lanes, valid where ExpF32 says (no fixups).
__attribute__((target("avx2"))) inline __m256 exp_avx2_fast(__m256 v) {
  const __m256 shifter = _mm256_set1_ps(12582912.0f);
  const __m256 t = madd_avx2(v, _mm256_set1_ps(1.44269504088896341f), shifter);
  const __m256 k = _mm256_sub_ps(t, shifter);
  __m256 r = madd_avx2(k, _mm256_set1_ps(-0.693359375f), v);
  r = madd_avx2(k, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = madd_avx2(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = madd_avx2(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = madd_avx2(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = madd_avx2(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = madd_avx2(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(madd_avx2(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i ki = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(shifter));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(ki, _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
/// Whether every lane of `v` is in ExpF32's fast range (NaN is not).
__attribute__((target("avx2"))) inline bool exp_avx2_in_range(__m256 v) {
  const __m256 ok = _mm256_and_ps(_mm256_cmp_ps(_mm256_set1_ps(ExpF32::lo), v, _CMP_LE_OQ),
                                  _mm256_cmp_ps(v, _mm256_set1_ps(ExpF32::hi), _CMP_LE_OQ));
  return _mm256_movemask_ps(ok) == 0xFF;
}
/// ExpF32 on eight lanes: the fast path, with the lanes outside [lo, hi] (NaN too) redone by
/// ExpF32::scalar.
__attribute__((target("avx2"))) inline __m256 exp_avx2_lanes(__m256 v) {
  const __m256 r = exp_avx2_fast(v);
  if (__builtin_expect(exp_avx2_in_range(v), 1)) return r;
  alignas(32) float in[8], out[8];
  _mm256_store_ps(in, v);
  _mm256_store_ps(out, r);
  for (int l = 0; l < 8; ++l)
    if (!(in[l] >= ExpF32::lo && in[l] <= ExpF32::hi)) out[l] = ExpF32::scalar(in[l]);
  return _mm256_load_ps(out);
}
__attribute__((target("avx2"))) inline void exp_avx2_block(const float* bx, float* by) {
  _mm256_storeu_ps(by, exp_avx2_lanes(_mm256_loadu_ps(bx)));  // bx may be by: read, then write
}
/// ExpF32 eight lanes at a time: the same operations in the same order (a multiply then an add
/// where ExpF32 has pmadd, which is what pmadd is without FMA; "fma" is not among the targets, so
/// the compiler cannot contract them), so every lane gets ExpF32's bits; lanes outside
/// [lo, hi] are redone by ExpF32::scalar, and the tail is a zero-padded block, as map_packets
/// does.
__attribute__((target("avx2"))) inline void exp_avx2(const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) exp_avx2_block(x + i, y + i);
  if (i < n) {
    float bx[8] = {}, by[8];
    std::copy(x + i, x + n, bx);
    exp_avx2_block(bx, by);
    std::copy(by, by + (n - i), y + i);
  }
}
#endif

template <class T>
void exp(const T* x, T* y, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
#ifdef FERRY_AVX2_DISPATCH
    if (has_avx2()) return exp_avx2(x, y, n);
#endif
    map_packets<ExpF32>(x, y, n);
  } else {
    // Eigen's pexp_double is 2 ulp at its worst (measured), with no margin left; glibc's exp is
    // under 1 ulp.
    for (std::int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
  }
}

template <class T>
void log(const T* x, T* y, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>)
    map_packets<LogF32>(x, y, n);
  else
    map_packets<LogF64>(x, y, n);
}

template <class T>
void sqrt(const T* x, T* y, std::int64_t n) {
  using P = Packet<T>;
  constexpr int W = kWidth<T>;
  std::int64_t i = 0;
  if constexpr (kExactPsqrt)
    for (; i + W <= n; i += W) ei::pstoreu(y + i, exact_psqrt(ei::ploadu<P>(x + i)));
  for (; i < n; ++i) y[i] = std::sqrt(x[i]);  // the same instruction, one lane
}

template <class T>
void sin(const T* x, T* y, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_packets<SinF32>(x, y, n);
  } else {  // Eigen 3.4 has no double sin packet
    for (std::int64_t i = 0; i < n; ++i) y[i] = std::sin(x[i]);
  }
}

template <class T>
void cos(const T* x, T* y, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_packets<CosF32>(x, y, n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) y[i] = std::cos(x[i]);
  }
}

template <class T>
void tanh(const T* x, T* y, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_widened<TanhWide>(x, y, n);
  } else {  // Eigen 3.4 has no double tanh packet
    for (std::int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
  }
}

template <class T>
void sigmoid(const T* x, T* y, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    map_widened<SigmoidWide>(x, y, n);
  } else {
    for (std::int64_t i = 0; i < n; ++i) y[i] = sigmoid_f64(x[i]);
  }
}

template <class T>
void gelu(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, float>)
      y[i] = gelu_f32(x[i]);
    else
      y[i] = gelu_f64(x[i]);
  }
}

}  // namespace ferry::detail::cpu::math

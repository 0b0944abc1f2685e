// Ferry: the float value types of quantized tensors (OCP 8-bit floating point and OCP MX's
// FP4): their codes' values and the rounding that makes a code from a float.
// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ferry/quant/scheme.hpp"

namespace ferry::quant {

/// @brief The layout of one float value type: sign, `E` exponent bits (bias `bias`), `M`
/// mantissa bits, as the OCP specifications define them.
///
/// - e4m3 (OCP FP8 E4M3): bias 7, no infinity, NaN is S.1111.111, largest 448, smallest
///   subnormal 2^-9.
/// - e5m2 (OCP FP8 E5M2): bias 15, IEEE-like: S.11111.00 is infinity, S.11111.xx (xx != 0)
///   NaN, largest 57344, smallest subnormal 2^-16.
/// - e2m1 (OCP MX FP4): bias 1, neither infinity nor NaN; the values are 0, 0.5, 1, 1.5, 2, 3,
///   4, 6 and their negatives.
struct MinifloatFormat {
  int E, M, bias;
  bool has_inf;            // e5m2
  bool has_nan;            // e4m3 (all-ones code), e5m2 (exponent all ones, mantissa != 0)
  std::uint32_t max_code;  // the code of the largest finite value (positive)
  std::uint32_t nan_code;  // the code quantize writes for NaN (0 where there is no NaN)
  // Derived constants of encode (powers of two, so every product with them is exact).
  float max = 0;         // the largest finite value
  float min_normal = 0;  // 2^(1 - bias)
  float sub_steps = 0;   // 2^(M - (1 - bias)): subnormal steps per unit
  float m_steps = 0;     // 2^M

  constexpr MinifloatFormat(int e, int m, int b, bool with_inf, bool with_nan, std::uint32_t maxc,
                            std::uint32_t nanc) noexcept
      : E(e), M(m), bias(b), has_inf(with_inf), has_nan(with_nan), max_code(maxc), nan_code(nanc) {
    min_normal = pow2(1 - b);
    sub_steps = pow2(m - (1 - b));
    m_steps = pow2(m);
    const int ef = static_cast<int>(maxc >> m);
    max = pow2(ef - b - m) * static_cast<float>((maxc & ((1u << m) - 1u)) + (1u << m));
  }

 private:
  static constexpr float pow2(int k) noexcept {
    float r = 1.0f;
    for (; k > 0; --k) r *= 2.0f;
    for (; k < 0; ++k) r *= 0.5f;
    return r;
  }
};

/// The format of float value type `v` (QuantError for an integer type).
inline MinifloatFormat minifloat_format(ValueType v) {
  switch (v) {
    case ValueType::e4m3:
      return {4, 3, 7, false, true, 0x7E, 0x7F};
    case ValueType::e5m2:
      return {5, 2, 15, true, true, 0x7B, 0x7F};
    case ValueType::e2m1:
      return {2, 1, 1, false, false, 0x7, 0x0};
    default:
      break;
  }
  ferry::detail::raise<QuantError>("quant.scheme", "{} is not a float value type", v);
}

/// The value of `code` (the low 1 + E + M bits) in format `f`: NaN for NaN codes, +-inf for
/// e5m2's infinities, subnormals where the exponent field is 0.
inline float minifloat_decode(const MinifloatFormat& f, std::uint32_t code) noexcept {
  const int width = 1 + f.E + f.M;
  const bool neg = ((code >> (width - 1)) & 1u) != 0;
  const std::uint32_t e = (code >> f.M) & ((1u << f.E) - 1u);
  const std::uint32_t m = code & ((1u << f.M) - 1u);
  const std::uint32_t emax = (1u << f.E) - 1u;
  float mag;
  if (f.has_inf && e == emax) {  // e5m2: IEEE specials
    mag = m == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (f.has_nan && !f.has_inf && e == emax && m == (1u << f.M) - 1u) {  // e4m3's NaN
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    mag = std::ldexp(static_cast<float>(m), 1 - f.bias - f.M);
  } else {
    mag = std::ldexp(static_cast<float>(m + (1u << f.M)), static_cast<int>(e) - f.bias - f.M);
  }
  return neg ? -mag : mag;
}

/// Round half to even of 0 <= v <= 2^22 with the FPU's default rounding (no libm call on
/// baseline x86-64, which has no roundss).
inline float minifloat_rne(float v) noexcept {
#ifdef __FAST_MATH__
  return std::nearbyint(v);
#else
  constexpr float magic = 12582912.0f;  // 1.5 * 2^23
  return (v + magic) - magic;
#endif
}

/// The code of `x` in format `f`: rounded to nearest, ties to even (exactly: every step below
/// is exact in f32), and saturating: finite values past the largest and +-infinity become the
/// largest finite value of their sign (OCP's saturating conversion; also for e5m2, which has
/// infinities). NaN becomes `f.nan_code` (e2m1, which has no NaN: 0).
inline std::uint32_t minifloat_encode(const MinifloatFormat& f, float x) noexcept {
  const std::uint32_t sign = std::signbit(x) ? 1u << (f.E + f.M) : 0u;
  if (std::isnan(x)) return f.nan_code;
  const float a = std::fabs(x);
  if (!(a < f.max)) return sign | f.max_code;  // saturate (inf included)
  std::uint32_t code;
  if (a < f.min_normal) {
    // Subnormal range: a count of 2^(emin - M) steps; a count of 2^M is the smallest normal,
    // whose code is exactly 2^M (exponent field 1, mantissa 0).
    code = static_cast<std::uint32_t>(minifloat_rne(a * f.sub_steps));
  } else {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(a);
    const int e = static_cast<int>((bits >> 23) & 0xFFu) - 127;  // a is a normal f32 here
    const float t = std::bit_cast<float>((bits & 0x7FFFFFu) | 0x3F800000u);  // in [1, 2)
    const auto m = static_cast<std::uint32_t>(minifloat_rne((t - 1.0f) * f.m_steps));
    code = (static_cast<std::uint32_t>(e + f.bias) << f.M) + m;  // m == 2^M carries into e
  }
  if (code > f.max_code) code = f.max_code;  // rounded up past the largest finite value
  return sign | code;
}

/// The values of every code of float type `v`, built once: index = code (256 or 16 entries).
inline const float* minifloat_table(ValueType v) {
  static const auto tables = [] {
    std::array<std::array<float, 256>, 3> t{};
    const ValueType types[] = {ValueType::e4m3, ValueType::e5m2, ValueType::e2m1};
    for (int i = 0; i < 3; ++i) {
      const MinifloatFormat f = minifloat_format(types[i]);
      const std::uint32_t codes = 1u << (1 + f.E + f.M);
      for (std::uint32_t c = 0; c < codes; ++c)
        t[static_cast<std::size_t>(i)][c] = minifloat_decode(f, c);
    }
    return t;
  }();
  switch (v) {
    case ValueType::e4m3:
      return tables[0].data();
    case ValueType::e5m2:
      return tables[1].data();
    case ValueType::e2m1:
      return tables[2].data();
    default:
      break;
  }
  ferry::detail::raise<QuantError>("quant.scheme", "{} is not a float value type", v);
}

}  // namespace ferry::quant

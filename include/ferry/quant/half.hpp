// Ferry: f16 and bf16 <-> f32 conversion (round to nearest even) and little-endian scale I/O.
// SPDX-License-Identifier: MIT
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ferry/error.hpp"
#include "ferry/quant/scheme.hpp"

namespace ferry::quant {

/// f32 -> IEEE binary16 bits, round to nearest even; overflow gives inf (65520 -> 0x7c00),
/// subnormals are rounded correctly, NaN stays a (quiet) NaN with its sign.
///
/// Bit code rather than Eigen::half so that this header stays light and its behaviour does not
/// depend on the target's F16C support; the tests check it against Eigen::half.
inline std::uint16_t f32_to_f16(float value) noexcept {
  std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = f & 0x80000000u;
  f ^= sign;
  std::uint32_t o;
  if (f >= 0x47800000u) {                     // >= 65536, inf or NaN: all overflow to inf
    o = f > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN -> quiet NaN
  } else if (f < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // Adding 0.5 aligns the value so that the FPU's own round-to-nearest-even rounds it at the
    // half-subnormal ulp (2^-24); the low bits are then the half's bits.
    const float aligned = std::bit_cast<float>(f) + 0.5f;
    o = std::bit_cast<std::uint32_t>(aligned) - 0x3f000000u;
  } else {
    const std::uint32_t mant_odd = (f >> 13) & 1u;
    f += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu;  // rebias; round half up...
    f += mant_odd;                                               // ...or to even on a tie
    o = f >> 13;
  }
  return static_cast<std::uint16_t>(o | (sign >> 16));
}

/// IEEE binary16 bits -> f32 (exact).
inline float f16_to_f32(std::uint16_t h) noexcept {
  std::uint32_t o = static_cast<std::uint32_t>(h & 0x7fffu) << 13;
  const std::uint32_t exp = o & 0x0f800000u;
  o += static_cast<std::uint32_t>(127 - 15) << 23;
  if (exp == 0x0f800000u) {
    o += static_cast<std::uint32_t>(128 - 16) << 23;  // inf / NaN: exponent all ones
  } else if (exp == 0) {
    // Subnormal half: build 1.m * 2^-14 and subtract the implicit 2^-14 in float arithmetic.
    o += 1u << 23;
    o = std::bit_cast<std::uint32_t>(std::bit_cast<float>(o) - std::bit_cast<float>(113u << 23));
  }
  o |= static_cast<std::uint32_t>(h & 0x8000u) << 16;
  return std::bit_cast<float>(o);
}

/// f32 -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
inline std::uint16_t f32_to_bf16(float value) noexcept {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x0040u);
  const std::uint32_t rounded = f + 0x7fffu + ((f >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

/// bfloat16 bits -> f32 (exact).
inline float bf16_to_f32(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

/// The value `v` takes once stored as `t` (what quantization arithmetic uses).
inline float round_to(ScaleType t, float v) noexcept {
  switch (t) {
    case ScaleType::f16:
      return f16_to_f32(f32_to_f16(v));
    case ScaleType::bf16:
      return bf16_to_f32(f32_to_bf16(v));
    case ScaleType::f32:
      break;
  }
  return v;
}

/// Reads one scale of type `t` from `p` (little-endian, any alignment).
inline float load_scale(ScaleType t, const std::byte* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  switch (t) {
    case ScaleType::f32: {
      const std::uint32_t u =
          static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 |
          static_cast<std::uint32_t>(b[2]) << 16 | static_cast<std::uint32_t>(b[3]) << 24;
      return std::bit_cast<float>(u);
    }
    case ScaleType::f16:
      return f16_to_f32(static_cast<std::uint16_t>(b[0] | (b[1] << 8)));
    case ScaleType::bf16:
      return bf16_to_f32(static_cast<std::uint16_t>(b[0] | (b[1] << 8)));
  }
  ferry::detail::raise<QuantError>("quant.scheme", "unknown scale type {}", static_cast<int>(t));
}

/// Writes `v` as a scale of type `t` (rounded to nearest even) to `p`, little-endian.
inline void store_scale(ScaleType t, float v, std::byte* p) {
  auto* b = reinterpret_cast<unsigned char*>(p);
  std::uint32_t u;
  std::size_t n;
  switch (t) {
    case ScaleType::f32:
      u = std::bit_cast<std::uint32_t>(v), n = 4;
      break;
    case ScaleType::f16:
      u = f32_to_f16(v), n = 2;
      break;
    case ScaleType::bf16:
      u = f32_to_bf16(v), n = 2;
      break;
    default:
      ferry::detail::raise<QuantError>("quant.scheme", "unknown scale type {}",
                                       static_cast<int>(t));
  }
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(u >> (8 * i));
}

}  // namespace ferry::quant

// Ferry: quantization scales in f32, f16 and bf16: rounding and little-endian I/O.
// SPDX-License-Identifier: MIT
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ferry/error.hpp"
#include "ferry/half.hpp"
#include "ferry/quant/minifloat.hpp"
#include "ferry/quant/scheme.hpp"

namespace ferry::quant {

/// The conversions of ferry/half.hpp under the names quantization code has always used.
inline std::uint16_t f32_to_f16(float v) noexcept { return ferry::detail::f32_to_f16_bits(v); }
inline float f16_to_f32(std::uint16_t h) noexcept { return ferry::detail::f16_bits_to_f32(h); }
inline std::uint16_t f32_to_bf16(float v) noexcept { return ferry::detail::f32_to_bf16_bits(v); }
inline float bf16_to_f32(std::uint16_t b) noexcept { return ferry::detail::bf16_bits_to_f32(b); }

/// ue8m0: the power of two at or above `v` (> 0): calibration maps a group's max|x| to at most
/// the value type's largest, never past it; inf past 2^127, 2^-127 at or below it, NaN for NaN.
inline float round_to_ue8m0(float v) noexcept {
  if (!(v > 0x1p-127f)) return v != v ? v : 0x1p-127f;
  if (v > 0x1p127f) return std::numeric_limits<float>::infinity();
  if (v <= 0x1p-126f) return 0x1p-126f;  // (2^-127, 2^-126]: f32 subnormals
  const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  const std::uint32_t e = (b >> 23) + ((b & 0x7FFFFFu) != 0 ? 1u : 0u);
  return std::bit_cast<float>(e << 23);
}
/// ue4m3: `v` rounded to nearest even as an E4M3 value; inf from 464 (halfway past 448) up,
/// so a scale too large is an error rather than silently smaller.
inline float round_to_ue4m3(float v) noexcept {
  if (v >= 464.0f) return std::numeric_limits<float>::infinity();
  static const MinifloatFormat f = minifloat_format(ValueType::e4m3);
  return minifloat_decode(f, minifloat_encode(f, v));
}

/// The value `v` takes once stored as `t` (what quantization arithmetic uses).
inline float round_to(ScaleType t, float v) noexcept {
  switch (t) {
    case ScaleType::f16:
      return f16_to_f32(f32_to_f16(v));
    case ScaleType::bf16:
      return bf16_to_f32(f32_to_bf16(v));
    case ScaleType::ue8m0:
      return round_to_ue8m0(v);
    case ScaleType::ue4m3:
      return round_to_ue4m3(v);
    case ScaleType::f32:
      break;
  }
  return v;
}

/// The value of a stored ue8m0 byte: 2^(b - 127), NaN for 255.
inline float ue8m0_value(unsigned b) noexcept {
  if (b == 255) return std::numeric_limits<float>::quiet_NaN();
  return b == 0 ? 0x1p-127f : std::bit_cast<float>(static_cast<std::uint32_t>(b) << 23);
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
    case ScaleType::ue8m0:
      return ue8m0_value(b[0]);
    case ScaleType::ue4m3:
      return minifloat_table(ValueType::e4m3)[b[0]];
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
    case ScaleType::ue8m0: {  // the exponent byte of round_to_ue8m0(v); NaN and inf as 255
      const float r = round_to_ue8m0(v);
      const std::uint32_t rb = std::bit_cast<std::uint32_t>(r);
      u = !(r == r) || r > 0x1p127f ? 255u : r == 0x1p-127f ? 0u : rb >> 23, n = 1;
      break;
    }
    case ScaleType::ue4m3:
      u = minifloat_encode(minifloat_format(ValueType::e4m3), v), n = 1;
      break;
    default:
      ferry::detail::raise<QuantError>("quant.scheme", "unknown scale type {}",
                                       static_cast<int>(t));
  }
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(u >> (8 * i));
}

}  // namespace ferry::quant

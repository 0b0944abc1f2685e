// Ferry: quantization scales in f32, f16 and bf16: rounding and little-endian I/O.
// SPDX-License-Identifier: MIT
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ferry/error.hpp"
#include "ferry/half.hpp"
#include "ferry/quant/scheme.hpp"

namespace ferry::quant {

/// The conversions of ferry/half.hpp under the names quantization code has always used.
inline std::uint16_t f32_to_f16(float v) noexcept { return ferry::detail::f32_to_f16_bits(v); }
inline float f16_to_f32(std::uint16_t h) noexcept { return ferry::detail::f16_bits_to_f32(h); }
inline std::uint16_t f32_to_bf16(float v) noexcept { return ferry::detail::f32_to_bf16_bits(v); }
inline float bf16_to_f32(std::uint16_t b) noexcept { return ferry::detail::bf16_bits_to_f32(b); }

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

// Ferry: the 16-bit float element types f16 (IEEE binary16) and bf16 (bfloat16), and their
// conversions to and from f32/f64: round to nearest even, NaN and infinities kept, subnormals
// right. One implementation, used by the tensors of these dtypes and by quantization scales.
// SPDX-License-Identifier: MIT
#pragma once

#include <bit>
#include <cstdint>
#include <ostream>
#include <type_traits>

namespace ferry {
namespace detail {

/// f32 -> binary16 bits, round to nearest even; overflow gives inf (65520 -> 0x7c00),
/// subnormals are rounded correctly, NaN stays a NaN with its sign, made quiet, keeping the top
/// bits of its payload: bit for bit what the F16C instruction gives (checked for every f32).
///
/// Bit code rather than Eigen::half so that this header stays light and its behaviour does not
/// depend on the target's F16C support; the tests check it against Eigen::half for every f32.
/// Written without branches (all three cases computed, one selected) so that a loop of it
/// vectorises.
inline std::uint16_t f32_to_f16_bits(float value) noexcept {
  const std::uint32_t in = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = in & 0x80000000u;
  const std::uint32_t f = in ^ sign;
  // >= 65536 and inf: inf. NaN: a quiet NaN keeping the top 10 bits of its payload, as the
  // F16C instruction (vcvtps2ph) does, so both give the same bits.
  const std::uint32_t big = 0x7c00u | ((0u - static_cast<std::uint32_t>(f > 0x7f800000u)) &
                                       (0x200u | ((f >> 13) & 0x3ffu)));
  // Below the smallest normal half (2^-14): adding 0.5 aligns the value so that the FPU's own
  // round-to-nearest-even rounds it at the subnormal ulp (2^-24); the low bits are the half's.
  const std::uint32_t sub =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(f & 0x3fffffffu) + 0.5f) - 0x3f000000u;
  // Normal: rebias, round half up, or to even on a tie.
  const std::uint32_t norm =
      (f + (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + ((f >> 13) & 1u)) >> 13;
  // Selected with masks, not branches (GCC does not if-convert the chain of ?:).
  const std::uint32_t m_big = 0u - static_cast<std::uint32_t>(f >= 0x47800000u);
  const std::uint32_t m_sub = ~m_big & (0u - static_cast<std::uint32_t>(f < 0x38800000u));
  const std::uint32_t o = (big & m_big) | (sub & m_sub) | (norm & ~(m_big | m_sub));
  return static_cast<std::uint16_t>(o | (sign >> 16));
}

/// binary16 bits -> f32 (exact; a signalling NaN is made quiet, as F16C's vcvtph2ps does).
inline float f16_bits_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t m = static_cast<std::uint32_t>(h & 0x7fffu) << 13;
  const std::uint32_t exp = m & 0x0f800000u;
  const std::uint32_t norm = m + (static_cast<std::uint32_t>(127 - 15) << 23);
  // inf, or a NaN made quiet (as vcvtph2ps does).
  const std::uint32_t inf = (norm + (static_cast<std::uint32_t>(128 - 16) << 23)) |
                            (static_cast<std::uint32_t>((m & 0x007fe000u) != 0) << 22);
  // Subnormal half: build 1.m * 2^-14 and subtract the implicit 2^-14 in float arithmetic.
  const std::uint32_t sub = std::bit_cast<std::uint32_t>(std::bit_cast<float>(norm + (1u << 23)) -
                                                         std::bit_cast<float>(113u << 23));
  const std::uint32_t m_inf = 0u - static_cast<std::uint32_t>(exp == 0x0f800000u);
  const std::uint32_t m_sub = 0u - static_cast<std::uint32_t>(exp == 0);
  const std::uint32_t o = (inf & m_inf) | (sub & m_sub) | (norm & ~(m_inf | m_sub));
  return std::bit_cast<float>(o | static_cast<std::uint32_t>(h & 0x8000u) << 16);
}

/// f32 -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
inline std::uint16_t f32_to_bf16_bits(float value) noexcept {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t nan = (f >> 16) | 0x0040u;
  const std::uint32_t rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>((f & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/// bfloat16 bits -> f32 (exact).
inline float bf16_bits_to_f32(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

/// f64 -> f32 rounded to odd: the nearest f32 toward zero, with its last bit set when that is
/// inexact. Rounding this to a format of at most 22 significand bits (f16: 11, bf16: 8) is the
/// correctly rounded f64 -> that format (no double rounding).
inline float f64_to_f32_odd(double d) noexcept {
  float f = static_cast<float>(d);
  if (d == d && static_cast<double>(f) != d) {
    std::uint32_t b = std::bit_cast<std::uint32_t>(f);
    const double af = f < 0 ? -static_cast<double>(f) : static_cast<double>(f);
    const double ad = d < 0 ? -d : d;
    if (af > ad) b -= 1;  // rounded away from zero (or overflowed to inf): step back
    f = std::bit_cast<float>(b | 1u);
  }
  return f;
}

/// An integer -> f32 rounded to odd (as f64_to_f32_odd), exact for any 64-bit value.
template <class I>
float int_to_f32_odd(I x) noexcept {
  const bool neg = x < I(0);
  std::uint64_t m = static_cast<std::uint64_t>(x);
  if (neg) m = std::uint64_t{0} - m;
  const int width = std::bit_width(m);
  float f;
  if (width <= 24) {
    f = static_cast<float>(m);
  } else {
    const int shift = width - 24;
    const std::uint64_t top = (m >> shift) | ((m & ((std::uint64_t{1} << shift) - 1)) != 0);
    f = static_cast<float>(top) *
        std::bit_cast<float>(static_cast<std::uint32_t>(127 + shift) << 23);
  }
  return neg ? -f : f;
}

/// The float value a 16-bit format takes from `v` of any arithmetic type, rounded once.
template <class T>
float to_f32_for_half(T v) noexcept {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, long double>)
    return f64_to_f32_odd(static_cast<double>(v));
  else if constexpr (std::is_same_v<T, bool>)
    return v ? 1.0f : 0.0f;
  else
    return int_to_f32_odd(v);
}

}  // namespace detail

/// @brief IEEE 754 binary16, the `f16` dtype's element (PyTorch's torch.float16, numpy's
/// float16): 1 sign, 5 exponent, 10 significand bits.
///
/// A trivially copyable 2-byte value, converted explicitly: `ferry::f16(0.1f)`,
/// `float(h)`. Conversions from every arithmetic type round once to nearest even (from f64 and
/// 64-bit integers too, without double rounding); values past 65504 become infinities. Ferry's
/// kernels compute f16 tensors in f32 and round each result once, as PyTorch's CPU kernels do.
/// `==` compares values as IEEE does (NaN != NaN, -0 == +0); `bits` is the stored pattern.
struct f16 {
  std::uint16_t bits = 0;

  f16() = default;
  template <class T>
  requires std::is_arithmetic_v<T>
  explicit f16(T v) noexcept : bits(detail::f32_to_f16_bits(detail::to_f32_for_half(v))) {}
  [[nodiscard]] static constexpr f16 from_bits(std::uint16_t b) noexcept {
    f16 h;
    h.bits = b;
    return h;
  }
  explicit operator float() const noexcept { return detail::f16_bits_to_f32(bits); }
  explicit operator double() const noexcept { return detail::f16_bits_to_f32(bits); }
  friend bool operator==(f16 a, f16 b) noexcept { return float(a) == float(b); }
};

/// @brief bfloat16, the `bf16` dtype's element (torch.bfloat16): the top half of an f32 (1 sign,
/// 8 exponent, 7 significand bits), so it has f32's range with 8 bits of precision. The same
/// interface and rounding rules as f16.
struct bf16 {
  std::uint16_t bits = 0;

  bf16() = default;
  template <class T>
  requires std::is_arithmetic_v<T>
  explicit bf16(T v) noexcept : bits(detail::f32_to_bf16_bits(detail::to_f32_for_half(v))) {}
  [[nodiscard]] static constexpr bf16 from_bits(std::uint16_t b) noexcept {
    bf16 h;
    h.bits = b;
    return h;
  }
  explicit operator float() const noexcept { return detail::bf16_bits_to_f32(bits); }
  explicit operator double() const noexcept { return detail::bf16_bits_to_f32(bits); }
  friend bool operator==(bf16 a, bf16 b) noexcept { return float(a) == float(b); }
};

static_assert(sizeof(f16) == 2 && std::is_trivially_copyable_v<f16>);
static_assert(sizeof(bf16) == 2 && std::is_trivially_copyable_v<bf16>);

/// True for ferry::f16 and ferry::bf16.
template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

inline std::ostream& operator<<(std::ostream& os, f16 h) { return os << float(h); }
inline std::ostream& operator<<(std::ostream& os, bf16 h) { return os << float(h); }

}  // namespace ferry

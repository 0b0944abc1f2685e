// Ferry: checked integer arithmetic for element counts, byte counts, block counts and dims
// (internal). Every size Ferry computes from user input goes through these, so a count that
// does not fit is an error at the call, never a wrapped value (or undefined behaviour) that a
// kernel then allocates or indexes with.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

namespace ferry::detail {

/// The most bytes (and elements) one tensor may have: what a signed 64-bit offset addresses.
inline constexpr std::int64_t max_count = std::numeric_limits<std::int64_t>::max();

/// a + b, a * b and a - b, or nullopt when the result does not fit in int64.
[[nodiscard]] constexpr std::optional<std::int64_t> add_i64(std::int64_t a,
                                                            std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
[[nodiscard]] constexpr std::optional<std::int64_t> sub_i64(std::int64_t a,
                                                            std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
[[nodiscard]] constexpr std::optional<std::int64_t> mul_i64(std::int64_t a,
                                                            std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// The product of `dims`, or nullopt when it does not fit in int64. A zero dim makes the
/// product 0 whatever the other dims are (an empty tensor of shape [0, 2^62, 2^62] is fine).
[[nodiscard]] constexpr std::optional<std::int64_t> product_i64(
    std::span<const std::int64_t> dims) noexcept {
  std::int64_t n = 1;
  bool overflow = false;
  for (const std::int64_t d : dims) {
    if (d == 0) return 0;
    if (__builtin_mul_overflow(n, d, &n)) overflow = true;
  }
  if (overflow) return std::nullopt;
  return n;
}

/// ceil(a / b) for a >= 0 and b >= 1, without the overflow of `(a + b - 1) / b`.
[[nodiscard]] constexpr std::int64_t ceil_div_i64(std::int64_t a, std::int64_t b) noexcept {
  return a == 0 ? 0 : (a - 1) / b + 1;
}

/// `numel` elements of `size` bytes each, or nullopt past max_count bytes (numel >= 0).
[[nodiscard]] constexpr std::optional<std::int64_t> bytes_i64(std::int64_t numel,
                                                              std::size_t size) noexcept {
  return mul_i64(numel, static_cast<std::int64_t>(size));
}

/// ceil(numel * bits / 8) bytes of packed values, without forming numel * bits (numel >= 0,
/// 1 <= bits <= 64); the result is at most numel * 8, so it can itself overflow only for
/// bits > 8.
[[nodiscard]] constexpr std::optional<std::int64_t> packed_bytes_i64(std::int64_t numel,
                                                                     int bits) noexcept {
  const auto whole = mul_i64(numel / 8, bits);  // 8 values make `bits` whole bytes
  if (!whole) return std::nullopt;
  return add_i64(*whole, ((numel % 8) * bits + 7) / 8);
}

}  // namespace ferry::detail

// Ferry: the one element conversion rule — what cast, to_vector and scalars do to a value.
// SPDX-License-Identifier: MIT
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "ferry/dtype.hpp"
#include "ferry/half.hpp"

namespace ferry::detail {

/// @brief Converts one element of any dtype's type to another's, defined for every input.
///
/// - to bool: `x != 0` (NaN is true, as in torch);
/// - float -> integer: truncation toward zero, NaN -> 0, out of range saturates to the type's
///   min/max (negative values to 0 for unsigned types); C++ leaves these undefined and torch
///   unspecified;
/// - integer -> integer: two's-complement wrap modulo 2^n (C++20 modular conversion);
/// - anything -> float: nearest value, rounded once (to f16/bf16 also from f64 and 64-bit
///   integers, see ferry/half.hpp); f16/bf16 -> anything goes through their exact f32 value.
/// - the same type: the value itself, bit for bit (a signalling NaN stays one).
template <class To, class From>
constexpr To convert(From x) noexcept {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_half_v<From>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (is_half_v<To>) {
    return To(x);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    const auto v = static_cast<double>(x);
    if (v != v) return To{0};
    // 2^(bits - 1) or 2^bits as a double is exact; max() itself may not be (2^63 - 1 rounds up).
    using L = std::numeric_limits<To>;
    constexpr double hi = std::is_signed_v<To> ? -static_cast<double>(L::min())
                                               : 2.0 * static_cast<double>(L::max() / 2 + 1);
    constexpr auto lo = static_cast<double>(std::numeric_limits<To>::min());
    if (v >= hi) return std::numeric_limits<To>::max();
    if (v <= lo) return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(x);
  }
}

/// The exact value of a whole-number scalar in 128 bits (every value of every integer dtype, u64
/// above INT64_MAX too), or nothing for a fraction, a non-finite value or |s| >= 2^70.
__extension__ inline std::optional<__int128> scalar_whole(const Scalar& s) noexcept {
  return std::visit(
      []<class V>(V v) -> std::optional<__int128> {
        if constexpr (std::is_same_v<V, double>) {
          if (!std::isfinite(v) || std::trunc(v) != v || std::fabs(v) >= 0x1p70) return {};
        }
        return static_cast<__int128>(v);
      },
      s.value());
}

/// True when the whole number v is a value of integer dtype `d` (false for other dtypes).
__extension__ inline bool whole_in(__int128 v, DType d) {
  return visit_dtype(d, [&]<class T>(T) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      return v >= static_cast<__int128>(std::numeric_limits<T>::min()) &&
             v <= static_cast<__int128>(std::numeric_limits<T>::max());
    else
      return false;
  });
}

/// True when `s` is exactly a value of T: any scalar for a float type (it is rounded to
/// nearest, as in torch); for an integer type an integral value in its range; for bool 0 or 1.
template <class T>
bool scalar_exact(const Scalar& s) noexcept {
  if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
    return true;
  } else if constexpr (std::is_same_v<T, bool>) {
    const double v = s.as<double>();
    return v == 0.0 || v == 1.0;
  } else {
    return std::visit(
        []<class V>(V v) {
          if constexpr (std::is_same_v<V, bool>) {
            return true;
          } else if constexpr (std::is_same_v<V, double>) {
            using L = std::numeric_limits<T>;
            const double hi = std::is_signed_v<T> ? -static_cast<double>(L::min())
                                                  : 2.0 * static_cast<double>(L::max() / 2 + 1);
            return std::isfinite(v) && std::trunc(v) == v && v >= static_cast<double>(L::min()) &&
                   v < hi;
          } else {
            return std::in_range<T>(v);
          }
        },
        s.value());
  }
}

}  // namespace ferry::detail

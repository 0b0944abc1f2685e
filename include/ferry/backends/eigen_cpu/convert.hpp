// Ferry: EigenCpu's element conversions (casts and scalars), defined for every input.
// SPDX-License-Identifier: MIT
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <variant>

#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

/// @brief Converts one element as the casts do; `std::uint8_t` is the bool dtype.
///
/// - to bool: `x != 0` (NaN is true, as in torch);
/// - floating -> integer: truncation toward zero, NaN -> 0, out of range saturates to the
///   type's min/max (C++ leaves these undefined; torch leaves them unspecified);
/// - integer -> narrower integer: two's-complement wrap (C++20 modular conversion);
/// - anything -> floating: nearest value (static_cast).
template <class To, class From>
constexpr To convert(From x) noexcept {
  if constexpr (std::is_same_v<To, std::uint8_t>) {
    return x != From(0) ? To{1} : To{0};
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    const auto v = static_cast<double>(x);
    if (v != v) return To{0};
    constexpr auto hi = static_cast<double>(std::numeric_limits<To>::max());
    constexpr auto lo = static_cast<double>(std::numeric_limits<To>::min());
    if (v >= hi) return std::numeric_limits<To>::max();
    if (v <= lo) return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(x);
  }
}

/// A Scalar converted as a cast would (used by full, arange and clamp bounds).
template <class T>
T scalar_cast(const Scalar& s) noexcept {
  return std::visit([](auto v) { return convert<T>(v); }, s.value());
}

/// @brief A Scalar operand of an arithmetic kernel in the tensor's dtype T, exactly or not at
/// all: an integer tensor takes an integral value that fits T (a floating scalar must hold a
/// whole number), else ValueError naming `op`, instead of silently truncating or wrapping.
template <class T>
T scalar_operand(const Scalar& s, const char* op) {
  if constexpr (std::is_floating_point_v<T>) {
    return scalar_cast<T>(s);
  } else {
    const auto& v = s.value();
    if (const auto* d = std::get_if<double>(&v)) {
      const double x = *d;
      if (!(x == std::trunc(x)) || x < static_cast<double>(std::numeric_limits<T>::min()) ||
          x >= -static_cast<double>(std::numeric_limits<T>::min()))
        detail::raise<ValueError>("cpu.scalar", "{}: scalar {} is not representable as {}", op, x,
                                  dtype_of<T>);
      return static_cast<T>(x);
    }
    const std::int64_t x = s.as<std::int64_t>();
    if (x < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
        x > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
      detail::raise<ValueError>("cpu.scalar", "{}: scalar {} does not fit in {}", op, x,
                                dtype_of<T>);
    return static_cast<T>(x);
  }
}

}  // namespace ferry::detail::cpu

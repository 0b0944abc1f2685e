// Ferry: EigenCpu's element conversions (casts and scalars), defined for every input.
// SPDX-License-Identifier: MIT
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <variant>

#include "ferry/detail/convert.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

using ferry::detail::convert;

/// A Scalar converted as a cast would (used by full, arange and clamp bounds).
template <class T>
T scalar_cast(const Scalar& s) noexcept {
  if (const auto same = s.exactly_as<T>()) return *same;  // made from a T: its own bits
  return std::visit([](auto v) { return convert<T>(v); }, s.value());
}

/// @brief A Scalar operand of an arithmetic kernel in the tensor's dtype T, exactly or not at
/// all: an integer tensor takes an integral value that fits T (a floating scalar must hold a
/// whole number), else ValueError naming `op`, instead of silently truncating or wrapping.
/// A float tensor (f16 and bf16 too) takes the scalar rounded to its dtype.
template <class T>
T scalar_operand(const Scalar& s, const char* op) {
  if (!scalar_exact<T>(s))
    detail::raise<ValueError>("cpu.scalar", "{}: scalar {} {} {}", op, s,
                              s.is_floating() ? "is not representable as" : "does not fit in",
                              dtype_of<T>);
  return scalar_cast<T>(s);
}

}  // namespace ferry::detail::cpu

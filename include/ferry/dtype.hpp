// Ferry: element types, handle kinds and scalars.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <variant>

#include "ferry/detail/text.hpp"
#include "ferry/error.hpp"

namespace ferry {

/// Element type of a tensor. Bool is stored as one byte (0 or 1). `quantized` marks a tensor
/// whose handle is a quantized one; its element layout is described by a quant::Scheme.
enum class DType : std::uint8_t { f32, f64, i32, i64, boolean, quantized };

/// The four registry kinds a handle can be; every DType maps to exactly one.
enum class Kind : std::uint8_t { Float, Int, Bool, Quantized };

[[nodiscard]] constexpr Kind kind_of(DType d) noexcept {
  switch (d) {
    case DType::f32:
    case DType::f64:
      return Kind::Float;
    case DType::i32:
    case DType::i64:
      return Kind::Int;
    case DType::boolean:
      return Kind::Bool;
    case DType::quantized:
      break;
  }
  return Kind::Quantized;
}

/// Bytes per element; 0 for quantized (its size depends on the scheme).
[[nodiscard]] constexpr std::size_t dtype_size(DType d) noexcept {
  switch (d) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::boolean:
      return 1;
    case DType::quantized:
      break;
  }
  return 0;
}

[[nodiscard]] constexpr std::string_view to_string(DType d) noexcept {
  switch (d) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::boolean:
      return "bool";
    case DType::quantized:
      break;
  }
  return "quantized";
}

[[nodiscard]] constexpr std::string_view to_string(Kind k) noexcept {
  switch (k) {
    case Kind::Float:
      return "Float";
    case Kind::Int:
      return "Int";
    case Kind::Bool:
      return "Bool";
    case Kind::Quantized:
      break;
  }
  return "Quantized";
}

/// C++ element type <-> DType. `bool` tensors are read and written as `std::uint8_t`/`bool`.
template <class T>
inline constexpr DType dtype_of = [] {
  if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::i64;
  else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::uint8_t>)
    return DType::boolean;
  else
    static_assert(sizeof(T) == 0, "ferry: no DType for this C++ type");
}();

/// Calls `f(T{})` with the C++ element type of `d` (bool as std::uint8_t). Throws DTypeError
/// for quantized, which has no single element type.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::i32:
      return f(std::int32_t{});
    case DType::i64:
      return f(std::int64_t{});
    case DType::boolean:
      return f(std::uint8_t{});
    case DType::quantized:
      break;
  }
  detail::raise<DTypeError>("dtype", "a quantized tensor has no plain element type");
}

/// A scalar operand (`a + 2.0f`, `full(..., 7)`): kept as given, converted to the tensor's
/// dtype by the kernel, so int64 values above 2^53 stay exact.
class Scalar {
 public:
  constexpr Scalar() = default;
  template <class T>
  requires std::is_arithmetic_v<T>
  constexpr Scalar(T v) noexcept {  // NOLINT(google-explicit-constructor): scalars read naturally
    if constexpr (std::is_same_v<T, bool>)
      v_ = v;
    else if constexpr (std::is_integral_v<T>)
      v_ = static_cast<std::int64_t>(v);
    else
      v_ = static_cast<double>(v);
  }
  template <class T>
  [[nodiscard]] constexpr T as() const noexcept {
    return std::visit([](auto x) { return static_cast<T>(x); }, v_);
  }
  [[nodiscard]] constexpr bool is_floating() const noexcept {
    return std::holds_alternative<double>(v_);
  }
  [[nodiscard]] const std::variant<double, std::int64_t, bool>& value() const noexcept {
    return v_;
  }
  friend bool operator==(const Scalar&, const Scalar&) = default;

 private:
  std::variant<double, std::int64_t, bool> v_{0.0};
};

inline std::ostream& operator<<(std::ostream& os, DType d) { return os << to_string(d); }
inline std::ostream& operator<<(std::ostream& os, Kind k) { return os << to_string(k); }

}  // namespace ferry

template <>
struct fmt::formatter<ferry::DType> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(ferry::DType d, Ctx& ctx) const {
    return write(ferry::to_string(d), ctx);
  }
};
template <>
struct fmt::formatter<ferry::Kind> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(ferry::Kind k, Ctx& ctx) const {
    return write(ferry::to_string(k), ctx);
  }
};
template <>
struct fmt::formatter<ferry::Scalar> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::Scalar& s, Ctx& ctx) const {
    return write(std::visit([](auto v) { return fmt::format("{}", v); }, s.value()), ctx);
  }
};

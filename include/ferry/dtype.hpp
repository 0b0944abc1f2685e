// Ferry: element types, handle kinds and scalars.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <bit>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <variant>

#include "ferry/detail/text.hpp"
#include "ferry/error.hpp"
#include "ferry/half.hpp"

namespace ferry {

/// Element type of a tensor. Bool is stored as one byte (0 or 1). `quantized` marks a tensor
/// whose handle is a quantized one; its element layout is described by a quant::Scheme.
/// The 16-bit floats are ferry::f16 and ferry::bf16 (ferry/half.hpp).
enum class DType : std::uint8_t {
  f32,
  f64,
  i32,
  i64,
  boolean,
  quantized,
  f16,
  bf16,
  i8,
  i16,
  u8,
  u16,
  u32,
  u64
};

/// Every plain dtype (all but quantized), floats then signed then unsigned integers then bool:
/// what tests and tables iterate over.
inline constexpr DType kPlainDTypes[] = {
    DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8,  DType::i16,    DType::i32,
    DType::i64, DType::u8,  DType::u16, DType::u32,  DType::u64, DType::boolean};

/// The four registry kinds a handle can be; every DType maps to exactly one.
enum class Kind : std::uint8_t { Float, Int, Bool, Quantized };

[[nodiscard]] constexpr Kind kind_of(DType d) noexcept {
  switch (d) {
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16:
      return Kind::Float;
    case DType::i8:
    case DType::i16:
    case DType::i32:
    case DType::i64:
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::u64:
      return Kind::Int;
    case DType::boolean:
      return Kind::Bool;
    case DType::quantized:
      break;
  }
  return Kind::Quantized;
}

/// True for the unsigned integer dtypes.
[[nodiscard]] constexpr bool is_unsigned(DType d) noexcept {
  return d == DType::u8 || d == DType::u16 || d == DType::u32 || d == DType::u64;
}

/// The dtype sum and prod return for a `d` input: i64 for the signed integers and u8, u16,
/// u32 (as torch.sum), u64 for u64, `d` itself for floats (f16/bf16 accumulate in f32 inside).
[[nodiscard]] constexpr DType accumulate_dtype(DType d) noexcept {
  if (d == DType::u64) return DType::u64;
  return kind_of(d) == Kind::Int ? DType::i64 : d;
}

/// Bytes per element; 0 for quantized (its size depends on the scheme).
[[nodiscard]] constexpr std::size_t dtype_size(DType d) noexcept {
  switch (d) {
    case DType::f64:
    case DType::i64:
    case DType::u64:
      return 8;
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16:
      return 2;
    case DType::i8:
    case DType::u8:
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
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i8:
      return "i8";
    case DType::i16:
      return "i16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
    case DType::u16:
      return "u16";
    case DType::u32:
      return "u32";
    case DType::u64:
      return "u64";
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

/// C++ element type <-> DType: float, double, ferry::f16, ferry::bf16, std::int8_t ...
/// std::uint64_t, and bool (stored as one byte, 0 or 1).
template <class T>
inline constexpr DType dtype_of = [] {
  if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else if constexpr (std::is_same_v<T, f16>)
    return DType::f16;
  else if constexpr (std::is_same_v<T, bf16>)
    return DType::bf16;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::boolean;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 1)
    return DType::i8;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 2)
    return DType::i16;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 4)
    return DType::i32;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 8)
    return DType::i64;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 1)
    return DType::u8;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 2)
    return DType::u16;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 4)
    return DType::u32;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 8)
    return DType::u64;
  else
    static_assert(sizeof(T) == 0, "ferry: no DType for this C++ type");
}();

/// Calls `f(T{})` with the C++ element type of `d` (see dtype_of). Throws DTypeError for
/// quantized, which has no single element type.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::f16:
      return f(f16{});
    case DType::bf16:
      return f(bf16{});
    case DType::i8:
      return f(std::int8_t{});
    case DType::i16:
      return f(std::int16_t{});
    case DType::i32:
      return f(std::int32_t{});
    case DType::i64:
      return f(std::int64_t{});
    case DType::u8:
      return f(std::uint8_t{});
    case DType::u16:
      return f(std::uint16_t{});
    case DType::u32:
      return f(std::uint32_t{});
    case DType::u64:
      return f(std::uint64_t{});
    case DType::boolean:
      return f(bool{});
    case DType::quantized:
      break;
  }
  detail::raise<DTypeError>("dtype", "a quantized tensor has no plain element type");
}

/// A scalar operand (`a + 2.0f`, `full(..., 7)`): kept as given, converted to the tensor's
/// dtype by the kernel, so int64 values above 2^53 stay exact. An unsigned value above
/// INT64_MAX is kept as std::uint64_t; every other integer as std::int64_t.
class Scalar {
 public:
  using Value = std::variant<double, std::int64_t, bool, std::uint64_t>;

  constexpr Scalar() = default;
  template <class T>
  requires std::is_arithmetic_v<T>
  constexpr Scalar(T v) noexcept {  // NOLINT(google-explicit-constructor): scalars read naturally
    if constexpr (std::is_same_v<T, bool>)
      v_ = v;
    else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 8)
      v_ = v > static_cast<T>(INT64_MAX) ? Value(static_cast<std::uint64_t>(v))
                                         : Value(static_cast<std::int64_t>(v));
    else if constexpr (std::is_integral_v<T>)
      v_ = static_cast<std::int64_t>(v);
    else
      v_ = static_cast<double>(v);
    if constexpr (std::is_same_v<T, float>) keep(DType::f32, std::bit_cast<std::uint32_t>(v));
  }
  template <class T>
  requires is_half_v<T>
  constexpr Scalar(T v) noexcept : v_(static_cast<double>(v)) {  // NOLINT: as above
    keep(dtype_of<T>, v.bits);
  }
  template <class T>
  [[nodiscard]] constexpr T as() const noexcept {
    return std::visit([](auto x) { return static_cast<T>(x); }, v_);
  }
  [[nodiscard]] constexpr bool is_floating() const noexcept {
    return std::holds_alternative<double>(v_);
  }
  [[nodiscard]] const Value& value() const noexcept { return v_; }
  /// The value made from an f32, f16 or bf16 `T`, bit for bit (a signalling NaN and its payload
  /// included, which the trip through double would quiet); nullopt for any other source.
  template <class T>
  [[nodiscard]] constexpr std::optional<T> exactly_as() const noexcept {
    if (!is_floating() || from_ != dtype_of<T>) return std::nullopt;
    if constexpr (std::is_same_v<T, float>)
      return std::bit_cast<float>(bits_);
    else if constexpr (is_half_v<T>)
      return T::from_bits(static_cast<std::uint16_t>(bits_));
    else
      return std::nullopt;
  }
  /// Equal values (NaN is never equal), whatever type they were made from.
  friend constexpr bool operator==(const Scalar& a, const Scalar& b) noexcept {
    return a.v_ == b.v_;
  }

 private:
  constexpr void keep(DType from, std::uint32_t bits) noexcept {
    from_ = from;
    bits_ = bits;
  }
  Value v_{0.0};
  DType from_ = DType::f64;  ///< f32/f16/bf16 when made from one: then bits_ are its bits
  std::uint32_t bits_ = 0;
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

// Ferry: quantization schemes (value type, mode, granularity, storage, scale type) and the
// shapes of their parameter grids.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/detail/text.hpp"
#include "ferry/error.hpp"
#include "ferry/shape.hpp"

namespace ferry::quant {

/// Type of the quantized values. Integers: sub-byte types are two's complement (signed) or
/// plain binary (unsigned) in a 4- or 2-bit field. Floats (OCP 8-bit and MX formats):
/// `e4m3` and `e5m2` (FP8, one per byte) and `e2m1` (FP4, a 4-bit field), stored as their bit
/// patterns, so packing, moves and layout ops treat them as unsigned codes; see minifloat.hpp
/// for their values and rounding. Float values are symmetric only (a code has no zero point).
enum class ValueType : std::uint8_t { i8, u8, i4, u4, i2, u2, e4m3, e5m2, e2m1 };
/// symmetric: `x = q * scale` (no offset), signed values in [-(2^(b-1) - 1), 2^(b-1) - 1];
/// affine: `x = (q - offset) * scale`; symmetric_full: `x = q * scale` over the full signed
/// range [-2^(b-1), 2^(b-1) - 1] (signed integers only; PyTorch's symmetric observers, burn's
/// Q8F), calibrated with `scale = max|x| / ((qmax - qmin) / 2)`.
enum class Mode : std::uint8_t { symmetric, affine, symmetric_full };
/// Which elements share one scale (and offset).
enum class Granularity : std::uint8_t { per_tensor, per_axis, per_block };
/// How values are laid out in bytes: one value per byte (`native`, sign-extended), or packed
/// densely into bytes (`packed_u8`) or little-endian 32-bit words (`packed_u32`).
enum class Storage : std::uint8_t { native, packed_u8, packed_u32 };
/// The type each scale is stored as. Arithmetic always uses the stored (rounded) value.
/// `ue8m0` (OCP MX's E8M0): a power of two 2^(b - 127) in one byte (255 is NaN); `ue4m3`: a
/// positive OCP E4M3 value in one byte (NVFP4's block scale). See half.hpp for their rounding.
enum class ScaleType : std::uint8_t { f32, f16, bf16, ue8m0, ue4m3 };

namespace detail {

inline const char* name(ValueType v) noexcept {
  switch (v) {
    case ValueType::i8:
      return "int8";
    case ValueType::u8:
      return "uint8";
    case ValueType::i4:
      return "int4";
    case ValueType::u4:
      return "uint4";
    case ValueType::i2:
      return "int2";
    case ValueType::u2:
      return "uint2";
    case ValueType::e4m3:
      return "fp8_e4m3";
    case ValueType::e5m2:
      return "fp8_e5m2";
    case ValueType::e2m1:
      return "fp4_e2m1";
  }
  return nullptr;
}
inline const char* name(Mode m) noexcept {
  switch (m) {
    case Mode::symmetric:
      return "symmetric";
    case Mode::affine:
      return "affine";
    case Mode::symmetric_full:
      return "symmetric_full";
  }
  return nullptr;
}
inline const char* name(Granularity g) noexcept {
  switch (g) {
    case Granularity::per_tensor:
      return "per_tensor";
    case Granularity::per_axis:
      return "per_axis";
    case Granularity::per_block:
      return "per_block";
  }
  return nullptr;
}
inline const char* name(Storage s) noexcept {
  switch (s) {
    case Storage::native:
      return "native";
    case Storage::packed_u8:
      return "packed_u8";
    case Storage::packed_u32:
      return "packed_u32";
  }
  return nullptr;
}
inline const char* name(ScaleType s) noexcept {
  switch (s) {
    case ScaleType::f32:
      return "f32";
    case ScaleType::f16:
      return "f16";
    case ScaleType::bf16:
      return "bf16";
    case ScaleType::ue8m0:
      return "ue8m0";
    case ScaleType::ue4m3:
      return "ue4m3";
  }
  return nullptr;
}

/// Prints a known enumerator by name and a corrupt one as `Type(7)`, so that error messages
/// about a bad scheme stay readable.
template <class E>
std::string enum_string(E e, const char* type) {
  if (const char* n = name(e)) return n;
  return fmt::format("{}({})", type, static_cast<int>(e));
}

}  // namespace detail

/// Bits per value: 8, 4 or 2. Throws QuantError for a corrupt enumerator.
inline int bits(ValueType v) {
  switch (v) {
    case ValueType::i8:
    case ValueType::u8:
    case ValueType::e4m3:
    case ValueType::e5m2:
      return 8;
    case ValueType::i4:
    case ValueType::u4:
    case ValueType::e2m1:
      return 4;
    case ValueType::i2:
    case ValueType::u2:
      return 2;
  }
  ferry::detail::raise<QuantError>("quant.scheme", "unknown value type {}", static_cast<int>(v));
}

/// True for the two's complement integer types. Float values are stored as unsigned codes.
inline bool is_signed(ValueType v) {
  (void)bits(v);  // rejects corrupt enumerators
  return v == ValueType::i8 || v == ValueType::i4 || v == ValueType::i2;
}

/// True for the float value types (e4m3, e5m2, e2m1).
inline bool is_float(ValueType v) {
  (void)bits(v);
  return v == ValueType::e4m3 || v == ValueType::e5m2 || v == ValueType::e2m1;
}

/// Largest finite magnitude a value represents: what quantize_dynamic maps a group's largest
/// |x| to. qmax for the integers; 448 (e4m3), 57344 (e5m2), 6 (e2m1).
inline float max_value(ValueType v);

/// Smallest quantized value (for float types: the smallest code, 0). Symmetric signed ranges
/// drop the most negative code (int8 -> [-127, 127]) so that the range is symmetric around zero;
/// symmetric_full keeps it (int8 -> [-128, 127]); symmetric unsigned is [0, 2^b-1].
inline std::int32_t qmin(ValueType v, Mode m) {
  const int b = bits(v);
  if (!is_signed(v)) return 0;
  const std::int32_t lowest = -(std::int32_t{1} << (b - 1));
  return m == Mode::symmetric ? lowest + 1 : lowest;
}

/// Largest quantized value, the same for both modes (for float types: the largest code).
inline std::int32_t qmax(ValueType v, Mode /*mode*/) {
  const int b = bits(v);
  return is_signed(v) ? (std::int32_t{1} << (b - 1)) - 1 : (std::int32_t{1} << b) - 1;
}

inline float max_value(ValueType v) {
  switch (v) {
    case ValueType::e4m3:
      return 448.0f;
    case ValueType::e5m2:
      return 57344.0f;
    case ValueType::e2m1:
      return 6.0f;
    default:
      return static_cast<float>(qmax(v, Mode::symmetric));
  }
}

/// Bytes one stored scale takes: 4 (f32), 2 (f16, bf16) or 1 (ue8m0, ue4m3).
inline std::size_t scale_bytes(ScaleType s) {
  switch (s) {
    case ScaleType::f32:
      return 4;
    case ScaleType::f16:
    case ScaleType::bf16:
      return 2;
    case ScaleType::ue8m0:
    case ScaleType::ue4m3:
      return 1;
  }
  ferry::detail::raise<QuantError>("quant.scheme", "unknown scale type {}", static_cast<int>(s));
}

/// @brief How a float tensor is quantized: value type, mode, granularity, storage, scale type.
///
/// @code
///   using namespace ferry::quant;
///   auto s =
///   Scheme::of(ValueType::i4).affine().per_block({32}).packed_u8().scales(ScaleType::f16);
///   s.validate_for(ferry::Shape{4096, 4096});   // fmt prints "int4 affine per_block[32] packed_u8
///   scale=f16"
/// @endcode
///
/// Builders return modified copies and reset the fields that do not apply to the new
/// granularity (`per_tensor()` clears `axis` and `block`), so two schemes that mean the same
/// compare equal. `validate()` rejects a stray `axis` or `block` for the same reason.
struct Scheme {
  ValueType value = ValueType::i8;
  Mode mode = Mode::symmetric;
  Granularity granularity = Granularity::per_tensor;
  /// per_axis only; may be negative (counted from the end).
  std::int64_t axis = 0;
  /// per_block only: block shape over the trailing `block.size()` dims, entries >= 1. A dim that
  /// is not a multiple of its block ends in a partial block with its own scale/offset.
  std::vector<std::int64_t> block;
  Storage storage = Storage::native;
  ScaleType scale_type = ScaleType::f32;
  /// Two levels of scales: when set, one more scale of this type for the whole tensor, stored
  /// after the per-group scales in the same buffer. An element's scale is then the f32 product
  /// (block scale) * (tensor scale), rounded once, and all arithmetic uses that product. Not
  /// with per_tensor granularity (it would be a second scale for the same elements).
  std::optional<ScaleType> tensor_scale;
  /// Codebook mode: when not empty, a stored value (u8, u4 or u2) is an index into this table
  /// of 2^bits floats, strictly ascending, and `x = codebook[q] * scale` (symmetric only), e.g.
  /// NF4's 16 values. The table is part of the scheme, so it travels with every tensor.
  std::vector<float> codebook;

  static Scheme of(ValueType v) {
    Scheme s;
    s.value = v;
    return s;
  }
  /// OCP MXFP8: e4m3 values in blocks of 32 along the last dim, one ue8m0 scale per block.
  static Scheme mxfp8() {
    Scheme s = of(ValueType::e4m3).per_block({32});
    s.scale_type = ScaleType::ue8m0;
    return s;
  }
  /// OCP MXFP4: e2m1 values (two per byte) in blocks of 32 along the last dim, ue8m0 scales.
  static Scheme mxfp4() {
    Scheme s = of(ValueType::e2m1).per_block({32});
    s.storage = Storage::packed_u8;
    s.scale_type = ScaleType::ue8m0;
    return s;
  }
  /// NVIDIA NVFP4: e2m1 values (two per byte) in blocks of 16 along the last dim, a ue4m3
  /// scale per block and an f32 scale for the tensor.
  static Scheme nvfp4() {
    Scheme s = of(ValueType::e2m1).per_block({16});
    s.storage = Storage::packed_u8;
    s.scale_type = ScaleType::ue4m3;
    s.tensor_scale = ScaleType::f32;
    return s;
  }
  /// QLoRA's NF4 (bitsandbytes): 4-bit indices into the 16 NormalFloat values, two per byte,
  /// an f32 absmax scale per block of 64.
  static Scheme nf4() {
    Scheme s = of(ValueType::u4).per_block({64}).packed_u8();
    s.codebook = {-1.0f,
                  -0.6961928009986877f,
                  -0.5250730514526367f,
                  -0.39491748809814453f,
                  -0.28444138169288635f,
                  -0.18477343022823334f,
                  -0.09105003625154495f,
                  0.0f,
                  0.07958029955625534f,
                  0.16093020141124725f,
                  0.24611230194568634f,
                  0.33791524171829224f,
                  0.44070982933044434f,
                  0.5626170039176941f,
                  0.7229568362236023f,
                  1.0f};
    return s;
  }
  [[nodiscard]] Scheme symmetric() const {
    return with([](Scheme& s) { s.mode = Mode::symmetric; });
  }
  [[nodiscard]] Scheme affine() const {
    return with([](Scheme& s) { s.mode = Mode::affine; });
  }
  /// Symmetric over the full signed range, the lowest code included (see Mode).
  [[nodiscard]] Scheme symmetric_full() const {
    return with([](Scheme& s) { s.mode = Mode::symmetric_full; });
  }
  [[nodiscard]] Scheme per_tensor() const {
    return with([](Scheme& s) {
      s.granularity = Granularity::per_tensor;
      s.axis = 0;
      s.block.clear();
    });
  }
  [[nodiscard]] Scheme per_axis(std::int64_t a) const {
    return with([a](Scheme& s) {
      s.granularity = Granularity::per_axis;
      s.axis = a;
      s.block.clear();
    });
  }
  [[nodiscard]] Scheme per_block(std::vector<std::int64_t> b) const {
    Scheme s = *this;
    s.granularity = Granularity::per_block;
    s.axis = 0;
    s.block = std::move(b);
    return s;
  }
  [[nodiscard]] Scheme native() const {
    return with([](Scheme& s) { s.storage = Storage::native; });
  }
  [[nodiscard]] Scheme packed_u8() const {
    return with([](Scheme& s) { s.storage = Storage::packed_u8; });
  }
  [[nodiscard]] Scheme packed_u32() const {
    return with([](Scheme& s) { s.storage = Storage::packed_u32; });
  }
  [[nodiscard]] Scheme scales(ScaleType t) const {
    return with([t](Scheme& s) { s.scale_type = t; });
  }
  /// Codebook mode with this table (empty: plain values again); see `codebook`.
  [[nodiscard]] Scheme codebook_of(std::vector<float> table) const {
    Scheme s = *this;
    s.codebook = std::move(table);
    return s;
  }
  /// Adds (or, with std::nullopt, removes) the second level: one scale of type `t` per tensor.
  [[nodiscard]] Scheme tensor_scales(std::optional<ScaleType> t) const {
    return with([t](Scheme& s) { s.tensor_scale = t; });
  }

  /// Checks the scheme on its own; throws QuantError saying what is wrong.
  void validate() const;
  /// validate() plus the checks against a tensor shape (axis in range, block rank <= rank).
  void validate_for(const Shape& shape) const;

  friend bool operator==(const Scheme&, const Scheme&) = default;

 private:
  template <class F>
  [[nodiscard]] Scheme with(F f) const {
    Scheme s = *this;
    f(s);
    return s;
  }
};

}  // namespace ferry::quant

// ---- formatting ---------------------------------------------------------------------------

template <>
struct fmt::formatter<ferry::quant::ValueType> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(ferry::quant::ValueType v, Ctx& ctx) const {
    return write(ferry::quant::detail::enum_string(v, "ValueType"), ctx);
  }
};
template <>
struct fmt::formatter<ferry::quant::Mode> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(ferry::quant::Mode v, Ctx& ctx) const {
    return write(ferry::quant::detail::enum_string(v, "Mode"), ctx);
  }
};
template <>
struct fmt::formatter<ferry::quant::Granularity> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(ferry::quant::Granularity v, Ctx& ctx) const {
    return write(ferry::quant::detail::enum_string(v, "Granularity"), ctx);
  }
};
template <>
struct fmt::formatter<ferry::quant::Storage> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(ferry::quant::Storage v, Ctx& ctx) const {
    return write(ferry::quant::detail::enum_string(v, "Storage"), ctx);
  }
};
template <>
struct fmt::formatter<ferry::quant::ScaleType> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(ferry::quant::ScaleType v, Ctx& ctx) const {
    return write(ferry::quant::detail::enum_string(v, "ScaleType"), ctx);
  }
};

/// Prints e.g. `int4 affine per_block[32] packed_u8 scale=f16`, `int8 symmetric per_axis(0)
/// native scale=f32`, `fp4_e2m1 symmetric per_block[16] packed_u8 scale=ue4m3 tensor_scale=f32`.
template <>
struct fmt::formatter<ferry::quant::Scheme> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::quant::Scheme& s, Ctx& ctx) const {
    using ferry::quant::Granularity;
    std::string g = fmt::format("{}", s.granularity);
    if (s.granularity == Granularity::per_axis) g += fmt::format("({})", s.axis);
    if (s.granularity == Granularity::per_block) {
      g += '[';
      g += ferry::detail::joined(s.block, ",");
      g += ']';
    }
    std::string out =
        fmt::format("{} {} {} {} scale={}", s.value, s.mode, g, s.storage, s.scale_type);
    if (s.tensor_scale) out += fmt::format(" tensor_scale={}", *s.tensor_scale);
    if (!s.codebook.empty()) out += fmt::format(" codebook[{}]", s.codebook.size());
    return write(out, ctx);
  }
};

namespace ferry::quant {

inline std::ostream& operator<<(std::ostream& os, ValueType v) {
  return os << fmt::format("{}", v);
}
inline std::ostream& operator<<(std::ostream& os, Mode v) { return os << fmt::format("{}", v); }
inline std::ostream& operator<<(std::ostream& os, Granularity v) {
  return os << fmt::format("{}", v);
}
inline std::ostream& operator<<(std::ostream& os, Storage v) { return os << fmt::format("{}", v); }
inline std::ostream& operator<<(std::ostream& os, ScaleType v) {
  return os << fmt::format("{}", v);
}
inline std::ostream& operator<<(std::ostream& os, const Scheme& s) {
  return os << fmt::format("{}", s);
}

inline void Scheme::validate() const {
  const auto bad = [this](const std::string& why) {
    ferry::detail::raise<QuantError>("quant.scheme", "invalid scheme '{}': {}", *this, why);
  };
  if (!detail::name(value)) bad(fmt::format("unknown value type {}", static_cast<int>(value)));
  if (!detail::name(mode)) bad(fmt::format("unknown mode {}", static_cast<int>(mode)));
  if (!detail::name(granularity))
    bad(fmt::format("unknown granularity {}", static_cast<int>(granularity)));
  if (!detail::name(storage)) bad(fmt::format("unknown storage {}", static_cast<int>(storage)));
  if (!detail::name(scale_type))
    bad(fmt::format("unknown scale type {}", static_cast<int>(scale_type)));
  if (tensor_scale && !detail::name(*tensor_scale))
    bad(fmt::format("unknown tensor scale type {}", static_cast<int>(*tensor_scale)));
  if (tensor_scale && granularity == Granularity::per_tensor)
    bad("a tensor scale needs per_axis or per_block granularity (per_tensor already has one "
        "scale for the whole tensor)");
  if (storage == Storage::packed_u8 && bits(value) == 8)
    bad("packed_u8 storage of 8-bit values is the native layout; use native");
  if (is_float(value) && mode == Mode::affine)
    bad(fmt::format("{} values are symmetric only (a float code has no zero point)", value));
  if (!codebook.empty()) {
    if (is_signed(value) || is_float(value))
      bad(fmt::format("a codebook indexes with unsigned values (u8, u4, u2), not {}", value));
    if (mode != Mode::symmetric) bad("a codebook scheme is symmetric (x = codebook[q] * scale)");
    const std::size_t want = std::size_t{1} << bits(value);
    if (codebook.size() != want)
      bad(fmt::format("the codebook holds {} values; {} indexes exactly {}", codebook.size(), value,
                      want));
    for (std::size_t i = 0; i < codebook.size(); ++i) {
      if (!std::isfinite(codebook[i]))
        bad(fmt::format("codebook value {} is {}; the values must be finite", i, codebook[i]));
      if (i > 0 && !(codebook[i - 1] < codebook[i]))
        bad(fmt::format("codebook values {} and {} ({}, {}) are not strictly ascending", i - 1, i,
                        codebook[i - 1], codebook[i]));
    }
  }
  if (mode == Mode::symmetric_full && !is_signed(value))
    bad(
        fmt::format("symmetric_full needs a signed integer value type; {} has no lowest code to "
                    "add (use symmetric)",
                    value));
  if (granularity == Granularity::per_block) {
    if (block.empty()) bad("per_block needs a block shape of at least one dim");
    for (std::size_t i = 0; i < block.size(); ++i)
      if (block[i] < 1) bad(fmt::format("block dim {} is {}, must be >= 1", i, block[i]));
  } else if (!block.empty()) {
    bad(fmt::format("a block shape [{}] is set but the granularity is {}",
                    ::ferry::detail::joined(block, ","), granularity));
  }
  if (granularity != Granularity::per_axis && axis != 0)
    bad(fmt::format("axis {} is set but the granularity is {}", axis, granularity));
}

inline void Scheme::validate_for(const Shape& shape) const {
  validate();
  for (std::size_t i = 0; i < shape.rank(); ++i)
    if (shape[i] < 0)
      ferry::detail::raise<QuantError>(
          "quant.shape", "scheme '{}' over shape {}: dim {} is negative", *this, shape, i);
  const auto r = static_cast<std::int64_t>(shape.rank());
  if (granularity == Granularity::per_axis && (axis < -r || axis >= r))
    ferry::detail::raise<QuantError>(
        "quant.shape", "scheme '{}' over shape {}: axis {} is out of range for rank {}", *this,
        shape, axis, r);
  if (granularity == Granularity::per_block && static_cast<std::int64_t>(block.size()) > r)
    ferry::detail::raise<QuantError>(
        "quant.shape", "scheme '{}' over shape {}: block rank {} is greater than shape rank {}",
        *this, shape, block.size(), r);
}

}  // namespace ferry::quant

// Where a scheme puts its parameters over a shape: param_shape, num_params, data_bytes,
// ParamMap, param_index.
#include "ferry/quant/geometry.hpp"

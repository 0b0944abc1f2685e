// Ferry: quantization schemes (value type, mode, granularity, storage, scale type) and the
// shapes of their parameter grids.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/detail/text.hpp"
#include "ferry/error.hpp"
#include "ferry/shape.hpp"

namespace ferry::quant {

/// Integer type of the quantized values. Sub-byte types are two's complement (signed) or
/// plain binary (unsigned) in a 4- or 2-bit field.
enum class ValueType : std::uint8_t { i8, u8, i4, u4, i2, u2 };
/// symmetric: `x = q * scale` (no offset); affine: `x = (q - offset) * scale`.
enum class Mode : std::uint8_t { symmetric, affine };
/// Which elements share one scale (and offset).
enum class Granularity : std::uint8_t { per_tensor, per_axis, per_block };
/// How values are laid out in bytes: one value per byte (`native`, sign-extended), or packed
/// densely into bytes (`packed_u8`) or little-endian 32-bit words (`packed_u32`).
enum class Storage : std::uint8_t { native, packed_u8, packed_u32 };
/// The type each scale is stored as. Arithmetic always uses the stored (rounded) value.
enum class ScaleType : std::uint8_t { f32, f16, bf16 };

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
  }
  return nullptr;
}
inline const char* name(Mode m) noexcept {
  switch (m) {
    case Mode::symmetric:
      return "symmetric";
    case Mode::affine:
      return "affine";
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
      return 8;
    case ValueType::i4:
    case ValueType::u4:
      return 4;
    case ValueType::i2:
    case ValueType::u2:
      return 2;
  }
  ferry::detail::raise<QuantError>("quant.scheme", "unknown value type {}", static_cast<int>(v));
}

inline bool is_signed(ValueType v) {
  (void)bits(v);  // rejects corrupt enumerators
  return v == ValueType::i8 || v == ValueType::i4 || v == ValueType::i2;
}

/// Smallest quantized value. Symmetric signed ranges drop the most negative code (int8 ->
/// [-127, 127]) so that the range is symmetric around zero; symmetric unsigned is [0, 2^b-1].
inline std::int32_t qmin(ValueType v, Mode m) {
  const int b = bits(v);
  if (!is_signed(v)) return 0;
  const std::int32_t lowest = -(std::int32_t{1} << (b - 1));
  return m == Mode::symmetric ? lowest + 1 : lowest;
}

/// Largest quantized value (the same for both modes).
inline std::int32_t qmax(ValueType v, Mode /*mode*/) {
  const int b = bits(v);
  return is_signed(v) ? (std::int32_t{1} << (b - 1)) - 1 : (std::int32_t{1} << b) - 1;
}

/// Bytes one stored scale takes: 4 (f32) or 2 (f16, bf16).
inline std::size_t scale_bytes(ScaleType s) {
  switch (s) {
    case ScaleType::f32:
      return 4;
    case ScaleType::f16:
    case ScaleType::bf16:
      return 2;
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

  static Scheme of(ValueType v) {
    Scheme s;
    s.value = v;
    return s;
  }
  [[nodiscard]] Scheme symmetric() const {
    return with([](Scheme& s) { s.mode = Mode::symmetric; });
  }
  [[nodiscard]] Scheme affine() const {
    return with([](Scheme& s) { s.mode = Mode::affine; });
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
/// native scale=f32`.
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
    return write(fmt::format("{} {} {} {} scale={}", s.value, s.mode, g, s.storage, s.scale_type),
                 ctx);
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
  if (storage == Storage::packed_u8 && bits(value) == 8)
    bad("packed_u8 storage of 8-bit values is the native layout; use native");
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

namespace detail {

/// ceil(a / b) for a >= 0, b >= 1 (checked form: a block of 2^63 - 1 must not overflow it).
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept {
  return ferry::detail::ceil_div_i64(a, b);
}

/// The scheme seen over every dim of the shape: for each dim the extent of one block (clamped
/// to [1, dim]) and the number of blocks along it. Per-tensor and the non-axis dims of
/// per-axis are "whole" dims: one block along them, whatever their size.
struct FullBlocks {
  std::vector<std::int64_t> block;  // 1 <= block[i] <= max(dim, 1)
  std::vector<std::int64_t> grid;   // blocks along each dim; the param grid, row-major
  std::vector<bool> whole;
};

/// Assumes `s.validate_for(shape)` passed.
inline FullBlocks full_blocks(const Scheme& s, const Shape& shape) {
  const std::size_t r = shape.rank();
  FullBlocks f{std::vector<std::int64_t>(r), std::vector<std::int64_t>(r), std::vector<bool>(r)};
  const std::size_t first_blocked =
      s.granularity == Granularity::per_block ? r - s.block.size() : r;
  const std::size_t ax =
      s.granularity == Granularity::per_axis
          ? static_cast<std::size_t>(s.axis < 0 ? s.axis + static_cast<std::int64_t>(r) : s.axis)
          : r;
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t d = shape[i];
    const std::int64_t d1 = std::max<std::int64_t>(d, 1);
    if (s.granularity == Granularity::per_tensor ||
        (s.granularity == Granularity::per_axis && i != ax)) {
      f.block[i] = d1;
      f.grid[i] = 1;
      f.whole[i] = true;
    } else if (s.granularity == Granularity::per_axis || i < first_blocked) {
      f.block[i] = 1;
      f.grid[i] = d;
    } else {
      f.block[i] = std::min(s.block[i - first_blocked], d1);
      f.grid[i] = ceil_div(d, f.block[i]);
    }
  }
  return f;
}

/// @brief The element -> parameter map in its smallest form, the one the kernels walk.
///
/// Dims of size 1 are dropped and neighbours merged where the map allows (a dim whose block
/// spans it folds into the dim before it; a dim with block 1 folds into a following dim its
/// block divides), so per-tensor becomes one dim with one block, per-axis(0) one dim with
/// blocks of the row size, and per_block[32] over [N, K] with 32 | K one dim of blocks of 32.
/// The parameter of canonical coords c is sum_i (c_i / block_i) * gstride_i. Two layouts with
/// equal Canon map every flat element to the same parameter, which is what q_reshape checks.
struct Canon {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> block;
  std::vector<std::int64_t> gstride;
  std::int64_t numel = 0;
  std::int64_t nparams = 0;
  friend bool operator==(const Canon&, const Canon&) = default;
};

inline Canon make_canon(const Scheme& s, const Shape& shape) {
  const FullBlocks f = full_blocks(s, shape);
  Canon c;
  c.numel = shape.numel();
  c.nparams = 1;
  for (const std::int64_t g : f.grid) c.nparams *= g;
  if (c.numel == 0) return c;
  // Walk from the innermost dim outwards, merging into the front of the result.
  std::vector<std::int64_t> dims, block;  // reversed: innermost first
  for (std::size_t i = shape.rank(); i-- > 0;) {
    const std::int64_t d = shape[i], b = f.block[i];
    if (d == 1) continue;
    if (!dims.empty()) {
      std::int64_t& id = dims.back();
      std::int64_t& ib = block.back();
      if (ib == id) {  // the inner dim is one block: it folds into this one
        ib = b * id;
        id = d * id;
        continue;
      }
      if (b == 1 && id % ib == 0) {  // this dim has block 1 and the inner blocks tile exactly
        id = d * id;
        continue;
      }
    }
    dims.push_back(d);
    block.push_back(b);
  }
  if (dims.empty()) {
    dims.push_back(1);
    block.push_back(1);
  }
  c.dims.assign(dims.rbegin(), dims.rend());
  c.block.assign(block.rbegin(), block.rend());
  c.gstride.assign(c.dims.size(), 1);
  for (std::size_t i = c.dims.size() - 1; i-- > 0;)
    c.gstride[i] = c.gstride[i + 1] * ceil_div(c.dims[i + 1], c.block[i + 1]);
  return c;
}

}  // namespace detail

/// Shape of the scale (and offset) grid: per_tensor `[]`; per_axis `[shape[axis]]`; per_block
/// over the trailing k dims: the leading dims followed by ceil(dim_i / block_i) (ONNX blocked
/// quantization, generalised to k dims).
inline Shape param_shape(const Scheme& s, const Shape& shape) {
  s.validate_for(shape);
  switch (s.granularity) {
    case Granularity::per_tensor:
      return Shape{};
    case Granularity::per_axis:
      return Shape{shape[shape.axis(s.axis, "param_shape")]};
    case Granularity::per_block: {
      std::vector<std::int64_t> dims(shape.begin(), shape.end());
      const std::size_t first = dims.size() - s.block.size();
      for (std::size_t i = first; i < dims.size(); ++i)
        dims[i] = detail::ceil_div(dims[i], s.block[i - first]);
      return Shape{std::move(dims)};
    }
  }
  return Shape{};
}

/// Number of scales (and, for affine, offsets) the scheme needs for `shape`.
inline std::int64_t num_params(const Scheme& s, const Shape& shape) {
  return param_shape(s, shape).numel();
}

/// Bytes of value data for `numel` values: native numel; packed_u8 ceil(numel*bits/8);
/// packed_u32 4*ceil(numel*bits/32).
/// Computed without forming numel * bits, so it cannot wrap (numel >= 0; the result is at most
/// numel bytes, as values are at most 8 bits).
inline std::size_t data_bytes(ValueType v, Storage st, std::int64_t numel) {
  const int b = bits(v);
  switch (st) {
    case Storage::native:
      return static_cast<std::size_t>(numel);
    case Storage::packed_u8:
      return static_cast<std::size_t>(ferry::detail::packed_bytes_i64(numel, b).value_or(0));
    case Storage::packed_u32: {  // whole 32-bit words
      const std::int64_t words = numel / 32 * b + ((numel % 32) * b + 31) / 32;
      return 4 * static_cast<std::size_t>(words);
    }
  }
  ferry::detail::raise<QuantError>("quant.scheme", "unknown storage {}", static_cast<int>(st));
}
inline std::size_t data_bytes(const Scheme& s, std::int64_t numel) {
  return data_bytes(s.value, s.storage, numel);
}

/// @brief Maps a flat (row-major) element index to the index of its parameter.
///
/// @code
///   ParamMap map(Scheme{}.per_block({2, 4}), Shape{4, 8});
///   map(13);   // element (1, 5) -> block (0, 1) -> param 1
/// @endcode
///
/// Built once (validates the scheme), then each lookup is a few divisions over the merged
/// dims (usually one or two), with no branching on the granularity.
class ParamMap {
 public:
  ParamMap(const Scheme& s, const Shape& shape) {
    s.validate_for(shape);
    canon_ = detail::make_canon(s, shape);
  }
  /// Param of flat element `flat`, 0 <= flat < numel() (not checked).
  [[nodiscard]] std::int64_t operator()(std::int64_t flat) const noexcept {
    std::int64_t p = 0;
    for (std::size_t i = canon_.dims.size(); i-- > 0;) {
      const std::int64_t c = flat % canon_.dims[i];
      flat /= canon_.dims[i];
      p += (c / canon_.block[i]) * canon_.gstride[i];
    }
    return p;
  }
  [[nodiscard]] std::int64_t num_params() const noexcept { return canon_.nparams; }
  [[nodiscard]] std::int64_t numel() const noexcept { return canon_.numel; }

 private:
  detail::Canon canon_;
};

/// One-off lookup of the param of flat element `flat`; IndexError when out of range. Build a
/// ParamMap for many lookups.
inline std::int64_t param_index(const Scheme& s, const Shape& shape, std::int64_t flat) {
  const ParamMap map(s, shape);
  if (flat < 0 || flat >= map.numel())
    ferry::detail::raise<IndexError>(
        "quant.index", "param_index: element {} is out of range for shape {} ({} elements)", flat,
        shape, map.numel());
  return map(flat);
}

}  // namespace ferry::quant

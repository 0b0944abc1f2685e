// Ferry: QuantizedParts, the host-side form of a quantized tensor, and its validation.
// SPDX-License-Identifier: MIT
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ferry/detail/fresh_memory.hpp"
#include "ferry/error.hpp"
#include "ferry/quant/half.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

namespace ferry::quant {

/// @brief A quantized tensor on the host: scheme, shape and three byte buffers. Transfers and
/// backend bridges copy exactly these buffers, so a tensor arrives bit for bit.
///
/// @code
///   auto s = Scheme::of(ValueType::i4).packed_u8();            // symmetric, per tensor, f32 scale
///   std::vector<std::byte> data{std::byte{0xF1}, std::byte{0x87}, std::byte{0x03}};
///   std::vector<std::byte> scale(4);
///   store_scale(ScaleType::f32, 0.5f, scale.data());
///   auto q = QuantizedParts::make(s, Shape{5}, data, scale, {});   // values {1,-1,7,-8,3}
/// @endcode
///
/// - `data`: the values in row-major order over the whole tensor, packed per `scheme.storage`.
/// - `scales`: num_params scales of `scheme.scale_type`, row-major over param_shape,
///   little-endian; with two levels (`scheme.tensor_scale`), then the tensor's scale.
/// - `offsets`: affine only, one byte per param (int8 for signed value types, uint8 for
///   unsigned), each within [qmin, qmax]; empty for symmetric.
///
/// validate() checks sizes, scales (finite, > 0), offsets and zero padding; it does not scan
/// the values themselves (that would cost a pass over the data on every transfer). The
/// kernels check sizes on every call, so a hand-built, unvalidated value can give wrong numbers
/// but never reads out of bounds.
struct QuantizedParts {
  Scheme scheme;
  Shape shape;
  std::vector<std::byte> data;
  std::vector<std::byte> scales;
  std::vector<std::byte> offsets;

  /// Builds and validates.
  static QuantizedParts make(Scheme scheme, Shape shape, std::vector<std::byte> data,
                             std::vector<std::byte> scales, std::vector<std::byte> offsets) {
    QuantizedParts p{std::move(scheme), std::move(shape), std::move(data), std::move(scales),
                     std::move(offsets)};
    p.validate();
    return p;
  }

  /// Throws QuantError naming the scheme, the shape, and what is wrong (expected vs actual
  /// byte counts, the bad scale or offset and its index, nonzero padding).
  void validate() const;

  [[nodiscard]] std::size_t nbytes() const noexcept {
    return data.size() + scales.size() + offsets.size();
  }

  /// The stored scale of param `param` as f32 (with two levels: the block's own scale, which
  /// the tensor scale multiplies); IndexError when out of range.
  [[nodiscard]] float scale(std::int64_t param) const {
    const std::size_t sb = scale_bytes(scheme.scale_type);
    check_param(param, group_scales(), "scale");
    return load_scale(scheme.scale_type, scales.data() + static_cast<std::size_t>(param) * sb);
  }
  /// The stored tensor-level scale as f32; 1 when the scheme has one level. QuantError when the
  /// buffer is too short to hold it.
  [[nodiscard]] float tensor_scale() const {
    if (!scheme.tensor_scale) return 1.0f;
    const std::size_t tb = tensor_scale_bytes(scheme);
    if (scales.size() < tb)
      ferry::detail::raise<QuantError>("quant.scales",
                                       "'{}' over shape {}: scales hold {} bytes, too few for the "
                                       "tensor scale ({} bytes)",
                                       scheme, shape, scales.size(), tb);
    return load_scale(*scheme.tensor_scale, scales.data() + (scales.size() - tb));
  }
  /// The offset of param `param`; 0 for symmetric schemes. IndexError when out of range.
  [[nodiscard]] std::int32_t offset(std::int64_t param) const {
    if (scheme.mode != Mode::affine) {
      check_param(param, group_scales(), "offset");
      return 0;
    }
    check_param(param, offsets.size(), "offset");
    const auto b = static_cast<unsigned char>(offsets[static_cast<std::size_t>(param)]);
    return is_signed(scheme.value) ? static_cast<std::int32_t>(static_cast<signed char>(b))
                                   : static_cast<std::int32_t>(b);
  }

  friend bool operator==(const QuantizedParts&, const QuantizedParts&) = default;

 private:
  // Per-group scales the buffer holds (the tensor scale, when there is one, excluded).
  [[nodiscard]] std::size_t group_scales() const {
    const std::size_t tb = tensor_scale_bytes(scheme);
    return scales.size() < tb ? 0 : (scales.size() - tb) / scale_bytes(scheme.scale_type);
  }
  static void check_param(std::int64_t param, std::size_t n, const char* what) {
    if (param < 0 || static_cast<std::size_t>(param) >= n)
      ferry::detail::raise<IndexError>("quant.param", "{}: param {} is out of range ({} params)",
                                       what, param, n);
  }
};

/// Where the kernels that make new parts (quantize, quantize_dynamic) get their byte vectors.
/// A backend that recycles memory hands out empty vectors with spare capacity, so the parts
/// are written into warm pages; without one (nullptr) the vectors are freshly allocated.
class VectorSource {
 public:
  /// An empty vector with capacity for at least `n` bytes.
  [[nodiscard]] virtual std::vector<std::byte> take(std::size_t n) const = 0;

 protected:
  VectorSource() = default;
  VectorSource(const VectorSource&) = default;
  VectorSource& operator=(const VectorSource&) = default;
  ~VectorSource() = default;
};

namespace detail {

/// Resizes an empty `v` to `n` zero bytes; fresh memory of 4 MiB or more is made ready first
/// (huge pages, its faults taken by every thread: detail::prepare_fresh), so the zero fill
/// does not fault 64 MiB in on one thread.
inline void alloc_zeroed(std::vector<std::byte>& v, std::size_t n) {
  if (v.capacity() < n) {
    v.reserve(n);
    ferry::detail::prepare_fresh(v.data(), n);
  }
  v.resize(n);
}

/// The O(1) checks every kernel runs: scheme vs shape and the three buffer sizes.
inline void check_sizes(const QuantizedParts& p) {
  p.scheme.validate_for(p.shape);
  const std::int64_t numel = p.shape.numel();
  const std::int64_t np = num_params(p.scheme, p.shape);
  const std::size_t want_data = data_bytes(p.scheme, numel);
  if (p.data.size() != want_data)
    ferry::detail::raise<QuantError>(
        "quant.data",
        "'{}' over shape {}: data holds {} bytes, expected {} ({} values of {} bits, {})", p.scheme,
        p.shape, p.data.size(), want_data, numel, slot_bits(p.scheme.value, p.scheme.storage),
        p.scheme.storage);
  const std::size_t tb = tensor_scale_bytes(p.scheme);
  const std::size_t want_scales =
      static_cast<std::size_t>(np) * scale_bytes(p.scheme.scale_type) + tb;
  if (p.scales.size() != want_scales)
    ferry::detail::raise<QuantError>(
        "quant.scales",
        "'{}' over shape {}: scales hold {} bytes, expected {} ({} params of {} bytes{})", p.scheme,
        p.shape, p.scales.size(), want_scales, np, scale_bytes(p.scheme.scale_type),
        tb ? fmt::format(", then a tensor scale of {}", tb) : std::string());
  const std::size_t want_offsets = p.scheme.mode == Mode::affine ? static_cast<std::size_t>(np) : 0;
  if (p.offsets.size() != want_offsets)
    ferry::detail::raise<QuantError>(
        "quant.offsets", "'{}' over shape {}: offsets hold {} bytes, expected {} ({})", p.scheme,
        p.shape, p.offsets.size(), want_offsets,
        p.scheme.mode == Mode::affine ? "one per param" : "symmetric schemes have no offsets");
}

}  // namespace detail

inline void QuantizedParts::validate() const {
  detail::check_sizes(*this);
  const auto np = static_cast<std::int64_t>(group_scales());
  const float t = tensor_scale();
  if (!(std::isfinite(t) && t > 0.0f))
    ferry::detail::raise<QuantError>(
        "quant.scale", "'{}' over shape {}: the tensor scale {} must be finite and > 0", scheme,
        shape, t);
  for (std::int64_t i = 0; i < np; ++i) {
    const float s = scale(i);
    if (!(std::isfinite(s) && s > 0.0f && std::isfinite(s * t) && s * t > 0.0f))
      ferry::detail::raise<QuantError>(
          "quant.scale", "'{}' over shape {}: scale {} of param {}{} must be finite and > 0",
          scheme, shape, s, i,
          scheme.tensor_scale ? fmt::format(" (times the tensor scale {}: {})", t, s * t)
                              : std::string());
  }
  if (scheme.mode == Mode::affine) {
    const std::int32_t lo = qmin(scheme.value, scheme.mode), hi = qmax(scheme.value, scheme.mode);
    for (std::int64_t i = 0; i < np; ++i) {
      const std::int32_t o = offset(i);
      if (o < lo || o > hi)
        ferry::detail::raise<QuantError>(
            "quant.offset", "'{}' over shape {}: offset {} of param {} is outside [{}, {}]", scheme,
            shape, o, i, lo, hi);
    }
  }
  // Padding bits past the last value must be zero, so that equal tensors have equal bytes.
  const std::size_t used_bits =
      static_cast<std::size_t>(shape.numel()) *
      static_cast<std::size_t>(detail::slot_bits(scheme.value, scheme.storage));
  for (std::size_t byte = used_bits / 8; byte < data.size(); ++byte) {
    const unsigned keep = byte == used_bits / 8 ? (1u << (used_bits % 8)) - 1u : 0u;
    const auto b = static_cast<unsigned>(data[byte]);
    if (b & ~keep)
      ferry::detail::raise<QuantError>(
          "quant.padding",
          "'{}' over shape {}: padding bits after the last value must be zero, byte {} of {} is "
          "{:#04x}",
          scheme, shape, byte, data.size(), b);
  }
}

/// Checks the parameters given to quantize() for scheme `s` over `shape`: the scheme itself, one
/// scale per param group (finite and > 0, also once rounded to the scale type) and, for affine
/// schemes, one offset per group within [qmin, qmax] (symmetric: none). With two levels
/// (`s.tensor_scale`), `scales` holds the group scales and then the tensor scale, and every
/// product of the two (as stored) must be finite and > 0 too. The router calls it at the call,
/// so async callers hear of a bad parameter at once; quant::quantize calls it too.
inline void check_params(const Scheme& s, const Shape& shape, std::span<const float> scales,
                         std::span<const std::int32_t> offsets) {
  s.validate_for(shape);
  const std::int64_t np = num_params(s, shape);
  const std::size_t want_scales = static_cast<std::size_t>(np) + (s.tensor_scale ? 1 : 0);
  if (scales.size() != want_scales)
    ferry::detail::raise<QuantError>(
        "quant.args",
        "quantize: '{}' over shape {}: {} scales given, expected {} (param shape {}{})", s, shape,
        scales.size(), want_scales, param_shape(s, shape),
        s.tensor_scale ? ", then the tensor scale" : "");
  const std::size_t want_offsets = s.mode == Mode::affine ? static_cast<std::size_t>(np) : 0;
  if (offsets.size() != want_offsets)
    ferry::detail::raise<QuantError>(
        "quant.args", "quantize: '{}' over shape {}: {} offsets given, expected {} ({})", s, shape,
        offsets.size(), want_offsets,
        s.mode == Mode::affine ? "one per param" : "symmetric schemes take no offsets");
  const auto check_one = [&](std::size_t p, ScaleType type, const char* what) {
    const float v = scales[p], stored = round_to(type, v);
    if (!(std::isfinite(v) && v > 0.0f) || !(std::isfinite(stored) && stored > 0.0f))
      ferry::detail::raise<QuantError>(
          "quant.scale",
          "quantize: '{}' over shape {}: {} {} of param {} is {} as {}; scales must be finite "
          "and > 0",
          s, shape, what, v, p, stored, type);
    if (type == ScaleType::ue8m0 && stored != v)
      ferry::detail::raise<QuantError>(
          "quant.scale",
          "quantize: '{}' over shape {}: {} {} of param {} is not a power of two, which a "
          "ue8m0 scale must be (the next one up is {})",
          s, shape, what, v, p, stored);
    return stored;
  };
  const float t = s.tensor_scale
                      ? check_one(static_cast<std::size_t>(np), *s.tensor_scale, "tensor scale")
                      : 1.0f;
  for (std::size_t p = 0; p < static_cast<std::size_t>(np); ++p) {
    const float b = check_one(p, s.scale_type, "scale");
    if (!(std::isfinite(b * t) && b * t > 0.0f))
      ferry::detail::raise<QuantError>(
          "quant.scale",
          "quantize: '{}' over shape {}: scale {} of param {} times the tensor scale {} is {}; "
          "scales must be finite and > 0",
          s, shape, b, p, t, b * t);
  }
  const std::int32_t qn = qmin(s.value, s.mode), qx = qmax(s.value, s.mode);
  for (std::size_t p = 0; p < offsets.size(); ++p)
    if (offsets[p] < qn || offsets[p] > qx)
      ferry::detail::raise<QuantError>(
          "quant.offset", "quantize: '{}' over shape {}: offset {} of param {} is outside [{}, {}]",
          s, shape, offsets[p], p, qn, qx);
}

}  // namespace ferry::quant

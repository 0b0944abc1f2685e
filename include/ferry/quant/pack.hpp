// Ferry: packing quantized values into bytes and words, and unpacking them.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "ferry/error.hpp"
#include "ferry/quant/scheme.hpp"

// Layout (ONNX int4/uint4, extended to 2 bits): the whole flattened tensor is one bit stream.
// 4-bit: two values per byte, element 2k in the low nibble; 2-bit: four per byte, element 4k in
// bits 0-1; signed values as two's complement in their field. packed_u32: element k of a word in
// bits [k*b, (k+1)*b), words little-endian -- which is byte for byte the packed_u8 stream padded
// with zero bytes to a multiple of 4 (8-bit values go 4 to a word). native: one value per byte,
// sign-extended. Padding bits after the last value are always zero.

namespace ferry::quant {
namespace detail {

/// Bits one value occupies in the stream: 8 for native storage, else the value type's bits.
inline int slot_bits(ValueType v, Storage s) { return s == Storage::native ? 8 : bits(v); }

/// Lowest and highest value a value type can hold (its full two's complement / binary range).
inline std::int32_t type_min(ValueType v) { return is_signed(v) ? -(1 << (bits(v) - 1)) : 0; }
inline std::int32_t type_max(ValueType v) {
  return is_signed(v) ? (1 << (bits(v) - 1)) - 1 : (1 << bits(v)) - 1;
}

// Loops run in blocks of kPackLanes bytes with a constant trip count so that GCC vectorises
// them at -O2 as well (its -O2 cost model refuses loops that need a scalar epilogue).
inline constexpr std::int64_t kPackLanes = 16;

template <int B>
inline unsigned char pack_byte(const std::int32_t* v) noexcept {
  constexpr int per = 8 / B;
  constexpr std::uint32_t mask = (1u << B) - 1u;
  std::uint32_t byte = 0;
  for (int j = 0; j < per; ++j) byte |= (static_cast<std::uint32_t>(v[j]) & mask) << (j * B);
  return static_cast<unsigned char>(byte);
}

template <int B>
inline void pack_bits(const std::int32_t* __restrict v, std::int64_t n,
                      unsigned char* __restrict out) noexcept {
  constexpr int per = 8 / B;
  constexpr std::uint32_t mask = (1u << B) - 1u;
  const std::int64_t full = n / per;
  std::int64_t k = 0;
  for (; k + kPackLanes <= full; k += kPackLanes)
    for (int j = 0; j < kPackLanes; ++j) out[k + j] = pack_byte<B>(v + (k + j) * per);
  for (; k < full; ++k) out[k] = pack_byte<B>(v + k * per);
  if (const std::int64_t rest = n - full * per) {  // last, partial byte: padding bits are zero
    std::uint32_t byte = 0;
    for (std::int64_t j = 0; j < rest; ++j)
      byte |= (static_cast<std::uint32_t>(v[full * per + j]) & mask) << (j * B);
    out[full] = static_cast<unsigned char>(byte);
  }
}

template <int B, bool Signed>
inline std::int32_t field(unsigned char byte, int j) noexcept {
  if constexpr (Signed) {
    // Move the field to the top of a 32-bit word, then shift back arithmetically.
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(byte) << (32 - B - j * B)) >>
           (32 - B);
  } else {
    return static_cast<std::int32_t>((byte >> (j * B)) & ((1u << B) - 1u));
  }
}

template <int B, bool Signed>
inline void unpack_bits(const unsigned char* __restrict in, std::int64_t first, std::int64_t n,
                        std::int32_t* __restrict out) noexcept {
  constexpr int per = 8 / B;
  std::int64_t i = 0;
  // Head: values before the first byte boundary.
  for (; i < n && (first + i) % per != 0; ++i) {
    const std::int64_t e = first + i;
    out[i] = field<B, Signed>(in[e / per], static_cast<int>(e % per));
  }
  const unsigned char* __restrict src = in + (first + i) / per;
  const std::int64_t full = (n - i) / per;
  std::int32_t* __restrict dst = out + i;
  std::int64_t k = 0;
  for (; k + kPackLanes <= full; k += kPackLanes)
    for (int b = 0; b < kPackLanes; ++b)
      for (int j = 0; j < per; ++j) dst[(k + b) * per + j] = field<B, Signed>(src[k + b], j);
  for (; k < full; ++k)
    for (int j = 0; j < per; ++j) dst[k * per + j] = field<B, Signed>(src[k], j);
  i += full * per;
  for (; i < n; ++i) {
    const std::int64_t e = first + i;
    out[i] = field<B, Signed>(in[e / per], static_cast<int>(e % per));
  }
}

template <class T>
inline void widen(const T* __restrict s, std::int64_t n, std::int32_t* __restrict out) noexcept {
  std::int64_t i = 0;
  for (; i + kPackLanes <= n; i += kPackLanes)
    for (int j = 0; j < kPackLanes; ++j) out[i + j] = s[i + j];
  for (; i < n; ++i) out[i] = s[i];
}

inline void narrow(const std::int32_t* __restrict v, std::int64_t n,
                   unsigned char* __restrict o) noexcept {
  std::int64_t i = 0;
  for (; i + kPackLanes <= n; i += kPackLanes)
    for (int j = 0; j < kPackLanes; ++j) o[i + j] = static_cast<unsigned char>(v[i + j]);
  for (; i < n; ++i) o[i] = static_cast<unsigned char>(v[i]);
}

/// Packs n values (already in range) as elements [first, first+n) of the stream. `first` must
/// sit on a byte boundary (first * slot / 8 whole); bytes are written, never read, so ranges
/// that start on distinct byte boundaries can be packed in parallel.
inline void pack_range(int slot, const std::int32_t* v, std::int64_t first, std::int64_t n,
                       unsigned char* out) noexcept {
  switch (slot) {
    case 8:
      narrow(v, n, out + first);
      break;
    case 4:
      pack_bits<4>(v, n, out + first / 2);
      break;
    default:
      pack_bits<2>(v, n, out + first / 4);
      break;
  }
}

/// Unpacks elements [first, first+n) of the stream into `out` (any `first`).
inline void unpack_range(int slot, bool is_signed, const unsigned char* in, std::int64_t first,
                         std::int64_t n, std::int32_t* out) noexcept {
  switch (slot) {
    case 8:
      if (is_signed)
        widen(reinterpret_cast<const signed char*>(in) + first, n, out);
      else
        widen(in + first, n, out);
      break;
    case 4:
      is_signed ? unpack_bits<4, true>(in, first, n, out)
                : unpack_bits<4, false>(in, first, n, out);
      break;
    default:
      is_signed ? unpack_bits<2, true>(in, first, n, out)
                : unpack_bits<2, false>(in, first, n, out);
      break;
  }
}

}  // namespace detail

/// Packs `values` (one int32 per value, each within the value type's full range, e.g. [-8, 7]
/// for int4 and [0, 255] for uint8) into `out`, which must hold exactly
/// data_bytes(v, s, values.size()) bytes; padding bits and bytes are written as zero.
///
/// @code
///   std::array<std::byte, 3> out;
///   pack(ValueType::i4, Storage::packed_u8, std::array<std::int32_t, 5>{1, -1, 7, -8, 3}, out);
///   // out == {0xF1, 0x87, 0x03}
/// @endcode
inline void pack(ValueType v, Storage s, std::span<const std::int32_t> values,
                 std::span<std::byte> out) {
  const auto n = static_cast<std::int64_t>(values.size());
  const std::size_t need = data_bytes(v, s, n);
  if (out.size() != need)
    ferry::detail::raise<QuantError>("quant.pack",
                                     "pack: {} {} of {} values needs {} bytes, got {} bytes", v, s,
                                     n, need, out.size());
  const std::int32_t lo = detail::type_min(v), hi = detail::type_max(v);
  for (std::int64_t i = 0; i < n; ++i)
    if (values[static_cast<std::size_t>(i)] < lo || values[static_cast<std::size_t>(i)] > hi)
      ferry::detail::raise<QuantError>(
          "quant.pack", "pack: value {} at index {} is outside the {} range [{}, {}]",
          values[static_cast<std::size_t>(i)], i, v, lo, hi);
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  const std::size_t used =
      (static_cast<std::size_t>(n) * static_cast<std::size_t>(detail::slot_bits(v, s)) + 7) / 8;
  detail::pack_range(detail::slot_bits(v, s), values.data(), 0, n, o);
  for (std::size_t i = used; i < need; ++i) o[i] = 0;  // packed_u32 word padding
}

/// Unpacks the first `count` values of `in` into `out` (exactly `count` long); `in` must hold
/// at least the bytes those values occupy.
inline void unpack(ValueType v, Storage s, std::span<const std::byte> in, std::int64_t count,
                   std::span<std::int32_t> out) {
  const int slot = detail::slot_bits(v, s);
  if (count < 0 || out.size() != static_cast<std::size_t>(count))
    ferry::detail::raise<QuantError>(
        "quant.pack", "unpack: count {} but the output holds {} values", count, out.size());
  const std::size_t need =
      (static_cast<std::size_t>(count) * static_cast<std::size_t>(slot) + 7) / 8;
  if (in.size() < need)
    ferry::detail::raise<QuantError>("quant.pack",
                                     "unpack: {} {} of {} values needs {} bytes, got {} bytes", v,
                                     s, count, need, in.size());
  detail::unpack_range(slot, is_signed(v), reinterpret_cast<const unsigned char*>(in.data()), 0,
                       count, out.data());
}

/// Value `index` of a packed stream; IndexError when the stream is too short for it.
inline std::int32_t value_at(ValueType v, Storage s, std::span<const std::byte> in,
                             std::int64_t index) {
  const int slot = detail::slot_bits(v, s);
  if (index < 0 ||
      static_cast<std::size_t>(index) * static_cast<std::size_t>(slot) / 8 >= in.size())
    ferry::detail::raise<IndexError>("quant.pack",
                                     "value_at: value {} is outside a {}-byte {} {} stream", index,
                                     in.size(), v, s);
  std::int32_t out = 0;
  detail::unpack_range(slot, is_signed(v), reinterpret_cast<const unsigned char*>(in.data()), index,
                       1, &out);
  return out;
}

}  // namespace ferry::quant

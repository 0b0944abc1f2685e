// Tests for ferry/quant/pack.hpp (hand-written byte patterns) and ferry/quant/parts.hpp.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "matchers.hpp"
#include "ferry/quant/half.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"

using namespace ferry::quant;
using ferry::Shape;

namespace {
using ferry_test::Contains;

std::vector<std::byte> bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (const int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

struct Case {
  ValueType v;
  Storage s;
  std::vector<std::int32_t> values;
  std::vector<std::byte> packed;
};
}  // namespace

TEST_CASE("pack writes the ONNX bit layout, low field first, padding zero", "[quant][pack]") {
  using V = ValueType;
  using S = Storage;
  const std::vector<Case> cases{
      {V::i4, S::packed_u8, {1, -1, 7, -8, 3}, bytes({0xF1, 0x87, 0x03})},
      {V::i4, S::packed_u32, {1, -1, 7, -8, 3}, bytes({0xF1, 0x87, 0x03, 0x00})},
      {V::i4, S::packed_u32, {1, 2, 3, 4, 5, 6, 7, -1}, bytes({0x21, 0x43, 0x65, 0xF7})},
      {V::i4, S::native, {1, -1, 7, -8, 3}, bytes({0x01, 0xFF, 0x07, 0xF8, 0x03})},
      {V::u4, S::packed_u8, {0, 15, 9, 6, 1}, bytes({0xF0, 0x69, 0x01})},
      {V::u4,
       S::packed_u32,
       {1, 2, 3, 4, 5, 6, 7, 8, 9},
       bytes({0x21, 0x43, 0x65, 0x87, 0x09, 0x00, 0x00, 0x00})},
      {V::u4, S::native, {15, 0, 7}, bytes({0x0F, 0x00, 0x07})},
      {V::i2, S::packed_u8, {1, -1, -2, 0, 1}, bytes({0x2D, 0x01})},
      {V::i2, S::packed_u32, {1, -1, -2, 0, 1}, bytes({0x2D, 0x01, 0x00, 0x00})},
      {V::i2, S::native, {-2, 1}, bytes({0xFE, 0x01})},
      {V::u2, S::packed_u8, {3, 2, 1, 0, 3, 3}, bytes({0x1B, 0x0F})},
      {V::u2, S::packed_u32, {3, 2, 1, 0, 3, 3}, bytes({0x1B, 0x0F, 0x00, 0x00})},
      {V::u2, S::native, {3, 1}, bytes({0x03, 0x01})},
      {V::i8, S::native, {-128, 127, -1, 0, 5}, bytes({0x80, 0x7F, 0xFF, 0x00, 0x05})},
      {V::i8,
       S::packed_u32,
       {-128, 127, -1, 0, 5},
       bytes({0x80, 0x7F, 0xFF, 0x00, 0x05, 0x00, 0x00, 0x00})},
      {V::u8, S::native, {255, 0, 128}, bytes({0xFF, 0x00, 0x80})},
      {V::u8, S::packed_u32, {255, 0, 128}, bytes({0xFF, 0x00, 0x80, 0x00})},
      {V::i4, S::packed_u8, {}, bytes({})},
  };
  for (const Case& c : cases) {
    INFO(fmt::format("{} {} {}", c.v, c.s, fmt::join(c.values, ",")));
    std::vector<std::byte> out(data_bytes(c.v, c.s, static_cast<std::int64_t>(c.values.size())),
                               std::byte{0xAA});  // pack must overwrite padding too
    pack(c.v, c.s, c.values, out);
    CHECK(out == c.packed);
    std::vector<std::int32_t> back(c.values.size());
    unpack(c.v, c.s, c.packed, static_cast<std::int64_t>(c.values.size()), back);
    CHECK(back == c.values);
    for (std::size_t i = 0; i < c.values.size(); ++i)
      CHECK(value_at(c.v, c.s, c.packed, static_cast<std::int64_t>(i)) == c.values[i]);
  }
}

TEST_CASE("pack and unpack agree with a naive bit stream for every type, storage and length",
          "[quant][pack]") {
  const ValueType v = GENERATE(ValueType::i8, ValueType::u8, ValueType::i4, ValueType::u4,
                               ValueType::i2, ValueType::u2);
  const Storage s = GENERATE(Storage::native, Storage::packed_u8, Storage::packed_u32);
  if (s == Storage::packed_u8 && bits(v) == 8) return;
  const int b = s == Storage::native ? 8 : bits(v);
  const std::int32_t lo = is_signed(v) ? -(1 << (bits(v) - 1)) : 0;
  const std::int32_t hi = is_signed(v) ? (1 << (bits(v) - 1)) - 1 : (1 << bits(v)) - 1;
  std::mt19937 rng(static_cast<unsigned>(bits(v) * 10 + static_cast<int>(s)));
  std::uniform_int_distribution<std::int32_t> dist(lo, hi);
  for (const std::int64_t n : {1, 2, 3, 5, 7, 16, 31, 33, 100, 257, 1000}) {
    INFO(fmt::format("{} {} n={}", v, s, n));
    std::vector<std::int32_t> vals(static_cast<std::size_t>(n));
    for (auto& x : vals) x = dist(rng);
    // Naive stream: value i occupies bits [i*b, (i+1)*b) of a little-endian bit string.
    std::vector<std::byte> want(data_bytes(v, s, n), std::byte{0});
    for (std::int64_t i = 0; i < n; ++i) {
      const auto field =
          static_cast<std::uint32_t>(vals[static_cast<std::size_t>(i)]) & ((1u << b) - 1u);
      for (int k = 0; k < b; ++k)
        if (field >> k & 1u) {
          const std::int64_t bit = i * b + k;
          want[static_cast<std::size_t>(bit / 8)] |= static_cast<std::byte>(1u << (bit % 8));
        }
    }
    std::vector<std::byte> got(want.size());
    pack(v, s, vals, got);
    REQUIRE(got == want);
    std::vector<std::int32_t> back(vals.size());
    unpack(v, s, got, n, back);
    REQUIRE(back == vals);
    // Unpacking from an unaligned start (what dequantize_range does) matches too.
    for (std::int64_t first : {std::int64_t{1}, std::int64_t{3}, n / 2}) {
      if (first >= n) continue;
      std::vector<std::int32_t> part(static_cast<std::size_t>(n - first));
      detail::unpack_range(b, is_signed(v), reinterpret_cast<const unsigned char*>(got.data()),
                           first, n - first, part.data());
      REQUIRE(part == std::vector<std::int32_t>(vals.begin() + first, vals.end()));
    }
  }
}

TEST_CASE("pack, unpack and value_at reject bad sizes and values", "[quant][pack]") {
  std::vector<std::byte> out(3);
  const std::vector<std::int32_t> bad{1, 2, 8};
  std::vector<std::byte> out2(2);
  REQUIRE_THROWS_MATCHES(pack(ValueType::i4, Storage::packed_u8, bad, out2), ferry::QuantError,
                         Contains("value 8 at index 2 is outside the int4 range [-8, 7]"));
  const std::vector<std::int32_t> neg{0, -1};
  REQUIRE_THROWS_MATCHES(pack(ValueType::u2, Storage::native, neg, out2), ferry::QuantError,
                         Contains("value -1 at index 1 is outside the uint2 range [0, 3]"));
  const std::vector<std::int32_t> five{1, 2, 3, 4, 5};
  std::vector<std::byte> two(2);
  REQUIRE_THROWS_MATCHES(pack(ValueType::i4, Storage::packed_u8, five, two), ferry::QuantError,
                         Contains("needs 3 bytes, got 2 bytes"));
  REQUIRE_THROWS_MATCHES(pack(ValueType::i4, Storage::packed_u32, five, out), ferry::QuantError,
                         Contains("needs 4 bytes, got 3 bytes"));
  std::vector<std::int32_t> back(5);
  REQUIRE_THROWS_MATCHES(unpack(ValueType::i4, Storage::packed_u8, two, 5, back), ferry::QuantError,
                         Contains("needs 3 bytes, got 2 bytes"));
  REQUIRE_THROWS_MATCHES(unpack(ValueType::i4, Storage::packed_u8, out, 4, back), ferry::QuantError,
                         Contains("count 4 but the output holds 5"));
  REQUIRE_THROWS_MATCHES(value_at(ValueType::i4, Storage::packed_u8, two, 4), ferry::IndexError,
                         Contains("value 4 is outside a 2-byte"));
  REQUIRE_THROWS_AS(value_at(ValueType::i4, Storage::packed_u8, two, -1), ferry::IndexError);
  CHECK(value_at(ValueType::i4, Storage::packed_u8, two, 3) == 0);
}

namespace {
std::vector<std::byte> f32_scales(std::initializer_list<float> v) {
  std::vector<std::byte> out(v.size() * 4);
  std::size_t i = 0;
  for (const float f : v) store_scale(ScaleType::f32, f, out.data() + 4 * i++);
  return out;
}
}  // namespace

TEST_CASE("quantized parts validate sizes, scales, offsets and padding", "[quant][parts]") {
  const Scheme s4 = Scheme::of(ValueType::i4).packed_u8();
  const auto data5 = bytes({0xF1, 0x87, 0x03});
  const auto p = QuantizedParts::make(s4, Shape{5}, data5, f32_scales({0.5f}), {});
  CHECK(p.nbytes() == 7);
  CHECK(p.scale(0) == 0.5f);
  CHECK(p.offset(0) == 0);
  REQUIRE_THROWS_MATCHES(p.scale(1), ferry::IndexError, Contains("param 1 is out of range"));
  REQUIRE_THROWS_AS(p.offset(-1), ferry::IndexError);

  SECTION("data of the wrong size names expected and actual bytes") {
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4, Shape{5}, bytes({0xF1, 0x87}), f32_scales({0.5f}), {}),
        ferry::QuantError,
        Contains("data holds 2 bytes, expected 3") && Contains("int4 symmetric per_tensor") &&
            Contains("[5]"));
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4, Shape{5}, bytes({0xF1, 0x87, 0x03, 0x00}), f32_scales({0.5f}), {}),
        ferry::QuantError, Contains("data holds 4 bytes, expected 3"));
    REQUIRE_THROWS_MATCHES(QuantizedParts::make(s4.packed_u32(), Shape{9}, bytes({1, 2, 3, 4, 5}),
                                                f32_scales({0.5f}), {}),
                           ferry::QuantError, Contains("data holds 5 bytes, expected 8"));
  }
  SECTION("scales and offsets of the wrong size name expected and actual bytes") {
    REQUIRE_THROWS_MATCHES(QuantizedParts::make(s4, Shape{5}, data5, f32_scales({0.5f, 0.5f}), {}),
                           ferry::QuantError, Contains("scales hold 8 bytes, expected 4"));
    REQUIRE_THROWS_MATCHES(QuantizedParts::make(s4.scales(ScaleType::f16).per_axis(0), Shape{5},
                                                data5, f32_scales({0.5f}), {}),
                           ferry::QuantError,
                           Contains("scales hold 4 bytes, expected 10 (5 params of 2 bytes)"));
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4, Shape{5}, data5, f32_scales({0.5f}), bytes({0})),
        ferry::QuantError, Contains("offsets hold 1 bytes, expected 0"));
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4.affine(), Shape{5}, data5, f32_scales({0.5f}), {}),
        ferry::QuantError, Contains("offsets hold 0 bytes, expected 1"));
  }
  SECTION("offsets outside [qmin, qmax] name the param and the value") {
    REQUIRE_NOTHROW(
        QuantizedParts::make(s4.affine(), Shape{5}, data5, f32_scales({0.5f}), bytes({0xF8})));
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4.affine(), Shape{5}, data5, f32_scales({0.5f}), bytes({9})),
        ferry::QuantError, Contains("offset 9 of param 0 is outside [-8, 7]"));
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(Scheme::of(ValueType::u2).affine().per_axis(0).packed_u8(), Shape{2},
                             bytes({0x00}), f32_scales({1.f, 1.f}), bytes({3, 4})),
        ferry::QuantError, Contains("offset 4 of param 1 is outside [0, 3]"));
    // -128 is in range for affine int8 (the full range), and reads back sign-extended.
    CHECK(QuantizedParts::make(Scheme::of(ValueType::i8).affine(), Shape{1}, bytes({0}),
                               f32_scales({1.f}), bytes({0x80}))
              .offset(0) == -128);
  }
  SECTION("non-finite or non-positive scales are refused") {
    for (const float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()}) {
      INFO(bad);
      REQUIRE_THROWS_MATCHES(QuantizedParts::make(s4.per_axis(0), Shape{5}, data5,
                                                  f32_scales({1.f, bad, 1.f, 1.f, 1.f}), {}),
                             ferry::QuantError, Contains("of param 1 must be finite and > 0"));
    }
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4.scales(ScaleType::f16), Shape{5}, data5, bytes({0x00, 0x7c}), {}),
        ferry::QuantError, Contains("scale inf of param 0"));
  }
  SECTION("nonzero padding bits are refused") {
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4, Shape{5}, bytes({0xF1, 0x87, 0x13}), f32_scales({0.5f}), {}),
        ferry::QuantError, Contains("padding bits after the last value must be zero, byte 2"));
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4.packed_u32(), Shape{5}, bytes({0xF1, 0x87, 0x03, 0x01}),
                             f32_scales({0.5f}), {}),
        ferry::QuantError, Contains("byte 3 of 4"));
    REQUIRE_THROWS_MATCHES(QuantizedParts::make(Scheme::of(ValueType::u2).packed_u8(), Shape{3},
                                                bytes({0x40}), f32_scales({0.5f}), {}),
                           ferry::QuantError, Contains("padding"));
    REQUIRE_NOTHROW(QuantizedParts::make(Scheme::of(ValueType::u2).packed_u8(), Shape{3},
                                         bytes({0x3F}), f32_scales({0.5f}), {}));
  }
  SECTION("schemes that do not fit the shape are refused") {
    REQUIRE_THROWS_MATCHES(QuantizedParts::make(Scheme::of(ValueType::i8).packed_u8(), Shape{1},
                                                bytes({0}), f32_scales({1.f}), {}),
                           ferry::QuantError, Contains("use native"));
    REQUIRE_THROWS_MATCHES(
        QuantizedParts::make(s4.per_block({1, 4}), Shape{5}, data5, f32_scales({1.f, 1.f}), {}),
        ferry::QuantError, Contains("block rank 2 is greater than shape rank 1"));
  }
}

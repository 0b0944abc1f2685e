// Tests for ferry/quant/scheme.hpp and ferry/quant/half.hpp.
#include <fmt/format.h>

#include <Eigen/Core>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "matchers.hpp"
#include "ferry/quant/half.hpp"
#include "ferry/quant/scheme.hpp"

using namespace ferry::quant;
using ferry::Shape;

namespace {
// Catch2 v2's Contains() matches strings, not exceptions: this one checks what().
using ferry_test::Contains;
}  // namespace

TEST_CASE("value types report their bits, signedness and quantized range", "[quant][scheme]") {
  CHECK(bits(ValueType::i8) == 8);
  CHECK(bits(ValueType::u8) == 8);
  CHECK(bits(ValueType::i4) == 4);
  CHECK(bits(ValueType::u4) == 4);
  CHECK(bits(ValueType::i2) == 2);
  CHECK(bits(ValueType::u2) == 2);
  CHECK(is_signed(ValueType::i8));
  CHECK_FALSE(is_signed(ValueType::u8));
  CHECK(is_signed(ValueType::i2));
  CHECK_FALSE(is_signed(ValueType::u4));

  struct Row {
    ValueType v;
    int sym_lo, sym_hi, aff_lo, aff_hi;
  };
  const Row rows[] = {{ValueType::i8, -127, 127, -128, 127}, {ValueType::u8, 0, 255, 0, 255},
                      {ValueType::i4, -7, 7, -8, 7},         {ValueType::u4, 0, 15, 0, 15},
                      {ValueType::i2, -1, 1, -2, 1},         {ValueType::u2, 0, 3, 0, 3}};
  for (const Row& r : rows) {
    INFO(fmt::format("{}", r.v));
    CHECK(qmin(r.v, Mode::symmetric) == r.sym_lo);
    CHECK(qmax(r.v, Mode::symmetric) == r.sym_hi);
    CHECK(qmin(r.v, Mode::affine) == r.aff_lo);
    CHECK(qmax(r.v, Mode::affine) == r.aff_hi);
  }
  CHECK(scale_bytes(ScaleType::f32) == 4);
  CHECK(scale_bytes(ScaleType::f16) == 2);
  CHECK(scale_bytes(ScaleType::bf16) == 2);
  CHECK_THROWS_AS(bits(static_cast<ValueType>(9)), ferry::QuantError);
}

TEST_CASE("builders return modified copies and reset fields that no longer apply",
          "[quant][scheme]") {
  const Scheme base = Scheme::of(ValueType::i4);
  const Scheme s = base.affine().per_block({32}).packed_u8().scales(ScaleType::f16);
  CHECK(base == Scheme::of(ValueType::i4));
  CHECK(s.value == ValueType::i4);
  CHECK(s.mode == Mode::affine);
  CHECK(s.granularity == Granularity::per_block);
  CHECK(s.block == std::vector<std::int64_t>{32});
  CHECK(s.storage == Storage::packed_u8);
  CHECK(s.scale_type == ScaleType::f16);
  CHECK(s.per_axis(-1).block.empty());
  CHECK(s.per_axis(-1).axis == -1);
  CHECK(s.per_axis(2).per_tensor() == base.affine().packed_u8().scales(ScaleType::f16));
  CHECK(s.per_axis(1).per_block({4}).axis == 0);
  CHECK(s.symmetric().mode == Mode::symmetric);
  CHECK(s.native().storage == Storage::native);
  CHECK(s.packed_u32().storage == Storage::packed_u32);
  CHECK(Scheme{} == Scheme::of(ValueType::i8));
}

TEST_CASE("schemes print compactly with fmt and ostream", "[quant][scheme]") {
  const Scheme s =
      Scheme::of(ValueType::i4).affine().per_block({32}).packed_u8().scales(ScaleType::f16);
  CHECK(fmt::format("{}", s) == "int4 affine per_block[32] packed_u8 scale=f16");
  CHECK(fmt::format("{}", Scheme{}) == "int8 symmetric per_tensor native scale=f32");
  CHECK(fmt::format("{}",
                    Scheme::of(ValueType::u2).per_axis(-1).packed_u32().scales(ScaleType::bf16)) ==
        "uint2 symmetric per_axis(-1) packed_u32 scale=bf16");
  CHECK(fmt::format("{}", Scheme::of(ValueType::u8).per_block({2, 4})) ==
        "uint8 symmetric per_block[2,4] native scale=f32");
  std::ostringstream os;
  os << s << ' ' << ValueType::u4 << ' ' << Mode::symmetric << ' ' << Granularity::per_axis << ' '
     << Storage::packed_u32 << ' ' << ScaleType::bf16;
  CHECK(os.str() ==
        "int4 affine per_block[32] packed_u8 scale=f16 uint4 symmetric per_axis "
        "packed_u32 bf16");
  CHECK(fmt::format("{}", static_cast<ValueType>(42)) == "ValueType(42)");
}

TEST_CASE("invalid schemes are rejected with a message that says why", "[quant][scheme]") {
  REQUIRE_NOTHROW(Scheme{}.validate());
  REQUIRE_THROWS_MATCHES(Scheme::of(ValueType::i8).packed_u8().validate(), ferry::QuantError,
                         Contains("use native") && Contains("[ferry.quant.scheme]"));
  REQUIRE_THROWS_MATCHES(Scheme::of(ValueType::u8).packed_u8().validate(), ferry::QuantError,
                         Contains("use native"));
  REQUIRE_THROWS_MATCHES(Scheme{}.per_block({}).validate(), ferry::QuantError,
                         Contains("at least one dim"));
  REQUIRE_THROWS_MATCHES(Scheme{}.per_block({4, 0}).validate(), ferry::QuantError,
                         Contains("block dim 1 is 0"));
  REQUIRE_THROWS_MATCHES(Scheme{}.per_block({-2}).validate(), ferry::QuantError,
                         Contains("block dim 0 is -2"));
  Scheme stray = Scheme{}.per_tensor();
  stray.block = {4};
  REQUIRE_THROWS_MATCHES(stray.validate(), ferry::QuantError,
                         Contains("granularity is per_tensor"));
  stray = Scheme{}.per_block({4});
  stray.axis = 1;
  REQUIRE_THROWS_MATCHES(stray.validate(), ferry::QuantError, Contains("axis 1 is set"));
  Scheme corrupt;
  corrupt.value = static_cast<ValueType>(17);
  REQUIRE_THROWS_MATCHES(corrupt.validate(), ferry::QuantError, Contains("unknown value type 17"));
  corrupt = Scheme{};
  corrupt.scale_type = static_cast<ScaleType>(5);
  REQUIRE_THROWS_MATCHES(corrupt.validate(), ferry::QuantError, Contains("unknown scale type 5"));

  REQUIRE_NOTHROW(Scheme{}.per_axis(-2).validate_for(Shape{3, 4}));
  REQUIRE_THROWS_MATCHES(Scheme{}.per_axis(2).validate_for(Shape{3, 4}), ferry::QuantError,
                         Contains("axis 2 is out of range for rank 2") && Contains("[3, 4]"));
  REQUIRE_THROWS_MATCHES(Scheme{}.per_axis(-3).validate_for(Shape{3, 4}), ferry::QuantError,
                         Contains("axis -3"));
  REQUIRE_THROWS_MATCHES(Scheme{}.per_block({2, 2, 2}).validate_for(Shape{3, 4}), ferry::QuantError,
                         Contains("block rank 3 is greater than shape rank 2"));
  REQUIRE_THROWS_MATCHES(Scheme{}.validate_for(Shape{3, -1}), ferry::QuantError,
                         Contains("negative"));
  REQUIRE_THROWS_MATCHES(Scheme{}.per_axis(0).validate_for(Shape{}), ferry::QuantError,
                         Contains("rank 0"));
}

TEST_CASE("param shapes follow ONNX blocked quantization generalised to k dims",
          "[quant][scheme]") {
  const Shape sh{3, 5, 7};
  CHECK(param_shape(Scheme{}, sh) == Shape{});
  CHECK(num_params(Scheme{}, sh) == 1);
  CHECK(param_shape(Scheme{}.per_axis(1), sh) == Shape{5});
  CHECK(param_shape(Scheme{}.per_axis(-1), sh) == Shape{7});
  CHECK(param_shape(Scheme{}.per_block({4}), sh) == Shape{3, 5, 2});
  CHECK(param_shape(Scheme{}.per_block({2, 4}), sh) == Shape{3, 3, 2});
  CHECK(param_shape(Scheme{}.per_block({1, 5, 7}), sh) == Shape{3, 1, 1});
  CHECK(param_shape(Scheme{}.per_block({100}), sh) == Shape{3, 5, 1});
  CHECK(num_params(Scheme{}.per_block({2, 4}), sh) == 18);
  CHECK(num_params(Scheme{}.per_axis(0), Shape{0, 4}) == 0);
  CHECK(num_params(Scheme{}, Shape{0, 4}) == 1);
  CHECK(num_params(Scheme{}, Shape{}) == 1);
  CHECK_THROWS_AS(param_shape(Scheme{}.per_block({1, 1, 1, 1}), sh), ferry::QuantError);
}

TEST_CASE("data sizes follow the storage", "[quant][scheme]") {
  CHECK(data_bytes(Scheme::of(ValueType::i4), 5) == 5);
  CHECK(data_bytes(Scheme::of(ValueType::i4).packed_u8(), 5) == 3);
  CHECK(data_bytes(Scheme::of(ValueType::i4).packed_u32(), 5) == 4);
  CHECK(data_bytes(Scheme::of(ValueType::i4).packed_u32(), 9) == 8);
  CHECK(data_bytes(Scheme::of(ValueType::u2).packed_u8(), 9) == 3);
  CHECK(data_bytes(Scheme::of(ValueType::u2).packed_u32(), 16) == 4);
  CHECK(data_bytes(Scheme::of(ValueType::u2).packed_u32(), 17) == 8);
  CHECK(data_bytes(Scheme::of(ValueType::i8).packed_u32(), 5) == 8);
  CHECK(data_bytes(Scheme::of(ValueType::u8), 5) == 5);
  CHECK(data_bytes(Scheme::of(ValueType::i4).packed_u8(), 0) == 0);
}

namespace {
// Param of a flat element, computed from coordinates (independent of the library's merging).
std::int64_t naive_param(const Scheme& s, const Shape& sh, std::int64_t flat) {
  const std::size_t r = sh.rank();
  std::vector<std::int64_t> c(r);
  for (std::size_t i = r; i-- > 0;) {
    c[i] = flat % sh[i];
    flat /= sh[i];
  }
  if (s.granularity == Granularity::per_tensor) return 0;
  if (s.granularity == Granularity::per_axis)
    return c[static_cast<std::size_t>(s.axis < 0 ? s.axis + static_cast<std::int64_t>(r) : s.axis)];
  const std::size_t lead = r - s.block.size();
  std::int64_t p = 0;
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t b = i < lead ? 1 : s.block[i - lead];
    const std::int64_t g = (sh[i] + b - 1) / b;
    p = p * g + c[i] / b;
  }
  return p;
}
}  // namespace

TEST_CASE("the param map agrees with a coordinate-by-coordinate lookup", "[quant][scheme]") {
  const Shape shape =
      GENERATE(Shape{3, 5, 7}, Shape{4, 2, 8}, Shape{1, 6, 1, 5}, Shape{33}, Shape{2, 1}, Shape{});
  const std::vector<Scheme> schemes = [&] {
    std::vector<Scheme> v{Scheme{}};
    for (std::int64_t a = -static_cast<std::int64_t>(shape.rank());
         a < static_cast<std::int64_t>(shape.rank()); ++a)
      v.push_back(Scheme{}.per_axis(a));
    const std::vector<std::vector<std::int64_t>> blocks{
        {1}, {2}, {3}, {4}, {8}, {2, 4}, {2, 2}, {1, 5}, {2, 2, 3}, {3, 1, 1}};
    for (const auto& b : blocks)
      if (b.size() <= shape.rank()) v.push_back(Scheme{}.per_block(b));
    return v;
  }();
  for (const Scheme& s : schemes) {
    INFO(fmt::format("{} over {}", s, shape));
    const ParamMap map(s, shape);
    REQUIRE(map.num_params() == num_params(s, shape));
    std::vector<std::int64_t> got, want;
    for (std::int64_t i = 0; i < shape.numel(); ++i) {
      got.push_back(map(i));
      want.push_back(naive_param(s, shape, i));
    }
    CHECK(got == want);
    if (shape.numel() > 0) CHECK(param_index(s, shape, shape.numel() - 1) == want.back());
  }
  REQUIRE_THROWS_MATCHES(param_index(Scheme{}, Shape{2, 2}, 4), ferry::IndexError,
                         Contains("element 4 is out of range"));
}

TEST_CASE("f16 conversion rounds to nearest even and handles inf, nan and subnormals",
          "[quant][half]") {
  CHECK(f32_to_f16(1.0f / 3.0f) == 0x3555);
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(-2.0f) == 0xc000);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.0f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // the tie rounds to even: inf
  CHECK(f32_to_f16(1e9f) == 0x7c00);
  CHECK(f32_to_f16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  const std::uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK(f32_to_f16(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // tie between 0 and 2^-24: even is 0
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);  // tie between 1 and 2 ulps: even is 2
  CHECK(f32_to_f16(std::ldexp(1.0f, -26)) == 0x0000);
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);         // tie to even (down)
  CHECK(f32_to_f16(1.0f + 3.0f * std::ldexp(1.0f, -11)) == 0x3c02);  // tie to even (up)
  CHECK(f16_to_f32(0x3555) == 0.333251953125f);
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(f16_to_f32(0x7c00) == std::numeric_limits<float>::infinity());
  CHECK(f16_to_f32(0xfc00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(f16_to_f32(0x7e00)));
  CHECK(std::signbit(f16_to_f32(0x8000)));
}

TEST_CASE("f16 conversion agrees with Eigen::half everywhere", "[quant][half]") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    const float e =
        static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(static_cast<std::uint16_t>(h)));
    if (std::isnan(e)) {
      REQUIRE(std::isnan(f));
      continue;
    }
    REQUIRE(std::bit_cast<std::uint32_t>(f) == std::bit_cast<std::uint32_t>(e));
    REQUIRE(f32_to_f16(f) == h);  // exact values convert back unchanged
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> any;
  std::size_t mismatches = 0;
  for (int i = 0; i < 400000; ++i) {
    // Random bit patterns, biased towards the half range so that rounding is exercised.
    std::uint32_t u = any(rng);
    if (i % 2) u = (u & 0x807fffffu) | ((100u + (u >> 24) % 60u) << 23);
    const float f = std::bit_cast<float>(u);
    if (std::isnan(f)) continue;
    const auto e = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f));
    mismatches += f32_to_f16(f) != e;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("bf16 conversion rounds to nearest even and agrees with Eigen::bfloat16",
          "[quant][half]") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(1.00390625f) == 0x3f80);  // 1 + 2^-8: tie, even is 1.0
  CHECK(f32_to_bf16(1.01171875f) == 0x3f82);  // 1 + 3*2^-8: tie, even is 1 + 2^-6
  CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3f81);
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf
  CHECK(f32_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(f32_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(f32_to_bf16(std::ldexp(1.0f, -133)) == 0x0001);  // bf16's smallest subnormal
  const std::uint16_t nan = f32_to_bf16(std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(bf16_to_f32(nan)));
  // A signalling NaN whose payload lives only in the low bits must not become inf.
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));
  CHECK(bf16_to_f32(0x3f82) == 1.015625f);
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::uint32_t> any;
  std::size_t mismatches = 0;
  for (int i = 0; i < 400000; ++i) {
    const float f = std::bit_cast<float>(any(rng));
    if (std::isnan(f)) continue;
    const auto e = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(f));
    mismatches += f32_to_bf16(f) != e;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("scales are stored little-endian and read back rounded", "[quant][half]") {
  std::byte b[4];
  store_scale(ScaleType::f32, 1.0f, b);
  CHECK(std::to_integer<int>(b[0]) == 0x00);
  CHECK(std::to_integer<int>(b[1]) == 0x00);
  CHECK(std::to_integer<int>(b[2]) == 0x80);
  CHECK(std::to_integer<int>(b[3]) == 0x3f);
  CHECK(load_scale(ScaleType::f32, b) == 1.0f);
  store_scale(ScaleType::f16, 1.0f / 3.0f, b);
  CHECK(std::to_integer<int>(b[0]) == 0x55);
  CHECK(std::to_integer<int>(b[1]) == 0x35);
  CHECK(load_scale(ScaleType::f16, b) == 0.333251953125f);
  store_scale(ScaleType::bf16, 1.01171875f, b);
  CHECK(std::to_integer<int>(b[0]) == 0x82);
  CHECK(std::to_integer<int>(b[1]) == 0x3f);
  CHECK(load_scale(ScaleType::bf16, b) == 1.015625f);
  CHECK(round_to(ScaleType::f16, 0.1f) == 0.0999755859375f);
  CHECK(round_to(ScaleType::f32, 0.1f) == 0.1f);
}

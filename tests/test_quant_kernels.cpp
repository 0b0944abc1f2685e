// Tests for ferry/quant/kernels.hpp against a naive reference written here from the spec: per
// element param lookup by coordinates, std::nearbyint under FE_TONEAREST, Eigen's f16/bf16.
#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/quant.hpp"
#include "matchers.hpp"

using namespace ferry::quant;
using ferry::Shape;

namespace {
using ferry_test::Contains;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

namespace ref {

int bits_of(ValueType v) {
  return v == ValueType::i8 || v == ValueType::u8   ? 8
         : v == ValueType::i4 || v == ValueType::u4 ? 4
                                                    : 2;
}
bool signed_type(ValueType v) {
  return v == ValueType::i8 || v == ValueType::i4 || v == ValueType::i2;
}
std::int32_t lo_of(ValueType v, Mode m) {
  if (!signed_type(v)) return 0;
  const std::int32_t l = -(1 << (bits_of(v) - 1));
  return m == Mode::symmetric ? l + 1 : l;
}
std::int32_t hi_of(ValueType v) {
  return signed_type(v) ? (1 << (bits_of(v) - 1)) - 1 : (1 << bits_of(v)) - 1;
}

float stored(ScaleType t, float s) {
  switch (t) {
    case ScaleType::f16:
      return static_cast<float>(Eigen::half(s));
    case ScaleType::bf16:
      return static_cast<float>(Eigen::bfloat16(s));
    default:
      return s;
  }
}
std::vector<std::byte> scale_bytes_of(ScaleType t, const std::vector<float>& s) {
  std::vector<std::byte> out;
  for (const float f : s) {
    std::uint32_t u;
    int n = 2;
    if (t == ScaleType::f16) {
      u = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f));
    } else if (t == ScaleType::bf16) {
      u = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(f));
    } else {
      u = Eigen::numext::bit_cast<std::uint32_t>(f);
      n = 4;
    }
    for (int i = 0; i < n; ++i) out.push_back(static_cast<std::byte>((u >> (8 * i)) & 0xFF));
  }
  return out;
}

/// Param index of every element, from its coordinates (the ONNX definition).
std::vector<std::int64_t> params_of(const Scheme& s, const Shape& sh) {
  const std::size_t r = sh.rank();
  const std::int64_t n = sh.numel();
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  std::vector<std::int64_t> c(r, 0);
  const std::size_t lead = s.granularity == Granularity::per_block ? r - s.block.size() : r;
  const std::size_t ax =
      static_cast<std::size_t>(s.axis < 0 ? s.axis + static_cast<std::int64_t>(r) : s.axis);
  for (std::int64_t f = 0; f < n; ++f) {
    std::int64_t p = 0;
    if (s.granularity == Granularity::per_axis) {
      p = c[ax];
    } else if (s.granularity == Granularity::per_block) {
      for (std::size_t i = 0; i < r; ++i) {
        const std::int64_t b = i < lead ? 1 : s.block[i - lead];
        p = p * ((sh[i] + b - 1) / b) + c[i] / b;
      }
    }
    out[static_cast<std::size_t>(f)] = p;
    for (std::size_t i = r; i-- > 0;) {
      if (++c[i] < sh[i]) break;
      c[i] = 0;
    }
  }
  return out;
}

std::int32_t quant(float x, float s, std::int32_t off, std::int32_t qn, std::int32_t qx) {
  if (std::isnan(x)) return off;
  const double r = std::nearbyint(static_cast<double>(x / s)) + off;
  return static_cast<std::int32_t>(std::clamp(r, static_cast<double>(qn), static_cast<double>(qx)));
}

std::vector<std::byte> pack_stream(const std::vector<std::int32_t>& v, ValueType vt, Storage st) {
  const int b = st == Storage::native ? 8 : bits_of(vt);
  const std::size_t n = v.size();
  std::size_t nbytes = (n * static_cast<std::size_t>(b) + 7) / 8;
  if (st == Storage::packed_u32) nbytes = (nbytes + 3) / 4 * 4;
  std::vector<std::byte> out(nbytes, std::byte{0});
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < b; ++k)
      if ((static_cast<std::uint32_t>(v[i]) >> k) & 1u) {
        const std::size_t bit = i * static_cast<std::size_t>(b) + static_cast<std::size_t>(k);
        out[bit / 8] |= static_cast<std::byte>(1u << (bit % 8));
      }
  return out;
}

struct Dynamic {
  std::vector<float> scale;  // stored
  std::vector<float> exact;  // before rounding to the scale type
  std::vector<std::int32_t> offset;
};
Dynamic dynamic(const Scheme& s, const Shape& sh, const std::vector<float>& x) {
  const std::vector<std::int64_t> pid = params_of(s, sh);
  const std::int64_t np = num_params(s, sh);
  std::vector<float> lo(static_cast<std::size_t>(np), 0.f), hi(static_cast<std::size_t>(np), 0.f);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    const auto p = static_cast<std::size_t>(pid[i]);
    lo[p] = std::min(lo[p], x[i]);
    hi[p] = std::max(hi[p], x[i]);
  }
  const std::int32_t qn = lo_of(s.value, s.mode), qx = hi_of(s.value);
  Dynamic d;
  for (std::size_t p = 0; p < static_cast<std::size_t>(np); ++p) {
    float range, scale;
    if (s.mode == Mode::symmetric) {
      range = signed_type(s.value) ? std::max(hi[p], -lo[p]) : hi[p];
      scale = range / static_cast<float>(qx);
    } else {
      range = hi[p] - lo[p];
      scale = range / static_cast<float>(qx - qn);
    }
    if (range == 0.f) scale = 1.f;
    float st = stored(s.scale_type, scale);
    if (st == 0.f)
      st = s.scale_type == ScaleType::f16 ? std::ldexp(1.f, -14) : std::ldexp(1.f, -126);
    d.exact.push_back(scale);
    d.scale.push_back(st);
    d.offset.push_back(s.mode == Mode::affine
                           ? static_cast<std::int32_t>(
                                 std::clamp(std::nearbyint(static_cast<float>(qn) - lo[p] / st),
                                            static_cast<float>(qn), static_cast<float>(qx)))
                           : 0);
  }
  return d;
}

}  // namespace ref

/// Everything the kernels produce for one scheme/shape/input, checked against the reference.
void check_against_reference(const Scheme& s, const Shape& shape, const std::vector<float>& x,
                             const std::vector<float>& scales,
                             const std::vector<std::int32_t>& offsets) {
  const std::int64_t n = shape.numel();
  const std::int32_t qn = ref::lo_of(s.value, s.mode), qx = ref::hi_of(s.value);
  const std::vector<std::int64_t> pid = ref::params_of(s, shape);
  std::vector<float> st;
  for (const float f : scales) st.push_back(ref::stored(s.scale_type, f));
  const auto off = [&](std::int64_t p) {
    return s.mode == Mode::affine ? offsets[static_cast<std::size_t>(p)] : 0;
  };

  const QuantizedParts q = quantize(s, shape, x, scales, offsets);
  REQUIRE_NOTHROW(q.validate());
  std::vector<std::int32_t> want_q(static_cast<std::size_t>(n));
  std::vector<float> want_x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < want_q.size(); ++i) {
    const std::int64_t p = pid[i];
    want_q[i] = ref::quant(x[i], st[static_cast<std::size_t>(p)], off(p), qn, qx);
    want_x[i] = static_cast<float>(want_q[i] - off(p)) * st[static_cast<std::size_t>(p)];
  }
  CHECK(values(q) == want_q);
  CHECK(q.data == ref::pack_stream(want_q, s.value, s.storage));
  CHECK(q.scales == ref::scale_bytes_of(s.scale_type, scales));
  if (s.mode == Mode::affine) {
    std::vector<std::byte> want_off;
    for (const std::int32_t o : offsets) want_off.push_back(static_cast<std::byte>(o & 0xFF));
    CHECK(q.offsets == want_off);
  } else {
    CHECK(q.offsets.empty());
  }
  std::vector<float> got_x(static_cast<std::size_t>(n));
  dequantize(q, got_x);
  CHECK(got_x == want_x);
  for (const auto& [b, e] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, n - 1}, {n / 3, 2 * n / 3}, {n - 1, n}, {n / 2, n / 2}}) {
    if (b < 0 || b > e || e > n) continue;
    std::vector<float> part(static_cast<std::size_t>(e - b));
    dequantize_range(q, b, e, part);
    CHECK(part == std::vector<float>(want_x.begin() + b, want_x.begin() + e));
  }

  // quantize_dynamic over the same input with the infinities made finite.
  std::vector<float> xd = x;
  for (float& v : xd)
    if (std::isinf(v)) v = std::copysign(50.f, v);
  const QuantizedParts d = quantize_dynamic(s, shape, xd);
  REQUIRE_NOTHROW(d.validate());
  const ref::Dynamic rd = ref::dynamic(s, shape, xd);
  CHECK(d.scales == ref::scale_bytes_of(s.scale_type, rd.scale));
  std::vector<std::int32_t> got_off;
  for (std::int64_t p = 0; p < num_params(s, shape); ++p) got_off.push_back(d.offset(p));
  CHECK(got_off == rd.offset);
  std::vector<std::int32_t> want_d(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < want_d.size(); ++i) {
    const auto p = static_cast<std::size_t>(pid[i]);
    want_d[i] = ref::quant(xd[i], rd.scale[p], rd.offset[p], qn, qx);
  }
  CHECK(values(d) == want_d);
  // Round trip: within half a step, plus what rounding the scale to its type can cost at the
  // ends of the range ((qmax - qmin) steps of |exact - stored|).
  std::vector<float> back(static_cast<std::size_t>(n));
  dequantize(d, back);
  std::size_t worse = 0;
  for (std::size_t i = 0; i < back.size(); ++i) {
    if (std::isnan(xd[i])) continue;
    const auto p = static_cast<std::size_t>(pid[i]);
    const float sc = rd.scale[p];
    const float bound =
        sc / 2 * 1.0001f + static_cast<float>(qx - qn) * std::fabs(rd.exact[p] - sc);
    // Symmetric unsigned cannot hold negative values: they saturate to 0 by design.
    const float lost =
        s.mode == Mode::symmetric && !ref::signed_type(s.value) && xd[i] < 0 ? -xd[i] : 0.f;
    worse += std::fabs(back[i] - xd[i]) > bound + lost;
  }
  CHECK(worse == 0);
}

struct Layout {
  Shape shape;
  Scheme g;  // only the granularity fields are used
};

std::vector<Layout> layouts() {
  const Scheme b;
  return {
      {Shape{3, 5, 7}, b},
      {Shape{3, 5, 7}, b.per_axis(0)},
      {Shape{3, 5, 7}, b.per_axis(1)},
      {Shape{3, 5, 7}, b.per_axis(-1)},
      {Shape{3, 5, 7}, b.per_block({4})},     // partial last block (7 = 4 + 3)
      {Shape{3, 5, 7}, b.per_block({2, 4})},  // 2-D block, partial in both dims
      {Shape{3, 5, 7}, b.per_block({7})},
      {Shape{3, 5, 7}, b.per_block({2, 2, 3})},  // 3-D block
      {Shape{4, 2, 8}, b},
      {Shape{4, 2, 8}, b.per_axis(1)},
      {Shape{4, 2, 8}, b.per_axis(2)},
      {Shape{4, 2, 8}, b.per_block({4})},
      {Shape{4, 2, 8}, b.per_block({2, 8})},
      {Shape{4, 2, 8}, b.per_block({1, 4})},
      {Shape{1, 6, 1, 5}, b.per_axis(1)},
      {Shape{1, 6, 1, 5}, b.per_block({2, 1, 2})},
      {Shape{33}, b.per_axis(0)},
      {Shape{33}, b.per_block({8})},
  };
}

Scheme with_granularity(const Scheme& s, const Scheme& g) {
  Scheme out = s;
  out.granularity = g.granularity;
  out.axis = g.axis;
  out.block = g.block;
  return out;
}

/// Inputs that hit ties (power-of-two scales with multiples of 1/16), saturation, NaN and inf.
void make_inputs(const Scheme& s, const Shape& shape, unsigned seed, std::vector<float>& x,
                 std::vector<float>& scales, std::vector<std::int32_t>& offsets) {
  std::mt19937 rng(seed);
  const std::int64_t n = shape.numel(), np = num_params(s, shape);
  const std::int32_t qn = ref::lo_of(s.value, s.mode), qx = ref::hi_of(s.value);
  std::uniform_real_distribution<float> uni(-1.f, 1.f), sc(0.01f, 0.3f);
  std::uniform_int_distribution<int> k(-160, 160), pick(0, 9), shift(2, 6);
  std::uniform_int_distribution<std::int32_t> od(qn, qx);
  x.resize(static_cast<std::size_t>(n));
  for (auto& v : x) {
    const int c = pick(rng);
    v = c < 5 ? static_cast<float>(k(rng)) / 16.f : c < 9 ? uni(rng) * 8.f : uni(rng) * 1000.f;
  }
  if (n > 3) x[1] = kNaN, x[2] = kInf, x[3] = -kInf;
  scales.resize(static_cast<std::size_t>(np));
  for (std::size_t p = 0; p < scales.size(); ++p)
    scales[p] = p % 3 == 0 ? std::ldexp(1.f, -shift(rng)) : sc(rng);
  offsets.clear();
  if (s.mode == Mode::affine)
    for (std::int64_t p = 0; p < np; ++p) offsets.push_back(od(rng));
}

}  // namespace

TEST_CASE("every value type, mode, granularity, storage and scale type matches the reference",
          "[quant][kernels]") {
  std::fesetround(FE_TONEAREST);
  const ValueType v = GENERATE(ValueType::i8, ValueType::u8, ValueType::i4, ValueType::u4,
                               ValueType::i2, ValueType::u2);
  const Mode m = GENERATE(Mode::symmetric, Mode::affine);
  const Storage st = GENERATE(Storage::native, Storage::packed_u8, Storage::packed_u32);
  const ScaleType sct = GENERATE(ScaleType::f32, ScaleType::f16, ScaleType::bf16);
  if (st == Storage::packed_u8 && ref::bits_of(v) == 8) return;  // invalid: use native
  const std::vector<Layout> all = layouts();
  for (std::size_t li = 0; li < all.size(); ++li) {
    Scheme s;
    s.value = v;
    s.mode = m;
    s.storage = st;
    s.scale_type = sct;
    s = with_granularity(s, all[li].g);
    const Shape& shape = all[li].shape;
    INFO(fmt::format("{} over {}", s, shape));
    std::vector<float> x, scales;
    std::vector<std::int32_t> offsets;
    make_inputs(
        s, shape,
        static_cast<unsigned>(li * 131 + static_cast<unsigned>(v) * 7 + static_cast<unsigned>(m)),
        x, scales, offsets);
    check_against_reference(s, shape, x, scales, offsets);
  }
}

TEST_CASE("large inputs take the parallel paths and still match the reference",
          "[quant][kernels]") {
  std::fesetround(FE_TONEAREST);
  const auto I4 = Scheme::of(ValueType::i4), U4 = Scheme::of(ValueType::u4);
  const auto U2 = Scheme::of(ValueType::u2), I2 = Scheme::of(ValueType::i2);
  const std::vector<std::pair<Scheme, Shape>> cases{
      {Scheme::of(ValueType::i8), Shape{300, 1000}},
      {U4.affine().per_axis(0).packed_u8(), Shape{300, 1000}},
      {I4.affine().per_axis(1).packed_u32().scales(ScaleType::f16), Shape{300, 1000}},
      {I4.per_block({32}).packed_u8().scales(ScaleType::f16), Shape{300, 1000}},
      {Scheme::of(ValueType::u8).affine().per_block({2, 32}).scales(ScaleType::bf16),
       Shape{300, 1000}},
      {I2.affine().per_block({7, 33}).packed_u8(), Shape{300, 1000}},
      {I4.affine().per_axis(0).packed_u8(), Shape{70001, 3}},  // 3-element slabs, odd bytes
      {U2.per_axis(0).packed_u8(), Shape{70001, 3}},
      {U2.affine().per_axis(1).packed_u8(), Shape{3, 70001}},
      {I4.per_axis(0).packed_u32(), Shape{3, 70001}},
      {U4.affine().packed_u32(), Shape{1 << 17}},
      {Scheme::of(ValueType::i8).affine().per_axis(1), Shape{64, 2048}},  // parallel reduce
      {I4.per_block({5}).packed_u8(), Shape{99999}},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& [s, shape] = cases[i];
    INFO(fmt::format("{} over {}", s, shape));
    std::vector<float> x, scales;
    std::vector<std::int32_t> offsets;
    make_inputs(s, shape, static_cast<unsigned>(i + 1000), x, scales, offsets);
    check_against_reference(s, shape, x, scales, offsets);
  }
}

TEST_CASE("NaN quantizes to the offset and infinities saturate", "[quant][kernels]") {
  const std::vector<float> x{kNaN, kInf, -kInf, 0.5f, 1.5f, -0.5f, -1.5f, 2.5f, 1e30f};
  const Shape sh{9};
  const auto q = quantize(Scheme{}, sh, x, std::vector<float>{1.f}, {});
  CHECK(values(q) == std::vector<std::int32_t>{0, 127, -127, 0, 2, 0, -2, 2, 127});
  const auto a = quantize(Scheme::of(ValueType::u8).affine(), sh, x, std::vector<float>{1.f},
                          std::vector<std::int32_t>{10});
  CHECK(values(a) == std::vector<std::int32_t>{10, 255, 0, 10, 12, 10, 8, 12, 255});
  std::vector<float> back(9);
  dequantize(a, back);
  CHECK(back[0] == 0.f);
  // quantize_dynamic ignores NaN when calibrating.
  const auto d = quantize_dynamic(Scheme{}, Shape{3}, std::vector<float>{kNaN, 2.54f, -1.f});
  CHECK(d.scale(0) == 2.54f / 127.f);
  CHECK(values(d) == std::vector<std::int32_t>{0, 127, -50});
}

TEST_CASE("quantize_dynamic handles zero, tiny and huge ranges", "[quant][kernels]") {
  const std::vector<float> zeros(6, 0.f);
  SECTION("a zero range uses scale 1 (and offset qmin - 0 for affine)") {
    const auto s = quantize_dynamic(Scheme{}.per_axis(0), Shape{2, 3}, zeros);
    CHECK(s.scale(0) == 1.f);
    CHECK(s.scale(1) == 1.f);
    const auto a = quantize_dynamic(Scheme{}.affine(), Shape{6}, zeros);
    CHECK(a.scale(0) == 1.f);
    CHECK(a.offset(0) == -128);
    CHECK(values(a) == std::vector<std::int32_t>(6, -128));
    std::vector<float> back(6);
    dequantize(a, back);
    CHECK(back == zeros);
    // Symmetric unsigned: all-negative input has no positive range; it saturates to 0.
    const auto u =
        quantize_dynamic(Scheme::of(ValueType::u8), Shape{2}, std::vector<float>{-1.f, -2.f});
    CHECK(u.scale(0) == 1.f);
    CHECK(values(u) == std::vector<std::int32_t>{0, 0});
  }
  SECTION("a range whose scale underflows the scale type uses its smallest normal") {
    const auto t = quantize_dynamic(Scheme{}.scales(ScaleType::f16), Shape{2},
                                    std::vector<float>{1e-30f, -1e-30f});
    CHECK(t.scale(0) == std::ldexp(1.f, -14));
    CHECK(values(t) == std::vector<std::int32_t>{0, 0});
  }
  SECTION("a range with no finite scale in the scale type is an error") {
    REQUIRE_THROWS_MATCHES(
        quantize_dynamic(Scheme{}.scales(ScaleType::f16), Shape{2}, std::vector<float>{1e7f, 0.f}),
        ferry::QuantError, Contains("overflows f16") && Contains("param 0"));
    REQUIRE_THROWS_MATCHES(
        quantize_dynamic(Scheme{}.per_axis(0), Shape{2}, std::vector<float>{1.f, kInf}),
        ferry::QuantError, Contains("param 1 spans [0, inf], which has no finite scale"));
    REQUIRE_THROWS_MATCHES(
        quantize_dynamic(Scheme{}.affine(), Shape{2}, std::vector<float>{-3e38f, 3e38f}),
        ferry::QuantError, Contains("no finite scale"));
  }
}

TEST_CASE("a partial last block gets its own scale from the elements it has", "[quant][kernels]") {
  // Rows of 5 in blocks of 4: elements 0-3 form one block, element 4 a block of its own.
  const std::vector<float> x{1.f, 2.1f, 3.f, 4.f, 100.f, -8.f, 0.f, 0.f, 0.f, 0.5f};
  const auto q = quantize_dynamic(Scheme{}.per_block({4}), Shape{2, 5}, x);
  CHECK(param_shape(q.scheme, q.shape) == Shape{2, 2});
  CHECK(q.scale(0) == 4.f / 127.f);
  CHECK(q.scale(1) == 100.f / 127.f);
  CHECK(q.scale(2) == 8.f / 127.f);
  CHECK(q.scale(3) == 0.5f / 127.f);
  CHECK(values(q) == std::vector<std::int32_t>{32, 67, 95, 127, 127, -127, 0, 0, 0, 127});
  // A 2-D partial block: [3, 3] in blocks of [2, 2] -> the corner block is one element.
  const auto c = quantize_dynamic(Scheme::of(ValueType::u8).affine().per_block({2, 2}), Shape{3, 3},
                                  std::vector<float>{0, 0, 1, 0, 0, 2, 5, 6, -7});
  CHECK(param_shape(c.scheme, c.shape) == Shape{2, 2});
  CHECK(c.scale(1) == 2.f / 255.f);
  CHECK(c.scale(3) == 7.f / 255.f);
  CHECK(c.offset(3) == 255);
  CHECK(values(c)[8] == 0);
}

TEST_CASE("kernels reject wrong counts, bad scales and offsets with sizes in the message",
          "[quant][kernels]") {
  const std::vector<float> x(8, 1.f);
  const Shape sh{2, 4};
  const auto pa = Scheme{}.per_axis(1);
  const std::vector<float> three{1.f, 1.f, 1.f}, four{1.f, 1.f, 1.f, 1.f};
  REQUIRE_THROWS_MATCHES(quantize(pa, sh, x, three, {}), ferry::QuantError,
                         Contains("3 scales given, expected 4 (param shape [4])"));
  REQUIRE_THROWS_MATCHES(quantize(pa, sh, x, four, std::vector<std::int32_t>{0}), ferry::QuantError,
                         Contains("1 offsets given, expected 0"));
  REQUIRE_THROWS_MATCHES(quantize(pa.affine(), sh, x, four, std::vector<std::int32_t>{0, 0}),
                         ferry::QuantError, Contains("2 offsets given, expected 4"));
  REQUIRE_THROWS_MATCHES(
      quantize(pa.affine(), sh, x, four, std::vector<std::int32_t>{0, 0, 128, 0}),
      ferry::QuantError, Contains("offset 128 of param 2 is outside [-128, 127]"));
  REQUIRE_THROWS_MATCHES(quantize(Scheme::of(ValueType::u4).affine().per_axis(1), sh, x, four,
                                  std::vector<std::int32_t>{0, -1, 0, 0}),
                         ferry::QuantError, Contains("offset -1 of param 1 is outside [0, 15]"));
  for (const float bad : {0.f, -0.5f, kNaN, kInf}) {
    INFO(bad);
    REQUIRE_THROWS_MATCHES(quantize(pa, sh, x, std::vector<float>{1.f, 1.f, 1.f, bad}, {}),
                           ferry::QuantError, Contains("of param 3"));
  }
  REQUIRE_THROWS_MATCHES(
      quantize(Scheme{}.scales(ScaleType::f16), sh, x, std::vector<float>{1e-9f}, {}),
      ferry::QuantError, Contains("scale 1e-09 of param 0 is 0 as f16"));
  REQUIRE_THROWS_MATCHES(
      quantize(Scheme{}.scales(ScaleType::f16), sh, x, std::vector<float>{1e5f}, {}),
      ferry::QuantError, Contains("is inf as f16"));
  REQUIRE_THROWS_MATCHES(quantize(Scheme{}, Shape{3, 3}, x, std::vector<float>{1.f}, {}),
                         ferry::QuantError, Contains("x holds 8 values, expected 9"));
  REQUIRE_THROWS_MATCHES(quantize_dynamic(Scheme{}, Shape{3, 3}, x), ferry::QuantError,
                         Contains("x holds 8 values, expected 9"));
  REQUIRE_THROWS_MATCHES(quantize_dynamic(Scheme{}.per_block({1, 2, 2}), sh, x), ferry::QuantError,
                         Contains("block rank 3 is greater than shape rank 2"));
  REQUIRE_THROWS_MATCHES(quantize_dynamic(Scheme::of(ValueType::i8).packed_u8(), sh, x),
                         ferry::QuantError, Contains("use native"));

  QuantizedParts q = quantize_dynamic(Scheme::of(ValueType::i4).packed_u8(), sh, x);
  std::vector<float> out7(7), out8(8), out3(3);
  REQUIRE_THROWS_MATCHES(dequantize(q, out7), ferry::QuantError,
                         Contains("out holds 7 floats, expected 8"));
  REQUIRE_THROWS_MATCHES(dequantize_range(q, 6, 9, out3), ferry::IndexError,
                         Contains("[6, 9) is not a range of the 8 elements"));
  REQUIRE_THROWS_MATCHES(dequantize_range(q, 2, 4, out3), ferry::QuantError,
                         Contains("out holds 3 floats, expected 2"));
  q.data.pop_back();  // truncated by hand: the kernels check sizes before reading
  REQUIRE_THROWS_MATCHES(dequantize(q, out8), ferry::QuantError,
                         Contains("data holds 3 bytes, expected 4"));
  REQUIRE_THROWS_MATCHES(values(q), ferry::QuantError, Contains("data holds 3 bytes, expected 4"));
}

TEST_CASE("empty and rank-0 tensors quantize too", "[quant][kernels]") {
  const auto q = quantize_dynamic(Scheme{}.affine().per_axis(1), Shape{0, 3}, std::vector<float>{});
  CHECK(q.data.empty());
  CHECK(q.scales.size() == 12);
  CHECK(q.offset(2) == -128);
  std::vector<float> out;
  dequantize(q, out);
  CHECK(values(q).empty());
  const auto b = quantize(Scheme::of(ValueType::i4).per_block({4}).packed_u8(), Shape{2, 0},
                          std::vector<float>{}, std::vector<float>{}, {});
  CHECK(b.nbytes() == 0);
  // A rank-0 tensor is one element with one param.
  const auto scalar = quantize_dynamic(Scheme{}, Shape{}, std::vector<float>{3.f});
  CHECK(scalar.scale(0) == 3.f / 127.f);
  CHECK(values(scalar) == std::vector<std::int32_t>{127});
  CHECK(q_permute(scalar, std::span<const std::int64_t>{}) == scalar);
}

namespace {

/// Whether linear_packed's fused kernel can run on this CPU (it returns false elsewhere).
bool cpu_has_fused_gemv() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

/// y = x · wᵀ in double from w's dequantized values: the second path linear_packed must match.
std::vector<double> linear_by_dequantize(const QuantizedParts& w, const std::vector<float>& x,
                                         std::int64_t M) {
  const std::int64_t N = w.shape[0], K = w.shape[1];
  std::vector<float> wd(static_cast<std::size_t>(N * K));
  dequantize(w, wd);
  std::vector<double> y(static_cast<std::size_t>(M * N));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k)
        s += static_cast<double>(x[static_cast<std::size_t>(m * K + k)]) *
             wd[static_cast<std::size_t>(n * K + k)];
      y[static_cast<std::size_t>(m * N + n)] = s;
    }
  return y;
}

}  // namespace

TEST_CASE("linear_packed multiplies from the packed values as dequantize and a product do",
          "[quant][gemv]") {
  const auto I4 = Scheme::of(ValueType::i4), U4 = Scheme::of(ValueType::u4);
  const auto I8 = Scheme::of(ValueType::i8), U8 = Scheme::of(ValueType::u8);
  const std::vector<Scheme> schemes{
      I4.per_block({1, 32}).packed_u8().scales(ScaleType::f16),  // the GPT's weights
      I4.affine().per_block({32}).packed_u32(),
      U4.affine().per_block({64}).packed_u8().scales(ScaleType::bf16),
      U4.per_axis(0).packed_u8(),
      I4.per_block({32}),  // native: one sign-extended value per byte
      I8.per_axis(0),
      I8.affine().per_block({96}),  // three groups each
      U8.affine(),                  // per tensor
      U8.per_axis(0).scales(ScaleType::f16),
      Scheme::mxfp4(),  // E2M1 codes read as twice their values, the scale halved
      Scheme::mxfp4().tensor_scales(ScaleType::f32),
      Scheme::of(ValueType::e2m1).per_axis(0).packed_u8().scales(ScaleType::ue4m3),
      Scheme::nvfp4(),  // blocks of 16: two scales per group of 32
      U4.affine().per_block({16}).packed_u8().scales(ScaleType::f16),
      I8.per_block({16}),
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  // 37 outputs of 192 inputs: six groups of 32 per row, and the rows of 4-bit weights start
  // on byte boundaries; 300 x 4032 (42 blocks of 96, 63 of 64) splits over tasks.
  for (const auto& [N, K] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{37, 192}, {300, 4032}})
    for (const auto& s : schemes) {
      std::vector<float> wf(static_cast<std::size_t>(N * K));
      for (auto& v : wf) v = nd(rng);
      const auto w = quantize_dynamic(s, Shape{N, K}, wf);
      for (const std::int64_t M : {1, 2, 3, 4, 5, 9}) {
        if (N > 37 && M > 2) continue;
        INFO(fmt::format("{} over [{}, {}], M = {}", s, N, K, M));
        std::vector<float> x(static_cast<std::size_t>(M * K));
        for (auto& v : x) v = nd(rng);
        std::vector<float> y(static_cast<std::size_t>(M * N), 7.f);
        const bool ran = linear_packed(w, x, M, y);
        REQUIRE(ran == cpu_has_fused_gemv());
        if (!ran) continue;
        // f32 sums of K products of values of size about 1 (|q - o|·s <= 4): a few K ulps.
        const auto ref = linear_by_dequantize(w, x, M);
        for (std::size_t i = 0; i < y.size(); ++i)
          REQUIRE(y[i] == Approx(ref[i]).margin(4e-6 * static_cast<double>(K)));
      }
    }
}

TEST_CASE("linear_packed declines what it does not cover and leaves y untouched", "[quant][gemv]") {
  const auto I4 = Scheme::of(ValueType::i4);
  const std::vector<std::pair<Scheme, Shape>> declined{
      {I4.per_block({32}).packed_u8(), Shape{4, 48}},         // K not a multiple of 32
      {I4.per_block({8}).packed_u8(), Shape{4, 64}},          // a group straddles four scales
      {I4.per_axis(1).packed_u8(), Shape{4, 64}},             // a scale per input column
      {I4.per_block({2, 32}).packed_u8(), Shape{4, 64}},      // blocks across rows
      {Scheme::of(ValueType::i2).packed_u8(), Shape{4, 64}},  // 2-bit values
      {Scheme::mxfp8(), Shape{4, 64}},                        // FP8 codes: the tiles decode
  };
  for (const auto& [s, shape] : declined) {
    INFO(fmt::format("{} over {}", s, shape));
    const auto w = quantize_dynamic(
        s, shape, std::vector<float>(static_cast<std::size_t>(shape.numel()), 1.f));
    std::vector<float> x(static_cast<std::size_t>(shape[1]), 1.f), y(4, 7.f);
    CHECK_FALSE(linear_packed(w, x, 1, y));
    CHECK(y == std::vector<float>(4, 7.f));
  }
  // Empty products leave nothing to do and are the caller's: false as well.
  const auto w =
      quantize_dynamic(I4.per_block({32}).packed_u8(), Shape{4, 64}, std::vector<float>(256, 1.f));
  std::vector<float> none;
  CHECK_FALSE(linear_packed(w, none, 0, none));
  std::vector<float> x(64, 1.f), y3(3), y4(4);
  REQUIRE_THROWS_MATCHES(
      linear_packed(w, x, 1, y3), ferry::QuantError,
      Contains("linear_packed: x holds 64 and y 3 floats, expected 1 x 64 and 1 x 4"));
  REQUIRE_THROWS_MATCHES(linear_packed(w, x, 2, y4), ferry::QuantError,
                         Contains("expected 2 x 64 and 2 x 4"));
  const auto w3 = quantize_dynamic(Scheme{}, Shape{2, 2, 16}, std::vector<float>(64, 1.f));
  REQUIRE_THROWS_MATCHES(linear_packed(w3, x, 2, y4), ferry::QuantError,
                         Contains("needs a weight [N, K]"));
}

namespace {
/// The value of a float code by the OCP formulas, written out per type (independent of
/// minifloat.hpp): (-1)^s * 2^(e - bias) * (1 + m / 2^M), or 2^(1 - bias) * m / 2^M for e = 0.
double ocp_value(ValueType v, std::uint32_t c) {
  const int E = v == ValueType::e5m2 ? 5 : v == ValueType::e4m3 ? 4 : 2;
  const int M = v == ValueType::e5m2 ? 2 : v == ValueType::e4m3 ? 3 : 1;
  const int bias = v == ValueType::e5m2 ? 15 : v == ValueType::e4m3 ? 7 : 1;
  const double sign = (c >> (E + M)) & 1u ? -1.0 : 1.0;
  const int e = static_cast<int>((c >> M) & ((1u << E) - 1u));
  const double m = static_cast<double>(c & ((1u << M) - 1u)) / std::pow(2.0, M);
  if (v == ValueType::e5m2 && e == 31) return m == 0 ? sign * INFINITY : NAN;
  if (v == ValueType::e4m3 && e == 15 && m == 7.0 / 8.0) return NAN;
  if (e == 0) return sign * std::pow(2.0, 1 - bias) * m;
  return sign * std::pow(2.0, e - bias) * (1.0 + m);
}
std::uint32_t codes_of(ValueType v) { return v == ValueType::e2m1 ? 16u : 256u; }
/// Brute force: the finite code whose value is nearest to t; on a tie the even code.
std::uint32_t nearest_code(ValueType v, double t) {
  std::uint32_t best = 0;
  double best_d = INFINITY;
  for (std::uint32_t c = 0; c < codes_of(v); ++c) {
    const double val = ocp_value(v, c);
    if (!std::isfinite(val)) continue;
    const double d = std::fabs(val - t);
    if (d < best_d || (d == best_d && (c % 2 == 0) && std::signbit(val) == std::signbit(t))) {
      best = c;
      best_d = d;
    }
  }
  return best;
}
}  // namespace

TEST_CASE("float value types: every code's value is the OCP formula's", "[quant][minifloat]") {
  for (auto v : {ValueType::e4m3, ValueType::e5m2, ValueType::e2m1}) {
    CAPTURE(fmt::format("{}", v));
    const float* table = minifloat_table(v);
    const MinifloatFormat f = minifloat_format(v);
    for (std::uint32_t c = 0; c < codes_of(v); ++c) {
      CAPTURE(c);
      const double want = ocp_value(v, c);
      if (std::isnan(want)) {
        REQUIRE(std::isnan(table[c]));
      } else {
        REQUIRE(static_cast<double>(table[c]) == want);
        REQUIRE(std::signbit(table[c]) == ((c >> (f.E + f.M)) & 1u));
      }
      REQUIRE((minifloat_decode(f, c) == table[c] || std::isnan(table[c])));
    }
    REQUIRE(table[f.max_code] == max_value(v));
  }
  // By hand, from the specifications' tables.
  const float* e4m3 = minifloat_table(ValueType::e4m3);
  REQUIRE(e4m3[0x38] == 1.0f);
  REQUIRE(e4m3[0x01] == 0x1p-9f);  // smallest subnormal
  REQUIRE(e4m3[0x08] == 0x1p-6f);  // smallest normal
  REQUIRE(e4m3[0x7E] == 448.0f);
  REQUIRE(e4m3[0xFE] == -448.0f);
  REQUIRE(std::isnan(e4m3[0x7F]));
  REQUIRE(e4m3[0x78] == 256.0f);  // S.1111.000 is a number in E4M3
  const float* e5m2 = minifloat_table(ValueType::e5m2);
  REQUIRE(e5m2[0x3C] == 1.0f);
  REQUIRE(e5m2[0x01] == 0x1p-16f);
  REQUIRE(e5m2[0x7B] == 57344.0f);
  REQUIRE(e5m2[0x7C] == kInf);
  REQUIRE(e5m2[0xFC] == -kInf);
  REQUIRE(std::isnan(e5m2[0x7D]));
  const float* e2m1 = minifloat_table(ValueType::e2m1);
  REQUIRE(std::vector<float>(e2m1, e2m1 + 16) == std::vector<float>{0, 0.5f, 1, 1.5f, 2, 3, 4, 6,
                                                                    -0.0f, -0.5f, -1, -1.5f, -2, -3,
                                                                    -4, -6});
}

TEST_CASE("float value types round to nearest even and saturate", "[quant][minifloat]") {
  for (auto v : {ValueType::e4m3, ValueType::e5m2, ValueType::e2m1}) {
    CAPTURE(fmt::format("{}", v));
    const MinifloatFormat f = minifloat_format(v);
    const std::uint32_t sign = 1u << (f.E + f.M);
    // The finite non-negative codes in increasing order of value (0 .. max_code).
    for (std::uint32_t c = 0; c <= f.max_code; ++c) {
      CAPTURE(c);
      const auto x = static_cast<float>(ocp_value(v, c));
      REQUIRE(minifloat_encode(f, x) == c);
      REQUIRE(minifloat_encode(f, -x) == (c | sign));
      if (c == f.max_code) break;
      const auto y = static_cast<float>(ocp_value(v, c + 1));
      const float mid = std::midpoint(x, y);  // exact: both have few bits
      const std::uint32_t even = (c % 2 == 0) ? c : c + 1;
      REQUIRE(minifloat_encode(f, mid) == even);
      REQUIRE(minifloat_encode(f, -mid) == (even | sign));
      REQUIRE(minifloat_encode(f, std::nextafter(mid, y)) == c + 1);
      REQUIRE(minifloat_encode(f, std::nextafter(mid, x)) == c);
    }
    // Saturating: past the largest, and infinities (e5m2 has them but saturates too).
    const float top = max_value(v);
    REQUIRE(minifloat_encode(f, std::nextafter(top, kInf)) == f.max_code);
    REQUIRE(minifloat_encode(f, top * 4) == f.max_code);
    REQUIRE(minifloat_encode(f, kInf) == f.max_code);
    REQUIRE(minifloat_encode(f, -kInf) == (f.max_code | sign));
    REQUIRE(minifloat_encode(f, std::numeric_limits<float>::max()) == f.max_code);
    // Tiny values round to zero of their sign; the smallest subnormal's half is a tie to 0.
    const auto tiny = static_cast<float>(ocp_value(v, 1));
    REQUIRE(minifloat_encode(f, tiny / 2) == 0u);
    REQUIRE(minifloat_encode(f, -tiny / 2) == sign);
    REQUIRE(minifloat_encode(f, std::numeric_limits<float>::denorm_min()) == 0u);
  }
  REQUIRE(minifloat_encode(minifloat_format(ValueType::e4m3), kNaN) == 0x7Fu);
  REQUIRE(minifloat_encode(minifloat_format(ValueType::e5m2), kNaN) == 0x7Fu);
  REQUIRE(minifloat_encode(minifloat_format(ValueType::e2m1), kNaN) == 0u);  // no NaN in FP4
  REQUIRE_THROWS_MATCHES(minifloat_format(ValueType::i8), ferry::QuantError,
                         Contains("int8 is not a float value type"));
}

TEST_CASE("quantize with float values: scales from max|x|, codes by nearest even",
          "[quant][minifloat]") {
  SECTION("e2m1 packed two per byte, with a given scale") {
    const auto s = Scheme::of(ValueType::e2m1).packed_u8();
    const std::vector<float> x{0.5f, -6, 1.5f, 3, 7, -0.25f, 0.75f, kNaN};
    const auto q = quantize(s, Shape{8}, x, std::vector<float>{1.0f}, {});
    // Codes 1, 15, 3, 5, 7 (7 saturates to 6), 8 (-0.25: a tie, to -0), 2 (0.75: a tie, to 1),
    // 0 (NaN); the first of two values in the low nibble.
    REQUIRE(values(q) == std::vector<std::int32_t>{1, 15, 3, 5, 7, 8, 2, 0});
    REQUIRE(q.data == std::vector<std::byte>{std::byte{0xF1}, std::byte{0x53}, std::byte{0x87},
                                             std::byte{0x02}});
    std::vector<float> back(8);
    dequantize(q, back);
    REQUIRE(back[1] == -6.0f);
    REQUIRE(back[4] == 6.0f);
    REQUIRE(std::signbit(back[5]));
    REQUIRE(back[6] == 1.0f);
  }
  SECTION("quantize_dynamic, per block, against a brute-force nearest value") {
    const auto v = GENERATE(ValueType::e4m3, ValueType::e5m2, ValueType::e2m1);
    CAPTURE(fmt::format("{}", v));
    Scheme s = Scheme::of(v).per_block({32});
    if (v == ValueType::e2m1) s = s.packed_u8();
    const Shape shape{3, 80};  // blocks of 32, 32, 16 per row
    std::mt19937 gen(7);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    std::vector<float> x(240);
    for (auto& e : x) e = nd(gen);
    x[5] = 0.0f;
    x[100] = -x[100] * 50;  // one large value in a block
    const auto q = quantize_dynamic(s, shape, x);
    const auto codes = values(q);
    std::vector<float> deq(240);
    dequantize(q, deq);
    for (std::int64_t i = 0; i < 240; ++i) {
      CAPTURE(i);
      const std::int64_t row = i / 80, col = i % 80, blk = col / 32;
      float amax = 0;
      for (std::int64_t j = blk * 32; j < std::min<std::int64_t>(80, blk * 32 + 32); ++j)
        amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(row * 80 + j)]));
      const float scale = amax / max_value(v);
      const float got_scale = q.scale(row * 3 + blk);
      REQUIRE(got_scale == scale);
      const std::uint32_t best =
          nearest_code(v, static_cast<double>(x[static_cast<std::size_t>(i)] / scale));
      REQUIRE(static_cast<std::uint32_t>(codes[static_cast<std::size_t>(i)]) == best);
      REQUIRE(deq[static_cast<std::size_t>(i)] == static_cast<float>(ocp_value(v, best)) * scale);
    }
  }
  SECTION("float values are symmetric only") {
    REQUIRE_THROWS_MATCHES(Scheme::of(ValueType::e4m3).affine().validate(), ferry::QuantError,
                           Contains("fp8_e4m3 values are symmetric only"));
    REQUIRE(fmt::format("{}", Scheme::of(ValueType::e5m2).per_block({32}).scales(ScaleType::f16)) ==
            "fp8_e5m2 symmetric per_block[32] native scale=f16");
  }
}

TEST_CASE("ue8m0 and ue4m3 scales: stored in a byte, rounded as documented", "[quant][minifloat]") {
  // ue8m0: 2^(b - 127); calibration rounds up to a power of two.
  REQUIRE(scale_bytes(ScaleType::ue8m0) == 1);
  REQUIRE(scale_bytes(ScaleType::ue4m3) == 1);
  REQUIRE(round_to(ScaleType::ue8m0, 1.0f) == 1.0f);
  REQUIRE(round_to(ScaleType::ue8m0, 0.75f) == 1.0f);
  REQUIRE(round_to(ScaleType::ue8m0, 1.0000001f) == 2.0f);
  REQUIRE(round_to(ScaleType::ue8m0, 0x1p-130f) == 0x1p-127f);
  REQUIRE(round_to(ScaleType::ue8m0, 0x1.8p-127f) == 0x1p-126f);
  REQUIRE(round_to(ScaleType::ue8m0, 0x1.2p127f) == kInf);
  for (int b = 0; b < 255; ++b) {
    CAPTURE(b);
    std::byte stored{};
    const float v = std::ldexp(1.0f, b - 127);
    store_scale(ScaleType::ue8m0, v, &stored);
    REQUIRE(std::to_integer<int>(stored) == b);
    REQUIRE(load_scale(ScaleType::ue8m0, &stored) == v);
  }
  const std::byte nan_byte{0xFF};
  REQUIRE(std::isnan(load_scale(ScaleType::ue8m0, &nan_byte)));
  // ue4m3: E4M3's values, rounded to nearest even; too large is inf, not 448.
  REQUIRE(round_to(ScaleType::ue4m3, 0.3f) == 0.3125f);  // 0.3 = 1.2 * 2^-2: 1.25 is nearest
  REQUIRE(round_to(ScaleType::ue4m3, 448.0f) == 448.0f);
  REQUIRE(round_to(ScaleType::ue4m3, 463.0f) == 448.0f);
  REQUIRE(round_to(ScaleType::ue4m3, 464.0f) == kInf);
  std::byte b4{};
  store_scale(ScaleType::ue4m3, 1.0f, &b4);
  REQUIRE(std::to_integer<int>(b4) == 0x38);
  REQUIRE(load_scale(ScaleType::ue4m3, &b4) == 1.0f);
  // Given scales: a ue8m0 scale must be a power of two; ue4m3 rounds, as f16 does.
  const std::vector<float> x(32, 1.0f);
  REQUIRE_THROWS_MATCHES(quantize(Scheme::mxfp8(), Shape{32}, x, std::vector<float>{0.3f}, {}),
                         ferry::QuantError,
                         Contains("scale 0.3 of param 0 is not a power of two") && Contains("0.5"));
  const auto q = quantize(Scheme::mxfp8(), Shape{32}, x, std::vector<float>{0.25f}, {});
  REQUIRE(q.scales == std::vector<std::byte>{std::byte{125}});
  REQUIRE(fmt::format("{}", Scheme::mxfp4()) ==
          "fp4_e2m1 symmetric per_block[32] packed_u8 scale=ue8m0");
}

TEST_CASE("MXFP8 and MXFP4 by quantize_dynamic: a power-of-two scale per 32 values",
          "[quant][minifloat]") {
  const auto s =
      GENERATE(Scheme::mxfp8(), Scheme::mxfp4(),
               Scheme::of(ValueType::e2m1).per_block({16}).packed_u8().scales(ScaleType::ue4m3));
  CAPTURE(fmt::format("{}", s));
  const Shape shape{2, 96};
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> x(192);
  for (auto& e : x) e = nd(gen);
  for (int i = 32; i < 64; ++i) x[static_cast<std::size_t>(i)] = 0.0f;  // an all-zero block
  const auto q = quantize_dynamic(s, shape, x);
  const std::int64_t blk = s.block[0];
  const auto codes = values(q);
  std::vector<float> deq(192);
  dequantize(q, deq);
  for (std::int64_t p = 0; p < 192 / blk; ++p) {
    CAPTURE(p);
    float amax = 0;
    for (std::int64_t j = p * blk; j < (p + 1) * blk; ++j)
      amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(j)]));
    const float want = amax / max_value(s.value);
    float scale;
    if (amax == 0) {
      scale = 1.0f;
    } else if (s.scale_type == ScaleType::ue8m0) {
      scale = std::exp2(std::ceil(std::log2(want)));  // the power of two at or above
      REQUIRE(scale >= want);
      REQUIRE(scale / 2 < want);
    } else {
      scale = static_cast<float>(
          ocp_value(ValueType::e4m3, minifloat_encode(minifloat_format(ValueType::e4m3), want)));
    }
    REQUIRE(q.scale(p) == scale);
    for (std::int64_t j = p * blk; j < (p + 1) * blk; ++j) {
      const auto c = static_cast<std::uint32_t>(codes[static_cast<std::size_t>(j)]);
      REQUIRE(c ==
              minifloat_encode(minifloat_format(s.value), x[static_cast<std::size_t>(j)] / scale));
      REQUIRE(deq[static_cast<std::size_t>(j)] ==
              static_cast<float>(ocp_value(s.value, c)) * scale);
      if (s.scale_type == ScaleType::ue8m0)  // rounding up never saturates
        REQUIRE(std::fabs(x[static_cast<std::size_t>(j)] / scale) <= max_value(s.value));
    }
  }
}

TEST_CASE("two levels of scales: NVFP4 and a tensor scale on any scheme", "[quant][minifloat]") {
  using ferry_test::Contains;
  SECTION("the preset, printing and validation") {
    REQUIRE(fmt::format("{}", Scheme::nvfp4()) ==
            "fp4_e2m1 symmetric per_block[16] packed_u8 scale=ue4m3 tensor_scale=f32");
    REQUIRE(Scheme::nvfp4().tensor_scales(std::nullopt) ==
            Scheme::of(ValueType::e2m1).per_block({16}).packed_u8().scales(ScaleType::ue4m3));
    REQUIRE_THROWS_MATCHES(Scheme::of(ValueType::i8).tensor_scales(ScaleType::f32).validate(),
                           ferry::QuantError,
                           Contains("a tensor scale needs per_axis or per_block"));
    Scheme bad = Scheme::nvfp4();
    bad.tensor_scale = static_cast<ScaleType>(9);
    REQUIRE_THROWS_MATCHES(bad.validate(), ferry::QuantError,
                           Contains("unknown tensor scale type 9"));
  }
  SECTION("given scales: bytes by hand, values = code * (block scale * tensor scale)") {
    const float t = 0.1f, e0 = 1.5f * t, e1 = 0.25f * t;  // effective scales, f32 products
    std::vector<float> x(32);
    const float mags[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};  // E2M1's magnitudes, codes 0..7
    for (int i = 0; i < 16; ++i) {
      x[static_cast<std::size_t>(i)] = (i % 2 ? -1.0f : 1.0f) * mags[i % 8] * e0;
      x[static_cast<std::size_t>(16 + i)] = mags[i % 8] * e1;
    }
    REQUIRE_THROWS_MATCHES(
        quantize(Scheme::nvfp4(), Shape{32}, x, std::vector<float>{1.5f, 0.25f}, {}),
        ferry::QuantError, Contains("2 scales given, expected 3") && Contains("then the tensor"));
    REQUIRE_THROWS_MATCHES(
        quantize(Scheme::nvfp4(), Shape{32}, x, std::vector<float>{1.5f, 0.25f, 0.0f}, {}),
        ferry::QuantError, Contains("tensor scale 0 of param 2"));
    REQUIRE_THROWS_MATCHES(
        quantize(Scheme::nvfp4(), Shape{32}, x, std::vector<float>{1.5f, 448.0f, 1e37f}, {}),
        ferry::QuantError, Contains("times the tensor scale"));
    const auto q = quantize(Scheme::nvfp4(), Shape{32}, x, std::vector<float>{1.5f, 0.25f, t}, {});
    // 1.5 = 1.1b * 2^0 -> E4M3 exponent field 7, mantissa 100: 0x3C; 0.25 = 2^-2: 0x28.
    REQUIRE(q.scales.size() == 6);
    REQUIRE(std::to_integer<int>(q.scales[0]) == 0x3C);
    REQUIRE(std::to_integer<int>(q.scales[1]) == 0x28);
    float stored_t;
    std::memcpy(&stored_t, q.scales.data() + 2, 4);
    REQUIRE(stored_t == t);
    REQUIRE(q.scale(0) == 1.5f);
    REQUIRE(q.scale(1) == 0.25f);
    REQUIRE(q.tensor_scale() == t);
    const auto codes = values(q);
    std::vector<float> deq(32);
    dequantize(q, deq);
    for (int i = 0; i < 32; ++i) {
      CAPTURE(i);
      const int m = i % 8;
      const int want = i < 16 && i % 2 && m != 0 ? 8 + m : m;  // sign bit 8 for the negatives
      REQUIRE(codes[static_cast<std::size_t>(i)] == want);
      REQUIRE(deq[static_cast<std::size_t>(i)] == x[static_cast<std::size_t>(i)]);
    }
    // Two values per byte, element 2k in the low nibble: bytes 0 and 1 hold codes 0, 9, 2, 11.
    REQUIRE(std::to_integer<int>(q.data[0]) == 0x90);
    REQUIRE(std::to_integer<int>(q.data[1]) == 0xB2);
    QuantizedParts broken = q;
    broken.scales.pop_back();
    REQUIRE_THROWS_MATCHES(
        broken.validate(), ferry::QuantError,
        Contains("scales hold 5 bytes, expected 6") && Contains("then a tensor scale of 4"));
  }
  SECTION("quantize_dynamic: NVIDIA's recipe, tensor scale = max|x| / (6 * 448)") {
    const Shape shape{3, 40};  // blocks of 16, 16, 8 per row
    std::mt19937 gen(5);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::vector<float> x(120);
    for (auto& e : x) e = nd(gen);
    x[70] = 37.0f;  // the tensor's largest |x|, in block 4
    for (int i = 96; i < 112; ++i) x[static_cast<std::size_t>(i)] = 0.0f;  // an all-zero block
    const auto q = quantize_dynamic(Scheme::nvfp4(), shape, x);
    const float t = 37.0f / (6.0f * 448.0f);
    REQUIRE(q.tensor_scale() == t);
    const auto codes = values(q);
    std::vector<float> deq(120);
    dequantize(q, deq);
    for (std::int64_t i = 0; i < 120; ++i) {
      CAPTURE(i);
      const std::int64_t row = i / 40, col = i % 40, blk = col / 16;
      float amax = 0;
      for (std::int64_t j = blk * 16; j < std::min<std::int64_t>(40, blk * 16 + 16); ++j)
        amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(row * 40 + j)]));
      // The block scale: amax / 6 relative to t, capped at 448, nearest E4M3 (brute force).
      const float rel = std::min(amax / 6.0f / t, 448.0f);
      const float bs =
          amax == 0
              ? 1.0f
              : static_cast<float>(ocp_value(
                    ValueType::e4m3, nearest_code(ValueType::e4m3, static_cast<double>(rel))));
      REQUIRE(q.scale(row * 3 + blk) == bs);
      const float eff = bs * t;
      const std::uint32_t c =
          nearest_code(ValueType::e2m1, static_cast<double>(x[static_cast<std::size_t>(i)] / eff));
      REQUIRE(static_cast<std::uint32_t>(codes[static_cast<std::size_t>(i)]) == c);
      REQUIRE(deq[static_cast<std::size_t>(i)] ==
              static_cast<float>(ocp_value(ValueType::e2m1, c)) * eff);
    }
    REQUIRE(q.scale(4) == 448.0f);  // the block that holds the largest |x|
    REQUIRE(deq[70] == 6.0f * (448.0f * t));
  }
  SECTION("a tensor scale on integer schemes: per axis and affine per block") {
    const Shape shape{4, 64};
    std::vector<float> x(256);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(static_cast<float>(i) * 0.37f) * static_cast<float>(1 + i % 5);
    for (const Scheme& s : {Scheme::of(ValueType::i8)
                                .per_axis(0)
                                .scales(ScaleType::ue8m0)
                                .tensor_scales(ScaleType::f32),
                            Scheme::of(ValueType::u4)
                                .affine()
                                .per_block({32})
                                .packed_u8()
                                .scales(ScaleType::f16)
                                .tensor_scales(ScaleType::bf16)}) {
      CAPTURE(fmt::format("{}", s));
      const auto q = quantize_dynamic(s, shape, x);
      REQUIRE_NOTHROW(q.validate());
      const auto v = values(q);
      std::vector<float> deq(256);
      dequantize(q, deq);
      const ParamMap map(s, shape);
      for (std::size_t i = 0; i < 256; ++i) {
        const auto p = map(static_cast<std::int64_t>(i));
        const float eff = q.scale(p) * q.tensor_scale();
        // Group scales of the wide types are relative to the tensor's: at most 1, or the power
        // of two past it where the tensor scale's rounding left a ratio a hair above 1.
        REQUIRE(q.scale(p) <= 2.0f);
        REQUIRE(deq[i] == static_cast<float>(v[i] - q.offset(p)) * eff);
        REQUIRE(std::fabs(deq[i] - x[i]) <= eff * 0.5f + 1e-6f);  // within half a step
      }
    }
  }
}

TEST_CASE("symmetric_full: the lowest signed code is used, as PyTorch's symmetric observers",
          "[quant]") {
  using ferry_test::Contains;
  REQUIRE(qmin(ValueType::i8, Mode::symmetric_full) == -128);
  REQUIRE(qmin(ValueType::i4, Mode::symmetric_full) == -8);
  REQUIRE(qmin(ValueType::i2, Mode::symmetric_full) == -2);
  REQUIRE(qmax(ValueType::i8, Mode::symmetric_full) == 127);
  REQUIRE(fmt::format("{}", Scheme::of(ValueType::i4).symmetric_full().packed_u8()) ==
          "int4 symmetric_full per_tensor packed_u8 scale=f32");
  for (auto v : {ValueType::u8, ValueType::u4, ValueType::e4m3, ValueType::e2m1})
    REQUIRE_THROWS_MATCHES(Scheme::of(v).symmetric_full().validate(), ferry::QuantError,
                           Contains("symmetric_full needs a signed integer value type"));
  SECTION("by hand: max|x| = 127.5 gives scale 1; -127.5 -> -128 and 127.5 saturates to 127") {
    const std::vector<float> x{-127.5f, -63.7f, 0.0f, 31.5f, 127.5f, -0.5f};
    const auto q = quantize_dynamic(Scheme::of(ValueType::i8).symmetric_full(), Shape{6}, x);
    REQUIRE(q.scale(0) == 1.0f);
    REQUIRE(q.offsets.empty());
    REQUIRE(values(q) == std::vector<std::int32_t>{-128, -64, 0, 32, 127, 0});  // ties to even
    std::vector<float> deq(6);
    dequantize(q, deq);
    REQUIRE(deq == std::vector<float>{-128, -64, 0, 32, 127, 0});
    // Given scales: the same codes; symmetric (not full) stops at -127.
    const auto g = quantize(Scheme::of(ValueType::i8).symmetric_full(), Shape{6}, x,
                            std::vector<float>{1.0f}, {});
    REQUIRE(g == q);
    REQUIRE(values(quantize(Scheme::of(ValueType::i8), Shape{6}, x, std::vector<float>{1.0f},
                            {}))[0] == -127);
  }
  SECTION("per axis int4, packed, against the formula") {
    const Scheme s = Scheme::of(ValueType::i4).symmetric_full().per_axis(0).packed_u8();
    const Shape shape{3, 9};
    std::vector<float> x(27);
    for (std::size_t i = 0; i < 27; ++i) x[i] = std::cos(static_cast<float>(i)) * (1.0f + i / 9);
    const auto q = quantize_dynamic(s, shape, x);
    const auto v = values(q);
    for (std::int64_t r = 0; r < 3; ++r) {
      float amax = 0;
      for (std::int64_t j = 0; j < 9; ++j)
        amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(r * 9 + j)]));
      const float scale = amax / 7.5f;  // (7 - -8) / 2
      REQUIRE(q.scale(r) == scale);
      for (std::int64_t j = 0; j < 9; ++j) {
        const float t = x[static_cast<std::size_t>(r * 9 + j)] / scale;
        const auto want = static_cast<std::int32_t>(std::clamp(std::nearbyint(t), -8.0f, 7.0f));
        REQUIRE(v[static_cast<std::size_t>(r * 9 + j)] == want);
      }
    }
  }
}

TEST_CASE("codebooks: NF4 and tables of one's own, nearest value, exactly", "[quant][codebook]") {
  using ferry_test::Contains;
  const Scheme nf4 = Scheme::nf4();
  REQUIRE(fmt::format("{}", nf4) ==
          "uint4 symmetric per_block[64] packed_u8 scale=f32 codebook[16]");
  REQUIRE_NOTHROW(nf4.validate());
  // The index of the table value nearest t, a tie to the smaller value (brute force, double).
  const auto nearest = [](const std::vector<float>& t, double v) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < t.size(); ++i)
      if (std::fabs(t[i] - v) < std::fabs(t[best] - v)) best = i;
    return static_cast<std::int32_t>(best);
  };
  SECTION("quantize_dynamic: absmax per block of 64, codes by brute force") {
    const Shape shape{3, 160};  // blocks of 64, 64, 32 per row
    std::mt19937 gen(9);
    std::normal_distribution<float> nd(0.0f, 1.5f);
    std::vector<float> x(480);
    for (auto& e : x) e = nd(gen);
    for (int i = 64; i < 128; ++i) x[static_cast<std::size_t>(i)] = 0.0f;  // a zero block
    const auto q = quantize_dynamic(nf4, shape, x);
    const auto codes = values(q);
    std::vector<float> deq(480);
    dequantize(q, deq);
    for (std::int64_t i = 0; i < 480; ++i) {
      CAPTURE(i);
      const std::int64_t row = i / 160, blk = i % 160 / 64;
      float amax = 0;
      for (std::int64_t j = blk * 64; j < std::min<std::int64_t>(160, blk * 64 + 64); ++j)
        amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(row * 160 + j)]));
      const float scale = amax == 0 ? 1.0f : amax;  // NF4's largest magnitude is 1
      REQUIRE(q.scale(row * 3 + blk) == scale);
      const std::int32_t c =
          nearest(nf4.codebook, static_cast<double>(x[static_cast<std::size_t>(i)] / scale));
      REQUIRE(codes[static_cast<std::size_t>(i)] == c);
      REQUIRE(deq[static_cast<std::size_t>(i)] ==
              nf4.codebook[static_cast<std::size_t>(c)] * scale);
    }
  }
  SECTION("given scales: ties, NaN, infinities; a table of one's own on u2") {
    const Scheme s = Scheme::of(ValueType::u2).packed_u8().codebook_of({-2.0f, -0.5f, 0.5f, 3.0f});
    // x / 1: -1.25 is halfway between -2 and -0.5 (tie: the smaller), 1.75 halfway between 0.5
    // and 3, NaN -> the value nearest 0 (-0.5 or 0.5: the smaller), +-inf -> the ends.
    const std::vector<float> x{-1.25f,   1.75f, std::nanf(""), -INFINITY,
                               INFINITY, 0.6f,  -9.0f,         2.9f};
    const auto q = quantize(s, Shape{8}, x, std::vector<float>{1.0f}, {});
    REQUIRE(values(q) == std::vector<std::int32_t>{0, 2, 1, 0, 3, 2, 0, 3});
    // Four 2-bit codes per byte, the first in the low bits: 0 | 2 << 2 | 1 << 4 | 0 << 6.
    REQUIRE(std::to_integer<int>(q.data[0]) == 0x18);
    std::vector<float> deq(8);
    dequantize(q, deq);
    REQUIRE(deq == std::vector<float>{-2, 0.5f, -0.5f, -2, 3, 0.5f, -2, 3});
    // quantize_dynamic: the largest magnitude is 3.
    const auto d = quantize_dynamic(s, Shape{4}, std::vector<float>{6.0f, -4.0f, 1.0f, 0.0f});
    REQUIRE(d.scale(0) == 2.0f);
    REQUIRE(values(d) == std::vector<std::int32_t>{3, 0, 2, 1});  // 3, -2, 0.5, 0 -> -0.5 (tie)
  }
  SECTION("what a codebook must be") {
    const auto u4 = Scheme::of(ValueType::u4);
    std::vector<float> t(16);
    for (int i = 0; i < 16; ++i) t[static_cast<std::size_t>(i)] = static_cast<float>(i);
    REQUIRE_NOTHROW(u4.codebook_of(t).validate());
    REQUIRE_THROWS_MATCHES(Scheme::of(ValueType::i4).codebook_of(t).validate(), ferry::QuantError,
                           Contains("a codebook indexes with unsigned values"));
    REQUIRE_THROWS_MATCHES(u4.affine().codebook_of(t).validate(), ferry::QuantError,
                           Contains("a codebook scheme is symmetric"));
    REQUIRE_THROWS_MATCHES(Scheme::of(ValueType::u8).codebook_of(t).validate(), ferry::QuantError,
                           Contains("the codebook holds 16 values; uint8 indexes exactly 256"));
    auto bad = t;
    bad[5] = bad[4];
    REQUIRE_THROWS_MATCHES(u4.codebook_of(bad).validate(), ferry::QuantError,
                           Contains("codebook values 4 and 5 (4, 4) are not strictly ascending"));
    bad = t;
    bad[3] = INFINITY;
    REQUIRE_THROWS_MATCHES(u4.codebook_of(bad).validate(), ferry::QuantError,
                           Contains("codebook value 3 is inf"));
    REQUIRE(u4.codebook_of(t) != u4.codebook_of(bad));  // the table is part of the scheme
  }
}

// Tests for ferry/quant/layout.hpp: each op on quantized parts must dequantize to the same op
// applied (naively, here) to the dequantized input, or refuse.
#include <fmt/format.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
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

using Coords = std::vector<std::int64_t>;

/// out[c] = x[src(c)] over the row-major walk of `to`.
std::vector<float> naive_map(const std::vector<float>& x, const Shape& from, const Shape& to,
                             const std::function<Coords(const Coords&)>& src) {
  std::vector<float> out(static_cast<std::size_t>(to.numel()));
  Coords c(to.rank(), 0);
  for (std::size_t f = 0; f < out.size(); ++f) {
    const Coords s = src(c);
    std::int64_t flat = 0;
    for (std::size_t i = 0; i < from.rank(); ++i) flat = flat * from[i] + s[i];
    out[f] = x[static_cast<std::size_t>(flat)];
    for (std::size_t i = to.rank(); i-- > 0;) {
      if (++c[i] < to[i]) break;
      c[i] = 0;
    }
  }
  return out;
}

std::vector<float> deq(const QuantizedParts& q) {
  std::vector<float> out(static_cast<std::size_t>(q.shape.numel()));
  dequantize(q, out);
  return out;
}

QuantizedParts make(const Scheme& s, const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 3.f);
  std::vector<float> x(static_cast<std::size_t>(shape.numel()));
  for (auto& v : x) v = d(rng);
  return quantize_dynamic(s, shape, x);
}

// Value types and storages that exercise packing across byte boundaries and offsets.
std::vector<Scheme> bases() {
  return {Scheme::of(ValueType::i4).affine().packed_u8().scales(ScaleType::f16),
          Scheme::of(ValueType::u2).packed_u32(), Scheme::of(ValueType::i8).affine(),
          // Two levels (NVFP4's kind): the tensor scale rides along unchanged.
          Scheme::of(ValueType::e2m1)
              .packed_u8()
              .scales(ScaleType::ue4m3)
              .tensor_scales(ScaleType::f32)};
}

Scheme gran(const Scheme& base, const Scheme& g) {
  Scheme s = base;
  s.granularity = g.granularity;
  s.axis = g.axis;
  s.block = g.block;
  if (s.granularity == Granularity::per_tensor) s.tensor_scale.reset();  // one level is all
  return s;
}

std::vector<Scheme> granularities_357() {
  const Scheme b;
  return {b,
          b.per_axis(0),
          b.per_axis(1),
          b.per_axis(-1),
          b.per_block({4}),
          b.per_block({2, 4}),
          b.per_block({2, 2, 3}),
          b.per_block({1, 3}),
          b.per_block({8})};
}
}  // namespace

TEST_CASE("q_permute moves values and params together for every granularity", "[quant][layout]") {
  const Shape sh{3, 5, 7};
  std::vector<std::int64_t> perm{0, 1, 2};
  std::vector<std::vector<std::int64_t>> perms;
  do perms.push_back(perm);
  while (std::next_permutation(perm.begin(), perm.end()));
  unsigned seed = 1;
  for (const Scheme& base : bases())
    for (const Scheme& g : granularities_357()) {
      const Scheme s = gran(base, g);
      const QuantizedParts q = make(s, sh, seed++);
      const std::vector<float> x = deq(q);
      for (const auto& p : perms) {
        INFO(fmt::format("{} over {} perm [{}]", s, sh, fmt::join(p, ",")));
        const QuantizedParts r = q_permute(q, p);
        REQUIRE_NOTHROW(r.validate());
        const Shape to{sh[static_cast<std::size_t>(p[0])], sh[static_cast<std::size_t>(p[1])],
                       sh[static_cast<std::size_t>(p[2])]};
        CHECK(r.shape == to);
        CHECK(deq(r) == naive_map(x, sh, to, [&](const Coords& c) {
                Coords src(3);
                for (std::size_t i = 0; i < 3; ++i) src[static_cast<std::size_t>(p[i])] = c[i];
                return src;
              }));
      }
    }
}

TEST_CASE("q_permute renumbers the axis and permutes the block", "[quant][layout]") {
  const Shape sh{3, 5, 7};
  const std::array<std::int64_t, 3> p{2, 0, 1};
  CHECK(q_permute(make(Scheme{}.per_axis(-1), sh, 1), p).scheme == Scheme{}.per_axis(0));
  CHECK(q_permute(make(Scheme{}.per_axis(0), sh, 1), p).scheme == Scheme{}.per_axis(1));
  CHECK(q_permute(make(Scheme{}.per_block({2, 4}), sh, 1), p).scheme ==
        Scheme{}.per_block({4, 1, 2}));
  CHECK(q_permute(make(Scheme{}.per_block({4}), sh, 1), std::array<std::int64_t, 3>{0, 2, 1})
            .scheme == Scheme{}.per_block({4, 1}));
  CHECK(q_permute(make(Scheme{}.per_block({2, 4}), sh, 1), std::array<std::int64_t, 3>{1, 2, 0})
            .scheme == Scheme{}.per_block({2, 4, 1}));
  CHECK(q_permute(make(Scheme{}.per_block({1}), sh, 1), p).scheme == Scheme{}.per_block({1}));
  CHECK(q_permute(make(Scheme{}, sh, 1), p).scheme == Scheme{});
  // A per-block weight transposed: [8, 64] in blocks of 32 along rows becomes column blocks.
  const auto w = make(Scheme::of(ValueType::i4).per_block({32}).packed_u8(), Shape{8, 64}, 3);
  const auto t = q_swap_dims(w, 0, -1);
  CHECK(t.scheme.block == std::vector<std::int64_t>{32, 1});
  CHECK(param_shape(t.scheme, t.shape) == Shape{2, 8});
  CHECK(deq(t) == naive_map(deq(w), w.shape, t.shape, [](const Coords& c) {
          return Coords{c[1], c[0]};
        }));
  REQUIRE_THROWS_MATCHES(q_permute(w, std::array<std::int64_t, 2>{0, 0}), ferry::IndexError,
                         Contains("q_permute: [0, 0] is not a permutation of 0..1"));
  REQUIRE_THROWS_MATCHES(q_permute(w, std::array<std::int64_t, 1>{0}), ferry::IndexError,
                         Contains("q_permute: perm [0] has 1 entries for rank 2"));
  REQUIRE_THROWS_MATCHES(q_swap_dims(w, 0, 2), ferry::IndexError,
                         Contains("q_swap_dims: axis 2 is out of range for rank 2"));
}

TEST_CASE("q_flip reverses values and params where blocks stay whole", "[quant][layout]") {
  unsigned seed = 100;
  const std::vector<std::vector<std::int64_t>> axis_sets{{0},    {1},       {2}, {-1},
                                                         {0, 2}, {2, 1, 0}, {}};
  for (const Scheme& base : bases()) {
    const Scheme b;
    for (const auto& [sh, g] : std::vector<std::pair<Shape, Scheme>>{
             {Shape{3, 5, 7}, b},
             {Shape{3, 5, 7}, b.per_axis(1)},
             {Shape{3, 5, 7}, b.per_axis(-1)},
             {Shape{3, 5, 7}, b.per_block({8})},  // one block spans the whole last dim
             {Shape{4, 6, 8}, b.per_block({2, 4})},
             {Shape{4, 6, 8}, b.per_block({2, 3, 4})},
             {Shape{3, 5, 8}, b.per_block({4})}}) {
      const Scheme s = gran(base, g);
      const QuantizedParts q = make(s, sh, seed++);
      const std::vector<float> x = deq(q);
      for (const auto& axes : axis_sets) {
        INFO(fmt::format("{} over {} flip [{}]", s, sh, fmt::join(axes, ",")));
        const QuantizedParts r = q_flip(q, axes);
        REQUIRE_NOTHROW(r.validate());
        CHECK(r.scheme == s);
        CHECK(deq(r) == naive_map(x, sh, sh, [&](const Coords& c) {
                Coords src = c;
                for (const std::int64_t a : axes) {
                  const auto i = static_cast<std::size_t>(a < 0 ? a + 3 : a);
                  src[i] = sh[i] - 1 - c[i];
                }
                return src;
              }));
      }
    }
  }
  const auto partial = make(Scheme{}.per_block({2, 4}), Shape{3, 5, 7}, 9);
  REQUIRE_NOTHROW(q_flip(partial, std::array<std::int64_t, 1>{0}));  // leading dims: blocks of 1
  REQUIRE_THROWS_MATCHES(q_flip(partial, std::array<std::int64_t, 1>{2}), ferry::QuantError,
                         Contains("q_flip") && Contains("per_block[2,4]") &&
                             Contains("[3, 5, 7]") &&
                             Contains("dim 2 (size 7) is not a multiple of its block 4"));
  REQUIRE_THROWS_MATCHES(q_flip(partial, std::array<std::int64_t, 1>{1}), ferry::QuantError,
                         Contains("dim 1 (size 5) is not a multiple of its block 2"));
  REQUIRE_THROWS_MATCHES(q_flip(partial, std::array<std::int64_t, 2>{1, -2}), ferry::IndexError,
                         Contains("q_flip: axis -2 is given twice"));
  REQUIRE_THROWS_MATCHES(q_flip(partial, std::array<std::int64_t, 1>{3}), ferry::IndexError,
                         Contains("q_flip: axis 3 is out of range for rank 3"));
}

TEST_CASE("q_slice cuts values and params on block boundaries", "[quant][layout]") {
  using R = std::vector<std::pair<std::int64_t, std::int64_t>>;
  unsigned seed = 200;
  const Scheme b;
  struct Case {
    Shape shape;
    Scheme g;
    std::vector<R> ok;
  };
  const std::vector<Case> cases{
      {Shape{3, 5, 7}, b, {R{{1, 3}}, R{{0, 3}, {1, 4}, {2, 7}}, R{{2, 2}}, R{}}},
      {Shape{3, 5, 7}, b.per_axis(1), {R{{0, 3}, {1, 4}}, R{{1, 2}, {3, 5}, {3, 6}}}},
      {Shape{3, 5, 7}, b.per_axis(-1), {R{{1, 3}, {0, 5}, {2, 5}}}},
      {Shape{3, 5, 7},
       b.per_block({2, 4}),
       {R{{1, 3}, {2, 5}, {4, 7}}, R{{0, 3}, {0, 3}, {0, 6}}, R{{0, 1}, {4, 5}, {5, 6}},
        R{{2, 3}, {1, 2}}}},
      {Shape{3, 5, 7}, b.per_block({8}), {R{{0, 3}, {0, 5}, {2, 5}}}},  // inside the one block
      {Shape{4, 64}, b.per_block({32}), {R{{1, 3}}, R{{0, 4}, {32, 64}}, R{{0, 4}, {0, 48}}}},
  };
  for (const Scheme& base : bases())
    for (const Case& c : cases) {
      const Scheme s = gran(base, c.g);
      const QuantizedParts q = make(s, c.shape, seed++);
      const std::vector<float> x = deq(q);
      for (const R& ranges : c.ok) {
        std::string text;
        for (const auto& [lo, hi] : ranges) text += fmt::format("[{},{}) ", lo, hi);
        INFO(fmt::format("{} over {} slice {}", s, c.shape, text));
        const QuantizedParts r = q_slice(q, ranges);
        REQUIRE_NOTHROW(r.validate());
        std::vector<std::int64_t> dims(c.shape.begin(), c.shape.end());
        for (std::size_t i = 0; i < ranges.size(); ++i)
          dims[i] = ranges[i].second - ranges[i].first;
        const Shape to{dims};
        CHECK(r.shape == to);
        CHECK(deq(r) == naive_map(x, c.shape, to, [&](const Coords& cc) {
                Coords src = cc;
                for (std::size_t i = 0; i < ranges.size(); ++i) src[i] += ranges[i].first;
                return src;
              }));
      }
    }
  const auto q = make(Scheme::of(ValueType::i4).per_block({2, 4}).packed_u8(), Shape{3, 5, 7}, 7);
  REQUIRE_THROWS_MATCHES(
      q_slice(q, R{{0, 3}, {0, 5}, {1, 7}}), ferry::QuantError,
      Contains("q_slice") && Contains("int4 symmetric per_block[2,4]") &&
          Contains("range [1, 7) of dim 2 starts inside block 0 (block size 4)"));
  REQUIRE_THROWS_MATCHES(q_slice(q, R{{0, 3}, {1, 3}}), ferry::QuantError,
                         Contains("range [1, 3) of dim 1"));
  REQUIRE_THROWS_MATCHES(q_slice(q, R{{0, 3}, {0, 5}, {3, 5}}), ferry::QuantError,
                         Contains("range [3, 5) of dim 2"));
  REQUIRE_THROWS_MATCHES(q_slice(q, R{{0, 4}}), ferry::IndexError,
                         Contains("q_slice: range [0, 4) is not within dim 0 of shape [3, 5, 7]"));
  REQUIRE_THROWS_MATCHES(q_slice(q, R{{2, 1}}), ferry::IndexError, Contains("range [2, 1)"));
  REQUIRE_THROWS_MATCHES(q_slice(q, R{{0, 1}, {0, 1}, {0, 1}, {0, 1}}), ferry::IndexError,
                         Contains("q_slice: 4 ranges for shape [3, 5, 7] of rank 3"));
}

TEST_CASE("q_reshape keeps bytes when the element to param map survives", "[quant][layout]") {
  unsigned seed = 300;
  const Scheme b;
  struct Case {
    Shape from;
    Scheme g;
    std::vector<Shape> ok;
    std::vector<Shape> refused;
    std::int64_t new_axis = -1;  // expected axis of the first ok shape (per_axis)
  };
  const std::vector<Case> cases{
      {Shape{3, 5, 7}, b, {Shape{105}, Shape{7, 15}, Shape{1, 105, 1}}, {}},
      {Shape{3, 5, 7},
       b.per_axis(1),
       {Shape{3, 5, 1, 7}, Shape{1, 3, 5, 7}},
       {Shape{15, 7}, Shape{3, 35}},
       1},
      {Shape{3, 5, 7},
       b.per_axis(-1),
       {Shape{15, 7}, Shape{3, 5, 7, 1}},
       {Shape{105}, Shape{3, 35}},
       1},
      {Shape{3, 5, 7},
       b.per_axis(0),
       {Shape{3, 35}, Shape{3, 7, 5}},
       {Shape{15, 7}, Shape{1, 105}},
       0},
      {Shape{3, 5, 7},
       b.per_block({4}),
       {Shape{15, 7}, Shape{5, 3, 7}},
       {Shape{105}, Shape{3, 35}, Shape{15, 7, 1}}},
      {Shape{4, 2, 8}, b.per_block({4}), {Shape{8, 8}, Shape{64}, Shape{4, 16}}, {Shape{16, 2, 2}}},
      // Blocks of [2, 8] over [.., 2, 8] are runs of 16 in flat order: [8, 8] keeps them too.
      {Shape{4, 2, 8},
       b.per_block({2, 8}),
       {Shape{2, 4, 8}, Shape{2, 2, 2, 8}, Shape{8, 8}},
       {Shape{4, 16}}},
      {Shape{3, 5, 7},
       b.per_block({2, 4}),
       {Shape{3, 1, 5, 7}, Shape{3, 5, 7}},
       {Shape{15, 7}, Shape{5, 3, 7}}},
  };
  for (const Scheme& base : bases())
    for (const Case& c : cases) {
      const Scheme s = gran(base, c.g);
      const QuantizedParts q = make(s, c.from, seed++);
      for (std::size_t i = 0; i < c.ok.size(); ++i) {
        INFO(fmt::format("{} over {} -> {}", s, c.from, c.ok[i]));
        const QuantizedParts r = q_reshape(q, c.ok[i]);
        REQUIRE_NOTHROW(r.validate());
        CHECK(r.shape == c.ok[i]);
        CHECK(r.data == q.data);
        CHECK(r.scales == q.scales);
        CHECK(r.offsets == q.offsets);
        CHECK(deq(r) == deq(q));
        if (i == 0 && c.new_axis >= 0) CHECK(r.scheme.axis == c.new_axis);
      }
      for (const Shape& to : c.refused) {
        INFO(fmt::format("{} over {} -> {}", s, c.from, to));
        REQUIRE_THROWS_MATCHES(q_reshape(q, to), ferry::QuantError,
                               Contains("q_reshape") && Contains(fmt::format("{}", c.from)) &&
                                   Contains(fmt::format("{}", to)));
      }
    }
  const auto q = make(Scheme{}.per_axis(1), Shape{3, 5, 7}, 1);
  REQUIRE_THROWS_MATCHES(q_reshape(q, Shape{15, 7}), ferry::QuantError,
                         Contains("no axis of [15, 7] has size 5 with the same dims before it"));
  REQUIRE_THROWS_MATCHES(q_reshape(make(Scheme{}.per_block({4}), Shape{3, 5, 7}, 1), Shape{105}),
                         ferry::QuantError, Contains("would change the blocked trailing dims"));
  REQUIRE_THROWS_MATCHES(
      q_reshape(q, Shape{3, 5, 8}), ferry::ShapeError,
      Contains("cannot reshape [3, 5, 7] (105 elements) to [3, 5, 8] (120 elements)"));
}

TEST_CASE("layout ops compose: slice, transpose and flip a per-block weight", "[quant][layout]") {
  const auto w =
      make(Scheme::of(ValueType::u4).affine().per_block({2, 8}).packed_u8(), Shape{6, 32}, 42);
  const std::vector<std::pair<std::int64_t, std::int64_t>> rows{{2, 6}, {8, 24}};
  const auto a = q_slice(w, rows);
  const auto t = q_permute(a, std::array<std::int64_t, 2>{1, 0});
  const auto f = q_flip(t, std::array<std::int64_t, 2>{0, 1});
  const auto x = deq(w);
  CHECK(f.shape == Shape{16, 4});
  CHECK(f.scheme.block == std::vector<std::int64_t>{8, 2});
  CHECK(deq(f) == naive_map(x, w.shape, f.shape, [](const Coords& c) {
          return Coords{2 + (3 - c[1]), 8 + (15 - c[0])};
        }));
  REQUIRE_NOTHROW(f.validate());
}

TEST_CASE("q_expand broadcasts values and params for every granularity", "[quant][layout]") {
  const Shape sh{3, 1, 7};
  const Shape to{2, 3, 4, 7};
  unsigned seed = 100;
  for (const Scheme& base : bases())
    for (const Scheme& g : granularities_357()) {
      const Scheme s = gran(base, g);
      const QuantizedParts q = make(s, sh, seed++);
      INFO(fmt::format("{} over {}", s, sh));
      const QuantizedParts r = q_expand(q, to);
      REQUIRE_NOTHROW(r.validate());
      CHECK(r.shape == to);
      CHECK(r.scheme == expanded_scheme(s, sh, to));
      CHECK(deq(r) == naive_map(deq(q), sh, to, [](const Coords& c) {
              return Coords{c[1], 0, c[3]};
            }));
    }
  const QuantizedParts q = make(Scheme{}.per_axis(-1), sh, 1);
  CHECK(q_expand(q, to).scheme == Scheme{}.per_axis(3));
  REQUIRE_THROWS_AS(q_expand(q, Shape{3, 2, 6}), ferry::ShapeError);
  REQUIRE_THROWS_AS(q_expand(q, Shape{7}), ferry::ShapeError);
}

TEST_CASE("q_repeat and q_select are exact whenever their shape rule lets them run",
          "[quant][layout]") {
  const Shape sh{3, 5, 7};
  unsigned seed = 200;
  const std::vector<std::vector<std::int64_t>> all_times{
      {2, 1, 1}, {1, 3, 1}, {1, 1, 2}, {2, 2, 2}, {1, 0, 1}};
  int ran = 0, refused = 0;
  for (const Scheme& base : bases())
    for (const Scheme& g : granularities_357()) {
      const Scheme s = gran(base, g);
      const QuantizedParts q = make(s, sh, seed++);
      const std::vector<float> x = deq(q);
      for (const auto& t : all_times) {
        INFO(fmt::format("{} over {} repeat [{}]", s, sh, fmt::join(t, ",")));
        bool allowed = true;
        try {
          check_repeat(s, sh, t);
        } catch (const ferry::QuantError&) {
          allowed = false;
        }
        if (!allowed) {
          ++refused;
          REQUIRE_THROWS_AS(q_repeat(q, t), ferry::QuantError);
          continue;
        }
        ++ran;
        const QuantizedParts r = q_repeat(q, t);  // the rule's yes is the walk's yes
        REQUIRE_NOTHROW(r.validate());
        const Shape to{3 * t[0], 5 * t[1], 7 * t[2]};
        CHECK(deq(r) == naive_map(x, sh, to, [](const Coords& c) {
                return Coords{c[0] % 3, c[1] % 5, c[2] % 7};
              }));
      }
      for (std::int64_t dim = 0; dim < 3; ++dim) {
        const std::int64_t n = sh[static_cast<std::size_t>(dim)];
        const std::vector<std::int64_t> idx{n - 1, 0, 0, n / 2, n - 1};
        INFO(fmt::format("{} over {} select dim {}", s, sh, dim));
        bool allowed = true;
        try {
          check_select(s, sh, static_cast<std::size_t>(dim));
        } catch (const ferry::QuantError&) {
          allowed = false;
        }
        if (!allowed) {
          ++refused;
          REQUIRE_THROWS_AS(q_select(q, dim, idx), ferry::QuantError);
          continue;
        }
        ++ran;
        const QuantizedParts r = q_select(q, dim, idx);
        REQUIRE_NOTHROW(r.validate());
        std::vector<std::int64_t> to = sh.to_vector();
        to[static_cast<std::size_t>(dim)] = 5;
        CHECK(deq(r) == naive_map(x, sh, Shape(to), [&](const Coords& c) {
                Coords src = c;
                src[static_cast<std::size_t>(dim)] =
                    idx[static_cast<std::size_t>(c[static_cast<std::size_t>(dim)])];
                return src;
              }));
      }
    }
  CHECK(ran > 100);
  CHECK(refused > 10);
  // Known answers: per tensor always runs; blocks of 4 along 7 cannot repeat or be picked from.
  const QuantizedParts b = make(Scheme{}.per_block({4}), sh, 1);
  REQUIRE_THROWS_MATCHES(q_repeat(b, std::vector<std::int64_t>{1, 1, 2}), ferry::QuantError,
                         Contains("dim 2 (size 7) is not a multiple of its block 4"));
  REQUIRE_THROWS_MATCHES(q_select(b, 2, std::vector<std::int64_t>{0}), ferry::QuantError,
                         Contains("dim 2 is split into blocks of 4"));
  REQUIRE(q_select(b, 1, std::vector<std::int64_t>{4, 4}).shape == Shape{3, 2, 7});
  REQUIRE_THROWS_MATCHES(q_select(b, 1, std::vector<std::int64_t>{5}), ferry::IndexError,
                         Contains("index 5 at position 0 is out of range"));
  REQUIRE_THROWS_MATCHES(q_select(b, 1, std::vector<std::int64_t>{-1}), ferry::IndexError,
                         Contains("negative indices are not wrapped"));
  REQUIRE_THROWS_AS(q_repeat(b, std::vector<std::int64_t>{1, 1}), ferry::ShapeError);
  REQUIRE_THROWS_AS(q_repeat(b, std::vector<std::int64_t>{1, -1, 1}), ferry::ShapeError);
}

TEST_CASE("q_cat joins values and params when the layout allows and refuses otherwise",
          "[quant][layout]") {
  const Shape sh{3, 5, 7};
  unsigned seed = 300;
  int joined = 0, refused = 0, same_params = 0;
  for (const Scheme& base : bases())
    for (const Scheme& g : granularities_357())
      for (std::size_t dim = 0; dim < 3; ++dim) {
        const Scheme s = gran(base, g);
        std::vector<std::int64_t> bd = sh.to_vector();
        bd[dim] = 2;
        const Shape shb{bd};
        const QuantizedParts a = make(s, sh, seed++);
        // Two levels join only under one tensor scale: b is then a's first two rows along dim.
        std::vector<std::pair<std::int64_t, std::int64_t>> first_two(3, {0, 0});
        for (std::size_t i = 0; i < 3; ++i) first_two[i] = {0, i == dim ? 2 : sh[i]};
        const QuantizedParts b = s.tensor_scale ? q_slice(a, first_two) : make(s, shb, seed++);
        INFO(fmt::format("{} over {} and {} along {}", s, sh, shb, dim));
        std::vector<std::int64_t> od = sh.to_vector();
        od[dim] += 2;
        const Shape to{od};
        const std::vector<float> xa = deq(a), xb = deq(b);
        const auto naive = naive_map(xa, sh, to, [&](const Coords& c) { return c; });
        bool rule = true;
        try {
          (void)cat_scheme(std::vector<Scheme>{s, s}, std::vector<Shape>{sh, shb}, dim);
        } catch (const ferry::QuantError&) {
          rule = false;
        }
        const std::vector<QuantizedParts> ab{a, b};
        if (!rule) {
          ++refused;
          REQUIRE_THROWS_AS(q_cat(ab, static_cast<std::int64_t>(dim)), ferry::QuantError);
          continue;
        }
        const bool one_param = detail::full_blocks(s, to).whole[dim];
        if (one_param) {
          // Separately calibrated params differ (unless a coarse scale type rounds them to the
          // same bytes): refused when the op runs.
          if (a.scales != b.scales || a.offsets != b.offsets)
            REQUIRE_THROWS_MATCHES(q_cat(ab, static_cast<std::int64_t>(dim)), ferry::QuantError,
                                   Contains("differ from tensor 0's"));
          // The same tensor twice carries the same params: joined.
          const std::vector<QuantizedParts> aa{a, a};
          std::vector<std::int64_t> d2 = sh.to_vector();
          d2[dim] *= 2;
          const QuantizedParts r = q_cat(aa, static_cast<std::int64_t>(dim));
          REQUIRE_NOTHROW(r.validate());
          CHECK(deq(r) == naive_map(xa, sh, Shape(d2), [&](const Coords& c) {
                  Coords src = c;
                  src[dim] %= sh[dim];
                  return src;
                }));
          ++same_params;
          continue;
        }
        ++joined;
        const QuantizedParts r = q_cat(ab, static_cast<std::int64_t>(dim));
        REQUIRE_NOTHROW(r.validate());
        CHECK(r.shape == to);
        // Naive: coordinates below sh[dim] read a, the rest read b.
        std::vector<float> want(static_cast<std::size_t>(to.numel()));
        const auto ts = to.strides(), as = sh.strides(), bs = shb.strides();
        for (std::int64_t f = 0; f < to.numel(); ++f) {
          Coords c(3);
          for (std::size_t i = 0; i < 3; ++i) c[i] = f / ts[i] % to[i];
          const bool in_a = c[dim] < sh[dim];
          if (!in_a) c[dim] -= sh[dim];
          const auto& st = in_a ? as : bs;
          const std::int64_t k = c[0] * st[0] + c[1] * st[1] + c[2] * st[2];
          want[static_cast<std::size_t>(f)] = (in_a ? xa : xb)[static_cast<std::size_t>(k)];
        }
        CHECK(deq(r) == want);
        (void)naive;
      }
  CHECK(joined > 30);
  CHECK(refused > 5);
  CHECK(same_params > 20);
  const Scheme two = Scheme::nvfp4().per_block({4});
  REQUIRE_THROWS_MATCHES(q_cat(std::vector<QuantizedParts>{make(two, sh, 1), make(two, sh, 2)}, 0),
                         ferry::QuantError,
                         Contains("two-level tensors join only under one tensor scale"));
  const QuantizedParts p = make(Scheme{}.per_axis(0), sh, 1);
  REQUIRE_THROWS_MATCHES(
      q_cat(std::vector<QuantizedParts>{p, make(Scheme{}.per_axis(1), sh, 1)}, 0),
      ferry::QuantError, Contains("tensor 1 has scheme"));
  REQUIRE_THROWS_AS(
      q_cat(std::vector<QuantizedParts>{p, make(Scheme{}.per_axis(0), Shape{3, 5}, 1)}, 0),
      ferry::ShapeError);
}

TEST_CASE("q_gather picks values by index and keeps the one param along the dim",
          "[quant][layout]") {
  const Shape sh{3, 5, 7};
  unsigned seed = 400;
  std::mt19937 rng(3);
  int ran = 0, refused = 0;
  for (const Scheme& base : bases())
    for (const Scheme& g : granularities_357())
      for (std::size_t dim = 0; dim < 3; ++dim) {
        const Scheme s = gran(base, g);
        const QuantizedParts q = make(s, sh, seed++);
        std::vector<std::int64_t> id = sh.to_vector();
        id[dim] = 4;
        id[(dim + 1) % 3] -= 1;  // a prefix of the other dims
        const Shape ish{id};
        std::vector<std::int64_t> idx(static_cast<std::size_t>(ish.numel()));
        for (auto& v : idx) v = static_cast<std::int64_t>(rng() % static_cast<unsigned>(sh[dim]));
        INFO(fmt::format("{} over {} gather dim {}", s, sh, dim));
        bool rule = true;
        try {
          check_gather(s, sh, dim);
        } catch (const ferry::QuantError&) {
          rule = false;
        }
        if (!rule) {
          ++refused;
          REQUIRE_THROWS_AS(q_gather(q, static_cast<std::int64_t>(dim), ish, idx),
                            ferry::QuantError);
          continue;
        }
        ++ran;
        const QuantizedParts r = q_gather(q, static_cast<std::int64_t>(dim), ish, idx);
        REQUIRE_NOTHROW(r.validate());
        const auto is = ish.strides();
        CHECK(deq(r) == naive_map(deq(q), sh, ish, [&](const Coords& c) {
                Coords src = c;
                src[dim] =
                    idx[static_cast<std::size_t>(c[0] * is[0] + c[1] * is[1] + c[2] * is[2])];
                return src;
              }));
      }
  CHECK(ran > 30);
  CHECK(refused > 30);
  const QuantizedParts b = make(Scheme{}.per_block({4}), sh, 1);
  REQUIRE_THROWS_MATCHES(q_gather(b, 2, sh, std::vector<std::int64_t>(105, 0)), ferry::QuantError,
                         Contains("dim 2 has 2 params along it"));
  REQUIRE_THROWS_MATCHES(q_gather(make(Scheme{}, sh, 1), 0, sh, std::vector<std::int64_t>(105, 3)),
                         ferry::IndexError, Contains("index 3 at position 0 is out of range"));
  REQUIRE_THROWS_AS(q_gather(b, 0, Shape{3, 6, 7}, std::vector<std::int64_t>(126, 0)),
                    ferry::ShapeError);
}

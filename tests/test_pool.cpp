// max_pool1d/2d (with indices), avg_pool1d/2d and the adaptive pools through the router, in both
// execution modes, against a reference written here as torch's CPU loops (output size, padding,
// ceil_mode, dilation, the divisor rule), plus small cases worked by hand, -inf, NaN, f16, the
// unbatched forms, and the errors.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <limits>
#include <optional>
#include <vector>

#include "matchers.hpp"
#include "nn_helpers.hpp"

using namespace ferry;
using ferry_test::data;
using ferry_test::Says;
using ferry_test::values;

namespace {
using R = Router<EigenCpu>;
using T = Tensor<EigenCpu>;
constexpr CpuDevice D0{0};
using I = std::int64_t;
constexpr double inf = std::numeric_limits<double>::infinity();

std::vector<I> ints(const T& t) { return t.to_data().to_vector<I>(); }

struct Geo {
  I k, s, p, d;
};
/// torch's pooling_output_shape.
I out_size(I in, Geo g, bool ceil) {
  const I num = in + 2 * g.p - g.d * (g.k - 1) - 1 + (ceil ? g.s - 1 : 0);
  I o = num / g.s + 1;
  if (ceil && (o - 1) * g.s >= in + g.p) --o;
  return o;
}

struct Ref {
  std::vector<double> v;
  std::vector<I> idx;
  I oh, ow;
};
/// Max pool as torch's loop (the clamped window start, moved on by the dilation; the first
/// strictly greater value; Ferry's rule for NaN: the first NaN), over planes of h x w.
Ref max_ref(const std::vector<double>& x, I planes, I h, I w, Geo gh, Geo gw, bool ceil) {
  Ref r{{}, {}, out_size(h, gh, ceil), out_size(w, gw, ceil)};
  for (I pl = 0; pl < planes; ++pl)
    for (I i = 0; i < r.oh; ++i)
      for (I j = 0; j < r.ow; ++j) {
        I hs = i * gh.s - gh.p, ws = j * gw.s - gw.p;
        const I he = std::min(hs + (gh.k - 1) * gh.d + 1, h);
        const I we = std::min(ws + (gw.k - 1) * gw.d + 1, w);
        while (hs < 0) hs += gh.d;
        while (ws < 0) ws += gw.d;
        double m = -inf;
        I mi = hs * w + ws;
        bool nan = false;
        for (I a = hs; a < he; a += gh.d)
          for (I b = ws; b < we; b += gw.d) {
            const double v = x[static_cast<std::size_t>((pl * h + a) * w + b)];
            if (!nan && (v > m || std::isnan(v))) {
              m = v;
              mi = a * w + b;
              nan = std::isnan(v);
            }
          }
        r.v.push_back(m);
        r.idx.push_back(mi);
      }
  return r;
}
/// Average pool as torch's loop: the divisor counts the padded window clipped to input + pad
/// (count_include_pad), or the input part only, or the override.
Ref avg_ref(const std::vector<double>& x, I planes, I h, I w, Geo gh, Geo gw, bool ceil,
            bool include_pad, std::optional<I> divisor) {
  Ref r{{}, {}, out_size(h, gh, ceil), out_size(w, gw, ceil)};
  for (I pl = 0; pl < planes; ++pl)
    for (I i = 0; i < r.oh; ++i)
      for (I j = 0; j < r.ow; ++j) {
        I hs = i * gh.s - gh.p, ws = j * gw.s - gw.p;
        I he = std::min(hs + gh.k, h + gh.p), we = std::min(ws + gw.k, w + gw.p);
        const I pool = (he - hs) * (we - ws);
        hs = std::max<I>(hs, 0);
        ws = std::max<I>(ws, 0);
        he = std::min(he, h);
        we = std::min(we, w);
        long double sum = 0;
        for (I a = hs; a < he; ++a)
          for (I b = ws; b < we; ++b) sum += x[static_cast<std::size_t>((pl * h + a) * w + b)];
        const I div = divisor ? *divisor : include_pad ? pool : (he - hs) * (we - ws);
        r.v.push_back(static_cast<double>(sum / static_cast<long double>(div)));
      }
  return r;
}
/// Adaptive windows [floor(i n / o), ceil((i + 1) n / o)); the mean or the row-major first max.
Ref adaptive_ref(const std::vector<double>& x, I planes, I h, I w, I oh, I ow, bool max) {
  Ref r{{}, {}, oh, ow};
  for (I pl = 0; pl < planes; ++pl)
    for (I i = 0; i < oh; ++i)
      for (I j = 0; j < ow; ++j) {
        const I hs = i * h / oh, he = ((i + 1) * h + oh - 1) / oh;
        const I ws = j * w / ow, we = ((j + 1) * w + ow - 1) / ow;
        long double sum = 0;
        double m = -inf;
        I mi = hs * w + ws;
        bool nan = false;
        for (I a = hs; a < he; ++a)
          for (I b = ws; b < we; ++b) {
            const double v = x[static_cast<std::size_t>((pl * h + a) * w + b)];
            sum += v;
            if (!nan && (v > m || std::isnan(v))) {
              m = v;
              mi = a * w + b;
              nan = std::isnan(v);
            }
          }
        r.v.push_back(
            max ? m : static_cast<double>(sum / static_cast<long double>((he - hs) * (we - ws))));
        r.idx.push_back(mi);
      }
  return r;
}

void check_same(const std::vector<double>& got, const std::vector<double>& want, double rel = 0) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else if (rel == 0)
      CHECK(got[i] == want[i]);
    else
      CHECK(std::abs(got[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])));
  }
}
}  // namespace

TEST_CASE("max_pool2d and avg_pool2d by hand on a 4x4 ramp") {
  R r(EigenCpu(1));
  std::vector<double> ramp(16);
  for (std::size_t i = 0; i < 16; ++i) ramp[i] = static_cast<double>(i);
  const auto x = r.from_vector(ramp, Shape{1, 1, 4, 4}, D0);
  const auto m = max_pool2d_with_indices(x, {2, 2});
  CHECK(m.values.shape() == Shape{1, 1, 2, 2});
  CHECK(values(m.values) == std::vector<double>{5, 7, 13, 15});
  CHECK(ints(m.indices) == std::vector<I>{5, 7, 13, 15});
  CHECK(values(avg_pool2d(x, {2, 2})) == std::vector<double>{2.5, 4.5, 10.5, 12.5});
  // Padding 1, stride 2, kernel 3: windows centred on 0, 2 (rows and columns).
  CHECK(values(max_pool2d(x, {3, 3}, {.stride = {2, 2}, .padding = {1, 1}})) ==
        std::vector<double>{5, 7, 13, 15});
  // The corner window holds 0, 1, 4, 5 and five padding zeros: 10 / 9 counted, 10 / 4 not.
  const auto a9 = values(avg_pool2d(x, {3, 3}, {.stride = {2, 2}, .padding = {1, 1}}));
  CHECK(a9[0] == 10.0 / 9.0);
  const auto a4 = values(
      avg_pool2d(x, {3, 3}, {.stride = {2, 2}, .padding = {1, 1}, .count_include_pad = false}));
  CHECK(a4[0] == 2.5);
  // 1-D ceil_mode over 0..4, kernel 2 stride 2: a third window holding 4 alone.
  const auto l = r.from_vector(std::vector<double>{0, 1, 2, 3, 4}, Shape{1, 1, 5}, D0);
  const auto m1 = max_pool1d_with_indices(l, 2, {.ceil_mode = true});
  CHECK(values(m1.values) == std::vector<double>{1, 3, 4});
  CHECK(ints(m1.indices) == std::vector<I>{1, 3, 4});
  CHECK(values(avg_pool1d(l, 2, {.ceil_mode = true})) == std::vector<double>{0.5, 2.5, 4});
  CHECK(values(max_pool1d(l, 2)) == std::vector<double>{1, 3});
}

TEST_CASE("max_pool2d with indices: stride padding dilation and ceil_mode as torch's loop") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  const I n = 2, c = 3, h = 9, w = 8;
  auto xs = data(static_cast<std::size_t>(n * c * h * w), 7);
  xs[5] = -inf;  // an infinity and equal maxima (ties go to the row-major first)
  xs[100] = xs[101] = xs[108] = 9.0;
  const auto x = r.from_vector(xs, Shape{n, c, h, w}, D0);
  struct Case {
    Geo gh, gw;
    bool ceil;
  };
  for (const Case& k :
       {Case{{2, 2, 0, 1}, {2, 2, 0, 1}, false}, Case{{3, 2, 1, 1}, {3, 1, 1, 1}, true},
        Case{{3, 2, 1, 2}, {2, 3, 1, 2}, true}, Case{{4, 3, 2, 1}, {1, 1, 0, 1}, false},
        Case{{2, 3, 1, 1}, {3, 2, 0, 3}, true}}) {
    INFO("kernel " << k.gh.k << "x" << k.gw.k << " stride " << k.gh.s << "," << k.gw.s
                   << " padding " << k.gh.p << "," << k.gw.p << " dilation " << k.gh.d << ","
                   << k.gw.d << " ceil " << k.ceil);
    const auto got = max_pool2d_with_indices(x, {k.gh.k, k.gw.k},
                                             {.stride = {k.gh.s, k.gw.s},
                                              .padding = {k.gh.p, k.gw.p},
                                              .dilation = {k.gh.d, k.gw.d},
                                              .ceil_mode = k.ceil});
    const auto want = max_ref(xs, n * c, h, w, k.gh, k.gw, k.ceil);
    CHECK(got.values.shape() == Shape{n, c, want.oh, want.ow});
    check_same(values(got.values), want.v);
    CHECK(ints(got.indices) == want.idx);
  }
}

TEST_CASE("max_pool2d: a window of -inf names a position in the input and NaN wins") {
  R r(EigenCpu(1));
  // Row 0: -inf everywhere; row 1 holds a NaN then a larger number.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> xs{-inf, -inf, -inf, -inf, 1, nan, 7, nan};
  const auto x3 = r.from_vector(xs, Shape{2, 1, 4}, D0);  // unbatched: [C = 2, H = 1, W = 4]
  const auto m = max_pool2d_with_indices(x3, {1, 3}, {.stride = {1, 2}, .padding = {0, 1}});
  CHECK(m.values.shape() == Shape{2, 1, 2});
  const auto v = values(m.values);
  CHECK(v[0] == -inf);
  CHECK(v[1] == -inf);
  CHECK(std::isnan(v[2]));
  CHECK(std::isnan(v[3]));
  // Windows start at -1 and 1: -inf found in the padding names the first input position; of
  // two NaNs the first is named (torch's CPU kernel names the last).
  CHECK(ints(m.indices) == std::vector<I>{0, 1, 1, 1});
}

TEST_CASE("avg_pool2d: the divisor rules with padding and ceil_mode as torch's loop") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  const I n = 2, c = 2, h = 7, w = 10;
  const auto xs = data(static_cast<std::size_t>(n * c * h * w), 11);
  const auto x = r.from_vector(xs, Shape{n, c, h, w}, D0);
  struct Case {
    Geo gh, gw;
    bool ceil, include;
    std::optional<I> div;
  };
  for (const Case& k : {Case{{2, 2, 0, 1}, {2, 2, 0, 1}, false, true, std::nullopt},
                        Case{{3, 2, 1, 1}, {3, 3, 1, 1}, true, true, std::nullopt},
                        Case{{3, 2, 1, 1}, {3, 3, 1, 1}, true, false, std::nullopt},
                        Case{{2, 3, 1, 1}, {4, 3, 2, 1}, true, false, std::nullopt},
                        Case{{3, 1, 1, 1}, {2, 2, 1, 1}, false, true, I{5}}}) {
    INFO("kernel " << k.gh.k << "x" << k.gw.k << " ceil " << k.ceil << " include " << k.include);
    const auto got = avg_pool2d(x, {k.gh.k, k.gw.k},
                                {.stride = {k.gh.s, k.gw.s},
                                 .padding = {k.gh.p, k.gw.p},
                                 .ceil_mode = k.ceil,
                                 .count_include_pad = k.include,
                                 .divisor_override = k.div});
    const auto want = avg_ref(xs, n * c, h, w, k.gh, k.gw, k.ceil, k.include, k.div);
    CHECK(got.shape() == Shape{n, c, want.oh, want.ow});
    check_same(values(got), want.v, 1e-14);
  }
  // f16 sums in f32 and rounds once: within half an f16 ulp of the exact mean.
  const auto xh = ferry::cast(x, DType::f16);
  const auto xr = values(xh);
  const auto want = avg_ref(xr, n * c, h, w, {3, 2, 1, 1}, {3, 3, 1, 1}, true, false, {});
  const auto got = avg_pool2d(
      xh, {3, 3},
      {.stride = {2, 3}, .padding = {1, 1}, .ceil_mode = true, .count_include_pad = false});
  CHECK(got.dtype() == DType::f16);
  check_same(values(got), want.v, 1.0 / 2048);
}

TEST_CASE("adaptive pools: uneven and even windows and max indices row-major first") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  const I n = 2, c = 3, h = 7, w = 9;
  auto xs = data(static_cast<std::size_t>(n * c * h * w), 21);
  xs[10] = xs[18] = 5.0;  // equal maxima in one window: rows 1 and 2 of plane 0
  xs[70] = std::numeric_limits<double>::quiet_NaN();
  const auto x = r.from_vector(xs, Shape{n, c, h, w}, D0);
  for (const auto o : {std::array<I, 2>{3, 4}, std::array<I, 2>{7, 3}, std::array<I, 2>{1, 1},
                       std::array<I, 2>{5, 9}}) {
    INFO("output " << o[0] << "x" << o[1]);
    check_same(values(adaptive_avg_pool2d(x, o)),
               adaptive_ref(xs, n * c, h, w, o[0], o[1], false).v, 1e-14);
    const auto m = adaptive_max_pool2d_with_indices(x, o);
    const auto want = adaptive_ref(xs, n * c, h, w, o[0], o[1], true);
    check_same(values(m.values), want.v);
    CHECK(ints(m.indices) == want.idx);
    check_same(values(adaptive_max_pool2d(x, o)), want.v);
  }
  // 1-D and unbatched forms.
  const auto l = r.from_vector(std::vector<double>{1, 4, 2, 8, 5, 7, 3}, Shape{1, 7}, D0);
  // Windows of 7 over 3: [0, 3), [2, 5), [4, 7).
  check_same(values(adaptive_avg_pool1d(l, 3)), {7.0 / 3, 15.0 / 3, 15.0 / 3}, 1e-15);
  const auto m1 = adaptive_max_pool1d_with_indices(l, 3);
  CHECK(m1.values.shape() == Shape{1, 3});
  CHECK(values(m1.values) == std::vector<double>{4, 8, 7});
  CHECK(ints(m1.indices) == std::vector<I>{1, 3, 5});
  CHECK(values(adaptive_max_pool1d(l, 3)) == std::vector<double>{4, 8, 7});
  const auto u =
      r.from_vector(std::vector<double>(xs.begin(), xs.begin() + h * w), Shape{1, h, w}, D0);
  CHECK(adaptive_avg_pool2d(u, {2, 2}).shape() == Shape{1, 2, 2});
  CHECK(max_pool2d(u, {2, 2}).shape() == Shape{1, 3, 4});
  CHECK(avg_pool2d(u, {2, 2}).shape() == Shape{1, 3, 4});
}

TEST_CASE("pools reject bad kernels, padding, ranks, dtypes and sizes by name") {
  R r(EigenCpu(1));
  const auto x = r.zeros(Shape{1, 2, 4, 4}, DType::f32, D0);
  REQUIRE_THROWS_MATCHES(max_pool2d(x, {0, 2}), ValueError, Says("max_pool2d: kernel 0"));
  REQUIRE_THROWS_MATCHES(max_pool2d(x, {2, 2}, {.padding = {2, 0}}), ValueError,
                         Says("padding 2 is more than half the kernel 2"));
  REQUIRE_THROWS_MATCHES(avg_pool2d(x, {5, 2}), ShapeError, Says("avg_pool2d: input [1, 2, 4, 4]"));
  REQUIRE_THROWS_MATCHES(avg_pool2d(x, {2, 2}, {.divisor_override = I{0}}), ValueError,
                         Says("divisor_override is 0"));
  REQUIRE_THROWS_MATCHES(max_pool2d(r.zeros(Shape{4, 4}, DType::f32, D0), {2, 2}), ShapeError,
                         Says("max_pool2d: input [4, 4]"));
  REQUIRE_THROWS_MATCHES(max_pool1d(x, 2), ShapeError, Says("max_pool1d"));
  REQUIRE_THROWS_MATCHES(max_pool2d(r.zeros(Shape{1, 1, 4, 4}, DType::i32, D0), {2, 2}), DTypeError,
                         Says("max_pool2d"));
  REQUIRE_THROWS_MATCHES(adaptive_avg_pool2d(x, {0, 2}), ShapeError,
                         Says("adaptive_avg_pool2d: output size 0"));
  REQUIRE_THROWS_MATCHES(adaptive_max_pool2d(r.zeros(Shape{1, 2, 0, 4}, DType::f32, D0), {1, 1}),
                         ShapeError, Says("adaptive_max_pool2d"));
  // An empty batch pools to an empty batch.
  CHECK(max_pool2d(r.zeros(Shape{0, 2, 4, 4}, DType::f32, D0), {2, 2}).shape() ==
        Shape{0, 2, 2, 2});
  CHECK(avg_pool2d(r.zeros(Shape{0, 2, 4, 4}, DType::f32, D0), {2, 2}).shape() ==
        Shape{0, 2, 2, 2});
}

// interpolate through the router against torch's CPU loops written here in long double (the
// source index rules, nearest's f32 floor, the 2-D bilinear and bicubic sums taken whole, not
// separably), plus small cases worked by hand, scale factors, f16, 1-D and 3-D, and the errors.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <vector>

#include "matchers.hpp"
#include "nn_helpers.hpp"

using namespace ferry;
using ferry_test::check_near;
using ferry_test::data;
using ferry_test::Says;
using ferry_test::values;

namespace {
using R = Router<EigenCpu>;
using I = std::int64_t;
using LD = long double;
constexpr CpuDevice D0{0};

using Mode = InterpolateMode;

/// torch's area_pixel_compute_source_index; `inv` is 1 / scale_factor, or 0 for in / out.
LD source(I dst, I in, I out, bool align, double inv, bool cubic) {
  if (align) return out > 1 ? static_cast<LD>(in - 1) / static_cast<LD>(out - 1) * dst : 0;
  const LD s = inv > 0 ? static_cast<LD>(inv) : static_cast<LD>(in) / static_cast<LD>(out);
  const LD src = s * (static_cast<LD>(dst) + 0.5L) - 0.5L;
  return !cubic && src < 0 ? 0 : src;
}
LD cubic_w(LD x) {  // Keys, A = -0.75, |x| < 2
  const LD a = -0.75L;
  x = std::abs(x);
  return x <= 1 ? ((a + 2) * x - (a + 3)) * x * x + 1 : ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

/// Planes of h x w resized to oh x ow, as torch's upsample_bilinear2d / bicubic2d / nearest2d.
std::vector<LD> ref2d(const std::vector<double>& x, I planes, I h, I w, I oh, I ow, Mode m,
                      bool align, std::array<double, 2> inv = {0, 0}) {
  std::vector<LD> y;
  auto at = [&](I p, I r, I c) {
    r = std::clamp<I>(r, 0, h - 1);
    c = std::clamp<I>(c, 0, w - 1);
    return static_cast<LD>(x[static_cast<std::size_t>((p * h + r) * w + c)]);
  };
  for (I p = 0; p < planes; ++p)
    for (I i = 0; i < oh; ++i)
      for (I j = 0; j < ow; ++j) {
        if (m == Mode::nearest) {
          const float sh = inv[0] > 0 ? static_cast<float>(inv[0])
                                      : static_cast<float>(h) / static_cast<float>(oh);
          const float sw = inv[1] > 0 ? static_cast<float>(inv[1])
                                      : static_cast<float>(w) / static_cast<float>(ow);
          y.push_back(
              at(p, std::min<I>(static_cast<I>(std::floor(static_cast<float>(i) * sh)), h - 1),
                 std::min<I>(static_cast<I>(std::floor(static_cast<float>(j) * sw)), w - 1)));
          continue;
        }
        const bool cubic = m == Mode::cubic;
        const LD sy = source(i, h, oh, align, inv[0], cubic),
                 sx = source(j, w, ow, align, inv[1], cubic);
        const I y0 = static_cast<I>(std::floor(sy)), x0 = static_cast<I>(std::floor(sx));
        const LD ty = sy - y0, tx = sx - x0;
        LD acc = 0;
        if (!cubic) {
          for (I a = 0; a < 2; ++a)
            for (I b = 0; b < 2; ++b)
              acc += (a ? ty : 1 - ty) * (b ? tx : 1 - tx) *
                     at(p, std::min(y0 + a, h - 1), std::min(x0 + b, w - 1));
        } else {
          for (I a = -1; a <= 2; ++a)
            for (I b = -1; b <= 2; ++b)
              acc += cubic_w(ty - a) * cubic_w(tx - b) * at(p, y0 + a, x0 + b);
        }
        y.push_back(acc);
      }
  return y;
}
}  // namespace

TEST_CASE("interpolate by hand: nearest repeats and linear blends") {
  R r(EigenCpu(1));
  const auto x = r.from_vector(std::vector<double>{0, 1}, Shape{1, 1, 2}, D0);
  CHECK(values(interpolate(x, {4})) == std::vector<double>{0, 0, 1, 1});
  CHECK(values(interpolate(x, {3}, {.mode = Mode::linear, .align_corners = true})) ==
        std::vector<double>{0, 0.5, 1});
  CHECK(values(interpolate(x, {4}, {.mode = Mode::linear})) ==
        std::vector<double>{0, 0.25, 0.75, 1});
  const auto x3 = r.from_vector(std::vector<double>{10, 20, 30}, Shape{1, 1, 3}, D0);
  CHECK(values(interpolate(x3, {2})) == std::vector<double>{10, 20});  // floor(0 1.5), floor(1 1.5)
  // A constant plane stays constant under bicubic (its weights sum to 1).
  const auto c = r.full(Shape{1, 2, 3, 3}, Scalar(2.5), DType::f64, D0);
  for (double v : values(interpolate(c, {5, 7}, {.mode = Mode::cubic})))
    CHECK(std::abs(v - 2.5) < 1e-14);
  // Integers resize by nearest.
  const auto xi = r.from_vector(std::vector<std::int32_t>{1, 2, 3, 4}, Shape{1, 1, 2, 2}, D0);
  CHECK(interpolate(xi, {2, 4}).to_data().to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{1, 1, 2, 2, 3, 3, 4, 4});
}

TEST_CASE("interpolate 2-D: nearest bilinear and bicubic as torch's loops") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const I n = 2, c = 2, h = 5, w = 7;
  const auto xs = data(static_cast<std::size_t>(n * c * h * w), 3);
  const auto x = r.from_vector(xs, Shape{n, c, h, w}, D0);
  for (const auto m : {Mode::nearest, Mode::linear, Mode::cubic})
    for (const bool align : {false, true}) {
      if (m == Mode::nearest && align) continue;
      for (const auto size : {std::array<I, 2>{9, 4}, std::array<I, 2>{3, 13},
                              std::array<I, 2>{1, 1}, std::array<I, 2>{5, 7}}) {
        INFO("mode " << static_cast<int>(m) << " align " << align << " size " << size[0] << "x"
                     << size[1]);
        const auto y = interpolate(x, {size[0], size[1]}, {.mode = m, .align_corners = align});
        CHECK(y.shape() == Shape{n, c, size[0], size[1]});
        check_near(values(y), ref2d(xs, n * c, h, w, size[0], size[1], m, align), 1e-13);
      }
    }
  // Scale factors: the size floor(in f), positions mapped back by 1 / f.
  for (const auto m : {Mode::nearest, Mode::linear, Mode::cubic}) {
    const auto y = interpolate(x, {}, {.mode = m, .scale_factor = {1.7, 0.6}});
    CHECK(y.shape() == Shape{n, c, 8, 4});
    check_near(values(y), ref2d(xs, n * c, h, w, 8, 4, m, false, {1 / 1.7, 1 / 0.6}), 1e-13);
  }
  // f16 runs in f32 and rounds once.
  const auto xh = ferry::cast(x, DType::f16);
  const auto yh = interpolate(xh, {8, 9}, {.mode = Mode::linear});
  CHECK(yh.dtype() == DType::f16);
  check_near(values(yh), ref2d(values(xh), n * c, h, w, 8, 9, Mode::linear, false), 1.0 / 1024);
}

TEST_CASE("interpolate 1-D and 3-D are the same rules per dim and errors name the op") {
  R r(EigenCpu(1));
  const auto xs = data(2 * 3 * 4 * 5, 7);
  // 3-D trilinear over a depth of 1 is bilinear of each plane.
  const auto x5 = r.from_vector(xs, Shape{2, 3, 1, 4, 5}, D0);
  const auto y5 = interpolate(x5, {1, 6, 3}, {.mode = Mode::linear, .align_corners = true});
  check_near(values(y5), ref2d(xs, 6, 4, 5, 6, 3, Mode::linear, true), 1e-13);
  // 1-D linear is bilinear over a height of 1.
  const auto x3 = r.from_vector(xs, Shape{2, 3, 20}, D0);
  check_near(values(interpolate(x3, {7}, {.mode = Mode::linear})),
             ref2d(xs, 6, 1, 20, 1, 7, Mode::linear, false), 1e-13);

  REQUIRE_THROWS_MATCHES(interpolate(x3, {7}, {.mode = Mode::cubic}), ShapeError,
                         Says("interpolate: input [2, 3, 20] must be [N, C] and 2 spatial dims"));
  REQUIRE_THROWS_MATCHES(interpolate(x3, {7, 2}), ValueError,
                         Says("give either a size or a scale factor"));
  REQUIRE_THROWS_MATCHES(interpolate(x3, {}), ValueError, Says("(0 and 0 given)"));
  REQUIRE_THROWS_MATCHES(interpolate(x3, {0}), ShapeError, Says("to size 0"));
  REQUIRE_THROWS_MATCHES(interpolate(x3, {}, {.scale_factor = {-1.0}}), ValueError,
                         Says("scale factor -1"));
  REQUIRE_THROWS_MATCHES(interpolate(x3, {4}, {.align_corners = true}), ValueError,
                         Says("align_corners is for linear and cubic"));
  REQUIRE_THROWS_MATCHES(interpolate(ferry::cast(x3, DType::i32), {4}, {.mode = Mode::linear}),
                         DTypeError, Says("interpolate"));
}

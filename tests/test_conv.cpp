// conv3d, conv_transpose1d/2d/3d and unfold4d through the router, in both execution modes,
// against their definitions written here as plain loops in long double: the sum over the
// kernel window (conv3d), the scatter of each input element through the kernel (the transposed
// convolutions: y[i s - p + a d] += x[i] w[a]), and the zero-padded windows (unfold).
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

std::size_t at(I i) { return static_cast<std::size_t>(i); }

/// conv3d by its definition, one group per `g`.
std::vector<LD> conv3d_ref(const std::vector<double>& x, const std::vector<double>& w, I n, I c,
                           std::array<I, 3> in, I oc, std::array<I, 3> k, std::array<I, 3> s,
                           std::array<I, 3> p, std::array<I, 3> d, I g, std::array<I, 3>& out) {
  for (std::size_t i = 0; i < 3; ++i)
    out[i] = (in[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
  const I cg = c / g, og = oc / g;
  std::vector<LD> y(at(n * oc * out[0] * out[1] * out[2]));
  for (I b = 0; b < n; ++b)
    for (I o = 0; o < oc; ++o)
      for (I z = 0; z < out[0]; ++z)
        for (I i = 0; i < out[1]; ++i)
          for (I j = 0; j < out[2]; ++j) {
            LD acc = 0;
            for (I cc = 0; cc < cg; ++cc)
              for (I e = 0; e < k[0]; ++e)
                for (I a = 0; a < k[1]; ++a)
                  for (I f = 0; f < k[2]; ++f) {
                    const I zz = z * s[0] - p[0] + e * d[0], r = i * s[1] - p[1] + a * d[1],
                            q = j * s[2] - p[2] + f * d[2];
                    if (zz < 0 || zz >= in[0] || r < 0 || r >= in[1] || q < 0 || q >= in[2])
                      continue;
                    const I ch = o / og * cg + cc;
                    acc += static_cast<LD>(
                               x[at(((((b * c + ch) * in[0] + zz) * in[1]) + r) * in[2] + q)]) *
                           w[at((((o * cg + cc) * k[0] + e) * k[1] + a) * k[2] + f)];
                  }
            y[at((((b * oc + o) * out[0] + z) * out[1] + i) * out[2] + j)] = acc;
          }
  return y;
}

/// conv_transpose2d by its definition: every x[n][c][i][j] adds x w[c][o'][a][b] to
/// y[n][g o_g + o'][i s - p + a d][j s - p + b d] (inside the output), plus bias.
std::vector<LD> convt2d_ref(const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& bias, I n, I c, I h, I wd, I og, I kh, I kw,
                            std::array<I, 2> s, std::array<I, 2> p, std::array<I, 2> d,
                            std::array<I, 2> op, I g, I& oh, I& ow) {
  oh = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op[0] + 1;
  ow = (wd - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op[1] + 1;
  const I oc = og * g, cg = c / g;
  std::vector<LD> y(at(n * oc * oh * ow));
  for (I b = 0; b < n; ++b)
    for (I o = 0; o < oc; ++o)
      for (I i = 0; i < oh * ow; ++i)
        y[at((b * oc + o) * oh * ow + i)] = bias.empty() ? 0 : bias[at(o)];
  for (I b = 0; b < n; ++b)
    for (I cc = 0; cc < c; ++cc)
      for (I i = 0; i < h; ++i)
        for (I j = 0; j < wd; ++j)
          for (I o2 = 0; o2 < og; ++o2)
            for (I a = 0; a < kh; ++a)
              for (I e = 0; e < kw; ++e) {
                const I r = i * s[0] - p[0] + a * d[0], q = j * s[1] - p[1] + e * d[1];
                if (r < 0 || r >= oh || q < 0 || q >= ow) continue;
                const I o = cc / cg * og + o2;
                y[at(((b * oc + o) * oh + r) * ow + q)] +=
                    static_cast<LD>(x[at(((b * c + cc) * h + i) * wd + j)]) *
                    w[at(((cc * og + o2) * kh + a) * kw + e)];
              }
  return y;
}
}  // namespace

TEST_CASE("conv3d: stride padding dilation and groups as the definition") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const I n = 2, c = 4, oc = 6, g = 2;
  const std::array<I, 3> in{5, 6, 4}, k{3, 2, 2};
  const auto xs = data(at(n * c * in[0] * in[1] * in[2]), 1);
  const auto ws = data(at(oc * (c / g) * k[0] * k[1] * k[2]), 2);
  const auto bs = data(at(oc), 3);
  const auto x = r.from_vector(xs, Shape{n, c, in[0], in[1], in[2]}, D0);
  const auto w = r.from_vector(ws, Shape{oc, c / g, k[0], k[1], k[2]}, D0);
  const auto b = r.from_vector(bs, Shape{oc}, D0);
  std::array<I, 3> out{};
  auto want = conv3d_ref(xs, ws, n, c, in, oc, k, {2, 1, 1}, {1, 0, 1}, {1, 2, 1}, g, out);
  for (std::size_t i = 0; i < want.size(); ++i)
    want[i] += bs[i / at(out[0] * out[1] * out[2]) % at(oc)];
  const auto y = conv3d(
      x, w, b, {.stride = {2, 1, 1}, .padding = {1, 0, 1}, .dilation = {1, 2, 1}, .groups = g});
  CHECK(y.shape() == Shape{n, oc, out[0], out[1], out[2]});
  check_near(values(y), want, 1e-12);
  REQUIRE_THROWS_MATCHES(conv3d(x, w), ShapeError, Says("conv3d: input [2, 4, 5, 6, 4], weight"));
  REQUIRE_THROWS_MATCHES(conv3d(x, w, b, {.output_padding = {1, 0, 0}, .groups = 2}), ValueError,
                         Says("conv3d: output_padding is for transposed convolutions"));
}

TEST_CASE("conv_transpose2d: stride padding dilation output_padding and groups as the definition") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const I n = 2, c = 4, h = 4, wd = 5, og = 3, g = 2, kh = 3, kw = 2;
  const auto xs = data(at(n * c * h * wd), 11), ws = data(at(c * og * kh * kw), 12),
             bs = data(at(og * g), 13);
  const auto x = r.from_vector(xs, Shape{n, c, h, wd}, D0);
  const auto w = r.from_vector(ws, Shape{c, og, kh, kw}, D0);
  const auto b = r.from_vector(bs, Shape{og * g}, D0);
  struct Case {
    std::array<I, 2> s, p, d, op;
  };
  for (const Case& k :
       {Case{{1, 1}, {0, 0}, {1, 1}, {0, 0}}, Case{{2, 3}, {1, 0}, {1, 1}, {1, 2}},
        Case{{2, 2}, {2, 1}, {2, 1}, {0, 1}}, Case{{3, 1}, {0, 1}, {1, 2}, {2, 1}}}) {
    INFO("stride " << k.s[0] << "," << k.s[1] << " padding " << k.p[0] << "," << k.p[1]
                   << " dilation " << k.d[0] << "," << k.d[1] << " output_padding " << k.op[0]
                   << "," << k.op[1]);
    I oh = 0, ow = 0;
    const auto want =
        convt2d_ref(xs, ws, bs, n, c, h, wd, og, kh, kw, k.s, k.p, k.d, k.op, g, oh, ow);
    const auto y = conv_transpose2d(
        x, w, b,
        {.stride = k.s, .padding = k.p, .dilation = k.d, .output_padding = k.op, .groups = g});
    CHECK(y.shape() == Shape{n, og * g, oh, ow});
    check_near(values(y), want, 1e-12);
  }
  // conv_transpose1d: the 2-D definition over a height of 1.
  const auto x1 =
      r.from_vector(std::vector<double>(xs.begin(), xs.begin() + 2 * 4 * 7), Shape{2, 4, 7}, D0);
  const auto w1 =
      r.from_vector(std::vector<double>(ws.begin(), ws.begin() + 4 * 3 * 3), Shape{4, 3, 3}, D0);
  I oh = 0, ow = 0;
  const auto want1 = convt2d_ref(values(x1), values(w1), {}, 2, 4, 1, 7, 3, 1, 3, {1, 2}, {0, 1},
                                 {1, 1}, {0, 1}, 1, oh, ow);
  const auto y1 = conv_transpose1d(x1, w1, std::nullopt,
                                   {.stride = {2}, .padding = {1}, .output_padding = {1}});
  CHECK(y1.shape() == Shape{2, 3, ow});
  check_near(values(y1), want1, 1e-12);
  // conv_transpose3d with a depth of 1 and a 1-deep kernel is conv_transpose2d.
  const auto y3 = conv_transpose3d(
      unsqueeze(x, 2), unsqueeze(w, 2), b,
      {.stride = {1, 2, 3}, .padding = {0, 1, 0}, .output_padding = {0, 1, 2}, .groups = g});
  check_near(
      values(squeeze(y3, 2)),
      convt2d_ref(xs, ws, bs, n, c, h, wd, og, kh, kw, {2, 3}, {1, 0}, {1, 1}, {1, 2}, g, oh, ow),
      1e-12);

  REQUIRE_THROWS_MATCHES(
      conv_transpose2d(x, w, b, {.stride = {2, 2}, .output_padding = {2, 0}, .groups = 2}),
      ValueError, Says("conv_transpose2d: stride 2, padding 0, dilation 1 and output_padding 2"));
  REQUIRE_THROWS_MATCHES(conv_transpose2d(x, w, b), ShapeError, Says("conv_transpose2d"));
  REQUIRE_THROWS_MATCHES(conv_transpose2d(x, w, std::nullopt, {.padding = {4, 0}, .groups = 2}),
                         ShapeError, Says("gives no output"));
}

TEST_CASE("unfold4d gives conv2d's columns: zero-padded windows channel-major") {
  R r(EigenCpu(1));
  const I n = 2, c = 3, h = 5, w = 4, kh = 2, kw = 3;
  const auto xs = data(at(n * c * h * w), 21);
  const auto x = r.from_vector(xs, Shape{n, c, h, w}, D0);
  const std::array<I, 2> s{2, 1}, p{1, 1}, d{1, 1};
  const I oh = (h + 2 * p[0] - d[0] * (kh - 1) - 1) / s[0] + 1;
  const I ow = (w + 2 * p[1] - d[1] * (kw - 1) - 1) / s[1] + 1;
  std::vector<LD> want;
  for (I b = 0; b < n; ++b)
    for (I cc = 0; cc < c; ++cc)
      for (I a = 0; a < kh; ++a)
        for (I e = 0; e < kw; ++e)
          for (I i = 0; i < oh; ++i)
            for (I j = 0; j < ow; ++j) {
              const I rr = i * s[0] - p[0] + a * d[0], q = j * s[1] - p[1] + e * d[1];
              want.push_back(rr < 0 || rr >= h || q < 0 || q >= w
                                 ? 0
                                 : xs[at(((b * c + cc) * h + rr) * w + q)]);
            }
  const auto y = unfold4d(x, {kh, kw}, {.stride = s, .padding = p});
  CHECK(y.shape() == Shape{n, c * kh * kw, oh * ow});
  check_near(values(y), want, 0);
  // Integers unfold too.
  const auto yi = unfold4d(ferry::cast(x, DType::i32), {kh, kw}, {.stride = s, .padding = p});
  CHECK(yi.dtype() == DType::i32);
  REQUIRE_THROWS_MATCHES(unfold4d(x, {2, 2}, {.groups = 3}), ValueError, Says("unfold4d: groups"));
  REQUIRE_THROWS_MATCHES(unfold4d(x, {7, 2}), ShapeError,
                         Says("unfold4d: input [2, 3, 5, 4] padded by 0"));
}

// linear, embedding, layer_norm, rms_norm, group_norm, batch_norm and attention through the router,
// in both execution modes, against references computed here in long double with plain loops (the
// formulas of torch's documentation); f16 against the same references at f16's precision;
// constant rows, NaN, groups equal to channels, empty batches, and the errors.
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
using ferry_test::check_close;
using ferry_test::data;
using ferry_test::Says;
using ferry_test::values;

namespace {
using R = Router<EigenCpu>;
using T = Tensor<EigenCpu>;
constexpr CpuDevice D0{0};
using LD = long double;

/// (x - mean) / sqrt(var + eps) over consecutive rows of `inner` elements, biased variance.
std::vector<LD> standardized(const std::vector<double>& x, std::size_t inner, LD eps) {
  std::vector<LD> y(x.size());
  for (std::size_t r = 0; r * inner < x.size(); ++r) {
    LD m = 0, v = 0;
    for (std::size_t i = 0; i < inner; ++i) m += x[r * inner + i];
    m /= static_cast<LD>(inner);
    for (std::size_t i = 0; i < inner; ++i) v += (x[r * inner + i] - m) * (x[r * inner + i] - m);
    v /= static_cast<LD>(inner);
    for (std::size_t i = 0; i < inner; ++i)
      y[r * inner + i] = (x[r * inner + i] - m) / std::sqrt(v + eps);
  }
  return y;
}
}  // namespace

TEST_CASE("linear is x times weight transposed plus bias, batched and on a vector") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto xs = data(2 * 3 * 4, 1), ws = data(5 * 4, 2), bs = data(5, 3);
  const auto x = r.from_vector(xs, Shape{2, 3, 4}, D0);
  const auto w = r.from_vector(ws, Shape{5, 4}, D0);
  const auto b = r.from_vector(bs, Shape{5}, D0);
  std::vector<LD> want(2 * 3 * 5);
  for (std::size_t row = 0; row < 6; ++row)
    for (std::size_t o = 0; o < 5; ++o) {
      LD s = bs[o];
      for (std::size_t i = 0; i < 4; ++i) s += static_cast<LD>(xs[row * 4 + i]) * ws[o * 4 + i];
      want[row * 5 + o] = s;
    }
  const auto y = linear(x, w, b);
  CHECK(y.shape() == Shape{2, 3, 5});
  check_close(values(y), want, 1e-13, 1e-13);
  // Without bias, on a vector: [4] -> [5].
  const auto v =
      linear(r.from_vector(std::vector<double>(xs.begin(), xs.begin() + 4), Shape{4}, D0), w);
  CHECK(v.shape() == Shape{5});
  std::vector<LD> want_v(5);
  for (std::size_t o = 0; o < 5; ++o) want_v[o] = want[o] - bs[o];
  check_close(values(v), want_v, 1e-13, 1e-13);
  REQUIRE_THROWS_MATCHES(linear(x, r.from_vector(ws, Shape{4, 5}, D0)), ShapeError, Says("linear"));
  REQUIRE_THROWS_MATCHES(linear(x, w, r.from_vector(bs, Shape{1, 5}, D0)), ShapeError,
                         Says("bias has shape [1, 5], expected [5]"));
}

namespace {
/// EigenCpu without its fused q_linear: linear(x, q) takes the fallback (dequantize, permute,
/// matmul), what a backend without the kernel runs.
struct NoQLinear : EigenCpu {
  using EigenCpu::EigenCpu;
  template <class... A>
  void q_linear(A&&...) = delete;
};

/// x [rows, k] times the dequantized w [n, k] transposed, plus bias, in long double.
std::vector<LD> linear_ref(const std::vector<double>& x, const std::vector<double>& w,
                           const std::vector<double>& b, std::size_t k) {
  const std::size_t rows = x.size() / k, n = w.size() / k;
  std::vector<LD> y(rows * n);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t o = 0; o < n; ++o) {
      LD s = b.empty() ? 0 : b[o];
      for (std::size_t j = 0; j < k; ++j) s += static_cast<LD>(x[i * k + j]) * w[o * k + j];
      y[i * n + o] = s;
    }
  return y;
}

template <class Be>
void check_quantized_linear(Execution mode) {
  Router<Be> r(Be(2), {.execution = mode});
  using quant::Scheme;
  using quant::ValueType;
  // 300 x 300 weights: the kernel dequantizes 218 rows at a time, so two tiles.
  const std::int64_t k = 300, n = 300;
  const auto xs = data(2 * 3 * k, 41), bs = data(n, 43);
  const auto x = ferry::cast(r.from_vector(xs, Shape{2, 3, k}, D0), DType::f32);
  const auto wf = ferry::cast(r.from_vector(data(n * k, 42), Shape{n, k}, D0), DType::f32);
  const auto b = ferry::cast(r.from_vector(bs, Shape{n}, D0), DType::f32);
  for (const auto& s : {Scheme::of(ValueType::i8).per_axis(0),
                        Scheme::of(ValueType::i4).per_block({1, 32}).packed_u8(),
                        Scheme::of(ValueType::u8).affine()}) {
    INFO("scheme " << s);
    const auto q = quantize_dynamic(wf, s);
    const auto wd = values(dequantize(q));
    const auto xv = values(x);
    const auto y = linear(x, q, b);
    CHECK(y.shape() == Shape{2, 3, n});
    CHECK(y.dtype() == DType::f32);
    check_close(values(y), linear_ref(xv, wd, bs, k), 2e-5, 2e-5);
    // f64 activations stay f64; f16 ones run in f32 and round once; a vector gives a vector.
    const auto y64 = linear(ferry::cast(x, DType::f64), q);
    CHECK(y64.dtype() == DType::f64);
    check_close(values(y64), linear_ref(xv, wd, {}, k), 1e-12, 1e-12);
    const auto xh = ferry::cast(x, DType::f16);
    const auto yh = linear(xh, q);
    CHECK(yh.dtype() == DType::f16);
    check_close(values(yh), linear_ref(values(xh), wd, {}, k), 1.0 / 1024, 1e-3);
    const auto yv = linear(reshape(slice(x, {Range{0, 1}, Range{0, 1}, Range{0, k}}), Shape{k}), q);
    CHECK(yv.shape() == Shape{n});
    check_close(values(yv), linear_ref({xv.begin(), xv.begin() + k}, wd, {}, k), 2e-5, 2e-5);
    // The weight is used, not consumed, and moves packed like any quantized tensor.
    const CpuDevice d1{1};
    check_close(values(linear(x.to(d1), q.to(d1), b.to(d1))), linear_ref(xv, wd, bs, k), 2e-5,
                2e-5);
  }
  const auto q = quantize_dynamic(wf, Scheme::of(ValueType::i8).per_axis(0));
  REQUIRE_THROWS_MATCHES(linear(ferry::cast(x, DType::i32), q), DTypeError,
                         Says("linear: needs float activations"));
  REQUIRE_THROWS_MATCHES(linear(reshape(x, Shape{2, 900}), q), ShapeError,
                         Says("linear: input [2, 900] and weight [300, 300] do not fit"));
  REQUIRE_THROWS_MATCHES(linear(x, q, ferry::cast(b, DType::f64)), DTypeError, Says("linear"));
}
}  // namespace

TEST_CASE("linear with a quantized weight [out, in] multiplies it packed (q_linear)") {
  check_quantized_linear<EigenCpu>(GENERATE(Execution::Async, Execution::Inline));
}
TEST_CASE("linear with a quantized weight on a backend without q_linear: the fallback") {
  check_quantized_linear<NoQLinear>(Execution::Inline);
}

TEST_CASE("linear at decode sizes reads the packed weight directly and agrees with the fallback") {
  // K a multiple of 32 and at most 8 rows: EigenCpu's q_linear takes quant::linear_packed (on
  // a CPU with AVX2); 9 rows take the dequantized tiles. Both match the reference and the
  // fallback of a backend without q_linear.
  Router<EigenCpu> r(EigenCpu(1));
  Router<NoQLinear> f(NoQLinear(1));
  using quant::Scheme;
  using quant::ValueType;
  const std::int64_t k = 256, n = 70;
  const auto wv = data(n * k, 51);
  const auto wf = ferry::cast(r.from_vector(wv, Shape{n, k}, D0), DType::f32);
  const auto wff = ferry::cast(f.from_vector(wv, Shape{n, k}, D0), DType::f32);
  for (const auto& s :
       {Scheme::of(ValueType::i4).per_block({1, 32}).packed_u8().scales(quant::ScaleType::f16),
        Scheme::of(ValueType::u4).affine().per_block({64}).packed_u8(),
        Scheme::of(ValueType::i8).per_axis(0), Scheme::of(ValueType::u8).affine()})
    for (const std::int64_t rows : {1, 3, 8, 9}) {
      INFO("scheme " << s << ", rows " << rows);
      const auto xs = data(rows * k, 52 + static_cast<unsigned>(rows));
      const auto x = ferry::cast(r.from_vector(xs, Shape{rows, k}, D0), DType::f32);
      const auto q = quantize_dynamic(wf, s);
      const auto y = values(linear(x, q));
      check_close(y, linear_ref(values(x), values(dequantize(q)), {}, k), 2e-5, 2e-5);
      const auto xf = ferry::cast(f.from_vector(xs, Shape{rows, k}, D0), DType::f32);
      const auto yf = values(linear(xf, quantize_dynamic(wff, s)));
      check_close(y, std::vector<LD>(yf.begin(), yf.end()), 2e-5, 2e-5);
    }
}

TEST_CASE("embedding gathers the rows its ids name, in the ids' shape") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto ws = data(6 * 3, 4);
  const auto w = r.from_vector(ws, Shape{6, 3}, D0);
  const auto ids = r.from_vector(std::vector<std::int64_t>{5, 0, 0, 2}, Shape{2, 2}, D0);
  const auto e = embedding(w, ids);
  CHECK(e.shape() == Shape{2, 2, 3});
  std::vector<double> want;
  for (const std::size_t id : {5, 0, 0, 2})
    for (std::size_t j = 0; j < 3; ++j) want.push_back(ws[id * 3 + j]);
  CHECK(values(e) == want);  // copies: exact
  const auto one = embedding(w, r.from_vector(std::vector<std::int32_t>{4}, Shape{}, D0));
  CHECK(one.shape() == Shape{3});
  CHECK(values(one) == std::vector<double>(ws.begin() + 12, ws.begin() + 15));
  CHECK(embedding(w, r.zeros(Shape{0, 7}, DType::i64, D0)).shape() == Shape{0, 7, 3});
  REQUIRE_THROWS_MATCHES(embedding(w, r.from_vector(std::vector<float>{1}, Shape{1}, D0)),
                         DTypeError, Says("embedding"));
  REQUIRE_THROWS_AS(
      [&] {
        auto bad = embedding(w, r.from_vector(std::vector<std::int64_t>{6}, Shape{1}, D0));
        (void)bad.to_data();
      }(),
      Error);  // id 6 of 6 rows: an index error, at the call or at the read
}

TEST_CASE("layer_norm and rms_norm over the last dims, with and without affine parameters") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  const auto xs = data(3 * 4 * 5, 5), ws = data(4 * 5, 6), bs = data(4 * 5, 7);
  const auto x = r.from_vector(xs, Shape{3, 4, 5}, D0);
  const auto w = r.from_vector(ws, Shape{4, 5}, D0);
  const auto b = r.from_vector(bs, Shape{4, 5}, D0);

  auto want = standardized(xs, 20, 1e-5L);
  check_close(values(layer_norm(x, Shape{4, 5})), want, 1e-12, 1e-12);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = want[i] * ws[i % 20] + bs[i % 20];
  check_close(values(layer_norm(x, Shape{4, 5}, w, b)), want, 1e-12, 1e-12);
  // Over the last dim only, eps 0.1.
  const auto one = standardized(xs, 5, 0.1L);
  check_close(values(layer_norm(x, Shape{5}, std::nullopt, std::nullopt, 0.1)), one, 1e-12, 1e-12);

  // rms_norm: x / sqrt(mean(x^2) + eps), eps the dtype's machine epsilon by default.
  std::vector<LD> rms(xs.size());
  for (std::size_t row = 0; row < 3; ++row) {
    LD ms = 0;
    for (std::size_t i = 0; i < 20; ++i) ms += static_cast<LD>(xs[row * 20 + i]) * xs[row * 20 + i];
    ms = ms / 20 + std::numeric_limits<double>::epsilon();
    for (std::size_t i = 0; i < 20; ++i)
      rms[row * 20 + i] = xs[row * 20 + i] / std::sqrt(ms) * ws[i];
  }
  check_close(values(rms_norm(x, Shape{4, 5}, w)), rms, 1e-12, 1e-12);

  // A constant row has zero variance: layer_norm gives the bias exactly, rms_norm x / |x|.
  const auto c = r.from_vector(std::vector<double>(5, 2.5), Shape{1, 5}, D0);
  const auto cb = r.from_vector(std::vector<double>{1, -2, 0, 4, 8}, Shape{5}, D0);
  CHECK(values(layer_norm(c, Shape{5}, std::nullopt, cb)) == std::vector<double>{1, -2, 0, 4, 8});
  check_close(values(rms_norm(c, Shape{5}, std::nullopt, 0.0)), std::vector<LD>(5, 1.0L), 1e-15);
  // A NaN spreads over its row only.
  auto nan_x = xs;
  nan_x[7] = std::numeric_limits<double>::quiet_NaN();
  const auto nan_y = values(layer_norm(r.from_vector(nan_x, Shape{3, 4, 5}, D0), Shape{4, 5}));
  CHECK((std::isnan(nan_y[0]) && std::isnan(nan_y[19]) && !std::isnan(nan_y[20])));
  // An empty batch is an empty result.
  CHECK(layer_norm(r.zeros(Shape{0, 4, 5}, DType::f64, D0), Shape{4, 5}).shape() == Shape{0, 4, 5});

  REQUIRE_THROWS_MATCHES(layer_norm(x, Shape{4}), ShapeError,
                         Says("normalized_shape [4] is not the last dims of [3, 4, 5]"));
  REQUIRE_THROWS_MATCHES(layer_norm(x, Shape{4, 5}, b, r.from_vector(bs, Shape{20}, D0)),
                         ShapeError, Says("bias has shape [20], expected [4, 5]"));
  REQUIRE_THROWS_MATCHES(rms_norm(r.zeros(Shape{2, 3}, DType::i32, D0), Shape{3}), DTypeError,
                         Says("rms_norm"));
  REQUIRE_THROWS_MATCHES(layer_norm(x, Shape{4, 5}, r.zeros(Shape{4, 5}, DType::f32, D0)),
                         DTypeError, Says("layer_norm"));
}

TEST_CASE("group_norm and batch_norm per channel of [N, C, H, W]") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  constexpr std::size_t N = 2, C = 6, HW = 4;
  const auto xs = data(N * C * HW, 8), ws = data(C, 9), bs = data(C, 10);
  const auto x = r.from_vector(xs, Shape{2, 6, 2, 2}, D0);
  const auto w = r.from_vector(ws, Shape{6}, D0);
  const auto b = r.from_vector(bs, Shape{6}, D0);
  for (const std::size_t g : {std::size_t{1}, std::size_t{3}, C}) {  // C: one channel per group
    INFO("groups " << g);
    auto want = standardized(xs, C / g * HW, 1e-5L);  // a group's elements are consecutive
    for (std::size_t i = 0; i < want.size(); ++i) {
      const std::size_t ch = i / HW % C;
      want[i] = want[i] * ws[ch] + bs[ch];
    }
    check_close(values(group_norm(x, static_cast<std::int64_t>(g), w, b)), want, 1e-12, 1e-12);
  }
  REQUIRE_THROWS_MATCHES(group_norm(x, 4), ValueError, Says("6 channels"));
  REQUIRE_THROWS_MATCHES(group_norm(x, 0), ValueError, Says("group_norm"));
  REQUIRE_THROWS_MATCHES(group_norm(r.zeros(Shape{6}, DType::f64, D0), 2), ShapeError,
                         Says("group_norm"));
  CHECK(group_norm(r.zeros(Shape{0, 6, 3}, DType::f64, D0), 3).shape() == Shape{0, 6, 3});

  // batch_norm with running statistics (inference): per channel, the formula.
  const auto ms = data(C, 11);
  std::vector<double> vs(C);
  for (std::size_t c = 0; c < C; ++c) vs[c] = 0.5 + static_cast<double>(c);
  const auto m = r.from_vector(ms, Shape{6}, D0);
  const auto v = r.from_vector(vs, Shape{6}, D0);
  std::vector<LD> want(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const std::size_t ch = i / HW % C;
    want[i] =
        (xs[i] - static_cast<LD>(ms[ch])) / std::sqrt(static_cast<LD>(vs[ch]) + 1e-5L) * ws[ch] +
        bs[ch];
  }
  check_close(values(batch_norm(x, m, v, w, b)), want, 1e-12, 1e-12);
  REQUIRE_THROWS_MATCHES(batch_norm(x, m, r.from_vector(vs, Shape{1, 6}, D0)), ShapeError,
                         Says("running_var has shape [1, 6], expected [6]"));
}

TEST_CASE("the norms on f16 run in f32 and round once") {
  R r(EigenCpu(1));
  const auto xs = data(4 * 8, 12);
  std::vector<double> x16(xs.size());  // the inputs as f16 holds them
  const auto x = cast(r.from_vector(xs, Shape{4, 8}, D0), DType::f16);
  x16 = values(x);
  const auto ln = layer_norm(x, Shape{8});
  CHECK(ln.dtype() == DType::f16);
  check_close(values(ln), standardized(x16, 8, 1e-5L), 1.0 / 1024, 1.0 / 1024);
  const auto gn = group_norm(reshape(x, Shape{2, 4, 4}), 2);
  CHECK(gn.dtype() == DType::f16);
  check_close(values(gn), standardized(x16, 8, 1e-5L), 1.0 / 1024, 1.0 / 1024);
}

namespace {
/// softmax(q k^T * scale + bias) v for one [L, E] x [S, E] x [S, Ev] head; `allowed(i, j)` false
/// drops a score (-inf), `add(i, j)` is added.
template <class A, class D>
std::vector<LD> attend(const double* q, const double* k, const double* v, std::size_t l,
                       std::size_t s, std::size_t e, std::size_t ev, LD scale, A allowed, D add) {
  std::vector<LD> y(l * ev, 0);
  for (std::size_t i = 0; i < l; ++i) {
    std::vector<LD> sc(s);
    LD m = -std::numeric_limits<LD>::infinity();
    for (std::size_t j = 0; j < s; ++j) {
      LD dot = 0;
      for (std::size_t t = 0; t < e; ++t) dot += static_cast<LD>(q[i * e + t]) * k[j * e + t];
      sc[j] = allowed(i, j) ? dot * scale + add(i, j) : -std::numeric_limits<LD>::infinity();
      m = std::max(m, sc[j]);
    }
    LD z = 0;
    for (std::size_t j = 0; j < s; ++j) z += std::exp(sc[j] - m);
    for (std::size_t c = 0; c < ev; ++c) {
      LD acc = 0;
      for (std::size_t j = 0; j < s; ++j) acc += std::exp(sc[j] - m) / z * v[j * ev + c];
      y[i * ev + c] =
          m == -std::numeric_limits<LD>::infinity() ? std::numeric_limits<LD>::quiet_NaN() : acc;
    }
  }
  return y;
}
}  // namespace

TEST_CASE("attention: softmax(q k^T scale + mask) v per head, masks, causal over a KV cache") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  constexpr std::size_t H = 6, L = 4, S = 7, E = 5, EV = 3;  // [2, 3] heads
  const auto qs = data(H * L * E, 21), ks = data(H * S * E, 22), vs = data(H * S * EV, 23);
  const auto q = r.from_vector(qs, Shape{2, 3, 4, 5}, D0);
  const auto k = r.from_vector(ks, Shape{2, 3, 7, 5}, D0);
  const auto v = r.from_vector(vs, Shape{2, 3, 7, 3}, D0);
  const LD sc = 1 / std::sqrt(static_cast<LD>(E));
  auto all = [](std::size_t, std::size_t) { return true; };
  auto none = [](std::size_t, std::size_t) { return LD{0}; };
  auto heads = [&](auto allowed, auto add, LD scale) {
    std::vector<LD> want;
    for (std::size_t h = 0; h < H; ++h) {
      const auto y =
          attend(&qs[h * L * E], &ks[h * S * E], &vs[h * S * EV], L, S, E, EV, scale, allowed, add);
      want.insert(want.end(), y.begin(), y.end());
    }
    return want;
  };
  const auto y = attention(q, k, v);
  CHECK(y.shape() == Shape{2, 3, 4, 3});
  check_close(values(y), heads(all, none, sc), 1e-12, 1e-12);
  check_close(values(attention(q, k, v, std::nullopt, false, 0.25)), heads(all, none, 0.25L), 1e-12,
              1e-12);
  // Causal, bottom-right: query i sees keys j <= i + 3 (the 3 cached ones and itself).
  check_close(values(attention(q, k, v, std::nullopt, true)),
              heads([](std::size_t i, std::size_t j) { return j <= i + 3; }, none, sc), 1e-12,
              1e-12);
  // A bool mask [L, S] broadcast over the heads, and a float mask added.
  std::vector<std::uint8_t> keep(L * S);
  std::vector<double> bias(L * S);
  for (std::size_t i = 0; i < L * S; ++i) {
    keep[i] = (i * 5 + 1) % 3 != 0;
    bias[i] = static_cast<double>(i % 4) - 1.5;
  }
  const auto bm = cast(r.from_vector(keep, Shape{4, 7}, D0), DType::boolean);
  check_close(values(attention(q, k, v, bm)),
              heads([&](std::size_t i, std::size_t j) { return keep[i * S + j] != 0; }, none, sc),
              1e-12, 1e-12);
  check_close(values(attention(q, k, v, r.from_vector(bias, Shape{4, 7}, D0))),
              heads(
                  all, [&](std::size_t i, std::size_t j) { return LD{bias[i * S + j]}; }, sc),
              1e-12, 1e-12);
  // A query that may attend to nothing gets NaN; the others are unaffected.
  std::vector<std::uint8_t> row0(L * S, 1);
  for (std::size_t j = 0; j < S; ++j) row0[j] = 0;
  const auto yn =
      values(attention(q, k, v, cast(r.from_vector(row0, Shape{4, 7}, D0), DType::boolean)));
  CHECK((std::isnan(yn[0]) && std::isnan(yn[2]) && !std::isnan(yn[3])));
  // f16 runs in f32: within f16's rounding of the f64 reference over the f16 inputs.
  const auto q16 = cast(q, DType::f16), k16 = cast(k, DType::f16), v16 = cast(v, DType::f16);
  const auto q16s = values(q16), k16s = values(k16), v16s = values(v16);
  std::vector<LD> want16;
  for (std::size_t h = 0; h < H; ++h) {
    const auto yh =
        attend(&q16s[h * L * E], &k16s[h * S * E], &v16s[h * S * EV], L, S, E, EV, sc, all, none);
    want16.insert(want16.end(), yh.begin(), yh.end());
  }
  const auto y16 = attention(q16, k16, v16);
  CHECK(y16.dtype() == DType::f16);
  check_close(values(y16), want16, 1.0 / 1024, 1.0 / 2048);

  REQUIRE_THROWS_MATCHES(attention(q, v, v), ShapeError, Says("attention: q [2, 3, 4, 5]"));
  REQUIRE_THROWS_MATCHES(attention(k, q, q, std::nullopt, true), ShapeError,
                         Says("causal with 7 queries over 4 keys"));
  REQUIRE_THROWS_MATCHES(attention(q, k, cast(v, DType::f32)), DTypeError, Says("attention"));
  REQUIRE_THROWS_MATCHES(
      attention(q, k, v, r.from_vector(std::vector<std::int32_t>(28), Shape{4, 7}, D0)), DTypeError,
      Says("attention"));
}

namespace {
/// EigenCpu without its fused attention: ferry::attention records the decomposition.
struct NoAttention : EigenCpu {
  using EigenCpu::EigenCpu;
  template <class... A>
  void attention(A&&...) = delete;
};
static_assert(kernel::attention<EigenCpu> && !kernel::attention<NoAttention>);
}  // namespace

TEST_CASE("fused attention agrees with its decomposition: broadcasts, masks, blocks, edges") {
  Router<EigenCpu> r(EigenCpu(1));
  Router<NoAttention> f(NoAttention(1));
  struct Case {
    Shape q, k, v;
    std::optional<Shape> mask;
    bool boolean = false, causal = false;
  };
  const std::vector<Case> cases{
      {{2, 3, 4, 8}, {1, 3, 6, 8}, {3, 6, 5}, std::nullopt},        // k, v broadcast over batch
      {{3, 4, 8}, {3, 6, 8}, {3, 6, 8}, Shape{2, 1, 4, 6}},         // the mask adds a batch dim
      {{2, 4, 8}, {2, 6, 8}, {2, 6, 8}, Shape{6}, true},            // one bool row for all
      {{2, 4, 8}, {2, 6, 8}, {2, 6, 8}, Shape{4, 1}, false, true},  // a column, causal
      {{1, 300, 16}, {1, 300, 16}, {1, 300, 4}, std::nullopt, false, true},  // ten blocks
      {{1, 5, 16}, {1, 400, 16}, {1, 400, 8}, Shape{5, 400}, true, true},    // a KV cache
      {{2, 1, 8}, {2, 9, 8}, {2, 9, 3}, std::nullopt, false, true},          // a decode step
      // Every edge of the f32 GEMM's tiles: rows 4 + 3 and 4 + 2, columns 16 + 16 + 8 and 8 + 5.
      {{1, 7, 16}, {1, 40, 16}, {1, 40, 24}, std::nullopt},
      {{3, 6, 8}, {3, 13, 8}, {3, 13, 13}, Shape{6, 13}, true},
  };
  unsigned seed = 80;
  for (const auto& c : cases) {
    INFO("q " << c.q << " k " << c.k << " v " << c.v << (c.causal ? " causal" : ""));
    const auto qs = data(static_cast<std::size_t>(c.q.numel()), ++seed),
               ks = data(static_cast<std::size_t>(c.k.numel()), ++seed),
               vs = data(static_cast<std::size_t>(c.v.numel()), ++seed);
    std::vector<double> ms;
    if (c.mask) {
      ms = data(static_cast<std::size_t>(c.mask->numel()), ++seed);
      if (c.boolean)
        for (std::size_t i = 0; i < ms.size(); ++i) ms[i] = i % 5 == 1 ? 0.0 : 1.0;
    }
    auto run = [&](auto& router) {
      const auto q = router.from_vector(qs, c.q, D0), k = router.from_vector(ks, c.k, D0),
                 v = router.from_vector(vs, c.v, D0);
      using Tn = std::remove_cvref_t<decltype(q)>;
      std::optional<Tn> m;
      if (c.mask) {
        m = router.from_vector(ms, *c.mask, D0);
        if (c.boolean) m = ferry::cast(*m, DType::boolean);
      }
      const auto y = attention(q, k, v, m, c.causal);
      return std::make_pair(y.shape(), values(y));
    };
    const auto [shape, y] = run(r);
    const auto [fshape, yf] = run(f);
    CHECK(shape == fshape);
    check_close(y, std::vector<LD>(yf.begin(), yf.end()), 1e-12, 1e-12);
    // f32 against the f64 decomposition, within f32's rounding.
    auto run32 = [&](auto& router) {
      const auto q = ferry::cast(router.from_vector(qs, c.q, D0), DType::f32);
      const auto k = ferry::cast(router.from_vector(ks, c.k, D0), DType::f32);
      const auto v = ferry::cast(router.from_vector(vs, c.v, D0), DType::f32);
      using Tn = std::remove_cvref_t<decltype(q)>;
      std::optional<Tn> m;
      if (c.mask)
        m = ferry::cast(router.from_vector(ms, *c.mask, D0),
                        c.boolean ? DType::boolean : DType::f32);
      return values(attention(q, k, v, m, c.causal));
    };
    check_close(run32(r), std::vector<LD>(yf.begin(), yf.end()), 2e-5, 2e-5);
  }
  // Edges: no keys gives zeros (the decomposition's empty weights times v), no queries an empty
  // result; NaN in a query row makes that row NaN only.
  {
    auto* router = &r;
    const auto q = router->from_vector(data(2 * 4, 1), Shape{2, 4}, D0);
    const auto y = attention(q, router->from_vector(std::vector<double>{}, Shape{0, 4}, D0),
                             router->from_vector(std::vector<double>{}, Shape{0, 3}, D0));
    CHECK(y.shape() == Shape{2, 3});
    CHECK(values(y) == std::vector<double>(6, 0.0));
    const auto e = attention(router->from_vector(std::vector<double>{}, Shape{3, 0, 4}, D0),
                             router->from_vector(data(3 * 5 * 4, 2), Shape{3, 5, 4}, D0),
                             router->from_vector(data(3 * 5 * 2, 3), Shape{3, 5, 2}, D0));
    CHECK(e.shape() == Shape{3, 0, 2});
    auto qn = data(2 * 4, 4);
    qn[5] = std::numeric_limits<double>::quiet_NaN();
    const auto yn = values(attention(router->from_vector(qn, Shape{2, 4}, D0),
                                     router->from_vector(data(3 * 4, 5), Shape{3, 4}, D0),
                                     router->from_vector(data(3 * 2, 6), Shape{3, 2}, D0)));
    CHECK((!std::isnan(yn[0]) && !std::isnan(yn[1]) && std::isnan(yn[2]) && std::isnan(yn[3])));
  }
  // Mask shapes that cannot broadcast to the scores are refused by name before anything runs.
  const auto q = r.from_vector(data(2 * 4 * 8, 7), Shape{2, 4, 8}, D0);
  const auto kv = r.from_vector(data(2 * 6 * 8, 8), Shape{2, 6, 8}, D0);
  REQUIRE_THROWS_MATCHES(attention(q, kv, kv, r.from_vector(data(5, 9), Shape{5}, D0)), ShapeError,
                         Says("attention"));
  REQUIRE_THROWS_MATCHES(attention(q, kv, kv, r.from_vector(data(8 * 6, 9), Shape{8, 6}, D0)),
                         ShapeError, Says("attention"));
}

namespace {
/// conv2d by its definition: out[n][o][i][j] = bias[o] + sum over the group's channels c and
/// the kernel (a, b) of x[n][c][i*s - p + a*d][j*s - p + b*d] w[o][c'][a][b] (zero outside).
std::vector<LD> conv_ref(const std::vector<double>& x, const std::vector<double>& w,
                         const std::vector<double>& bias, std::int64_t n, std::int64_t c,
                         std::int64_t h, std::int64_t wd, std::int64_t oc, std::int64_t kh,
                         std::int64_t kw, std::array<std::int64_t, 2> s,
                         std::array<std::int64_t, 2> p, std::array<std::int64_t, 2> d,
                         std::int64_t g) {
  const std::int64_t ohh = (h + 2 * p[0] - d[0] * (kh - 1) - 1) / s[0] + 1;
  const std::int64_t oww = (wd + 2 * p[1] - d[1] * (kw - 1) - 1) / s[1] + 1;
  const std::int64_t cg = c / g, og = oc / g;
  std::vector<LD> y(static_cast<std::size_t>(n * oc * ohh * oww));
  auto at = [](std::int64_t i) { return static_cast<std::size_t>(i); };
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t o = 0; o < oc; ++o)
      for (std::int64_t i = 0; i < ohh; ++i)
        for (std::int64_t j = 0; j < oww; ++j) {
          LD acc = bias.empty() ? 0 : bias[at(o)];
          for (std::int64_t cc = 0; cc < cg; ++cc)
            for (std::int64_t a = 0; a < kh; ++a)
              for (std::int64_t e = 0; e < kw; ++e) {
                const std::int64_t r = i * s[0] - p[0] + a * d[0], q = j * s[1] - p[1] + e * d[1];
                if (r < 0 || r >= h || q < 0 || q >= wd) continue;
                const std::int64_t ch = o / og * cg + cc;
                acc += static_cast<LD>(x[at(((b * c + ch) * h + r) * wd + q)]) *
                       w[at(((o * cg + cc) * kh + a) * kw + e)];
              }
          y[at(((b * oc + o) * ohh + i) * oww + j)] = acc;
        }
  return y;
}
}  // namespace

TEST_CASE("conv2d and conv1d: stride, padding, dilation, groups and bias, as the definition") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  const auto xs = data(2 * 4 * 7 * 6, 31), ws = data(6 * 2 * 3 * 2, 32), bs = data(6, 33);
  const auto x = r.from_vector(xs, Shape{2, 4, 7, 6}, D0);
  const auto w = r.from_vector(ws, Shape{6, 2, 3, 2}, D0);  // groups 2: 2 of the 4 channels each
  const auto b = r.from_vector(bs, Shape{6}, D0);
  struct Case {
    std::array<std::int64_t, 2> s, p, d;
  };
  for (const Case k : {Case{{1, 1}, {0, 0}, {1, 1}}, Case{{2, 1}, {1, 2}, {1, 1}},
                       Case{{1, 2}, {3, 3}, {2, 1}}}) {  // padding larger than the kernel
    INFO("stride " << k.s[0] << "," << k.s[1] << " padding " << k.p[0] << "," << k.p[1]);
    const auto y = conv2d(x, w, b, {.stride = k.s, .padding = k.p, .dilation = k.d, .groups = 2});
    const auto want = conv_ref(xs, ws, bs, 2, 4, 7, 6, 6, 3, 2, k.s, k.p, k.d, 2);
    CHECK(y.shape()[0] == 2);
    CHECK(y.shape()[1] == 6);
    check_close(values(y), want, 1e-12, 1e-12);
  }
  // Depthwise (groups = channels), no bias.
  const auto wd = r.from_vector(data(4 * 1 * 2 * 2, 34), Shape{4, 1, 2, 2}, D0);
  check_close(values(conv2d(x, wd, std::nullopt, {.groups = 4})),
              conv_ref(xs, values(wd), {}, 2, 4, 7, 6, 4, 2, 2, {1, 1}, {0, 0}, {1, 1}, 4), 1e-12,
              1e-12);
  // An empty batch.
  CHECK(conv2d(r.zeros(Shape{0, 4, 7, 6}, DType::f64, D0), w, b, {.groups = 2}).shape() ==
        Shape{0, 6, 5, 5});
  // conv1d is conv2d over a height of 1.
  const auto x1 =
      r.from_vector(std::vector<double>(xs.begin(), xs.begin() + 2 * 4 * 9), Shape{2, 4, 9}, D0);
  const auto w1 =
      r.from_vector(std::vector<double>(ws.begin(), ws.begin() + 3 * 4 * 3), Shape{3, 4, 3}, D0);
  const auto y1 = conv1d(x1, w1, std::nullopt, {.stride = {2}, .padding = {1}});
  CHECK(y1.shape() == Shape{2, 3, 5});
  check_close(values(y1),
              conv_ref(values(x1), values(w1), {}, 2, 4, 1, 9, 3, 1, 3, {1, 2}, {0, 1}, {1, 1}, 1),
              1e-12, 1e-12);

  // Packed int8 weights per output channel: the definition over the dequantized weights, in f32.
  using quant::Scheme;
  using quant::ValueType;
  const auto xf = ferry::cast(x, DType::f32);
  const auto q =
      quantize_dynamic(ferry::cast(w, DType::f32), Scheme::of(ValueType::i8).per_axis(0));
  const auto bf = ferry::cast(b, DType::f32);
  for (const Case& k : {Case{{1, 1}, {0, 0}, {1, 1}}, Case{{2, 1}, {1, 2}, {1, 1}}}) {
    const auto y = conv2d(xf, q, bf, {.stride = k.s, .padding = k.p, .dilation = k.d, .groups = 2});
    CHECK(y.dtype() == DType::f32);
    check_close(values(y),
                conv_ref(values(xf), values(dequantize(q)), values(bf), 2, 4, 7, 6, 6, 3, 2, k.s,
                         k.p, k.d, 2),
                1e-5, 1e-5);
  }
  const auto q1 =
      quantize_dynamic(ferry::cast(r.from_vector(ws, Shape{3, 4, 3, 2}, D0), DType::f32),
                       Scheme::of(ValueType::i4).per_axis(0).packed_u8());
  check_close(values(conv2d(xf, q1, std::nullopt, {.padding = {1, 1}})),
              conv_ref(values(xf), values(dequantize(q1)), {}, 2, 4, 7, 6, 3, 3, 2, {1, 1}, {1, 1},
                       {1, 1}, 1),
              1e-5, 1e-5);
  REQUIRE_THROWS_MATCHES(conv2d(x, w), ShapeError, Says("1 groups do not fit"));
  REQUIRE_THROWS_MATCHES(conv2d(x, w, b, {.stride = {0, 1}, .groups = 2}), ValueError,
                         Says("conv2d: stride 0"));
  REQUIRE_THROWS_MATCHES(conv2d(x, w, b, {.dilation = {4, 1}, .groups = 2}), ShapeError,
                         Says("smaller than the kernel"));
  REQUIRE_THROWS_MATCHES(conv1d(x, w), ShapeError, Says("conv1d"));
}

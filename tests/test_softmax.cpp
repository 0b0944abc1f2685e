// softmax, log_softmax, softmin, logsumexp, any, all, max_abs and norm (ferry/ops/reductions.hpp),
// against formulas in long double, with the edge rows torch documents: -inf, +inf, NaN, large
// values, empty dims; in both execution modes, on f32, f64 and f16.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <limits>
#include <utility>
#include <vector>

#include "matchers.hpp"

using namespace ferry;
using ferry_test::Says;

namespace {
using R = Router<EigenCpu>;
constexpr CpuDevice D0{0};
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double qnan = std::numeric_limits<double>::quiet_NaN();

std::vector<double> values(const Tensor<EigenCpu>& t) { return t.to_data().to_vector<double>(); }
std::vector<bool> bools(const Tensor<EigenCpu>& t) { return t.to_data().to_vector<bool>(); }
std::vector<std::int64_t> ints(const Tensor<EigenCpu>& t) {
  return t.to_data().to_vector<std::int64_t>();
}

void check_close(const std::vector<double>& got, const std::vector<long double>& want, double rel) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << static_cast<double>(want[i]));
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else if (std::isinf(want[i]) || want[i] == 0)
      CHECK(got[i] == static_cast<double>(want[i]));
    else
      CHECK(std::fabs(static_cast<long double>(got[i]) - want[i]) <= rel * std::fabs(want[i]));
  }
}

/// Softmax of each row of `x` ([rows, n], row-major) in long double, straight from the formula
/// exp(x_i) / sum_j exp(x_j), shifted by the row's max (exact in long double for these values).
std::vector<long double> softmax_rows(const std::vector<double>& x, std::size_t n, bool log) {
  std::vector<long double> out;
  for (std::size_t r = 0; r < x.size() / n; ++r) {
    long double m = -INFINITY;
    bool nan = false;
    for (std::size_t j = 0; j < n; ++j) {
      nan |= std::isnan(x[r * n + j]);
      m = std::max<long double>(m, x[r * n + j]);
    }
    long double s = 0;
    for (std::size_t j = 0; j < n; ++j) s += std::exp(x[r * n + j] - m);
    for (std::size_t j = 0; j < n; ++j) {
      const long double z = x[r * n + j] - m;
      if (nan || std::isinf(m))
        out.push_back(NAN);
      else
        out.push_back(log ? z - std::log(s) : std::exp(z) / s);
    }
  }
  return out;
}
}  // namespace

TEST_CASE("softmax, log_softmax and softmin are stable, exact on -inf rows, NaN as torch") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  // Rows: ordinary; huge (exp would overflow unshifted); -inf but one (exactly one-hot);
  // all -inf (NaN); +inf (NaN); NaN (NaN).
  const std::vector<double> x{1,    2,    3,    -1,   1000, 1001, 999, 1000, -inf, 5, -inf, -inf,
                              -inf, -inf, -inf, -inf, 1,    inf,  2,   3,    qnan, 0, 1,    2};
  const auto t = r.from_vector(x, Shape{6, 4}, D0);
  check_close(values(softmax(t, 1)), softmax_rows(x, 4, false), 4e-16);
  check_close(values(softmax(t, -1)), softmax_rows(x, 4, false), 4e-16);
  check_close(values(log_softmax(t, 1)), softmax_rows(x, 4, true), 4e-16);
  const auto one_hot = values(softmax(t, 1));
  CHECK(one_hot[8] == 0.0);
  CHECK(one_hot[9] == 1.0);  // exactly: exp(0) / exp(0)
  CHECK(values(log_softmax(t, 1))[9] == 0.0);
  // softmin is softmax of -x.
  std::vector<double> neg;
  for (double v : x) neg.push_back(-v);
  check_close(values(softmin(t, 1)), softmax_rows(neg, 4, false), 4e-16);
  // Along dim 0 of a [2, 3]: columns.
  const std::vector<double> c{0, 1, 2, 3, 5, 7};
  const auto sc = values(softmax(r.from_vector(c, Shape{2, 3}, D0), 0));
  for (int j = 0; j < 3; ++j) {
    const long double a = std::exp(static_cast<long double>(c[j] - c[j + 3]));
    CHECK(sc[j] == Approx(static_cast<double>(a / (a + 1))).epsilon(1e-15));
    CHECK(sc[j + 3] == Approx(static_cast<double>(1 / (a + 1))).epsilon(1e-15));
  }
  // Rows sum to 1 on f32; f16 computes in f32 and rounds once.
  const std::vector<float> f{0.5f, -2.0f, 3.0f, 0.25f};
  const auto sf = softmax(r.from_vector(f, Shape{1, 4}, D0), 1);
  CHECK(sf.dtype() == DType::f32);
  double total = 0;
  for (double v : values(sf)) total += v;
  CHECK(total == Approx(1.0).epsilon(1e-6));
  std::vector<f16> h;
  for (float v : f) h.push_back(f16(v));
  const auto sh = softmax(r.from_vector(h, Shape{1, 4}, D0), 1);
  CHECK(sh.dtype() == DType::f16);
  const auto want = softmax_rows({0.5, -2.0, 3.0, 0.25}, 4, false);
  const auto got = sh.to_data().to_vector<f16>();
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(got[i].bits == f16(static_cast<float>(want[i])).bits);  // one rounding of a ~exact f32
  // Empty: the tensor itself.
  CHECK(softmax(r.zeros(Shape{0, 3}, DType::f32, D0), 1).shape() == Shape{0, 3});
}

TEST_CASE("the fused softmax kernel: strided dims, long rows, every float dtype, as the formula") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode, .trace = true});
  // The edge rows of the test above as the columns of a [4, 6]: along dim 0, the strided path.
  const std::vector<double> x{1,    2,    3,    -1,   1000, 1001, 999, 1000, -inf, 5, -inf, -inf,
                              -inf, -inf, -inf, -inf, 1,    inf,  2,   3,    qnan, 0, 1,    2};
  std::vector<double> xt(24);
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 4; ++j) xt[j * 6 + i] = x[i * 4 + j];
  const auto t = r.from_vector(xt, Shape{4, 6}, D0);
  for (bool lg : {false, true}) {
    const auto rows = softmax_rows(x, 4, lg);
    std::vector<long double> want(24);
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = 0; j < 4; ++j) want[j * 6 + i] = rows[i * 4 + j];
    check_close(values(lg ? log_softmax(t, 0) : softmax(t, 0)), want, 4e-16);
  }
  // One op each, fused: no exp, sum or div recorded.
  r.sync();
  int fused = 0, parts = 0;
  for (const auto& e : r.trace()) {
    if (e.phase != TraceEvent::Phase::op) continue;
    fused += e.name == "softmax" || e.name == "log_softmax";
    parts += e.name == "exp" || e.name == "sum" || e.name == "div";
  }
  CHECK(fused == 2);
  CHECK(parts == 0);

  // Long rows (several tasks) and a strided dim wider than one column chunk, f64 and f32,
  // against the decomposition (ferry/ops/reductions.hpp), which the test above checks against
  // the formula: the same up to the order of the row sums.
  std::vector<double> v(8 * 5000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 12 * std::sin(0.37 * static_cast<double>(i));
  for (DType dt : {DType::f64, DType::f32}) {
    for (auto [shape, dim] : {std::pair{Shape{8, 5000}, 1}, std::pair{Shape{5000, 8}, 0},
                              std::pair{Shape{2, 4, 5000}, 1}, std::pair{Shape{8, 5, 1000}, 2}}) {
      INFO(dt << " " << shape << " dim " << dim);
      const auto a = cast(r.from_vector(v, shape, D0), dt);
      const double rel = dt == DType::f64 ? 1e-13 : 4e-6;
      const auto want_s = values(detail::decompose::softmax(a, static_cast<std::size_t>(dim)));
      const auto want_l = values(detail::decompose::log_softmax(a, static_cast<std::size_t>(dim)));
      check_close(values(softmax(a, dim)), {want_s.begin(), want_s.end()}, rel);
      check_close(values(log_softmax(a, dim)), {want_l.begin(), want_l.end()}, rel);
    }
  }
  // f16 and bf16: computed in f32, rounded once: within one unit of the last place of the
  // decomposition's (the two f32 results may straddle a rounding boundary).
  for (DType dt : {DType::f16, DType::bf16}) {
    INFO(dt);
    const auto a =
        cast(r.from_vector(std::vector<double>(v.begin(), v.begin() + 600), Shape{6, 100}, D0), dt);
    const auto got = values(softmax(a, 1));
    const auto want = values(detail::decompose::softmax(a, 1));
    const double ulp = dt == DType::f16 ? 0x1p-10 : 0x1p-7;
    for (std::size_t i = 0; i < got.size(); ++i)
      CHECK(std::fabs(got[i] - want[i]) <= ulp * std::fabs(want[i]) + 0x1p-24);
    CHECK(softmax(a, 1).dtype() == dt);
  }
  // Empty tensors: recorded (the kernel returns them), along the empty dim or beside it.
  CHECK(softmax(r.zeros(Shape{0, 3}, DType::f32, D0), 0).shape() == Shape{0, 3});
  CHECK(log_softmax(r.zeros(Shape{2, 0}, DType::f64, D0), 0).shape() == Shape{2, 0});
}

TEST_CASE("logsumexp: stable, -inf rows give -inf, +inf gives +inf, NaN propagates") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const std::vector<double> x{1, 2, 3, 1000, 1001, 1000, -inf, -inf, -inf, 1, inf, 2, qnan, 0, 1};
  const auto t = r.from_vector(x, Shape{5, 3}, D0);
  std::vector<long double> want;
  for (int row = 0; row < 3; ++row) {
    long double m = -INFINITY, s = 0;
    for (int j = 0; j < 3; ++j) m = std::max<long double>(m, x[row * 3 + j]);
    for (int j = 0; j < 3; ++j) s += std::exp(x[row * 3 + j] - m);
    want.push_back(row == 2 ? -INFINITY : m + std::log(s));
  }
  want.push_back(INFINITY);
  want.push_back(NAN);
  const auto l = logsumexp(t, 1);
  CHECK(l.shape() == Shape{5});
  check_close(values(l), want, 4e-16);
  CHECK(logsumexp(t, -1, true).shape() == Shape{5, 1});
  CHECK(values(logsumexp(t, 0, true)).size() == 3);
  // An empty dim: log of an empty sum.
  const auto e = logsumexp(r.zeros(Shape{2, 0}, DType::f32, D0), 1);
  CHECK(values(e) == std::vector<double>{-inf, -inf});
}

TEST_CASE("any and all over every dtype, all elements or along a dim, empty included") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto i =
      r.from_vector(std::vector<std::int32_t>{0, 0, 0, 0, 3, 0, -1, 2, 5}, Shape{3, 3}, D0);
  CHECK(bools(any(i)) == std::vector<bool>{true});
  CHECK(bools(all(i)) == std::vector<bool>{false});
  CHECK(bools(any(i, 1)) == std::vector<bool>{false, true, true});
  CHECK(bools(all(i, 1)) == std::vector<bool>{false, false, true});
  CHECK(bools(all(i, 0, true)) == std::vector<bool>{false, false, false});
  CHECK(any(i, 0, true).shape() == Shape{1, 3});
  const auto f = r.from_vector(std::vector<double>{qnan, 0.0, -0.0}, Shape{3}, D0);
  CHECK(bools(any(f)) == std::vector<bool>{true});  // NaN is nonzero; -0 is zero
  CHECK(bools(all(f)) == std::vector<bool>{false});
  const auto b = r.from_vector(std::vector<bool>{true, true, false, true}, Shape{2, 2}, D0);
  CHECK(bools(all(b, 1)) == std::vector<bool>{true, false});
  CHECK(bools(any(b, 0)) == std::vector<bool>{true, true});
  const auto z = r.zeros(Shape{2, 0}, DType::u8, D0);
  CHECK(bools(any(z)) == std::vector<bool>{false});
  CHECK(bools(all(z)) == std::vector<bool>{true});
  CHECK(bools(any(z, 1)) == std::vector<bool>{false, false});
  CHECK(bools(all(z, 1)) == std::vector<bool>{true, true});
  CHECK(any(z, 0).shape() == Shape{0});
  REQUIRE_THROWS_MATCHES(any(i, 2), IndexError, Says("any"));
}

TEST_CASE("norm: L1, L2, Lp, max, min and zero norms, whole or along a dim; max_abs") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const std::vector<double> x{3, -4, 0, 1, -2, 2};
  const auto t = r.from_vector(x, Shape{2, 3}, D0);
  CHECK(values(norm(t)) == std::vector<double>{std::sqrt(34.0)});
  CHECK(values(norm(t, 1.0)) == std::vector<double>{12});
  CHECK(values(norm(t, inf)) == std::vector<double>{4});
  CHECK(values(norm(t, -inf)) == std::vector<double>{0});
  CHECK(values(norm(t, 0.0)) == std::vector<double>{5});
  CHECK(values(norm(t, 2.0, 1)) == std::vector<double>{5, 3});
  const auto p3 = values(norm(t, 3.0, 1, true));
  CHECK(norm(t, 3.0, 1, true).shape() == Shape{2, 1});
  CHECK(p3[0] == Approx(std::cbrt(91.0)).epsilon(1e-15));
  CHECK(p3[1] == Approx(std::cbrt(17.0)).epsilon(1e-15));
  const auto half = values(norm(t, 0.5, 0));  // (sum |x|^0.5)^2 per column
  CHECK(half[0] == Approx(std::pow(std::sqrt(3.0) + 1.0, 2.0)).epsilon(1e-15));
  CHECK(half[1] == Approx(std::pow(2.0 + std::sqrt(2.0), 2.0)).epsilon(1e-15));
  CHECK(half[2] == Approx(2.0).epsilon(1e-15));
  CHECK(values(max_abs(t)) == std::vector<double>{4});
  CHECK(values(max_abs(t, 0)) == std::vector<double>{3, 4, 2});
  const auto i = r.from_vector(std::vector<std::int32_t>{-7, 3}, Shape{2}, D0);
  CHECK(i.dtype() == DType::i32);
  CHECK(max_abs(i).to_data().to_vector<std::int32_t>() == std::vector<std::int32_t>{7});
  // f16 runs in f32: 300^2 overflows f16 but not f32, and 500 is exact in f16.
  auto h = r.from_vector(std::vector<f16>{f16(300.0f), f16(400.0f)}, Shape{2}, D0);
  CHECK(norm(h).to_data().to_vector<f16>()[0].bits == f16(500.0f).bits);
  REQUIRE_THROWS_MATCHES(norm(i), DTypeError, Says("norm"));
  REQUIRE_THROWS_MATCHES(norm(t, qnan), ValueError, Says("norm"));
  REQUIRE_THROWS_MATCHES(softmax(i, 0), DTypeError, Says("softmax"));
  REQUIRE_THROWS_MATCHES(log_softmax(t, 2), IndexError, Says("log_softmax"));
  REQUIRE_THROWS_MATCHES(logsumexp(t, -3), IndexError, Says("logsumexp"));
}

TEST_CASE("argmax/argmin with Ties::last, and max/min_dim_with_indices") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  // Rows: ties at 0 and 2; a NaN at 1 and 3; all equal.
  const auto t =
      r.from_vector(std::vector<double>{5, 1, 5, 2, 0, qnan, 3, qnan, 7, 7, 7, 7}, Shape{3, 4}, D0);
  CHECK(ints(argmax(t, 1, false, Ties::first)) == std::vector<std::int64_t>{0, 1, 0});
  CHECK(ints(argmax(t, 1, false, Ties::last)) == std::vector<std::int64_t>{2, 3, 3});
  CHECK(ints(argmin(t, 1, false, Ties::last)) == std::vector<std::int64_t>{1, 3, 3});
  CHECK(argmin(t, -1, true, Ties::last).shape() == Shape{3, 1});
  CHECK(ints(argmin(t, 0, false, Ties::last)) ==
        std::vector<std::int64_t>{1, 1, 1, 1});  // NaN wins
  const auto i = r.from_vector(std::vector<std::int32_t>{4, 9, 9, 4, 1, 9}, Shape{6}, D0);
  CHECK(ints(argmax(i, Ties::first)) == std::vector<std::int64_t>{1});
  CHECK(ints(argmax(i, Ties::last)) == std::vector<std::int64_t>{5});
  CHECK(ints(argmin(i, Ties::last)) == std::vector<std::int64_t>{4});
  CHECK(ints(argmax(r.from_vector(std::vector<std::int32_t>{1, 2, 2, 0}, Shape{2, 2}, D0),
                    Ties::last)) == std::vector<std::int64_t>{2});  // flat index
  REQUIRE_THROWS_MATCHES(argmax(r.zeros(Shape{0}, DType::f32, D0), Ties::last), ValueError,
                         Says("argmax"));
  const auto [v, ix] = max_dim_with_indices(t, 1);
  const auto vals = values(v);
  CHECK((vals[0] == 5 && std::isnan(vals[1]) && vals[2] == 7));
  CHECK(ints(ix) == std::vector<std::int64_t>{0, 1, 0});
  const auto [mv, mi] = min_dim_with_indices(i, 0, true);
  CHECK(mv.to_data().to_vector<std::int32_t>() == std::vector<std::int32_t>{1});
  CHECK(mv.dtype() == DType::i32);
  CHECK(ints(mi) == std::vector<std::int64_t>{4});
  CHECK(mi.shape() == Shape{1});
}

TEST_CASE("max/min_dim_with_indices: each value is the element its index names on any dim") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  // [2, 3, 2] with the reduced dim in the middle: columns (4, 4, 0), (-1, 8, 8), (1, 9, 9) and
  // (2, 2, 0), whose extremes and first indices are read off by hand.
  const std::vector<float> xs{4, -1, 4, 8, 0, 8, 1, 2, 9, 2, 9, 0};
  const auto x = r.from_vector(xs, Shape{2, 3, 2}, D0);
  const auto [v, i] = max_dim_with_indices(x, -2);
  CHECK(v.shape() == Shape{2, 2});
  CHECK(v.dtype() == DType::f32);
  CHECK(values(v) == std::vector<double>{4, 8, 9, 2});
  CHECK(ints(i) == std::vector<std::int64_t>{0, 1, 1, 0});  // ties to the first
  const auto [kv, ki] = min_dim_with_indices(x, 1, true);
  CHECK(kv.shape() == Shape{2, 1, 2});
  CHECK(values(kv) == std::vector<double>{0, -1, 1, 0});
  CHECK(ints(ki) == std::vector<std::int64_t>{2, 0, 0, 2});
  // -0 and +0 tie: the value is the element at the first index, sign included (torch's pairs).
  const auto z = r.from_vector(std::vector<double>{-0.0, 0.0, 0.0, -0.0}, Shape{2, 2}, D0);
  const auto [zv, zi] = max_dim_with_indices(z, 1);
  const auto zs = values(zv);
  CHECK(ints(zi) == std::vector<std::int64_t>{0, 0});
  CHECK((std::signbit(zs[0]) && !std::signbit(zs[1])));
  // A bad dim names the op; a 0-d tensor has no dim to reduce (as argmax along a dim).
  const auto s = r.from_vector(std::vector<double>{3.5}, Shape{}, D0);
  REQUIRE_THROWS_MATCHES(min_dim_with_indices(s, 0), IndexError, Says("min_dim_with_indices"));
  REQUIRE_THROWS_MATCHES(max_dim_with_indices(x, 3), IndexError, Says("max_dim_with_indices"));
}

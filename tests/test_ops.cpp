// Every op through the Router (EigenCpu, two devices), in both execution modes, against values
// computed here with naive loops and std:: math. Layout ops are in test_ops_layout.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ops_support.hpp"

using namespace ops_test;
using ferry::Scalar;

namespace {

/// Python / torch.remainder: the result takes the sign of the divisor.
double floor_mod(double a, double b) { return a - b * std::floor(a / b); }

/// Exact comparison for integer results, tolerance for floating ones.
template <class V>
void check_values(const std::vector<V>& got, const std::vector<double>& want, const char* what) {
  if constexpr (std::is_integral_v<V>) {
    std::vector<V> w(want.size());
    for (std::size_t i = 0; i < want.size(); ++i) w[i] = static_cast<V>(want[i]);
    INFO(what);
    CHECK(got == w);
  } else {
    check_close(got, want, what);
  }
}

/// The router still runs ops and `live` still holds `values` (used after every error).
void check_router_works(R& r, const T& live, const std::vector<float>& values) {
  const T twice = ferry::mul(live, Scalar(2.0f));
  std::vector<float> want(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) want[i] = values[i] * 2.0f;
  CHECK(read<float>(twice) == want);
  CHECK(read<float>(live) == values);
  CHECK_NOTHROW(r.sync());
}

}  // namespace

// ================================ creation ==================================================

TEST_CASE("from_data, zeros, ones and full make tensors of the given shape, dtype and values",
          "[ops][creation]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});

  SECTION("from_data round-trips every plain dtype") {
    const std::vector<float> f{1.5f, -2.25f, 0.f, 3e10f, -1e-20f, 7.f};
    const T tf = make(r, f, {2, 3});
    check_meta(tf, {2, 3}, DType::f32);
    CHECK(tf.device() == D0);
    CHECK(read<float>(tf) == f);

    const std::vector<double> d{0.1, -1e300, 4.9e-324, 2.0};
    const T td = make(r, d, {4, 1});
    check_meta(td, {4, 1}, DType::f64);
    CHECK(read<double>(td) == d);

    const std::vector<std::int32_t> i{std::numeric_limits<std::int32_t>::min(), -1, 0,
                                      std::numeric_limits<std::int32_t>::max()};
    const T ti = make(r, i, {2, 2});
    check_meta(ti, {2, 2}, DType::i32);
    CHECK(read<std::int32_t>(ti) == i);

    const std::vector<std::int64_t> l{(std::int64_t{1} << 53) + 1, -3,
                                      std::numeric_limits<std::int64_t>::min()};
    const T tl = make(r, l, {3}, D1);
    check_meta(tl, {3}, DType::i64);
    CHECK(tl.device() == D1);
    CHECK(read<std::int64_t>(tl) == l);

    const T tb = make_bool(r, {1, 0, 0, 1, 1}, {5});
    check_meta(tb, {5}, DType::boolean);
    CHECK(read_bool(tb) == std::vector<std::uint8_t>{1, 0, 0, 1, 1});

    const T tv = r.from_vector(std::vector<std::int32_t>{4, 5, 6}, Shape{3, 1}, D1);
    check_meta(tv, {3, 1}, DType::i32);
    CHECK(tv.device() == D1);
    CHECK(read<std::int32_t>(tv) == std::vector<std::int32_t>{4, 5, 6});

    const T te = make(r, std::vector<float>{}, {0, 3});
    check_meta(te, {0, 3}, DType::f32);
    CHECK(read<float>(te).empty());

    const T ts = make(r, std::vector<double>{2.5}, {});
    check_meta(ts, {}, DType::f64);
    CHECK(read<double>(ts) == std::vector<double>{2.5});
  }

  SECTION("zeros, ones and full fill every dtype") {
    for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean}) {
      INFO("dtype " << dt);
      const T z = r.zeros({2, 2, 3}, dt, D0);
      const T o = r.ones({2, 2, 3}, dt, D1);
      check_meta(z, {2, 2, 3}, dt);
      check_meta(o, {2, 2, 3}, dt);
      CHECK(o.device() == D1);
      CHECK(z.to_data().to_vector<double>() == std::vector<double>(12, 0.0));
      CHECK(o.to_data().to_vector<double>() == std::vector<double>(12, 1.0));
    }
    const T f = r.full({3, 2}, Scalar(2.5f), DType::f32, D0);
    check_meta(f, {3, 2}, DType::f32);
    CHECK(read<float>(f) == std::vector<float>(6, 2.5f));
    const T g = r.full({4}, Scalar(-0.125), DType::f64, D1);
    CHECK(read<double>(g) == std::vector<double>(4, -0.125));
    const T h = r.full({2, 2}, Scalar(-7), DType::i32, D0);
    CHECK(read<std::int32_t>(h) == std::vector<std::int32_t>(4, -7));
    const std::int64_t big = (std::int64_t{1} << 40) + 1;
    const T k = r.full({3}, Scalar(big), DType::i64, D0);
    check_meta(k, {3}, DType::i64);
    CHECK(read<std::int64_t>(k) == std::vector<std::int64_t>(3, big));
    const T b = r.full({2}, Scalar(true), DType::boolean, D0);
    CHECK(read_bool(b) == std::vector<std::uint8_t>{1, 1});
    const T e = r.full({0}, Scalar(1.0f), DType::f32, D0);
    check_meta(e, {0}, DType::f32);
    CHECK(read<float>(e).empty());
  }
}

TEST_CASE("arange has ceil((end - start) / step) elements, with negative steps and int dtypes",
          "[ops][creation]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});

  struct Case {
    Scalar start, end, step;
    DType dt;
  };
  const Case cases[] = {
      {Scalar(0), Scalar(5), Scalar(1), DType::i64},
      {Scalar(5), Scalar(0), Scalar(-1), DType::i32},
      {Scalar(0), Scalar(10), Scalar(3), DType::i32},
      {Scalar(-3), Scalar(3), Scalar(2), DType::i64},
      {Scalar(0), Scalar(-10), Scalar(-4), DType::i64},
      {Scalar(5), Scalar(0), Scalar(1), DType::i64},
      {Scalar(0.0), Scalar(1.0), Scalar(0.25), DType::f32},
      {Scalar(1.0), Scalar(-1.0), Scalar(-0.5), DType::f64},
      {Scalar(2.0), Scalar(2.0), Scalar(1.0), DType::f32},
      {Scalar(-1.0), Scalar(2.0), Scalar(0.75), DType::f64},
      {Scalar(0), Scalar(7), Scalar(2), DType::f32},
  };
  for (const Case& c : cases) {
    const double s = c.start.as<double>(), e = c.end.as<double>(), st = c.step.as<double>();
    INFO("arange(" << s << ", " << e << ", " << st << ") as " << c.dt);
    std::vector<double> want;
    for (double v = s; st > 0 ? v < e : v > e; v += st) want.push_back(v);
    const T t = r.arange(c.start, c.end, c.step, c.dt, D0);
    check_meta(t, {static_cast<std::int64_t>(want.size())}, c.dt);
    CHECK(t.to_data().to_vector<double>() == want);
  }
  const T on1 = r.arange(Scalar(10), Scalar(4), Scalar(-2), DType::i32, D1);
  CHECK(on1.device() == D1);
  CHECK(read<std::int32_t>(on1) == std::vector<std::int32_t>{10, 8, 6});

  // u64 above INT64_MAX, in exact arithmetic (as doubles, 2^63 + 5 and 2^63 + 10 are one value).
  constexpr std::uint64_t h = std::uint64_t{1} << 63, top = ~std::uint64_t{0};
  CHECK(read<std::uint64_t>(r.arange(Scalar(h + 5), Scalar(h + 10), Scalar(2), DType::u64, D0)) ==
        std::vector<std::uint64_t>{h + 5, h + 7, h + 9});
  CHECK(read<std::uint64_t>(r.arange(Scalar(top - 2), Scalar(top), Scalar(1), DType::u64, D1)) ==
        std::vector<std::uint64_t>{top - 2, top - 1});
  CHECK(read<std::uint64_t>(r.arange(Scalar(0), Scalar(top), Scalar(h / 2), DType::u64, D0)) ==
        std::vector<std::uint64_t>{0, h / 2, h, h + h / 2});
  CHECK(read<std::uint64_t>(
            r.arange(Scalar(top), Scalar(h), Scalar(-(std::int64_t{1} << 62)), DType::u64, D0)) ==
        std::vector<std::uint64_t>{top, top - h / 2});
  // Negative steps on unsigned dtypes (numpy.arange(10, 0, -3, dtype=uint8)).
  CHECK(read<std::uint8_t>(r.arange(Scalar(10), Scalar(0), Scalar(-3), DType::u8, D0)) ==
        std::vector<std::uint8_t>{10, 7, 4, 1});
  // A real end: x < 5.5 takes 5; i64's extremes.
  CHECK(read<std::int64_t>(r.arange(Scalar(3), Scalar(5.5), Scalar(1), DType::i64, D0)) ==
        std::vector<std::int64_t>{3, 4, 5});
  constexpr auto lo = std::numeric_limits<std::int64_t>::min();
  CHECK(read<std::int64_t>(r.arange(Scalar(lo), Scalar(lo + 3), Scalar(1), DType::i64, D0)) ==
        std::vector<std::int64_t>{lo, lo + 1, lo + 2});
  REQUIRE_THROWS_MATCHES(r.arange(Scalar(top - 1), Scalar(1e30), Scalar(1), DType::u64, D0),
                         ferry::ValueError, Says("run past the range of u64"));
  REQUIRE_THROWS_MATCHES(r.arange(Scalar(h), Scalar(h + 3), Scalar(1), DType::i64, D0),
                         ferry::ValueError, Says("not exactly representable as i64"));
  REQUIRE_THROWS_MATCHES(r.arange(Scalar(lo), Scalar(0), Scalar(1), DType::i64, D0),
                         ferry::ValueError, Says("more than 2^53 elements"));
}

TEST_CASE("random_uniform and random_normal repeat per seed and have the right statistics",
          "[ops][creation][random]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const std::int64_t n = 100000;

  auto stats = [](const auto& v) {
    double sum = 0, sq = 0;
    for (auto x : v) sum += static_cast<double>(x);
    const double mean = sum / static_cast<double>(v.size());
    for (auto x : v) sq += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
    return std::pair{mean, std::sqrt(sq / static_cast<double>(v.size() - 1))};
  };

  SECTION("uniform") {
    const T u1 = r.random_uniform({n}, 42, D0, -2.0, 3.0);
    const T u2 = r.random_uniform({n}, 42, D0, -2.0, 3.0);
    const T u3 = r.random_uniform({n}, 43, D0, -2.0, 3.0);
    const T u4 = r.random_uniform({n}, 42, D1, -2.0, 3.0);
    check_meta(u1, {n}, DType::f32);
    const auto v1 = read<float>(u1);
    CHECK(v1 == read<float>(u2));
    CHECK(v1 != read<float>(u3));
    CHECK(v1 == read<float>(u4));  // values depend on (seed, index) only, not the device
    const auto [lo, hi] = std::minmax_element(v1.begin(), v1.end());
    CHECK(*lo >= -2.0f);
    CHECK(*hi < 3.0f);
    CHECK(*lo < -1.99f);
    CHECK(*hi > 2.99f);
    const auto [mean, sd] = stats(v1);
    CHECK(mean == Approx(0.5).margin(0.03));  // SE ~ 0.005
    CHECK(sd == Approx(5.0 / std::sqrt(12.0)).margin(0.02));
    // Every tenth of the range holds about a tenth of the values.
    std::vector<int> bins(10, 0);
    for (float x : v1) ++bins[static_cast<std::size_t>(std::min(9.0, (x + 2.0) / 0.5))];
    for (int b : bins) CHECK(std::abs(b - n / 10) < 600);  // SE ~ 95

    const T d = r.random_uniform({3, 4}, 7, D0);
    check_meta(d, {3, 4}, DType::f32);
    for (float x : read<float>(d)) CHECK((x >= 0.0f && x < 1.0f));
  }

  SECTION("normal") {
    const T g1 = r.random_normal({n}, 5, D0, 1.5, 2.0);
    const T g2 = r.random_normal({n}, 5, D1, 1.5, 2.0);
    const T g3 = r.random_normal({n}, 6, D0, 1.5, 2.0);
    check_meta(g1, {n}, DType::f32);
    const auto v1 = read<float>(g1);
    CHECK(v1 == read<float>(g2));
    CHECK(v1 != read<float>(g3));
    const auto [mean, sd] = stats(v1);
    CHECK(mean == Approx(1.5).margin(0.04));  // SE ~ 0.0063
    CHECK(sd == Approx(2.0).margin(0.03));    // SE ~ 0.0045
    std::int64_t within = 0;
    for (float x : v1) within += std::abs(x - 1.5f) < 2.0f;
    CHECK(static_cast<double>(within) / n == Approx(0.6827).margin(0.01));

    const T g64 = r.random(Shape{n}, ferry::Distribution::normal(0.0, 1.0), 9, D0, DType::f64);
    check_meta(g64, {n}, DType::f64);
    const auto [m64, s64] = stats(read<double>(g64));
    CHECK(m64 == Approx(0.0).margin(0.02));
    CHECK(s64 == Approx(1.0).margin(0.015));
  }
}

// ================================ elementwise ===============================================

TEMPLATE_TEST_CASE(
    "add, sub, mul, div, maximum, minimum and remainder match naive loops with numpy "
    "broadcasting",
    "[ops][elementwise]", float, double, std::int32_t, std::int64_t) {
  using V = TestType;
  constexpr bool is_int = std::is_integral_v<V>;
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const DType dt = ferry::dtype_of<V>;

  using F = std::function<double(double, double)>;
  const F f_add = [](double x, double y) { return x + y; };
  const F f_sub = [](double x, double y) { return x - y; };
  const F f_mul = [](double x, double y) { return x * y; };
  const F f_div = [](double x, double y) { return is_int ? std::floor(x / y) : x / y; };
  const F f_max = [](double x, double y) { return std::max(x, y); };
  const F f_min = [](double x, double y) { return std::min(x, y); };
  const F f_rem = [](double x, double y) { return floor_mod(x, y); };

  struct Case {
    Dims ad, bd, od;
  };
  const Case cases[] = {
      {{2, 3}, {2, 3}, {2, 3}},
      {{2, 3}, {3}, {2, 3}},
      {{2, 1}, {1, 3}, {2, 3}},
      {{4, 1, 3}, {2, 1}, {4, 2, 3}},
      {{3}, {2, 1, 1}, {2, 1, 3}},
      {{}, {2, 2}, {2, 2}},
      {{5, 1}, {}, {5, 1}},
      {{0, 3}, {3}, {0, 3}},
      {{70, 40}, {40}, {70, 40}},
      // Past the parallel grain (32768 elements), contiguous and strided broadcasts.
      {{300, 257}, {257}, {300, 257}},
      {{64, 1, 40}, {1, 50, 1}, {64, 50, 40}},
      {{200, 300}, {200, 1}, {200, 300}},
  };
  std::uint32_t seed = 1;
  for (const Case& c : cases) {
    INFO("shapes " << Shape(c.ad) << " and " << Shape(c.bd));
    const auto av = data<V>(numel(c.ad), seed++);
    const auto bv = nonzero<V>(numel(c.bd), seed++);
    const T a = make(r, av, c.ad);
    const T b = make(r, bv, c.bd);
    auto expect = [&](const char* name, const T& got, const F& f) {
      INFO(name);
      check_meta(got, c.od, dt);
      const auto want = naive_binary<double>(av, c.ad, bv, c.bd, c.od, [&](V x, V y) {
        return f(static_cast<double>(x), static_cast<double>(y));
      });
      check_values(read<V>(got), want, name);
    };
    expect("add", ferry::add(a, b), f_add);
    expect("sub", ferry::sub(a, b), f_sub);
    expect("mul", ferry::mul(a, b), f_mul);
    expect("div", ferry::div(a, b), f_div);
    expect("maximum", ferry::maximum(a, b), f_max);
    expect("minimum", ferry::minimum(a, b), f_min);
    expect("remainder", ferry::remainder(a, b), f_rem);
    // The lvalue operands were shared read-only: unchanged.
    CHECK(read<V>(a) == av);
    CHECK(read<V>(b) == bv);
    CHECK(a.use_count() == 1);
  }

  SECTION("scalar forms") {
    const auto av = data<V>(12, 99);
    const T a = make(r, av, {3, 4}, D1);
    for (V s : is_int ? std::vector<V>{V(3), V(-2)} : std::vector<V>{V(1.5), V(-2.5)}) {
      INFO("scalar " << s);
      auto expect = [&](const char* name, const T& got, const F& f) {
        INFO(name);
        check_meta(got, {3, 4}, dt);
        CHECK(got.device() == D1);
        const auto want = naive_map<double>(
            av, [&](V x) { return f(static_cast<double>(x), static_cast<double>(s)); });
        check_values(read<V>(got), want, name);
      };
      expect("add", ferry::add(a, Scalar(s)), f_add);
      expect("sub", ferry::sub(a, Scalar(s)), f_sub);
      expect("mul", ferry::mul(a, Scalar(s)), f_mul);
      expect("div", ferry::div(a, Scalar(s)), f_div);
      expect("maximum", ferry::maximum(a, Scalar(s)), f_max);
      expect("minimum", ferry::minimum(a, Scalar(s)), f_min);
      expect("remainder", ferry::remainder(a, Scalar(s)), f_rem);
    }
    CHECK(read<V>(a) == av);
  }
}

TEMPLATE_TEST_CASE("remainder takes the sign of the divisor for negative operands",
                   "[ops][elementwise]", std::int32_t, std::int64_t, float, double) {
  using V = TestType;
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  // Worked out by hand from a - b * floor(a / b) (torch.remainder, Python %).
  const std::vector<V> a{-7, 7, -7, 7, 6, -6, 0, -1, 5, -5, 3, -3};
  const std::vector<V> b{3, -3, -3, 3, -3, 3, 5, 4, -7, 7, 3, -3};
  const std::vector<V> want{2, -2, -1, 1, 0, 0, 0, 3, -2, 2, 0, 0};
  const T ta = make(r, a, {12});
  const T tb = make(r, b, {12});
  const T m = ferry::remainder(ta, tb);
  check_meta(m, {12}, ferry::dtype_of<V>);
  CHECK(read<V>(m) == want);
  CHECK(read<V>(ta % tb) == want);
  // Scalar divisors of both signs.
  const std::vector<V> by_neg3{-1, -2, -1, -2, 0, 0, 0, -1, -1, -2, 0, 0};
  const std::vector<V> by_4{1, 3, 1, 3, 2, 2, 0, 3, 1, 3, 3, 1};
  CHECK(read<V>(ferry::remainder(ta, Scalar(V(-3)))) == by_neg3);
  CHECK(read<V>(ta % V(4)) == by_4);
  if constexpr (std::is_floating_point_v<V>) {
    const T x = make(r, std::vector<V>{-7.5, 7.5, -7.5, 7.5}, {4});
    const T y = make(r, std::vector<V>{2, -2, -2, 2}, {4});
    CHECK(read<V>(x % y) == std::vector<V>{0.5, -0.5, -1.5, 1.5});
  } else {
    // Documented edge: MIN % -1 is 0 and MIN / -1 wraps to MIN (never UB).
    const V mn = std::numeric_limits<V>::min();
    const T x = make(r, std::vector<V>{mn, mn}, {2});
    CHECK(read<V>(x % V(-1)) == std::vector<V>{0, 0});
    CHECK(read<V>(x / V(-1)) == std::vector<V>{mn, mn});
    // Division floors (Python's and torch's //), so that a == (a / b) * b + a % b for every
    // pair; fmod truncates (C's %), pairing with truncating division.
    const T p = make(r, std::vector<V>{7, -7, 7, -7, 1, -1}, {6});
    const T q = make(r, std::vector<V>{2, 2, -2, -2, 3, 3}, {6});
    CHECK(read<V>(p / q) == std::vector<V>{3, -4, -4, 3, 0, -1});
    CHECK(read<V>(ferry::fmod(p, q)) == std::vector<V>{1, -1, 1, -1, 1, -1});
    CHECK(read<V>(ferry::fmod(x, V(-1))) == std::vector<V>{0, 0});
    const auto quo = read<V>(ta / tb), rem = read<V>(ta % tb);
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("a " << a[i] << ", b " << b[i]);
      CHECK(quo[i] * b[i] + rem[i] == a[i]);
    }
  }
  // fmod: the sign of the dividend (std::fmod, torch.fmod), for ints and floats alike.
  const std::vector<V> fm{-1, 1, -1, 1, 0, 0, 0, -1, 5, -5, 0, 0};
  CHECK(read<V>(ferry::fmod(ta, tb)) == fm);
  CHECK(read<V>(ferry::fmod(ta, Scalar(V(4)))) ==
        std::vector<V>{-3, 3, -3, 3, 2, -2, 0, -1, 1, -1, 3, -3});
  CHECK(read<V>(ta) == a);
  CHECK(read<V>(tb) == b);
}

TEST_CASE("pow matches std::pow for floats and repeated multiplication for ints",
          "[ops][elementwise]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});

  const std::vector<float> base{0.5f, 1.f, 1.5f, 2.f, 2.5f, 3.f};
  const std::vector<float> ex{-1.5f, 0.f, 2.f};
  const T tb = make(r, base, {2, 3});
  const T te = make(r, ex, {3});
  const T p = ferry::pow(tb, te);
  check_meta(p, {2, 3}, DType::f32);
  const auto want = naive_binary<double>(base, {2, 3}, ex, {3}, {2, 3}, [](float x, float y) {
    return std::pow(static_cast<double>(x), static_cast<double>(y));
  });
  check_close(read<float>(p), want, "pow f32");
  const T ps = ferry::pow(tb, Scalar(0.5));
  check_close(read<float>(ps),
              naive_map<double>(base, [](float x) { return std::sqrt(double(x)); }),
              "pow f32 scalar");

  const std::vector<double> based{0.25, 4.0, 9.0};
  const T td = make(r, based, {3, 1});
  const T ted = make(r, std::vector<double>{0.5, -2.0}, {1, 2});
  const T pd = ferry::pow(td, ted);
  check_meta(pd, {3, 2}, DType::f64);
  check_close(read<double>(pd), std::vector<double>{0.5, 16.0, 2.0, 1.0 / 16, 3.0, 1.0 / 81},
              "pow f64");

  for (DType dt : {DType::i32, DType::i64}) {
    INFO(dt);
    const std::vector<std::int64_t> bi{-3, -2, -1, 0, 1, 2, 3, 5};
    const std::vector<std::int64_t> ei{0, 3};
    const T ib = ferry::cast(make(r, bi, {8}), dt);
    const T ie = ferry::cast(make(r, ei, {2, 1}), dt);
    const T ip = ferry::pow(ib, ie);
    check_meta(ip, {2, 8}, dt);
    const auto iw =
        naive_binary<double>(bi, {8}, ei, {2, 1}, {2, 8}, [](std::int64_t x, std::int64_t e) {
          std::int64_t acc = 1;
          for (std::int64_t k = 0; k < e; ++k) acc *= x;
          return static_cast<double>(acc);
        });
    CHECK(ip.to_data().to_vector<double>() == iw);
    CHECK(ferry::pow(ib, Scalar(2)).to_data().to_vector<double>() ==
          std::vector<double>{9, 4, 1, 0, 1, 4, 9, 25});
  }
}

TEST_CASE("maximum and minimum propagate NaN", "[ops][elementwise]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const T a = make(r, std::vector<float>{nan, 1.f, 2.f, -1.f}, {4});
  const T b = make(r, std::vector<float>{0.f, nan, 1.f, 3.f}, {4});
  check_close(read<float>(ferry::maximum(a, b)), std::vector<double>{NAN, NAN, 2, 3}, "maximum");
  check_close(read<float>(ferry::minimum(a, b)), std::vector<double>{NAN, NAN, 1, -1}, "minimum");
}

TEMPLATE_TEST_CASE(
    "neg, abs, exp, log, sqrt, sin, cos, tanh, sigmoid, relu and gelu match std:: math",
    "[ops][elementwise][unary]", float, double) {
  using V = TestType;
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const DType dt = ferry::dtype_of<V>;

  std::vector<V> xv, pv;
  for (int k = -16; k <= 16; ++k) xv.push_back(static_cast<V>(k * 0.25));  // [-4, 4]
  for (int k = 1; k <= 33; ++k) pv.push_back(static_cast<V>(k * 0.3125));  // (0, 10.3]
  const T x = make(r, xv, {3, 11});
  const T p = make(r, pv, {11, 3}, D1);
  const double rel = std::is_same_v<V, float> ? 4e-6 : 1e-13;
  const double abs = std::is_same_v<V, float> ? 1e-6 : 1e-14;

  using F = std::function<double(double)>;
  auto expect = [&](const char* name, const T& got, const std::vector<V>& in, const Dims& dims,
                    const F& f) {
    INFO(name);
    check_meta(got, dims, dt);
    check_close(read<V>(got), naive_map<double>(in, [&](V v) { return f(static_cast<double>(v)); }),
                rel, abs, name);
  };
  expect("neg", ferry::neg(x), xv, {3, 11}, [](double v) { return -v; });
  expect("abs", ferry::abs(x), xv, {3, 11}, [](double v) { return std::fabs(v); });
  expect("exp", ferry::exp(x), xv, {3, 11}, [](double v) { return std::exp(v); });
  expect("sin", ferry::sin(x), xv, {3, 11}, [](double v) { return std::sin(v); });
  expect("cos", ferry::cos(x), xv, {3, 11}, [](double v) { return std::cos(v); });
  expect("tanh", ferry::tanh(x), xv, {3, 11}, [](double v) { return std::tanh(v); });
  expect("sigmoid", ferry::sigmoid(x), xv, {3, 11},
         [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
  expect("relu", ferry::relu(x), xv, {3, 11}, [](double v) { return v > 0 ? v : 0.0; });
  expect("gelu", ferry::gelu(x), xv, {3, 11},
         [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); });
  expect("log", ferry::log(p), pv, {11, 3}, [](double v) { return std::log(v); });
  expect("sqrt", ferry::sqrt(p), pv, {11, 3}, [](double v) { return std::sqrt(v); });
  CHECK(ferry::log(p).device() == D1);
  CHECK(read<V>(x) == xv);
  CHECK(read<V>(p) == pv);

  // Domain edges: log(0) = -inf, log(-1) and sqrt(-1) are NaN, sqrt(0) = 0, gelu(large) = x.
  const T e = make(r, std::vector<V>{0, -1, 40, -40}, {4});
  check_close(read<V>(ferry::log(e)), std::vector<double>{-INFINITY, NAN, std::log(40.0), NAN}, rel,
              abs, "log edges");
  check_close(read<V>(ferry::sqrt(e)), std::vector<double>{0, NAN, std::sqrt(40.0), NAN}, rel, abs,
              "sqrt edges");
  check_close(read<V>(ferry::gelu(e)), std::vector<double>{0, -0.15865525393145707, 40, 0}, rel,
              abs, "gelu edges");
  check_close(read<V>(ferry::sigmoid(e)), std::vector<double>{0.5, 1 / (1 + std::exp(1.0)), 1, 0},
              rel, abs, "sigmoid edges");
}

TEMPLATE_TEST_CASE("neg, abs and relu work on int tensors", "[ops][elementwise][unary]",
                   std::int32_t, std::int64_t) {
  using V = TestType;
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const auto xv = data<V>(20, 5);
  const T x = make(r, xv, {4, 5});
  const T n = ferry::neg(x), a = ferry::abs(x), re = ferry::relu(x), m = -x;
  for (const T* t : {&n, &a, &re, &m}) check_meta(*t, {4, 5}, ferry::dtype_of<V>);
  CHECK(read<V>(n) == naive_map<V>(xv, [](V v) { return -v; }));
  CHECK(read<V>(m) == naive_map<V>(xv, [](V v) { return -v; }));
  CHECK(read<V>(a) == naive_map<V>(xv, [](V v) { return v < 0 ? -v : v; }));
  CHECK(read<V>(re) == naive_map<V>(xv, [](V v) { return v > 0 ? v : V(0); }));
  CHECK(read<V>(x) == xv);
}

TEST_CASE("clamp bounds every element, keeps NaN, for float and int tensors",
          "[ops][elementwise]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto fv = data<float>(24, 3);
  fv[5] = std::numeric_limits<float>::quiet_NaN();
  const T f = make(r, fv, {2, 3, 4});
  const T c = ferry::clamp(f, Scalar(-1.5), Scalar(2.0f));
  check_meta(c, {2, 3, 4}, DType::f32);
  check_close(
      read<float>(c),
      naive_map<double>(
          fv,
          [](float v) { return std::isnan(v) ? NAN : std::min(std::max(double(v), -1.5), 2.0); }),
      "clamp f32");
  const auto iv = data<std::int32_t>(10, 4);
  const T i = make(r, iv, {10});
  const T ci = ferry::clamp(i, Scalar(-2), Scalar(3));
  check_meta(ci, {10}, DType::i32);
  CHECK(read<std::int32_t>(ci) ==
        naive_map<std::int32_t>(iv, [](std::int32_t v) { return std::clamp(v, -2, 3); }));
  const auto lv = data<std::int64_t>(10, 8);
  const T l = make(r, lv, {5, 2});
  CHECK(read<std::int64_t>(ferry::clamp(l, Scalar(0), Scalar(0))) ==
        std::vector<std::int64_t>(10, 0));
  CHECK(read<std::int32_t>(i) == iv);
  // min > max: every element is max, as torch.clamp and ONNX Clip (NaN stays NaN).
  const auto above = read<float>(ferry::clamp(f, Scalar(2.0), Scalar(1.0)));
  for (std::size_t k = 0; k < above.size(); ++k) {
    INFO("element " << k << " of " << fv[k]);
    CHECK((k == 5 ? std::isnan(above[k]) : above[k] == 1.0f));
  }
  CHECK(read<std::int32_t>(ferry::clamp(i, Scalar(5), Scalar(-7))) ==
        std::vector<std::int32_t>(10, -7));
}

TEMPLATE_TEST_CASE(
    "comparisons return bool tensors for tensor and scalar operands with broadcasting",
    "[ops][compare]", float, double, std::int32_t, std::int64_t) {
  using V = TestType;
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  using F = std::function<bool(double, double)>;
  const std::vector<std::pair<const char*, F>> fs = {
      {"equal", [](double x, double y) { return x == y; }},
      {"not_equal", [](double x, double y) { return x != y; }},
      {"greater", [](double x, double y) { return x > y; }},
      {"greater_equal", [](double x, double y) { return x >= y; }},
      {"less", [](double x, double y) { return x < y; }},
      {"less_equal", [](double x, double y) { return x <= y; }},
  };
  auto call = [](const std::string& n, const T& a, const auto& b) {
    if (n == "equal") return ferry::equal(a, b);
    if (n == "not_equal") return ferry::not_equal(a, b);
    if (n == "greater") return ferry::greater(a, b);
    if (n == "greater_equal") return ferry::greater_equal(a, b);
    if (n == "less") return ferry::less(a, b);
    return ferry::less_equal(a, b);
  };
  struct Case {
    Dims ad, bd, od;
  };
  const Case cases[] = {{{2, 3}, {2, 3}, {2, 3}},
                        {{2, 3}, {3}, {2, 3}},
                        {{4, 1, 3}, {2, 1}, {4, 2, 3}},
                        {{60, 1, 30}, {1, 40, 1}, {60, 40, 30}}};
  std::uint32_t seed = 3;
  for (const Case& c : cases) {
    INFO("shapes " << Shape(c.ad) << " and " << Shape(c.bd));
    const auto av = data<V>(numel(c.ad), seed++, -2, 2, 1.0);  // small range: many ties
    const auto bv = data<V>(numel(c.bd), seed++, -2, 2, 1.0);
    const T a = make(r, av, c.ad);
    const T b = make(r, bv, c.bd);
    for (const auto& [name, f] : fs) {
      INFO(name);
      const T got = call(name, a, b);
      check_meta(got, c.od, DType::boolean);
      CHECK(read_bool(got) == naive_binary<std::uint8_t>(av, c.ad, bv, c.bd, c.od, [&](V x, V y) {
              return f(static_cast<double>(x), static_cast<double>(y));
            }));
    }
    CHECK(read<V>(a) == av);
    CHECK(read<V>(b) == bv);
  }
  // Scalars: one in the dtype, and for ints a fractional one compared exactly (x > 0.5 <=> x >= 1).
  const auto av = data<V>(12, 77, -2, 2, 1.0);
  const T a = make(r, av, {3, 4});
  for (double s : {1.0, 0.5, -2.0}) {
    INFO("scalar " << s);
    for (const auto& [name, f] : fs) {
      INFO(name);
      const T got = std::is_integral_v<V> && s == 0.5 ? call(name, a, Scalar(0.5))
                                                      : call(name, a, Scalar(V(s)));
      check_meta(got, {3, 4}, DType::boolean);
      CHECK(read_bool(got) ==
            naive_map<std::uint8_t>(av, [&](V x) { return f(static_cast<double>(x), s); }));
    }
  }
}

TEST_CASE("logical and, or and not on bool tensors, as functions and as & | !", "[ops][logical]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const std::vector<int> av{1, 0, 1, 0, 0, 1}, bv{1, 1, 0};
  const T a = make_bool(r, av, {2, 3});
  const T b = make_bool(r, bv, {3});
  const auto want_and =
      naive_binary<std::uint8_t>(av, {2, 3}, bv, {3}, {2, 3}, [](int x, int y) { return x && y; });
  const auto want_or =
      naive_binary<std::uint8_t>(av, {2, 3}, bv, {3}, {2, 3}, [](int x, int y) { return x || y; });
  const auto want_not = naive_map<std::uint8_t>(av, [](int x) { return !x; });
  const T t_and = a & b, t_or = a | b, t_not = !a;
  for (const T* t : {&t_and, &t_or, &t_not}) check_meta(*t, {2, 3}, DType::boolean);
  CHECK(read_bool(t_and) == want_and);
  CHECK(read_bool(t_or) == want_or);
  CHECK(read_bool(t_not) == want_not);
  CHECK(read_bool(ferry::logical_and(a, b)) == want_and);
  CHECK(read_bool(ferry::logical_or(b, a)) == want_or);
  CHECK(read_bool(ferry::logical_not(a)) == want_not);
  // Equality on bools.
  CHECK(
      read_bool(ferry::equal(a, b)) ==
      naive_binary<std::uint8_t>(av, {2, 3}, bv, {3}, {2, 3}, [](int x, int y) { return x == y; }));
  CHECK(
      read_bool(ferry::not_equal(a, b)) ==
      naive_binary<std::uint8_t>(av, {2, 3}, bv, {3}, {2, 3}, [](int x, int y) { return x != y; }));
  // Composed with comparisons.
  const auto xv = data<float>(6, 21);
  const T x = make(r, xv, {2, 3});
  const T in_range = (x > 0.0f) & (x < 1.5f);
  CHECK(read_bool(in_range) ==
        naive_map<std::uint8_t>(xv, [](float v) { return v > 0 && v < 1.5f; }));
  CHECK(read_bool(a) == naive_map<std::uint8_t>(av, [](int v) { return v; }));
}

TEST_CASE("where picks from a or b by mask with three-way broadcasting", "[ops][where]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  struct Case {
    Dims md, ad, bd, od;
  };
  const Case cases[] = {{{2, 3}, {2, 3}, {2, 3}, {2, 3}},
                        {{2, 1}, {1, 3}, {2, 3}, {2, 3}},
                        {{2, 3}, {3}, {1}, {2, 3}},
                        {{4, 1, 1}, {1, 2, 1}, {3}, {4, 2, 3}},
                        {{50, 1, 40}, {1, 30, 40}, {50, 30, 1}, {50, 30, 40}}};
  std::uint32_t seed = 40;
  for (const Case& c : cases) {
    INFO("mask " << Shape(c.md) << ", a " << Shape(c.ad) << ", b " << Shape(c.bd));
    auto mv = data<int>(numel(c.md), seed++, 0, 1);
    const T m = make_bool(r, mv, c.md);
    auto naive = [&](const auto& av, const auto& bv) {
      using V = typename std::decay_t<decltype(av)>::value_type;
      std::vector<V> out(static_cast<std::size_t>(numel(c.od)));
      for (std::int64_t i = 0; i < numel(c.od); ++i) {
        const Dims idx = unravel(i, c.od);
        out[static_cast<std::size_t>(i)] = mv[static_cast<std::size_t>(bcast_src(idx, c.md))]
                                               ? av[static_cast<std::size_t>(bcast_src(idx, c.ad))]
                                               : bv[static_cast<std::size_t>(bcast_src(idx, c.bd))];
      }
      return out;
    };
    const auto af = data<float>(numel(c.ad), seed++), bf = data<float>(numel(c.bd), seed++);
    const T a = make(r, af, c.ad), b = make(r, bf, c.bd);
    const T w = ferry::where(m, a, b);
    check_meta(w, c.od, DType::f32);
    CHECK(read<float>(w) == naive(af, bf));
    const auto ai = data<std::int64_t>(numel(c.ad), seed++),
               bi = data<std::int64_t>(numel(c.bd), seed++);
    const T wi = ferry::where(m, make(r, ai, c.ad), make(r, bi, c.bd));
    check_meta(wi, c.od, DType::i64);
    CHECK(read<std::int64_t>(wi) == naive(ai, bi));
    CHECK(read<float>(a) == af);
    CHECK(read<float>(b) == bf);
    CHECK(read_bool(m) == naive_map<std::uint8_t>(mv, [](int v) { return v; }));
  }
}

TEST_CASE("cast converts between f32, f64, i32, i64 and bool; float to int truncates toward zero",
          "[ops][cast]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const DType all[] = {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean};
  const std::vector<double> fsrc{-2.7, -0.5, 0.0, 0.5, 1.9, 3.0, -1e-3, 100.99};
  const std::vector<std::int64_t> isrc{-3, -1, 0, 1, 2, 7, -100, 100};
  const std::vector<int> bsrc{1, 0, 0, 1, 1, 0, 1, 0};
  auto source = [&](DType dt) -> T {
    switch (dt) {
      case DType::f32:
        return make(r, naive_map<float>(fsrc, [](double v) { return v; }), {2, 4});
      case DType::f64:
        return make(r, fsrc, {2, 4});
      case DType::i32:
        return make(r, naive_map<std::int32_t>(isrc, [](std::int64_t v) { return v; }), {2, 4});
      case DType::i64:
        return make(r, isrc, {2, 4});
      default:
        return make_bool(r, bsrc, {2, 4});
    }
  };
  for (DType from : all) {
    const T src = source(from);
    const std::vector<double> sv = src.to_data().to_vector<double>();
    for (DType to : all) {
      INFO(from << " -> " << to);
      const T c = ferry::cast(src, to);
      check_meta(c, {2, 4}, to);
      std::vector<double> want;
      for (double v : sv) {
        if (to == DType::f32)
          want.push_back(static_cast<double>(static_cast<float>(v)));
        else if (to == DType::f64)
          want.push_back(v);
        else if (to == DType::boolean)
          want.push_back(v != 0.0 ? 1.0 : 0.0);
        else
          want.push_back(std::trunc(v));
      }
      CHECK(c.to_data().to_vector<double>() == want);
    }
    CHECK(src.to_data().to_vector<double>() == sv);
  }
  // Documented edges of float -> int: NaN -> 0, out of range saturates.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const T e = make(r, std::vector<float>{nan, 1e20f, -1e20f, -2.5f}, {4});
  CHECK(read<std::int32_t>(ferry::cast(e, DType::i32)) ==
        std::vector<std::int32_t>{0, std::numeric_limits<std::int32_t>::max(),
                                  std::numeric_limits<std::int32_t>::min(), -2});
  CHECK(read_bool(ferry::cast(e, DType::boolean)) == std::vector<std::uint8_t>{1, 1, 1, 1});
}

// ================================ reductions ================================================

namespace {
enum class Red { sum, mean, prod, max, min, argmax, argmin };
const char* red_name(Red k) {
  const char* n[] = {"sum", "mean", "prod", "max", "min", "argmax", "argmin"};
  return n[static_cast<int>(k)];
}
T reduce_call(Red k, const T& x, std::optional<std::int64_t> dim, bool keepdim) {
  switch (k) {
    case Red::sum:
      return dim ? ferry::sum(x, *dim, keepdim) : ferry::sum(x);
    case Red::mean:
      return dim ? ferry::mean(x, *dim, keepdim) : ferry::mean(x);
    case Red::prod:
      return dim ? ferry::prod(x, *dim, keepdim) : ferry::prod(x);
    case Red::max:
      return dim ? ferry::max(x, *dim, keepdim) : ferry::max(x);
    case Red::min:
      return dim ? ferry::min(x, *dim, keepdim) : ferry::min(x);
    case Red::argmax:
      return dim ? ferry::argmax(x, *dim, keepdim) : ferry::argmax(x);
    case Red::argmin:
      break;
  }
  return dim ? ferry::argmin(x, *dim, keepdim) : ferry::argmin(x);
}
/// The value of one reduction over a line of values (first index wins ties for arg*).
double reduce_line(Red k, const std::vector<double>& line) {
  double acc = 0;
  std::size_t best = 0;
  switch (k) {
    case Red::sum:
      for (double v : line) acc += v;
      return acc;
    case Red::mean:
      for (double v : line) acc += v;
      return acc / static_cast<double>(line.size());
    case Red::prod:
      acc = 1;
      for (double v : line) acc *= v;
      return acc;
    case Red::max:
    case Red::argmax:
      for (std::size_t i = 1; i < line.size(); ++i)
        if (line[i] > line[best]) best = i;
      return k == Red::max ? line[best] : static_cast<double>(best);
    case Red::min:
    case Red::argmin:
      for (std::size_t i = 1; i < line.size(); ++i)
        if (line[i] < line[best]) best = i;
      return k == Red::min ? line[best] : static_cast<double>(best);
  }
  return 0;
}
/// The lines along `dim` of a row-major tensor, in the order of the reduced output.
template <class V>
std::vector<std::vector<double>> lines_along(const std::vector<V>& v, const Dims& dims,
                                             std::size_t dim) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < dim; ++i) outer *= dims[i];
  for (std::size_t i = dim + 1; i < dims.size(); ++i) inner *= dims[i];
  const std::int64_t n = dims[dim];
  std::vector<std::vector<double>> out;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::vector<double> line;
      for (std::int64_t k = 0; k < n; ++k)
        line.push_back(static_cast<double>(v[static_cast<std::size_t>((o * n + k) * inner + i)]));
      out.push_back(std::move(line));
    }
  return out;
}
}  // namespace

TEMPLATE_TEST_CASE(
    "sum, mean, prod, max, min, argmax and argmin reduce over all dims and along each dim",
    "[ops][reduce]", float, double, std::int32_t, std::int64_t) {
  using V = TestType;
  constexpr bool is_float = std::is_floating_point_v<V>;
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const DType dt = ferry::dtype_of<V>;
  const Dims dims{2, 3, 4};
  const auto xv = data<V>(24, 7, -4, 4);  // small range: ties for max/min/arg*
  auto pv = data<V>(24, 8, -2, 2, 1.0);   // prod: values in {-2, -1, 1, 2}
  for (auto& v : pv)
    if (v == V(0)) v = V(1);
  const T x = make(r, xv, dims);
  const T p = make(r, pv, dims, D1);

  std::vector<Red> kinds{Red::sum, Red::prod, Red::max, Red::min, Red::argmax, Red::argmin};
  if (is_float) kinds.push_back(Red::mean);

  auto check_one = [&](Red k, std::optional<std::int64_t> dim, bool keepdim) {
    INFO(red_name(k) << " dim " << (dim ? std::to_string(*dim) : "all") << " keepdim " << keepdim);
    const bool is_arg = k == Red::argmax || k == Red::argmin;
    const auto& src = k == Red::prod ? pv : xv;
    const T got = reduce_call(k, k == Red::prod ? p : x, dim, keepdim);
    Dims od;
    std::vector<std::vector<double>> lines;
    if (!dim) {
      lines.emplace_back(src.begin(), src.end());
    } else {
      const auto d = static_cast<std::size_t>(*dim < 0 ? *dim + 3 : *dim);
      for (std::size_t i = 0; i < dims.size(); ++i) {
        if (i != d)
          od.push_back(dims[i]);
        else if (keepdim)
          od.push_back(1);
      }
      lines = lines_along(src, dims, d);
    }
    // arg* return i64 indices; sum and prod of ints accumulate and return in i64 (as PyTorch).
    const bool widened = !is_float && (k == Red::sum || k == Red::prod);
    check_meta(got, od, is_arg || widened ? DType::i64 : dt);
    std::vector<double> want;
    for (const auto& l : lines) want.push_back(reduce_line(k, l));
    if (is_arg || widened)
      check_values(read<std::int64_t>(got), want, red_name(k));
    else
      check_values(read<V>(got), want, red_name(k));
  };
  for (Red k : kinds) {
    check_one(k, std::nullopt, false);
    for (std::int64_t dim : {0, 1, 2, -1, -3})
      for (bool keepdim : {false, true}) check_one(k, dim, keepdim);
  }
  CHECK(read<V>(x) == xv);
  CHECK(read<V>(p) == pv);

  if constexpr (is_float) {
    // NaN wins max/min, and arg* return the first NaN.
    const V nan = std::numeric_limits<V>::quiet_NaN();
    const T n = make(r, std::vector<V>{1, nan, 3, nan, -5, 0}, {2, 3});
    CHECK(std::isnan(read<V>(ferry::max(n))[0]));
    CHECK(std::isnan(read<V>(ferry::min(n))[0]));
    CHECK(read<std::int64_t>(ferry::argmax(n)) == std::vector<std::int64_t>{1});
    CHECK(read<std::int64_t>(ferry::argmin(n)) == std::vector<std::int64_t>{1});
    CHECK(read<std::int64_t>(ferry::argmax(n, 1)) == std::vector<std::int64_t>{1, 0});
    // columns {1, NaN}, {NaN, -5}, {3, 0}
    const T am = ferry::argmin(n, 0, true);
    check_meta(am, {1, 3}, DType::i64);
    CHECK(read<std::int64_t>(am) == std::vector<std::int64_t>{1, 0, 1});
    // Larger sums (parallel paths) stay close to a double-precision sum.
    const auto big = data<V>(300000, 5);
    const T tb = make(r, big, {600, 500});
    double s = 0;
    for (V v : big) s += static_cast<double>(v);
    check_close(read<V>(ferry::sum(tb)), std::vector<double>{s}, 1e-5, 1e-3, "big sum");
    check_close(read<V>(ferry::mean(tb)), std::vector<double>{s / 300000}, 1e-5, 1e-6, "big mean");
    const auto rows = lines_along(big, {600, 500}, 1);
    std::vector<double> rs;
    for (const auto& l : rows) rs.push_back(reduce_line(Red::sum, l));
    check_close(read<V>(ferry::sum(tb, 1)), rs, 1e-5, 1e-4, "big row sums");
  } else {
    CHECK_THROWS_AS(ferry::mean(x), ferry::DTypeError);
  }

  // Rank 0 and empty extents: sum 0, prod 1 (mean NaN), shapes as for any other tensor;
  // sum and prod of ints come back as i64.
  using S = std::conditional_t<is_float, V, std::int64_t>;
  const DType sdt = ferry::dtype_of<S>;
  const T s0 = make(r, std::vector<V>{V(3)}, {});
  check_meta(ferry::sum(s0), {}, sdt);
  CHECK(read<S>(ferry::sum(s0)) == std::vector<S>{S(3)});
  CHECK(read<std::int64_t>(ferry::argmax(s0)) == std::vector<std::int64_t>{0});
  const T e = make(r, std::vector<V>{}, {0, 3});
  const T es = ferry::sum(e, 0);
  check_meta(es, {3}, sdt);
  CHECK(read<S>(es) == std::vector<S>(3, S(0)));
  const T ep = ferry::prod(e, 0, true);
  check_meta(ep, {1, 3}, sdt);
  CHECK(read<S>(ep) == std::vector<S>(3, S(1)));
  const T e1 = ferry::sum(e, 1);
  check_meta(e1, {0}, sdt);
  CHECK(read<S>(e1).empty());
  CHECK(read<S>(ferry::sum(e)) == std::vector<S>{S(0)});
  if constexpr (is_float) CHECK(std::isnan(read<V>(ferry::mean(e))[0]));
}

// ================================ matmul ====================================================

namespace {
template <class V>
std::vector<double> naive_matmul(const std::vector<V>& a, const Dims& ad, const std::vector<V>& b,
                                 const Dims& bd, const Dims& od) {
  const std::int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
  const Dims ab(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2),
      ob(od.begin(), od.end() - 2);
  std::vector<double> out;
  for (std::int64_t bi = 0; bi < numel(ob); ++bi) {
    const Dims idx = unravel(bi, ob);
    const std::int64_t ia = bcast_src(idx, ab) * M * K, ib = bcast_src(idx, bb) * K * N;
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (std::int64_t k = 0; k < K; ++k)
          acc += static_cast<double>(a[static_cast<std::size_t>(ia + m * K + k)]) *
                 static_cast<double>(b[static_cast<std::size_t>(ib + k * N + n)]);
        out.push_back(acc);
      }
  }
  return out;
}
}  // namespace

TEMPLATE_TEST_CASE("matmul matches a naive triple loop, 2-D and batched with broadcast batch dims",
                   "[ops][matmul]", float, double, std::int32_t, std::int64_t) {
  using V = TestType;
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  struct Case {
    Dims ad, bd, od;
  };
  const Case cases[] = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{1, 1}, {1, 1}, {1, 1}},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}},
      {{3, 4}, {2, 4, 2}, {2, 3, 2}},
      {{2, 1, 3, 4}, {3, 4, 2}, {2, 3, 3, 2}},
      {{2, 3, 4}, {2, 4, 1}, {2, 3, 1}},
      {{2, 0}, {0, 3}, {2, 3}},
      {{17, 33}, {33, 19}, {17, 19}},
      {{3, 64, 48}, {1, 48, 40}, {3, 64, 40}},
  };
  std::uint32_t seed = 60;
  for (const Case& c : cases) {
    INFO(Shape(c.ad) << " x " << Shape(c.bd));
    const auto av = data<V>(numel(c.ad), seed++);
    const auto bv = data<V>(numel(c.bd), seed++);
    const T a = make(r, av, c.ad);
    const T b = make(r, bv, c.bd);
    const T m = ferry::matmul(a, b);
    check_meta(m, c.od, ferry::dtype_of<V>);
    check_values(read<V>(m), naive_matmul(av, c.ad, bv, c.bd, c.od), "matmul");
    CHECK(read<V>(a) == av);
    CHECK(read<V>(b) == bv);
  }
}

// ================================ operators and sharing =======================================

TEST_CASE("the C++ operators do what the named ops do", "[ops][operators]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const auto av = data<float>(6, 1);
  const auto bv = nonzero<float>(3, 2);
  const T a = make(r, av, {2, 3});
  const T b = make(r, bv, {3});
  using F = std::function<double(double, double)>;
  auto expect = [&](const char* name, const T& got, const F& f) {
    INFO(name);
    check_meta(got, {2, 3}, DType::f32);
    check_close(read<float>(got),
                naive_binary<double>(av, {2, 3}, bv, {3}, {2, 3},
                                     [&](float x, float y) { return f(x, y); }),
                name);
  };
  auto expect_s = [&](const char* name, const T& got, const std::function<double(double)>& f) {
    INFO(name);
    check_meta(got, {2, 3}, DType::f32);
    check_close(read<float>(got), naive_map<double>(av, [&](float x) { return f(x); }), name);
  };
  expect("a + b", a + b, [](double x, double y) { return x + y; });
  expect("a - b", a - b, [](double x, double y) { return x - y; });
  expect("a * b", a * b, [](double x, double y) { return x * y; });
  expect("a / b", a / b, [](double x, double y) { return x / y; });
  expect("a % b", a % b, [](double x, double y) { return floor_mod(x, y); });
  expect_s("a * 2.0f", a * 2.0f, [](double x) { return x * 2; });
  expect_s("2.0f * a", 2.0f * a, [](double x) { return 2 * x; });
  expect_s("a + 1.5", a + 1.5, [](double x) { return x + 1.5; });
  expect_s("1.5 + a", 1.5 + a, [](double x) { return 1.5 + x; });
  expect_s("a - 1.0f", a - 1.0f, [](double x) { return x - 1; });
  expect_s("3.0f - a", 3.0f - a, [](double x) { return 3 - x; });
  expect_s("a / 4.0f", a / 4.0f, [](double x) { return x / 4; });
  expect_s("a % 0.75f", a % 0.75f, [](double x) { return floor_mod(x, 0.75); });
  expect_s("-a", -a, [](double x) { return -x; });

  using C = std::function<bool(double, double)>;
  auto expect_c = [&](const char* name, const T& got, const C& f) {
    INFO(name);
    check_meta(got, {2, 3}, DType::boolean);
    CHECK(read_bool(got) == naive_binary<std::uint8_t>(av, {2, 3}, bv, {3}, {2, 3},
                                                       [&](float x, float y) { return f(x, y); }));
  };
  expect_c("a < b", a < b, [](double x, double y) { return x < y; });
  expect_c("a <= b", a <= b, [](double x, double y) { return x <= y; });
  expect_c("a > b", a > b, [](double x, double y) { return x > y; });
  expect_c("a >= b", a >= b, [](double x, double y) { return x >= y; });
  expect_c("a == b", a == b, [](double x, double y) { return x == y; });
  expect_c("a != b", a != b, [](double x, double y) { return x != y; });
  CHECK(read_bool(a < 0.5f) == naive_map<std::uint8_t>(av, [](float x) { return x < 0.5f; }));
  CHECK(read_bool(a == 0.25f) == naive_map<std::uint8_t>(av, [](float x) { return x == 0.25f; }));
  CHECK(read_bool(a >= -1.0) == naive_map<std::uint8_t>(av, [](float x) { return x >= -1.0f; }));

  // Ints: % follows the divisor's sign, / floors.
  const std::vector<std::int32_t> iv{-7, 7, -8, 5, 0, 9}, jv{3, -3, 5};
  const T i = make(r, iv, {2, 3});
  const T j = make(r, jv, {3});
  CHECK(read<std::int32_t>(i % j) == std::vector<std::int32_t>{2, -2, 2, 2, 0, 4});
  CHECK(read<std::int32_t>(i / j) == std::vector<std::int32_t>{-3, -3, -2, 1, 0, 1});
  CHECK(read<std::int32_t>(i % 4) == std::vector<std::int32_t>{1, 3, 0, 1, 0, 1});
  CHECK(read<std::int32_t>(2 * i - 1) == std::vector<std::int32_t>{-15, 13, -17, 9, -1, 17});
  CHECK(read<std::int32_t>(-i) == std::vector<std::int32_t>{7, -7, 8, -5, 0, -9});
  CHECK(read<float>(a) == av);
  CHECK(read<float>(b) == bv);
  CHECK(read<std::int32_t>(i) == iv);
}

TEST_CASE("inputs passed as lvalues stay unchanged; a moved last copy is consumed",
          "[ops][sharing]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  const auto av = data<float>(12, 4);
  T a = make(r, av, {3, 4});
  {
    const T e = ferry::exp(a);
    const T s = a + a;
    const T n = -a;
    const T rs = ferry::reshape(a, Shape{4, 3});
    const T p = ferry::permute(a, {1, 0});
    const T c = ferry::cast(a, DType::f64);
    const T m = ferry::matmul(a, ferry::reshape(a, Shape{4, 3}));
    const T w = ferry::where(a > 0.0f, a, -a);
    const T o = a.to(D1);
    const T sa = ferry::slice_assign(a, {ferry::Range{0, 1}}, r.zeros({1, 4}, DType::f32, D0));
    (void)e, (void)s, (void)n, (void)rs, (void)p, (void)c, (void)m, (void)w, (void)o, (void)sa;
    CHECK(a.use_count() == 1);
    CHECK(read<float>(a) == av);
    CHECK(read<float>(o) == av);
  }
  CHECK(read<float>(a) == av);

  // The only copy, moved in: the op may reuse its buffer, the source becomes moved-from.
  r.sync();
  const auto allocs = r.backend().allocations(D0);
  T b = ferry::exp(std::move(a));
  CHECK_FALSE(a.valid());
  check_meta(b, {3, 4}, DType::f32);
  r.sync();
  CHECK(r.backend().allocations(D0) == allocs);  // exp ran in place
  check_close(read<float>(b), naive_map<double>(av, [](float v) { return std::exp(double(v)); }),
              4e-6, 1e-6, "exp in place");
}

// ================================ errors ======================================================
// Errors in the call (shapes, dtypes, axes, devices, handles) throw at once in both modes; an
// error a kernel finds while running (integer division by zero) throws at the call in inline
// mode and, in async mode, surfaces as OpFailed where the result is read and as the original
// exception at the next sync.

namespace {
struct Live {
  std::vector<float> values;
  T t;
};
Live live_tensor(R& r) {
  auto v = data<float>(6, 1234);
  T t = make(r, v, {2, 3});
  return {std::move(v), std::move(t)};
}
}  // namespace

TEST_CASE("broadcasting incompatible shapes throws ShapeError naming both shapes",
          "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const T a = make(r, data<float>(6, 1), {2, 3});
  const T b = make(r, data<float>(4, 2), {4});
  REQUIRE_THROWS_MATCHES(ferry::add(a, b), ferry::ShapeError,
                         Says("add") && Says("[2, 3]") && Says("[4]"));
  REQUIRE_THROWS_MATCHES(a * b, ferry::ShapeError, Says("mul") && Says("[2, 3]") && Says("[4]"));
  const T c = make(r, data<float>(4, 3), {2, 2});
  const T d = make(r, data<float>(12, 4), {4, 1, 3});
  REQUIRE_THROWS_MATCHES(ferry::less(d, c), ferry::ShapeError,
                         Says("less") && Says("[4, 1, 3]") && Says("[2, 2]"));
  const T m = make_bool(r, {1, 0, 1, 0, 1, 0}, {2, 3});
  REQUIRE_THROWS_MATCHES(ferry::where(m, a, b), ferry::ShapeError,
                         Says("where") && Says("[2, 3]") && Says("[4]"));
  REQUIRE_THROWS_MATCHES(ferry::expand(a, Shape{4, 3}), ferry::ShapeError,
                         Says("expand") && Says("[2, 3]") && Says("[4, 3]"));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("mixing dtypes throws DTypeError naming both dtypes", "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const T f = make(r, data<float>(6, 1), {2, 3});
  const T d = make(r, data<double>(6, 1), {2, 3});
  const T i = make(r, data<std::int32_t>(6, 1), {2, 3});
  const T l = make(r, data<std::int64_t>(6, 1), {2, 3});
  REQUIRE_THROWS_MATCHES(ferry::add(f, i), ferry::DTypeError,
                         Says("add") && Says("f32") && Says("i32"));
  REQUIRE_THROWS_MATCHES(f == d, ferry::DTypeError, Says("equal") && Says("f32") && Says("f64"));
  REQUIRE_THROWS_MATCHES(ferry::matmul(d, ferry::reshape(f, Shape{3, 2})), ferry::DTypeError,
                         Says("matmul") && Says("f64") && Says("f32"));
  const T m = make_bool(r, {1, 0, 1, 0, 1, 0}, {2, 3});
  REQUIRE_THROWS_MATCHES(ferry::where(m, l, i), ferry::DTypeError,
                         Says("where") && Says("i64") && Says("i32"));
  REQUIRE_THROWS_MATCHES(ferry::cat(std::vector<T>{f, d}, 0), ferry::DTypeError,
                         Says("cat") && Says("f32") && Says("f64"));
  REQUIRE_THROWS_MATCHES(
      ferry::slice_assign(f, {ferry::Range{0, 1}}, ferry::slice(i, {ferry::Range{0, 1}})),
      ferry::DTypeError, Says("slice_assign") && Says("f32") && Says("i32"));
  REQUIRE_THROWS_MATCHES(m & (f > 0.0f) & f, ferry::DTypeError, Says("logical_and") && Says("f32"));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("an axis out of range throws IndexError naming the op, the axis and the shape",
          "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const T x = make(r, data<float>(24, 1), {2, 3, 4});
  const T idx = make(r, std::vector<std::int64_t>{0, 1}, {2});
  REQUIRE_THROWS_MATCHES(ferry::sum(x, 3), ferry::IndexError,
                         Says("sum") && Says("axis 3") && Says("[2, 3, 4]"));
  REQUIRE_THROWS_MATCHES(ferry::argmax(x, -4, true), ferry::IndexError,
                         Says("argmax") && Says("axis -4"));
  REQUIRE_THROWS_MATCHES(ferry::swap_dims(x, 0, 3), ferry::IndexError,
                         Says("swap_dims") && Says("axis 3"));
  REQUIRE_THROWS_MATCHES(ferry::flip(x, {5}), ferry::IndexError, Says("flip") && Says("axis 5"));
  REQUIRE_THROWS_MATCHES(ferry::flip(x, {1, -2}), ferry::IndexError, Says("flip") && Says("twice"));
  REQUIRE_THROWS_MATCHES(ferry::cat(std::vector<T>{x, x}, 3), ferry::IndexError,
                         Says("cat") && Says("axis 3"));
  REQUIRE_THROWS_MATCHES(ferry::index_select(x, -5, idx), ferry::IndexError,
                         Says("index_select") && Says("axis -5"));
  REQUIRE_THROWS_MATCHES(ferry::gather(x, 7, ferry::reshape(idx, Shape{1, 1, 2})),
                         ferry::IndexError, Says("gather") && Says("axis 7"));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("an invalid permutation throws IndexError", "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const T x = make(r, data<float>(24, 1), {2, 3, 4});
  REQUIRE_THROWS_MATCHES(ferry::permute(x, {0, 0, 1}), ferry::IndexError,
                         Says("permute") && Says("[0, 0, 1]") && Says("repeats axis 0"));
  REQUIRE_THROWS_MATCHES(ferry::permute(x, {1, 0}), ferry::IndexError,
                         Says("permute") && Says("2 entries") && Says("[2, 3, 4]"));
  REQUIRE_THROWS_MATCHES(ferry::permute(x, {0, 1, 3}), ferry::IndexError,
                         Says("permute") && Says("axis 3"));
  REQUIRE_THROWS_MATCHES(ferry::permute(x, {2, -1, 0}), ferry::IndexError, Says("repeats axis 2"));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("reshaping to a different element count throws ShapeError", "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const T x = make(r, data<float>(24, 1), {2, 3, 4});
  REQUIRE_THROWS_MATCHES(
      ferry::reshape(x, Shape{5, 5}), ferry::ShapeError,
      Says("reshape") && Says("[2, 3, 4]") && Says("24 elements") && Says("[5, 5]"));
  REQUIRE_THROWS_MATCHES(ferry::reshape(x, Shape{-1, 5}), ferry::ShapeError,
                         Says("reshape") && Says("[-1, 5]"));
  REQUIRE_THROWS_MATCHES(ferry::reshape(x, Shape{-1, -1}), ferry::ShapeError, Says("reshape"));
  REQUIRE_THROWS_MATCHES(ferry::reshape(x, Shape{-2, -12}), ferry::ShapeError, Says("invalid dim"));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("matmul with mismatched inner dims throws ShapeError naming both shapes",
          "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const T a = make(r, data<float>(6, 1), {2, 3});
  const T b = make(r, data<float>(20, 2), {4, 5});
  REQUIRE_THROWS_MATCHES(ferry::matmul(a, b), ferry::ShapeError,
                         Says("matmul") && Says("[2, 3]") && Says("[4, 5]") && Says("3 != 4"));
  const T c = make(r, data<float>(24, 3), {2, 3, 4});
  const T d = make(r, data<float>(60, 4), {3, 4, 5});
  REQUIRE_THROWS_MATCHES(ferry::matmul(c, d), ferry::ShapeError,
                         Says("matmul") && Says("[2]") && Says("[3]"));
  const T v = make(r, data<float>(3, 5), {3});
  REQUIRE_THROWS_MATCHES(ferry::matmul(a, v), ferry::ShapeError, Says("matmul") && Says("rank"));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("operands on different devices throw DeviceError naming both devices", "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const auto av = data<float>(6, 1), bv = data<float>(6, 2);
  const T a = make(r, av, {2, 3});
  const T b = make(r, bv, {2, 3}).to(D1);
  REQUIRE_THROWS_MATCHES(ferry::add(a, b), ferry::DeviceError,
                         Says("add") && Says("cpu:0") && Says("cpu:1"));
  REQUIRE_THROWS_MATCHES(b - a, ferry::DeviceError, Says("sub") && Says("cpu:1") && Says("cpu:0"));
  REQUIRE_THROWS_MATCHES(ferry::matmul(a, ferry::reshape(b, Shape{3, 2})), ferry::DeviceError,
                         Says("matmul") && Says("cpu:0") && Says("cpu:1"));
  REQUIRE_THROWS_MATCHES(ferry::where(a > 0.0f, a, b), ferry::DeviceError,
                         Says("where") && Says("cpu:0") && Says("cpu:1"));
  REQUIRE_THROWS_MATCHES(ferry::cat(std::vector<T>{a, a, b}, 0), ferry::DeviceError,
                         Says("cat") && Says("cpu:0") && Says("cpu:1"));
  const T idx = make(r, std::vector<std::int64_t>{1}, {1}, D1);
  REQUIRE_THROWS_MATCHES(ferry::index_select(a, 0, idx), ferry::DeviceError,
                         Says("index_select") && Says("cpu:0") && Says("cpu:1"));
  // Moved to one device, they work together.
  const T s = ferry::add(a, b.to(D0));
  CHECK(read<float>(s) ==
        naive_map<float>(av, [&, i = 0](float v) mutable { return v + bv[i++]; }));
  CHECK(read<float>(a) == av);
  CHECK(read<float>(b) == bv);
  check_router_works(r, live.t, live.values);
}

TEST_CASE("a device the router does not have throws DeviceError naming it", "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  REQUIRE_THROWS_MATCHES(r.zeros({2}, DType::f32, ferry::CpuDevice{2}), ferry::DeviceError,
                         Says("cpu:2") && Says("cpu:0") && Says("cpu:1"));
  REQUIRE_THROWS_MATCHES(
      r.from_data(ferry::TensorData::from(std::vector<float>{1.f}), ferry::CpuDevice{-1}),
      ferry::DeviceError, Says("from_data") && Says("cpu:-1"));
  REQUIRE_THROWS_MATCHES(r.arange(Scalar(0), Scalar(3), Scalar(1), DType::i32, ferry::CpuDevice{9}),
                         ferry::DeviceError, Says("arange") && Says("cpu:9"));
  REQUIRE_THROWS_MATCHES(r.random_uniform({3}, 1, ferry::CpuDevice{4}), ferry::DeviceError,
                         Says("cpu:4"));
  REQUIRE_THROWS_MATCHES(live.t.to(ferry::CpuDevice{7}), ferry::DeviceError, Says("cpu:7"));
  REQUIRE_THROWS_MATCHES(r.sync(ferry::CpuDevice{3}), ferry::DeviceError,
                         Says("sync") && Says("cpu:3"));
  CHECK(live.t.device() == D0);
  check_router_works(r, live.t, live.values);
}

TEST_CASE("data whose byte count does not match its shape throws ShapeError", "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  REQUIRE_THROWS_MATCHES(
      r.from_data(ferry::TensorData(Shape{2, 3}, DType::f32, std::vector<std::byte>(20)), D0),
      ferry::ShapeError, Says("[2, 3]") && Says("24 bytes") && Says("20"));
  REQUIRE_THROWS_MATCHES(
      r.from_data(ferry::TensorData::from(std::vector<float>(5, 1.f), Shape{2, 3}), D0),
      ferry::ShapeError, Says("[2, 3]") && Says("24 bytes"));
  REQUIRE_THROWS_MATCHES(r.from_vector(std::vector<std::int64_t>(7, 1), Shape{2, 4}, D1),
                         ferry::ShapeError, Says("[2, 4]") && Says("64 bytes") && Says("56"));
  REQUIRE_THROWS_MATCHES(r.zeros({2, -1}, DType::f32, D0), ferry::ShapeError, Says("negative"));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("float-only ops on int or bool tensors throw DTypeError naming the op and dtype",
          "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const T i = make(r, data<std::int32_t>(6, 1), {2, 3});
  const T l = make(r, data<std::int64_t>(6, 1), {2, 3});
  const T b = make_bool(r, {1, 0, 1}, {3});
  const T f = make(r, data<float>(3, 1), {3});
  REQUIRE_THROWS_MATCHES(ferry::exp(i), ferry::DTypeError, Says("exp") && Says("i32"));
  REQUIRE_THROWS_MATCHES(ferry::log(l), ferry::DTypeError, Says("log") && Says("i64"));
  REQUIRE_THROWS_MATCHES(ferry::sigmoid(i), ferry::DTypeError, Says("sigmoid") && Says("i32"));
  REQUIRE_THROWS_MATCHES(ferry::gelu(l), ferry::DTypeError, Says("gelu") && Says("i64"));
  REQUIRE_THROWS_MATCHES(ferry::mean(i, 0), ferry::DTypeError, Says("mean") && Says("i32"));
  REQUIRE_THROWS_MATCHES(ferry::neg(b), ferry::DTypeError, Says("neg") && Says("bool"));
  REQUIRE_THROWS_MATCHES(b + b, ferry::DTypeError, Says("add") && Says("bool"));
  REQUIRE_THROWS_MATCHES(!f, ferry::DTypeError, Says("logical_not") && Says("f32"));
  REQUIRE_THROWS_MATCHES(ferry::where(f, f, f), ferry::DTypeError, Says("where") && Says("f32"));
  REQUIRE_THROWS_MATCHES(ferry::index_select(i, 0, ferry::reshape(f, Shape{3})), ferry::DTypeError,
                         Says("index_select") && Says("f32"));
  REQUIRE_THROWS_MATCHES(r.arange(Scalar(0), Scalar(3), Scalar(1), DType::boolean, D0),
                         ferry::DTypeError, Says("arange") && Says("bool"));
  REQUIRE_THROWS_MATCHES(r.random(Shape{3}, ferry::Distribution::uniform(), 1, D0, DType::i32),
                         ferry::DTypeError, Says("random") && Says("i32"));
  CHECK(read<std::int32_t>(i) == data<std::int32_t>(6, 1));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("a moved-from Tensor throws HandleError when used", "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const auto av = data<float>(6, 5);
  T a = make(r, av, {2, 3});
  const T keep = std::move(a);
  CHECK_FALSE(a.valid());
  REQUIRE_THROWS_MATCHES(ferry::exp(a), ferry::HandleError, Says("moved from"));
  REQUIRE_THROWS_MATCHES(ferry::add(keep, a), ferry::HandleError,
                         Says("add") && Says("moved from"));
  REQUIRE_THROWS_MATCHES(a + 1.0f, ferry::HandleError, Says("moved from"));
  REQUIRE_THROWS_MATCHES(a.to_data(), ferry::HandleError, Says("moved from"));
  REQUIRE_THROWS_MATCHES(a.to(D1), ferry::HandleError, Says("moved from"));
  REQUIRE_THROWS_MATCHES(static_cast<void>(a.shape()), ferry::HandleError, Says("shape"));
  REQUIRE_THROWS_MATCHES(ferry::cat(std::vector<T>{keep, a}, 0), ferry::HandleError,
                         Says("moved from"));
  // A tensor consumed by an op (moved into it) is moved-from too.
  T c = make(r, av, {2, 3});
  const T e = ferry::exp(std::move(c));
  REQUIRE_THROWS_MATCHES(ferry::sum(c), ferry::HandleError, Says("moved from"));
  // A default-constructed Tensor names nothing either.
  const T none;
  REQUIRE_THROWS_MATCHES(ferry::neg(none), ferry::HandleError, Says("moved from"));
  CHECK(read<float>(keep) == av);
  check_close(read<float>(e), naive_map<double>(av, [](float v) { return std::exp(double(v)); }),
              4e-6, 1e-6, "exp");
  check_router_works(r, live.t, live.values);
}

TEST_CASE(
    "integer division by zero fails with ValueError naming the op; async reports it at the read",
    "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const std::vector<std::int32_t> av{1, 2, 3, 4}, bv{1, 0, 2, 5};
  const T a = make(r, av, {4});
  const T b = make(r, bv, {4});
  if (mode == ferry::Execution::Inline) {
    REQUIRE_THROWS_MATCHES(a / b, ferry::ValueError, Says("div") && Says("division by zero"));
    REQUIRE_THROWS_MATCHES(ferry::remainder(a, b), ferry::ValueError,
                           Says("remainder") && Says("division by zero"));
    REQUIRE_THROWS_MATCHES(a / 0, ferry::ValueError, Says("div") && Says("division by zero"));
    CHECK_NOTHROW(r.sync());
  } else {
    // Queued without error; the failure reaches the reader of the result (and of anything
    // computed from it) as OpFailed naming the op, and the next sync as the original error.
    T q;
    REQUIRE_NOTHROW(q = a / b);
    check_meta(q, {4}, DType::i32);
    const T q2 = q + 1;
    REQUIRE_THROWS_MATCHES(q2.to_data(), ferry::OpFailed,
                           Says("'div'") && Says("cpu:0") && Says("division by zero"));
    REQUIRE_THROWS_MATCHES(q.to_data(), ferry::OpFailed,
                           Says("'div'") && Says("cpu:0") && Says("division by zero"));
    REQUIRE_THROWS_MATCHES(r.sync(), ferry::ValueError, Says("div") && Says("division by zero"));
    CHECK_NOTHROW(r.sync());  // reported once
    const T m = a % 0;
    REQUIRE_THROWS_MATCHES(m.to_data(), ferry::OpFailed,
                           Says("'remainder'") && Says("division by zero"));
    REQUIRE_THROWS_MATCHES(r.sync(D0), ferry::ValueError, Says("remainder"));
    CHECK_NOTHROW(r.sync());
  }
  CHECK(read<std::int32_t>(a) == av);
  CHECK(read<std::int32_t>(b) == bv);
  CHECK(read<std::int32_t>(a / ferry::maximum(b, Scalar(1))) ==
        std::vector<std::int32_t>{1, 2, 1, 0});
  check_router_works(r, live.t, live.values);
}

TEST_CASE(
    "repeat with a negative count, arange with a zero step and max of nothing throw "
    "ValueError",
    "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  REQUIRE_THROWS_MATCHES(ferry::repeat(live.t, {1, -2}), ferry::ValueError,
                         Says("repeat") && Says("-2"));
  REQUIRE_THROWS_MATCHES(r.arange(Scalar(0), Scalar(3), Scalar(0), DType::i32, D0),
                         ferry::ValueError, Says("arange"));
  REQUIRE_THROWS_MATCHES(ferry::max(make(r, std::vector<float>{}, {0, 2})), ferry::ValueError,
                         Says("max"));
  check_router_works(r, live.t, live.values);
}

TEST_CASE("an int tensor with a scalar it cannot hold exactly fails with ValueError naming the op",
          "[ops][errors]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2), {.execution = mode});
  auto live = live_tensor(r);
  const std::vector<std::int32_t> iv{1, 2, 3};
  const T i = make(r, iv, {3});
  // Checked at the call in both modes: nothing is queued.
  REQUIRE_THROWS_MATCHES(i + 2.5, ferry::ValueError, Says("add") && Says("2.5") && Says("i32"));
  REQUIRE_THROWS_MATCHES(i * (std::int64_t{1} << 40), ferry::ValueError,
                         Says("mul") && Says("i32"));
  REQUIRE_NOTHROW(r.sync());
  // Whole-valued floating scalars are fine.
  CHECK(read<std::int32_t>(i + 2.0) == std::vector<std::int32_t>{3, 4, 5});
  CHECK(read<std::int32_t>(i) == iv);
  check_router_works(r, live.t, live.values);
}

// EigenCpu's float maths through the router, swept across the whole range against references
// computed here: f32 against std:: functions in double rounded to f32 (about 19M inputs per
// function: every 256th bit pattern, a sample of every subnormal region, 65,536 consecutive
// floats from 1.0, the edges of each function's fast path, +-0, +-inf and NaNs), f64 against
// long double (about 4.5M inputs). Each function must be within 2 ulp (sqrt: 0) of the
// correctly rounded reference; NaN must meet NaN. Prints the worst case of each function.
// See docs/math.md.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/math.hpp"
#include "ferry/backends/eigen_cpu/softmax_rows.hpp"
#include "ferry/ferry.hpp"

namespace {

using Cpu = ferry::EigenCpu;
using R = ferry::Router<Cpu>;
using T = ferry::Tensor<Cpu>;
using Fn = T (*)(T);

const ferry::CpuDevice D0{0};

// ---- ulps ----------------------------------------------------------------------------------

/// Position of x on the line of floats (0 for both zeros), so ulps between two values of the
/// same type are the difference of their positions.
std::int64_t ordinal(float x) {
  const auto b = std::bit_cast<std::int32_t>(x);
  return b < 0 ? -static_cast<std::int64_t>(b & 0x7fffffff) : b;
}
/// The same for double; differences fit int64 for the values compared here (both finite or
/// both infinite of one sign, else the 2^62 cap below).
std::int64_t ordinal(double x) {
  const auto b = std::bit_cast<std::int64_t>(x);
  return b < 0 ? -(b & 0x7fffffffffffffff) : b;
}

template <class V>
std::uint64_t ulps(V got, V want) {
  constexpr std::uint64_t kMismatch = std::uint64_t{1} << 62;
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got) ? 0 : kMismatch;
  const std::int64_t a = ordinal(got), b = ordinal(want);
  if ((a < 0) != (b < 0)) return kMismatch;  // opposite signs: far apart, and no overflow
  return static_cast<std::uint64_t>(a > b ? a - b : b - a);
}

// ---- inputs ---------------------------------------------------------------------------------

template <class V>
void add_specials(std::vector<V>& x) {
  using L = std::numeric_limits<V>;
  for (V v : {V(0), L::min(), L::max(), L::denorm_min(), L::epsilon(), L::infinity(), V(1), V(0.5),
              V(2), V(3.14159265358979323846)}) {
    x.push_back(v);
    x.push_back(-v);
  }
  x.push_back(L::quiet_NaN());
  x.push_back(-L::quiet_NaN());
  x.push_back(L::signaling_NaN());
}

std::vector<float> f32_inputs() {
  std::vector<float> x;
  x.reserve((std::size_t{1} << 24) + (std::size_t{1} << 21) + 70000);
  // Every 256th bit pattern, the low byte varied so that no mantissa bit stays fixed.
  for (std::uint32_t i = 0; i < (1u << 24); ++i)
    x.push_back(std::bit_cast<float>((i << 8) | ((i * 167u) & 0xffu)));
  // Subnormals of both signs (every 8th: 2^20 each).
  for (std::uint32_t m = 1; m < (1u << 23); m += 8) {
    x.push_back(std::bit_cast<float>(m));
    x.push_back(std::bit_cast<float>(m | 0x80000000u));
  }
  // 65,536 consecutive floats from 1.0 (where the fast-math sqrt was found wrong).
  for (std::uint32_t i = 0; i < 65536; ++i) x.push_back(std::bit_cast<float>(0x3f800000u + i));
  // Both sides of each fast path's edge: exp's subnormal/overflow bounds, tanh's small-|x|
  // switch, sigmoid's subnormal range, f32 gelu's underflow.
  for (float e : {-87.33f, 88.3f, 88.72f, 88.7228394f, -88.7228394f, -103.972f, 0x1p-22f, 9.01f,
                  -14.5f, -16.6f, -9.0f, 15.64f, 25966.f, 18838.f, 117435.992f}) {
    float v = e;
    for (int k = 0; k < 64; ++k) v = std::nextafter(v, -std::numeric_limits<float>::infinity());
    for (int k = 0; k < 128; ++k, v = std::nextafter(v, std::numeric_limits<float>::infinity())) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  add_specials(x);
  return x;
}

std::vector<double> f64_inputs() {
  std::vector<double> x;
  // 2^22 bit patterns spread evenly over all 2^64, the low bits mixed.
  for (std::uint64_t i = 0; i < (std::uint64_t{1} << 22); ++i)
    x.push_back(std::bit_cast<double>((i << 42) | ((i * 0x9E3779B97F4A7C15ull) >> 22)));
  // Subnormals (2^17 of each sign, spread over the 2^52 of them).
  for (std::uint64_t m = 1; m < (std::uint64_t{1} << 52); m += (std::uint64_t{1} << 35) + 12345) {
    x.push_back(std::bit_cast<double>(m));
    x.push_back(std::bit_cast<double>(m | 0x8000000000000000ull));
  }
  for (std::uint64_t i = 0; i < 65536; ++i)
    x.push_back(std::bit_cast<double>(0x3ff0000000000000ull + i * 4099));
  // exp/sigmoid's subnormal outputs, gelu's deep tail.
  for (double e : {-708.4, -709.8, -745.1, 709.78, -38.5, -37.0, -20.0}) {
    for (int k = 0; k < 4096; ++k) x.push_back(e + k * 1e-3);
  }
  add_specials(x);
  return x;
}

// ---- references --------------------------------------------------------------------------

struct Case {
  const char* name;
  Fn fn;
  double (*f32_ref)(double);            // computed in double, rounded to f32 by the caller
  long double (*f64_ref)(long double);  // computed in long double, rounded to f64
  std::uint64_t max_ulps;
};

long double gelu_ref(long double x) {
  // x/2 erfc(u), u = -x/sqrt2 carried as u_hi + u_lo (fmal), and erfc(u_hi + u_lo) taken to
  // first order, so the reference does not inherit the rounding of u that erfc amplifies.
  if (std::isinf(x)) return x > 0 ? x : -0.0L;
  const long double c = std::sqrt(0.5L);
  const long double c_lo = -std::fma(c, c, -0.5L) / (2 * c);
  const long double hi = -x * c;
  const long double lo = std::fma(-x, c, -hi) - x * c_lo;
  const long double two_over_sqrtpi = 1.128379167095512573896158903121545172L;
  return 0.5L * x * (std::erfc(hi) - lo * two_over_sqrtpi * std::exp(-hi * hi));
}
/// sqrtl rounded to double could round twice wrongly where sqrtl lands on a midpoint between
/// two doubles; then the sign of m^2 - x (exact enough in fmal) says which way is right.
long double sqrt_ref(long double x) {
  const long double y = std::sqrt(x);
  const double d = static_cast<double>(y);
  if (!std::isfinite(d) || d == 0) return y;
  const long double other = static_cast<long double>(
      std::nextafter(d, y > d ? std::numeric_limits<double>::infinity() : -1.0));
  const long double mid = (static_cast<long double>(d) + other) / 2;
  if (y != mid) return y;
  const bool below = std::fma(mid, mid, -x) > 0;  // the true root is below the midpoint
  return below ? std::nextafter(mid, 0.0L) : std::nextafter(mid, 2 * mid);
}
/// gelu_ref for f32 inputs, in double: 1/sqrt2 split into c_hi (29 bits, so that x * c_hi is
/// exact for a 24-bit x) and c_lo, no fma needed.
double gelu_ref32(double x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0;
  constexpr double c = 0.70710678118654752440, c_hi = 379625062.0 / 536870912.0;  // c to 29 bits
  constexpr double c_lo = c - c_hi;
  const double hi = -x * c_hi, lo = -x * c_lo;
  const double two_over_sqrtpi = 1.12837916709551257390;
  return 0.5 * x * (std::erfc(hi) - lo * two_over_sqrtpi * std::exp(-hi * hi));
}
long double sigmoid_ref(long double x) {
  if (x < 0) {
    const long double e = std::exp(x);
    return e / (1 + e);
  }
  return 1 / (1 + std::exp(-x));
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c{
      {"exp", ferry::exp<Cpu>, [](double x) { return std::exp(x); },
       [](long double x) { return std::exp(x); }, 2},
      {"log", ferry::log<Cpu>, [](double x) { return std::log(x); },
       [](long double x) { return std::log(x); }, 2},
      {"sqrt", ferry::sqrt<Cpu>, [](double x) { return std::sqrt(x); }, sqrt_ref, 0},
      {"sin", ferry::sin<Cpu>, [](double x) { return std::sin(x); },
       [](long double x) { return std::sin(x); }, 2},
      {"cos", ferry::cos<Cpu>, [](double x) { return std::cos(x); },
       [](long double x) { return std::cos(x); }, 2},
      {"tanh", ferry::tanh<Cpu>, [](double x) { return std::tanh(x); },
       [](long double x) { return std::tanh(x); }, 2},
      {"sigmoid", ferry::sigmoid<Cpu>, [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
       sigmoid_ref, 2},
      // f32 gelu's reference carries u = -x/sqrt2 in two parts (see gelu_ref32): in one double
      // it would be the kernel's own formula, checking nothing.
      {"gelu", ferry::gelu<Cpu>, gelu_ref32, gelu_ref, 2},
  };
  return c;
}

struct Worst {
  std::uint64_t ulps = 0;
  double x = 0, got = 0, want = 0;
  std::size_t over = 0;  // inputs over the bound
};

/// Runs `c` over `x` through the router, in chunks (a 4Mi-element tensor at a time).
template <class V>
Worst sweep(R& r, const Case& c, const std::vector<V>& x) {
  constexpr std::size_t kChunk = std::size_t{1} << 22;
  Worst w;
  bool first = true;
  for (std::size_t lo = 0; lo < x.size(); lo += kChunk) {
    const std::size_t n = std::min(kChunk, x.size() - lo);
    std::vector<V> in(x.begin() + static_cast<std::ptrdiff_t>(lo),
                      x.begin() + static_cast<std::ptrdiff_t>(lo + n));
    // Moved in: the kernel holds the only reference and writes its result over its input, the
    // path where a fix-up must not read back what it has overwritten. (The special-value test
    // below runs both ways.)
    T t = r.from_vector(in, ferry::Shape{static_cast<std::int64_t>(n)}, D0);
    const std::vector<V> got = c.fn(std::move(t)).to_data().template to_vector<V>();
    REQUIRE(got.size() == n);
    for (std::size_t i = 0; i < n; ++i) {
      V want;
      if constexpr (std::is_same_v<V, float>)
        want = static_cast<float>(c.f32_ref(static_cast<double>(in[i])));
      else
        want = static_cast<double>(c.f64_ref(static_cast<long double>(in[i])));
      const std::uint64_t u = ulps(got[i], want);
      if (u > c.max_ulps) ++w.over;
      if (u > w.ulps || first) {
        w.ulps = u;
        w.x = static_cast<double>(in[i]);
        w.got = static_cast<double>(got[i]);
        w.want = static_cast<double>(want);
        first = false;
      }
    }
  }
  return w;
}

template <class V>
void run_sweep(const char* dtype, const std::vector<V>& x) {
  R r(Cpu(1), {.execution = ferry::Execution::Inline});
  for (const Case& c : cases()) {
    const auto t0 = std::chrono::steady_clock::now();
    const Worst w = sweep(r, c, x);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(
        "{} {:<7}: max {} ulp at x = {:a} ({}): got {}, want {}; {} of {} inputs over {} ulp "
        "({:.2f} s)\n",
        dtype, c.name, w.ulps, w.x, w.x, w.got, w.want, w.over, x.size(), c.max_ulps, secs);
    INFO(dtype << " " << c.name << ": worst " << w.ulps << " ulp at x = " << w.x << " (got "
               << w.got << ", want " << w.want << "), " << w.over << " inputs over the bound");
    CHECK(w.ulps <= c.max_ulps);
  }
}

/// fn(x), the tensor handed over (written in place) and, as a check, held (a new buffer).
template <class V>
std::vector<V> apply(R& r, Fn fn, const std::vector<V>& x) {
  const ferry::Shape s{static_cast<std::int64_t>(x.size())};
  const T held = r.from_vector(x, s, D0);
  const std::vector<V> a = fn(held).to_data().template to_vector<V>();
  const std::vector<V> b = fn(r.from_vector(x, s, D0)).to_data().template to_vector<V>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("input " << i << " = " << x[i]);
    CHECK(ulps(a[i], b[i]) == 0);
  }
  return b;
}

}  // namespace

TEST_CASE("f32 maths is within 2 ulp (sqrt: exact) over the whole range", "[math_ulp]") {
  run_sweep("f32", f32_inputs());
}

TEST_CASE("exp f32: the AVX2 path gives the SSE2 path's bits, for every 61st bit pattern",
          "[math_ulp]") {
#ifdef FERRY_AVX2_DISPATCH
  namespace m = ferry::detail::cpu::math;
  INFO("AVX2 on this CPU: " << (m::has_avx2() ? "yes" : "no"));
  if (!m::has_avx2()) return;
  // Blocks of 2^20 inputs (all 2^32 patterns / 61: every exponent, sign, NaN and edge region),
  // each run at a length that leaves a tail of 5, so the zero-padded tail is compared too.
  constexpr std::int64_t kBlock = std::int64_t{1} << 20;
  std::vector<float> x(kBlock), a(kBlock), b(kBlock);
  std::uint64_t u = 0, differ = 0;
  while (u < (std::uint64_t{1} << 32)) {
    for (auto& v : x) {
      v = std::bit_cast<float>(static_cast<std::uint32_t>(u));
      u += 61;
    }
    m::exp_avx2(x.data(), a.data(), kBlock - 3);
    m::map_packets<m::ExpF32>(x.data(), b.data(), kBlock - 3);
    for (std::int64_t i = 0; i < kBlock - 3; ++i)
      differ += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]);
  }
  CHECK(differ == 0);
#else
  SUCCEED(
      "no run-time AVX2 dispatch in this build (not x86-64, AVX2 at compile time, or "
      "FERRY_NO_AVX2)");
#endif
}

TEST_CASE("softmax's row passes: exp(x - m) and its sum, the same bits with and without AVX2",
          "[math_ulp]") {
  namespace m = ferry::detail::cpu::math;
  // Rows of every tail length and a long one, with the edges: -inf (exp 0), NaN, differences
  // below exp's fast range (-87.33: subnormal and zero results), +-0, and ordinary values.
  std::vector<float> pool;
  std::uint32_t u = 12345;
  for (int i = 0; i < 5000; ++i) {
    u = u * 1664525u + 1013904223u;
    pool.push_back(static_cast<float>(static_cast<int>(u >> 8) % 20000) / 100.0f - 100.0f);
  }
  pool[3] = -std::numeric_limits<float>::infinity();
  pool[17] = -0.0f;
  pool[40] = 0.0f;
  pool[41] = -95.5f;
  pool[42] = -103.97f;  // exp(-103.97 - max) is subnormal or zero
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 4099}) {
    for (bool with_nan : {false, true}) {
      std::vector<float> x(pool.begin(), pool.begin() + n);
      if (with_nan) x[static_cast<std::size_t>(n / 2)] = nan;
      INFO("n " << n << (with_nan ? ", a NaN" : ""));
      const float mx = m::row_max(x.data(), n);
      if (!with_nan) CHECK(mx == *std::max_element(x.begin(), x.end()));
      // A second path for the values: the exp kernel on the differences.
      std::vector<float> z(x.size()), want(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) z[i] = x[i] - mx;
      m::exp(z.data(), want.data(), n);
      // And for the sum: the lanes by hand, in the documented order.
      float lanes[8] = {};
      for (std::size_t i = 0; i < x.size(); ++i) lanes[i % 8] += want[i];
      const float want_sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
                             ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
      const std::vector<float> next(x.size(), 1.0f);
      std::vector<float> a(x.size()), b(x.size());
      for (const float* nx : {static_cast<const float*>(nullptr), next.data()}) {
        const float sa = m::exp_sum(x.data(), mx, a.data(), n, nx);
        const float sb = m::exp_sum_generic(x.data(), mx, b.data(), n, nx);
        for (std::size_t i = 0; i < x.size(); ++i) {
          INFO("element " << i << " x " << x[i]);
          CHECK(std::bit_cast<std::uint32_t>(a[i]) == std::bit_cast<std::uint32_t>(want[i]));
          CHECK(std::bit_cast<std::uint32_t>(b[i]) == std::bit_cast<std::uint32_t>(want[i]));
        }
        CHECK(std::bit_cast<std::uint32_t>(sa) == std::bit_cast<std::uint32_t>(want_sum));
        CHECK(std::bit_cast<std::uint32_t>(sb) == std::bit_cast<std::uint32_t>(want_sum));
      }
      // In place, as softmax writes its output over a temporary input.
      std::vector<float> c = x;
      CHECK(std::bit_cast<std::uint32_t>(m::exp_sum(c.data(), mx, c.data(), n)) ==
            std::bit_cast<std::uint32_t>(want_sum));
      CHECK(std::equal(c.begin(), c.end(), want.begin(), [](float p, float q) {
        return std::bit_cast<std::uint32_t>(p) == std::bit_cast<std::uint32_t>(q);
      }));
      // f64: std::exp of each difference, the same lanes.
      std::vector<double> xd(x.begin(), x.end()), yd(x.size());
      const double md = m::row_max(xd.data(), n);
      double dl[8] = {};
      for (std::size_t i = 0; i < xd.size(); ++i) dl[i % 8] += std::exp(xd[i] - md);
      const double sd = m::exp_sum(xd.data(), md, yd.data(), n);
      if (with_nan) {
        CHECK(std::isnan(sd));
      } else {
        CHECK(sd == ((dl[0] + dl[4]) + (dl[2] + dl[6])) + ((dl[1] + dl[5]) + (dl[3] + dl[7])));
        CHECK(yd[0] == std::exp(xd[0] - md));
      }
    }
  }
  std::vector<float> s{1.5f, -2.0f, 3.0e-39f, 7.0f, 0.1f, 2.0f, 8.0f, 9.0f, 10.0f, -0.0f};
  const std::vector<float> s0 = s;
  m::scale(s.data(), 0.25f, static_cast<std::int64_t>(s.size()));
  for (std::size_t i = 0; i < s.size(); ++i)
    CHECK(std::bit_cast<std::uint32_t>(s[i]) == std::bit_cast<std::uint32_t>(s0[i] * 0.25f));
}

TEST_CASE("f64 maths is within 2 ulp (sqrt: exact) of a long double reference", "[math_ulp]") {
  run_sweep("f64", f64_inputs());
}

TEMPLATE_TEST_CASE("special values follow IEEE 754 and C", "[math_ulp]", float, double) {
  using V = TestType;
  using L = std::numeric_limits<V>;
  R r(Cpu(1), {.execution = ferry::Execution::Inline});
  const V inf = L::infinity(), nan = L::quiet_NaN();
  // Eight copies, so that the values pass through full packets as well as the tail.
  auto run = [&](Fn fn, std::vector<V> x) {
    const std::size_t k = x.size();
    const std::vector<V> once = x;
    for (int rep = 0; rep < 3; ++rep) x.insert(x.end(), once.begin(), once.end());
    auto y = apply(r, fn, x);
    for (std::size_t i = k; i < y.size(); ++i) {
      INFO("copy " << i / k << " of input " << i % k);
      CHECK(std::bit_cast<std::conditional_t<sizeof(V) == 4, std::uint32_t, std::uint64_t>>(y[i]) ==
            std::bit_cast<std::conditional_t<sizeof(V) == 4, std::uint32_t, std::uint64_t>>(
                y[i % k]));
    }
    y.resize(k);
    return y;
  };
  auto e = run(ferry::exp<Cpu>, {-inf, inf, V(0), V(-1000), V(1000), nan});
  CHECK(e[0] == 0);
  CHECK(e[1] == inf);
  CHECK(e[2] == 1);
  CHECK(e[3] == 0);
  CHECK(e[4] == inf);
  CHECK(std::isnan(e[5]));

  auto l = run(ferry::log<Cpu>, {V(0), V(-0.0), V(-1), inf, -inf, V(1), nan, L::denorm_min()});
  CHECK(l[0] == -inf);
  CHECK(l[1] == -inf);
  CHECK(std::isnan(l[2]));
  CHECK(l[3] == inf);
  CHECK(std::isnan(l[4]));
  CHECK(l[5] == 0);
  CHECK(std::isnan(l[6]));
  CHECK(l[7] == static_cast<V>(std::log(static_cast<long double>(L::denorm_min()))));

  auto s = run(ferry::sqrt<Cpu>, {V(-0.0), inf, V(-1), nan, L::denorm_min(), -inf});
  CHECK((s[0] == 0 && std::signbit(s[0])));
  CHECK(s[1] == inf);
  CHECK(std::isnan(s[2]));
  CHECK(std::isnan(s[3]));
  CHECK(s[4] == static_cast<V>(std::sqrt(static_cast<long double>(L::denorm_min()))));
  CHECK(std::isnan(s[5]));

  for (Fn f : {ferry::sin<Cpu>, ferry::cos<Cpu>}) {
    auto t = run(f, {inf, -inf, nan});
    CHECK((std::isnan(t[0]) && std::isnan(t[1]) && std::isnan(t[2])));
  }
  auto sn = run(ferry::sin<Cpu>, {V(-0.0)});
  CHECK((sn[0] == 0 && std::signbit(sn[0])));

  auto th = run(ferry::tanh<Cpu>, {inf, -inf, V(-0.0), nan, V(20), V(-20)});
  CHECK(th[0] == 1);
  CHECK(th[1] == -1);
  CHECK((th[2] == 0 && std::signbit(th[2])));
  CHECK(std::isnan(th[3]));
  CHECK(th[4] == 1);
  CHECK(th[5] == -1);

  auto sg = run(ferry::sigmoid<Cpu>, {-inf, inf, V(0), nan, V(-1000)});
  CHECK(sg[0] == 0);
  CHECK(sg[1] == 1);
  CHECK(sg[2] == V(0.5));
  CHECK(std::isnan(sg[3]));
  CHECK(sg[4] == 0);

  auto g = run(ferry::gelu<Cpu>, {inf, -inf, V(0), nan, V(-1000)});
  CHECK(g[0] == inf);
  CHECK((g[1] == 0 && std::signbit(g[1])));
  CHECK(g[2] == 0);
  CHECK(std::isnan(g[3]));
  CHECK((g[4] == 0 && std::signbit(g[4])));
}

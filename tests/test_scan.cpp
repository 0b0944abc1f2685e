// cumsum, cumprod, cummax and cummin along any dim (EigenCpu's scan kernel through the router),
// in both execution modes, against running folds computed here; NaN, integer wrap-around, bool,
// f16, empty and size-1 dims, and the errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <limits>
#include <numeric>
#include <vector>

#include "matchers.hpp"

using namespace ferry;
using ferry_test::Says;

namespace {
using R = Router<EigenCpu>;
constexpr CpuDevice D0{0};

/// The running fold of x ([outer, n, inner] row-major) along its middle dim.
template <class T, class F>
std::vector<T> running(const std::vector<T>& x, std::int64_t outer, std::int64_t n,
                       std::int64_t inner, F f) {
  std::vector<T> y(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const auto at = static_cast<std::size_t>((o * n + j) * inner + i);
        y[at] = j == 0 ? x[at] : f(y[at - static_cast<std::size_t>(inner)], x[at]);
      }
  return y;
}
}  // namespace

TEST_CASE("scans along every dim of a 3-d tensor match running folds") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  std::vector<double> x(2 * 3 * 5);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7) % 11) - 4.5;
  const auto t = r.from_vector(x, Shape{2, 3, 5}, D0);
  const std::int64_t dims[3] = {2, 3, 5};
  for (std::int64_t d = 0; d < 3; ++d) {
    INFO("dim " << d);
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t k = 0; k < d; ++k) outer *= dims[k];
    for (std::int64_t k = d + 1; k < 3; ++k) inner *= dims[k];
    const std::int64_t n = dims[d];
    auto add = [](double a, double b) { return a + b; };
    auto mul = [](double a, double b) { return a * b; };
    auto mx = [](double a, double b) { return std::max(a, b); };
    auto mn = [](double a, double b) { return std::min(a, b); };
    CHECK(cumsum(t, d).to_data().to_vector<double>() == running(x, outer, n, inner, add));
    CHECK(cumprod(t, d).to_data().to_vector<double>() == running(x, outer, n, inner, mul));
    CHECK(cummax(t, d).to_data().to_vector<double>() == running(x, outer, n, inner, mx));
    CHECK(cummin(t, d - 3).to_data().to_vector<double>() == running(x, outer, n, inner, mn));
  }
  // A long contiguous row and wide rows (the column-chunked path): 3 x 5000 along dim 0.
  std::vector<float> w(3 * 5000);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13);
  const auto tw = r.from_vector(w, Shape{3, 5000}, CpuDevice{1});
  CHECK(cumsum(tw, 0).to_data().to_vector<float>() ==
        running(w, 1, 3, 5000, [](float a, float b) { return a + b; }));
  CHECK(cummax(tw, 1).to_data().to_vector<float>() ==
        running(w, 3, 5000, 1, [](float a, float b) { return std::max(a, b); }));
}

TEST_CASE("scans: NaN, integer wrap-around, bool and f16 as torch") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto f = r.from_vector(std::vector<double>{1, nan, 3, 0}, Shape{4}, D0);
  const auto cm = cummax(f, 0).to_data().to_vector<double>();
  CHECK(cm[0] == 1);
  CHECK((std::isnan(cm[1]) && std::isnan(cm[2]) && std::isnan(cm[3])));  // from the NaN on
  const auto cs = cumsum(f, 0).to_data().to_vector<double>();
  CHECK((cs[0] == 1 && std::isnan(cs[3])));
  // i32 accumulates in i64 (torch.cumsum of int32 is int64): no wrap at 2^31.
  const auto i = r.from_vector(std::vector<std::int32_t>{2147483647, 1, -5}, Shape{3}, D0);
  const auto ci = cumsum(i, 0);
  CHECK(ci.dtype() == DType::i64);
  CHECK(ci.to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{2147483647, 2147483648, 2147483643});
  CHECK(cummax(i, 0).dtype() == DType::i32);
  // i64 wraps modulo 2^64.
  const auto big = std::numeric_limits<std::int64_t>::max();
  const auto l = r.from_vector(std::vector<std::int64_t>{big, 1}, Shape{2}, D0);
  CHECK(cumsum(l, 0).to_data().to_vector<std::int64_t>()[1] ==
        std::numeric_limits<std::int64_t>::min());
  // u64 stays u64; u8 goes to i64.
  const auto u = r.from_vector(std::vector<std::uint64_t>{~std::uint64_t{0}, 2}, Shape{2}, D0);
  CHECK(cumsum(u, 0).dtype() == DType::u64);
  CHECK(cumsum(u, 0).to_data().to_vector<std::uint64_t>()[1] == 1);
  CHECK(cumprod(r.from_vector(std::vector<std::uint8_t>{200, 2}, Shape{2}, D0), 0)
            .to_data()
            .to_vector<std::int64_t>() == std::vector<std::int64_t>{200, 400});
  // bool counts trues, as i64.
  const auto b = r.from_vector(std::vector<bool>{true, false, true, true}, Shape{4}, D0);
  CHECK(cumsum(b, 0).to_data().to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 1, 2, 3});
  REQUIRE_THROWS_MATCHES(cummax(b, 0), DTypeError, Says("cummax"));
  // f16 accumulates in f32 and rounds each output once: 2048 + 1 + 1 is 2050 (f16 steps of 2
  // there), where f16 arithmetic would stay at 2048.
  const auto h = r.from_vector(std::vector<f16>{f16(2048.0f), f16(1.0f), f16(1.0f)}, Shape{3}, D0);
  const auto ch = cumsum(h, 0).to_data().to_vector<f16>();
  CHECK(ch[0].bits == f16(2048.0f).bits);
  CHECK(ch[1].bits == f16(2048.0f).bits);  // 2049 rounds to even: 2048
  CHECK(ch[2].bits == f16(2050.0f).bits);
}

TEST_CASE("scans: empty and size-1 dims, and bad input") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto e = r.zeros(Shape{0, 3}, DType::f32, D0);
  CHECK(cumsum(e, 0).shape() == Shape{0, 3});
  CHECK(cumprod(e, 1).shape() == Shape{0, 3});
  const auto one = r.from_vector(std::vector<float>{4, 5}, Shape{2, 1}, D0);
  CHECK(cumprod(one, 1).to_data().to_vector<float>() == std::vector<float>{4, 5});
  REQUIRE_THROWS_MATCHES(cumsum(one, 2), IndexError, Says("cumsum"));
  const auto q = quantize_dynamic(r.from_vector(std::vector<float>(32, 1.0f), Shape{32}, D0),
                                  quant::Scheme::of(quant::ValueType::i8));
  REQUIRE_THROWS_MATCHES(cumsum(q, 0), DTypeError, Says("cumsum"));
}

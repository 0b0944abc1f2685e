// Tests of the EigenCpu reference backend, called directly (no router): elementwise kernels: unary
// maths, where, casts. Expected values are computed independently in the test (by hand or naive
// loops).
#include "eigen_cpu_helpers.hpp"

using namespace ferry;
using namespace ferry_test;
TEST_CASE("unary maths matches the C library", "[eigen_cpu]") {
  EigenCpu cpu;
  const std::vector<double> v{-3.5, -1, -0.25, 0, 0.5, 1, 2.75, 8};
  auto a = make(cpu, v, Shape{2, 4});
  auto map = [&](auto f) {
    std::vector<double> r;
    for (double x : v) r.push_back(f(x));
    return r;
  };
  require_close(read<double>(cpu, cpu.exp(a)), map([](double x) { return std::exp(x); }), 1e-12);
  require_close(read<double>(cpu, cpu.log(a)), map([](double x) { return std::log(x); }), 1e-12);
  require_close(read<double>(cpu, cpu.sqrt(a)), map([](double x) { return std::sqrt(x); }), 1e-12);
  require_close(read<double>(cpu, cpu.sin(a)), map([](double x) { return std::sin(x); }), 1e-12);
  require_close(read<double>(cpu, cpu.cos(a)), map([](double x) { return std::cos(x); }), 1e-12);
  require_close(read<double>(cpu, cpu.tanh(a)), map([](double x) { return std::tanh(x); }), 1e-12);
  require_close(read<double>(cpu, cpu.sigmoid(a)),
                map([](double x) { return 1 / (1 + std::exp(-x)); }), 1e-12);
  require_close(read<double>(cpu, cpu.gelu(a)),
                map([](double x) { return x * 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }), 1e-12);
  REQUIRE(read<double>(cpu, cpu.neg(a)) == map([](double x) { return -x; }));
  REQUIRE(read<double>(cpu, cpu.abs(a)) == map([](double x) { return std::fabs(x); }));
  REQUIRE(read<double>(cpu, cpu.relu(a)) == map([](double x) { return x > 0 ? x : 0; }));

  auto f = make(cpu, std::vector<float>{-20, -1, 0, 0.5f, 3, 20}, Shape{6});
  require_close(read<float>(cpu, cpu.sigmoid(f)),
                {2.0611537e-09f, 0.26894142f, 0.5f, 0.62245933f, 0.95257413f, 1.0f}, 1e-6);
  require_close(read<float>(cpu, cpu.gelu(f)),
                {-0.0f, -0.15865526f, 0.0f, 0.34573123f, 2.9959502f, 20.0f}, 1e-6);
  require_close(read<float>(cpu, cpu.tanh(f)), {-1, -0.7615942f, 0, 0.46211716f, 0.9950548f, 1},
                1e-6);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  REQUIRE(std::isnan(read<float>(cpu, cpu.relu(make(cpu, std::vector<float>{nan}, Shape{1})))[0]));

  auto i = make(cpu, std::vector<std::int64_t>{-4, 0, 7}, Shape{3});
  REQUIRE(read<std::int64_t>(cpu, cpu.neg(i)) == std::vector<std::int64_t>{4, 0, -7});
  REQUIRE(read<std::int64_t>(cpu, cpu.abs(i)) == std::vector<std::int64_t>{4, 0, 7});
  REQUIRE(read<std::int64_t>(cpu, cpu.relu(i)) == std::vector<std::int64_t>{0, 0, 7});
  REQUIRE_THROWS_MATCHES(cpu.exp(i), DTypeError, Contains("exp: i64 operands are not supported"));
}

TEST_CASE("where selects with a three-way broadcast", "[eigen_cpu]") {
  EigenCpu cpu;
  auto m = make_bool(cpu, {1, 0, 1}, Shape{3});
  auto a = make(cpu, std::vector<std::int32_t>{1, 2}, Shape{2, 1});
  auto b = make(cpu, std::vector<std::int32_t>{-1}, Shape{});
  REQUIRE(read<std::int32_t>(cpu, cpu.where(m, a, b)) ==
          std::vector<std::int32_t>{1, -1, 1, 2, -1, 2});
  auto fa = make(cpu, values<float>(12, 5), Shape{3, 4});
  auto fb = make(cpu, values<float>(12, 6), Shape{3, 4});
  auto fm = cpu.greater(fa, fb);
  auto got = read<float>(cpu, cpu.where(fm, fa, fb));
  auto want = read<float>(cpu, cpu.maximum(fa, fb));
  REQUIRE(got == want);
  REQUIRE_THROWS_AS(cpu.where(fa, fa, fb), DTypeError);
}

TEST_CASE("casts truncate, saturate and map NaN to zero", "[eigen_cpu]") {
  EigenCpu cpu;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto f = make(cpu, std::vector<double>{2.9, -2.9, nan, 1e10, -1e10, 0.0}, Shape{6});
  const auto mx = std::numeric_limits<std::int32_t>::max(),
             mn = std::numeric_limits<std::int32_t>::min();
  REQUIRE(read<std::int32_t>(cpu, cpu.to_int(f, DType::i32)) ==
          std::vector<std::int32_t>{2, -2, 0, mx, mn, 0});
  REQUIRE(read<std::int64_t>(cpu, cpu.to_int(f, DType::i64)) ==
          std::vector<std::int64_t>{2, -2, 0, 10000000000, -10000000000, 0});
  REQUIRE(read_bool(cpu, cpu.to_bool(f)) == std::vector<std::uint8_t>{1, 1, 1, 1, 1, 0});
  auto f32 = read<float>(cpu, cpu.to_float(f, DType::f32));
  REQUIRE(f32[0] == 2.9f);
  REQUIRE(std::isnan(f32[2]));
  auto i = make(cpu, std::vector<std::int64_t>{(std::int64_t{1} << 32) + 5, -1}, Shape{2});
  REQUIRE(read<std::int32_t>(cpu, cpu.to_int(i, DType::i32)) == std::vector<std::int32_t>{5, -1});
  REQUIRE(read<double>(cpu, cpu.to_float(i, DType::f64)) == std::vector<double>{4294967301.0, -1});
  auto b = make_bool(cpu, {1, 0}, Shape{2});
  REQUIRE(read<float>(cpu, cpu.to_float(b, DType::f32)) == std::vector<float>{1, 0});
  REQUIRE(read<std::int64_t>(cpu, cpu.to_int(b, DType::i64)) == std::vector<std::int64_t>{1, 0});
  auto same = cpu.to_int(i, DType::i64);
  REQUIRE(ptr(same) == ptr(i));
  REQUIRE_THROWS_MATCHES(cpu.to_float(i, DType::i32), DTypeError,
                         Contains("to_float: i32 is not a float dtype"));
}

TEMPLATE_TEST_CASE("matmul broadcasts batch dims", "[eigen_cpu]", float, double, std::int32_t,
                   std::int64_t) {
  using T = TestType;
  EigenCpu cpu;
  const Shape sa{2, 1, 3, 4}, sb{5, 4, 2};
  const auto va = values<T>(sa.numel(), 13, 5), vb = values<T>(sb.numel(), 14, 5);
  auto c = cpu.matmul(make(cpu, va, sa), make(cpu, vb, sb));
  REQUIRE(c.shape == Shape{2, 5, 3, 2});
  auto got = read<T>(cpu, c);
  std::vector<T> want;
  for (std::int64_t b0 = 0; b0 < 2; ++b0)
    for (std::int64_t b1 = 0; b1 < 5; ++b1)
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 2; ++j) {
          T acc = 0;
          for (std::int64_t t = 0; t < 4; ++t)
            acc += va[static_cast<std::size_t>(b0 * 12 + i * 4 + t)] *
                   vb[static_cast<std::size_t>(b1 * 8 + t * 2 + j)];
          want.push_back(acc);
        }
  require_close(got, want, 1e-5);
  auto z = cpu.matmul(make(cpu, std::vector<T>{}, Shape{2, 0}),
                      make(cpu, std::vector<T>{}, Shape{0, 3}));
  REQUIRE(read<T>(cpu, z) == std::vector<T>(6, T(0)));
  REQUIRE_THROWS_MATCHES(
      cpu.matmul(make(cpu, va, sa), make(cpu, va, sa)), ShapeError,
      Contains("matmul: [2, 1, 3, 4] x [2, 1, 3, 4]: inner dims 4 and 3 differ"));
}

// Tests of the EigenCpu reference backend, called directly (no router): comparison and logical
// kernels (tensor and scalar forms, bool and NaN operands). Expected values are computed
// independently in the test (by hand or naive loops).
#include "eigen_cpu_helpers.hpp"

using namespace ferry;
using namespace ferry_test;
TEMPLATE_TEST_CASE("comparisons broadcast and return bool", "[eigen_cpu]", float, double,
                   std::int32_t, std::int64_t) {
  using T = TestType;
  EigenCpu cpu;
  const Shape sa{2, 3, 4}, sb{3, 1}, so{2, 3, 4};
  const auto va = values<T>(sa.numel(), 3, 3), vb = values<T>(sb.numel(), 4, 3);
  auto a = make(cpu, va, sa);
  auto b = make(cpu, vb, sb);
  using B = std::uint8_t;
  REQUIRE(read_bool(cpu, cpu.equal(a, b)) ==
          naive_binary<B>(va, sa, vb, sb, so, std::equal_to<>{}));
  REQUIRE(read_bool(cpu, cpu.not_equal(a, b)) ==
          naive_binary<B>(va, sa, vb, sb, so, std::not_equal_to<>{}));
  REQUIRE(read_bool(cpu, cpu.greater(a, b)) ==
          naive_binary<B>(va, sa, vb, sb, so, std::greater<>{}));
  REQUIRE(read_bool(cpu, cpu.greater_equal(a, b)) ==
          naive_binary<B>(va, sa, vb, sb, so, std::greater_equal<>{}));
  REQUIRE(read_bool(cpu, cpu.less(b, a)) == naive_binary<B>(vb, sb, va, sa, so, std::less<>{}));
  REQUIRE(read_bool(cpu, cpu.less_equal(a, b)) ==
          naive_binary<B>(va, sa, vb, sb, so, std::less_equal<>{}));
  auto s = read_bool(cpu, cpu.greater_scalar(a, 1.5));
  for (std::size_t i = 0; i < va.size(); ++i) REQUIRE(s[i] == (static_cast<double>(va[i]) > 1.5));
  s = read_bool(cpu, cpu.less_equal_scalar(a, -1));
  for (std::size_t i = 0; i < va.size(); ++i) REQUIRE(s[i] == (va[i] <= T(-1)));
  s = read_bool(cpu, cpu.not_equal_scalar(a, 2));
  for (std::size_t i = 0; i < va.size(); ++i) REQUIRE(s[i] == (va[i] != T(2)));
}

TEST_CASE("comparisons on bool and NaN, and the logical ops", "[eigen_cpu]") {
  EigenCpu cpu;
  auto p = make_bool(cpu, {1, 1, 0, 0}, Shape{4});
  auto q = make_bool(cpu, {1, 0, 1, 0}, Shape{4});
  using B = std::vector<std::uint8_t>;
  REQUIRE(read_bool(cpu, cpu.equal(p, q)) == B{1, 0, 0, 1});
  REQUIRE(read_bool(cpu, cpu.not_equal_scalar(p, false)) == B{1, 1, 0, 0});
  REQUIRE(read_bool(cpu, cpu.logical_and(p, q)) == B{1, 0, 0, 0});
  REQUIRE(read_bool(cpu, cpu.logical_or(p, q)) == B{1, 1, 1, 0});
  REQUIRE(read_bool(cpu, cpu.logical_not(p)) == B{0, 0, 1, 1});
  auto col = make_bool(cpu, {1, 0}, Shape{2, 1});
  REQUIRE(read_bool(cpu, cpu.logical_and(col, make_bool(cpu, {1, 0, 1}, Shape{3}))) ==
          B{1, 0, 1, 0, 0, 0});
  REQUIRE_THROWS_MATCHES(cpu.greater(p, q), DTypeError, Contains("greater: bool operands"));
  auto f = make(cpu, std::vector<float>{1}, Shape{1});
  REQUIRE_THROWS_MATCHES(cpu.logical_and(f, f), DTypeError, Contains("logical_and"));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto n = make(cpu, std::vector<double>{nan, 1}, Shape{2});
  REQUIRE(read_bool(cpu, cpu.equal(n, n)) == B{0, 1});
  REQUIRE(read_bool(cpu, cpu.not_equal(n, n)) == B{1, 0});
  REQUIRE(read_bool(cpu, cpu.less_scalar(n, 5)) == B{0, 1});
  auto big = make(cpu, std::vector<std::int32_t>{5}, Shape{1});
  REQUIRE(read_bool(cpu, cpu.less_scalar(big, std::int64_t{1} << 40)) == B{1});
}

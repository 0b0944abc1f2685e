// Tests of the EigenCpu reference backend, called directly (no router): arithmetic kernels (add ...
// remainder, scalar forms, clamp), broadcasting, integer edge cases. Expected values are computed
// independently in the test (by hand or naive loops).
#include "eigen_cpu_helpers.hpp"

using namespace ferry;
using namespace ferry_test;
TEMPLATE_TEST_CASE("arithmetic broadcasts like numpy", "[eigen_cpu]", float, double, std::int32_t,
                   std::int64_t) {
  using T = TestType;
  EigenCpu cpu;
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases{{{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
                                {{2, 3, 4}, {3, 1}, {2, 3, 4}},
                                {{2, 1, 4}, {3, 1}, {2, 3, 4}},
                                {{4}, {2, 3, 1}, {2, 3, 4}},
                                {{}, {2, 3}, {2, 3}},
                                {{2, 3}, {}, {2, 3}},
                                {{1, 5}, {5, 1}, {5, 5}},
                                {{0, 3}, {3}, {0, 3}}};
  for (const auto& c : cases) {
    INFO("a " << c.a << " b " << c.b);
    const auto va = values<T>(c.a.numel(), 1);
    auto vb = values<T>(c.b.numel(), 2);
    auto a = make(cpu, va, c.a);
    auto b = make(cpu, vb, c.b);
    REQUIRE(read<T>(cpu, cpu.add(a, b)) ==
            naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) { return x + y; }));
    REQUIRE(read<T>(cpu, cpu.sub(a, b)) ==
            naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) { return x - y; }));
    REQUIRE(read<T>(cpu, cpu.mul(a, b)) ==
            naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) { return x * y; }));
    REQUIRE(read<T>(cpu, cpu.maximum(a, b)) ==
            naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) { return x > y ? x : y; }));
    REQUIRE(read<T>(cpu, cpu.minimum(a, b)) ==
            naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) { return x < y ? x : y; }));
    for (auto& y : vb)
      if (y == T(0)) y = T(3);
    b = make(cpu, vb, c.b);
    if constexpr (std::is_floating_point_v<T>) {
      require_close(read<T>(cpu, cpu.div(a, b)),
                    naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) { return x / y; }));
      require_close(read<T>(cpu, cpu.remainder(a, b)),
                    naive_binary<T>(va, c.a, vb, c.b, c.out,
                                    [](T x, T y) {
                                      return x -
                                             y * std::floor(x / y);  // Python's %, by the formula
                                    }),
                    1e-5);
      auto pa = cpu.abs(a);
      require_close(read<T>(cpu, cpu.pow(pa, b)),
                    naive_binary<T>(read<T>(cpu, pa), c.a, vb, c.b, c.out,
                                    [](T x, T y) { return static_cast<T>(std::pow(x, y)); }));
    } else {
      // Floored division (PyTorch's //), floored remainder and truncating fmod (C's %), written
      // out case by case: magnitudes first, then the sign and the floor step by hand.
      REQUIRE(read<T>(cpu, cpu.div(a, b)) == naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) {
                const T q = static_cast<T>(std::abs(x) / std::abs(y));
                const bool exact = static_cast<T>(q * std::abs(y)) == std::abs(x);
                if ((x < 0) == (y < 0)) return q;
                return exact ? static_cast<T>(-q) : static_cast<T>(-q - 1);
              }));
      REQUIRE(read<T>(cpu, cpu.fmod(a, b)) ==
              naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) {
                const T r = static_cast<T>(std::abs(x) - (std::abs(x) / std::abs(y)) * std::abs(y));
                return x < 0 ? static_cast<T>(-r) : r;
              }));
      REQUIRE(read<T>(cpu, cpu.remainder(a, b)) ==
              naive_binary<T>(va, c.a, vb, c.b, c.out, [](T x, T y) {
                T r = x;
                while (y > 0 ? (r < 0 || r >= y) : (r > 0 || r <= y))
                  r = (y > 0) == (r < 0) ? r + y : r - y;
                return r;
              }));
      auto e = cpu.abs(b);
      auto ve = read<T>(cpu, e);
      REQUIRE(read<T>(cpu, cpu.pow(a, e)) == naive_binary<T>(va, c.a, ve, c.b, c.out, [](T x, T y) {
                T r = 1;
                for (T k = 0; k < y; ++k) r = static_cast<T>(r * x);
                return r;
              }));
    }
  }
}

TEST_CASE("integer division edge cases are defined", "[eigen_cpu]") {
  EigenCpu cpu;
  const auto mn = std::numeric_limits<std::int32_t>::min();
  auto a = make(cpu, std::vector<std::int32_t>{7, -7, 7, -7, mn, mn}, Shape{6});
  auto b = make(cpu, std::vector<std::int32_t>{2, 2, -2, -2, -1, 1}, Shape{6});
  REQUIRE(read<std::int32_t>(cpu, cpu.div(a, b)) ==
          std::vector<std::int32_t>{3, -4, -4, 3, mn, mn});  // floors
  REQUIRE(read<std::int32_t>(cpu, cpu.fmod(a, b)) ==
          std::vector<std::int32_t>{1, -1, 1, -1, 0, 0});  // truncates
  REQUIRE(read<std::int32_t>(cpu, cpu.remainder(a, b)) ==
          std::vector<std::int32_t>{1, 1, -1, -1, 0, 0});
  auto big =
      make(cpu, std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::max()}, Shape{1});
  REQUIRE(read<std::int32_t>(cpu, cpu.add_scalar(big, 1)) == std::vector<std::int32_t>{mn});
  REQUIRE(read<std::int32_t>(cpu, cpu.neg(make(cpu, std::vector<std::int32_t>{mn}, Shape{1}))) ==
          std::vector<std::int32_t>{mn});
  REQUIRE(read<std::int32_t>(
              cpu, cpu.pow_scalar(make(cpu, std::vector<std::int32_t>{-3, 2}, Shape{2}), 3)) ==
          std::vector<std::int32_t>{-27, 8});

  auto z = make(cpu, std::vector<std::int32_t>{1, 0, 1, 1, 1, 1}, Shape{6});
  REQUIRE_THROWS_MATCHES(cpu.div(a, z), ValueError,
                         Contains("[ferry.cpu.zero_division] div: integer division by zero"));
  REQUIRE_THROWS_MATCHES(cpu.remainder(a, z), ValueError,
                         Contains("remainder: integer division by zero"));
  REQUIRE_THROWS_MATCHES(cpu.div_scalar(a, 0), ValueError, Contains("division by zero"));
  REQUIRE_THROWS_MATCHES(cpu.pow_scalar(a, -1), ValueError, Contains("negative exponent -1"));
  REQUIRE_THROWS_MATCHES(cpu.add_scalar(a, 2.5), ValueError,
                         Contains("add: scalar 2.5 is not representable as i32"));
  REQUIRE_THROWS_MATCHES(cpu.add_scalar(a, std::int64_t{1} << 40), ValueError,
                         Contains("does not fit in i32"));
  REQUIRE(read<std::int32_t>(cpu, cpu.mul_scalar(a, 2.0))[0] == 14);
  SECTION("float division by zero follows IEEE") {
    auto f = make(cpu, std::vector<float>{1, -1, 0}, Shape{3});
    auto r = read<float>(cpu, cpu.div_scalar(f, 0.0));
    REQUIRE(std::isinf(r[0]));
    REQUIRE(r[1] < 0);
    REQUIRE(std::isnan(r[2]));
    auto m = read<float>(
        cpu, cpu.remainder_scalar(make(cpu, std::vector<float>{5.5f, -5.5f}, Shape{2}), -2));
    REQUIRE(m == std::vector<float>{-0.5f, -1.5f});
  }
  SECTION("bool operands are rejected by arithmetic") {
    auto m = make_bool(cpu, {1}, Shape{1});
    REQUIRE_THROWS_MATCHES(cpu.add(m, m), DTypeError,
                           Contains("add: bool operands are not supported"));
  }
  SECTION("shapes that do not broadcast are a ShapeError") {
    auto x = make(cpu, std::vector<float>(6, 1), Shape{2, 3});
    auto y = make(cpu, std::vector<float>(2, 1), Shape{2});
    REQUIRE_THROWS_MATCHES(cpu.add(x, y), ShapeError,
                           Contains("shapes [2, 3] and [2] cannot be broadcast"));
  }
}

TEST_CASE("maximum, minimum and clamp propagate NaN", "[eigen_cpu]") {
  EigenCpu cpu;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = make(cpu, std::vector<float>{nan, 1, 5, -2}, Shape{4});
  auto b = make(cpu, std::vector<float>{0, nan, 3, -1}, Shape{4});
  require_close(read<float>(cpu, cpu.maximum(a, b)), {nan, nan, 5, -1});
  require_close(read<float>(cpu, cpu.minimum(a, b)), {nan, nan, 3, -2});
  require_close(read<float>(cpu, cpu.clamp(a, -1.5, 2)), {nan, 1, 2, -1.5f});
  require_close(read<float>(cpu, cpu.clamp(a, 3, 1)), {nan, 1, 1, 1});  // lo > hi -> hi
  auto i = make(cpu, std::vector<std::int64_t>{-5, 0, 1, 2, 9}, Shape{5});
  REQUIRE(read<std::int64_t>(cpu, cpu.clamp(i, 0.5, 2.5)) ==
          std::vector<std::int64_t>{1, 1, 1, 2, 2});
  REQUIRE(read<std::int64_t>(cpu, cpu.clamp(i, -1, std::int64_t{1} << 40)) ==
          std::vector<std::int64_t>{-1, 0, 1, 2, 9});
}

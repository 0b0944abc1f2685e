// Tests of the EigenCpu reference backend, called directly (no router): reductions, arg reductions,
// matmul and the large (parallel) paths. Expected values are computed independently in the test (by
// hand or naive loops).
#include "eigen_cpu_helpers.hpp"

using namespace ferry;
using namespace ferry_test;

namespace {
/// Naive reduction of `v` (shape s) over `dim` (or all) with `f`, starting from the first element.
template <class R, class T, class F>
std::vector<R> naive_reduce(const std::vector<T>& v, const Shape& s, std::optional<std::size_t> dim,
                            F f) {
  if (!dim) {
    R acc = static_cast<R>(v[0]);
    for (std::size_t i = 1; i < v.size(); ++i) acc = f(acc, v[i], static_cast<std::int64_t>(i));
    return {acc};
  }
  std::vector<std::int64_t> od(s.to_vector());
  od[*dim] = 1;
  Shape os(od);
  std::vector<R> out(static_cast<std::size_t>(os.numel()));
  std::vector<bool> init(out.size(), false);
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    auto c = unravel(i, s);
    const std::int64_t j = c[*dim];
    c[*dim] = 0;
    auto& o = out[static_cast<std::size_t>(ravel(c, os))];
    if (!init[static_cast<std::size_t>(ravel(c, os))]) {
      o = f(R{}, v[static_cast<std::size_t>(i)], -1 - j);  // first: f sees a negative position
      init[static_cast<std::size_t>(ravel(c, os))] = true;
    } else {
      o = f(o, v[static_cast<std::size_t>(i)], j);
    }
  }
  return out;
}
}  // namespace

TEMPLATE_TEST_CASE("reductions match naive loops over every dim", "[eigen_cpu]", float, double,
                   std::int32_t, std::int64_t) {
  using T = TestType;
  EigenCpu cpu;
  const Shape s{3, 4, 5};
  const auto v = values<T>(s.numel(), 7, 4);
  auto a = make(cpu, v, s);
  auto first_or = [](auto g) {
    return [g](T acc, T x, std::int64_t pos) { return pos < 0 ? x : g(acc, x); };
  };
  // sum and prod of an integer tensor accumulate and return in i64 (as PyTorch does).
  using S = std::conditional_t<std::is_integral_v<T>, std::int64_t, T>;
  const auto add = [](S acc, T x, std::int64_t pos) { return pos < 0 ? S(x) : S(acc + S(x)); };
  const auto mul = [](S acc, T x, std::int64_t pos) { return pos < 0 ? S(x) : S(acc * S(x)); };
  const auto mx = first_or([](T x, T y) { return x > y ? x : y; });
  const auto mn = first_or([](T x, T y) { return x < y ? x : y; });
  for (std::optional<std::size_t> dim :
       {std::optional<std::size_t>{}, std::optional<std::size_t>{0}, std::optional<std::size_t>{1},
        std::optional<std::size_t>{2}}) {
    INFO("dim " << (dim ? static_cast<int>(*dim) : -1));
    require_close(read<S>(cpu, cpu.sum(a, dim, false)), naive_reduce<S>(v, s, dim, add), 1e-5);
    require_close(read<S>(cpu, cpu.prod(a, dim, false)), naive_reduce<S>(v, s, dim, mul), 1e-5);
    REQUIRE(read<T>(cpu, cpu.max(a, dim, false)) == naive_reduce<T>(v, s, dim, mx));
    REQUIRE(read<T>(cpu, cpu.min(a, dim, false)) == naive_reduce<T>(v, s, dim, mn));
    if constexpr (std::is_floating_point_v<T>) {
      auto m = naive_reduce<S>(v, s, dim, add);
      const T n = static_cast<T>(dim ? s[*dim] : s.numel());
      for (auto& x : m) x /= n;
      require_close(read<T>(cpu, cpu.mean(a, dim, false)), m, 1e-5);
    }
  }
  auto kd = cpu.sum(a, std::size_t{1}, true);
  REQUIRE(kd.shape == Shape{3, 1, 5});
  REQUIRE(kd.dtype == dtype_of<S>);
  REQUIRE(cpu.sum(a, std::nullopt, true).shape == Shape{1, 1, 1});
  REQUIRE(cpu.max(a, std::nullopt, false).shape == Shape{});
  if constexpr (std::is_integral_v<T>)
    REQUIRE_THROWS_AS(cpu.mean(a, std::nullopt, false), DTypeError);
}

TEST_CASE("arg reductions pick the first extreme and the first NaN", "[eigen_cpu]") {
  EigenCpu cpu;
  auto a = make(cpu, std::vector<float>{1, 5, 5, -2, 0, -2}, Shape{2, 3});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmax(a, std::nullopt, false)) ==
          std::vector<std::int64_t>{1});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmin(a, std::nullopt, false)) ==
          std::vector<std::int64_t>{3});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmax(a, std::size_t{1}, false)) ==
          std::vector<std::int64_t>{1, 1});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmin(a, std::size_t{1}, false)) ==
          std::vector<std::int64_t>{0, 0});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmax(a, std::size_t{0}, false)) ==
          std::vector<std::int64_t>{0, 0, 0});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmin(a, std::size_t{0}, false)) ==
          std::vector<std::int64_t>{1, 1, 1});
  auto kd = cpu.argmax(a, std::size_t{0}, true);
  REQUIRE(kd.shape == Shape{1, 3});
  REQUIRE(kd.dtype == DType::i64);
  REQUIRE(cpu.argmax(a, std::nullopt, true).shape == Shape{1, 1});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto n = make(cpu, std::vector<float>{1, nan, 9, nan}, Shape{4});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmax(n, std::nullopt, false)) ==
          std::vector<std::int64_t>{1});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmin(n, std::nullopt, false)) ==
          std::vector<std::int64_t>{1});
  REQUIRE(std::isnan(read<float>(cpu, cpu.max(n, std::nullopt, false))[0]));
  REQUIRE(std::isnan(read<float>(cpu, cpu.min(n, std::size_t{0}, false))[0]));
  auto i = make(cpu, std::vector<std::int32_t>{3, 7, 7, 1}, Shape{2, 2});
  REQUIRE(read<std::int64_t>(cpu, cpu.argmax(i, std::size_t{0}, false)) ==
          std::vector<std::int64_t>{1, 0});
}

TEST_CASE("empty reductions have identities or throw", "[eigen_cpu]") {
  EigenCpu cpu;
  auto e = make(cpu, std::vector<float>{}, Shape{2, 0});
  REQUIRE(read<float>(cpu, cpu.sum(e, std::size_t{1}, false)) == std::vector<float>{0, 0});
  REQUIRE(read<float>(cpu, cpu.prod(e, std::nullopt, false)) == std::vector<float>{1});
  REQUIRE(std::isnan(read<float>(cpu, cpu.mean(e, std::nullopt, false))[0]));
  REQUIRE(read<float>(cpu, cpu.sum(e, std::size_t{0}, false)).empty());
  REQUIRE_THROWS_MATCHES(cpu.max(e, std::size_t{1}, false), ValueError,
                         Contains("max: cannot reduce an empty extent (shape [2, 0], dim 1)"));
  REQUIRE_THROWS_MATCHES(cpu.argmin(e, std::nullopt, false), ValueError, Contains("argmin"));
  REQUIRE_THROWS_MATCHES(cpu.sum(e, std::size_t{2}, false), IndexError,
                         Contains("sum: dim 2 is out of range"));
  auto b = make_bool(cpu, {1}, Shape{1});
  REQUIRE_THROWS_AS(cpu.sum(b, std::nullopt, false), DTypeError);
}

TEST_CASE("large kernels split work and still match naive results", "[eigen_cpu]") {
  EigenCpu cpu;
  SECTION("broadcast elementwise over 300k elements") {
    const Shape sa{300, 1000}, sb{1000};
    const auto va = values<float>(sa.numel(), 8), vb = values<float>(sb.numel(), 9);
    auto r = read<float>(cpu, cpu.mul(make(cpu, va, sa), make(cpu, vb, sb)));
    REQUIRE(r == naive_binary<float>(va, sa, vb, sb, sa, [](float x, float y) { return x * y; }));
  }
  SECTION("long and strided reductions") {
    const Shape s{3, 200001};
    const auto v = values<std::int64_t>(s.numel(), 10);
    auto a = make(cpu, v, s);
    std::int64_t total = 0;
    std::vector<std::int64_t> rows(3, 0), cols(200001, 0);
    std::vector<std::int64_t> colmax(200001, std::numeric_limits<std::int64_t>::min());
    for (std::int64_t i = 0; i < s.numel(); ++i) {
      const auto x = v[static_cast<std::size_t>(i)];
      total += x;
      rows[static_cast<std::size_t>(i / 200001)] += x;
      cols[static_cast<std::size_t>(i % 200001)] += x;
      auto& m = colmax[static_cast<std::size_t>(i % 200001)];
      m = std::max(m, x);
    }
    REQUIRE(read<std::int64_t>(cpu, cpu.sum(a, std::nullopt, false)) ==
            std::vector<std::int64_t>{total});
    REQUIRE(read<std::int64_t>(cpu, cpu.sum(a, std::size_t{1}, false)) == rows);
    REQUIRE(read<std::int64_t>(cpu, cpu.sum(a, std::size_t{0}, false)) == cols);
    REQUIRE(read<std::int64_t>(cpu, cpu.max(a, std::size_t{0}, false)) == colmax);
    auto f = cpu.to_float(a, DType::f64);
    REQUIRE(read<double>(cpu, cpu.sum(f, std::nullopt, false))[0] == static_cast<double>(total));
    // argmax over all of a long row: plant the max late, twice (first wins).
    auto w = v;
    w[400000] = 100;
    w[500000] = 100;
    REQUIRE(read<std::int64_t>(cpu, cpu.argmax(make(cpu, w, s), std::nullopt, false)) ==
            std::vector<std::int64_t>{400000});
  }
  SECTION("a large matmul") {
    const std::int64_t m = 150, k = 120, n = 170;
    const auto va = values<double>(m * k, 11), vb = values<double>(k * n, 12);
    auto c = read<double>(cpu, cpu.matmul(make(cpu, va, Shape{m, k}), make(cpu, vb, Shape{k, n})));
    for (std::int64_t i = 0; i < m; i += 7)
      for (std::int64_t j = 0; j < n; j += 5) {
        double want = 0;
        for (std::int64_t t = 0; t < k; ++t)
          want += va[static_cast<std::size_t>(i * k + t)] * vb[static_cast<std::size_t>(t * n + j)];
        REQUIRE(c[static_cast<std::size_t>(i * n + j)] == Approx(want).epsilon(1e-12));
      }
  }
}

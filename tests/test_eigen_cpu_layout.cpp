// Tests of the EigenCpu reference backend, called directly (no router): layout kernels (reshape ...
// repeat, gather) and creation (full, arange, random). Expected values are computed independently
// in the test (by hand or naive loops).
#include "eigen_cpu_helpers.hpp"

using namespace ferry;
using namespace ferry_test;

// ---------------------------------------------------------------------------------------------

TEST_CASE("reshape, permute, flip and expand move elements like numpy", "[eigen_cpu]") {
  EigenCpu cpu;
  const Shape s{2, 3, 4};
  std::vector<std::int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<std::size_t>(i)] = i;
  auto a = make(cpu, v, s);
  REQUIRE_THROWS_MATCHES(cpu.reshape(a, Shape{5, 5}), ShapeError,
                         Contains("reshape: cannot reshape [2, 3, 4]"));

  const std::vector<std::size_t> perm{2, 0, 1};
  auto p = cpu.permute(a, perm);
  REQUIRE(p.shape == Shape{4, 2, 3});
  auto pv = read<std::int32_t>(cpu, p);
  for (std::int64_t i = 0; i < 24; ++i) {
    auto c = unravel(i, p.shape);  // out[c0,c1,c2] = in[c1,c2,c0]
    REQUIRE(pv[static_cast<std::size_t>(i)] ==
            v[static_cast<std::size_t>(ravel({c[1], c[2], c[0]}, s))]);
  }
  const std::vector<std::size_t> unit{1, 0};
  auto u = make(cpu, v, Shape{1, 24});
  const void* pu = ptr(u);
  REQUIRE(ptr(cpu.permute(std::move(u), unit)) == pu);  // moves only a size-1 dim: no copy
  REQUIRE_THROWS_MATCHES(cpu.permute(a, std::vector<std::size_t>{0, 0, 1}), IndexError,
                         Contains("permute: [0, 0, 1] is not a permutation"));

  const std::vector<std::size_t> axes{0, 2};
  auto f = read<std::int32_t>(cpu, cpu.flip(a, axes));
  for (std::int64_t i = 0; i < 24; ++i) {
    auto c = unravel(i, s);
    REQUIRE(f[static_cast<std::size_t>(i)] ==
            v[static_cast<std::size_t>(ravel({1 - c[0], c[1], 3 - c[2]}, s))]);
  }
  REQUIRE_THROWS_AS(cpu.flip(a, std::vector<std::size_t>{3}), IndexError);

  auto col = make(cpu, std::vector<float>{1, 2, 3}, Shape{3, 1});
  auto e = cpu.expand(col, Shape{2, 3, 4});
  REQUIRE(e.shape == Shape{2, 3, 4});
  auto ev = read<float>(cpu, e);
  for (std::int64_t i = 0; i < 24; ++i)
    REQUIRE(ev[static_cast<std::size_t>(i)] == static_cast<float>(unravel(i, e.shape)[1] + 1));
  REQUIRE(cpu.expand(col, Shape{-1, 2}).shape == Shape{3, 2});
  REQUIRE_THROWS_MATCHES(cpu.expand(col, Shape{2, 4}), ShapeError,
                         Contains("expand: cannot expand [3, 1] to [2, 4]"));
}

TEST_CASE("slices, cat and repeat copy the right elements", "[eigen_cpu]") {
  EigenCpu cpu;
  const Shape s{4, 5};
  std::vector<double> v(20);
  for (int i = 0; i < 20; ++i) v[static_cast<std::size_t>(i)] = i;
  auto a = make(cpu, v, s);
  const std::vector<Range> rg{{1, 4, 2}, {0, 5, 3}};
  auto sl = cpu.slice(a, rg);
  REQUIRE(sl.shape == Shape{2, 2});
  REQUIRE(read<double>(cpu, sl) == std::vector<double>{5, 8, 15, 18});
  auto whole = cpu.slice(a, std::vector<Range>{{0, 4, 1}, {0, 5, 1}});
  REQUIRE(ptr(whole) == ptr(a));
  REQUIRE(cpu.slice(a, std::vector<Range>{{2, 2, 1}, {0, 5, 1}}).shape == Shape{0, 5});
  REQUIRE_THROWS_MATCHES(cpu.slice(a, std::vector<Range>{{0, 6, 1}, {0, 5, 1}}), IndexError,
                         Contains("slice: range 0:6 is invalid for dim 0 of size 4"));

  auto sa = cpu.slice_assign(a, rg, make(cpu, std::vector<double>{-1, -2, -3, -4}, Shape{2, 2}));
  auto want = v;
  want[5] = -1;
  want[8] = -2;
  want[15] = -3;
  want[18] = -4;
  REQUIRE(read<double>(cpu, sa) == want);
  REQUIRE(read<double>(cpu, a) == v);
  REQUIRE_THROWS_MATCHES(cpu.slice_assign(a, rg, make(cpu, std::vector<double>{1}, Shape{1})),
                         ShapeError,
                         Contains("slice_assign: value of shape [1] does not fit slice [2, 2]"));

  auto x = make(cpu, std::vector<std::int64_t>{1, 2, 3, 4}, Shape{2, 2});
  auto y = make(cpu, std::vector<std::int64_t>{5, 6}, Shape{2, 1});
  REQUIRE(read<std::int64_t>(cpu, cpu.cat({x, y}, 1)) ==
          std::vector<std::int64_t>{1, 2, 5, 3, 4, 6});
  auto yy = make(cpu, std::vector<std::int64_t>{5, 6}, Shape{1, 2});
  auto c0 = cpu.cat({x, yy, x}, 0);
  REQUIRE(c0.shape == Shape{5, 2});
  REQUIRE(read<std::int64_t>(cpu, c0) == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 1, 2, 3, 4});
  REQUIRE_THROWS_MATCHES(cpu.cat({x, y}, 0), ShapeError,
                         Contains("cat: tensor 1 has shape [2, 1]"));

  auto r =
      cpu.repeat(make(cpu, std::vector<float>{1, 2}, Shape{2}), std::vector<std::int64_t>{2, 3});
  REQUIRE(r.shape == Shape{2, 6});
  REQUIRE(read<float>(cpu, r) == std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2});
  auto r2 = cpu.repeat(x, std::vector<std::int64_t>{2, 1});
  REQUIRE(read<std::int64_t>(cpu, r2) == std::vector<std::int64_t>{1, 2, 3, 4, 1, 2, 3, 4});
  auto bm = cpu.repeat(make_bool(cpu, {1, 0}, Shape{2, 1}), std::vector<std::int64_t>{1, 2});
  REQUIRE(read_bool(cpu, bm) == std::vector<std::uint8_t>{1, 1, 0, 0});
}

TEST_CASE("gather and index_select follow torch and name bad indices", "[eigen_cpu]") {
  EigenCpu cpu;
  auto a = make(cpu, std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto idx = make(cpu, std::vector<std::int64_t>{2, 0, 1, 1}, Shape{2, 2});
  REQUIRE(read<float>(cpu, cpu.gather(a, 1, idx)) == std::vector<float>{3, 1, 5, 5});
  auto idx0 = make(cpu, std::vector<std::int32_t>{1, 0, 1}, Shape{1, 3});
  REQUIRE(read<float>(cpu, cpu.gather(a, 0, idx0)) == std::vector<float>{4, 2, 6});
  auto bad = make(cpu, std::vector<std::int64_t>{0, 3}, Shape{1, 2});
  REQUIRE_THROWS_MATCHES(cpu.gather(a, 1, bad), IndexError,
                         Contains("gather: index 3 is out of range for dim 1 of size 3"));
  auto neg = make(cpu, std::vector<std::int64_t>{-1}, Shape{1, 1});
  REQUIRE_THROWS_MATCHES(cpu.gather(a, 0, neg), IndexError, Contains("index -1 is out of range"));
  REQUIRE_THROWS_AS(cpu.gather(a, 1, a), DTypeError);

  auto sel = make(cpu, std::vector<std::int32_t>{2, 2, 0}, Shape{3});
  REQUIRE(read<float>(cpu, cpu.index_select(a, 1, sel)) == std::vector<float>{3, 3, 1, 6, 6, 4});
  REQUIRE(
      read<float>(cpu, cpu.index_select(a, 0, make(cpu, std::vector<std::int64_t>{1}, Shape{1}))) ==
      std::vector<float>{4, 5, 6});
  REQUIRE_THROWS_MATCHES(cpu.index_select(a, 0, make(cpu, std::vector<std::int64_t>{2}, Shape{1})),
                         IndexError,
                         Contains("index_select: index 2 is out of range for dim 0 of size 2"));

  // A bigger gather against the definition.
  const Shape s{3, 4, 5};
  const auto v = values<double>(s.numel(), 15);
  std::vector<std::int64_t> iv(3 * 2 * 5);
  for (std::size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<std::int64_t>((i * 7) % 4);
  auto g = read<double>(cpu, cpu.gather(make(cpu, v, s), 1, make(cpu, iv, Shape{3, 2, 5})));
  for (std::int64_t i = 0; i < 30; ++i) {
    auto c = unravel(i, Shape{3, 2, 5});
    c[1] = iv[static_cast<std::size_t>(i)];
    REQUIRE(g[static_cast<std::size_t>(i)] == v[static_cast<std::size_t>(ravel(c, s))]);
  }
}

TEST_CASE("full, arange and random create the expected values", "[eigen_cpu]") {
  EigenCpu cpu;
  REQUIRE(read<float>(cpu, cpu.float_full(Shape{2, 2}, DType::f32, 1.5, D0)) ==
          std::vector<float>(4, 1.5f));
  REQUIRE(read<std::int32_t>(cpu, cpu.int_full(Shape{3}, DType::i32, -7, D0)) ==
          std::vector<std::int32_t>(3, -7));
  REQUIRE(read_bool(cpu, cpu.bool_full(Shape{2}, true, D0)) == std::vector<std::uint8_t>{1, 1});
  REQUIRE_THROWS_MATCHES(cpu.int_full(Shape{1}, DType::f32, 1, D0), DTypeError,
                         Contains("int_full: dtype f32 is not of kind Int"));
  REQUIRE(read<double>(cpu, cpu.float_arange(1.0, 0.5, 4, DType::f64, D0)) ==
          std::vector<double>{1, 1.5, 2, 2.5});
  REQUIRE(read<std::int64_t>(cpu, cpu.int_arange(10, -3, 4, DType::i64, D0)) ==
          std::vector<std::int64_t>{10, 7, 4, 1});
  REQUIRE(cpu.int_arange(0, 1, 0, DType::i32, D0).shape == Shape{0});

  const Shape s{1000, 100};
  auto u1 = read<float>(cpu, cpu.float_random(s, DType::f32, Distribution::uniform(-2, 3), 42, D0));
  auto u2 = read<float>(cpu, cpu.float_random(s, DType::f32, Distribution::uniform(-2, 3), 42, D0));
  auto u3 = read<float>(cpu, cpu.float_random(s, DType::f32, Distribution::uniform(-2, 3), 43, D0));
  REQUIRE(u1 == u2);
  REQUIRE(u1 != u3);
  double mean = 0;
  for (float x : u1) {
    REQUIRE(x >= -2.0f);
    REQUIRE(x < 3.0f);
    mean += x;
  }
  REQUIRE(mean / 1e5 == Approx(0.5).margin(0.02));
  // The first value is fixed by the generator (splitmix64, counter 0): pinned for all machines.
  REQUIRE(read<double>(cpu,
                       cpu.float_random(Shape{1}, DType::f64, Distribution::uniform(), 0, D0))[0] ==
          static_cast<double>(0xE220A8397B1DCDAFULL >> 11) * 0x1.0p-53);

  auto nv = read<double>(cpu, cpu.float_random(s, DType::f64, Distribution::normal(1, 2), 7, D0));
  double m = 0, sq = 0;
  for (double x : nv) m += x;
  m /= 1e5;
  for (double x : nv) sq += (x - m) * (x - m);
  REQUIRE(m == Approx(1).margin(0.03));
  REQUIRE(std::sqrt(sq / 1e5) == Approx(2).margin(0.03));
  REQUIRE_THROWS_AS(cpu.float_random(s, DType::i32, Distribution::uniform(), 1, D0), DTypeError);
}

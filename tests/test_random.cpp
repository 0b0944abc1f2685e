// random_int and bernoulli: seeded values identical in both execution modes, for any thread
// count and on every run (checked against the generator's formula computed here), in range,
// uniform within statistical bounds, every integer dtype's edges, and the errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <limits>
#include <map>
#include <vector>

#include "matchers.hpp"

using namespace ferry;
using ferry_test::Says;

namespace {
using R = Router<EigenCpu>;
constexpr CpuDevice D0{0};
__extension__ using u128 = unsigned __int128;

/// splitmix64 of counter i in stream `seed`, written out again from its published constants.
std::uint64_t mix(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
}  // namespace

TEST_CASE("random_int: the documented formula, in both modes and for any thread count") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  const int threads = GENERATE(1, 2);
  R r(EigenCpu(1), {.execution = mode, .threads_per_device = threads});
  const std::int64_t n = 100000;
  const auto t = r.random_int(Shape{n}, -3, 14, 99, D0);
  CHECK(t.dtype() == DType::i64);
  const auto v = t.to_data().to_vector<std::int64_t>();
  for (std::int64_t i = 0; i < n; i += 997) {
    const auto want =
        -3 + static_cast<std::int64_t>(
                 (static_cast<u128>(mix(99, static_cast<std::uint64_t>(i))) * 17) >> 64);
    REQUIRE(v[static_cast<std::size_t>(i)] == want);
  }
  // Every value of [-3, 14) about n / 17 times (within 6 standard deviations).
  std::map<std::int64_t, std::int64_t> count;
  for (auto x : v) ++count[x];
  REQUIRE(count.size() == 17);
  CHECK(count.begin()->first == -3);
  CHECK(count.rbegin()->first == 13);
  const double mean = static_cast<double>(n) / 17, sd = std::sqrt(mean * (1 - 1.0 / 17));
  for (const auto& [value, c] : count) {
    INFO("value " << value);
    CHECK(std::abs(static_cast<double>(c) - mean) < 6 * sd);
  }
  // Another seed, other values; the same seed, the same values.
  CHECK(r.random_int(Shape{n}, -3, 14, 100, D0).to_data().to_vector<std::int64_t>() != v);
  CHECK(r.random_int(Shape{n}, -3, 14, 99, D0).to_data().to_vector<std::int64_t>() == v);
}

TEST_CASE("random_int: the edges of every integer dtype, u64 above INT64_MAX") {
  R r(EigenCpu(1));
  const auto i8 = r.random_int(Shape{4000}, -128, 128, 1, D0, DType::i8);  // high = max + 1
  const auto v8 = i8.to_data().to_vector<std::int8_t>();
  CHECK(*std::min_element(v8.begin(), v8.end()) == -128);
  CHECK(*std::max_element(v8.begin(), v8.end()) == 127);
  const std::uint64_t base = (std::uint64_t{1} << 63) + 5;
  const auto u = r.random_int(Shape{1000}, base, base + 5, 2, D0, DType::u64)
                     .to_data()
                     .to_vector<std::uint64_t>();
  for (auto x : u) REQUIRE((x >= base && x < base + 5));
  // The whole i64 range: a span of 2^64, each value the generator's bits shifted by INT64_MIN.
  const auto lo = std::numeric_limits<std::int64_t>::min();
  const auto w =
      r.random_int(Shape{8}, lo, 9223372036854775808.0, 3, D0).to_data().to_vector<std::int64_t>();
  for (std::size_t i = 0; i < w.size(); ++i)
    CHECK(static_cast<std::uint64_t>(w[i]) == mix(3, i) + (std::uint64_t{1} << 63));
  CHECK(r.random_int(Shape{0, 3}, 0, 1, 4, D0).shape() == Shape{0, 3});
  CHECK(r.random_int(Shape{5}, 7, 8, 4, D0, DType::u8).to_data().to_vector<std::uint8_t>() ==
        std::vector<std::uint8_t>(5, 7));
}

TEST_CASE("random_int: bad ranges and dtypes at the call") {
  R r(EigenCpu(1));
  REQUIRE_THROWS_MATCHES(r.random_int(Shape{2}, 5, 5, 0, D0), ValueError,
                         Says("random_int: [5, 5) must be a nonempty range"));
  REQUIRE_THROWS_MATCHES(r.random_int(Shape{2}, 0.5, 3, 0, D0), ValueError, Says("random_int"));
  REQUIRE_THROWS_MATCHES(r.random_int(Shape{2}, -1, 3, 0, D0, DType::u8), ValueError,
                         Says("of u8"));
  REQUIRE_THROWS_MATCHES(r.random_int(Shape{2}, 0, 257, 0, D0, DType::u8), ValueError,
                         Says("random_int"));
  REQUIRE_THROWS_MATCHES(r.random_int(Shape{2}, 0, 3, 0, D0, DType::f32), DTypeError,
                         Says("random_int: needs an int dtype"));
  REQUIRE_THROWS_MATCHES(r.random_int(Shape{2}, 0, 3, 0, D0, DType::boolean), DTypeError,
                         Says("random_int"));
}

TEST_CASE("bernoulli: 1 below p, seeded, in p's dtype, and p outside [0, 1] saturates") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode, .trace = true});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<float> p(20000, 0.25f);
  p[0] = 0.0f;
  p[1] = 1.0f;
  p[2] = -1.0f;
  p[3] = 2.0f;
  p[4] = static_cast<float>(nan);
  const auto t = r.from_vector(p, Shape{20000}, D0);
  const auto b = bernoulli(t, 11);
  CHECK(b.dtype() == DType::f32);
  const auto v = b.to_data().to_vector<float>();
  CHECK(v[0] == 0.0f);
  CHECK(v[1] == 1.0f);
  CHECK(v[2] == 0.0f);
  CHECK(v[3] == 1.0f);
  CHECK(v[4] == 0.0f);
  double ones = 0;
  for (std::size_t i = 5; i < v.size(); ++i) {
    REQUIRE((v[i] == 0.0f || v[i] == 1.0f));
    // The second path: the uniform draw of element i is mix(11, i) >> 11 times 2^-53.
    const double u = static_cast<double>(mix(11, i) >> 11) * 0x1.0p-53;
    REQUIRE(v[i] == (u < 0.25 ? 1.0f : 0.0f));
    ones += v[i];
  }
  const double n = static_cast<double>(v.size() - 5);
  CHECK(std::abs(ones - 0.25 * n) < 6 * std::sqrt(n * 0.25 * 0.75));
  CHECK(bernoulli(t, 11).to_data().to_vector<float>() == v);
  CHECK(bernoulli(cast(t, DType::f16), 11).dtype() == DType::f16);
  REQUIRE_THROWS_MATCHES(bernoulli(r.zeros({2}, DType::i32, D0), 1), DTypeError, Says("bernoulli"));
  r.sync();
  bool seen = false;
  for (const auto& e : r.trace())
    seen = seen || (e.name == "random" && e.phase == TraceEvent::Phase::op);
  CHECK(seen);
  CHECK(fmt::format("{}", Op{op::RandomInt{Scalar(-3), Scalar(14), 99,
                                           TensorRef{5, Shape{2}, DType::i64}}}) ==
        "random_int([-3, 14), seed 99) -> t5:i64[2]");
}

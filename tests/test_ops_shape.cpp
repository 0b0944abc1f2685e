// squeeze, unsqueeze, flatten, narrow, split, chunk, triu, tril, mask_fill, mask_where and pad
// (ferry/ops/layout.hpp), in both execution modes: shapes and values against torch's documented
// results, worked out by hand or by index arithmetic here.
#include <catch2/catch.hpp>
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
using T = Tensor<EigenCpu>;
constexpr CpuDevice D0{0};

std::vector<std::int32_t> iota_i32(std::int32_t n, std::int32_t from = 0) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}
std::vector<std::int32_t> ints(const T& t) { return t.to_data().to_vector<std::int32_t>(); }
}  // namespace

TEST_CASE("squeeze, unsqueeze and flatten reshape as torch does") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto x = r.from_vector(iota_i32(6), Shape{1, 2, 1, 3}, D0);
  CHECK(squeeze(x).shape() == Shape{2, 3});
  CHECK(squeeze(x, 2).shape() == Shape{1, 2, 3});
  CHECK(squeeze(x, -4).shape() == Shape{2, 1, 3});
  CHECK(squeeze(x, 1).shape() == Shape{1, 2, 1, 3});  // not of size 1: unchanged
  CHECK(unsqueeze(x, 0).shape() == Shape{1, 1, 2, 1, 3});
  CHECK(unsqueeze(x, 4).shape() == Shape{1, 2, 1, 3, 1});
  CHECK(unsqueeze(x, -1).shape() == Shape{1, 2, 1, 3, 1});
  CHECK(unsqueeze(x, -5).shape() == Shape{1, 1, 2, 1, 3});
  CHECK(flatten(x).shape() == Shape{6});
  CHECK(flatten(x, 1, 2).shape() == Shape{1, 2, 3});
  CHECK(flatten(x, -2).shape() == Shape{1, 2, 3});
  CHECK(ints(flatten(x)) == iota_i32(6));
  CHECK(flatten(r.full(Shape{}, Scalar(7), DType::i32, D0)).shape() == Shape{1});
  REQUIRE_THROWS_MATCHES(unsqueeze(x, 5), IndexError, Says("unsqueeze"));
  REQUIRE_THROWS_MATCHES(flatten(x, 2, 1), IndexError, Says("flatten"));
  REQUIRE_THROWS_MATCHES(squeeze(x, 4), IndexError, Says("squeeze"));
}

TEST_CASE("narrow, split and chunk cut along a dim as torch does") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto x = r.from_vector(iota_i32(14), Shape{7, 2}, D0);  // rows k: 2k, 2k+1
  CHECK(ints(narrow(x, 0, 2, 3)) == iota_i32(6, 4));
  CHECK(ints(narrow(x, 0, -2, 2)) == iota_i32(4, 10));
  CHECK(ints(narrow(x, 1, 1, 1)) == std::vector<std::int32_t>{1, 3, 5, 7, 9, 11, 13});
  CHECK(narrow(x, 0, 7, 0).shape() == Shape{0, 2});
  REQUIRE_THROWS_MATCHES(narrow(x, 0, 5, 3), IndexError, Says("narrow"));
  REQUIRE_THROWS_MATCHES(narrow(x, 0, -8, 1), IndexError, Says("narrow"));

  const auto s = split(x, 3);  // 3, 3, 1 rows
  REQUIRE(s.size() == 3);
  CHECK(ints(s[0]) == iota_i32(6, 0));
  CHECK(ints(s[1]) == iota_i32(6, 6));
  CHECK(ints(s[2]) == iota_i32(2, 12));
  const auto sz = split(x, std::vector<std::int64_t>{1, 0, 6});
  REQUIRE(sz.size() == 3);
  CHECK(sz[1].shape() == Shape{0, 2});
  CHECK(ints(sz[2]) == iota_i32(12, 2));
  REQUIRE_THROWS_MATCHES(split(x, std::vector<std::int64_t>{3, 3}), ValueError,
                         Says("do not add up"));
  REQUIRE_THROWS_MATCHES(split(x, 0), ValueError, Says("split_size"));

  const auto c = chunk(x, 3);  // ceil(7 / 3) = 3: 3, 3, 1
  REQUIRE(c.size() == 3);
  CHECK(c[2].shape() == Shape{1, 2});
  CHECK(chunk(x, 4).size() == 4);                                         // 2, 2, 2, 1
  CHECK(chunk(r.from_vector(iota_i32(6), Shape{6}, D0), 4).size() == 3);  // 2, 2, 2: torch too
  CHECK(chunk(x, 2, 1).size() == 2);
  REQUIRE_THROWS_MATCHES(chunk(x, 0), ValueError, Says("chunk"));
}

TEST_CASE("triu and tril keep a band of the last two dims, batched") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto x = r.from_vector(iota_i32(24, 1), Shape{2, 3, 4}, D0);
  for (std::int64_t k : {-1, 0, 2}) {
    INFO("diagonal " << k);
    std::vector<std::int32_t> up, lo;
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          const std::int32_t v = b * 12 + i * 4 + j + 1;
          up.push_back(j - i >= k ? v : 0);
          lo.push_back(j - i <= k ? v : 0);
        }
    CHECK(ints(triu(x, k)) == up);
    CHECK(ints(tril(x, k)) == lo);
  }
  // NaN and inf above the band are kept; below it, 0 (not NaN * 0).
  const double inf = std::numeric_limits<double>::infinity();
  const auto f = r.from_vector(std::vector<double>{inf, -inf, inf, 2}, Shape{2, 2}, D0);
  CHECK(triu(f).to_data().to_vector<double>() == std::vector<double>{inf, -inf, 0, 2});
  REQUIRE_THROWS_MATCHES(triu(r.from_vector(iota_i32(3), Shape{3}, D0)), ShapeError, Says("triu"));
}

TEST_CASE("mask_fill and mask_where choose by a broadcast bool mask") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto x = r.from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3}, D0);
  const auto m = r.from_vector(std::vector<bool>{true, false, true}, Shape{3}, D0);
  const float ninf = -std::numeric_limits<float>::infinity();
  CHECK(mask_fill(x, m, Scalar(ninf)).to_data().to_vector<float>() ==
        std::vector<float>{ninf, 2, ninf, ninf, 5, ninf});
  const auto src = r.from_vector(std::vector<float>{-1, -2}, Shape{2, 1}, D0);
  CHECK(mask_where(x, m, src).to_data().to_vector<float>() ==
        std::vector<float>{-1, 2, -1, -2, 5, -2});
  const auto i = r.from_vector(iota_i32(3), Shape{3}, D0);
  REQUIRE_THROWS_MATCHES(mask_fill(i, m, Scalar(0.5)), ValueError, Says("mask_fill"));
  REQUIRE_THROWS_MATCHES(mask_fill(x, x, Scalar(0)), DTypeError, Says("mask_fill"));
  const auto big = r.from_vector(std::vector<bool>(12, true), Shape{2, 2, 3}, D0);
  REQUIRE_THROWS_MATCHES(mask_fill(x, big, Scalar(0)), ShapeError, Says("does not broadcast"));
}

TEST_CASE("pad: constant (crop too), reflect and replicate, from the last dim backwards") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto x = r.from_vector(iota_i32(6, 1), Shape{2, 3}, D0);  // [[1, 2, 3], [4, 5, 6]]
  const auto c = pad(x, {1, 2}, PadMode::constant, Scalar(9));
  CHECK(c.shape() == Shape{2, 6});
  CHECK(ints(c) == std::vector<std::int32_t>{9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9});
  const auto c2 = pad(x, {0, 0, 1, 0});  // one row of 0 above
  CHECK(ints(c2) == std::vector<std::int32_t>{0, 0, 0, 1, 2, 3, 4, 5, 6});
  CHECK(ints(pad(x, {-1, 1})) == std::vector<std::int32_t>{2, 3, 0, 5, 6, 0});  // crop, pad
  // reflect: [3 2 | 1 2 3 | 2 1] for pads (2, 2); replicate: [1 1 | 1 2 3 | 3 3].
  CHECK(ints(pad(x, {2, 2}, PadMode::reflect)) ==
        std::vector<std::int32_t>{3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4});
  CHECK(ints(pad(x, {2, 2}, PadMode::replicate)) ==
        std::vector<std::int32_t>{1, 1, 1, 2, 3, 3, 3, 4, 4, 4, 5, 6, 6, 6});
  CHECK(ints(pad(x, {0, 0, 1, 1}, PadMode::reflect)) ==
        std::vector<std::int32_t>{4, 5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3});
  REQUIRE_THROWS_MATCHES(pad(x, {3, 0}, PadMode::reflect), ShapeError, Says("reflect"));
  REQUIRE_THROWS_MATCHES(pad(x, {1}), ShapeError, Says("pairs"));
  REQUIRE_THROWS_MATCHES(pad(x, {1, 1}, PadMode::constant, Scalar(0.5)), ValueError, Says("pad"));
  REQUIRE_THROWS_MATCHES(pad(x, {-2, -2}), ShapeError, Says("crops"));
}

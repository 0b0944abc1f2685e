// argsort, sort, topk (EigenCpu's argsort kernel through the router, and a gather), and
// cummax/cummin with indices, in both execution modes, against std::stable_sort and running
// loops computed here: every dim, descending, ties, NaN, -0, long rows (the parallel merge),
// every dtype kind, 0-d and empty tensors, and the errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ferry/backends/multi.hpp>
#include <ferry/ferry.hpp>
#include <limits>
#include <numeric>
#include <vector>

#include "matchers.hpp"
#include "mini_backend.hpp"

using namespace ferry;
using ferry_test::Says;

namespace {
using R = Router<EigenCpu>;
constexpr CpuDevice D0{0};
const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The stable sort of each row of x ([outer, n, inner] row-major) along its middle dim, by a
/// key that puts NaN last: (isnan, value) ascending, or (isnan, -value) descending.
template <class T>
std::vector<std::int64_t> ref_argsort(const std::vector<T>& x, std::int64_t outer, std::int64_t n,
                                      std::int64_t inner, bool desc, std::int64_t k = -1) {
  if (k < 0) k = n;
  std::vector<std::int64_t> out(static_cast<std::size_t>(outer * k * inner));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      auto at = [&](std::int64_t j) {
        return x[static_cast<std::size_t>((o * n + j) * inner + i)];
      };
      std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
      std::iota(idx.begin(), idx.end(), std::int64_t{0});
      std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t a, std::int64_t b) {
        const double va = static_cast<double>(at(a)), vb = static_cast<double>(at(b));
        if (std::isnan(va) || std::isnan(vb)) return !std::isnan(va) && std::isnan(vb);
        return desc ? va > vb : va < vb;
      });
      for (std::int64_t j = 0; j < k; ++j)
        out[static_cast<std::size_t>((o * k + j) * inner + i)] = idx[static_cast<std::size_t>(j)];
    }
  return out;
}
/// x gathered along the middle dim by `idx` ([outer, k, inner]).
template <class T>
std::vector<T> take(const std::vector<T>& x, const std::vector<std::int64_t>& idx,
                    std::int64_t outer, std::int64_t n, std::int64_t k, std::int64_t inner) {
  std::vector<T> out(idx.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < k; ++j)
      for (std::int64_t i = 0; i < inner; ++i) {
        const auto at = static_cast<std::size_t>((o * k + j) * inner + i);
        out[at] = x[static_cast<std::size_t>((o * n + idx[at]) * inner + i)];
      }
  return out;
}
template <class T>
std::vector<std::uint64_t> bits(const std::vector<T>& v) {
  std::vector<std::uint64_t> b;
  for (T x : v) {
    std::uint64_t u = 0;
    std::memcpy(&u, &x, sizeof x);
    b.push_back(u);
  }
  return b;
}
}  // namespace

TEST_CASE("argsort and sort along every dim, both directions, match std::stable_sort") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  std::vector<double> x(3 * 4 * 5);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7) % 5) - 2.0;
  const auto t = r.from_vector(x, Shape{3, 4, 5}, D0);
  const std::int64_t dims[3] = {3, 4, 5};
  for (std::int64_t d = 0; d < 3; ++d)
    for (bool desc : {false, true}) {
      INFO("dim " << d << (desc ? " descending" : " ascending"));
      std::int64_t outer = 1, inner = 1;
      for (std::int64_t q = 0; q < d; ++q) outer *= dims[q];
      for (std::int64_t q = d + 1; q < 3; ++q) inner *= dims[q];
      const std::int64_t n = dims[d];
      const auto want = ref_argsort(x, outer, n, inner, desc);
      const auto a = argsort(t, d, desc);
      CHECK(a.dtype() == DType::i64);
      CHECK(a.shape() == t.shape());
      CHECK(a.to_data().to_vector<std::int64_t>() == want);
      const auto [v, i] = sort(t, d - 3, desc);
      CHECK(i.to_data().to_vector<std::int64_t>() == want);
      CHECK(v.to_data().to_vector<double>() == take(x, want, outer, n, n, inner));
    }
}

TEST_CASE("sort: NaN last both ways, ties and -0 keep their order, infinities in place") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> x{kNaN, 1.0, -0.0, inf, 0.0, -inf, 1.0, kNaN, -0.0};
  const auto t = r.from_vector(x, Shape{9}, D0);
  CHECK(argsort(t).to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{5, 2, 4, 8, 1, 6, 3, 0, 7});
  CHECK(argsort(t, 0, true).to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{3, 1, 6, 2, 4, 8, 5, 0, 7});
  // The values are bit copies: the zeros keep their signs, the NaNs stay NaN.
  const auto v = sort(t).values.to_data().to_vector<double>();
  const std::vector<double> want{-inf, -0.0, 0.0, -0.0, 1.0, 1.0, inf, kNaN, kNaN};
  for (std::size_t i = 0; i < 7; ++i) CHECK(std::signbit(v[i]) == std::signbit(want[i]));
  CHECK(bits(std::vector<double>(v.begin(), v.begin() + 7)) ==
        bits(std::vector<double>(want.begin(), want.begin() + 7)));
  CHECK((std::isnan(v[7]) && std::isnan(v[8])));
  // f32 and f16 sort the same way (f16 as f32, exactly).
  std::vector<float> xf(x.begin(), x.end());
  CHECK(argsort(r.from_vector(xf, Shape{9}, D0), 0, true).to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{3, 1, 6, 2, 4, 8, 5, 0, 7});
  std::vector<f16> xh;
  for (double d : x) xh.push_back(f16(static_cast<float>(d)));
  CHECK(argsort(r.from_vector(xh, Shape{9}, D0)).to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{5, 2, 4, 8, 1, 6, 3, 0, 7});
}

TEST_CASE("sort: every kind of dtype, extremes of the integer ranges") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  const auto u =
      r.from_vector(std::vector<std::uint64_t>{top, 0, top - 1, 1ULL << 63}, Shape{4}, D0);
  CHECK(sort(u).values.to_data().to_vector<std::uint64_t>() ==
        std::vector<std::uint64_t>{0, 1ULL << 63, top - 1, top});
  const auto i8 = r.from_vector(std::vector<std::int8_t>{5, -128, 127, -1, 5}, Shape{5}, D0);
  CHECK(argsort(i8, 0, true).to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{2, 0, 4, 3, 1});
  const auto b = r.from_vector(std::vector<bool>{true, false, true, false}, Shape{4}, D0);
  const auto sb = sort(b);
  CHECK(sb.values.dtype() == DType::boolean);
  CHECK(sb.values.to_data().to_vector<int>() == std::vector<int>{0, 0, 1, 1});
  CHECK(sb.indices.to_data().to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 3, 0, 2});
  const auto i64 =
      r.from_vector(std::vector<std::int64_t>{(1LL << 62) + 1, 1LL << 62}, Shape{2}, D0);
  CHECK(argsort(i64).to_data().to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
}

TEST_CASE("sort: long rows (merged from chunks sorted in parallel) and strided rows") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  // One row of 300,001 floats with many ties (the parallel chunk-and-merge path).
  const std::int64_t n = 300001;
  std::vector<float> x(static_cast<std::size_t>(n));
  std::uint32_t s = 12345;
  for (auto& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>((s >> 8) % 1000) - 500.0f;
  }
  x[777] = std::numeric_limits<float>::quiet_NaN();
  const auto t = r.from_vector(x, Shape{n}, D0);
  for (bool desc : {false, true}) {
    INFO((desc ? "descending" : "ascending"));
    const auto want = ref_argsort(x, 1, n, 1, desc);
    CHECK(argsort(t, 0, desc).to_data().to_vector<std::int64_t>() == want);
    const auto tk = topk(t, 100, 0, desc);
    CHECK(tk.indices.to_data().to_vector<std::int64_t>() ==
          std::vector<std::int64_t>(want.begin(), want.begin() + 100));
  }
  // 40 rows of 3,000 along dim 0 of [3000, 40]: strided rows, several at once.
  std::vector<std::int32_t> y(3000 * 40);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<std::int32_t>((i * 2654435761u) % 97);
  const auto ty = r.from_vector(y, Shape{3000, 40}, CpuDevice{1});
  CHECK(argsort(ty, 0).to_data().to_vector<std::int64_t>() == ref_argsort(y, 1, 3000, 40, false));
}

TEST_CASE("topk: the k largest or smallest in order, ties by index, NaN last") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const std::vector<double> x{3, 1, kNaN, 4, 1, 5, 9, 2, 6, 5};
  const auto t = r.from_vector(x, Shape{2, 5}, D0);
  const auto [v, i] = topk(t, 3);
  CHECK(v.shape() == Shape{2, 3});
  CHECK(i.to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{3, 0, 1, 1, 3, 0});  // 5 at 0 before 5 at 4
  CHECK(v.to_data().to_vector<double>() == std::vector<double>{4, 3, 1, 9, 6, 5});
  const auto lo = topk(t, 2, 1, false);
  CHECK(lo.indices.to_data().to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 4, 2, 0});
  // Along dim 0 (k = the whole dim): the NaN of column 2 comes after its 2.
  const auto d0 = topk(t, 2, 0);
  CHECK(d0.indices.to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{1, 1, 1, 1, 1, 0, 0, 0, 0, 0});
  CHECK(topk(t, 0, 1).values.shape() == Shape{2, 0});
  REQUIRE_THROWS_MATCHES(topk(t, 6, 1), ValueError,
                         Says("topk: k = 6 is out of range for dim 1 of shape [2, 5] (0 to 5)"));
  REQUIRE_THROWS_MATCHES(topk(t, -1), ValueError, Says("topk: k = -1"));
  REQUIRE_THROWS_MATCHES(argsort(t, 2), IndexError, Says("argsort"));
  const auto q = quantize_dynamic(r.from_vector(std::vector<float>(32, 1.0f), Shape{32}, D0),
                                  quant::Scheme::of(quant::ValueType::i8));
  REQUIRE_THROWS_MATCHES(sort(q), DTypeError, Says("sort"));
}

TEST_CASE("cummax and cummin with indices: the latest of equal extremes, the latest NaN") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto f = r.from_vector(std::vector<double>{1, 3, 3, 2, kNaN, 7, kNaN, 0}, Shape{8}, D0);
  const auto [mv, mi] = cummax_with_indices(f, 0);
  CHECK(mi.to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{0, 1, 2, 2, 4, 4, 6, 6});
  const auto mvv = mv.to_data().to_vector<double>();
  CHECK((mvv[3] == 3 && std::isnan(mvv[4]) && std::isnan(mvv[7])));
  CHECK(cummin_with_indices(f, 0).indices.to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{0, 0, 0, 0, 4, 4, 6, 6});
  // Integers along both dims of [3, 4] against a running loop (>= for max, <= for min).
  const std::vector<std::int32_t> x{2, 5, 5, 1, 7, 5, 0, 1, 7, 9, 0, 3};
  const auto t = r.from_vector(x, Shape{3, 4}, D0);
  for (std::int64_t d : {0, 1})
    for (bool is_max : {true, false}) {
      INFO("dim " << d << (is_max ? " cummax" : " cummin"));
      const std::int64_t outer = d == 0 ? 1 : 3, n = d == 0 ? 3 : 4, inner = d == 0 ? 4 : 1;
      std::vector<std::int32_t> wv(x.size());
      std::vector<std::int64_t> wi(x.size());
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t c = 0; c < inner; ++c)
          for (std::int64_t j = 0; j < n; ++j) {
            const auto at = static_cast<std::size_t>((o * n + j) * inner + c);
            const auto prev = at - static_cast<std::size_t>(inner);
            const bool take_it = j == 0 || (is_max ? x[at] >= wv[prev] : x[at] <= wv[prev]);
            wv[at] = take_it ? x[at] : wv[prev];
            wi[at] = take_it ? j : wi[prev];
          }
      const auto got = is_max ? cummax_with_indices(t, d) : cummin_with_indices(t, d);
      CHECK(got.values.to_data().to_vector<std::int32_t>() == wv);
      CHECK(got.indices.to_data().to_vector<std::int64_t>() == wi);
    }
}

TEST_CASE("sort and topk of 0-d and empty tensors, and what the router records") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode, .trace = true});
  const auto s = r.from_vector(std::vector<float>{4.5f}, Shape{}, D0);
  CHECK(argsort(s).shape() == Shape{});
  CHECK(argsort(s).to_data().to_vector<std::int64_t>() == std::vector<std::int64_t>{0});
  CHECK(sort(s).values.to_data().to_vector<float>() == std::vector<float>{4.5f});
  CHECK(topk(s, 1).indices.shape() == Shape{});
  CHECK(topk(s, 0).values.shape() == Shape{0});
  CHECK(cummax_with_indices(s, 0).indices.to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{0});
  const auto e = r.zeros(Shape{0, 3}, DType::f32, D0);
  CHECK(argsort(e, 0).shape() == Shape{0, 3});
  CHECK(sort(e, 1).values.shape() == Shape{0, 3});
  CHECK(topk(e, 0, 0).indices.shape() == Shape{0, 3});
  CHECK(cummin_with_indices(e, 1).indices.shape() == Shape{0, 3});
  // Empty with a huge dim: no index table of 2^40 entries (found by fuzz_ops).
  const auto huge = r.zeros(Shape{0, std::int64_t{1} << 40}, DType::f32, D0);
  const auto [hv, hi] = cummax_with_indices(huge, 1);
  CHECK(hv.shape() == huge.shape());
  CHECK(hi.shape() == huge.shape());
  CHECK(hi.dtype() == DType::i64);
  r.sync();
  bool seen = false;
  for (const auto& ev : r.trace())
    if (ev.phase == TraceEvent::Phase::op && ev.name == "argsort") seen = true;
  CHECK(seen);
  CHECK(fmt::format("{}", Op{op::Argsort{TensorRef{1, Shape{4}, DType::f32}, 0, true, 2,
                                         TensorRef{2, Shape{2}, DType::i64}}}) ==
        "argsort(t1:f32[4], dim 0, descending, k 2) -> t2:i64[2]");
}

TEST_CASE("sort runs on a bridge member that has the kernel, and one without says so") {
  using Both = Multi<EigenCpu, mini::Backend>;
  Router<Both> r(Both(EigenCpu(1), mini::Backend{}));
  const auto x = r.from_vector(std::vector<float>{2, 1, 3}, Shape{3}, Both::Device{D0});
  CHECK(sort(x).values.to_data().to_vector<float>() == std::vector<float>{1, 2, 3});
  const auto m = x.to(Both::Device{mini::Device{0}});
  REQUIRE_THROWS_MATCHES(argsort(m).to_data(), Error, Says("argsort"));
}

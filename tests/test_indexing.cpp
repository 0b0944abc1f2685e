// scatter and scatter_add (EigenCpu's kernel through the router), select_assign/index_add,
// one_hot, unfold and slices with negative steps, in both execution modes, against loops
// computed here: every dim, repeated indices, wrap-around, f16 rounding, 0-d and empty
// tensors, and the errors.
#include <catch2/catch.hpp>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <limits>
#include <vector>

#include "matchers.hpp"

using namespace ferry;
using ferry_test::Says;

namespace {
using R = Router<EigenCpu>;
constexpr CpuDevice D0{0};

/// Row-major coordinates of flat position p in `dims`.
std::vector<std::int64_t> unravel(std::int64_t p, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> c(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    c[d] = p % dims[d];
    p /= dims[d];
  }
  return c;
}
std::int64_t ravel(const std::vector<std::int64_t>& c, const std::vector<std::int64_t>& dims) {
  std::int64_t p = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) p = p * dims[d] + c[d];
  return p;
}
}  // namespace

TEST_CASE("scatter and scatter_add along every dim match a loop over the index") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(2), {.execution = mode});
  const std::vector<std::int64_t> xd{3, 4, 5}, id{2, 3, 4}, sd{3, 4, 4};
  std::vector<double> x(60), src(48);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i) * 0.5;
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = 1000.0 + static_cast<double>(i);
  const auto tx = r.from_vector(x, Shape{3, 4, 5}, D0);
  const auto ts = r.from_vector(src, Shape{3, 4, 4}, D0);
  for (std::int64_t d = 0; d < 3; ++d) {
    INFO("dim " << d);
    std::vector<std::int64_t> idx(24);
    for (std::size_t i = 0; i < idx.size(); ++i)
      idx[i] = static_cast<std::int64_t>((i * 7 + 1) % static_cast<std::size_t>(xd[d]));
    const auto ti = r.from_vector(idx, Shape{2, 3, 4}, D0);
    std::vector<double> ws = x, wa = x;
    for (std::int64_t p = 0; p < 24; ++p) {  // row-major: the last repeated write wins
      auto c = unravel(p, id);
      const double v = src[static_cast<std::size_t>(ravel(c, sd))];
      c[static_cast<std::size_t>(d)] = idx[static_cast<std::size_t>(p)];
      ws[static_cast<std::size_t>(ravel(c, xd))] = v;
      wa[static_cast<std::size_t>(ravel(c, xd))] += v;
    }
    CHECK(scatter(tx, d, ti, ts).to_data().to_vector<double>() == ws);
    CHECK(scatter_add(tx, d - 3, ti, ts).to_data().to_vector<double>() == wa);
  }
  CHECK(tx.to_data().to_vector<double>() == x);  // the operand itself is unchanged
}

TEST_CASE("scatter: a scalar, integers wrap, f16 rounds each add, bool assigns") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto idx = r.from_vector(std::vector<std::int32_t>{2, 0, 2}, Shape{3}, D0);
  const auto x = r.from_vector(std::vector<std::int8_t>{1, 2, 3}, Shape{3}, D0);
  CHECK(scatter(x, 0, idx, Scalar(-7)).to_data().to_vector<std::int8_t>() ==
        std::vector<std::int8_t>{-7, 2, -7});
  const auto big = r.from_vector(std::vector<std::int8_t>{100, 1, 100}, Shape{3}, D0);
  CHECK(scatter_add(x, 0, idx, big).to_data().to_vector<std::int8_t>() ==
        std::vector<std::int8_t>{2, 2, -53});  // 3 + 100 + 100 = 203 wraps to -53
  // f16: 2048 + 1 + 1, one rounding per add (to even: 2048 each time).
  const auto h = r.from_vector(std::vector<f16>{f16(2048.0f)}, Shape{1}, D0);
  const auto hi = r.from_vector(std::vector<std::int64_t>{0, 0}, Shape{2}, D0);
  const auto ones = r.from_vector(std::vector<f16>{f16(1.0f), f16(1.0f)}, Shape{2}, D0);
  CHECK(scatter_add(h, 0, hi, ones).to_data().to_vector<f16>()[0].bits == f16(2048.0f).bits);
  const auto b = r.from_vector(std::vector<bool>{false, false, false}, Shape{3}, D0);
  CHECK(scatter(b, 0, idx, Scalar(true)).to_data().to_vector<int>() == std::vector<int>{1, 0, 1});
  REQUIRE_THROWS_MATCHES(scatter_add(b, 0, idx, b), DTypeError, Says("scatter_add"));
}

TEST_CASE("scatter: bad shapes and dtypes at the call, bad index values at the read") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto x = r.zeros({2, 3}, DType::f32, D0);
  const auto i = r.from_vector(std::vector<std::int64_t>{0, 1, 0}, Shape{1, 3}, D0);
  REQUIRE_THROWS_MATCHES(scatter(x, 0, i, r.zeros({1, 2}, DType::f32, D0)), ShapeError,
                         Says("scatter: index of shape [1, 3] must have the rank of [2, 3]"));
  REQUIRE_THROWS_MATCHES(scatter(x, 0, i, r.zeros({2, 3}, DType::f64, D0)), DTypeError,
                         Says("scatter"));
  REQUIRE_THROWS_MATCHES(scatter(x, 0, cast(i, DType::f32), x), DTypeError, Says("scatter"));
  REQUIRE_THROWS_MATCHES(scatter(x, 2, i, x), IndexError, Says("scatter"));
  const auto bad = r.from_vector(std::vector<std::int64_t>{0, -1, 0}, Shape{1, 3}, D0);
  // Inline: raised by the call; async: by the read.
  REQUIRE_THROWS_MATCHES(scatter(x, 0, bad, x).to_data(), Error,
                         Says("scatter: index -1 is out of range for dim 0 of size 2"));
}

TEST_CASE("select_assign (index_add) adds source slices at the indices, repeats included") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto x = r.from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{3, 2}, D0);
  const auto i = r.from_vector(std::vector<std::int64_t>{2, 0, 2}, Shape{3}, D0);
  const auto s = r.from_vector(std::vector<float>{10, 20, 30, 40, 50, 60}, Shape{3, 2}, D0);
  CHECK(select_assign(x, 0, i, s).to_data().to_vector<float>() ==
        std::vector<float>{31, 42, 3, 4, 65, 86});
  const auto s1 = r.from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, Shape{3, 3}, D0);
  CHECK(index_add(x, 1, r.from_vector(std::vector<std::int32_t>{1, 1, 0}, Shape{3}, D0), s1)
            .to_data()
            .to_vector<float>() == std::vector<float>{4, 5, 9, 13, 14, 21});
  REQUIRE_THROWS_MATCHES(select_assign(x, 0, i, r.zeros({2, 2}, DType::f32, D0)), ShapeError,
                         Says("select_assign: source of shape [2, 2] must be [3, 2]"));
}

TEST_CASE("one_hot: a 1 at each index value, in the dtype asked for") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  const auto i = r.from_vector(std::vector<std::int64_t>{2, 0, 1, 2}, Shape{2, 2}, D0);
  const auto h = one_hot(i, 3);
  CHECK(h.shape() == Shape{2, 2, 3});
  CHECK(h.dtype() == DType::i64);
  CHECK(h.to_data().to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(one_hot(i, 4, DType::f32).to_data().to_vector<float>()[2] == 1.0f);
  CHECK(one_hot(r.from_vector(std::vector<std::int32_t>{}, Shape{0}, D0), 5).shape() ==
        Shape{0, 5});
  REQUIRE_THROWS_MATCHES(one_hot(i, -1), ValueError, Says("one_hot: num_classes must be >= 0"));
  REQUIRE_THROWS_MATCHES(one_hot(cast(i, DType::f32), 3), DTypeError, Says("one_hot"));
  REQUIRE_THROWS_MATCHES(one_hot(i, 2).to_data(), Error,
                         Says("scatter: index 2 is out of range for dim 2 of size 2"));
}

TEST_CASE("unfold: windows of size elements, step apart, as a new last dim") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  std::vector<std::int32_t> v(2 * 7);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i);
  const auto x = r.from_vector(v, Shape{2, 7}, D0);
  const auto u = unfold(x, 1, 3, 2);  // windows 0-2, 2-4, 4-6
  CHECK(u.shape() == Shape{2, 3, 3});
  CHECK(u.to_data().to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{0, 1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 9, 9, 10, 11, 11, 12, 13});
  const auto u0 = unfold(x, 0, 2, 1);  // [1, 7, 2]: the pairs (x[0][j], x[1][j])
  CHECK(u0.shape() == Shape{1, 7, 2});
  CHECK(u0.to_data().to_vector<std::int32_t>()[0] == 0);
  CHECK(u0.to_data().to_vector<std::int32_t>()[1] == 7);
  CHECK(unfold(x, -1, 7, 5).shape() == Shape{2, 1, 7});
  CHECK(unfold(x, 1, 0, 3).shape() == Shape{2, 3, 0});
  REQUIRE_THROWS_MATCHES(unfold(x, 1, 8, 1), ValueError, Says("unfold: size 8 must be in [0, 7]"));
  REQUIRE_THROWS_MATCHES(unfold(x, 1, 2, 0), ValueError, Says("unfold: step must be >= 1"));
}

TEST_CASE("slice with negative steps reads the range backwards, as burn's s![a..b; -k]") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  std::vector<float> v(10);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const auto x = r.from_vector(v, Shape{10}, D0);
  CHECK(slice(x, {Range{0, 5, -2}}).to_data().to_vector<float>() == std::vector<float>{4, 2, 0});
  CHECK(slice(x, {Range{0, 10, -1}}).to_data().to_vector<float>() ==
        std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(slice(x, {Range{1, 10, -3}}).to_data().to_vector<float>() == std::vector<float>{9, 6, 3});
  CHECK(slice(x, {Range{-3, 10, -1}}).to_data().to_vector<float>() == std::vector<float>{9, 8, 7});
  CHECK(slice(x, {Range{5, 5, -1}}).shape() == Shape{0});
  const auto m = reshape(x, Shape{2, 5});
  CHECK(slice(m, {Range{0, 2, -1}, Range{0, 5, 2}}).to_data().to_vector<float>() ==
        std::vector<float>{5, 7, 9, 0, 2, 4});
  REQUIRE_THROWS_MATCHES(slice(x, {Range{0, 5, 0}}), IndexError, Says("step 0"));
  REQUIRE_THROWS_MATCHES(slice(x, {Range{0, 5, std::numeric_limits<std::int64_t>::min()}}),
                         IndexError, Says("slice"));
  // A quantized tensor slices backwards too, by step -1 (q_slice, then q_flip).
  const auto q =
      quantize_dynamic(r.from_vector(v, Shape{10}, D0), quant::Scheme::of(quant::ValueType::i8));
  const auto d = dequantize(q).to_data().to_vector<float>();
  CHECK(dequantize(slice(q, {Range{2, 5, -1}})).to_data().to_vector<float>() ==
        std::vector<float>{d[4], d[3], d[2]});
}

TEST_CASE("gather_nd and scatter_nd: slices at index tuples, as ONNX GatherND / ScatterND") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  R r(EigenCpu(1), {.execution = mode});
  std::vector<std::int32_t> v(2 * 3 * 4);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i);
  const auto x = r.from_vector(v, Shape{2, 3, 4}, D0);
  // m = 2: tuples (1, 2) and (0, 1) name rows of 4.
  const auto i2 = r.from_vector(std::vector<std::int64_t>{1, 2, 0, 1}, Shape{2, 2}, D0);
  const auto g = gather_nd(x, i2);
  CHECK(g.shape() == Shape{2, 4});
  CHECK(g.to_data().to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{20, 21, 22, 23, 4, 5, 6, 7});
  // m = 3: single elements, the index's leading dims kept ([2, 1, 3] -> [2, 1]).
  const auto i3 = r.from_vector(std::vector<std::int32_t>{1, 0, 3, 0, 2, 1}, Shape{2, 1, 3}, D0);
  CHECK(gather_nd(x, i3).shape() == Shape{2, 1});
  CHECK(gather_nd(x, i3).to_data().to_vector<std::int32_t>() == std::vector<std::int32_t>{15, 9});
  // m = 0: the whole tensor per tuple.
  CHECK(gather_nd(x, r.zeros({3, 0}, DType::i64, D0)).shape() == Shape{3, 2, 3, 4});
  // scatter_nd writes the rows; a repeated tuple's last write wins; scatter_nd_add sums them.
  const auto rep = r.from_vector(std::vector<std::int64_t>{0, 1, 0, 1}, Shape{2, 2}, D0);
  std::vector<std::int32_t> u(8);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = 100 + static_cast<std::int32_t>(i);
  const auto up = r.from_vector(u, Shape{2, 4}, D0);
  std::vector<std::int32_t> ws = v, wa = v;
  for (std::size_t j = 0; j < 4; ++j) {
    ws[4 + j] = u[4 + j];
    wa[4 + j] += u[j] + u[4 + j];
  }
  CHECK(scatter_nd(x, rep, up).to_data().to_vector<std::int32_t>() == ws);
  CHECK(scatter_nd_add(x, rep, up).to_data().to_vector<std::int32_t>() == wa);
  CHECK(x.to_data().to_vector<std::int32_t>() == v);
  // Errors: shapes and dtypes at the call, coordinates at the read.
  REQUIRE_THROWS_MATCHES(gather_nd(x, r.zeros({2, 4}, DType::i64, D0)), ShapeError,
                         Says("gather_nd: index of shape [2, 4] needs a last dim of at most"));
  REQUIRE_THROWS_MATCHES(scatter_nd(x, i2, r.zeros({2, 3}, DType::i32, D0)), ShapeError,
                         Says("scatter_nd: updates of shape [2, 3] must be [2, 4]"));
  REQUIRE_THROWS_MATCHES(scatter_nd_add(cast(x, DType::boolean), i2, cast(up, DType::boolean)),
                         DTypeError, Says("scatter_nd_add"));
  const auto bad = r.from_vector(std::vector<std::int64_t>{1, 3}, Shape{1, 2}, D0);
  REQUIRE_THROWS_MATCHES(gather_nd(x, bad).to_data(), Error,
                         Says("gather_nd: index 3 (coordinate 1 of tuple 0) is out of range for "
                              "dim 1 of size 3"));
  REQUIRE_THROWS_MATCHES(scatter_nd(x, bad, r.zeros({1, 4}, DType::i32, D0)).to_data(), Error,
                         Says("scatter_nd: index 3"));
}

// Every op with empty dims, on a backend in poison mode (every buffer handed to a kernel is
// 0xFF bytes first: NaN / -1), both execution modes: a kernel that leaves any output element
// unwritten, or reads one it did not write, shows here as NaN or -1 instead of the zeros a
// fresh page would give. Plus the sizes at the limits of int64 that are valid (empty tensors
// with huge dims, steps and blocks near 2^63), with values computed by hand.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ops_support.hpp"

using namespace ops_test;
using ferry::PadMode;
using ferry::Range;
using ferry::Scalar;
using ferry::quant::Scheme;
using ferry::quant::ValueType;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t k62 = std::int64_t{1} << 62;

/// A router on a poisoned two-device backend whose caches already hold freed buffers of
/// distinctive values, so a recycled buffer would show them if poison mode were off.
struct Poisoned {
  explicit Poisoned(ferry::Execution m) : r(make_backend(), {.execution = m}) {
    for (const auto& d : r.devices()) {
      auto junk = r.full({4096}, 42.0, DType::f32, d);
      (void)junk.to_data();
    }
    r.sync();
  }
  static Cpu make_backend() {
    Cpu b(2);
    b.set_poison_memory(true);
    return b;
  }
  R r;
};

template <class V>
void same(const T& t, const Dims& dims, const std::vector<V>& want) {
  check_meta(t, dims, ferry::dtype_of<V>);
  const auto got = read<V>(t);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(want[i]))
        CHECK(std::isnan(got[i]));
      else
        CHECK(got[i] == want[i]);
    } else {
      CHECK(got[i] == want[i]);
    }
  }
}

}  // namespace

TEST_CASE("poison mode fills every handed-out block and sized vector with 0xFF",
          "[empty][poison]") {
  ferry::detail::cpu::MemoryCache cache(1 << 20);
  cache.set_poison(true);
  std::byte* p = cache.take_block(256);
  for (int i = 0; i < 256; ++i) p[i] = std::byte{7};
  cache.give_block(p, 256);
  std::byte* q = cache.take_block(256);  // the same block, recycled
  REQUIRE(q == p);
  for (int i = 0; i < 256; ++i) REQUIRE(q[i] == std::byte{0xFF});
  cache.give_block(q, 256);
  auto v = cache.take_sized_vector(100);
  for (auto b : v) REQUIRE(b == std::byte{0xFF});
  cache.give_vector(std::move(v));
  cache.set_poison(false);
  std::byte* z = cache.take_block(256);  // recycled as is without poison
  REQUIRE(z[0] == std::byte{0xFF});
  cache.give_block(z, 256);
  Cpu b(1);
  b.set_poison_memory(true);
  REQUIRE(b.poison_memory());
}

TEST_CASE("every op on empty dims: right shapes, and every written element right", "[empty]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  INFO("execution: " << mode_name(mode));
  Poisoned p(mode);
  R& r = p.r;
  std::set<std::string> covered;  // op structs of ir.hpp this case ran
  auto ran = [&](std::initializer_list<const char*> ops) {
    covered.insert(ops.begin(), ops.end());
  };

  const T e03 = make(r, std::vector<float>{}, {0, 3});  // [0, 3]
  const T x23 = make(r, std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  ran({"FromData", "Read"});
  same<float>(e03, {0, 3}, {});

  same<float>(r.zeros({0, 4}, DType::f32, D0), {0, 4}, {});
  same<std::int64_t>(r.arange(0, 0, 1, DType::i64, D0), {0}, {});
  same<float>(r.random_uniform({2, 0}, 1, D0), {2, 0}, {});
  same<std::int64_t>(r.random_int({0, 2}, 0, 5, 1, D0), {0, 2}, {});
  ran({"Full", "Arange", "Random", "RandomInt"});

  same<float>(exp(e03), {0, 3}, {});
  same<float>(e03 + make(r, std::vector<float>{1, 2, 3}, {1, 3}), {0, 3}, {});
  same<float>(make(r, std::vector<float>{}, {0, 1}) * slice(x23, {Range{0, 1}}), {0, 3}, {});
  same<float>(e03 * 2.0f, {0, 3}, {});
  same<float>(clamp(e03, 0.0, 1.0), {0, 3}, {});
  same<float>(where(make_bool(r, {}, {0, 3}), e03, e03), {0, 3}, {});
  same<std::int32_t>(cast(e03, DType::i32), {0, 3}, {});
  ran({"Unary", "Binary", "BinaryScalar", "Clamp", "Where", "Cast"});

  // Reductions over no elements: the identity of the op, in every output element.
  same<float>(sum(e03), {}, {0.0f});
  same<float>(sum(e03, 0), {3}, {0, 0, 0});
  same<float>(prod(e03, 0, true), {1, 3}, {1, 1, 1});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  same<float>(mean(e03, 0), {3}, {nan, nan, nan});  // 0 / 0, as torch.mean
  same<float>(sum(e03, 1), {0}, {});
  same<float>(max(e03, 1), {0}, {});
  same<std::int64_t>(argmax(e03, 1), {0}, {});
  // A 0 dim beside a non-empty reduced one: no output rows (its grain divided by 0: fuzz_ops).
  same<std::int64_t>(argmin(r.zeros({2, 3, 0}, DType::f32, D0), 1), {2, 0}, {});
  same<float>(max(r.zeros({2, 3, 0}, DType::f32, D0), 1, true), {2, 1, 0}, {});
  same<std::int64_t>(sum(cast(e03, DType::i32), 0), {3}, {0, 0, 0});  // i64, as torch
  ran({"Reduce"});

  // Scans of nothing: empty, along the empty dim or beside it; integers as i64.
  same<float>(cumsum(e03, 0), {0, 3}, {});
  same<float>(cummax(e03, 1), {0, 3}, {});
  same<float>(cumprod(r.zeros({2, 3, 0}, DType::f32, D0), 1), {2, 3, 0}, {});
  same<std::int64_t>(cumsum(cast(e03, DType::i32), 1), {0, 3}, {});
  ran({"Scan"});

  // Softmax of nothing (the fused op; a backend without it returns the tensor unrecorded).
  same<float>(softmax(e03, 0), {0, 3}, {});
  same<float>(log_softmax(r.zeros({2, 3, 0}, DType::f32, D0), 1), {2, 3, 0}, {});
  ran({"Softmax"});

  // Attention over nothing: no queries gives no rows; no keys gives zeros (empty weights times
  // an empty v), with and without a mask; an empty batch gives an empty batch.
  same<float>(attention(r.zeros({0, 4}, DType::f32, D0), r.zeros({3, 4}, DType::f32, D0),
                        r.zeros({3, 2}, DType::f32, D0)),
              {0, 2}, {});
  same<float>(attention(r.ones({2, 4}, DType::f32, D0), r.zeros({0, 4}, DType::f32, D0),
                        r.zeros({0, 2}, DType::f32, D0), r.zeros({2, 0}, DType::f32, D0)),
              {2, 2}, {0.f, 0.f, 0.f, 0.f});
  same<float>(attention(r.ones({0, 2, 4}, DType::f32, D0), r.ones({0, 3, 4}, DType::f32, D0),
                        r.ones({0, 3, 5}, DType::f32, D0), std::nullopt, true),
              {0, 2, 5}, {});
  ran({"Attention"});

  // Sorts of nothing: the indices of an empty dim, or of rows beside an empty dim; k = 0.
  same<std::int64_t>(argsort(e03, 0), {0, 3}, {});
  same<std::int64_t>(argsort(e03, 1, true), {0, 3}, {});
  same<std::int64_t>(topk(r.ones({2, 3}, DType::f32, D0), 0, 1).indices, {2, 0}, {});
  ran({"Argsort"});

  // matmul with K == 0 is all zeros (each output is an empty sum); with M or N 0, empty.
  same<float>(matmul(make(r, std::vector<float>{}, {2, 0}), make(r, std::vector<float>{}, {0, 3})),
              {2, 3}, std::vector<float>(6, 0.0f));
  same<std::int64_t>(
      matmul(make(r, std::vector<std::int64_t>{}, {2, 2, 0}), r.zeros({0, 2}, DType::i64, D0)),
      {2, 2, 2}, std::vector<std::int64_t>(8, 0));
  same<float>(matmul(e03, make(r, std::vector<float>(6, 1.0f), {3, 2})), {0, 2}, {});
  ran({"Matmul"});

  same<float>(reshape(e03, {3, 0}), {3, 0}, {});
  same<float>(permute(e03, {1, 0}), {3, 0}, {});
  same<float>(flip(e03, {0, 1}), {0, 3}, {});
  same<float>(expand(make(r, std::vector<float>{1, 2, 3}, {1, 3}), {0, 3}), {0, 3}, {});
  same<float>(slice(x23, {Range{1, 1}}), {0, 3}, {});
  same<float>(slice_assign(x23, {Range{0, 2}, Range{2, 2}}, make(r, std::vector<float>{}, {2, 0})),
              {2, 3}, {1, 2, 3, 4, 5, 6});
  same<float>(cat(std::vector<T>{e03, x23, e03}, 0), {2, 3}, {1, 2, 3, 4, 5, 6});
  same<float>(gather(x23, 1, make(r, std::vector<std::int64_t>{}, {2, 0})), {2, 0}, {});
  same<float>(index_select(x23, 0, make(r, std::vector<std::int64_t>{}, {0})), {0, 3}, {});
  same<float>(repeat(x23, {0, 2}), {0, 6}, {});
  ran({"Reshape", "Permute", "Flip", "Expand", "Slice", "SliceAssign", "Cat", "Gather",
       "IndexSelect", "Repeat"});

  // Scatters of nothing: an empty index writes nothing; an empty tensor takes an empty index.
  same<float>(scatter(r.ones({2, 3}, DType::f32, D0), 1, r.zeros({2, 0}, DType::i64, D0),
                      r.zeros({2, 0}, DType::f32, D0)),
              {2, 3}, std::vector<float>(6, 1.0f));
  same<float>(scatter_add(e03, 0, r.zeros({0, 3}, DType::i64, D0), e03), {0, 3}, {});
  same<float>(gather_nd(e03, r.zeros({0, 1}, DType::i64, D0)), {0, 3}, {});
  same<float>(scatter_nd(e03, r.zeros({0, 1}, DType::i64, D0), r.zeros({0, 3}, DType::f32, D0)),
              {0, 3}, {});
  ran({"Scatter", "GatherNd", "ScatterNd"});

  // Quantized: empty [0, 64] through every quantized op, and the K == 0 matmul the issue found
  // returning an earlier buffer's values.
  const Scheme i4 = Scheme::of(ValueType::i4).per_block({32}).packed_u8();
  const T qe = quantize_dynamic(make(r, std::vector<float>{}, {0, 64}), i4);
  const T qs = quantize(make(r, std::vector<float>{}, {0, 64}), Scheme::of(ValueType::i8), {0.5f});
  same<float>(dequantize(qe), {0, 64}, {});
  same<float>(dequantize(qs), {0, 64}, {});
  const auto parts = qe.to_parts();
  REQUIRE(parts.data.empty());
  REQUIRE(parts.scales.empty());
  const T back = r.q_from_parts(parts, D1);
  REQUIRE(back.to_parts() == parts);
  same<float>(dequantize(q_reshape(qe, {1, 0, 64})), {1, 0, 64}, {});
  same<float>(dequantize(q_reshape(qs, {64, 0})), {64, 0}, {});
  same<float>(dequantize(q_permute(qe, {1, 0})), {64, 0}, {});
  same<float>(dequantize(q_flip(qe, {0})), {0, 64}, {});
  same<float>(dequantize(q_slice(qe, {Range{0, 0}, Range{0, 32}})), {0, 32}, {});
  same<float>(matmul(make(r, std::vector<float>{}, {2, 0}), qe), {2, 64},
              std::vector<float>(128, 0.0f));
  same<double>(matmul(make(r, std::vector<double>{}, {1, 2, 0}), qe), {1, 2, 64},
               std::vector<double>(128, 0.0));
  const T q64 = quantize_dynamic(make(r, std::vector<float>(64 * 8, 1.0f), {64, 8}), i4);
  same<float>(matmul(make(r, std::vector<float>{}, {0, 64}), q64), {0, 8}, {});
  // linear's layout: no outputs ([0, 64] as [N, K]), no inputs (K == 0: zeros), no rows.
  same<float>(linear(make(r, std::vector<float>(128, 1.0f), {2, 64}), qe), {2, 0}, {});
  same<float>(linear(make(r, std::vector<float>{}, {2, 0}), q_permute(qe, {1, 0})), {2, 64},
              std::vector<float>(128, 0.0f));
  same<float>(linear(make(r, std::vector<float>{}, {0, 8}), q64), {0, 64}, {});
  ran({"Quantize", "QuantizeDynamic", "Dequantize", "QFromParts", "QReshape", "QPermute", "QFlip",
       "QSlice", "QMatmul", "QLinear"});

  // Moves of empty tensors of every kind, and drops.
  same<float>(e03.to(D1), {0, 3}, {});
  REQUIRE(qe.to(D1).to_parts() == parts);
  { const T gone = e03 + e03; }
  ran({"ToDevice", "Drop"});
  REQUIRE_NOTHROW(r.sync());

  std::vector<std::string> missing;
#define FERRY_TEST_OP_NAME(T) \
  if (!covered.count(#T)) missing.emplace_back(#T);
  FERRY_OP_TYPES(FERRY_TEST_OP_NAME)
#undef FERRY_TEST_OP_NAME
  INFO("ops of ir.hpp not run on empty dims here: " << ::ferry::detail::joined(missing));
  CHECK(missing.empty());
}

TEST_CASE("integer sum and prod accumulate in and return i64, as torch and numpy",
          "[empty][ints]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  Poisoned p(mode);
  R& r = p.r;
  constexpr std::int32_t mx = std::numeric_limits<std::int32_t>::max();
  const T a = make(r, std::vector<std::int32_t>{mx, 1, mx, mx, 2, -3}, {2, 3});
  same<std::int64_t>(sum(make(r, std::vector<std::int32_t>{mx, 1}, {2})), {},
                     {std::int64_t{1} << 31});
  same<std::int64_t>(sum(a, 1), {2}, {std::int64_t{mx} + 1 + mx, std::int64_t{mx} - 1});
  same<std::int64_t>(sum(a, 0, true), {1, 3},
                     {std::int64_t{mx} + mx, std::int64_t{3}, std::int64_t{mx} - 3});
  same<std::int64_t>(prod(a, 1), {2}, {std::int64_t{mx} * mx, -6 * std::int64_t{mx}});
  same<std::int64_t>(sum(make(r, std::vector<std::int32_t>{5}, {1, 1}), 0), {1}, {5});
  // i64 wraps modulo 2^64, never UB.
  constexpr std::int64_t m64 = std::numeric_limits<std::int64_t>::max();
  same<std::int64_t>(sum(make(r, std::vector<std::int64_t>{m64, 1}, {2})), {},
                     {std::numeric_limits<std::int64_t>::min()});
  // The scalar rule allows exact floats: 3.0 is an i32.
  same<std::int32_t>(clamp(a, 0, 3.0), {2, 3}, {3, 1, 3, 3, 2, 0});
  same<std::int32_t>(r.arange(-2.0, 5, 3, DType::i32, D0), {3}, {-2, 1, 4});
}

TEST_CASE("valid sizes at the limits of int64: empty tensors with huge dims, steps, blocks",
          "[empty][limits]") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  Poisoned p(mode);
  R& r = p.r;
  const T x23 = make(r, std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});

  // A zero dim makes any other dims fine: 0 elements, 0 bytes.
  const T huge = r.zeros({0, k62, k62}, DType::f64, D0);
  CHECK(huge.numel() == 0);
  same<double>(huge, {0, k62, k62}, {});
  same<double>(reshape(huge, {k62, 0, k62}), {k62, 0, k62}, {});
  same<double>(sum(r.zeros({k62, 0}, DType::f64, D0), 0), {0}, {});

  // Layout kernels walk an empty tensor with huge dims without forming a stride times a dim
  // (permuting [2, 0, 2^62] to [0, 2, 2^62] multiplied 2^62 by 2: found by fuzz_ops), and so
  // do the quantized ones over its param grid ([0, 2^62, 2] blocks).
  const T e = r.zeros({2, 0, k62}, DType::i32, D0);
  same<std::int32_t>(permute(e, {1, 0, 2}), {0, 2, k62}, {});
  same<std::int32_t>(flip(permute(e, {2, 0, 1}), {0, 1}), {k62, 2, 0}, {});
  same<std::int32_t>(repeat(e, {1, 3, 1}), {2, 0, k62}, {});
  const T qe = quantize_dynamic(r.zeros({0, k62, 8}, DType::f32, D0),
                                Scheme::of(ValueType::i8).per_block({1, 4}));
  same<float>(dequantize(q_permute(qe, {1, 0, 2})), {k62, 0, 8}, {});
  same<float>(dequantize(q_flip(q_permute(qe, {1, 0, 2}), {1})), {k62, 0, 8}, {});
  // Ops that build a host table along one dim build none for an empty tensor (cummax's index
  // table of 2^33 entries: found by fuzz_ops): triu/tril, reflect/replicate pad, cummax.
  const T f = r.zeros({0, k62}, DType::f32, D0);
  same<float>(triu(f), {0, k62}, {});
  same<float>(tril(r.zeros({k62, 0}, DType::f32, D0), 1), {k62, 0}, {});
  same<float>(pad(f, {3, 2}, PadMode::reflect), {0, k62 + 5}, {});
  same<float>(pad(f, {1, 0}, PadMode::replicate), {0, k62 + 1}, {});
  same<std::int64_t>(cummin_with_indices(f, 1).indices, {0, k62}, {});
  REQUIRE_THROWS_AS(pad(r.zeros({0, kMax - 1}, DType::f32, D0), {0, 2}, PadMode::replicate),
                    ferry::ShapeError);

  // Steps and bounds near 2^63: the slice is what Python's slicing gives.
  same<float>(slice(x23, {Range{0, 2, kMax}}), {1, 3}, {1, 2, 3});
  same<float>(slice(x23, {Range{1, kMax, kMax}, Range{-kMax, kMax, 2}}), {1, 2}, {4, 6});
  same<float>(slice(x23, {Range{std::numeric_limits<std::int64_t>::min(), kMax}}), {2, 3},
              {1, 2, 3, 4, 5, 6});
  CHECK(Range{0, kMax, kMax}.size() == 1);
  CHECK(Range{-kMax, kMax, 1}.size() == kMax);  // 2^64 - 2 values, saturated
  CHECK(Range{0, kMax, 2}.size() == (kMax - 1) / 2 + 1);

  // A block larger than the dim is one block along it: the same as a block of the dim.
  std::vector<float> w(2 * 64);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) - 6.0f;
  const T x = make(r, w, {2, 64});
  const auto big = quantize_dynamic(x, Scheme::of(ValueType::i8).per_block({kMax})).to_parts();
  const auto dim = quantize_dynamic(x, Scheme::of(ValueType::i8).per_block({64})).to_parts();
  CHECK(big.data == dim.data);
  CHECK(big.scales == dim.scales);
  CHECK(ferry::quant::param_shape(Scheme::of(ValueType::i8).per_block({kMax, kMax}),
                                  Shape{k62, 3}) == Shape{1, 1});

  // Packed byte counts of huge element counts, without forming numel * bits.
  using ferry::quant::data_bytes;
  using ferry::quant::Storage;
  CHECK(data_bytes(ValueType::i4, Storage::packed_u8, kMax) == std::size_t{1} << 62);
  CHECK(data_bytes(ValueType::i2, Storage::packed_u32, kMax) ==
        4 * ((static_cast<std::size_t>(kMax) / 16) + 1));
  CHECK(data_bytes(ValueType::i8, Storage::native, kMax) == static_cast<std::size_t>(kMax));
}

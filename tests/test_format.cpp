// Printing tensors as PyTorch does: notation, widths, line wrapping, summaries of large
// tensors, suffixes, quantized tensors and their parts.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <ferry/ferry.hpp>
#include <ferry/format.hpp>
#include <limits>
#include <sstream>

using ferry::CpuDevice;
using ferry::DType;
using ferry::EigenCpu;
using ferry::Router;
using ferry::TensorData;
namespace q = ferry::quant;

namespace {
constexpr CpuDevice d0{0};
Router<EigenCpu> router() {
  return Router<EigenCpu>(EigenCpu(1), ferry::RouterOptions{.execution = ferry::Execution::Inline});
}
}  // namespace

TEST_CASE("a small float tensor prints with 4 decimals, rows aligned under each other") {
  auto r = router();
  auto t = r.from_vector(std::vector<float>{1.5f, 2, 3, 4.25f}, {2, 2}, d0);
  REQUIRE(fmt::format("{}", t) ==
          "tensor([[1.5000, 2.0000],\n"
          "        [3.0000, 4.2500]], device=cpu:0, dtype=f32)");
  std::ostringstream os;
  os << t;
  REQUIRE(os.str() == fmt::format("{}", t));
}

TEST_CASE("float notation follows torch: integers, fixed, scientific, nan and inf") {
  auto r = router();
  auto f = [&](std::vector<float> v) {
    const auto n = static_cast<std::int64_t>(v.size());
    return fmt::format("{}", r.from_vector(v, {n}, d0));
  };
  REQUIRE(f({1, 2, 3}) == "tensor([1., 2., 3.], device=cpu:0, dtype=f32)");
  REQUIRE(f({-1, 20, 0}) == "tensor([-1., 20.,  0.], device=cpu:0, dtype=f32)");
  REQUIRE(f({0, 0}) == "tensor([0., 0.], device=cpu:0, dtype=f32)");
  REQUIRE(f({1e-5f, 1}) == "tensor([1.0000e-05, 1.0000e+00], device=cpu:0, dtype=f32)");
  REQUIRE(f({1, 2000}) == "tensor([1.0000e+00, 2.0000e+03], device=cpu:0, dtype=f32)");
  const float inf = std::numeric_limits<float>::infinity();
  REQUIRE(f({1.5f, std::nanf(""), inf, -inf}) ==
          "tensor([1.5000,    nan,    inf,   -inf], device=cpu:0, dtype=f32)");
  REQUIRE(f({2, inf}) == "tensor([2., inf], device=cpu:0, dtype=f32)");
  // A rank-0 tensor prints its value alone.
  auto s = ferry::sum(r.from_vector(std::vector<float>{1, 2, 3, 4}, {4}, d0));
  REQUIRE(fmt::format("{}", s) == "tensor(10., device=cpu:0, dtype=f32)");
}

TEST_CASE("long rows wrap at 80 columns and nested dims are separated by blank lines") {
  auto r = router();
  auto a = r.arange(0, 20, 1, DType::f32, d0);
  REQUIRE(fmt::format("{}", a) ==
          "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
          "        14., 15., 16., 17., 18., 19.], device=cpu:0, dtype=f32)");
  auto c = ferry::reshape(r.arange(0, 8, 1, DType::i64, d0), {2, 2, 2});
  REQUIRE(fmt::format("{}", c) ==
          "tensor([[[0, 1],\n"
          "         [2, 3]],\n"
          "\n"
          "        [[4, 5],\n"
          "         [6, 7]]], device=cpu:0, dtype=i64)");
}

TEST_CASE("tensors of more than 1000 elements show the first and last 3 per dim") {
  auto r = router();
  SECTION("1-D: the formatter sees only the shown values") {
    auto a = r.arange(0, 2000, 1, DType::f32, d0);
    REQUIRE(fmt::format("{}", a) ==
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
            "        1.9990e+03], device=cpu:0, dtype=f32)");
  }
  SECTION("2-D: rows and columns") {
    auto a = ferry::reshape(r.arange(0, 1200, 1, DType::i64, d0), {30, 40});
    REQUIRE(fmt::format("{}", a) ==
            "tensor([[   0,    1,    2,  ...,   37,   38,   39],\n"
            "        [  40,   41,   42,  ...,   77,   78,   79],\n"
            "        [  80,   81,   82,  ...,  117,  118,  119],\n"
            "        ...,\n"
            "        [1080, 1081, 1082,  ..., 1117, 1118, 1119],\n"
            "        [1120, 1121, 1122,  ..., 1157, 1158, 1159],\n"
            "        [1160, 1161, 1162,  ..., 1197, 1198, 1199]], device=cpu:0, dtype=i64)");
  }
  SECTION("exactly 1000 elements are all shown") {
    auto a = r.zeros({1000}, DType::i32, d0);
    const auto s = fmt::format("{}", a);
    REQUIRE(s.find("...") == std::string::npos);
    REQUIRE(std::count(s.begin(), s.end(), '0') == 1000 + 1);  // and the one of cpu:0
  }
}

TEST_CASE("int and bool tensors are right-aligned to their widest value") {
  auto r = router();
  auto i = r.from_vector(std::vector<std::int32_t>{1, -20, 300}, {3}, d0);
  REQUIRE(fmt::format("{}", i) == "tensor([  1, -20, 300], device=cpu:0, dtype=i32)");
  auto big = r.from_vector(std::vector<std::int64_t>{(1LL << 62) + 1, -1}, {2}, d0);
  REQUIRE(fmt::format("{}", big) ==
          "tensor([4611686018427387905,                  -1], device=cpu:0, dtype=i64)");
  auto b = r.from_data(TensorData::from(std::vector<bool>{true, false, true}, {3}), d0);
  REQUIRE(fmt::format("{}", b) == "tensor([ True, False,  True], device=cpu:0, dtype=bool)");
}

TEST_CASE("f16, bf16 and the new integer dtypes print as torch prints them") {
  auto r = router();
  auto h = r.from_vector(
      std::vector<ferry::f16>{ferry::f16(1.0f), ferry::f16(0.1f), ferry::f16(-65504.0f)}, {3}, d0);
  // f16(0.1) is 0.0999755859375: torch prints float16 with the same 4 decimals as float32.
  REQUIRE(fmt::format("{}", h) ==
          "tensor([ 1.0000e+00,  9.9976e-02, -6.5504e+04], device=cpu:0, dtype=f16)");
  auto b = r.from_vector(std::vector<ferry::bf16>{ferry::bf16(2.5f), ferry::bf16(-1.0f)}, {2}, d0);
  REQUIRE(fmt::format("{}", b) == "tensor([ 2.5000, -1.0000], device=cpu:0, dtype=bf16)");
  auto u = r.from_vector(std::vector<std::uint8_t>{0, 7, 255}, {3}, d0);
  REQUIRE(fmt::format("{}", u) == "tensor([  0,   7, 255], device=cpu:0, dtype=u8)");
  auto w = r.from_vector(std::vector<std::uint64_t>{18446744073709551615ULL, 1}, {2}, d0);
  REQUIRE(fmt::format("{}", w) ==
          "tensor([18446744073709551615,                    1], device=cpu:0, dtype=u64)");
  auto i8 = r.from_vector(std::vector<std::int8_t>{-128, 127}, {2}, d0);
  REQUIRE(fmt::format("{}", i8) == "tensor([-128,  127], device=cpu:0, dtype=i8)");
}

TEST_CASE("empty tensors print [] with their size unless 1-D") {
  auto r = router();
  REQUIRE(fmt::format("{}", r.zeros({0}, DType::f32, d0)) == "tensor([], device=cpu:0, dtype=f32)");
  REQUIRE(fmt::format("{}", r.zeros({0, 3}, DType::i64, d0)) ==
          "tensor([], device=cpu:0, size=[0, 3], dtype=i64)");
}

TEST_CASE("a quantized tensor prints its dequantized values and its scheme") {
  auto r = router();
  auto x = r.from_vector(std::vector<float>{-1, -0.5f, 0, 0.75f, 1.75f}, {5}, d0);
  const auto scheme = q::Scheme::of(q::ValueType::i4).packed_u8();
  auto qt = ferry::quantize(x, scheme, {0.25f});  // exact: q = {-4, -2, 0, 3, 7}
  // The suffixes wrap past 80 columns, as torch's do.
  REQUIRE(fmt::format("{}", qt) ==
          "tensor([-1.0000, -0.5000,  0.0000,  0.7500,  1.7500], device=cpu:0,\n"
          "       dtype=quantized, scheme=int4 symmetric per_tensor packed_u8 scale=f32)");
  REQUIRE(fmt::format("{}", qt.to_parts()) ==
          "QuantizedParts(int4 symmetric per_tensor packed_u8 scale=f32, shape=[5], data=3 B, "
          "scales=4 B, offsets=0 B)");
  auto big =
      ferry::quantize_dynamic(r.random_normal({64, 64}, 1, d0), q::Scheme::of(q::ValueType::u4)
                                                                    .affine()
                                                                    .per_block({32})
                                                                    .packed_u8()
                                                                    .scales(q::ScaleType::f16));
  REQUIRE(fmt::format("{}", big.to_parts()) ==
          "QuantizedParts(uint4 affine per_block[32] packed_u8 scale=f16, shape=[64, 64], "
          "data=2048 B, scales=256 B, offsets=128 B)");
  const auto s = fmt::format("{}", big);
  REQUIRE(s.find("...") != std::string::npos);
  REQUIRE(s.ends_with("scheme=uint4 affine per_block[32] packed_u8 scale=f16)"));
}

TEST_CASE("host data and moved-from tensors print too") {
  REQUIRE(fmt::format("{}", TensorData::from(std::vector<std::int64_t>{1, 2})) ==
          "tensor([1, 2], dtype=i64)");
  std::ostringstream os;
  os << TensorData::from(std::vector<double>{0.125});
  REQUIRE(os.str() == "tensor([0.1250], dtype=f64)");
  auto r = router();
  auto t = r.zeros({2}, DType::f32, d0);
  auto u = std::move(t);
  REQUIRE(fmt::format("{}", t) == "tensor(<invalid>)");  // NOLINT(bugprone-use-after-move)
  REQUIRE(fmt::format("{:>10}", TensorData::from(std::vector<std::int32_t>{7})).size() >= 10);
}

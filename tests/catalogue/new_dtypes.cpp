// Bad-input catalogue, the dtypes of 0.3 (f16, bf16, i8, i16, u8, u16, u32, u64): scalars that
// do not fit an unsigned or narrow dtype, mixed 16-bit floats, float ops on the new integer
// types, integer faults in narrow kernels, and a backend that does not hold a dtype.
#include "catalogue/common.hpp"
#include "mini_backend.hpp"

namespace new_dtypes {
using namespace catalogue;
using ferry::DTypeError;
using ferry::IndexError;
using ferry::Unsupported;
using ferry::ValueError;
}  // namespace new_dtypes

using namespace new_dtypes;

TEST_CASE("new_dtypes: u8 + 300", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto u = w.r.zeros({3}, DType::u8, CpuDevice{0});
    REQUIRE_RAISES(u + 300, ValueError, "add: scalar 300 is not exactly representable as u8");
  }
  w.check_intact();
}

TEST_CASE("new_dtypes: u32 - -1", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto u = w.r.zeros({3}, DType::u32, CpuDevice{0});
    REQUIRE_RAISES(u - (-1), ValueError, "sub: scalar -1 is not exactly representable as u32");
  }
  w.check_intact();
}

TEST_CASE("new_dtypes: f16 + bf16", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto h = w.r.zeros({3}, DType::f16, CpuDevice{0});
    auto b = w.r.zeros({3}, DType::bf16, CpuDevice{0});
    REQUIRE_RAISES(h + b, DTypeError,
                   "add: operand dtypes differ (f16 and bf16); cast one with cast() first");
  }
  w.check_intact();
}

TEST_CASE("new_dtypes: exp of u8", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto u = w.r.ones({3}, DType::u8, CpuDevice{0});
    REQUIRE_RAISES(exp(u), DTypeError, "exp: needs float operands, got u8");
  }
  w.check_intact();
}

TEST_CASE("new_dtypes: mean of u16", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto u = w.r.ones({3}, DType::u16, CpuDevice{0});
    REQUIRE_RAISES(mean(u), DTypeError, "mean: needs float operands, got u16");
  }
  w.check_intact();
}

TEST_CASE("new_dtypes: dequantize to u8", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(dequantize(w.get("q4"), DType::u8), DTypeError,
                 "dequantize: target dtype must be a float dtype (f32, f64, f16, bf16), got u8");
  w.check_intact();
}

TEST_CASE("new_dtypes: u8 division by a zero tensor", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto a = w.r.ones({4}, DType::u8, CpuDevice{0});
    auto zero = w.r.zeros({4}, DType::u8, CpuDevice{0});
    REQUIRE_KERNEL_RAISES(w, a / zero, ValueError,
                          "op 'div' on device cpu:0 failed: [ferry.cpu.zero_division] div: integer "
                          "division by zero (u8)",
                          "[ferry.cpu.zero_division] div: integer division by zero (u8)");
  }
  w.check_intact();
}

TEST_CASE("new_dtypes: i8 to a negative power", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto a = w.r.full({2}, 3, DType::i8, CpuDevice{0});
    auto e = w.r.full({2}, -1, DType::i8, CpuDevice{0});
    REQUIRE_KERNEL_RAISES(w, pow(a, e), ValueError, "op 'pow' on device cpu:0 failed",
                          "pow: integer base to the negative exponent -1 (i8)");
  }
  w.check_intact();
}

TEST_CASE("new_dtypes: gather with a u8 index past the dim", "[new_dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto idx = w.r.from_vector(std::vector<std::uint8_t>{0, 200, 1}, {1, 3}, CpuDevice{0});
    REQUIRE_KERNEL_RAISES(w, gather(w.get("f32"), 1, idx), IndexError,
                          "op 'gather' on device cpu:0 failed",
                          "gather: index 200 is out of range for dim 1 of size 3");
  }
  w.check_intact();
}

TEST_CASE("new_dtypes: bf16 data read as f16", "[new_dtypes]") {
  const auto d = ferry::TensorData::from(std::vector<ferry::bf16>(2, ferry::bf16(1.0f)));
  REQUIRE_RAISES((void)d.values<ferry::f16>(), DTypeError,
                 "values(): tensor data of shape [2] is bf16, not f16");
}

TEST_CASE("new_dtypes: a u64 tensor on a backend that does not hold u64", "[new_dtypes]") {
  const auto mode = CATALOGUE_MODES;
  ferry::Router<mini::Backend> r(mini::Backend{}, {.execution = mode});
  auto keep = r.from_vector(std::vector<std::int32_t>{1, 2, 3}, {3}, mini::Device{0});
  REQUIRE_RAISES(r.from_vector(std::vector<std::uint64_t>{1, 2}, {2}, mini::Device{0}), Unsupported,
                 "[ferry.unsupported] from_data: backend 'mini' does not hold u64 tensors (device "
                 "mini:0)");
  REQUIRE_RAISES(cast(keep, DType::u64), Unsupported,
                 "cast: backend 'mini' does not hold u64 tensors (device mini:0)");
  REQUIRE_RAISES(r.zeros({2}, DType::u64, mini::Device{1}), Unsupported,
                 "zeros: backend 'mini' does not hold u64 tensors (device mini:1)");
  r.sync();
  REQUIRE(keep.to_data().to_vector<int>() == std::vector<int>{1, 2, 3});  // intact
}

// Bad-input catalogue, sizes at the limits of int64: element counts, byte counts and dims that
// do not fit. Every size is computed with checked arithmetic (ferry/detail/checked.hpp) and
// every op's output shape is checked before the op is recorded (detail::output_bytes), so each
// of these is an error at the call in both modes: ShapeError when the shape itself cannot exist
// (more than 2^63 - 1 elements), OutOfMemory when its bytes pass what a device can address.
#include <limits>

#include "catalogue/common.hpp"

namespace limits {
using namespace catalogue;
using ferry::OutOfMemory;
using ferry::ShapeError;
constexpr std::int64_t k32 = std::int64_t{1} << 32;
constexpr std::int64_t k61 = std::int64_t{1} << 61;
constexpr std::int64_t k62 = std::int64_t{1} << 62;
}  // namespace limits

using namespace limits;

TEST_CASE("limits: zeros of 2^62 floats needs 2^64 bytes", "[limits]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.zeros({k62}, DType::f32, CpuDevice{0}), OutOfMemory,
                 "zeros: a f32 tensor of shape [4611686018427387904] needs more than 2^63 - 1 "
                 "bytes, more than device cpu:0 can hold");
  REQUIRE_RAISES(w.r.full({k61}, 1.0, DType::f64, CpuDevice{1}), OutOfMemory,
                 "full: a f64 tensor of shape [2305843009213693952] needs more than 2^63 - 1 "
                 "bytes, more than device cpu:1 can hold");
  w.check_intact();
}

TEST_CASE("limits: zeros of [2^32, 2^32] has 2^64 elements", "[limits]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.zeros({k32, k32}, DType::f32, CpuDevice{0}), ShapeError,
                 "zeros: shape [4294967296, 4294967296] has more elements than int64 holds");
  REQUIRE_RAISES(w.r.random_uniform({k32, 3, k32}, 1, CpuDevice{0}), ShapeError,
                 "random: shape [4294967296, 3, 4294967296] has more elements than int64 holds");
  w.check_intact();
}

TEST_CASE("limits: from_vector of no values for [2^32, 2^32]", "[limits]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.from_vector(std::vector<float>{}, {k32, k32}, CpuDevice{0}), ShapeError,
                 "shape [4294967296, 4294967296] has more elements than int64 holds");
  w.check_intact();
}

TEST_CASE("limits: reshape to a target of 2^64 elements", "[limits]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(reshape(w.get("f32"), {k32, k32, -1}), ShapeError,
                 "reshape: target shape [4294967296, 4294967296, -1] has more elements than "
                 "int64 holds");
  w.check_intact();
}

TEST_CASE("limits: repeat past 2^63 - 1 in a dim and in the element count", "[limits]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(repeat(w.get("f32"), {k62, 1}), ShapeError,
                 "repeat: dim 0 of [2, 3] repeated 4611686018427387904 times passes 2^63 - 1");
  REQUIRE_RAISES(repeat(w.get("f32"), {k61, 1}), ShapeError,
                 "repeat: shape [4611686018427387904, 3] has more elements than int64 holds");
  w.check_intact();
}

TEST_CASE("limits: cat of two [0, 2^62] along dim 1", "[limits]") {
  World w(CATALOGUE_MODES);
  {
    auto e = w.r.zeros({0, k62}, DType::f32, CpuDevice{0});  // empty, so it exists
    REQUIRE(e.numel() == 0);
    REQUIRE_RAISES(cat(std::vector{e, e}, 1), ShapeError,
                   "cat: dim 1 of the result passes 2^63 - 1 (at [0, 4611686018427387904])");
  }
  w.check_intact();
}

TEST_CASE("limits: expand of [2, 3] to [2^62, 2, 3]", "[limits]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(expand(w.get("f32"), {k62, 2, 3}), ShapeError,
                 "expand: shape [4611686018427387904, 2, 3] has more elements than int64 holds");
  w.check_intact();
}

TEST_CASE("limits: a quantized tensor of [2^32, 2^32] from parts", "[limits]") {
  World w(CATALOGUE_MODES);
  QuantizedParts p{int8_tensor(), Shape{k32, k32}, {}, {}, {}};
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{0}), ShapeError,
                 "shape [4294967296, 4294967296] has more elements than int64 holds");
  w.check_intact();
}

TEST_CASE("limits: a valid shape past the device's memory limit is OutOfMemory at the op",
          "[limits]") {
  // set_memory_limit caps a device as a GPU's memory would: the op fails before the system
  // allocator is asked, so this runs under AddressSanitizer too (async.cpp's 2^46 case cannot).
  World w(CATALOGUE_MODES);
  w.r.backend().set_memory_limit(std::int64_t{1} << 20);
  REQUIRE(w.r.backend().memory_limit() == std::int64_t{1} << 20);
  REQUIRE_KERNEL_RAISES(w, w.r.zeros({std::int64_t{1} << 20}, DType::f32, CpuDevice{1}),
                        OutOfMemory,
                        "op 'full' on device cpu:1 failed: [ferry.memory] full: device cpu:1 is "
                        "out of memory making t",
                        "f32[1048576] (4194304 bytes)");
  // An empty matmul's output is all zeros, and still has to fit: [3, 0] x [0, 2^31] -> 24 GiB.
  {
    const auto a = w.r.zeros({3, 0}, DType::f32, CpuDevice{0});
    const auto b = w.r.zeros({0, k32 / 2}, DType::f32, CpuDevice{0});
    REQUIRE_KERNEL_RAISES(w, matmul(a, b), OutOfMemory,
                          "op 'matmul' on device cpu:0 failed: [ferry.memory] matmul: device "
                          "cpu:0 is out of memory making t",
                          "f32[3, 2147483648] (25769803776 bytes)");
  }
  // A per-axis scheme over an empty tensor still has a scale per index of its axis: [0, 2^31]
  // per_axis(1) asks for 8 GiB of scales, refused before the allocator is asked (fuzz_ops
  // found the 16 GiB version; quantized parts used to skip the limit).
  {
    const auto e = w.r.zeros({0, k32 / 2}, DType::f32, CpuDevice{0});
    REQUIRE_KERNEL_RAISES(w, quantize_dynamic(e, Scheme::of(ValueType::i8).per_axis(1)),
                          OutOfMemory,
                          "op 'quantize_dynamic' on device cpu:0 failed: [ferry.memory]",
                          "quantize_dynamic: device cpu:0 is out of memory");
  }
  // Within the limit, and an empty tensor, still allocate.
  REQUIRE(w.r.zeros({3}, DType::f32, CpuDevice{1}).to_data().to_vector<float>() ==
          std::vector<float>{0, 0, 0});
  REQUIRE(w.r.zeros({0, k62}, DType::f32, CpuDevice{1}).to_data().to_vector<float>().empty());
  w.r.backend().set_memory_limit(-1);
  REQUIRE(w.r.backend().memory_limit() == std::numeric_limits<std::int64_t>::max());
  w.check_intact();
}

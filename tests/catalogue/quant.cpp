// Bad-input catalogue, quantization: invalid schemes, scales and offsets given to quantize(),
// QuantizedParts from outside (wrong sizes, bad scales and offsets, dirty padding), layout ops
// that would split blocks, and plain ops given a quantized tensor.
#include <limits>

#include "catalogue/common.hpp"

namespace quant {
using namespace catalogue;
using ferry::DTypeError;
using ferry::QuantError;
using ferry::Range;
using ferry::quant::ScaleType;

/// The parts of the int4 per_block[32] bystander on cpu:0, to spoil one field of.
inline QuantizedParts q4_parts(const World& w) { return w.get("q4").to_parts(); }

/// Valid parts of an int4 affine per-tensor tensor of shape [3]: values {1, -1, 7}, scale 0.5,
/// offset 0.
inline QuantizedParts affine_parts() {
  QuantizedParts p;
  p.scheme = Scheme::of(ValueType::i4).affine().packed_u8();
  p.shape = Shape{3};
  p.data = {std::byte{0xF1}, std::byte{0x07}};
  p.scales.resize(4);
  ferry::quant::store_scale(ScaleType::f32, 0.5f, p.scales.data());
  p.offsets = {std::byte{0}};
  return p;
}
}  // namespace quant

using namespace quant;

// ---- schemes --------------------------------------------------------------------------------

TEST_CASE("quant: int8 values with packed_u8 storage", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"), Scheme::of(ValueType::i8).packed_u8()), QuantError,
                 "invalid scheme 'int8 symmetric per_tensor packed_u8 scale=f32': packed_u8 "
                 "storage of 8-bit values is the native layout; use native");
  w.check_intact();
}

TEST_CASE("quant: float values with an affine mode", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"), Scheme::of(ValueType::e4m3).affine()), QuantError,
                 "invalid scheme 'fp8_e4m3 affine per_tensor native scale=f32': fp8_e4m3 values "
                 "are symmetric only (a float code has no zero point)");
  w.check_intact();
}

TEST_CASE("quant: a ue8m0 scale that is not a power of two", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(
      quantize(w.get("f32"), Scheme::of(ValueType::e4m3).scales(ScaleType::ue8m0), {0.3f}),
      QuantError,
      "scale 0.3 of param 0 is not a power of two, which a ue8m0 scale must be (the "
      "next one up is 0.5)");
  w.check_intact();
}

TEST_CASE("quant: a tensor scale on a per-tensor scheme", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(
      quantize_dynamic(w.get("f32"), Scheme::of(ValueType::i8).tensor_scales(ScaleType::f32)),
      QuantError,
      "invalid scheme 'int8 symmetric per_tensor native scale=f32 tensor_scale=f32': a tensor "
      "scale needs per_axis or per_block granularity (per_tensor already has one scale for the "
      "whole tensor)");
  w.check_intact();
}

TEST_CASE("quant: a two-level scheme given no tensor scale", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize(w.get("f32"), Scheme::nvfp4(), {1.0f, 1.0f}), QuantError,
                 "2 scales given, expected 3 (param shape [2, 1], then the tensor scale)");
  w.check_intact();
}

TEST_CASE("quant: a codebook that is not ascending", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"),
                                  Scheme::of(ValueType::u2).codebook_of({0.0f, 1.0f, 0.5f, 2.0f})),
                 QuantError,
                 "invalid scheme 'uint2 symmetric per_tensor native scale=f32 codebook[4]': "
                 "codebook values 1 and 2 (1, 0.5) are not strictly ascending");
  w.check_intact();
}

TEST_CASE("quant: per_block with an empty block shape", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"), Scheme::of(ValueType::i8).per_block({})),
                 QuantError, "per_block needs a block shape of at least one dim");
  w.check_intact();
}

TEST_CASE("quant: per_block with a block dim of 0", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"), Scheme::of(ValueType::i8).per_block({2, 0})),
                 QuantError, "block dim 1 is 0, must be >= 1");
  w.check_intact();
}

TEST_CASE("quant: per_block of rank 3 over a rank-2 tensor", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"), Scheme::of(ValueType::i8).per_block({1, 1, 1})),
                 QuantError, "over shape [2, 3]: block rank 3 is greater than shape rank 2");
  w.check_intact();
}

TEST_CASE("quant: per_axis(2) over a rank-2 tensor", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"), Scheme::of(ValueType::i8).per_axis(2)), QuantError,
                 "over shape [2, 3]: axis 2 is out of range for rank 2");
  w.check_intact();
}

TEST_CASE("quant: a per_tensor scheme with a stray axis", "[quant]") {
  World w(CATALOGUE_MODES);
  Scheme s = Scheme::of(ValueType::i8);
  s.axis = 1;
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"), s), QuantError,
                 "axis 1 is set but the granularity is per_tensor");
  w.check_intact();
}

TEST_CASE("quant: a scheme with a corrupt value type", "[quant]") {
  World w(CATALOGUE_MODES);
  Scheme s = Scheme::of(ValueType::i8);
  s.value = static_cast<ValueType>(42);
  REQUIRE_RAISES(quantize_dynamic(w.get("f32"), s), QuantError, "unknown value type 42");
  w.check_intact();
}

// ---- quantize(): scales and offsets -----------------------------------------------------------

TEST_CASE("quant: quantize per_axis(0) of [2, 3] with 1 scale", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize(w.get("f32"), Scheme::of(ValueType::i8).per_axis(0), {1.0f}), QuantError,
                 "quantize: 'int8 symmetric per_axis(0) native scale=f32' over shape [2, 3]: 1 "
                 "scales given, expected 2 (param shape [2])");
  w.check_intact();
}

TEST_CASE("quant: quantize symmetric with an offset", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(
      quantize(w.get("f32"), Scheme::of(ValueType::i8), {1.0f}, {0}), QuantError,
      "over shape [2, 3]: 1 offsets given, expected 0 (symmetric schemes take no offsets)");
  w.check_intact();
}

TEST_CASE("quant: quantize with a NaN scale", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize(w.get("f32"), Scheme::of(ValueType::i8).per_axis(0),
                          {1.0f, std::numeric_limits<float>::quiet_NaN()}),
                 QuantError,
                 "quantize: 'int8 symmetric per_axis(0) native scale=f32' over shape [2, 3]: "
                 "scale nan of param 1");
  w.check_intact();
}

TEST_CASE("quant: quantize with a zero scale", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize(w.get("f32"), Scheme::of(ValueType::i8), {0.0f}), QuantError,
                 "scale 0 of param 0 is 0 as f32; scales must be finite and > 0");
  w.check_intact();
}

TEST_CASE("quant: quantize with a scale that is 0 as f16", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize(w.get("f32"), Scheme::of(ValueType::i8).scales(ScaleType::f16), {1e-10f}),
                 QuantError, "scale 1e-10 of param 0 is 0 as f16");
  w.check_intact();
}

TEST_CASE("quant: quantize int4 affine with offset 9", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize(w.get("f32"), Scheme::of(ValueType::i4).affine(), {1.0f}, {9}),
                 QuantError,
                 "quantize: 'int4 affine per_tensor native scale=f32' over shape [2, 3]: offset 9 "
                 "of param 0 is outside [-8, 7]");
  w.check_intact();
}

TEST_CASE("quant: quantize of an i32 tensor", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(quantize(w.get("i32"), int8_tensor(), {1.0f}), DTypeError,
                 "quantize: needs float operands, got i32");
  w.check_intact();
}

TEST_CASE("quant: dequantize to i32", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(dequantize(w.get("q8"), DType::i32), DTypeError,
                 "dequantize: target dtype must be a float dtype (f32, f64, f16, bf16), got i32");
  w.check_intact();
}

TEST_CASE("quant: dequantize of a plain f32 tensor", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(dequantize(w.get("f32")), DTypeError, "is f32, not quantized");
  w.check_intact();
}

// ---- QuantizedParts from outside --------------------------------------------------------------

TEST_CASE("quant: q_from_parts with the data one byte short", "[quant]") {
  World w(CATALOGUE_MODES);
  auto p = q4_parts(w);
  p.data.pop_back();
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{0}), QuantError,
                 "'int4 symmetric per_block[32] packed_u8 scale=f16' over shape [4, 64]: data "
                 "holds 127 bytes, expected 128 (256 values of 4 bits, packed_u8)");
  w.check_intact();
}

TEST_CASE("quant: q_from_parts with a byte of data too many", "[quant]") {
  World w(CATALOGUE_MODES);
  auto p = q4_parts(w);
  p.data.push_back(std::byte{0});
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{0}), QuantError,
                 "data holds 129 bytes, expected 128");
  w.check_intact();
}

TEST_CASE("quant: q_from_parts with one scale missing", "[quant]") {
  World w(CATALOGUE_MODES);
  auto p = q4_parts(w);
  p.scales.resize(p.scales.size() - 2);
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{0}), QuantError,
                 "scales hold 14 bytes, expected 16 (8 params of 2 bytes)");
  w.check_intact();
}

TEST_CASE("quant: q_from_parts of a symmetric scheme with offsets", "[quant]") {
  World w(CATALOGUE_MODES);
  auto p = q4_parts(w);
  p.offsets.assign(8, std::byte{0});
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{0}), QuantError,
                 "offsets hold 8 bytes, expected 0 (symmetric schemes have no offsets)");
  w.check_intact();
}

TEST_CASE("quant: q_from_parts with a NaN scale", "[quant]") {
  World w(CATALOGUE_MODES);
  auto p = q4_parts(w);
  ferry::quant::store_scale(ScaleType::f16, std::numeric_limits<float>::quiet_NaN(),
                            p.scales.data() + 6);
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{0}), QuantError,
                 "scale nan of param 3 must be finite and > 0");
  w.check_intact();
}

TEST_CASE("quant: q_from_parts with an int4 offset of 9", "[quant]") {
  World w(CATALOGUE_MODES);
  auto p = affine_parts();
  p.offsets[0] = std::byte{9};
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{0}), QuantError,
                 "'int4 affine per_tensor packed_u8 scale=f32' over shape [3]: offset 9 of param 0 "
                 "is outside [-8, 7]");
  w.check_intact();
}

TEST_CASE("quant: q_from_parts with nonzero padding bits", "[quant]") {
  World w(CATALOGUE_MODES);
  auto p = affine_parts();
  p.data[1] = std::byte{0x37};
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{0}), QuantError,
                 "padding bits after the last value must be zero, byte 1 of 2 is 0x37");
  w.check_intact();
}

// ---- layout ops ---------------------------------------------------------------------------------

TEST_CASE("quant: reshape of per_block[32] [4, 64] to [16, 16]", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(reshape(w.get("q4"), {16, 16}), QuantError,
                 "q_reshape: scheme 'int4 symmetric per_block[32] packed_u8 scale=f16' on shape "
                 "[4, 64] cannot become shape [16, 16]");
  w.check_intact();
}

TEST_CASE("quant: reshape of a per_axis(1) tensor that loses its axis", "[quant]") {
  World w(CATALOGUE_MODES);
  {
    auto q = quantize_dynamic(w.get("f32"), Scheme::of(ValueType::i8).per_axis(1));
    REQUIRE_RAISES(reshape(q, {3, 2}), QuantError,
                   "cannot become shape [3, 2]: the quantization axis 1 (size 3) does not "
                   "survive as a dim of its own");
  }
  w.check_intact();
}

TEST_CASE("quant: reshape of a quantized [4, 64] to 128 elements", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(reshape(w.get("q4"), {2, 64}), ferry::ShapeError,
                 "q_reshape: cannot reshape [4, 64] (256 elements) to [2, 64] (128 elements)");
  w.check_intact();
}

TEST_CASE("quant: slice of a quantized tensor with step 2", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(slice(w.get("q4"), {Range{0, 4, 2}}), QuantError,
                 "q_slice: step 2 on dim 0: quantized slices take step 1");
  w.check_intact();
}

TEST_CASE("quant: slice starting inside a block of 32 and running past it", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(slice(w.get("q4"), {Range{0, 4}, Range{16, 48}}), QuantError,
                 "range 16:48 on dim 1 starts inside a block (block 32) and runs past it");
  w.check_intact();
}

TEST_CASE("quant: flip of a dim of 40 with blocks of 32", "[quant]") {
  World w(CATALOGUE_MODES);
  {
    auto q = quantize_dynamic(w.r.zeros({2, 40}, DType::f32, CpuDevice{0}), int4_block());
    REQUIRE_RAISES(flip(q, {1}), QuantError,
                   "dim 1 (size 40) is not a multiple of its block 32, so flipping it would "
                   "split a block");
  }
  w.check_intact();
}

TEST_CASE("quant: permute of a quantized tensor repeating an axis", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(permute(w.get("q4"), {0, 0}), ferry::IndexError,
                 "q_permute: permutation [0, 0] repeats axis 0");
  w.check_intact();
}

TEST_CASE("quant: q_swap_dims of a plain tensor", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(q_swap_dims(w.get("f32"), 0, 1), DTypeError, "q_swap_dims: tensor");
  w.check_intact();
}

// ---- plain ops given a quantized tensor
// ----------------------------------------------------------

TEST_CASE("quant: add of two quantized tensors", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("q8") + w.get("q8"), DTypeError,
                 "add: operand is quantized; dequantize() it first or use the q_ form of the op");
  w.check_intact();
}

TEST_CASE("quant: index_select across the blocks of a per_block[32] tensor", "[quant]") {
  World w(CATALOGUE_MODES);
  {
    auto index = w.r.from_vector(std::vector<std::int64_t>{0, 40}, {2}, CpuDevice{0});
    REQUIRE_RAISES(index_select(w.get("q4"), 1, index), QuantError,
                   "q_select: scheme 'int4 symmetric per_block[32] packed_u8 scale=f16' on shape "
                   "[4, 64]: dim 1 is split into blocks of 32, so elements picked by index would "
                   "not keep the params of their block (select along a dim with block 1, or "
                   "dequantize first)");
  }
  w.check_intact();
}

TEST_CASE("quant: repeat of a dim that ends in a partial block", "[quant]") {
  World w(CATALOGUE_MODES);
  {
    auto q = q_slice(w.get("q4"), {Range{0, 4}, Range{0, 40}});  // blocks of 32 and 8
    REQUIRE_RAISES(repeat(q, {1, 2}), QuantError,
                   "q_repeat: scheme 'int4 symmetric per_block[32] packed_u8 scale=f16' on shape "
                   "[4, 40]: dim 1 (size 40) is not a multiple of its block 32, so its second copy "
                   "would start inside a block");
  }
  w.check_intact();
}

TEST_CASE("quant: cat of quantized tensors under two schemes", "[quant]") {
  World w(CATALOGUE_MODES);
  {
    auto q = quantize_dynamic(w.get("f32"), Scheme::of(ValueType::i8).per_axis(1));
    REQUIRE_RAISES(cat(std::vector<T>{q, q_slice(w.get("q4"), {Range{0, 2}, Range{0, 3}})}, 1),
                   QuantError,
                   "q_cat: tensor 1 has scheme 'int4 symmetric per_block[32] packed_u8 scale=f16', "
                   "tensor 0 'int8 symmetric per_axis(1) native scale=f32'; quantized tensors join "
                   "only under one scheme");
  }
  w.check_intact();
}

TEST_CASE("quant: cast of a quantized tensor", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(cast(w.get("q8"), DType::f32), DTypeError, "cast: operand is quantized");
  w.check_intact();
}

TEST_CASE("quant: to_data of a quantized tensor", "[quant]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("q4").to_data(), DTypeError,
                 "to_data: tensor is quantized (int4 symmetric per_block[32] packed_u8 scale=f16); "
                 "use to_parts() for its packed form or dequantize() for values");
  w.check_intact();
}

TEST_CASE("quant: matmul with the quantized operand on the left", "[quant]") {
  World w(CATALOGUE_MODES);
  {
    auto x = w.r.zeros({64, 2}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(matmul(w.get("q4"), x), DTypeError, "matmul: operand is quantized");
  }
  w.check_intact();
}

TEST_CASE("quant: matmul of i32 activations and quantized weights", "[quant]") {
  World w(CATALOGUE_MODES);
  {
    auto x = w.r.zeros({2, 4}, DType::i32, CpuDevice{0});
    REQUIRE_RAISES(matmul(x, w.get("q4")), DTypeError, "matmul: needs float activations, got i32");
  }
  w.check_intact();
}

TEST_CASE("quant: matmul with a 3-D quantized right operand", "[quant]") {
  World w(CATALOGUE_MODES);
  {
    auto q = quantize_dynamic(w.r.zeros({2, 4, 64}, DType::f32, CpuDevice{0}), int4_block());
    auto x = w.r.zeros({3, 4}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(matmul(x, q), ferry::ShapeError,
                   "matmul: a quantized right operand must be 2-D [K, N], got [2, 4, 64]");
  }
  w.check_intact();
}

// Ferry: quantize / dequantize on the host (ONNX QuantizeLinear / DequantizeLinear arithmetic).
// The declarations; the kernels are in quant/impl/kernels.hpp, compiled once into the library
// (src/quant.cpp) or included here with FERRY_HEADER_ONLY.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ferry/config.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

// Arithmetic (ONNX): q = saturate(round_half_to_even(x / scale) + offset), x = (q - offset) *
// scale, both in f32, where `scale` is the STORED scale (rounded to the scheme's scale type).
//
// Decisions:
// - NaN input quantizes to the offset (as if it were 0); +-inf saturates to qmax / qmin.
// - quantize_dynamic calibrates each param group over [min(x, 0), max(x, 0)], ignoring NaN:
//     symmetric signed  scale = max|x| / qmax
//     symmetric unsigned scale = max(x, 0) / qmax        (negative inputs saturate to 0)
//     affine            scale = (hi - lo) / (qmax - qmin), offset = saturate(rne(qmin - lo / s))
//     float values      scale = max|x| / max_value (448 e4m3, 57344 e5m2, 6 e2m1)
// - Float values (e4m3, e5m2, e2m1; minifloat.hpp): code = encode(x / scale), rounded to
//   nearest even and saturating (+-inf and values past the largest become +-largest); NaN
//   becomes the type's NaN code (e2m1 has none: 0). x = value(code) * scale.
//   all in f32, s being the stored scale. A zero range (all zeros, or all-negative input for
//   symmetric unsigned) uses scale 1. A nonzero range whose scale rounds to 0 in the scale type
//   uses the type's smallest normal; a range with no finite scale (inf input, or a scale beyond
//   the type's max, e.g. > 65504 for f16) is a QuantError.
// - Partial blocks: a dim that is not a multiple of its block ends in a smaller block that has
//   its own scale/offset, calibrated over just the elements it has.
// - Work above ~64Ki elements is split with oneTBB; task boundaries fall on byte boundaries of
//   the packed stream, so no two tasks write the same byte. Results do not depend on the split.
// - Do not build with -ffast-math: NaN handling and round-half-to-even rely on IEEE semantics
//   (with __FAST_MATH__ defined the rounding falls back to std::nearbyint).

namespace ferry::quant {

/// Quantizes `x` (row-major, shape.numel() values) with the given per-param scales (f32, rounded
/// to the scheme's scale type before use) and offsets (affine: exactly num_params, each within
/// [qmin, qmax]; symmetric: empty). NaN quantizes to the offset, +-inf saturates.
///
/// @code
///   auto s = Scheme::of(ValueType::i8).affine().per_axis(0);
///   std::vector<float> x{0.f, 1.f, -1.f, 2.f};
///   auto q = quantize(s, Shape{2, 2}, x, std::vector<float>{0.5f, 0.25f},
///   std::vector<std::int32_t>{0, 3});
///   // values(q) == {0, 2, -1, 11}
/// @endcode
QuantizedParts quantize(const Scheme& s, const Shape& shape, std::span<const float> x,
                        std::span<const float> scales, std::span<const std::int32_t> offsets,
                        const VectorSource* src = nullptr);

/// Quantizes `x` with scales (and offsets) calibrated from its own min/max per param group;
/// see the header comment for the formulas, the zero-range rule and partial blocks.
///
/// @code
///   auto q = quantize_dynamic(Scheme::of(ValueType::i4).per_block({32}).packed_u8(),
///                             Shape{rows, 4096}, weights);
/// @endcode
QuantizedParts quantize_dynamic(const Scheme& s, const Shape& shape, std::span<const float> x,
                                const VectorSource* src = nullptr);

/// Dequantizes flat elements [begin, end) into `out` (exactly end - begin floats): the quantized
/// matmul dequantizes row tiles with this. Checks sizes, not scale values (see QuantizedParts).
void dequantize_range(const QuantizedParts& q, std::int64_t begin, std::int64_t end,
                      std::span<float> out);

/// Dequantizes the whole tensor into `out` (exactly numel floats): x = (q - offset) * scale.
void dequantize(const QuantizedParts& q, std::span<float> out);

/// The integer values, unpacked, row-major (for tests and debugging).
std::vector<std::int32_t> values(const QuantizedParts& q);

}  // namespace ferry::quant

#ifdef FERRY_HEADER_ONLY
#  include "ferry/quant/impl/kernels.hpp"
#endif

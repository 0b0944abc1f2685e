// Ferry: the fused quantized matrix-vector product for linear's weight layout, reading the
// packed values directly. The declaration; the kernel is in quant/impl/gemv.hpp, compiled once
// into the library (src/quant.cpp) or included here with FERRY_HEADER_ONLY.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <span>

#include "ferry/config.hpp"
#include "ferry/quant/parts.hpp"

namespace ferry::quant {

/// Rows of x that linear_packed handles in one pass over w; more rows take more passes, so
/// callers use it for the few rows of a decode step (a GEMM wins when rows are many).
inline constexpr std::int64_t kPackedPassRows = 4;

/// @brief y = x · wᵀ for a quantized weight w [N, K] (linear's layout, a row per output) and
/// x [M, K] row-major f32, computed from w's packed values: each group of 32 values is unpacked
/// into registers, multiplied with x and scaled once, so no dequantized copy of w exists, not
/// even a tile. y [M, N] is overwritten.
///
/// @code
///   std::vector<float> y(M * N);
///   if (!quant::linear_packed(w, x, M, y)) { /* dequantize_range tiles and a GEMM */ }
/// @endcode
///
/// Covers 8-bit and 4-bit values (any storage) whose scale groups are whole groups of 32 along
/// a row: per tensor, per axis 0, per block of a multiple of 32 along K, with K a multiple of
/// 32, on an x86-64 CPU with AVX2 and FMA (checked at run time). Returns false, y untouched,
/// anywhere else. Sums are f32 with FMA, in groups of 32 scaled once each: s·Σ x·(q - o) rather
/// than Σ x·((q - o)·s), which differ by rounding only. Throws QuantError when x or y does not
/// hold M·K or M·N floats.
FERRY_FUNC bool linear_packed(const QuantizedParts& w, std::span<const float> x, std::int64_t M,
                              std::span<float> y);

}  // namespace ferry::quant

#ifdef FERRY_HEADER_ONLY
#  include "ferry/quant/impl/gemv.hpp"
#endif

// Ferry: how quantize_dynamic turns calibrated ranges into stored scales and offsets — the
// symmetric top of a scheme, the Finalizer, and the tensor scale of two-level schemes. Part of
// the kernels compiled once by src/quant.cpp (or inline with FERRY_HEADER_ONLY); included only
// by quant/impl/kernels.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/quant/half.hpp"
#include "ferry/quant/impl/loops.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"

namespace ferry::quant::detail {

/// What a symmetric group's largest |x| maps to: the value type's largest (qmax, or a float
/// type's), or (qmax - qmin) / 2 over the full signed range (127.5 for int8, as PyTorch's
/// symmetric observers: -max|x| lands on -128, +max|x| saturates to 127).
inline float symmetric_top(const Scheme& s) {
  if (!s.codebook.empty())  // the table's largest magnitude (NF4: 1)
    return std::max(std::fabs(s.codebook.front()), std::fabs(s.codebook.back()));
  if (s.mode == Mode::symmetric_full)
    return static_cast<float>(qmax(s.value, s.mode) - qmin(s.value, s.mode)) / 2.0f;
  return max_value(s.value);
}

/// Turns calibrated ranges into stored scales (and offsets); built once per call so that the
/// per-param work is a few float ops (per-block-32 has a param every 32 elements).
class Finalizer {
 public:
  explicit Finalizer(QuantizedParts& parts)
      : parts_(&parts),
        scales_(parts.scales.data()),
        offsets_(reinterpret_cast<unsigned char*>(parts.offsets.data())),
        type_(parts.scheme.scale_type),
        sb_(scale_bytes(parts.scheme.scale_type)),
        qn_(qmin(parts.scheme.value, parts.scheme.mode)),
        qx_(qmax(parts.scheme.value, parts.scheme.mode)),
        top_(symmetric_top(parts.scheme)),
        affine_(parts.scheme.mode == Mode::affine),
        signed_(is_signed(parts.scheme.value) || is_float(parts.scheme.value) ||
                (!parts.scheme.codebook.empty() && parts.scheme.codebook.front() < 0.0f)),
        smallest_(smallest_normal(type_)),
        two_level_(parts.scheme.tensor_scale.has_value()),
        outer_(parts.tensor_scale()),
        cap_(largest_finite(type_)) {}

  // The largest finite value of a scale type: where a block scale relative to the tensor scale
  // is capped (the tensor scale's own rounding may push the largest block a little past it).
  static float largest_finite(ScaleType t) noexcept {
    switch (t) {
      case ScaleType::f16:
        return 65504.0f;
      case ScaleType::bf16:
        return 0x1.fep127f;
      case ScaleType::ue8m0:
        return 0x1p127f;
      case ScaleType::ue4m3:
        return 448.0f;
      default:
        return std::numeric_limits<float>::max();
    }
  }
  // With two levels, what the largest block scale of a tensor is made: 448 for ue4m3 (the
  // NVFP4 recipe: tensor scale = max|x| / (6 * 448)), 1 for the wider types.
  static float block_top(ScaleType t) noexcept { return t == ScaleType::ue4m3 ? 448.0f : 1.0f; }

  // What a nonzero scale that rounds to 0 in the scale type becomes: the type's smallest normal.
  static float smallest_normal(ScaleType t) noexcept {
    switch (t) {
      case ScaleType::f16:
        return 0x1p-14f;
      case ScaleType::ue8m0:
        return 0x1p-127f;
      case ScaleType::ue4m3:
        return 0x1p-6f;
      default:
        return std::numeric_limits<float>::min();
    }
  }

  void operator()(std::int64_t p, float lo, float hi) const {
    float range, scale;
    if (!affine_) {
      range = signed_ ? std::max(hi, -lo) : hi;
      scale = range / top_;
    } else {
      range = hi - lo;
      scale = range / static_cast<float>(qx_ - qn_);
    }
    if (!std::isfinite(scale))
      ferry::detail::raise<QuantError>(
          "quant.range",
          "quantize_dynamic: '{}' over shape {}: param {} spans [{}, {}], which has no finite "
          "scale",
          parts_->scheme, parts_->shape, p, lo, hi);
    if (two_level_) scale = std::min(scale / outer_, cap_);  // relative to the tensor's
    if (range == 0.0f) scale = 1.0f;
    float stored = round_to(type_, scale);
    if (stored == 0.0f) stored = smallest_;
    if (!std::isfinite(stored))
      ferry::detail::raise<QuantError>("quant.range",
                                       "quantize_dynamic: '{}' over shape {}: scale {} of param {} "
                                       "(range [{}, {}]) overflows {}",
                                       parts_->scheme, parts_->shape, scale, p, lo, hi, type_);
    store_scale(type_, stored, scales_ + static_cast<std::size_t>(p) * sb_);
    if (affine_) {
      const float t = static_cast<float>(qn_) - lo / (stored * outer_);
      const float r =
          std::clamp(std::nearbyint(t), static_cast<float>(qn_), static_cast<float>(qx_));
      offsets_[p] = static_cast<unsigned char>(static_cast<std::int32_t>(r));
    }
  }

 private:
  QuantizedParts* parts_;
  std::byte* scales_;
  unsigned char* offsets_;
  ScaleType type_;
  std::size_t sb_;
  std::int32_t qn_, qx_;
  float top_;  // the value the largest |x| (or x) maps to: qmax, or a float type's largest
  bool affine_, signed_;
  float smallest_;
  bool two_level_;
  float outer_;  // the stored tensor scale (1 with one level)
  float cap_;
};

/// Two levels: calibrates and stores the tensor scale (the last bytes of parts.scales), so that
/// the largest group scale becomes Finalizer::block_top of the group scale type. Call before
/// the Finalizer and the kernel args are made: both read it.
inline void store_tensor_scale(QuantizedParts& parts, std::span<const float> x) {
  const Scheme& s = parts.scheme;
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<float> part(static_cast<std::size_t>(ceil_div(n, kChunk)), 0.0f);
  for_chunks(0, n, [&](std::int64_t b, std::int64_t e) {
    float lo = 0.0f, hi = 0.0f;
    minmax_uniform(x.data() + b, e - b, lo, hi);
    part[static_cast<std::size_t>(b / kChunk)] = std::max(hi, -lo);
  });
  float amax = 0.0f;
  for (const float m : part) amax = std::max(amax, m);
  const bool affine = s.mode == Mode::affine;
  const float span =
      affine ? static_cast<float>(qmax(s.value, s.mode) - qmin(s.value, s.mode)) : symmetric_top(s);
  float t = (affine ? 2.0f * amax : amax) / (span * Finalizer::block_top(s.scale_type));
  if (amax == 0.0f) t = 1.0f;
  float stored = std::isfinite(t) ? round_to(*s.tensor_scale, t) : t;
  if (stored == 0.0f) stored = Finalizer::smallest_normal(*s.tensor_scale);
  if (!std::isfinite(stored))
    ferry::detail::raise<QuantError>(
        "quant.range",
        "quantize_dynamic: '{}' over shape {}: the largest |x| is {}, which has no finite tensor "
        "scale as {}",
        s, parts.shape, amax, *s.tensor_scale);
  store_scale(*s.tensor_scale, stored,
              parts.scales.data() + (parts.scales.size() - tensor_scale_bytes(s)));
}

}  // namespace ferry::quant::detail

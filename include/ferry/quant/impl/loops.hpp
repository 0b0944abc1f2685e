// Ferry: the inner loops of the host quantize / dequantize kernels (quant/impl/kernels.hpp):
// runs of elements that share a parameter, reading scales and offsets, rounding, and the
// per-tile quantize, dequantize and min/max loops. Included only by quant/impl/kernels.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "ferry/config.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/error.hpp"
#include "ferry/quant/half.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

namespace ferry::quant::detail {

inline constexpr std::int64_t kTile = 1024;                    // values per on-stack tile
inline constexpr std::int64_t kChunk = std::int64_t{1} << 15;  // elements per parallel unit
inline constexpr std::int64_t kSerialBelow = std::int64_t{1} << 16;

/// A run of consecutive elements: one param for all (`per_element` false), or params
/// param, param+1, ... one per element (the last canonical dim has block 1, e.g. per-axis on
/// the last axis).
struct Run {
  std::int64_t len;
  std::int64_t param;
  bool per_element;
};

/// Walks a Canon in row-major order, handing out runs; per run it costs a few integer ops, and
/// per row (last canonical dim) one odometer step.
class Cursor {
 public:
  Cursor(const Canon& c, std::int64_t pos) : c_(&c), coords_(c.dims.size()), m_(c.dims.size()) {
    for (std::size_t i = m_; i-- > 0;) {
      coords_[i] = pos % c.dims[i];
      pos /= c.dims[i];
    }
    rebase();
  }

  /// The next run, at most `limit` (>= 1) elements long.
  Run next(std::int64_t limit) noexcept {
    const std::int64_t d = c_->dims[m_ - 1], b = c_->block[m_ - 1];
    std::int64_t& c = coords_[m_ - 1];
    Run r;
    if (b == 1) {
      r = Run{std::min(d - c, limit), base_ + c, true};
    } else {
      r = Run{std::min({b - c % b, d - c, limit}), base_ + c / b, false};
    }
    c += r.len;
    if (c == d) {
      c = 0;
      for (std::size_t i = m_ - 1; i-- > 0;) {
        if (++coords_[i] < c_->dims[i]) break;
        coords_[i] = 0;
      }
      rebase();
    }
    return r;
  }

 private:
  void rebase() noexcept {
    base_ = 0;
    for (std::size_t i = 0; i + 1 < m_; ++i) base_ += (coords_[i] / c_->block[i]) * c_->gstride[i];
  }

  const Canon* c_;
  std::vector<std::int64_t> coords_;
  std::size_t m_;
  std::int64_t base_ = 0;
};

/// Read access to stored scales and offsets. With two levels, scale() and decode() give each
/// group's effective scale: its stored scale times the stored tensor scale, in f32.
struct ParamReader {
  const unsigned char* scales;
  const unsigned char* offsets;  // null for symmetric
  ScaleType type;
  std::size_t sb;
  bool offsets_signed;
  bool two_level;
  float outer;  // the tensor scale; 1 with one level

  explicit ParamReader(const QuantizedParts& p)
      : scales(reinterpret_cast<const unsigned char*>(p.scales.data())),
        offsets(p.scheme.mode == Mode::affine
                    ? reinterpret_cast<const unsigned char*>(p.offsets.data())
                    : nullptr),
        type(p.scheme.scale_type),
        sb(scale_bytes(p.scheme.scale_type)),
        offsets_signed(is_signed(p.scheme.value)),
        two_level(p.scheme.tensor_scale.has_value()),
        outer(p.tensor_scale()) {}

  [[nodiscard]] float scale(std::int64_t p) const {
    const float s = load_scale(
        type, reinterpret_cast<const std::byte*>(scales + static_cast<std::size_t>(p) * sb));
    return two_level ? s * outer : s;
  }
  [[nodiscard]] std::int32_t offset(std::int64_t p) const noexcept {
    if (!offsets) return 0;
    const unsigned char b = offsets[p];
    return offsets_signed ? static_cast<std::int32_t>(static_cast<signed char>(b)) : b;
  }
  /// Scales and offsets of params [p, p+n) into plain arrays, the type switch outside the loop.
  void decode(std::int64_t p, std::int64_t n, float* __restrict s,
              std::int32_t* __restrict o) const {
    const unsigned char* src = scales + static_cast<std::size_t>(p) * sb;
    switch (type) {
      case ScaleType::f32:
        std::memcpy(s, src, static_cast<std::size_t>(n) * 4);
        break;
      case ScaleType::f16:
        for (std::int64_t i = 0; i < n; ++i)
          s[i] = f16_to_f32(static_cast<std::uint16_t>(src[2 * i] | (src[2 * i + 1] << 8)));
        break;
      case ScaleType::bf16:
        for (std::int64_t i = 0; i < n; ++i)
          s[i] = bf16_to_f32(static_cast<std::uint16_t>(src[2 * i] | (src[2 * i + 1] << 8)));
        break;
      case ScaleType::ue8m0:
        for (std::int64_t i = 0; i < n; ++i) s[i] = ue8m0_value(src[i]);
        break;
      case ScaleType::ue4m3: {
        const float* t = minifloat_table(ValueType::e4m3);
        for (std::int64_t i = 0; i < n; ++i) s[i] = t[src[i]];
        break;
      }
    }
    if (two_level)
      for (std::int64_t i = 0; i < n; ++i) s[i] *= outer;
    if (!offsets) {
      std::fill(o, o + n, 0);
    } else if (offsets_signed) {
      for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<signed char>(offsets[p + i]);
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i] = offsets[p + i];
    }
  }
};

/// Round half to even for |v| <= 2^22: adding 1.5 * 2^23 pushes the fraction out of the
/// mantissa, so the FPU's default rounding mode does the rounding. Branch-free and vectorisable,
/// unlike std::nearbyint without SSE4.1.
inline float rne(float v) noexcept {
#ifdef __FAST_MATH__
  return std::nearbyint(v);
#else
  constexpr float magic = 12582912.0f;
  return (v + magic) - magic;
#endif
}

/// One quantized value: clamp(rne(x / s), lo, hi) + off, with lo = qmin - off and hi = qmax -
/// off. Clamping before rounding gives the same result (the bounds are integers) and keeps
/// rne() in range; NaN becomes 0 before the clamp.
inline std::int32_t quant1(float x, float s, std::int32_t off, float lo, float hi) noexcept {
  float v = x / s;
  v = v == v ? v : 0.0f;
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  return static_cast<std::int32_t>(rne(v)) + off;
}

// The loops below run in blocks of kLanes with a constant trip count, so that GCC vectorises
// them at -O2 too (its -O2 cost model refuses loops that need a scalar epilogue).
inline constexpr int kLanes = 16;

/// q = clamp(rne(x / s)) + off over one run that shares a scale. True division, not a multiply
/// by 1 / s: the product can round across a half-integer and differ from ONNX, and measured on
/// SSE2 the division loop was also faster than multiply-and-check-for-ties (0.35 vs 0.61 ns per
/// value): the loop is bound by its ~15 vector ops per 4 values, not by divps.
/// `T` is int32_t (a tile to pack) or unsigned char (8-bit slots, written straight to the
/// stream as two's complement bytes).
template <class T>
inline void quant_uniform(const float* __restrict x, std::int64_t n, float s, std::int32_t off,
                          float lo, float hi, T* __restrict q) noexcept {
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) q[i + j] = static_cast<T>(quant1(x[i + j], s, off, lo, hi));
  for (; i < n; ++i) q[i] = static_cast<T>(quant1(x[i], s, off, lo, hi));
}

inline void quant_each(const float* __restrict x, std::int64_t n, const float* __restrict s,
                       const std::int32_t* __restrict off, std::int32_t qmn, std::int32_t qmx,
                       std::int32_t* __restrict q) noexcept {
  const auto one = [&](std::int64_t i) {
    return quant1(x[i], s[i], off[i], static_cast<float>(qmn - off[i]),
                  static_cast<float>(qmx - off[i]));
  };
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) q[i + j] = one(i + j);
  for (; i < n; ++i) q[i] = one(i);
}

inline void deq_uniform(const std::int32_t* __restrict q, std::int64_t n, float s, std::int32_t off,
                        float* __restrict out) noexcept {
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) out[i + j] = static_cast<float>(q[i + j] - off) * s;
  for (; i < n; ++i) out[i] = static_cast<float>(q[i] - off) * s;
}

inline void deq_each(const std::int32_t* __restrict q, std::int64_t n, const float* __restrict s,
                     const std::int32_t* __restrict off, float* __restrict out) noexcept {
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      out[i + j] = static_cast<float>(q[i + j] - off[i + j]) * s[i + j];
  for (; i < n; ++i) out[i] = static_cast<float>(q[i] - off[i]) * s[i];
}

/// Folds x[0, n) into [lo, hi], ignoring NaN (a NaN compares false and never replaces).
/// Eight independent lanes let GCC vectorise without reassociating a float reduction.
inline void minmax_uniform(const float* __restrict x, std::int64_t n, float& lo,
                           float& hi) noexcept {
  constexpr int L = 16;
  float l[L], h[L];
  for (int j = 0; j < L; ++j) l[j] = lo, h[j] = hi;
  std::int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) {
      const float v = x[i + j];
      l[j] = v < l[j] ? v : l[j];
      h[j] = v > h[j] ? v : h[j];
    }
  for (; i < n; ++i) {
    l[0] = x[i] < l[0] ? x[i] : l[0];
    h[0] = x[i] > h[0] ? x[i] : h[0];
  }
  // Tree reduction: a chain of 16 dependent selects would cost more than a 32-value run itself.
  // Each step has a constant width so that GCC keeps it in vector registers.
  const auto fold = [&](auto width) {
    for (int j = 0; j < decltype(width)::value; ++j) {
      l[j] = l[j + decltype(width)::value] < l[j] ? l[j + decltype(width)::value] : l[j];
      h[j] = h[j + decltype(width)::value] > h[j] ? h[j + decltype(width)::value] : h[j];
    }
  };
  fold(std::integral_constant<int, 8>{});
  fold(std::integral_constant<int, 4>{});
  fold(std::integral_constant<int, 2>{});
  fold(std::integral_constant<int, 1>{});
  lo = l[0];
  hi = h[0];
}

inline void minmax_each(const float* __restrict x, std::int64_t n, float* __restrict lo,
                        float* __restrict hi) noexcept {
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      lo[i + j] = x[i + j] < lo[i + j] ? x[i + j] : lo[i + j];
      hi[i + j] = x[i + j] > hi[i + j] ? x[i + j] : hi[i + j];
    }
  for (; i < n; ++i) {
    lo[i] = x[i] < lo[i] ? x[i] : lo[i];
    hi[i] = x[i] > hi[i] ? x[i] : hi[i];
  }
}

/// Runs f(b, e) over [begin, end) split at multiples of kChunk (so at byte boundaries of any
/// packed stream), on the calling thread for small ranges and with oneTBB otherwise.
template <class F>
void for_chunks(std::int64_t begin, std::int64_t end, F&& f) {
  if (end <= begin) return;
  if (end - begin < kSerialBelow) {
    f(begin, end);
    return;
  }
  const std::int64_t u0 = begin / kChunk, u1 = ceil_div(end, kChunk);
  ferry::detail::parallel_for(u0, u1, 1, [&](std::int64_t lo, std::int64_t hi) {
    f(std::max(begin, lo * kChunk), std::min(end, hi * kChunk));
  });
}

}  // namespace ferry::quant::detail

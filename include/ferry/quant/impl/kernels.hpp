// Ferry: the host quantize / dequantize kernels declared in quant/kernels.hpp (tiles of 1024
// values, split over oneTBB above 64 Ki elements). Compiled once by src/quant.cpp, or included
// inline by quant/kernels.hpp with FERRY_HEADER_ONLY. Nothing else includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/config.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/error.hpp"
#include "ferry/quant/half.hpp"
#include "ferry/quant/kernels.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

namespace ferry::quant {
namespace detail {

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

/// Read access to stored scales and offsets.
struct ParamReader {
  const unsigned char* scales;
  const unsigned char* offsets;  // null for symmetric
  ScaleType type;
  std::size_t sb;
  bool offsets_signed;

  explicit ParamReader(const QuantizedParts& p)
      : scales(reinterpret_cast<const unsigned char*>(p.scales.data())),
        offsets(p.scheme.mode == Mode::affine
                    ? reinterpret_cast<const unsigned char*>(p.offsets.data())
                    : nullptr),
        type(p.scheme.scale_type),
        sb(scale_bytes(p.scheme.scale_type)),
        offsets_signed(is_signed(p.scheme.value)) {}

  [[nodiscard]] float scale(std::int64_t p) const {
    return load_scale(
        type, reinterpret_cast<const std::byte*>(scales + static_cast<std::size_t>(p) * sb));
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
    }
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

struct KernelArgs {
  const Canon* canon;
  ParamReader params;
  ValueType value;
  int slot;
  std::int32_t qmn, qmx;
};

/// Quantizes x[begin, end) (indices into the whole tensor) into the packed stream `out`;
/// `begin` must sit on a byte boundary of the stream.
inline void quantize_range(const KernelArgs& a, const float* x, std::int64_t begin,
                           std::int64_t end, unsigned char* out) {
  std::int32_t q[kTile], off[kTile];
  float sc[kTile];
  Cursor cur(*a.canon, begin);
  for (std::int64_t e = begin; e < end; e += kTile) {
    const std::int64_t n = std::min(kTile, end - e);
    // 8-bit slots of runs that share a scale go straight to the stream; only per-element runs
    // and sub-byte values pass through the int32 tile.
    for (std::int64_t k = 0; k < n;) {
      const Run r = cur.next(n - k);
      if (!r.per_element) {
        const float s = a.params.scale(r.param);
        const std::int32_t o = a.params.offset(r.param);
        const float lo = static_cast<float>(a.qmn - o), hi = static_cast<float>(a.qmx - o);
        if (a.slot == 8)
          quant_uniform(x + e + k, r.len, s, o, lo, hi, out + e + k);
        else
          quant_uniform(x + e + k, r.len, s, o, lo, hi, q + k);
      } else {
        a.params.decode(r.param, r.len, sc, off);
        quant_each(x + e + k, r.len, sc, off, a.qmn, a.qmx, q + k);
        if (a.slot == 8) pack_range(8, q + k, e + k, r.len, out);
      }
      k += r.len;
    }
    if (a.slot != 8) pack_range(a.slot, q, e, n, out);
  }
}

/// Dequantizes elements [begin, end) of the stream `in` into out[0, end - begin).
inline void dequantize_tiles(const KernelArgs& a, const unsigned char* in, std::int64_t begin,
                             std::int64_t end, float* out) {
  std::int32_t q[kTile], off[kTile];
  float sc[kTile];
  const bool sgn = is_signed(a.value);
  Cursor cur(*a.canon, begin);
  for (std::int64_t e = begin; e < end; e += kTile) {
    const std::int64_t n = std::min(kTile, end - e);
    unpack_range(a.slot, sgn, in, e, n, q);
    float* o = out + (e - begin);
    for (std::int64_t k = 0; k < n;) {
      const Run r = cur.next(n - k);
      if (!r.per_element) {
        deq_uniform(q + k, r.len, a.params.scale(r.param), a.params.offset(r.param), o + k);
      } else {
        a.params.decode(r.param, r.len, sc, off);
        deq_each(q + k, r.len, sc, off, o + k);
      }
      k += r.len;
    }
  }
}

/// dequantize_tiles for a rank-1 Canon (per tensor; per axis 0; blocks along the last dim that
/// divide it): the param of element e is (e / block) * gstride, so each block decodes straight
/// from the packed bytes to floats with its scale and offset loaded once. Same arithmetic as
/// the tiled path, (q - offset) * scale, so the results are bit-identical.
template <int Slot, bool Signed>
inline void dequantize_flat(const KernelArgs& a, const unsigned char* in, std::int64_t begin,
                            std::int64_t end, float* out) {
  const std::int64_t b = a.canon->block[0], g = a.canon->gstride[0];
  for (std::int64_t e = begin; e < end;) {
    const std::int64_t p = e / b;
    const std::int64_t stop = std::min(end, (p + 1) * b);
    const float s = a.params.scale(p * g);
    const std::int32_t o = a.params.offset(p * g);
    float* __restrict dst = out + (e - begin);
    if constexpr (Slot == 8) {
      using V = std::conditional_t<Signed, signed char, unsigned char>;
      const V* __restrict src = reinterpret_cast<const V*>(in) + e;
      for (std::int64_t i = 0; i < stop - e; ++i)
        dst[i] = static_cast<float>(static_cast<std::int32_t>(src[i]) - o) * s;
    } else {
      static_assert(Slot == 4);
      std::int64_t i = e;
      if (i % 2 != 0) {
        *dst++ = static_cast<float>(field<4, Signed>(in[i / 2], 1) - o) * s;
        ++i;
      }
      const unsigned char* __restrict src = in + i / 2;
      const std::int64_t pairs = (stop - i) / 2;
      for (std::int64_t k = 0; k < pairs; ++k) {
        dst[2 * k] = static_cast<float>(field<4, Signed>(src[k], 0) - o) * s;
        dst[2 * k + 1] = static_cast<float>(field<4, Signed>(src[k], 1) - o) * s;
      }
      i += 2 * pairs;
      if (i < stop) dst[2 * pairs] = static_cast<float>(field<4, Signed>(in[i / 2], 0) - o) * s;
    }
    e = stop;
  }
}

/// Folds x[begin, end) into per-param [lo, hi] (indexed by absolute param).
inline void calibrate_range(const Canon& c, const float* x, std::int64_t begin, std::int64_t end,
                            float* lo, float* hi) {
  Cursor cur(c, begin);
  for (std::int64_t e = begin; e < end;) {
    const Run r = cur.next(end - e);
    if (!r.per_element)
      minmax_uniform(x + e, r.len, lo[r.param], hi[r.param]);
    else
      minmax_each(x + e, r.len, lo + r.param, hi + r.param);
    e += r.len;
  }
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
        affine_(parts.scheme.mode == Mode::affine),
        signed_(is_signed(parts.scheme.value)),
        smallest_(type_ == ScaleType::f16 ? 6.103515625e-05f : std::numeric_limits<float>::min()) {}

  void operator()(std::int64_t p, float lo, float hi) const {
    float range, scale;
    if (!affine_) {
      range = signed_ ? std::max(hi, -lo) : hi;
      scale = range / static_cast<float>(qx_);
    } else {
      range = hi - lo;
      scale = range / static_cast<float>(qx_ - qn_);
    }
    if (range == 0.0f) scale = 1.0f;
    if (!std::isfinite(scale))
      ferry::detail::raise<QuantError>(
          "quant.range",
          "quantize_dynamic: '{}' over shape {}: param {} spans [{}, {}], which has no finite "
          "scale",
          parts_->scheme, parts_->shape, p, lo, hi);
    float stored = round_to(type_, scale);
    if (stored == 0.0f) stored = smallest_;
    if (!std::isfinite(stored))
      ferry::detail::raise<QuantError>("quant.range",
                                       "quantize_dynamic: '{}' over shape {}: scale {} of param {} "
                                       "(range [{}, {}]) overflows {}",
                                       parts_->scheme, parts_->shape, scale, p, lo, hi, type_);
    store_scale(type_, stored, scales_ + static_cast<std::size_t>(p) * sb_);
    if (affine_) {
      const float t = static_cast<float>(qn_) - lo / stored;
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
  bool affine_, signed_;
  float smallest_;
};

inline QuantizedParts empty_parts(const Scheme& s, const Shape& shape, std::int64_t np,
                                  const VectorSource* src) {
  QuantizedParts p;
  p.scheme = s;
  p.shape = shape;
  const std::size_t nd = data_bytes(s, shape.numel());
  const std::size_t ns = static_cast<std::size_t>(np) * scale_bytes(s.scale_type);
  const std::size_t no = s.mode == Mode::affine ? static_cast<std::size_t>(np) : 0;
  if (src != nullptr) {
    p.data = src->take(nd);
    p.scales = src->take(ns);
    p.offsets = src->take(no);
  }
  alloc_zeroed(p.data, nd);
  p.scales.resize(ns);
  p.offsets.resize(no);
  return p;
}

inline KernelArgs kernel_args(const QuantizedParts& p, const Canon& c) {
  return KernelArgs{&c,
                    ParamReader(p),
                    p.scheme.value,
                    slot_bits(p.scheme.value, p.scheme.storage),
                    qmin(p.scheme.value, p.scheme.mode),
                    qmax(p.scheme.value, p.scheme.mode)};
}

}  // namespace detail

FERRY_FUNC QuantizedParts quantize(const Scheme& s, const Shape& shape, std::span<const float> x,
                                   std::span<const float> scales,
                                   std::span<const std::int32_t> offsets, const VectorSource* src) {
  check_params(s, shape, scales, offsets);
  const std::int64_t numel = shape.numel();
  if (x.size() != static_cast<std::size_t>(numel))
    ferry::detail::raise<QuantError>("quant.args",
                                     "quantize: '{}' over shape {}: x holds {} values, expected {}",
                                     s, shape, x.size(), numel);
  const std::int64_t np = num_params(s, shape);
  QuantizedParts parts = detail::empty_parts(s, shape, np, src);
  const std::size_t sb = scale_bytes(s.scale_type);
  for (std::int64_t p = 0; p < np; ++p) {
    store_scale(s.scale_type, scales[static_cast<std::size_t>(p)],
                parts.scales.data() + static_cast<std::size_t>(p) * sb);
    if (s.mode == Mode::affine)
      parts.offsets[static_cast<std::size_t>(p)] =
          static_cast<std::byte>(static_cast<unsigned char>(offsets[static_cast<std::size_t>(p)]));
  }
  const detail::Canon c = detail::make_canon(s, shape);
  const detail::KernelArgs a = detail::kernel_args(parts, c);
  auto* out = reinterpret_cast<unsigned char*>(parts.data.data());
  detail::for_chunks(0, numel, [&](std::int64_t b, std::int64_t e) {
    detail::quantize_range(a, x.data(), b, e, out);
  });
  return parts;
}

FERRY_FUNC QuantizedParts quantize_dynamic(const Scheme& s, const Shape& shape,
                                           std::span<const float> x, const VectorSource* src) {
  s.validate_for(shape);
  const std::int64_t numel = shape.numel();
  if (x.size() != static_cast<std::size_t>(numel))
    ferry::detail::raise<QuantError>(
        "quant.args", "quantize_dynamic: '{}' over shape {}: x holds {} values, expected {}", s,
        shape, x.size(), numel);
  const std::int64_t np = num_params(s, shape);
  QuantizedParts parts = detail::empty_parts(s, shape, np, src);
  const detail::Canon c = detail::make_canon(s, shape);
  std::vector<float> lo(static_cast<std::size_t>(np), 0.0f), hi(static_cast<std::size_t>(np), 0.0f);
  auto* out = reinterpret_cast<unsigned char*>(parts.data.data());
  const detail::KernelArgs a = detail::kernel_args(parts, c);
  const detail::Finalizer finalize(parts);
  if (numel == 0) {
    for (std::int64_t p = 0; p < np; ++p) finalize(p, 0.0f, 0.0f);
    return parts;
  }
  const std::int64_t d0 = c.dims[0], b0 = c.block[0];
  const std::int64_t g0 = detail::ceil_div(d0, b0);
  if (g0 > 1) {
    // Slabs of b0 rows along the outermost dim own disjoint, contiguous params: each task
    // calibrates, finalizes and quantizes its slabs while they are still in cache.
    const std::int64_t inner = numel / d0, slab = b0 * inner;
    const std::int64_t per = 8 / a.slot;  // values per byte: units start on byte boundaries
    const std::int64_t k = per / std::gcd(slab, per);
    const std::int64_t units = detail::ceil_div(g0, k);
    const auto body = [&](std::int64_t u_lo, std::int64_t u_hi) {
      const std::int64_t g_lo = u_lo * k, g_hi = std::min(g0, u_hi * k);
      const std::int64_t e_lo = g_lo * slab, e_hi = std::min(d0, g_hi * b0) * inner;
      detail::calibrate_range(c, x.data(), e_lo, e_hi, lo.data(), hi.data());
      for (std::int64_t p = g_lo * c.gstride[0]; p < g_hi * c.gstride[0]; ++p)
        finalize(p, lo[static_cast<std::size_t>(p)], hi[static_cast<std::size_t>(p)]);
      detail::quantize_range(a, x.data(), e_lo, e_hi, out);
    };
    if (numel < detail::kSerialBelow) {
      body(0, units);
    } else {
      const std::int64_t grain = std::max<std::int64_t>(1, detail::kChunk / (k * slab));
      ferry::detail::parallel_for(0, units, grain, body);
    }
    return parts;
  }
  // One block along the outermost dim: every element may touch every param. Reduce in
  // parallel with per-task ranges when the params are few next to the elements.
#ifndef FERRY_SERIAL_KERNELS
  constexpr bool reduce_in_parallel = true;
#else
  constexpr bool reduce_in_parallel = false;  // the ThreadSanitizer build: no TBB threads
#endif
  if (reduce_in_parallel && numel >= detail::kSerialBelow && np * 64 <= numel) {
    using Acc = std::pair<std::vector<float>, std::vector<float>>;
    const auto un = static_cast<std::size_t>(np);
    Acc acc = tbb::parallel_reduce(
        tbb::blocked_range<std::int64_t>(0, detail::ceil_div(numel, detail::kChunk)), Acc{},
        [&](const tbb::blocked_range<std::int64_t>& r, Acc part) {
          if (part.first.empty())
            part = Acc(std::vector<float>(un, 0.0f), std::vector<float>(un, 0.0f));
          detail::calibrate_range(c, x.data(), r.begin() * detail::kChunk,
                                  std::min(numel, r.end() * detail::kChunk), part.first.data(),
                                  part.second.data());
          return part;
        },
        [](Acc l, Acc r) {
          if (l.first.empty()) return r;
          for (std::size_t i = 0; i < r.first.size(); ++i) {
            l.first[i] = std::min(l.first[i], r.first[i]);
            l.second[i] = std::max(l.second[i], r.second[i]);
          }
          return l;
        });
    if (!acc.first.empty()) {
      lo = std::move(acc.first);
      hi = std::move(acc.second);
    }
  } else {
    detail::calibrate_range(c, x.data(), 0, numel, lo.data(), hi.data());
  }
  for (std::int64_t p = 0; p < np; ++p)
    finalize(p, lo[static_cast<std::size_t>(p)], hi[static_cast<std::size_t>(p)]);
  detail::for_chunks(0, numel, [&](std::int64_t b, std::int64_t e) {
    detail::quantize_range(a, x.data(), b, e, out);
  });
  return parts;
}

FERRY_FUNC void dequantize_range(const QuantizedParts& q, std::int64_t begin, std::int64_t end,
                                 std::span<float> out) {
  detail::check_sizes(q);
  const std::int64_t numel = q.shape.numel();
  if (begin < 0 || begin > end || end > numel)
    ferry::detail::raise<IndexError>(
        "quant.range",
        "dequantize_range: [{}, {}) is not a range of the {} elements of "
        "shape {}",
        begin, end, numel, q.shape);
  if (out.size() != static_cast<std::size_t>(end - begin))
    ferry::detail::raise<QuantError>("quant.args",
                                     "dequantize_range: '{}' over shape {}: out holds {} floats, "
                                     "expected {} for [{}, {})",
                                     q.scheme, q.shape, out.size(), end - begin, begin, end);
  if (begin == end) return;
  const detail::Canon c = detail::make_canon(q.scheme, q.shape);
  const detail::KernelArgs a = detail::kernel_args(q, c);
  const auto* in = reinterpret_cast<const unsigned char*>(q.data.data());
  const bool sgn = is_signed(q.scheme.value);
  const auto run = [&](auto kernel) {
    detail::for_chunks(begin, end, [&](std::int64_t b, std::int64_t e) {
      kernel(a, in, b, e, out.data() + (b - begin));
    });
  };
  if (c.dims.size() == 1 && a.slot == 8)
    sgn ? run(detail::dequantize_flat<8, true>) : run(detail::dequantize_flat<8, false>);
  else if (c.dims.size() == 1 && a.slot == 4)
    sgn ? run(detail::dequantize_flat<4, true>) : run(detail::dequantize_flat<4, false>);
  else
    run(detail::dequantize_tiles);
}

FERRY_FUNC void dequantize(const QuantizedParts& q, std::span<float> out) {
  detail::check_sizes(q);
  if (out.size() != static_cast<std::size_t>(q.shape.numel()))
    ferry::detail::raise<QuantError>(
        "quant.args", "dequantize: '{}' over shape {}: out holds {} floats, expected {}", q.scheme,
        q.shape, out.size(), q.shape.numel());
  dequantize_range(q, 0, q.shape.numel(), out);
}

FERRY_FUNC std::vector<std::int32_t> values(const QuantizedParts& q) {
  detail::check_sizes(q);
  const std::int64_t n = q.shape.numel();
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  detail::unpack_range(detail::slot_bits(q.scheme.value, q.scheme.storage),
                       is_signed(q.scheme.value),
                       reinterpret_cast<const unsigned char*>(q.data.data()), 0, n, v.data());
  return v;
}

}  // namespace ferry::quant

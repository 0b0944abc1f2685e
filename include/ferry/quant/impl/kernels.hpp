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
#include "ferry/quant/impl/finalize.hpp"
#include "ferry/quant/impl/loops.hpp"
#include "ferry/quant/kernels.hpp"
#include "ferry/quant/minifloat.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

namespace ferry::quant {
namespace detail {

struct KernelArgs {
  const Canon* canon;
  ParamReader params;
  ValueType value;
  int slot;
  std::int32_t qmn, qmx;
  const float* lut = nullptr;  // float value types and codebooks: the value of each code
  MinifloatFormat fmt{0, 0, 0, false, false, 0, 0};
  std::size_t book = 0;  // codebooks: the table's size (lut is the table); 0 for float types

  /// The code of x / s: a float type's encode, or the codebook's nearest value.
  [[nodiscard]] std::uint32_t encode(float v) const noexcept {
    return book != 0 ? book_encode(lut, book, v) : minifloat_encode(fmt, v);
  }
  /// The index of the codebook value nearest v (compared in double, so exactly); a tie goes
  /// to the smaller value (bitsandbytes' thresholds compare with >), NaN to the value nearest
  /// 0, and +-inf to the ends.
  static std::uint32_t book_encode(const float* t, std::size_t n, float v) noexcept {
    if (v != v) v = 0.0f;
    const float* hi = std::lower_bound(t, t + n, v);  // the first value >= v
    if (hi == t) return 0;
    if (hi == t + n) return static_cast<std::uint32_t>(n - 1);
    const double d_hi = static_cast<double>(*hi) - v, d_lo = v - static_cast<double>(hi[-1]);
    return static_cast<std::uint32_t>((d_hi < d_lo ? hi : hi - 1) - t);
  }
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
    // 8-bit slots of runs that share a scale go straight to the stream; only per-element runs,
    // float codes and sub-byte values pass through the int32 tile.
    for (std::int64_t k = 0; k < n;) {
      const Run r = cur.next(n - k);
      if (a.lut != nullptr) {  // float value types and codebooks: code = encode(x / s)
        const float* xr = x + e + k;
        if (!r.per_element) {
          const float s = a.params.scale(r.param);
          for (std::int64_t i = 0; i < r.len; ++i)
            q[k + i] = static_cast<std::int32_t>(a.encode(xr[i] / s));
        } else {
          a.params.decode(r.param, r.len, sc, off);
          for (std::int64_t i = 0; i < r.len; ++i)
            q[k + i] = static_cast<std::int32_t>(a.encode(xr[i] / sc[i]));
        }
        if (a.slot == 8) pack_range(8, q + k, e + k, r.len, out);
      } else if (!r.per_element) {
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
      if (a.lut != nullptr) {  // float codes: value = table[code] * scale
        if (!r.per_element) {
          const float s = a.params.scale(r.param);
          for (std::int64_t i = 0; i < r.len; ++i) o[k + i] = a.lut[q[k + i]] * s;
        } else {
          a.params.decode(r.param, r.len, sc, off);
          for (std::int64_t i = 0; i < r.len; ++i) o[k + i] = a.lut[q[k + i]] * sc[i];
        }
      } else if (!r.per_element) {
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

inline QuantizedParts empty_parts(const Scheme& s, const Shape& shape, std::int64_t np,
                                  const VectorSource* src) {
  QuantizedParts p;
  p.scheme = s;
  p.shape = shape;
  const std::size_t nd = data_bytes(s, shape.numel());
  const std::size_t ns =
      static_cast<std::size_t>(np) * scale_bytes(s.scale_type) + tensor_scale_bytes(s);
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
  KernelArgs a{&c,
               ParamReader(p),
               p.scheme.value,
               slot_bits(p.scheme.value, p.scheme.storage),
               qmin(p.scheme.value, p.scheme.mode),
               qmax(p.scheme.value, p.scheme.mode)};
  if (!p.scheme.codebook.empty()) {
    a.lut = p.scheme.codebook.data();
    a.book = p.scheme.codebook.size();
  } else if (is_float(p.scheme.value)) {
    a.lut = minifloat_table(p.scheme.value);
    a.fmt = minifloat_format(p.scheme.value);
  }
  return a;
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
  if (s.tensor_scale)  // the last of `scales`, after the groups' (check_params counted them)
    store_scale(*s.tensor_scale, scales[static_cast<std::size_t>(np)],
                parts.scales.data() + static_cast<std::size_t>(np) * sb);
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
  if (s.tensor_scale) detail::store_tensor_scale(parts, x);
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
  if (a.lut != nullptr)
    run(detail::dequantize_tiles);
  else if (c.dims.size() == 1 && a.slot == 8)
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

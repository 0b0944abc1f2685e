// Ferry: interpolate (issue #19): nearest, (bi/tri)linear and bicubic resizing of the spatial
// dims, as a decomposition: one dim at a time, the source rows picked by index_select and
// blended with weights computed on the host from the shapes. Included by ferry/ops.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ferry/ops.hpp"

// Semantics are PyTorch's torch.nn.functional.interpolate: x [N, C, spatial...]; the output
// size given, or scale_factor (the size floor(in * factor), and the factor itself used to map
// positions back, as torch does when recompute_scale_factor is unset). Source positions:
// nearest floor(dst * in / out) (in f32, as torch's CPU kernel); linear and cubic with
// align_corners dst (in - 1) / (out - 1), without (dst + 0.5) in / out - 0.5 (linear clamps it at
// 0). Cubic is Keys' convolution with A = -0.75 over the 4 nearest rows, clamped at the edges.
namespace ferry {

/// How interpolate fills: nearest ("nearest"), linear over each spatial dim ("linear",
/// "bilinear", "trilinear") or cubic ("bicubic", 2 spatial dims).
enum class InterpolateMode { nearest, linear, cubic };
/// mode, align_corners (linear and cubic only) and, instead of a size, one scale factor per
/// spatial dim.
struct InterpolateOptions {
  InterpolateMode mode = InterpolateMode::nearest;
  bool align_corners = false;
  std::vector<double> scale_factor = {};
};

namespace detail::interp {
/// The source rows and their weights of each output row along one dim.
struct Taps {
  std::vector<std::int64_t> index;  // out * taps
  std::vector<double> weight;       // out * taps
  std::int64_t taps = 1;
};

inline double cubic1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
inline double cubic2(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

/// `scale`: the factor's inverse when a scale factor was given, else 0 (in / out is used).
inline Taps taps(InterpolateMode m, bool align, std::int64_t in, std::int64_t out, double scale) {
  Taps t;
  if (m == InterpolateMode::nearest) {
    const float s =
        scale > 0 ? static_cast<float>(scale) : static_cast<float>(in) / static_cast<float>(out);
    for (std::int64_t o = 0; o < out; ++o) {
      const auto i = static_cast<std::int64_t>(std::floor(static_cast<float>(o) * s));
      t.index.push_back(std::min(i, in - 1));
      t.weight.push_back(1.0);
    }
    return t;
  }
  double s = 0;
  if (align)
    s = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  else
    s = scale > 0 ? scale : static_cast<double>(in) / static_cast<double>(out);
  auto clamp = [in](std::int64_t i) { return std::min(std::max<std::int64_t>(i, 0), in - 1); };
  t.taps = m == InterpolateMode::linear ? 2 : 4;
  for (std::int64_t o = 0; o < out; ++o) {
    double src = align ? s * static_cast<double>(o) : s * (static_cast<double>(o) + 0.5) - 0.5;
    if (m == InterpolateMode::linear) {
      if (src < 0) src = 0;
      const auto i0 = static_cast<std::int64_t>(std::floor(src));
      const double l = src - static_cast<double>(i0);
      t.index.insert(t.index.end(), {clamp(i0), clamp(i0 + 1)});
      t.weight.insert(t.weight.end(), {1 - l, l});
    } else {
      const double f = std::floor(src), x = src - f, a = -0.75;
      const auto i0 = static_cast<std::int64_t>(f);
      for (std::int64_t k = -1; k <= 2; ++k) t.index.push_back(clamp(i0 + k));
      t.weight.insert(t.weight.end(),
                      {cubic2(x + 1, a), cubic1(x, a), cubic1(1 - x, a), cubic2(2 - x, a)});
    }
  }
  return t;
}

/// x resized along `dim` by the taps: index_select of each tap's rows, times its weights
/// ([out] along dim, 1 elsewhere), summed.
template <Backend B>
Tensor<B> along(const char* op, Tensor<B> x, std::int64_t dim, const Taps& t) {
  const auto out = static_cast<std::int64_t>(t.index.size()) / t.taps;
  const auto table = [&](std::int64_t k) {
    std::vector<std::int64_t> v;
    for (std::int64_t o = 0; o < out; ++o)
      v.push_back(t.index[static_cast<std::size_t>(o * t.taps + k)]);
    return from_host(x, op, TensorData::from(v, Shape{out}));
  };
  if (t.taps == 1) return index_select(std::move(x), dim, table(0));
  std::vector<std::int64_t> ws(x.rank(), 1);
  ws[static_cast<std::size_t>(dim)] = out;
  Tensor<B> y;
  for (std::int64_t k = 0; k < t.taps; ++k) {
    std::vector<double> w;
    for (std::int64_t o = 0; o < out; ++o)
      w.push_back(t.weight[static_cast<std::size_t>(o * t.taps + k)]);
    auto wt = ferry::cast(from_host(x, op, TensorData::from(w, Shape(ws))), x.dtype());
    auto term = index_select(x, dim, table(k)) * std::move(wt);
    y = k == 0 ? std::move(term) : std::move(y) + std::move(term);
  }
  return y;
}
}  // namespace detail::interp

/// torch.nn.functional.interpolate of x [N, C, spatial...] (1 to 3 spatial dims; cubic: 2) to
/// `size` (one per spatial dim), or, with `size` empty, by `o.scale_factor`. Nearest takes any
/// dtype but quantized; linear and cubic floats (f16/bf16 in f32, rounded once).
template <Backend B>
[[nodiscard]] Tensor<B> interpolate(Tensor<B> x, std::vector<std::int64_t> size,
                                    const InterpolateOptions& o = {}) {
  constexpr const char* op = "interpolate";
  (void)detail::common_device(op, x);
  detail::not_quantized(op, x.dtype());
  const bool nearest = o.mode == InterpolateMode::nearest;
  if (!nearest)
    detail::want_kind(op, x.dtype(), {Kind::Float}, "a float input for linear or cubic");
  const std::size_t sp = x.rank() < 3 ? 0 : x.rank() - 2;
  if (sp < 1 || sp > 3 || (o.mode == InterpolateMode::cubic && sp != 2))
    detail::raise<ShapeError>("shape", "{}: input {} must be [N, C] and {} spatial dims", op,
                              x.shape(), o.mode == InterpolateMode::cubic ? "2" : "1 to 3");
  if (nearest && o.align_corners)
    detail::raise<ValueError>("value", "{}: align_corners is for linear and cubic modes", op);
  const bool by_factor = size.empty();
  if (by_factor == o.scale_factor.empty() ||
      (by_factor ? o.scale_factor.size() : size.size()) != sp)
    detail::raise<ValueError>("value",
                              "{}: give either a size or a scale factor, one per spatial dim of "
                              "{} ({} and {} given)",
                              op, x.shape(), size.size(), o.scale_factor.size());
  for (std::size_t i = 0; i < sp; ++i) {
    const std::int64_t in = x.shape()[2 + i];
    if (by_factor) {
      const double f = o.scale_factor[i];
      if (!(f > 0) || !std::isfinite(f))
        detail::raise<ValueError>("value", "{}: scale factor {} (needs > 0)", op, f);
      size.push_back(static_cast<std::int64_t>(std::floor(static_cast<double>(in) * f)));
    }
    if (size[i] < 1 || in < 1)
      detail::raise<ShapeError>("shape", "{}: input {} to size {} (needs both >= 1)", op, x.shape(),
                                size[i]);
  }
  const DType d = x.dtype();
  const bool half = d == DType::f16 || d == DType::bf16;
  if (half && !nearest) x = ferry::cast(std::move(x), DType::f32);
  for (std::size_t i = 0; i < sp; ++i) {
    const std::int64_t in = x.shape()[2 + i];
    if (size[i] == in && !by_factor) continue;  // every mode maps a row to itself
    const double scale = by_factor && !o.align_corners ? 1.0 / o.scale_factor[i] : 0.0;
    x = detail::interp::along(op, std::move(x), static_cast<std::int64_t>(2 + i),
                              detail::interp::taps(o.mode, o.align_corners, in, size[i], scale));
  }
  return half && !nearest ? ferry::cast(std::move(x), d) : x;
}

}  // namespace ferry

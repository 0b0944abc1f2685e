// Ferry: pooling (issue #19): max_pool1d/2d with indices, avg_pool1d/2d, adaptive average and
// max pooling, as decompositions into strided slices, reductions and arithmetic, so every
// backend runs them with its primitive kernels. Included by ferry/ops.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "ferry/ops.hpp"

// Semantics are PyTorch's (torch.nn.functional.max_pool2d, avg_pool2d, adaptive_avg_pool2d,
// adaptive_max_pool2d): NCHW or unbatched CHW input, stride defaulting to the kernel, implicit
// padding (-inf for max, zeros for avg), ceil_mode letting the last window run past the padded
// input as long as it starts inside the input or its left padding. Indices are flat h * W + w in
// the unpadded input plane, as torch's. Where a window holds equal maxima the index is the
// first in row-major order; a NaN is the max (the first NaN's index is given; torch's CPU
// kernel gives the last).
namespace ferry {

/// stride (0: the kernel size, torch's default), padding (-inf, on both sides) and dilation of
/// a max pool over D spatial dims; ceil_mode rounds the output size up.
template <std::size_t D>
struct MaxPoolOptions {
  std::array<std::int64_t, D> stride{}, padding{}, dilation = ones();
  bool ceil_mode = false;

 private:
  static constexpr std::array<std::int64_t, D> ones() {
    std::array<std::int64_t, D> a{};
    a.fill(1);
    return a;
  }
};

/// stride (0: the kernel size) and padding (zeros) of an average pool over D spatial dims;
/// count_include_pad counts the padding zeros in the divisor (not the ceil_mode overhang, as
/// torch); divisor_override, when given, is the divisor of every window.
template <std::size_t D>
struct AvgPoolOptions {
  std::array<std::int64_t, D> stride{}, padding{};
  bool ceil_mode = false, count_include_pad = true;
  std::optional<std::int64_t> divisor_override = std::nullopt;
};

namespace detail::pool {
/// One spatial dim of a pool: input size, kernel, stride, padding, dilation, output size, and
/// the padding after the input that ceil_mode's last window needs beyond `pad`.
struct Dim {
  std::int64_t in, k, s, p, d, out, extra;
};

/// torch's pooling_output_shape with its checks, for the spatial dim `i` of x.
inline Dim dim(const char* op, const Shape& x, std::size_t i, std::int64_t k, std::int64_t s,
               std::int64_t p, std::int64_t d, bool ceil) {
  const std::int64_t in = x[x.rank() - 2 + i];
  if (s == 0) s = k;
  if (k < 1 || s < 1 || d < 1 || p < 0)
    raise<ValueError>("value",
                      "{}: kernel {}, stride {}, padding {} and dilation {} (need >= 1, >= 1, "
                      ">= 0, >= 1)",
                      op, k, s, p, d);
  const std::int64_t span = d * (k - 1) + 1;
  if (p > span / 2)
    raise<ValueError>("value", "{}: padding {} is more than half the kernel {} dilated by {}", op,
                      p, k, d);
  const std::int64_t num = in + 2 * p - span + (ceil ? s - 1 : 0);
  std::int64_t out = num < 0 ? 0 : num / s + 1;
  if (ceil && out > 0 && (out - 1) * s >= in + p) --out;  // the last window starts in the input
  if (out < 1)
    raise<ShapeError>("shape",
                      "{}: input {} padded by {} is smaller than the kernel {} dilated by {}", op,
                      x, p, k, d);
  const std::int64_t need = (out - 1) * s + span;
  return {in, k, s, p, d, out, need > in + 2 * p ? need - in - 2 * p : 0};
}

/// x as [N, C, spatial...] with `sp` spatial dims (an unbatched input gets N = 1), and whether
/// it was unbatched.
template <Backend B>
std::pair<Tensor<B>, bool> batched(const char* op, Tensor<B> x, std::size_t sp) {
  if (x.rank() == sp + 2) return {std::move(x), false};
  if (x.rank() == sp + 1) return {unsqueeze(std::move(x), 0), true};
  raise<ShapeError>("shape", "{}: input {} must be [N, C, {} spatial dims] or [C, ...]", op,
                    x.shape(), sp);
}

/// Floats only, one device, not quantized.
template <Backend B>
void check_input(const char* op, const Tensor<B>& x) {
  (void)common_device(op, x);
  not_quantized(op, x.dtype());
  want_kind(op, x.dtype(), {Kind::Float}, "a float input");
}

/// The kh x kw windows of x [N, C, H, W] padded by `fill`, each [N, C, OH, OW], in row-major
/// kernel order.
template <Backend B>
std::vector<Tensor<B>> windows(Tensor<B> x, const Dim& h, const Dim& w, Scalar fill) {
  if (h.p + h.extra + w.p + w.extra > 0)
    x = pad(std::move(x), {w.p, w.p + w.extra, h.p, h.p + h.extra}, PadMode::constant, fill);
  const std::int64_t n = x.shape()[0], c = x.shape()[1];
  std::vector<Tensor<B>> out;
  out.reserve(static_cast<std::size_t>(h.k * w.k));
  for (std::int64_t a = 0; a < h.k; ++a)
    for (std::int64_t b = 0; b < w.k; ++b) {
      const std::int64_t r0 = a * h.d, c0 = b * w.d;
      out.push_back(slice(x, {Range{0, n}, Range{0, c}, Range{r0, r0 + h.s * (h.out - 1) + 1, h.s},
                              Range{c0, c0 + w.s * (w.out - 1) + 1, w.s}}));
    }
  return out;
}

/// An i64 host table as a tensor on x's device.
template <Backend B>
Tensor<B> table(const Tensor<B>& x, const char* op, const std::vector<std::int64_t>& v, Shape s) {
  return from_host(x, op, TensorData::from(v, std::move(s)));
}

/// max pool of x [N, C, H, W]; the flat input indices too when `indices`.
template <Backend B>
ValuesIndices<B> max2d(const char* op, Tensor<B> x, const Dim& h, const Dim& w, bool indices) {
  auto win = windows(x, h, w, Scalar(-std::numeric_limits<double>::infinity()));
  std::vector<Tensor<B>> parts;
  parts.reserve(win.size());
  for (auto& t : win) parts.push_back(unsqueeze(std::move(t), 2));
  auto vi = max_dim_with_indices(cat(std::move(parts), 2), 2);  // [N, C, OH, OW]
  if (!indices) return {std::move(vi.values), Tensor<B>{}};
  // Kernel position (a, b) -> its offset a d_h W + b d_w; output (i, j) -> its window's corner.
  std::vector<std::int64_t> off, base;
  for (std::int64_t a = 0; a < h.k; ++a)
    for (std::int64_t b = 0; b < w.k; ++b) off.push_back(a * h.d * w.in + b * w.d);
  for (std::int64_t i = 0; i < h.out; ++i)
    for (std::int64_t j = 0; j < w.out; ++j) base.push_back((i * h.s - h.p) * w.in + j * w.s - w.p);
  const Shape s = vi.indices.shape();
  auto idx = reshape(
      index_select(table(x, op, off, Shape{h.k * w.k}), 0, flatten(std::move(vi.indices))), s);
  idx = std::move(idx) + table(x, op, base, Shape{h.out, w.out});
  if (h.p + h.extra + w.p + w.extra == 0) return {std::move(vi.values), std::move(idx)};
  // A window whose max is -inf may have found it in the padding; torch names the window's first
  // position in the input then (its start moved on by the dilation until inside).
  std::vector<std::int64_t> corner;
  auto first = [](const Dim& g, std::int64_t o) {
    std::int64_t a = o * g.s - g.p;
    while (a < 0) a += g.d;
    return a;
  };
  for (std::int64_t i = 0; i < h.out; ++i)
    for (std::int64_t j = 0; j < w.out; ++j) corner.push_back(first(h, i) * w.in + first(w, j));
  auto at_inf = vi.values == -std::numeric_limits<double>::infinity();
  idx = where(std::move(at_inf), table(x, op, corner, Shape{h.out, w.out}), std::move(idx));
  return {std::move(vi.values), std::move(idx)};
}

/// Adaptive window i of n over `in`: [floor(i in / n), ceil((i + 1) in / n)).
inline std::pair<std::int64_t, std::int64_t> adaptive(std::int64_t i, std::int64_t in,
                                                      std::int64_t n) {
  return {i * in / n, ((i + 1) * in + n - 1) / n};
}
inline void check_adaptive(const char* op, const Shape& x, std::int64_t out, std::size_t i) {
  const std::int64_t in = x[x.rank() - 2 + i];
  if (out < 1 || in < 1)
    raise<ShapeError>("shape", "{}: output size {} over input {} (needs both >= 1)", op, out, x);
}

/// Adaptive average along dim `d` of x: the mean of each window; one reshape and mean when the
/// windows tile the dim evenly.
template <Backend B>
Tensor<B> adaptive_mean(Tensor<B> x, std::int64_t d, std::int64_t out) {
  const std::int64_t in = x.shape()[static_cast<std::size_t>(d)];
  if (in % out == 0) {
    std::vector<std::int64_t> s = x.shape().to_vector();
    s[static_cast<std::size_t>(d)] = in / out;
    s.insert(s.begin() + d, out);
    return mean(reshape(std::move(x), Shape(std::move(s))), d + 1, false);
  }
  std::vector<Tensor<B>> parts;
  for (std::int64_t i = 0; i < out; ++i) {
    const auto [a, b] = adaptive(i, in, out);
    parts.push_back(mean(narrow(x, d, a, b - a), d, true));
  }
  return cat(std::move(parts), d);
}
}  // namespace detail::pool

namespace detail::pool {
/// max_pool2d of x [N, C, H, W] or [C, H, W], with the indices when `indices`.
template <Backend B>
ValuesIndices<B> max_pool(Tensor<B> x, std::array<std::int64_t, 2> kernel,
                          const MaxPoolOptions<2>& o, bool indices) {
  constexpr const char* op = "max_pool2d";
  check_input(op, x);
  auto [x4, unb] = batched(op, std::move(x), 2);
  const Shape shape = x4.shape();
  auto along = [&](std::size_t i) {
    return dim(op, shape, i, kernel[i], o.stride[i], o.padding[i], o.dilation[i], o.ceil_mode);
  };
  const Dim h = along(0), w = along(1);
  auto vi = max2d(op, std::move(x4), h, w, indices);
  if (!unb) return vi;
  return {squeeze(std::move(vi.values), 0),
          indices ? squeeze(std::move(vi.indices), 0) : Tensor<B>{}};
}
}  // namespace detail::pool

/// torch.nn.functional.max_pool2d(return_indices=True): the max of each kh x kw window of x
/// [N, C, H, W] (or [C, H, W]) and its flat index h * W + w in the input plane (i64).
template <Backend B>
[[nodiscard]] ValuesIndices<B> max_pool2d_with_indices(Tensor<B> x,
                                                       std::array<std::int64_t, 2> kernel,
                                                       const MaxPoolOptions<2>& o = {}) {
  return detail::pool::max_pool(std::move(x), kernel, o, true);
}
/// torch.nn.functional.max_pool2d: the max of each window (values of max_pool2d_with_indices).
template <Backend B>
[[nodiscard]] Tensor<B> max_pool2d(Tensor<B> x, std::array<std::int64_t, 2> kernel,
                                   const MaxPoolOptions<2>& o = {}) {
  return detail::pool::max_pool(std::move(x), kernel, o, false).values;
}
/// torch.nn.functional.max_pool1d(return_indices=True) over x [N, C, L] (or [C, L]); indices
/// are positions along L.
template <Backend B>
[[nodiscard]] ValuesIndices<B> max_pool1d_with_indices(Tensor<B> x, std::int64_t kernel,
                                                       const MaxPoolOptions<1>& o = {}) {
  constexpr const char* op = "max_pool1d";
  detail::pool::check_input(op, x);
  auto [x3, unb] = detail::pool::batched(op, std::move(x), 1);
  auto x4 = unsqueeze(std::move(x3), 2);
  const auto h = detail::pool::dim(op, x4.shape(), 0, 1, 1, 0, 1, false);
  const auto w = detail::pool::dim(op, x4.shape(), 1, kernel, o.stride[0], o.padding[0],
                                   o.dilation[0], o.ceil_mode);
  auto vi = detail::pool::max2d(op, std::move(x4), h, w, true);  // [N, C, 1, OL]
  auto v = squeeze(std::move(vi.values), -2), i = squeeze(std::move(vi.indices), -2);
  if (unb) return {squeeze(std::move(v), 0), squeeze(std::move(i), 0)};
  return {std::move(v), std::move(i)};
}
/// torch.nn.functional.max_pool1d.
template <Backend B>
[[nodiscard]] Tensor<B> max_pool1d(Tensor<B> x, std::int64_t kernel,
                                   const MaxPoolOptions<1>& o = {}) {
  return max_pool1d_with_indices(std::move(x), kernel, o).values;
}

/// torch.nn.functional.avg_pool2d: the mean of each kh x kw window of x [N, C, H, W] (or
/// [C, H, W]): the window's sum (in row-major order, zeros for padding) over its divisor.
/// f16/bf16 sum in f32 and round once.
template <Backend B>
[[nodiscard]] Tensor<B> avg_pool2d(Tensor<B> x, std::array<std::int64_t, 2> kernel,
                                   const AvgPoolOptions<2>& o = {}) {
  constexpr const char* op = "avg_pool2d";
  detail::pool::check_input(op, x);
  if (o.divisor_override && *o.divisor_override == 0)
    detail::raise<ValueError>("value", "{}: divisor_override is 0", op);
  auto [x4, unb] = detail::pool::batched(op, std::move(x), 2);
  const auto h =
      detail::pool::dim(op, x4.shape(), 0, kernel[0], o.stride[0], o.padding[0], 1, o.ceil_mode);
  const auto w =
      detail::pool::dim(op, x4.shape(), 1, kernel[1], o.stride[1], o.padding[1], 1, o.ceil_mode);
  // The divisor of output (i, j): torch's rule, computed here from the shapes alone.
  std::vector<double> div;
  bool uniform = true;
  for (std::int64_t i = 0; i < h.out; ++i)
    for (std::int64_t j = 0; j < w.out; ++j) {
      auto count = [&](const detail::pool::Dim& g, std::int64_t o_) {
        std::int64_t a = o_ * g.s - g.p, b = std::min(a + g.k, g.in + g.p);
        const std::int64_t padded = b - a;
        a = std::max<std::int64_t>(a, 0);
        b = std::min(b, g.in);
        return std::pair{padded, b - a};
      };
      const auto [ph, ch] = count(h, i);
      const auto [pw, cw] = count(w, j);
      const double v = o.divisor_override    ? static_cast<double>(*o.divisor_override)
                       : o.count_include_pad ? static_cast<double>(ph * pw)
                                             : static_cast<double>(ch * cw);
      uniform = uniform && (div.empty() || v == div.front());
      div.push_back(v);
    }
  const DType dt = x4.dtype();
  const bool half = dt == DType::f16 || dt == DType::bf16;
  if (half) x4 = ferry::cast(std::move(x4), DType::f32);
  auto win = detail::pool::windows(std::move(x4), h, w, Scalar(0));
  Tensor<B> sum = std::move(win[0]);
  for (std::size_t k = 1; k < win.size(); ++k) sum = std::move(sum) + std::move(win[k]);
  Tensor<B> y;
  if (uniform) {
    y = std::move(sum) / div.front();
  } else {
    auto dv = ferry::cast(detail::from_host(sum, op, TensorData::from(div, Shape{h.out, w.out})),
                          sum.dtype());
    y = std::move(sum) / std::move(dv);
  }
  if (half) y = ferry::cast(std::move(y), dt);
  return unb ? squeeze(std::move(y), 0) : y;
}
/// torch.nn.functional.avg_pool1d over x [N, C, L] (or [C, L]): avg_pool2d over a height of 1.
template <Backend B>
[[nodiscard]] Tensor<B> avg_pool1d(Tensor<B> x, std::int64_t kernel,
                                   const AvgPoolOptions<1>& o = {}) {
  constexpr const char* op = "avg_pool1d";
  detail::pool::check_input(op, x);
  auto [x3, unb] = detail::pool::batched(op, std::move(x), 1);
  const AvgPoolOptions<2> o2{
      {1, o.stride[0]}, {0, o.padding[0]}, o.ceil_mode, o.count_include_pad, o.divisor_override};
  auto y = squeeze(avg_pool2d(unsqueeze(std::move(x3), 2), {1, kernel}, o2), 2);
  return unb ? squeeze(std::move(y), 0) : y;
}

/// torch.nn.functional.adaptive_avg_pool2d: x [N, C, H, W] (or [C, H, W]) averaged over
/// out[0] x out[1] windows, window i along a dim of n being [floor(i n / out), ceil((i + 1) n /
/// out)). Separable: the mean over W of each window, then over H (an evenly tiled dim is one
/// reshape and mean), so a value can differ from torch's single sum by a rounding.
template <Backend B>
[[nodiscard]] Tensor<B> adaptive_avg_pool2d(Tensor<B> x, std::array<std::int64_t, 2> out) {
  constexpr const char* op = "adaptive_avg_pool2d";
  detail::pool::check_input(op, x);
  auto [x4, unb] = detail::pool::batched(op, std::move(x), 2);
  detail::pool::check_adaptive(op, x4.shape(), out[0], 0);
  detail::pool::check_adaptive(op, x4.shape(), out[1], 1);
  const DType dt = x4.dtype();
  const bool half = dt == DType::f16 || dt == DType::bf16;
  if (half) x4 = ferry::cast(std::move(x4), DType::f32);
  auto y =
      detail::pool::adaptive_mean(detail::pool::adaptive_mean(std::move(x4), 3, out[1]), 2, out[0]);
  if (half) y = ferry::cast(std::move(y), dt);
  return unb ? squeeze(std::move(y), 0) : y;
}
/// torch.nn.functional.adaptive_avg_pool1d over x [N, C, L] (or [C, L]).
template <Backend B>
[[nodiscard]] Tensor<B> adaptive_avg_pool1d(Tensor<B> x, std::int64_t out) {
  constexpr const char* op = "adaptive_avg_pool1d";
  detail::pool::check_input(op, x);
  auto [x3, unb] = detail::pool::batched(op, std::move(x), 1);
  auto y = squeeze(adaptive_avg_pool2d(unsqueeze(std::move(x3), 2), {1, out}), 2);
  return unb ? squeeze(std::move(y), 0) : y;
}

/// torch.nn.functional.adaptive_max_pool2d(return_indices=True): the max of each adaptive
/// window (adaptive_avg_pool2d's windows) and its flat index h * W + w. The max over each
/// window's columns row by row, then over its rows: the first row holding the max, and in it
/// the first column, which is the row-major first.
template <Backend B>
[[nodiscard]] ValuesIndices<B> adaptive_max_pool2d_with_indices(Tensor<B> x,
                                                                std::array<std::int64_t, 2> out) {
  constexpr const char* op = "adaptive_max_pool2d";
  detail::pool::check_input(op, x);
  auto [x4, unb] = detail::pool::batched(op, std::move(x), 2);
  detail::pool::check_adaptive(op, x4.shape(), out[0], 0);
  detail::pool::check_adaptive(op, x4.shape(), out[1], 1);
  const std::int64_t hin = x4.shape()[2], win = x4.shape()[3];
  std::vector<Tensor<B>> rv, ri;  // per column window: [N, C, H, 1] maxima and their columns
  for (std::int64_t j = 0; j < out[1]; ++j) {
    const auto [a, b] = detail::pool::adaptive(j, win, out[1]);
    auto vi = max_dim_with_indices(narrow(x4, 3, a, b - a), 3, true);
    rv.push_back(std::move(vi.values));
    ri.push_back(std::move(vi.indices) + a);
  }
  x4 = Tensor<B>{};
  auto v1 = cat(std::move(rv), 3), c1 = cat(std::move(ri), 3);  // [N, C, H, OW]
  std::vector<Tensor<B>> vs, is;
  for (std::int64_t i = 0; i < out[0]; ++i) {
    const auto [a, b] = detail::pool::adaptive(i, hin, out[0]);
    auto vi = max_dim_with_indices(narrow(v1, 2, a, b - a), 2, true);  // [N, C, 1, OW]
    auto col = gather(narrow(c1, 2, a, b - a), 2, vi.indices);
    vs.push_back(std::move(vi.values));
    is.push_back((std::move(vi.indices) + a) * win + std::move(col));
  }
  auto v = cat(std::move(vs), 2), idx = cat(std::move(is), 2);
  if (unb) return {squeeze(std::move(v), 0), squeeze(std::move(idx), 0)};
  return {std::move(v), std::move(idx)};
}
/// torch.nn.functional.adaptive_max_pool2d.
template <Backend B>
[[nodiscard]] Tensor<B> adaptive_max_pool2d(Tensor<B> x, std::array<std::int64_t, 2> out) {
  return adaptive_max_pool2d_with_indices(std::move(x), out).values;
}
/// torch.nn.functional.adaptive_max_pool1d(return_indices=True) over x [N, C, L] (or [C, L]).
template <Backend B>
[[nodiscard]] ValuesIndices<B> adaptive_max_pool1d_with_indices(Tensor<B> x, std::int64_t out) {
  constexpr const char* op = "adaptive_max_pool1d";
  detail::pool::check_input(op, x);
  auto [x3, unb] = detail::pool::batched(op, std::move(x), 1);
  auto vi = adaptive_max_pool2d_with_indices(unsqueeze(std::move(x3), 2), {1, out});
  auto v = squeeze(std::move(vi.values), 2), i = squeeze(std::move(vi.indices), 2);
  if (unb) return {squeeze(std::move(v), 0), squeeze(std::move(i), 0)};
  return {std::move(v), std::move(i)};
}
/// torch.nn.functional.adaptive_max_pool1d.
template <Backend B>
[[nodiscard]] Tensor<B> adaptive_max_pool1d(Tensor<B> x, std::int64_t out) {
  return adaptive_max_pool1d_with_indices(std::move(x), out).values;
}

}  // namespace ferry

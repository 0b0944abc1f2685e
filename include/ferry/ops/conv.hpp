// Ferry: convolutions (issue #19): conv1d/2d/3d, conv_transpose1d/2d/3d and unfold4d (im2col),
// as decompositions into pad, strided slices, cat, reshape and matmul (or linear(x, q) for a
// quantized weight), so every backend runs them with its primitive kernels. Included by
// ferry/ops.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ferry/ops.hpp"

// Semantics are PyTorch's (torch.nn.functional.conv1d/2d/3d, conv_transpose1d/2d/3d, unfold):
// NC + spatial layout, zero padding on both sides, groups splitting the channels.
namespace ferry {

/// Stride, padding (zeros, on both sides), dilation and groups of a convolution over D spatial
/// dims, torch's meaning and defaults: `conv2d(x, w, b, {.stride = {2, 2}, .padding = {1, 1}})`.
/// For the transposed convolutions, output_padding adds that many rows (columns) at the end of
/// each spatial dim (torch's; each must be below the stride or the dilation); the others ignore
/// it and want it 0.
template <std::size_t D>
struct ConvOptions {
  std::array<std::int64_t, D> stride = filled(1), padding = filled(0), dilation = filled(1),
                              output_padding = filled(0);
  std::int64_t groups = 1;

 private:
  static constexpr std::array<std::int64_t, D> filled(std::int64_t v) {
    std::array<std::int64_t, D> a{};
    a.fill(v);
    return a;
  }
};

namespace detail::conv {
template <std::size_t D>
using Dims = std::array<std::int64_t, D>;

/// The output sizes of a convolution of x's D spatial dims by kernel `k`, with the checks.
template <std::size_t D>
Dims<D> out_sizes(const char* op, const Shape& x, const Dims<D>& k, const ConvOptions<D>& o) {
  Dims<D> out{};
  for (std::size_t i = 0; i < D; ++i) {
    if (o.stride[i] < 1 || o.dilation[i] < 1 || o.padding[i] < 0 || k[i] < 1)
      raise<ValueError>("value",
                        "{}: stride {}, padding {}, dilation {} and kernel {} (need >= 1, >= 0, "
                        ">= 1, >= 1)",
                        op, o.stride[i], o.padding[i], o.dilation[i], k[i]);
    const std::int64_t span = o.dilation[i] * (k[i] - 1) + 1;
    const std::int64_t in = x[2 + i] + 2 * o.padding[i];
    out[i] = in < span ? 0 : (in - span) / o.stride[i] + 1;
    if (out[i] < 1)
      raise<ShapeError>("shape",
                        "{}: input {} padded by {} is smaller than the kernel {} dilated by {}", op,
                        x, o.padding[i], k[i], o.dilation[i]);
  }
  return out;
}

/// im2col: x [N, C, spatial...] padded, its prod(k) strided windows (one slice each, the
/// kernel positions in row-major order) stacked: [N, C * prod(k), prod(out)].
template <std::size_t D, Backend B>
Tensor<B> columns(Tensor<B> x, const Dims<D>& k, const ConvOptions<D>& o, const Dims<D>& out) {
  bool padded = false;
  std::vector<std::int64_t> pads;
  for (std::size_t i = D; i-- > 0;) {
    pads.insert(pads.end(), {o.padding[i], o.padding[i]});
    padded = padded || o.padding[i] > 0;
  }
  if (padded) x = pad(std::move(x), pads);
  const std::int64_t n = x.shape()[0], c = x.shape()[1];
  std::int64_t kn = 1, l = 1;
  for (std::size_t i = 0; i < D; ++i) {
    kn *= k[i];
    l *= out[i];
  }
  std::vector<Tensor<B>> cols;
  cols.reserve(static_cast<std::size_t>(kn));
  Dims<D> at{};  // the kernel position, counted in row-major order
  for (std::int64_t p = 0; p < kn; ++p) {
    std::vector<Range> r{Range{0, n}, Range{0, c}};
    for (std::size_t i = 0; i < D; ++i) {
      const std::int64_t s0 = at[i] * o.dilation[i];
      r.push_back(Range{s0, s0 + o.stride[i] * (out[i] - 1) + 1, o.stride[i]});
    }
    cols.push_back(unsqueeze(slice(x, std::move(r)), 2));
    for (std::size_t i = D; i-- > 0;) {
      if (++at[i] < k[i]) break;
      at[i] = 0;
    }
  }
  x = Tensor<B>{};  // the padded input is no longer needed
  return reshape(cat(std::move(cols), 2), Shape{n, c * kn, l});  // [N, C, K, out...]
}

/// conv over D spatial dims: the checks, im2col, and one batched matmul per group (or linear
/// with the packed rows of a quantized weight).
template <std::size_t D, Backend B>
Tensor<B> conv(const char* op, Tensor<B> x, Tensor<B> weight, std::optional<Tensor<B>> bias,
               const ConvOptions<D>& o) {
  const bool qw = weight.is_quantized();
  nn::check_floats(op, x, qw ? std::optional<Tensor<B>>{} : std::optional<Tensor<B>>(weight), bias);
  if (qw) (void)common_device(op, x, weight);
  if (x.rank() != D + 2 || weight.rank() != D + 2)
    raise<ShapeError>("shape",
                      "{}: input {} must be [N, C, {} spatial dims] and weight {} [O, C / groups, "
                      "{} kernel dims]",
                      op, x.shape(), D, weight.shape(), D);
  const std::int64_t g = o.groups, n = x.shape()[0], c = x.shape()[1], oc = weight.shape()[0];
  if (g < 1 || c % g != 0 || oc % g != 0 || weight.shape()[1] * g != c)
    raise<ShapeError>("shape", "{}: input {}, weight {} and {} groups do not fit", op, x.shape(),
                      weight.shape(), g);
  for (auto p : o.output_padding)
    if (p != 0) raise<ValueError>("value", "{}: output_padding is for transposed convolutions", op);
  nn::want_shape(op, "bias", bias, Shape{oc});
  Dims<D> k{};
  for (std::size_t i = 0; i < D; ++i) k[i] = weight.shape()[2 + i];
  const Dims<D> out = out_sizes<D>(op, x.shape(), k, o);
  std::int64_t ck = c / g, l = 1;
  for (std::size_t i = 0; i < D; ++i) {
    ck *= k[i];
    l *= out[i];
  }
  auto col = reshape(columns<D>(std::move(x), k, o, out), Shape{n, g, ck, l});
  Tensor<B> y;
  if (!qw) {
    y = matmul(reshape(std::move(weight), Shape{g, oc / g, ck}), std::move(col));
  } else {
    // Packed weights, as linear's [O, C K] rows: each group's columns, transposed to [N, L, CK],
    // times its rows (q_linear); the results side by side, back to [N, O, L].
    auto cols_t = swap_dims(std::move(col), 2, 3);  // [N, G, L, CK]
    auto w2 = reshape(std::move(weight), Shape{oc, ck});
    std::vector<Tensor<B>> parts;
    for (std::int64_t i = 0; i < g; ++i) {
      auto xi = squeeze(narrow(cols_t, 1, i, 1), 1);
      parts.push_back(g == 1 ? linear(std::move(xi), w2)
                             : linear(std::move(xi), narrow(w2, 0, i * (oc / g), oc / g)));
    }
    cols_t = Tensor<B>{};
    y = swap_dims(cat(std::move(parts), 2), 1, 2);  // [N, O, L]
  }
  std::vector<std::int64_t> ys{n, oc}, bs{1, oc};
  for (std::size_t i = 0; i < D; ++i) {
    ys.push_back(out[i]);
    bs.push_back(1);
  }
  y = reshape(std::move(y), Shape(std::move(ys)));
  if (bias) y = std::move(y) + reshape(std::move(*bias), Shape(std::move(bs)));
  return y;
}

/// conv_transpose over D spatial dims as a convolution: x with stride - 1 zeros between its
/// elements, padded by dilation (k - 1) - padding (a crop where negative) plus output_padding at
/// the end, convolved at stride 1 by the weight [C, O / groups, k...] turned into [O, C / groups,
/// k...] group by group and flipped in every spatial dim.
template <std::size_t D, Backend B>
Tensor<B> conv_transpose(const char* op, Tensor<B> x, Tensor<B> weight,
                         std::optional<Tensor<B>> bias, const ConvOptions<D>& o) {
  nn::check_floats(op, x, std::optional<Tensor<B>>(weight), bias);
  if (x.rank() != D + 2 || weight.rank() != D + 2)
    raise<ShapeError>("shape",
                      "{}: input {} must be [N, C, {} spatial dims] and weight {} [C, O / groups, "
                      "{} kernel dims]",
                      op, x.shape(), D, weight.shape(), D);
  const std::int64_t g = o.groups, c = x.shape()[1];
  if (g < 1 || c % g != 0 || weight.shape()[0] != c)
    raise<ShapeError>("shape", "{}: input {}, weight {} and {} groups do not fit", op, x.shape(),
                      weight.shape(), g);
  const std::int64_t og = weight.shape()[1], oc = og * g;
  nn::want_shape(op, "bias", bias, Shape{oc});
  std::vector<std::int64_t> pads;
  for (std::size_t i = 0; i < D; ++i) {
    const std::int64_t s = o.stride[i], d = o.dilation[i], p = o.padding[i];
    const std::int64_t k = weight.shape()[2 + i], op_ = o.output_padding[i];
    if (s < 1 || d < 1 || p < 0 || op_ < 0 || (op_ >= s && op_ >= d))
      raise<ValueError>("value",
                        "{}: stride {}, padding {}, dilation {} and output_padding {} (need >= 1, "
                        ">= 0, >= 1, and output_padding below the stride or the dilation)",
                        op, s, p, d, op_);
    const std::int64_t in = x.shape()[2 + i];
    if ((in - 1) * s - 2 * p + d * (k - 1) + op_ + 1 < 1)
      raise<ShapeError>("shape", "{}: input {} with weight {} and padding {} gives no output", op,
                        x.shape(), weight.shape(), p);
    const auto dim = static_cast<std::int64_t>(2 + i);
    if (s > 1 && in > 0) {  // s - 1 zeros after each element, then the trailing ones cut
      std::vector<std::int64_t> sh = x.shape().to_vector();
      x = unsqueeze(std::move(x), dim + 1);
      std::vector<std::int64_t> zp(2 * (D - 1 - i), 0);  // pairs from the last dim backwards
      zp.insert(zp.end(), {0, s - 1});
      x = pad(std::move(x), zp);
      sh[static_cast<std::size_t>(dim)] = in * s;
      x = narrow(reshape(std::move(x), Shape(std::move(sh))), dim, 0, (in - 1) * s + 1);
    }
  }
  for (std::size_t i = D; i-- > 0;) {
    const std::int64_t e = o.dilation[i] * (weight.shape()[2 + i] - 1) - o.padding[i];
    pads.insert(pads.end(), {e, e + o.output_padding[i]});
  }
  x = pad(std::move(x), pads);
  // [C, O/g, k...] -> [g, C/g, O/g, k...] -> [g, O/g, C/g, k...] -> [O, C/g, k...], flipped.
  std::vector<std::int64_t> ws{g, c / g, og}, perm{0, 2, 1}, flips, rs{oc, c / g};
  for (std::size_t i = 0; i < D; ++i) {
    ws.push_back(weight.shape()[2 + i]);
    rs.push_back(weight.shape()[2 + i]);
    perm.push_back(static_cast<std::int64_t>(3 + i));
    flips.push_back(static_cast<std::int64_t>(2 + i));
  }
  auto w = reshape(permute(reshape(std::move(weight), Shape(std::move(ws))), perm), Shape(rs));
  w = flip(std::move(w), flips);
  ConvOptions<D> co{};
  co.dilation = o.dilation;
  co.groups = g;
  return conv<D>(op, std::move(x), std::move(w), std::move(bias), co);
}
}  // namespace detail::conv

/// torch.nn.functional.unfold (burn's unfold4d): x [N, C, H, W] -> [N, C KH KW, L], column l
/// holding the (zero-padded) kernel window of output position l, channel-major then the kernel
/// positions in row-major order: the im2col of conv2d. Any dtype but quantized; groups unused.
template <Backend B>
[[nodiscard]] Tensor<B> unfold4d(Tensor<B> x, std::array<std::int64_t, 2> kernel,
                                 const ConvOptions<2>& o = {}) {
  constexpr const char* op = "unfold4d";
  (void)detail::common_device(op, x);
  detail::not_quantized(op, x.dtype());
  if (x.rank() != 4)
    detail::raise<ShapeError>("shape", "{}: input {} must be [N, C, H, W]", op, x.shape());
  if (o.groups != 1 || o.output_padding != std::array<std::int64_t, 2>{0, 0})
    detail::raise<ValueError>("value", "{}: groups and output_padding do not apply", op);
  const auto out = detail::conv::out_sizes<2>(op, x.shape(), kernel, o);
  return detail::conv::columns<2>(std::move(x), kernel, o, out);
}

/// torch.nn.functional.conv2d: x [N, C, H, W], weight [O, C / groups, KH, KW], bias [O]
/// (optional) -> [N, O, OH, OW], OH = (H + 2 padding - dilation (KH - 1) - 1) / stride + 1.
/// A decomposition: unfold4d's columns (im2col), then one batched matmul per group; f16/bf16
/// accumulate in f32 (matmul's). A quantized weight (e.g. int8 per output channel:
/// per_axis(0)) stays packed: the columns go through linear(x, q) (q_linear, dequantized a tile
/// of rows at a time).
template <Backend B>
[[nodiscard]] Tensor<B> conv2d(Tensor<B> x, Tensor<B> weight, Opt<B> bias = std::nullopt,
                               const ConvOptions<2>& o = {}) {
  return detail::conv::conv<2>("conv2d", std::move(x), std::move(weight), std::move(bias), o);
}
/// torch.nn.functional.conv1d: x [N, C, L], weight [O, C / groups, K], bias [O] -> [N, O, OL].
template <Backend B>
[[nodiscard]] Tensor<B> conv1d(Tensor<B> x, Tensor<B> weight, Opt<B> bias = std::nullopt,
                               const ConvOptions<1>& o = {}) {
  return detail::conv::conv<1>("conv1d", std::move(x), std::move(weight), std::move(bias), o);
}
/// torch.nn.functional.conv3d: x [N, C, D, H, W], weight [O, C / groups, KD, KH, KW], bias [O].
template <Backend B>
[[nodiscard]] Tensor<B> conv3d(Tensor<B> x, Tensor<B> weight, Opt<B> bias = std::nullopt,
                               const ConvOptions<3>& o = {}) {
  return detail::conv::conv<3>("conv3d", std::move(x), std::move(weight), std::move(bias), o);
}

/// torch.nn.functional.conv_transpose2d: x [N, C, H, W], weight [C, O / groups, KH, KW], bias
/// [O] -> [N, O, OH, OW], OH = (H - 1) stride - 2 padding + dilation (KH - 1) + output_padding
/// + 1. Float weights.
template <Backend B>
[[nodiscard]] Tensor<B> conv_transpose2d(Tensor<B> x, Tensor<B> weight, Opt<B> bias = std::nullopt,
                                         const ConvOptions<2>& o = {}) {
  return detail::conv::conv_transpose<2>("conv_transpose2d", std::move(x), std::move(weight),
                                         std::move(bias), o);
}
/// torch.nn.functional.conv_transpose1d: x [N, C, L], weight [C, O / groups, K].
template <Backend B>
[[nodiscard]] Tensor<B> conv_transpose1d(Tensor<B> x, Tensor<B> weight, Opt<B> bias = std::nullopt,
                                         const ConvOptions<1>& o = {}) {
  return detail::conv::conv_transpose<1>("conv_transpose1d", std::move(x), std::move(weight),
                                         std::move(bias), o);
}
/// torch.nn.functional.conv_transpose3d: x [N, C, D, H, W], weight [C, O / groups, KD, KH, KW].
template <Backend B>
[[nodiscard]] Tensor<B> conv_transpose3d(Tensor<B> x, Tensor<B> weight, Opt<B> bias = std::nullopt,
                                         const ConvOptions<3>& o = {}) {
  return detail::conv::conv_transpose<3>("conv_transpose3d", std::move(x), std::move(weight),
                                         std::move(bias), o);
}

}  // namespace ferry

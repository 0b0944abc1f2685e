// Ferry: the neural-network layers that are decompositions into the ops above (issue #19):
// linear, embedding, layer_norm, rms_norm, group_norm, batch_norm in its inference form and
// scaled dot-product attention (convolutions: ferry/ops/conv.hpp).
// Every backend runs them with its primitive kernels. Included by ferry/ops.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/ops.hpp"

// Semantics are PyTorch's (torch.nn.functional.linear, embedding, layer_norm, rms_norm,
// group_norm, batch_norm with training=False). Variances are biased (divided by n, as torch
// normalises) and computed as the mean of squared deviations from the mean (two passes, not
// E[x^2] - E[x]^2, which cancels). f16 and bf16 run in f32 and are rounded once at the end,
// as torch's CPU kernels accumulate halves in float.
namespace ferry {

/// An optional tensor parameter (weight, bias): a Tensor, or std::nullopt. Not deduced, so a
/// Tensor argument converts to it.
template <Backend B>
using Opt = std::type_identity_t<std::optional<Tensor<B>>>;

namespace detail::nn {
/// The operand and its optional affine parameters checked for a float-only layer: one device,
/// one float dtype, no quantized tensor.
template <Backend B>
void check_floats(const char* op, const Tensor<B>& x, const std::optional<Tensor<B>>& w,
                  const std::optional<Tensor<B>>& b) {
  (void)common_device(op, x);
  not_quantized(op, x.dtype());
  want_kind(op, x.dtype(), {Kind::Float}, "float operands");
  for (const auto* p : {&w, &b}) {
    if (!p->has_value()) continue;
    (void)common_device(op, x, **p);
    not_quantized(op, (*p)->dtype());
    same_dtype(op, x.dtype(), (*p)->dtype());
  }
}
/// A parameter's shape must be `want`; `what` names it in the error.
template <Backend B>
void want_shape(const char* op, const char* what, const std::optional<Tensor<B>>& p,
                const Shape& want) {
  if (p && p->shape() != want)
    raise<ShapeError>("shape", "{}: {} has shape {}, expected {}", op, what, p->shape(), want);
}
/// `f(x, w, b)` in f32 for the 16-bit floats (each operand cast, the result rounded once), else
/// in the operands' dtype.
template <Backend B, class F>
Tensor<B> in_f32(F&& f, Tensor<B> x, std::optional<Tensor<B>> w, std::optional<Tensor<B>> b) {
  const DType d = x.dtype();
  if (d != DType::f16 && d != DType::bf16) return f(std::move(x), std::move(w), std::move(b));
  auto up = [](std::optional<Tensor<B>> t) -> std::optional<Tensor<B>> {
    if (!t) return std::nullopt;
    return ferry::cast(std::move(*t), DType::f32);
  };
  auto y = f(ferry::cast(std::move(x), DType::f32), up(std::move(w)), up(std::move(b)));
  return ferry::cast(std::move(y), d);
}
/// (x - mean) / sqrt(var + eps) along dim 1 of a [outer, inner] tensor (keepdim statistics).
template <Backend B>
Tensor<B> standardize_rows(Tensor<B> x2, double eps) {
  auto m = mean(x2, 1, true);
  auto c = std::move(x2) - std::move(m);
  auto v = mean(c * c, 1, true);
  return std::move(c) / sqrt(std::move(v) + eps);
}
/// The [outer, inner] rows a norm over x's last dims works on; those dims must be `norm`.
inline std::pair<std::int64_t, std::int64_t> rows_of(const char* op, const Shape& x,
                                                     const Shape& norm) {
  const std::size_t k = norm.rank(), r = x.rank();
  bool fits = k >= 1 && k <= r;
  for (std::size_t i = 0; fits && i < k; ++i) fits = x[r - k + i] == norm[i];
  if (!fits)
    raise<ShapeError>("shape", "{}: normalized_shape {} is not the last dims of {}", op, norm, x);
  const std::int64_t inner = norm.numel();
  return {inner == 0 ? 0 : x.numel() / inner, inner};
}
/// x's shape with every dim but `keep` set to 1: how a per-channel parameter of shape [C]
/// broadcasts over [N, C, ...].
inline Shape channel_shape(const Shape& x, std::size_t keep) {
  std::vector<std::int64_t> s(x.rank(), 1);
  s[keep] = x[keep];
  return Shape(std::move(s));
}
}  // namespace detail::nn

/// torch.nn.functional.linear: x [..., in] times weight [out, in] transposed, plus bias [out]:
/// y [..., out]. x of rank 1 gives a vector. Float and int dtypes (matmul's). A quantized weight
/// (any scheme: per tensor, per output channel on axis 0, per block along `in`) multiplies float
/// x packed, dequantized a tile of rows at a time inside the kernel (q_linear), never as a whole
/// float copy; f16/bf16 x in f32, rounded once.
template <Backend B>
[[nodiscard]] Tensor<B> linear(Tensor<B> x, Tensor<B> weight, Opt<B> bias = std::nullopt) {
  constexpr const char* op = "linear";
  const auto dev = detail::common_device(op, x, weight);
  if (weight.rank() != 2 || x.rank() == 0 || x.shape()[x.rank() - 1] != weight.shape()[1])
    detail::raise<ShapeError>("shape",
                              "{}: input {} and weight {} do not fit (weight is [out, in])", op,
                              x.shape(), weight.shape());
  detail::nn::want_shape(op, "bias", bias, Shape{weight.shape()[0]});
  const bool vec = x.rank() == 1;
  if (vec) x = unsqueeze(std::move(x), 0);
  Tensor<B> y;
  if (weight.is_quantized()) {
    detail::want_kind(op, x.dtype(), {Kind::Float}, "float activations");
    std::vector<std::int64_t> o = x.shape().to_vector();
    o.back() = weight.shape()[0];
    op::QLinear q{detail::TA<B>::ref(x), detail::TA<B>::ref(weight),
                  detail::out_ref(x, Shape(std::move(o)), x.dtype())};
    y = detail::emit(detail::TA<B>::core(x, op), dev, std::move(q), x, weight);
    if (bias) {
      (void)detail::common_device(op, y, *bias);
      detail::same_dtype(op, y.dtype(), bias->dtype());
    }
  } else {
    // x w^T needs one operand transposed (a copy): the weight, or x and the result, whichever
    // is smaller. At decode (a few rows) that is x: a [4096, 4096] f32 weight costs 64 MiB of
    // copying every call otherwise.
    const std::int64_t n = weight.shape()[0], k = weight.shape()[1];
    std::int64_t m = 1;
    for (std::size_t i = 0; i + 1 < x.rank(); ++i) m *= x.shape()[i];
    if (m * (k + n) < n * k) {
      std::vector<std::int64_t> ys = x.shape().to_vector();
      ys.back() = n;
      auto xt = swap_dims(reshape(std::move(x), Shape{m, k}), 0, 1);  // [K, M]
      y = reshape(swap_dims(matmul(std::move(weight), std::move(xt)), 0, 1), Shape(std::move(ys)));
    } else {
      y = matmul(std::move(x), swap_dims(std::move(weight), 0, 1));
    }
  }
  if (bias) y = std::move(y) + std::move(*bias);
  return vec ? squeeze(std::move(y), 0) : y;
}

/// torch.nn.functional.embedding: the rows of weight [num, dim] that int `ids` name, in ids'
/// shape: ids.shape + [dim]. An id outside [0, num) is an IndexError (index_select's).
template <Backend B>
[[nodiscard]] Tensor<B> embedding(Tensor<B> weight, Tensor<B> ids) {
  constexpr const char* op = "embedding";
  (void)detail::common_device(op, weight, ids);
  detail::want_kind(op, ids.dtype(), {Kind::Int}, "int ids");
  if (weight.rank() != 2)
    detail::raise<ShapeError>("shape", "{}: weight must be 2-D [num, dim], got {}", op,
                              weight.shape());
  std::vector<std::int64_t> out = ids.shape().to_vector();
  out.push_back(weight.shape()[1]);
  auto rows = index_select(std::move(weight), 0, flatten(std::move(ids)));
  return reshape(std::move(rows), Shape(std::move(out)));
}

/// torch.nn.functional.layer_norm: x standardized over its last `normalized_shape.size()` dims
/// (which must equal normalized_shape), then times weight and plus bias (each of
/// normalized_shape, optional). eps defaults to torch's 1e-5.
template <Backend B>
[[nodiscard]] Tensor<B> layer_norm(Tensor<B> x, const Shape& normalized_shape,
                                   Opt<B> weight = std::nullopt, Opt<B> bias = std::nullopt,
                                   double eps = 1e-5) {
  constexpr const char* op = "layer_norm";
  detail::nn::check_floats(op, x, weight, bias);
  const auto rows = detail::nn::rows_of(op, x.shape(), normalized_shape);
  const std::int64_t outer = rows.first, inner = rows.second;
  detail::nn::want_shape(op, "weight", weight, normalized_shape);
  detail::nn::want_shape(op, "bias", bias, normalized_shape);
  auto f = [&](Tensor<B> t, std::optional<Tensor<B>> w, std::optional<Tensor<B>> b) {
    const Shape s = t.shape();
    auto y =
        reshape(detail::nn::standardize_rows(reshape(std::move(t), Shape{outer, inner}), eps), s);
    if (w) y = std::move(y) * std::move(*w);
    if (b) y = std::move(y) + std::move(*b);
    return y;
  };
  return detail::nn::in_f32<B>(f, std::move(x), std::move(weight), std::move(bias));
}

/// torch.nn.functional.rms_norm: x / sqrt(mean(x^2 over the last normalized_shape dims) + eps),
/// times weight (optional). eps defaults to torch's: the machine epsilon of x's dtype.
template <Backend B>
[[nodiscard]] Tensor<B> rms_norm(Tensor<B> x, const Shape& normalized_shape,
                                 Opt<B> weight = std::nullopt,
                                 std::optional<double> eps = std::nullopt) {
  constexpr const char* op = "rms_norm";
  detail::nn::check_floats(op, x, weight, std::optional<Tensor<B>>{});
  const auto rows = detail::nn::rows_of(op, x.shape(), normalized_shape);
  const std::int64_t outer = rows.first, inner = rows.second;
  detail::nn::want_shape(op, "weight", weight, normalized_shape);
  const double e = eps                       ? *eps
                   : x.dtype() == DType::f64 ? std::numeric_limits<double>::epsilon()
                   : x.dtype() == DType::f32 ? double{std::numeric_limits<float>::epsilon()}
                   : x.dtype() == DType::f16 ? 0.0009765625  // 2^-10
                                             : 0.0078125;    // bf16: 2^-7
  auto f = [&](Tensor<B> t, std::optional<Tensor<B>> w, std::optional<Tensor<B>>) {
    const Shape s = t.shape();
    auto t2 = reshape(std::move(t), Shape{outer, inner});
    auto ms = mean(t2 * t2, 1, true);
    auto y = reshape(std::move(t2) / sqrt(std::move(ms) + e), s);
    if (w) y = std::move(y) * std::move(*w);
    return y;
  };
  return detail::nn::in_f32<B>(f, std::move(x), std::move(weight), std::nullopt);
}

/// torch.nn.functional.group_norm: x [N, C, ...] with its C channels in `groups` groups of
/// C / groups, each (channels and the dims after them) standardized per sample, then times
/// weight [C] and plus bias [C] per channel (optional). eps defaults to torch's 1e-5.
template <Backend B>
[[nodiscard]] Tensor<B> group_norm(Tensor<B> x, std::int64_t groups, Opt<B> weight = std::nullopt,
                                   Opt<B> bias = std::nullopt, double eps = 1e-5) {
  constexpr const char* op = "group_norm";
  detail::nn::check_floats(op, x, weight, bias);
  if (x.rank() < 2)
    detail::raise<ShapeError>("shape", "{}: input must be [N, C, ...], got {}", op, x.shape());
  const std::int64_t c = x.shape()[1];
  if (groups < 1 || c % groups != 0)
    detail::raise<ValueError>("value", "{}: {} channels of {} do not split into {} groups", op, c,
                              x.shape(), groups);
  detail::nn::want_shape(op, "weight", weight, Shape{c});
  detail::nn::want_shape(op, "bias", bias, Shape{c});
  const std::int64_t n = x.shape()[0];
  const std::int64_t per = n * groups == 0 ? 0 : x.numel() / (n * groups);
  auto f = [&](Tensor<B> t, std::optional<Tensor<B>> w, std::optional<Tensor<B>> b) {
    const Shape s = t.shape();
    const Shape ch = detail::nn::channel_shape(s, 1);
    auto y = reshape(
        detail::nn::standardize_rows(reshape(std::move(t), Shape{n * groups, per}), eps), s);
    if (w) y = std::move(y) * reshape(std::move(*w), ch);
    if (b) y = std::move(y) + reshape(std::move(*b), ch);
    return y;
  };
  return detail::nn::in_f32<B>(f, std::move(x), std::move(weight), std::move(bias));
}

/// torch.nn.functional.batch_norm with training=False: x [N, C, ...] standardized per channel
/// with the given running_mean [C] and running_var [C], then times weight [C] and plus bias [C]
/// (optional). eps defaults to torch's 1e-5.
template <Backend B>
[[nodiscard]] Tensor<B> batch_norm(Tensor<B> x, Tensor<B> running_mean, Tensor<B> running_var,
                                   Opt<B> weight = std::nullopt, Opt<B> bias = std::nullopt,
                                   double eps = 1e-5) {
  constexpr const char* op = "batch_norm";
  detail::nn::check_floats(op, x, weight, bias);
  detail::nn::check_floats(op, x, std::optional<Tensor<B>>(running_mean),
                           std::optional<Tensor<B>>(running_var));
  if (x.rank() < 2)
    detail::raise<ShapeError>("shape", "{}: input must be [N, C, ...], got {}", op, x.shape());
  const Shape c{x.shape()[1]};
  detail::nn::want_shape(op, "running_mean", std::optional<Tensor<B>>(running_mean), c);
  detail::nn::want_shape(op, "running_var", std::optional<Tensor<B>>(running_var), c);
  detail::nn::want_shape(op, "weight", weight, c);
  detail::nn::want_shape(op, "bias", bias, c);
  const Shape ch = detail::nn::channel_shape(x.shape(), 1);
  // (x - mean) / sqrt(var + eps) * weight + bias, the formula of torch's documentation.
  auto f = [&](Tensor<B> t, std::optional<Tensor<B>> w, std::optional<Tensor<B>> b) {
    auto m = reshape(std::move(running_mean), ch);
    auto v = reshape(std::move(running_var), ch);
    if (t.dtype() != m.dtype()) {  // halves: the statistics in f32 too
      m = ferry::cast(std::move(m), t.dtype());
      v = ferry::cast(std::move(v), t.dtype());
    }
    auto y = (std::move(t) - std::move(m)) / sqrt(std::move(v) + eps);
    if (w) y = std::move(y) * reshape(std::move(*w), ch);
    if (b) y = std::move(y) + reshape(std::move(*b), ch);
    return y;
  };
  return detail::nn::in_f32<B>(f, std::move(x), std::move(weight), std::move(bias));
}

namespace detail::nn {
/// The batch dims of a matrix-shaped operand (all but its last two dims).
inline Shape batch_dims(const Shape& s) {
  const auto v = s.to_vector();
  return Shape(std::vector<std::int64_t>(v.begin(), v.end() - 2));
}
/// attention as one op, for a backend with the kernel (operands checked by the caller): the
/// output's shape, a bool mask made additive (0 where kept, -inf elsewhere) in q's dtype.
template <Backend B>
Tensor<B> fused_attention(Tensor<B> q, Tensor<B> k, Tensor<B> v, std::optional<Tensor<B>> mask,
                          bool causal, double scale) {
  constexpr const char* op = "attention";
  const auto dev = common_device(op, q, k, v);
  const std::int64_t l = q.shape()[q.rank() - 2], s = k.shape()[k.rank() - 2];
  std::vector<std::int64_t> sd =
      broadcast(op, batch_dims(q.shape()), batch_dims(k.shape())).to_vector();
  sd.push_back(l);
  sd.push_back(s);
  Shape scores(std::move(sd));
  if (mask) {
    Shape with = broadcast(op, scores, mask->shape());  // may add batch dims, as in torch
    if (with[with.rank() - 2] != l || with[with.rank() - 1] != s)
      raise<ShapeError>("shape", "{}: mask {} does not broadcast to the scores {}", op,
                        mask->shape(), scores);
    scores = std::move(with);
    if (mask->dtype() == DType::boolean) {
      auto zeros = full_on(q, op, mask->shape(), Scalar(0.0), q.dtype());
      mask = mask_fill(std::move(zeros), logical_not(std::move(*mask)),
                       -std::numeric_limits<double>::infinity());
    }
  }
  std::vector<std::int64_t> od =
      broadcast(op, batch_dims(scores), batch_dims(v.shape())).to_vector();
  od.push_back(l);
  od.push_back(v.shape()[v.rank() - 1]);
  op::Attention o{{TA<B>::ref(q), TA<B>::ref(k), TA<B>::ref(v)},
                  causal,
                  scale,
                  out_ref(q, Shape(std::move(od)), q.dtype())};
  if (!mask) return emit(TA<B>::core(q, op), dev, std::move(o), q, k, v);
  o.ins.push_back(TA<B>::ref(*mask));
  return emit(TA<B>::core(q, op), dev, std::move(o), q, k, v, *mask);
}
}  // namespace detail::nn

/// Scaled dot-product attention, torch.nn.functional.scaled_dot_product_attention's maths:
/// softmax(q k^T * scale + mask) v for q [..., L, E], k [..., S, E], v [..., S, Ev] (batch dims
/// broadcast, as matmul's): [..., L, Ev]. scale defaults to 1 / sqrt(E). `mask` broadcasts to
/// [..., L, S]: a bool mask keeps the scores where it is true (the rest become -inf), a float
/// mask is added. `causal`: query i attends to keys j <= i + (S - L), the diagonal aligned to the
/// bottom right, so a step of decoding (L new queries, a KV cache of S >= L keys) attends to
/// every cached key and to itself; for S == L it is torch's is_causal (which aligns to the top
/// left, torch's CausalVariant.LOWER_RIGHT being this). A query that may attend to no key gets
/// NaN, as torch's math kernel. f16 and bf16 run in f32 (f32 accumulation), rounded once.
/// One fused op on a backend with the kernel (EigenCpu: no L x S tensor is made), else the
/// decomposition matmul, scale, mask, softmax, matmul.
template <Backend B>
[[nodiscard]] Tensor<B> attention(Tensor<B> q, Tensor<B> k, Tensor<B> v, Opt<B> mask = std::nullopt,
                                  bool causal = false, std::optional<double> scale = std::nullopt) {
  constexpr const char* op = "attention";
  (void)detail::common_device(op, q, k, v);
  for (const Tensor<B>* t : {&q, &k, &v}) {
    detail::not_quantized(op, t->dtype());
    detail::want_kind(op, t->dtype(), {Kind::Float}, "float operands");
    detail::same_dtype(op, q.dtype(), t->dtype());
  }
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2)
    detail::raise<ShapeError>("shape", "{}: q, k and v need rank >= 2, got {}, {} and {}", op,
                              q.shape(), k.shape(), v.shape());
  const std::int64_t l = q.shape()[q.rank() - 2], e = q.shape()[q.rank() - 1];
  const std::int64_t s = k.shape()[k.rank() - 2];
  if (k.shape()[k.rank() - 1] != e || v.shape()[v.rank() - 2] != s)
    detail::raise<ShapeError>("shape",
                              "{}: q {}, k {} and v {} do not fit (q [..., L, E], k [..., S, E], "
                              "v [..., S, Ev])",
                              op, q.shape(), k.shape(), v.shape());
  if (mask) {
    (void)detail::common_device(op, q, *mask);
    detail::want_kind(op, mask->dtype(), {Kind::Bool, Kind::Float}, "a bool or float mask");
    if (mask->dtype() != DType::boolean) detail::same_dtype(op, q.dtype(), mask->dtype());
  }
  if (causal && s < l)
    detail::raise<ShapeError>("shape", "{}: causal with {} queries over {} keys (needs S >= L)", op,
                              l, s);
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(e));
  if constexpr (detail::has_kernel_attention<B>)
    return detail::nn::fused_attention(std::move(q), std::move(k), std::move(v), std::move(mask),
                                       causal, sc);
  const DType d = q.dtype();
  const bool half = d == DType::f16 || d == DType::bf16;
  auto up = [half](Tensor<B> t) { return half ? ferry::cast(std::move(t), DType::f32) : t; };
  auto scores = matmul(up(std::move(q)), swap_dims(up(std::move(k)), -2, -1)) * sc;
  if (mask) {
    if (mask->dtype() == DType::boolean)
      scores = mask_fill(std::move(scores), logical_not(std::move(*mask)),
                         -std::numeric_limits<double>::infinity());
    else
      scores = std::move(scores) + up(std::move(*mask));
  }
  if (causal) {
    auto keep = tril(detail::full_on(scores, op, Shape{l, s}, Scalar(true), DType::boolean), s - l);
    scores = mask_fill(std::move(scores), logical_not(std::move(keep)),
                       -std::numeric_limits<double>::infinity());
  }
  auto y = matmul(softmax(std::move(scores), -1), up(std::move(v)));
  return half ? ferry::cast(std::move(y), d) : y;
}

}  // namespace ferry

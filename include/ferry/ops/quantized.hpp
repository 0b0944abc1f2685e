// Ferry: the quantized ops of the front: quantize, quantize_dynamic, dequantize, q_to_parts and
// the q_* layout ops (declared in ferry/ops.hpp, whose plain layout ops route quantized tensors
// to them). Included by ferry/ops.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "ferry/ops.hpp"

namespace ferry {

/// Quantizes a float tensor with given scales (one per parameter group, see quant::param_shape)
/// and offsets (affine only), as ONNX QuantizeLinear does.
template <Backend B>
[[nodiscard]] Tensor<B> quantize(Tensor<B> x, quant::Scheme scheme, std::vector<float> scales,
                                 std::vector<std::int32_t> offsets = {}) {
  const auto dev = detail::common_device("quantize", x);
  detail::want_kind("quantize", x.dtype(), {Kind::Float}, "float operands");
  // The kernel checks them again (for callers of quant::quantize); here they fail at the call,
  // also in async mode.
  quant::check_params(scheme, x.shape(), scales, offsets);
  auto sch = std::make_shared<const quant::Scheme>(scheme);
  op::Quantize o{detail::TA<B>::ref(x), std::move(scheme), std::move(scales), std::move(offsets),
                 detail::out_ref(x, x.shape(), DType::quantized, sch)};
  return detail::emit(detail::TA<B>::core(x, "quantize"), dev, std::move(o), x);
}
/// Quantizes with scales (and offsets) calibrated from the data's min/max per parameter group.
template <Backend B>
[[nodiscard]] Tensor<B> quantize_dynamic(Tensor<B> x, quant::Scheme scheme) {
  const auto dev = detail::common_device("quantize_dynamic", x);
  detail::want_kind("quantize_dynamic", x.dtype(), {Kind::Float}, "float operands");
  scheme.validate_for(x.shape());
  auto sch = std::make_shared<const quant::Scheme>(scheme);
  op::QuantizeDynamic o{detail::TA<B>::ref(x), std::move(scheme),
                        detail::out_ref(x, x.shape(), DType::quantized, sch)};
  return detail::emit(detail::TA<B>::core(x, "quantize_dynamic"), dev, std::move(o), x);
}
/// x = (q - offset) * scale, to any float dtype (f16 and bf16: the f32 value rounded once).
template <Backend B>
[[nodiscard]] Tensor<B> dequantize(Tensor<B> q, DType to = DType::f32) {
  const auto dev = detail::common_device("dequantize", q);
  if (!q.is_quantized())
    detail::raise<DTypeError>("dtype", "dequantize: tensor {} is {}, not quantized", q.id(),
                              q.dtype());
  if (kind_of(to) != Kind::Float)
    detail::raise<DTypeError>(
        "dtype", "dequantize: target dtype must be a float dtype (f32, f64, f16, bf16), got {}",
        to);
  op::Dequantize o{detail::TA<B>::ref(q), detail::out_ref(q, q.shape(), to)};
  return detail::emit(detail::TA<B>::core(q, "dequantize"), dev, std::move(o), q);
}
/// The packed parts of a quantized tensor (data, scales, offsets), byte for byte.
template <Backend B>
[[nodiscard]] quant::QuantizedParts q_to_parts(Tensor<B> q) {
  return q.to_parts();
}

namespace detail {
template <Backend B>
void want_quantized(const char* op, const Tensor<B>& q) {
  if (!q.is_quantized())
    raise<DTypeError>("dtype", "{}: tensor {} is {}, not quantized", op, q.id(), q.dtype());
}
}  // namespace detail

template <Backend B>
[[nodiscard]] Tensor<B> q_reshape(Tensor<B> x, Shape shape) {
  const auto dev = detail::common_device("q_reshape", x);
  detail::want_quantized("q_reshape", x);
  Shape s = detail::reshape_target("q_reshape", x.shape(), shape);
  auto sch =
      std::make_shared<const quant::Scheme>(quant::reshaped_scheme(x.scheme(), x.shape(), s));
  op::QReshape o{detail::TA<B>::ref(x), detail::out_ref(x, std::move(s), DType::quantized, sch)};
  return detail::emit(detail::TA<B>::core(x, "q_reshape"), dev, std::move(o), x);
}
template <Backend B>
[[nodiscard]] Tensor<B> q_permute(Tensor<B> x, std::vector<std::int64_t> perm) {
  const auto dev = detail::common_device("q_permute", x);
  detail::want_quantized("q_permute", x);
  auto p = detail::permutation("q_permute", x.shape(), perm);
  std::vector<std::int64_t> s(p.size()), pi(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    s[i] = x.shape()[p[i]];
    pi[i] = static_cast<std::int64_t>(p[i]);
  }
  auto sch =
      std::make_shared<const quant::Scheme>(quant::permuted_scheme(x.scheme(), x.shape(), pi));
  op::QPermute o{detail::TA<B>::ref(x), std::move(pi),
                 detail::out_ref(x, Shape(std::move(s)), DType::quantized, sch)};
  return detail::emit(detail::TA<B>::core(x, "q_permute"), dev, std::move(o), x);
}
template <Backend B>
[[nodiscard]] Tensor<B> q_swap_dims(Tensor<B> x, std::int64_t a, std::int64_t b) {
  detail::want_quantized("q_swap_dims", x);
  return swap_dims(std::move(x), a, b);
}
template <Backend B>
[[nodiscard]] Tensor<B> q_flip(Tensor<B> x, std::vector<std::int64_t> axes) {
  const auto dev = detail::common_device("q_flip", x);
  detail::want_quantized("q_flip", x);
  auto a = detail::distinct_axes("q_flip", x.shape(), axes);
  std::vector<std::int64_t> ai(a.begin(), a.end());
  quant::check_flip(x.scheme(), x.shape(), ai);
  auto sch = std::make_shared<const quant::Scheme>(x.scheme());
  op::QFlip o{detail::TA<B>::ref(x), std::move(ai),
              detail::out_ref(x, x.shape(), DType::quantized, sch)};
  return detail::emit(detail::TA<B>::core(x, "q_flip"), dev, std::move(o), x);
}
/// Slices with step 1 only (a strided slice would break packed blocks).
template <Backend B>
[[nodiscard]] Tensor<B> q_slice(Tensor<B> x, std::vector<Range> ranges) {
  const auto dev = detail::common_device("q_slice", x);
  detail::want_quantized("q_slice", x);
  auto r = detail::normalise_ranges("q_slice", x.shape(), ranges);
  std::vector<std::pair<std::int64_t, std::int64_t>> pr;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r[i].step != 1)
      detail::raise<QuantError>("quant", "q_slice: step {} on dim {}: quantized slices take step 1",
                                r[i].step, i);
    pr.emplace_back(r[i].start, r[i].end);
  }
  quant::check_slice(x.scheme(), x.shape(), pr);
  auto sch = std::make_shared<const quant::Scheme>(x.scheme());
  op::QSlice o{detail::TA<B>::ref(x), std::move(pr),
               detail::out_ref(x, detail::sliced(x.shape(), r), DType::quantized, sch)};
  return detail::emit(detail::TA<B>::core(x, "q_slice"), dev, std::move(o), x);
}

/// expand of a quantized tensor (and a check that it is one): exact, params repeated.
template <Backend B>
[[nodiscard]] Tensor<B> q_expand(Tensor<B> x, Shape shape) {
  detail::want_quantized("q_expand", x);
  return expand(std::move(x), std::move(shape));
}
/// repeat of a quantized tensor: QuantError when a repeated dim would split a block.
template <Backend B>
[[nodiscard]] Tensor<B> q_repeat(Tensor<B> x, std::vector<std::int64_t> times) {
  detail::want_quantized("q_repeat", x);
  return repeat(std::move(x), std::move(times));
}
/// index_select of a quantized tensor (burn's q_select): QuantError when `dim` is split into
/// blocks larger than 1.
template <Backend B>
[[nodiscard]] Tensor<B> q_select(Tensor<B> x, std::int64_t dim, Tensor<B> index) {
  detail::want_quantized("q_select", x);
  return index_select(std::move(x), dim, std::move(index));
}
/// cat of quantized tensors: one scheme; whole blocks along `dim` up to the last tensor; where
/// the dim has one param for the result, equal params (QuantError when the op runs otherwise).
template <Backend B>
[[nodiscard]] Tensor<B> q_cat(std::vector<Tensor<B>> xs, std::int64_t dim) {
  for (const auto& x : xs) detail::want_quantized("q_cat", x);
  return cat(std::move(xs), dim);
}
/// `q_cat({a, b}, 0)`: the same for a braced list (its tensors passed shared, as cat's).
template <Backend B>
[[nodiscard]] Tensor<B> q_cat(std::initializer_list<Tensor<B>> xs, std::int64_t dim) {
  return q_cat(std::vector<Tensor<B>>(xs), dim);
}
/// gather of a quantized tensor: QuantError unless `dim` has one param along it.
template <Backend B>
[[nodiscard]] Tensor<B> q_gather(Tensor<B> x, std::int64_t dim, Tensor<B> index) {
  detail::want_quantized("q_gather", x);
  return gather(std::move(x), dim, std::move(index));
}
/// narrow of a quantized tensor: q_slice on one dim.
template <Backend B>
[[nodiscard]] Tensor<B> q_narrow(Tensor<B> x, std::int64_t dim, std::int64_t start,
                                 std::int64_t length) {
  detail::want_quantized("q_narrow", x);
  return narrow(std::move(x), dim, start, length);
}

}  // namespace ferry

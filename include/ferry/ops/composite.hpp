// Ferry: the composite element-wise ops and their decompositions, and the bitwise operators.
// Included by ferry/ops.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <cmath>
#include <concepts>
#include <limits>
#include <utility>
#include <vector>

#include "ferry/detail/has_kernel.hpp"
#include "ferry/ops.hpp"

// A composite op is recorded as itself when the backend has its kernel (found at compile time,
// detail::has_kernel_<name>), else as its decomposition into primitive ops, as PyTorch's
// composite kernels and ONNX functions do. Both paths check the operands the same way first, so
// errors name the op the user called. docs/backend.md lists the decompositions.
namespace ferry {

namespace detail {
/// The decompositions, on operands already checked.
namespace decompose {
template <Backend B>
Tensor<B> silu(Tensor<B> x) {  // x sigmoid(x)
  auto s = ferry::sigmoid(x);
  return ferry::mul(std::move(x), std::move(s));
}
template <Backend B>
Tensor<B> hard_sigmoid(Tensor<B> x) {  // min(max(x + 3, 0), 6) / 6
  return ferry::div(ferry::clamp(ferry::add(std::move(x), Scalar(3.0)), Scalar(0.0), Scalar(6.0)),
                    Scalar(6.0));
}
template <Backend B>
Tensor<B> log_sigmoid(Tensor<B> x) {  // min(x, 0) - log1p(exp(-|x|))
  auto m = ferry::minimum(x, Scalar(0.0));
  return ferry::sub(std::move(m), ferry::log1p(ferry::exp(ferry::neg(ferry::abs(std::move(x))))));
}
template <Backend B>
Tensor<B> gelu_tanh(Tensor<B> x) {  // x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))
  auto c = ferry::mul(ferry::mul(x, x), x);
  auto u = ferry::add(ferry::mul(std::move(c), Scalar(0.044715)), x);
  auto s = ferry::sigmoid(ferry::mul(std::move(u), Scalar(2.0 * 0.79788456080286535588)));
  return ferry::mul(std::move(x), std::move(s));
}
template <Backend B>
Tensor<B> isnan(Tensor<B> x) {  // x != x
  auto y = x;
  return ferry::not_equal(std::move(x), std::move(y));
}
template <Backend B>
Tensor<B> isinf(Tensor<B> x) {  // |x| == inf
  return ferry::equal(ferry::abs(std::move(x)), Scalar(std::numeric_limits<double>::infinity()));
}
template <Backend B>
Tensor<B> isfinite(Tensor<B> x) {  // |x| < inf (false for NaN)
  return ferry::less(ferry::abs(std::move(x)), Scalar(std::numeric_limits<double>::infinity()));
}
template <Backend B>
Tensor<B> hypot(Tensor<B> a, Tensor<B> b) {  // sqrt(a^2 + b^2): overflows past sqrt(max)
  auto a2 = ferry::mul(a, a);
  auto b2 = ferry::mul(b, b);
  return ferry::sqrt(ferry::add(std::move(a2), std::move(b2)));
}
template <Backend B>
Tensor<B> hypot(Tensor<B> a, Scalar s) {
  auto a2 = ferry::mul(a, a);
  const double v = s.as<double>();
  return ferry::sqrt(ferry::add(std::move(a2), Scalar(v * v)));
}
template <Backend B, class W>
Tensor<B> prelu(Tensor<B> x, W w) {  // x > 0 ? x : w x
  auto pos = ferry::greater(x, Scalar(0.0));
  auto neg = ferry::mul(x, std::move(w));
  return ferry::where(std::move(pos), std::move(x), std::move(neg));
}
template <Backend B>
Tensor<B> logical_xor(Tensor<B> a, Tensor<B> b) {  // a != b
  return ferry::not_equal(std::move(a), std::move(b));
}
}  // namespace decompose

/// f(x) with f16 and bf16 operands computed in f32 and the result rounded once, as the kernels
/// compute halves: a decomposition in the half dtype would round every step (an ulp or more
/// apart) and overflow where f32 does not (hypot's squares pass f16's 65504 from 256 up).
template <Backend B, class F, std::same_as<Tensor<B>>... More>
Tensor<B> halves_in_f32(F&& f, Tensor<B> x, More... more) {
  const DType d = x.dtype();  // the operands' (checked to be one dtype)
  if (d != DType::f16 && d != DType::bf16) return f(std::move(x), std::move(more)...);
  auto y = f(ferry::cast(std::move(x), DType::f32), ferry::cast(std::move(more), DType::f32)...);
  if (y.dtype() != DType::f32) return y;  // the predicates' bools
  return ferry::cast(std::move(y), d);
}

template <Backend B>
void check_operand(const char* op, const Tensor<B>& x) {
  (void)common_device(op, x);
}
}  // namespace detail

// ---- composite unary ops -------------------------------------------------------------------
#define FERRY_DETAIL_COMPOSITE_UNARY(n)                                                       \
  template <Backend B>                                                                        \
  [[nodiscard]] Tensor<B> n(Tensor<B> x) {                                                    \
    if constexpr (detail::has_kernel_##n<B>) {                                                \
      return detail::unary(UnaryKind::n, std::move(x));                                       \
    } else {                                                                                  \
      detail::check_operand(#n, x);                                                           \
      detail::check_unary(UnaryKind::n, x.dtype());                                           \
      return detail::halves_in_f32([](auto t) { return detail::decompose::n(std::move(t)); }, \
                                   std::move(x));                                             \
    }                                                                                         \
  }
/// silu(x) = x sigmoid(x); hard_sigmoid(x) = min(max(x + 3, 0), 6) / 6 (torch.nn.Hardsigmoid);
/// log_sigmoid(x) = log(sigmoid(x)), stable; gelu_tanh: gelu with torch's approximate='tanh'.
FERRY_UNARY_COMPOSITE_KINDS(FERRY_DETAIL_COMPOSITE_UNARY)
/// isnan, isinf, isfinite: bool results, on float and int tensors (always false, false, true
/// on ints).
FERRY_PREDICATE_KINDS(FERRY_DETAIL_COMPOSITE_UNARY)
#undef FERRY_DETAIL_COMPOSITE_UNARY

/// How gelu approximates Phi: exactly (erf, torch's default) or with tanh.
enum class GeluApprox { none, tanh };
/// torch.nn.functional.gelu(x, approximate=...).
template <Backend B>
[[nodiscard]] Tensor<B> gelu(Tensor<B> x, GeluApprox approx) {
  return approx == GeluApprox::tanh ? gelu_tanh(std::move(x)) : gelu(std::move(x));
}

// ---- composite binary ops ------------------------------------------------------------------
/// sqrt(a^2 + b^2) without undue overflow or underflow (std::hypot); its decomposition, for a
/// backend without the kernel, is the plain formula.
template <Backend B>
[[nodiscard]] Tensor<B> hypot(Tensor<B> a, Tensor<B> b) {
  if constexpr (detail::has_kernel_hypot<B>) {
    return detail::binary(BinaryKind::hypot, std::move(a), std::move(b));
  } else {
    (void)detail::common_device("hypot", a, b);
    detail::check_binary(BinaryKind::hypot, a.dtype(), b.dtype());
    (void)detail::broadcast("hypot", a.shape(), b.shape());
    return detail::halves_in_f32(
        [](auto x, auto y) { return detail::decompose::hypot(std::move(x), std::move(y)); },
        std::move(a), std::move(b));
  }
}
template <Backend B>
[[nodiscard]] Tensor<B> hypot(Tensor<B> a, Scalar s) {
  if constexpr (detail::has_kernel_hypot_scalar<B>) {
    return detail::binary_scalar(BinaryKind::hypot, std::move(a), s);
  } else {
    detail::check_operand("hypot", a);
    detail::check_binary_scalar(BinaryKind::hypot, a.dtype(), s);
    return detail::halves_in_f32([&](auto t) { return detail::decompose::hypot(std::move(t), s); },
                                 std::move(a));
  }
}

/// torch.nn.functional.prelu: x > 0 ? x : w x, with `w` of one element or of x's channel count
/// (dim 1 of x, which needs rank >= 2), applied per channel.
template <Backend B>
[[nodiscard]] Tensor<B> prelu(Tensor<B> x, Tensor<B> w) {
  (void)detail::common_device("prelu", x, w);
  detail::check_binary(BinaryKind::prelu, x.dtype(), w.dtype());
  if (w.numel() != 1) {
    if (w.rank() != 1 || x.rank() < 2 || w.shape()[0] != x.shape()[1])
      detail::raise<ShapeError>("shape",
                                "prelu: weight of shape {} must have one element or one per "
                                "channel (dim 1) of the input {}",
                                w.shape(), x.shape());
  }
  std::vector<std::int64_t> ws(x.rank() < 2 ? 1 : x.rank() - 1, 1);
  if (w.numel() != 1) ws[0] = w.shape()[0];
  auto wb = reshape(std::move(w), Shape(std::move(ws)));
  if constexpr (detail::has_kernel_prelu<B>)
    return detail::binary(BinaryKind::prelu, std::move(x), std::move(wb));
  else
    return detail::decompose::prelu(std::move(x), std::move(wb));
}
/// torch.nn.functional.leaky_relu: x > 0 ? x : slope x (prelu with one scalar weight).
template <Backend B>
[[nodiscard]] Tensor<B> leaky_relu(Tensor<B> x, double slope = 0.01) {
  detail::check_operand("leaky_relu", x);
  detail::want_kind("leaky_relu", x.dtype(), {Kind::Float}, "float operands");
  if constexpr (detail::has_kernel_prelu_scalar<B>) {
    return detail::binary_scalar(BinaryKind::prelu, std::move(x), Scalar(slope));
  } else {
    detail::check_binary_scalar(BinaryKind::prelu, x.dtype(), Scalar(slope));
    return detail::decompose::prelu(std::move(x), Scalar(slope));
  }
}

/// a XOR b on bool tensors.
template <Backend B>
[[nodiscard]] Tensor<B> logical_xor(Tensor<B> a, Tensor<B> b) {
  if constexpr (detail::has_kernel_logical_xor<B>) {
    return detail::binary(BinaryKind::logical_xor, std::move(a), std::move(b));
  } else {
    (void)detail::common_device("logical_xor", a, b);
    detail::check_binary(BinaryKind::logical_xor, a.dtype(), b.dtype());
    return detail::decompose::logical_xor(std::move(a), std::move(b));
  }
}

// ---- operators: logical on bool tensors, bitwise on int tensors -----------------------------
#define FERRY_DETAIL_BIT_OPERATOR(sym, logical, bitwise)                         \
  template <Backend B>                                                           \
  [[nodiscard]] Tensor<B> operator sym(Tensor<B> a, Tensor<B> b) {               \
    if (a.dtype() == DType::boolean) return logical(std::move(a), std::move(b)); \
    return bitwise(std::move(a), std::move(b));                                  \
  }                                                                              \
  template <Backend B, ScalarLike S>                                             \
  [[nodiscard]] Tensor<B> operator sym(Tensor<B> a, S s) {                       \
    return bitwise(std::move(a), Scalar(s));                                     \
  }
FERRY_DETAIL_BIT_OPERATOR(&, logical_and, bitwise_and)
FERRY_DETAIL_BIT_OPERATOR(|, logical_or, bitwise_or)
FERRY_DETAIL_BIT_OPERATOR(^, logical_xor, bitwise_xor)
#undef FERRY_DETAIL_BIT_OPERATOR
template <Backend B>
[[nodiscard]] Tensor<B> operator<<(Tensor<B> a, Tensor<B> b) {
  return bitwise_left_shift(std::move(a), std::move(b));
}
template <Backend B, ScalarLike S>
[[nodiscard]] Tensor<B> operator<<(Tensor<B> a, S s) {
  return bitwise_left_shift(std::move(a), Scalar(s));
}
template <Backend B>
[[nodiscard]] Tensor<B> operator>>(Tensor<B> a, Tensor<B> b) {
  return bitwise_right_shift(std::move(a), std::move(b));
}
template <Backend B, ScalarLike S>
[[nodiscard]] Tensor<B> operator>>(Tensor<B> a, S s) {
  return bitwise_right_shift(std::move(a), Scalar(s));
}
/// ~x: bitwise_not on ints, logical_not on bool (as torch).
template <Backend B>
[[nodiscard]] Tensor<B> operator~(Tensor<B> a) {
  if (a.dtype() == DType::boolean) return logical_not(std::move(a));
  return bitwise_not(std::move(a));
}

}  // namespace ferry

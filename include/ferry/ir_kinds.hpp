// Ferry: the op kinds of the IR — the X-lists that name each kernel once, the kind enums built
// from them, their names and the predicates over them. Included by ferry/ir.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry {

// X-lists of the op kinds: one place that names each kernel. The backend kernel has the same
// name (`b.add(x, y)`, `b.add_scalar(x, s)`, `b.sum(x, dim, keepdim)`). The *_COMPOSITE lists
// name ops that have a decomposition into the others (docs/backend.md): the router records the
// op itself when the backend has its kernel, else the decomposition (ferry/ops/composite.hpp).
// clang-format off
#define FERRY_UNARY_KINDS(X)                                                                   \
  X(neg) X(abs) X(relu) X(exp) X(log) X(sqrt) X(sin) X(cos) X(tanh) X(sigmoid) X(gelu)         \
  X(logical_not) X(erf) X(recip) X(round) X(floor) X(ceil) X(trunc) X(log1p) X(expm1) X(sign)  \
  X(tan) X(sinh) X(cosh) X(asin) X(acos) X(atan) X(asinh) X(acosh) X(atanh) X(bitwise_not)
#define FERRY_UNARY_COMPOSITE_KINDS(X) X(silu) X(hard_sigmoid) X(log_sigmoid) X(gelu_tanh)
/// Unary ops whose result is bool (composite too).
#define FERRY_PREDICATE_KINDS(X) X(isnan) X(isinf) X(isfinite)
#define FERRY_ARITH_KINDS(X)                                                                   \
  X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum) X(remainder) X(fmod) X(atan2)       \
  X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(bitwise_left_shift) X(bitwise_right_shift)
/// hypot(a, b); prelu(x, w) = x > 0 ? x : w x, whose scalar form is leaky_relu.
#define FERRY_ARITH_COMPOSITE_KINDS(X) X(hypot) X(prelu)
#define FERRY_COMPARE_KINDS(X) \
  X(equal) X(not_equal) X(greater) X(greater_equal) X(less) X(less_equal)
#define FERRY_LOGICAL_KINDS(X) X(logical_and) X(logical_or)
#define FERRY_LOGICAL_COMPOSITE_KINDS(X) X(logical_xor)
#define FERRY_REDUCE_KINDS(X) X(sum) X(prod) X(mean) X(max) X(min) X(argmax) X(argmin)
/// Writes of `value` into a copy of `in` at `index` along a dim (`b.scatter(x, dim, index, src)`).
#define FERRY_SCATTER_KINDS(X) X(scatter) X(scatter_add)
/// ONNX ScatterND: slices of `value` written (added) at the index tuples of `index`.
#define FERRY_SCATTER_ND_KINDS(X) X(scatter_nd) X(scatter_nd_add)
/// Inclusive scans along one dim (the kernel: `b.cumsum(x, dim)`).
#define FERRY_SCAN_KINDS(X) X(cumsum) X(cumprod) X(cummax) X(cummin)
/// Fused softmax and log_softmax along one dim (the optional kernel: `b.softmax(x, dim)`); a
/// backend without it runs their decomposition (max, sub, exp, sum, div).
#define FERRY_SOFTMAX_KINDS(X) X(softmax) X(log_softmax)
// clang-format on

#define FERRY_DETAIL_ENUM(n) n,
#define FERRY_DETAIL_NAME(n) #n,
enum class UnaryKind : std::uint8_t {
  FERRY_UNARY_KINDS(FERRY_DETAIL_ENUM) FERRY_UNARY_COMPOSITE_KINDS(FERRY_DETAIL_ENUM)
      FERRY_PREDICATE_KINDS(FERRY_DETAIL_ENUM)
};
enum class BinaryKind : std::uint8_t {
  FERRY_ARITH_KINDS(FERRY_DETAIL_ENUM) FERRY_ARITH_COMPOSITE_KINDS(FERRY_DETAIL_ENUM)
      FERRY_COMPARE_KINDS(FERRY_DETAIL_ENUM) FERRY_LOGICAL_KINDS(FERRY_DETAIL_ENUM)
          FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_DETAIL_ENUM)
};
enum class ReduceKind : std::uint8_t { FERRY_REDUCE_KINDS(FERRY_DETAIL_ENUM) };
enum class ScanKind : std::uint8_t { FERRY_SCAN_KINDS(FERRY_DETAIL_ENUM) };
enum class SoftmaxKind : std::uint8_t { FERRY_SOFTMAX_KINDS(FERRY_DETAIL_ENUM) };
enum class ScatterKind : std::uint8_t { FERRY_SCATTER_KINDS(FERRY_DETAIL_ENUM) };
enum class ScatterNdKind : std::uint8_t { FERRY_SCATTER_ND_KINDS(FERRY_DETAIL_ENUM) };

[[nodiscard]] inline const char* name(UnaryKind k) noexcept {
  static constexpr const char* n[] = {FERRY_UNARY_KINDS(FERRY_DETAIL_NAME)
                                          FERRY_UNARY_COMPOSITE_KINDS(FERRY_DETAIL_NAME)
                                              FERRY_PREDICATE_KINDS(FERRY_DETAIL_NAME)};
  return n[static_cast<std::size_t>(k)];
}
[[nodiscard]] inline const char* name(BinaryKind k) noexcept {
  static constexpr const char* n[] = {
      FERRY_ARITH_KINDS(FERRY_DETAIL_NAME) FERRY_ARITH_COMPOSITE_KINDS(FERRY_DETAIL_NAME)
          FERRY_COMPARE_KINDS(FERRY_DETAIL_NAME) FERRY_LOGICAL_KINDS(FERRY_DETAIL_NAME)
              FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_DETAIL_NAME)};
  return n[static_cast<std::size_t>(k)];
}
[[nodiscard]] inline const char* name(ReduceKind k) noexcept {
  static constexpr const char* n[] = {FERRY_REDUCE_KINDS(FERRY_DETAIL_NAME)};
  return n[static_cast<std::size_t>(k)];
}
[[nodiscard]] inline const char* name(ScanKind k) noexcept {
  static constexpr const char* n[] = {FERRY_SCAN_KINDS(FERRY_DETAIL_NAME)};
  return n[static_cast<std::size_t>(k)];
}
[[nodiscard]] inline const char* name(SoftmaxKind k) noexcept {
  static constexpr const char* n[] = {FERRY_SOFTMAX_KINDS(FERRY_DETAIL_NAME)};
  return n[static_cast<std::size_t>(k)];
}
[[nodiscard]] inline const char* name(ScatterKind k) noexcept {
  static constexpr const char* n[] = {FERRY_SCATTER_KINDS(FERRY_DETAIL_NAME)};
  return n[static_cast<std::size_t>(k)];
}
[[nodiscard]] inline const char* name(ScatterNdKind k) noexcept {
  static constexpr const char* n[] = {FERRY_SCATTER_ND_KINDS(FERRY_DETAIL_NAME)};
  return n[static_cast<std::size_t>(k)];
}
[[nodiscard]] constexpr bool is_comparison(BinaryKind k) noexcept {
  return k >= BinaryKind::equal && k <= BinaryKind::less_equal;
}
[[nodiscard]] constexpr bool is_logical(BinaryKind k) noexcept {
  return k == BinaryKind::logical_and || k == BinaryKind::logical_or ||
         k == BinaryKind::logical_xor;
}
[[nodiscard]] constexpr bool is_bitwise(BinaryKind k) noexcept {
  return k >= BinaryKind::bitwise_and && k <= BinaryKind::bitwise_right_shift;
}
[[nodiscard]] constexpr bool is_predicate(UnaryKind k) noexcept { return k >= UnaryKind::isnan; }

}  // namespace ferry

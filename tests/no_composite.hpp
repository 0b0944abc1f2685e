// ferry_test::NoComposite: EigenCpu with the kernels of every composite op hidden, so the router
// records their decompositions (ferry/ops/composite.hpp, ops/reductions.hpp): what a backend
// with only the primitive kernels runs. test_composite compares the two paths by formula;
// test_primitives runs test_dtypes' whole op table on it.
#pragma once

#include <string_view>

#include "ferry/ferry.hpp"

namespace ferry_test {

/// EigenCpu with the composite kernels hidden: a deleted template is what overload resolution
/// picks, so `b.silu(h)` is ill-formed and has_kernel_silu is false.
struct NoComposite : ferry::EigenCpu {
  using ferry::EigenCpu::EigenCpu;
  static constexpr std::string_view name() { return "no-composite"; }
#define FERRY_T_HIDE(n) \
  template <class... A> \
  void n(A&&...) = delete;
  FERRY_UNARY_COMPOSITE_KINDS(FERRY_T_HIDE)
  FERRY_PREDICATE_KINDS(FERRY_T_HIDE)
  FERRY_ARITH_COMPOSITE_KINDS(FERRY_T_HIDE)
  FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_T_HIDE)
  FERRY_SOFTMAX_KINDS(FERRY_T_HIDE)
  FERRY_T_HIDE(attention)
  FERRY_T_HIDE(hypot_scalar)
  FERRY_T_HIDE(prelu_scalar)
#undef FERRY_T_HIDE
};

}  // namespace ferry_test

// Ferry: the X-lists of EigenCpu's unary_math.hpp kernels, for eigen_cpu.hpp's declarations
// (which include no Eigen header) and their definitions.
// SPDX-License-Identifier: MIT
#pragma once

// clang-format off
/// The float functions: f(x) in the compute type C (double for f32).
#define FERRY_CPU_MATH_FLOAT_OPS(X)                                                            \
  X(erf) X(recip) X(log1p) X(expm1) X(tan) X(sinh) X(cosh) X(asin) X(acos) X(atan) X(asinh)    \
  X(acosh) X(atanh) X(silu) X(hard_sigmoid) X(log_sigmoid) X(gelu_tanh)
/// Defined on floats and integers (the identity on integers, but sign).
#define FERRY_CPU_MATH_NUMERIC_OPS(X) X(round) X(floor) X(ceil) X(trunc) X(sign)
/// Integers only.
#define FERRY_CPU_MATH_INT_OPS(X) X(bitwise_not)
/// To bool, on floats and integers.
#define FERRY_CPU_PREDICATE_OPS(X) X(isnan) X(isinf) X(isfinite)
// clang-format on

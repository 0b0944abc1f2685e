// Ferry: EigenCpu's libm functions, rounding, sign, recip, bitwise_not, activations and
// predicates — the definitions of eigen_cpu.hpp's declarations for this family. Compiled once by
// src/eigen_cpu/unary_math.cpp, or included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY.
// Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/unary_math.hpp"

namespace ferry {

#define FERRY_CPU_UNARY(fn)                                                      \
  FERRY_FUNC CpuTensor EigenCpu::fn(CpuTensor a) const {                         \
    return detail::cpu::math_unary<detail::cpu::MathOp::fn>(acc_, std::move(a)); \
  }
FERRY_CPU_MATH_FLOAT_OPS(FERRY_CPU_UNARY)
FERRY_CPU_MATH_NUMERIC_OPS(FERRY_CPU_UNARY)
FERRY_CPU_MATH_INT_OPS(FERRY_CPU_UNARY)
FERRY_CPU_PREDICATE_OPS(FERRY_CPU_UNARY)
#undef FERRY_CPU_UNARY

}  // namespace ferry

// Ferry: EigenCpu's bitwise ops (integers) and atan2, hypot, prelu (floats) — the definitions of
// eigen_cpu.hpp's declarations for this family. Compiled once by src/eigen_cpu/bitwise.cpp, or
// included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this
// file.
// SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"

namespace ferry {

#define FERRY_CPU_BINARY(fn)                                                              \
  FERRY_FUNC CpuTensor EigenCpu::fn(CpuTensor a, CpuTensor b) const {                     \
    return detail::cpu::binary<detail::cpu::BinOp::fn>(acc_, std::move(a), std::move(b)); \
  }                                                                                       \
  FERRY_FUNC CpuTensor EigenCpu::fn##_scalar(CpuTensor a, Scalar s) const {               \
    return detail::cpu::binary_scalar<detail::cpu::BinOp::fn>(acc_, std::move(a), s);     \
  }
FERRY_CPU_BINARY(atan2)
FERRY_CPU_BINARY(hypot)
FERRY_CPU_BINARY(prelu)
FERRY_CPU_BINARY(bitwise_and)
FERRY_CPU_BINARY(bitwise_or)
FERRY_CPU_BINARY(bitwise_xor)
FERRY_CPU_BINARY(bitwise_left_shift)
FERRY_CPU_BINARY(bitwise_right_shift)
#undef FERRY_CPU_BINARY

}  // namespace ferry

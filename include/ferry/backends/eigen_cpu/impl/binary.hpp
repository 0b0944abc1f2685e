// Ferry: EigenCpu's broadcast arithmetic: add, sub, mul, div, pow, maximum, minimum, remainder,
// fmod — the definitions of eigen_cpu.hpp's declarations for this family. Compiled once by
// src/eigen_cpu/binary.cpp, or included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but
// those two includes this file. SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"

namespace ferry {

#define FERRY_CPU_BINARY(fn, op)                                                          \
  FERRY_FUNC CpuTensor EigenCpu::fn(CpuTensor a, CpuTensor b) const {                     \
    return detail::cpu::binary<detail::cpu::BinOp::op>(acc_, std::move(a), std::move(b)); \
  }                                                                                       \
  FERRY_FUNC CpuTensor EigenCpu::fn##_scalar(CpuTensor a, Scalar s) const {               \
    return detail::cpu::binary_scalar<detail::cpu::BinOp::op>(acc_, std::move(a), s);     \
  }
FERRY_CPU_BINARY(add, add)
FERRY_CPU_BINARY(sub, sub)
FERRY_CPU_BINARY(mul, mul)
FERRY_CPU_BINARY(div, div)
FERRY_CPU_BINARY(pow, pow)
FERRY_CPU_BINARY(maximum, maximum)
FERRY_CPU_BINARY(minimum, minimum)
FERRY_CPU_BINARY(remainder, remainder)
FERRY_CPU_BINARY(fmod, fmod)
#undef FERRY_CPU_BINARY

}  // namespace ferry

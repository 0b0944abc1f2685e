// Ferry: EigenCpu's unary functions, clamp and where — the definitions of eigen_cpu.hpp's
// declarations for this family. Compiled once by src/eigen_cpu/unary.cpp, or included inline by
// eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/unary.hpp"

namespace ferry {

#define FERRY_CPU_UNARY(fn)                                               \
  FERRY_FUNC CpuTensor EigenCpu::fn(CpuTensor a) const {                  \
    return detail::cpu::unary<detail::cpu::UnOp::fn>(acc_, std::move(a)); \
  }
FERRY_CPU_UNARY(logical_not)
FERRY_CPU_UNARY(neg)
FERRY_CPU_UNARY(abs)
FERRY_CPU_UNARY(relu)
FERRY_CPU_UNARY(exp)
FERRY_CPU_UNARY(log)
FERRY_CPU_UNARY(sqrt)
FERRY_CPU_UNARY(sin)
FERRY_CPU_UNARY(cos)
FERRY_CPU_UNARY(tanh)
FERRY_CPU_UNARY(sigmoid)
FERRY_CPU_UNARY(gelu)
#undef FERRY_CPU_UNARY

FERRY_FUNC CpuTensor EigenCpu::clamp(CpuTensor a, Scalar lo, Scalar hi) const {
  return detail::cpu::clamp(acc_, std::move(a), lo, hi);
}
FERRY_FUNC CpuTensor EigenCpu::where(CpuTensor mask, CpuTensor a, CpuTensor b) const {
  return detail::cpu::where(acc_, std::move(mask), std::move(a), std::move(b));
}

}  // namespace ferry

// Ferry: EigenCpu's comparisons and logical and/or/xor, to bool — the definitions of
// eigen_cpu.hpp's declarations for this family. Compiled once by src/eigen_cpu/compare.cpp, or
// included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this
// file. SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/compare.hpp"

namespace ferry {

#define FERRY_CPU_COMPARE(fn, op)                                                          \
  FERRY_FUNC CpuTensor EigenCpu::fn(CpuTensor a, CpuTensor b) const {                      \
    return detail::cpu::compare<detail::cpu::CmpOp::op>(acc_, std::move(a), std::move(b)); \
  }                                                                                        \
  FERRY_FUNC CpuTensor EigenCpu::fn##_scalar(CpuTensor a, Scalar s) const {                \
    return detail::cpu::compare_scalar<detail::cpu::CmpOp::op>(acc_, std::move(a), s);     \
  }
FERRY_CPU_COMPARE(equal, eq)
FERRY_CPU_COMPARE(not_equal, ne)
FERRY_CPU_COMPARE(greater, gt)
FERRY_CPU_COMPARE(greater_equal, ge)
FERRY_CPU_COMPARE(less, lt)
FERRY_CPU_COMPARE(less_equal, le)
#undef FERRY_CPU_COMPARE

FERRY_FUNC CpuTensor EigenCpu::logical_and(CpuTensor a, CpuTensor b) const {
  return detail::cpu::binary<detail::cpu::BinOp::logical_and>(acc_, std::move(a), std::move(b));
}
FERRY_FUNC CpuTensor EigenCpu::logical_or(CpuTensor a, CpuTensor b) const {
  return detail::cpu::binary<detail::cpu::BinOp::logical_or>(acc_, std::move(a), std::move(b));
}
FERRY_FUNC CpuTensor EigenCpu::logical_xor(CpuTensor a, CpuTensor b) const {
  return detail::cpu::binary<detail::cpu::BinOp::logical_xor>(acc_, std::move(a), std::move(b));
}

}  // namespace ferry

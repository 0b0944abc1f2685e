// Ferry: EigenCpu's matmul (Eigen's GEMM, batched and broadcast) — the definitions of
// eigen_cpu.hpp's declarations for this family. Compiled once by src/eigen_cpu/matmul.cpp, or
// included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this
// file. SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/matmul.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::matmul(CpuTensor a, CpuTensor b) const {
  return detail::cpu::matmul(acc_, std::move(a), std::move(b));
}

}  // namespace ferry

// Ferry: EigenCpu's fused softmax and log_softmax — the definitions of eigen_cpu.hpp's
// declarations for this family. Compiled once by src/eigen_cpu/softmax.cpp, or included inline by
// eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/softmax.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::softmax(CpuTensor a, std::size_t dim) const {
  return detail::cpu::softmax<false>(acc_, std::move(a), dim, "softmax");
}
FERRY_FUNC CpuTensor EigenCpu::log_softmax(CpuTensor a, std::size_t dim) const {
  return detail::cpu::softmax<true>(acc_, std::move(a), dim, "log_softmax");
}

}  // namespace ferry

// Ferry: EigenCpu's scans: cumsum, cumprod, cummax, cummin — the definitions of eigen_cpu.hpp's
// declarations for this family. Compiled once by src/eigen_cpu/scan.cpp, or included inline by
// eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/scan.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::cumsum(CpuTensor a, std::size_t dim) const {
  return detail::cpu::scan<detail::cpu::RedOp::sum>(acc_, std::move(a), dim, "cumsum");
}
FERRY_FUNC CpuTensor EigenCpu::cumprod(CpuTensor a, std::size_t dim) const {
  return detail::cpu::scan<detail::cpu::RedOp::prod>(acc_, std::move(a), dim, "cumprod");
}
FERRY_FUNC CpuTensor EigenCpu::cummax(CpuTensor a, std::size_t dim) const {
  return detail::cpu::scan<detail::cpu::RedOp::max>(acc_, std::move(a), dim, "cummax");
}
FERRY_FUNC CpuTensor EigenCpu::cummin(CpuTensor a, std::size_t dim) const {
  return detail::cpu::scan<detail::cpu::RedOp::min>(acc_, std::move(a), dim, "cummin");
}

}  // namespace ferry

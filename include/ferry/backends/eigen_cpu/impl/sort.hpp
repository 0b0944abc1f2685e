// Ferry: EigenCpu's argsort — the definition of eigen_cpu.hpp's declaration for this family.
// Compiled once by src/eigen_cpu/sort.cpp, or included inline by eigen_cpu.hpp with
// FERRY_HEADER_ONLY. Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/sort.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::argsort(CpuTensor a, std::size_t dim, bool descending,
                                       std::size_t k) const {
  return detail::cpu::argsort(acc_, std::move(a), dim, descending, k);
}

}  // namespace ferry

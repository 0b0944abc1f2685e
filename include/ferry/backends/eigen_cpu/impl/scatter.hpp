// Ferry: EigenCpu's scatter, scatter_add, gather_nd, scatter_nd and scatter_nd_add — the
// definitions of eigen_cpu.hpp's declarations for this family. Compiled once by
// src/eigen_cpu/scatter.cpp, or included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing
// but those two includes this file. SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/scatter.hpp"
#include "ferry/backends/eigen_cpu/scatter_nd.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::scatter(CpuTensor a, std::size_t dim, CpuTensor index,
                                       CpuTensor src) const {
  return detail::cpu::scatter<false>(acc_, std::move(a), dim, std::move(index), std::move(src));
}
FERRY_FUNC CpuTensor EigenCpu::scatter_add(CpuTensor a, std::size_t dim, CpuTensor index,
                                           CpuTensor src) const {
  return detail::cpu::scatter<true>(acc_, std::move(a), dim, std::move(index), std::move(src));
}

FERRY_FUNC CpuTensor EigenCpu::gather_nd(CpuTensor a, CpuTensor index) const {
  return detail::cpu::gather_nd(acc_, std::move(a), std::move(index));
}
FERRY_FUNC CpuTensor EigenCpu::scatter_nd(CpuTensor a, CpuTensor index, CpuTensor src) const {
  return detail::cpu::scatter_nd<false>(acc_, std::move(a), std::move(index), std::move(src));
}
FERRY_FUNC CpuTensor EigenCpu::scatter_nd_add(CpuTensor a, CpuTensor index, CpuTensor src) const {
  return detail::cpu::scatter_nd<true>(acc_, std::move(a), std::move(index), std::move(src));
}

}  // namespace ferry

// Ferry: EigenCpu's reductions: sum, prod, mean, max, min, argmax, argmin — the definitions of
// eigen_cpu.hpp's declarations for this family. Compiled once by src/eigen_cpu/reduce.cpp, or
// included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this
// file. SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <optional>
#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/reduce.hpp"

namespace ferry {

#define FERRY_CPU_REDUCE(fn)                                                                   \
  FERRY_FUNC CpuTensor EigenCpu::fn(CpuTensor a, std::optional<std::size_t> dim, bool keepdim) \
      const {                                                                                  \
    return detail::cpu::reduce<detail::cpu::RedOp::fn>(acc_, std::move(a), dim, keepdim);      \
  }
FERRY_CPU_REDUCE(sum)
FERRY_CPU_REDUCE(prod)
FERRY_CPU_REDUCE(mean)
FERRY_CPU_REDUCE(max)
FERRY_CPU_REDUCE(min)
#undef FERRY_CPU_REDUCE
FERRY_FUNC CpuTensor EigenCpu::argmax(CpuTensor a, std::optional<std::size_t> dim,
                                      bool keepdim) const {
  return detail::cpu::arg_reduce<true>(acc_, std::move(a), dim, keepdim);
}
FERRY_FUNC CpuTensor EigenCpu::argmin(CpuTensor a, std::optional<std::size_t> dim,
                                      bool keepdim) const {
  return detail::cpu::arg_reduce<false>(acc_, std::move(a), dim, keepdim);
}

}  // namespace ferry

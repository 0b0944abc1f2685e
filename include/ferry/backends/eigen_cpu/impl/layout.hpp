// Ferry: EigenCpu's layout kernels: reshape, permute, flip, expand, slice, cat, gather, repeat —
// the definitions of eigen_cpu.hpp's declarations for this family. Compiled once by
// src/eigen_cpu/layout.cpp, or included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but
// those two includes this file. SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/layout.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::reshape(CpuTensor a, const Shape& s) const {
  return detail::cpu::reshape(acc_, std::move(a), s);
}
FERRY_FUNC CpuTensor EigenCpu::permute(CpuTensor a, std::span<const std::size_t> perm) const {
  return detail::cpu::permute(acc_, std::move(a), perm);
}
FERRY_FUNC CpuTensor EigenCpu::flip(CpuTensor a, std::span<const std::size_t> axes) const {
  return detail::cpu::flip(acc_, std::move(a), axes);
}
FERRY_FUNC CpuTensor EigenCpu::expand(CpuTensor a, const Shape& s) const {
  return detail::cpu::expand(acc_, std::move(a), s);
}
FERRY_FUNC CpuTensor EigenCpu::slice(CpuTensor a, std::span<const Range> ranges) const {
  return detail::cpu::slice(acc_, std::move(a), ranges);
}
FERRY_FUNC CpuTensor EigenCpu::slice_assign(CpuTensor a, std::span<const Range> ranges,
                                            CpuTensor value) const {
  return detail::cpu::slice_assign(acc_, std::move(a), ranges, std::move(value));
}
FERRY_FUNC CpuTensor EigenCpu::cat(std::vector<CpuTensor> ts, std::size_t dim) const {
  return detail::cpu::cat(acc_, std::move(ts), dim);
}
FERRY_FUNC CpuTensor EigenCpu::gather(CpuTensor a, std::size_t dim, CpuTensor index) const {
  return detail::cpu::gather(acc_, std::move(a), dim, std::move(index));
}
FERRY_FUNC CpuTensor EigenCpu::index_select(CpuTensor a, std::size_t dim, CpuTensor index) const {
  return detail::cpu::index_select(acc_, std::move(a), dim, std::move(index));
}
FERRY_FUNC CpuTensor EigenCpu::repeat(CpuTensor a, std::span<const std::int64_t> times) const {
  return detail::cpu::repeat(acc_, std::move(a), times);
}

}  // namespace ferry

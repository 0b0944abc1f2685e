// Ferry: EigenCpu's casts between dtypes — the definitions of eigen_cpu.hpp's declarations for this
// family. Compiled once by src/eigen_cpu/cast.cpp, or included inline by eigen_cpu.hpp with
// FERRY_HEADER_ONLY. Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::to_float(CpuTensor a, DType to) const {
  if (kind_of(to) != Kind::Float)
    detail::raise<DTypeError>("cpu.dtype", "to_float: {} is not a float dtype", to);
  return detail::cpu::cast(acc_, std::move(a), to, "to_float");
}
FERRY_FUNC CpuTensor EigenCpu::to_int(CpuTensor a, DType to) const {
  if (kind_of(to) != Kind::Int)
    detail::raise<DTypeError>("cpu.dtype", "to_int: {} is not an int dtype", to);
  return detail::cpu::cast(acc_, std::move(a), to, "to_int");
}
FERRY_FUNC CpuTensor EigenCpu::to_bool(CpuTensor a) const {
  return detail::cpu::cast(acc_, std::move(a), DType::boolean, "to_bool");
}

}  // namespace ferry

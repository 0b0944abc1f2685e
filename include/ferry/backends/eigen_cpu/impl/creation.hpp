// Ferry: EigenCpu's creation kernels: full, arange, random — the definitions of eigen_cpu.hpp's
// declarations for this family. Compiled once by src/eigen_cpu/creation.cpp, or included inline by
// eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/creation.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::float_full(const Shape& s, DType dt, Scalar v,
                                          const CpuDevice& dev) const {
  return detail::cpu::full(acc_, s, dt, v, dev.index, Kind::Float, "float_full");
}
FERRY_FUNC CpuTensor EigenCpu::int_full(const Shape& s, DType dt, Scalar v,
                                        const CpuDevice& dev) const {
  return detail::cpu::full(acc_, s, dt, v, dev.index, Kind::Int, "int_full");
}
FERRY_FUNC CpuTensor EigenCpu::bool_full(const Shape& s, DType dt, Scalar v,
                                         const CpuDevice& dev) const {
  return detail::cpu::full(acc_, s, dt, v, dev.index, Kind::Bool, "bool_full");
}
FERRY_FUNC CpuTensor EigenCpu::bool_full(const Shape& s, Scalar v, const CpuDevice& dev) const {
  return bool_full(s, DType::boolean, v, dev);
}
FERRY_FUNC CpuTensor EigenCpu::float_arange(Scalar start, Scalar step, std::int64_t n, DType dt,
                                            const CpuDevice& dev) const {
  return detail::cpu::arange(acc_, start, step, n, dt, dev.index, Kind::Float, "float_arange");
}
FERRY_FUNC CpuTensor EigenCpu::int_arange(Scalar start, Scalar step, std::int64_t n, DType dt,
                                          const CpuDevice& dev) const {
  return detail::cpu::arange(acc_, start, step, n, dt, dev.index, Kind::Int, "int_arange");
}
FERRY_FUNC CpuTensor EigenCpu::float_random(const Shape& s, DType dt, Distribution dist,
                                            std::uint64_t seed, const CpuDevice& dev) const {
  return detail::cpu::random(acc_, s, dt, dist, seed, dev.index);
}
FERRY_FUNC CpuTensor EigenCpu::int_random(const Shape& s, DType dt, Scalar low, Scalar high,
                                          std::uint64_t seed, const CpuDevice& dev) const {
  return detail::cpu::random_int(acc_, s, dt, low, high, seed, dev.index);
}

}  // namespace ferry

// Ferry: EigenCpu's casts between dtypes — the definitions of eigen_cpu.hpp's declarations for this
// family. Compiled once by src/eigen_cpu/cast.cpp, or included inline by eigen_cpu.hpp with
// FERRY_HEADER_ONLY. Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"

namespace ferry {

namespace detail::cpu {
FERRY_FUNC CpuTensor cast(const AccountsPtr& acc, CpuTensor a, DType to, const char* op) {
  check(acc, a, op);
  if (a.dtype == to) return a;
  CpuTensor out = alloc(acc, a.device, a.shape, to);
  visit_dtype(a.dtype, [&]<class S>(S) {
    visit_dtype(to, [&]<class D>(D) {
      const S* p = a.data<const S>();
      D* o = out.data<D>();
      parallel_for(0, a.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
        if constexpr (std::is_same_v<S, float> && is_half_v<D>) {
          narrow(p + lo, o + lo, hi - lo);  // F16C where the CPU has it: the same bits
        } else if constexpr (is_half_v<S> && std::is_same_v<D, float>) {
          widen(p + lo, o + lo, hi - lo);
        } else if constexpr (std::is_floating_point_v<D> &&
                             (std::is_floating_point_v<S> || is_int_v<S>)) {
          ArrMap<D>(o + lo, hi - lo) = ConstArrMap<S>(p + lo, hi - lo).template cast<D>();
        } else {
          for (std::int64_t i = lo; i < hi; ++i) o[i] = convert<D>(p[i]);
        }
      });
    });
  });
  return out;
}

}  // namespace detail::cpu

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

// Ferry: EigenCpu's fused attention — the definition of eigen_cpu.hpp's declaration for this
// family. Compiled once by src/eigen_cpu/attention.cpp, or included inline by eigen_cpu.hpp with
// FERRY_HEADER_ONLY. Nothing but those two includes this file.
// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <utility>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/attention.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::attention(CpuTensor q, CpuTensor k, CpuTensor v,
                                         std::optional<CpuTensor> mask, bool causal,
                                         double scale) const {
  const DType d = q.dtype;
  if (d != DType::f16 && d != DType::bf16)
    return detail::cpu::attention(acc_, q, k, v, mask, causal, scale);
  // Halves in f32 (f32 accumulation), rounded once.
  const auto up = [&](CpuTensor t) {
    return detail::cpu::cast(acc_, std::move(t), DType::f32, "attention");
  };
  std::optional<CpuTensor> m;
  if (mask) m = up(std::move(*mask));
  return detail::cpu::cast(acc_,
                           detail::cpu::attention(acc_, up(std::move(q)), up(std::move(k)),
                                                  up(std::move(v)), m, causal, scale),
                           d, "attention");
}

}  // namespace ferry

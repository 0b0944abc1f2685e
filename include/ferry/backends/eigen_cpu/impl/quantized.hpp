// Ferry: EigenCpu's quantized tensors: parts in and out, transfers, (de)quantize, layout, matmul —
// the definitions of eigen_cpu.hpp's declarations for this family. Compiled once by
// src/eigen_cpu/quantized.cpp, or included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing
// but those two includes this file. SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/quantized.hpp"
#include "ferry/quant/kernels.hpp"
#include "ferry/quant/layout.hpp"

namespace ferry {

FERRY_FUNC CpuQTensor EigenCpu::q_from_parts(quant::QuantizedParts p, const CpuDevice& dev) const {
  acc_->check(dev.index, "q_from_parts");
  p.validate();
  return detail::cpu::make_q(acc_, dev.index, std::move(p));
}
FERRY_FUNC CpuQTensor EigenCpu::q_to_device(CpuQTensor q, const CpuDevice& dev) const {
  acc_->check(dev.index, "q_to_device");
  if (dev.index == q.device()) return q;
  return detail::cpu::copy_q(acc_, dev.index, q);
}
FERRY_FUNC CpuQTensor EigenCpu::quantize(CpuTensor x, const quant::Scheme& s,
                                         std::span<const float> scales,
                                         std::span<const std::int32_t> offsets) const {
  std::vector<float> scratch;
  const detail::cpu::CacheSource src(acc_, x.device);
  return detail::cpu::make_q(
      acc_, x.device,
      quant::quantize(s, x.shape, detail::cpu::f32_view(x, scratch), scales, offsets, &src));
}
FERRY_FUNC CpuQTensor EigenCpu::quantize_dynamic(CpuTensor x, const quant::Scheme& s) const {
  std::vector<float> scratch;
  const detail::cpu::CacheSource src(acc_, x.device);
  return detail::cpu::make_q(
      acc_, x.device, quant::quantize_dynamic(s, x.shape, detail::cpu::f32_view(x, scratch), &src));
}
FERRY_FUNC CpuTensor EigenCpu::dequantize(CpuQTensor q, DType to) const {
  const auto& p = q.parts();
  if (to == DType::f16 || to == DType::bf16) {
    // f32 values a cache-sized chunk at a time, each rounded once: no whole f32 copy.
    CpuTensor h = detail::cpu::alloc(acc_, q.device(), p.shape, to);
    visit_dtype(to, [&]<class H>(H) {
      if constexpr (is_half_v<H>) {
        constexpr std::int64_t kChunk = 8192;
        H* o = h.data<H>();
        const std::int64_t n = p.shape.numel();
        detail::parallel_for(
            0, (n + kChunk - 1) / kChunk, 1, [&](std::int64_t c0, std::int64_t c1) {
              std::vector<float> tmp(static_cast<std::size_t>(kChunk));
              for (std::int64_t c = c0; c < c1; ++c) {
                const std::int64_t lo = c * kChunk, len = std::min(kChunk, n - lo);
                quant::dequantize_range(
                    p, lo, lo + len, std::span<float>(tmp.data(), static_cast<std::size_t>(len)));
                detail::cpu::narrow(tmp.data(), o + lo, len);
              }
            });
      }
    });
    return h;
  }
  CpuTensor f = detail::cpu::alloc(acc_, q.device(), p.shape, DType::f32);
  quant::dequantize(p,
                    std::span<float>(f.data<float>(), static_cast<std::size_t>(p.shape.numel())));
  return to == DType::f32 ? f : to_float(std::move(f), to);
}
FERRY_FUNC CpuQTensor EigenCpu::q_reshape(CpuQTensor q, const Shape& s) const {
  return detail::cpu::make_q(acc_, q.device(), quant::q_reshape(q.parts(), s));
}
FERRY_FUNC CpuQTensor EigenCpu::q_permute(CpuQTensor q, std::span<const std::int64_t> perm) const {
  return detail::cpu::make_q(acc_, q.device(), quant::q_permute(q.parts(), perm));
}
FERRY_FUNC CpuQTensor EigenCpu::q_flip(CpuQTensor q, std::span<const std::int64_t> axes) const {
  return detail::cpu::make_q(acc_, q.device(), quant::q_flip(q.parts(), axes));
}
FERRY_FUNC CpuQTensor EigenCpu::q_slice(
    CpuQTensor q, std::span<const std::pair<std::int64_t, std::int64_t>> ranges) const {
  return detail::cpu::make_q(acc_, q.device(), quant::q_slice(q.parts(), ranges));
}
FERRY_FUNC CpuTensor EigenCpu::q_matmul(CpuTensor x, CpuQTensor w) const {
  return q_product(std::move(x), std::move(w), false);
}
FERRY_FUNC CpuTensor EigenCpu::q_linear(CpuTensor x, CpuQTensor w) const {
  return q_product(std::move(x), std::move(w), true);
}
FERRY_FUNC CpuTensor EigenCpu::q_product(CpuTensor x, CpuQTensor w, bool transposed) const {
  const char* op = transposed ? "q_linear" : "q_matmul";
  if (x.dtype == DType::f16 || x.dtype == DType::bf16) {  // in f32, rounded once
    const DType h = x.dtype;
    return detail::cpu::cast(
        acc_,
        detail::cpu::q_matmul(acc_, detail::cpu::cast(acc_, x, DType::f32, op), w, transposed), h,
        op);
  }
  return detail::cpu::q_matmul(acc_, x, w, transposed);
}

}  // namespace ferry

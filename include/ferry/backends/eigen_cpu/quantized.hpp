// Ferry: EigenCpu's quantized tensors — packed data, scales and offsets in a device's memory —
// and their kernels: transfer, (de)quantize, layout, and the fused quantized matmul.
// SPDX-License-Identifier: MIT
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/qtensor.hpp"
#include "ferry/error.hpp"
#include "ferry/quant/gemv.hpp"
#include "ferry/quant/kernels.hpp"
#include "ferry/quant/layout.hpp"
#include "ferry/quant/parts.hpp"

namespace ferry {

namespace detail::cpu {

/// std::bad_alloc (OutOfMemory to the caller) when `n` more bytes would take device `c` past
/// its memory limit: quantized parts obey the limit as plain buffers do, and are refused before
/// the allocator is asked (a per-axis scheme over an empty tensor with a huge other dim asks
/// for 16 GiB of scales: found by fuzz_ops).
inline void fits_limit(const DeviceCounters& c, std::size_t n) {
  const std::int64_t free =
      c.limit.load(std::memory_order_relaxed) - c.bytes.load(std::memory_order_relaxed);
  if (n > 0 && (n > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()) ||
                static_cast<std::int64_t>(n) > free))
    throw std::bad_alloc();
}

/// Hands quantize kernels recycled vectors from one device's cache, within its memory limit.
class CacheSource final : public quant::VectorSource {
 public:
  CacheSource(const AccountsPtr& acc, int device) : dev_(&(*acc)[checked(acc, device)]) {}
  [[nodiscard]] std::vector<std::byte> take(std::size_t n) const override {
    fits_limit(*dev_, n);
    return dev_->cache.take_vector(n);
  }

 private:
  static int checked(const AccountsPtr& acc, int device) {
    acc->check(device, "quantize");
    return device;
  }
  DeviceCounters* dev_;
};

/// A copy of `bytes` in `device`'s memory (a recycled vector when the cache has one).
inline std::vector<std::byte> copy_bytes(const AccountsPtr& acc, int device,
                                         const std::vector<std::byte>& bytes) {
  fits_limit((*acc)[device], bytes.size());
  std::vector<std::byte> v = (*acc)[device].cache.take_sized_vector(bytes.size());
  acc->copy(v.data(), bytes.data(), bytes.size());
  return v;
}

/// The parts of `q`, byte for byte, in `device`'s memory: a transfer, never a dequantize.
inline CpuQTensor copy_q(const AccountsPtr& acc, int device, const CpuQTensor& q) {
  const auto& p = q.parts();
  return make_q(
      acc, device,
      quant::QuantizedParts{p.scheme, p.shape, copy_bytes(acc, device, p.data),
                            copy_bytes(acc, device, p.scales), copy_bytes(acc, device, p.offsets)});
}

/// The float values of a CpuTensor as f32 (a view when it already is f32; f16 and bf16 widen
/// exactly, f64 rounds to nearest), so every float dtype quantizes as its f32 values do.
inline std::span<const float> f32_view(const CpuTensor& x, std::vector<float>& scratch) {
  const auto n = static_cast<std::size_t>(x.numel());
  if (x.dtype == DType::f32) return {x.data<float>(), n};
  if (kind_of(x.dtype) != Kind::Float)
    raise<DTypeError>("dtype", "quantize: needs a float tensor, got {}", x.dtype);
  scratch.resize(n);
  visit_dtype(x.dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
      const T* p = x.data<const T>();
      parallel_for(0, static_cast<std::int64_t>(n), kGrain, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i)
          scratch[static_cast<std::size_t>(i)] = static_cast<float>(p[i]);
      });
    }
  });
  return scratch;
}

/// Quantized matmul: x [..., M, K] (f32/f64) times w, where w is [K, N] (q_matmul) or, with
/// `transposed`, [N, K] used transposed (q_linear: linear's weight layout, a row per output).
/// W is dequantized one tile of its rows at a time (about 256 KiB of floats) and multiplied
/// with Eigen's GEMM, so the whole float matrix never exists at once. q_linear with at most 8 f32
/// rows (a decode step) runs quant::linear_packed instead where w's layout allows it.
inline CpuTensor q_matmul(const AccountsPtr& acc, const CpuTensor& x, const CpuQTensor& w,
                          bool transposed = false) {
  const char* op = transposed ? "q_linear" : "q_matmul";
  const auto& p = w.parts();
  const std::size_t kdim = transposed ? 1 : 0;
  if (p.shape.rank() != 2 || x.shape.rank() < 2 || x.shape[x.shape.rank() - 1] != p.shape[kdim])
    raise<ShapeError>("shape", "{}: shapes {} and {} do not fit", op, x.shape, p.shape);
  if (x.dtype != DType::f32 && x.dtype != DType::f64)
    raise<DTypeError>("dtype", "{}: activations must be f32 or f64, got {}", op, x.dtype);
  const std::int64_t K = p.shape[kdim], N = p.shape[1 - kdim];
  std::vector<std::int64_t> od = x.shape.to_vector();
  od.back() = N;
  CpuTensor out = alloc(acc, x.device, Shape(std::move(od)), x.dtype);
  if (out.numel() == 0) return out;
  // The rows of x: from the output, since with K == 0 x has no elements to count them by (the
  // output is then all zeros, written by setZero below).
  const std::int64_t M = out.numel() / N;
  // A decode step's few rows read the packed weight directly (no dequantized tile at all);
  // above two passes over w, dequantized tiles and Eigen's GEMM win.
  if (transposed && x.dtype == DType::f32 && M <= 2 * quant::kPackedPassRows &&
      quant::linear_packed(p, {x.data<float>(), static_cast<std::size_t>(M * K)}, M,
                           {out.data<float>(), static_cast<std::size_t>(M * N)}))
    return out;
  const std::int64_t rows = p.shape[0], cols = p.shape[1];  // of w as stored
  const std::int64_t tile_rows =
      std::clamp<std::int64_t>((std::int64_t{1} << 16) / std::max<std::int64_t>(cols, 1), 1,
                               std::max<std::int64_t>(rows, 1));
  std::vector<float> tile(static_cast<std::size_t>(tile_rows * cols));
  auto run = [&]<class T>(T*) {
    using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using RowMatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<const RowMat> X(x.data<T>(), M, K);
    Eigen::Map<RowMat> Y(out.data<T>(), M, N);
    if (!transposed || K == 0) Y.setZero();
    for (std::int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
      const std::int64_t kr = std::min(tile_rows, rows - r0);
      quant::dequantize_range(p, r0 * cols, (r0 + kr) * cols,
                              std::span<float>(tile.data(), static_cast<std::size_t>(kr * cols)));
      Eigen::Map<const RowMatF> Wt(tile.data(), kr, cols);
      if constexpr (std::is_same_v<T, float>) {
        if (transposed)
          Y.middleCols(r0, kr).noalias() = X * Wt.transpose();
        else
          Y.noalias() += X.middleCols(r0, kr) * Wt;
      } else {
        if (transposed)
          Y.middleCols(r0, kr).noalias() = X * Wt.template cast<double>().transpose();
        else
          Y.noalias() += X.middleCols(r0, kr) * Wt.template cast<double>();
      }
    }
  };
  if (x.dtype == DType::f32)
    run(static_cast<float*>(nullptr));
  else
    run(static_cast<double*>(nullptr));
  return out;
}

}  // namespace detail::cpu
}  // namespace ferry

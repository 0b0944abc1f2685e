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

/// Quantized matmul: x [..., M, K] (f32/f64) times w [K, N] quantized. W is dequantized one
/// tile of rows at a time (about 256 KiB of floats) and accumulated with Eigen's GEMM, so the
/// whole float matrix never exists at once.
inline CpuTensor q_matmul(const AccountsPtr& acc, const CpuTensor& x, const CpuQTensor& w) {
  const auto& p = w.parts();
  if (p.shape.rank() != 2 || x.shape.rank() < 2 || x.shape[x.shape.rank() - 1] != p.shape[0])
    raise<ShapeError>("shape", "q_matmul: shapes {} and {} do not fit", x.shape, p.shape);
  const std::int64_t K = p.shape[0], N = p.shape[1];
  std::vector<std::int64_t> od = x.shape.to_vector();
  od.back() = N;
  CpuTensor out = alloc(acc, x.device, Shape(std::move(od)), x.dtype);
  if (out.numel() == 0) return out;
  // The rows of x: from the output, since with K == 0 x has no elements to count them by (the
  // output is then all zeros, written by setZero below).
  const std::int64_t M = out.numel() / N;
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowMatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const std::int64_t tile_rows = std::clamp<std::int64_t>(
      (std::int64_t{1} << 16) / std::max<std::int64_t>(N, 1), 1, std::max<std::int64_t>(K, 1));
  std::vector<float> tile(static_cast<std::size_t>(tile_rows * N));
  if (x.dtype == DType::f32) {
    Eigen::Map<const RowMat> X(x.data<float>(), M, K);
    Eigen::Map<RowMat> Y(out.data<float>(), M, N);
    Y.setZero();
    for (std::int64_t k0 = 0; k0 < K; k0 += tile_rows) {
      const std::int64_t kr = std::min(tile_rows, K - k0);
      quant::dequantize_range(p, k0 * N, (k0 + kr) * N,
                              std::span<float>(tile.data(), static_cast<std::size_t>(kr * N)));
      Eigen::Map<const RowMat> Wt(tile.data(), kr, N);
      Y.noalias() += X.middleCols(k0, kr) * Wt;
    }
  } else if (x.dtype == DType::f64) {
    Eigen::Map<const RowMatD> X(x.data<double>(), M, K);
    Eigen::Map<RowMatD> Y(out.data<double>(), M, N);
    Y.setZero();
    for (std::int64_t k0 = 0; k0 < K; k0 += tile_rows) {
      const std::int64_t kr = std::min(tile_rows, K - k0);
      quant::dequantize_range(p, k0 * N, (k0 + kr) * N,
                              std::span<float>(tile.data(), static_cast<std::size_t>(kr * N)));
      Eigen::Map<const RowMat> Wt(tile.data(), kr, N);
      Y.noalias() += X.middleCols(k0, kr) * Wt.cast<double>();
    }
  } else {
    raise<DTypeError>("dtype", "q_matmul: activations must be f32 or f64, got {}", x.dtype);
  }
  return out;
}

}  // namespace detail::cpu
}  // namespace ferry

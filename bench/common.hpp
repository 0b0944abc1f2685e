// Ferry benchmarks: shared helpers (router factories, schemes, cached host data).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <ctime>
#include <vector>

#include "ferry/ferry.hpp"

namespace ferry::bench {

using R = Router<EigenCpu>;
using T = Tensor<EigenCpu>;
using quant::ScaleType;
using quant::Scheme;
using quant::ValueType;

inline RouterOptions inline_mode() {
  RouterOptions o;
  o.execution = Execution::Inline;
  return o;
}
inline RouterOptions async_mode(int threads_per_device = 0) {
  RouterOptions o;
  o.execution = Execution::Async;
  o.threads_per_device = threads_per_device;
  return o;
}

/// int8, one scale for the whole tensor (f32), one value per byte.
inline Scheme i8_per_tensor() { return Scheme::of(ValueType::i8).per_tensor(); }
/// int8 / int4 per block of 32 along the last dim, f16 scales (int4 packed two per byte).
inline Scheme i8_block32() { return Scheme::of(ValueType::i8).per_block({32}).scales(ScaleType::f16); }
inline Scheme i4_block32() {
  return Scheme::of(ValueType::i4).per_block({32}).packed_u8().scales(ScaleType::f16);
}

/// Deterministic f32 values in [-1, 1), generated once per size and kept for the whole run so
/// that repetitions (and the iteration-count estimate) do not pay for them again.
inline const std::vector<float>& host_floats(std::size_t n) {
  static std::mutex mu;
  static std::map<std::size_t, std::unique_ptr<std::vector<float>>> cache;
  std::lock_guard lk(mu);
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<std::vector<float>>(n);
    std::uint32_t s = 0x9E3779B9u ^ static_cast<std::uint32_t>(n);
    for (auto& v : *slot) {  // xorshift32: fast, and good enough for data that is only moved
      s ^= s << 13;
      s ^= s >> 17;
      s ^= s << 5;
      v = static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
  }
  return *slot;
}

inline TensorData host_data(Shape shape) {
  const auto n = static_cast<std::size_t>(shape.numel());
  return TensorData::from(std::span<const float>(host_floats(n)), std::move(shape));
}

/// CPU seconds used so far by the whole process (every thread: caller, device workers, TBB).
/// Wall time on a shared machine includes time spent waiting for a core; this does not.
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Measures the process CPU time of a benchmark's timed loop; `finish` stores it per item as
/// the counter "proc_cpu_per_item" (the summary prints it beside the wall-time ratio).
class ProcessCpu {
 public:
  ProcessCpu() : start_(process_cpu_seconds()) {}
  void finish(benchmark::State& st, double items_per_iteration) const {
    const double items = static_cast<double>(st.iterations()) * items_per_iteration;
    st.counters["proc_cpu_per_item"] = (process_cpu_seconds() - start_) / std::max(1.0, items);
  }

 private:
  double start_;
};

/// A warm destination/source pair for memcpy baselines: both touched once before timing so no
/// page fault lands in the timed region.
struct MemcpyBuffers {
  std::vector<std::byte> src, dst;
  explicit MemcpyBuffers(std::size_t n) : src(n, std::byte{1}), dst(n, std::byte{0}) {}
};

/// Bytes a quantized tensor occupies (packed data + scales + offsets).
inline std::size_t q_bytes(const Scheme& s, const Shape& shape) {
  return quant::data_bytes(s, shape.numel()) +
         static_cast<std::size_t>(quant::num_params(s, shape)) *
             (quant::scale_bytes(s.scale_type) + (s.mode == quant::Mode::affine ? 1 : 0));
}

}  // namespace ferry::bench

// Ferry benchmarks of the 16-bit float dtypes: cast f32 -> f16 against memcpy, add f16 against
// add f32, matmul f16/bf16 against f32, and dequantize int4 straight to f16 against memcpy.
// SPDX-License-Identifier: Apache-2.0
#include "common.hpp"

namespace ferry::bench {
namespace {

constexpr std::int64_t kCastN = std::int64_t{64} << 20;  // 64 Mi elements, 256 MiB of f32
constexpr std::int64_t kAddN = std::int64_t{16} << 20;
constexpr std::int64_t kMat = 512;

/// A tensor of host_floats converted to `dt` on the device (the conversion is not timed).
T on_device(R& router, Shape shape, DType dt) {
  T x = router.from_data(host_data(std::move(shape)), CpuDevice{0});
  return dt == DType::f32 ? x : cast(x, dt);
}

// A: cast of 64 Mi f32 to f16 through an async router (the device's kernels use every core, as
// the quantize rows do), synced; throughput counted as f32 bytes read. B: memcpy 256 MiB.
void cast_f16(benchmark::State& st) {
  R router(EigenCpu(1), async_mode());
  const T x = on_device(router, Shape{kCastN}, DType::f32);
  {  // one cast first, so the result's block is in the device's cache as in a steady state
    const T warm = cast(x, DType::f16);
    router.sync();
  }
  for (auto _ : st) {
    T h = cast(x, DType::f16);
    router.sync();
    benchmark::DoNotOptimize(h);
  }
  st.counters["per_iter_bytes"] = static_cast<double>(kCastN) * 4.0;
}
BENCHMARK(cast_f16)->Name("cast/f32_to_f16/64Mi")->UseRealTime()->Unit(benchmark::kMillisecond);

// add of two 16 Mi tensors of dtype range(0) (0: f32, 1: f16), one kernel thread, synced;
// elements per second. The inputs are held, so the result is a new buffer (warm, from the cache).
void add_dtype(benchmark::State& st) {
  const DType dt = st.range(0) == 0 ? DType::f32 : DType::f16;
  R router(EigenCpu(1), async_mode(1));
  const T a = on_device(router, Shape{kAddN}, dt), b = on_device(router, Shape{kAddN}, dt);
  {
    const T warm = a + b;
    router.sync();
  }
  for (auto _ : st) {
    T c = a + b;
    router.sync();
    benchmark::DoNotOptimize(c);
  }
  st.counters["per_iter_items"] = static_cast<double>(kAddN);
}
BENCHMARK(add_dtype)
    ->Name("add_16Mi")
    ->ArgName("f16")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// matmul 512 x 512 of dtype range(0) (0: f32, 1: f16, 2: bf16), one kernel thread, synced.
void matmul_dtype(benchmark::State& st) {
  const DType dt = st.range(0) == 0 ? DType::f32 : st.range(0) == 1 ? DType::f16 : DType::bf16;
  R router(EigenCpu(1), async_mode(1));
  const T a = on_device(router, Shape{kMat, kMat}, dt),
          b = on_device(router, Shape{kMat, kMat}, dt);
  router.sync();
  for (auto _ : st) {
    T c = matmul(a, b);
    router.sync();
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(matmul_dtype)
    ->Name("matmul512_dtype")
    ->ArgName("dtype")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A: dequantize of int4, blocks of 32, f16 scales, 64 Mi elements, straight to f16 (every core);
// throughput counted as f16 bytes written. B: memcpy (of 256 MiB, the bytes_rate it reaches).
void dequantize_f16(benchmark::State& st) {
  R router(EigenCpu(1), async_mode());
  const T q =
      quantize_dynamic(router.from_data(host_data(Shape{8192, 8192}), CpuDevice{0}), i4_block32());
  {
    const T warm = dequantize(q, DType::f16);
    router.sync();
  }
  for (auto _ : st) {
    T y = dequantize(q, DType::f16);
    router.sync();
    benchmark::DoNotOptimize(y);
  }
  st.counters["per_iter_bytes"] = 8192.0 * 8192.0 * 2.0;
}
BENCHMARK(dequantize_f16)
    ->Name("dequantize/i4_block32_to_f16/64Mi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry::bench

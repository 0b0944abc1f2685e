// Ferry benchmarks: peer rows against libtorch (Debian's libtorch-dev, ATen's C++ API), built
// only when CMake finds Torch. Each row's Ferry side is a benchmark of its own or one of the
// existing rows, and both run interleaved in this process like every other row (issue #22).
// Threads: the tiny rows run both sides on one thread (libtorch: at::set_num_threads(1); Ferry:
// one device, whose kernels see one core's arena for 4 elements anyway). The bulk rows give both
// all cores: libtorch its intra-op pool (at::set_num_threads(cores)), Ferry its device's oneTBB
// arena. The summary's CPU lines say what each side used.
// SPDX-License-Identifier: Apache-2.0
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <thread>

#include "common.hpp"

namespace ferry::bench {
namespace {

const Shape kBig{8192, 8192};           // 64 Mi elements, as the (de)quantize rows
const Shape kWeight{4096, 4096};        // the quantized move rows' weight
constexpr double kScale = 1.0 / 127.0;  // given quantization parameters: u8, zero point 128
constexpr std::int64_t kZero = 128;

void torch_threads(int n) {
  if (at::get_num_threads() != n) at::set_num_threads(n);
}
int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

at::Tensor torch_from(const Shape& shape) {
  const auto& v = host_floats(static_cast<std::size_t>(shape.numel()));
  std::vector<std::int64_t> dims(shape.begin(), shape.end());
  return at::from_blob(const_cast<float*>(v.data()), dims, at::kFloat).clone();
}

// B of "tiny add, inline": at::add of two 4-element f32 tensors, one thread.
void torch_tiny_add(benchmark::State& st) {
  torch_threads(1);
  const at::Tensor a = at::tensor({1.0f, 2.0f, 3.0f, 4.0f});
  const at::Tensor b = at::tensor({5.0f, 2.0f, 3.0f, 4.0f});
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    at::Tensor c = at::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  cpu_time.finish(st, 1.0);
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(torch_tiny_add)->Name("peer/torch/tiny_add")->UseRealTime();

// B of "tiny add, async stream": 1,000 at::add calls per iteration (libtorch's CPU ops run in
// the caller, so there is nothing to sync), time per add.
void torch_tiny_add_stream(benchmark::State& st) {
  torch_threads(1);
  const auto n = st.range(0);
  const at::Tensor a = at::tensor({1.0f, 2.0f, 3.0f, 4.0f});
  const at::Tensor b = at::tensor({5.0f, 2.0f, 3.0f, 4.0f});
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    for (std::int64_t i = 0; i < n; ++i) {
      at::Tensor c = at::add(a, b);
      benchmark::DoNotOptimize(c.data_ptr());
    }
  }
  cpu_time.finish(st, static_cast<double>(n));
  st.SetItemsProcessed(st.iterations() * n);
  st.counters["per_iter_items"] = static_cast<double>(n);
}
BENCHMARK(torch_tiny_add_stream)->Name("peer/torch/tiny_add_stream")->Arg(1000)->UseRealTime();

Scheme u8_per_tensor() { return Scheme::of(ValueType::u8).affine().per_tensor(); }

// A: Ferry's quantize with given scale and zero point (u8 affine per tensor), 64 Mi f32,
// warm; throughput as f32 bytes read.
void ferry_quantize_given(benchmark::State& st) {
  R router(EigenCpu(1), async_mode());
  const T x = router.from_data(host_data(kBig), CpuDevice{0});
  const auto run = [&] {
    T q = quantize(x, u8_per_tensor(), {static_cast<float>(kScale)},
                   {static_cast<std::int32_t>(kZero)});
    router.sync();
    return q;
  };
  { const T warm = run(); }  // its output block is then cached, as in a steady state
  const ProcessCpu cpu_time;
  for (auto _ : st) benchmark::DoNotOptimize(run());
  cpu_time.finish(st, 1.0);
  st.counters["per_iter_bytes"] = static_cast<double>(kBig.numel()) * 4.0;
}
BENCHMARK(ferry_quantize_given)
    ->Name("peer/ferry/quantize_u8_given/64Mi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// B: at::quantize_per_tensor(x, scale, zero_point, kQUInt8), every core.
void torch_quantize(benchmark::State& st) {
  torch_threads(cores());
  const at::Tensor x = torch_from(kBig);
  { const at::Tensor warm = at::quantize_per_tensor(x, kScale, kZero, at::kQUInt8); }
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    at::Tensor q = at::quantize_per_tensor(x, kScale, kZero, at::kQUInt8);
    benchmark::DoNotOptimize(q.data_ptr());
  }
  cpu_time.finish(st, 1.0);
  st.counters["per_iter_bytes"] = static_cast<double>(kBig.numel()) * 4.0;
}
BENCHMARK(torch_quantize)
    ->Name("peer/torch/quantize_u8_given/64Mi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A: Ferry's dequantize of that u8 tensor to f32; throughput as f32 bytes written.
void ferry_dequantize_u8(benchmark::State& st) {
  R router(EigenCpu(1), async_mode());
  const T q = quantize(router.from_data(host_data(kBig), CpuDevice{0}), u8_per_tensor(),
                       {static_cast<float>(kScale)}, {static_cast<std::int32_t>(kZero)});
  const auto run = [&] {
    T y = dequantize(q);
    router.sync();
    return y;
  };
  { const T warm = run(); }
  const ProcessCpu cpu_time;
  for (auto _ : st) benchmark::DoNotOptimize(run());
  cpu_time.finish(st, 1.0);
  st.counters["per_iter_bytes"] = static_cast<double>(kBig.numel()) * 4.0;
}
BENCHMARK(ferry_dequantize_u8)
    ->Name("peer/ferry/dequantize_u8/64Mi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// B: q.dequantize() in libtorch, every core.
void torch_dequantize(benchmark::State& st) {
  torch_threads(cores());
  const at::Tensor q = at::quantize_per_tensor(torch_from(kBig), kScale, kZero, at::kQUInt8);
  { const at::Tensor warm = q.dequantize(); }
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    at::Tensor y = q.dequantize();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  cpu_time.finish(st, 1.0);
  st.counters["per_iter_bytes"] = static_cast<double>(kBig.numel()) * 4.0;
}
BENCHMARK(torch_dequantize)
    ->Name("peer/torch/dequantize_u8/64Mi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A: q.to(cpu:1) of a u8 per-tensor 4096^2 weight (16 MiB), synced; bytes moved per second.
void ferry_q_move_u8(benchmark::State& st) {
  R router(EigenCpu(2), async_mode());
  const T q = quantize(router.from_data(host_data(kWeight), CpuDevice{0}), u8_per_tensor(),
                       {static_cast<float>(kScale)}, {static_cast<std::int32_t>(kZero)});
  router.sync();
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    T moved = q.to(CpuDevice{1});
    router.sync();
    benchmark::DoNotOptimize(moved);
  }
  cpu_time.finish(st, 1.0);
  st.counters["per_iter_bytes"] = static_cast<double>(q_bytes(u8_per_tensor(), kWeight));
}
BENCHMARK(ferry_q_move_u8)
    ->Name("peer/ferry/q_move_u8/4096^2")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// B: clone() of the same quantized tensor in libtorch (a CPU has one device: the copy is the
// move), every core.
void torch_q_clone(benchmark::State& st) {
  torch_threads(cores());
  const at::Tensor q = at::quantize_per_tensor(torch_from(kWeight), kScale, kZero, at::kQUInt8);
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    at::Tensor c = q.clone();
    benchmark::DoNotOptimize(c.data_ptr());
  }
  cpu_time.finish(st, 1.0);
  st.counters["per_iter_bytes"] = static_cast<double>(q_bytes(u8_per_tensor(), kWeight));
}
BENCHMARK(torch_q_clone)
    ->Name("peer/torch/q_clone_u8/4096^2")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry::bench

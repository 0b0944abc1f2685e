// Ferry benchmarks: the router's per-op overhead on tiny ops, inline and async, and the
// registry under many live tensors.
// SPDX-License-Identifier: Apache-2.0
#include "common.hpp"

namespace ferry::bench {
namespace {

TensorData tiny(float base) { return TensorData::from(std::vector<float>{base, 2, 3, 4}, {4}); }

// B of the dispatch rows: EigenCpu's add kernel called directly on two shared handles, the same
// ownership the router passes (both operands still held, so the kernel allocates its output).
void dispatch_direct(benchmark::State& st) {
  EigenCpu cpu(1);
  const CpuTensor a = cpu.float_from_data(tiny(1), CpuDevice{0});
  const CpuTensor b = cpu.float_from_data(tiny(5), CpuDevice{0});
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    CpuTensor c = cpu.add(a, b);
    benchmark::DoNotOptimize(c.buf.get());
  }
  cpu_time.finish(st, 1.0);
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(dispatch_direct)->Name("dispatch/direct_kernel")->UseRealTime();

// A, inline mode: add(a, b) through the router, run in the calling thread; the result's Drop
// (when `c` goes away) is part of each iteration, as it is of every temporary in user code.
void dispatch_inline(benchmark::State& st) {
  R router(EigenCpu(1), inline_mode());
  const T a = router.from_data(tiny(1), CpuDevice{0});
  const T b = router.from_data(tiny(5), CpuDevice{0});
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    T c = add(a, b);
    benchmark::DoNotOptimize(c);
  }
  router.sync();
  cpu_time.finish(st, 1.0);
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(dispatch_inline)->Name("dispatch/router_inline")->UseRealTime();

// A, async mode: a stream of N adds submitted from this thread and run by the device worker,
// then one sync; the time reported is per add (total / N).
void dispatch_async_stream(benchmark::State& st) {
  const auto n = st.range(0);
  R router(EigenCpu(1), async_mode());
  const T a = router.from_data(tiny(1), CpuDevice{0});
  const T b = router.from_data(tiny(5), CpuDevice{0});
  router.sync();
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    for (std::int64_t i = 0; i < n; ++i) {
      T c = add(a, b);
      benchmark::DoNotOptimize(c);
    }
    router.sync();
  }
  cpu_time.finish(st, static_cast<double>(n));
  st.SetItemsProcessed(st.iterations() * n);
  st.counters["per_iter_items"] = static_cast<double>(n);
}
BENCHMARK(dispatch_async_stream)->Name("dispatch/router_async_stream")->Arg(1000)->UseRealTime();

// Registry row: `live` tiny tensors stay registered on the device while a stream of tiny adds
// runs (inline mode, so the registry's lookups, inserts and erases are on the measured path).
void registry_live(benchmark::State& st) {
  const auto live = static_cast<std::size_t>(st.range(0));
  constexpr std::int64_t n = 1000;
  R router(EigenCpu(1), inline_mode());
  std::vector<T> keep;
  keep.reserve(live);
  for (std::size_t i = 0; i < live; ++i)
    keep.push_back(router.full({1}, Scalar(1.0f), DType::f32, CpuDevice{0}));
  const T a = router.from_data(tiny(1), CpuDevice{0});
  const T b = router.from_data(tiny(5), CpuDevice{0});
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    for (std::int64_t i = 0; i < n; ++i) {
      T c = add(a, b);
      benchmark::DoNotOptimize(c);
    }
  }
  router.sync();
  cpu_time.finish(st, static_cast<double>(n));
  if (router.stats(CpuDevice{0}).live_tensors < live) st.SkipWithError("live tensors went missing");
  st.SetItemsProcessed(st.iterations() * n);
  st.counters["per_iter_items"] = static_cast<double>(n);
}
BENCHMARK(registry_live)->Name("registry/live_tensors")->Arg(10)->Arg(100000)->UseRealTime();

}  // namespace
}  // namespace ferry::bench

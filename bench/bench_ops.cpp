// Ferry benchmarks for the operations of #18: topk against a full sort, cumsum against an add of
// the same size, and the fused softmax against its decomposition, each through an async router
// with one kernel thread, synced.
// SPDX-License-Identifier: Apache-2.0
#include "common.hpp"

namespace ferry::bench {
namespace {

// topk(x, 50) of 50,000 f32 logits (A) and sort(x) of the same (B): the partial sort of the
// argsort kernel against the whole one, values gathered in both.
constexpr std::int64_t kLogits = 50000;
void sort_row(benchmark::State& st, bool top) {
  R router(EigenCpu(1), async_mode(1));
  const T x = router.from_data(host_data(Shape{kLogits}), CpuDevice{0});
  router.sync();
  for (auto _ : st) {
    auto r = top ? topk(x, 50) : sort(x);
    router.sync();
    benchmark::DoNotOptimize(r.values);
  }
}
void topk_50(benchmark::State& st) { sort_row(st, true); }
void sort_all(benchmark::State& st) { sort_row(st, false); }
BENCHMARK(topk_50)->Name("topk_50k/k50")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(sort_all)->Name("topk_50k/full_sort")->UseRealTime()->Unit(benchmark::kMicrosecond);

// cumsum of 16 Mi f32 along its one dim: elements per second (B is add_16Mi/f16:0).
constexpr std::int64_t kScanN = std::int64_t{16} << 20;
void cumsum_16mi(benchmark::State& st) {
  R router(EigenCpu(1), async_mode(1));
  const T a = router.from_data(host_data(Shape{kScanN}), CpuDevice{0});
  {
    const T warm = cumsum(a, 0);
    router.sync();
  }
  for (auto _ : st) {
    T c = cumsum(a, 0);
    router.sync();
    benchmark::DoNotOptimize(c);
  }
  st.counters["per_iter_items"] = static_cast<double>(kScanN);
}
BENCHMARK(cumsum_16mi)->Name("cumsum_16Mi")->UseRealTime()->Unit(benchmark::kMillisecond);

// softmax over the rows of a [4096, 4096] f32 (64 MiB): the fused op (A) and the decomposition a
// backend without the kernel records (B: max, sub, exp, sum, div, five 64 MiB passes or more).
constexpr std::int64_t kSoftmaxRows = 4096;
void softmax_rows(benchmark::State& st, bool fused) {
  R router(EigenCpu(1), async_mode(1));
  const T x = router.from_data(host_data(Shape{kSoftmaxRows, kSoftmaxRows}), CpuDevice{0});
  auto run = [&] { return fused ? softmax(x, 1) : detail::decompose::softmax(x, 1); };
  {
    const T warm = run();  // the memory cache holds the sizes the loop asks for
    router.sync();
  }
  for (auto _ : st) {
    T y = run();
    router.sync();
    benchmark::DoNotOptimize(y);
  }
}
void softmax_fused(benchmark::State& st) { softmax_rows(st, true); }
void softmax_decomposed(benchmark::State& st) { softmax_rows(st, false); }
BENCHMARK(softmax_fused)
    ->Name("softmax_4096^2/fused")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(softmax_decomposed)
    ->Name("softmax_4096^2/decomposition")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry::bench

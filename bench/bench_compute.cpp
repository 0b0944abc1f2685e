// Ferry benchmarks: f32 GEMM through the router against Eigen's GEMM, two devices running
// independent matmul streams in parallel, and element-wise exp against a std::exp loop.
// SPDX-License-Identifier: Apache-2.0
#include <Eigen/Core>
#include <cmath>
#include <thread>

#include "common.hpp"

namespace ferry::bench {
namespace {

constexpr std::int64_t kMat = 512;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// B: Eigen's GEMM on the same row-major data, single-threaded (Eigen without OpenMP), into a
// preallocated result. The operands are two buffers, as the router's two tensors are: one
// buffer read as both would keep half the working set in cache and flatter B.
void matmul_eigen(benchmark::State& st) {
  const auto& h = host_floats(static_cast<std::size_t>(kMat * kMat));
  const std::vector<float> h2(h);
  Eigen::Map<const RowMat> a(h.data(), kMat, kMat), b(h2.data(), kMat, kMat);
  RowMat c(kMat, kMat);
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  cpu_time.finish(st, 1.0);
  st.counters["flop"] = 2.0 * kMat * kMat * kMat;
}
BENCHMARK(matmul_eigen)
    ->Name("matmul512/eigen_direct")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A: matmul(a, b) through an async router whose device has one kernel thread (the same thread
// count as Eigen above), synced each time: dispatch, the backend's row-blocked GEMM, allocation
// of the result and its drop.
void matmul_router(benchmark::State& st) {
  R router(EigenCpu(1), async_mode(1));
  const T a = router.from_data(host_data({kMat, kMat}), CpuDevice{0});
  const T b = router.from_data(host_data({kMat, kMat}), CpuDevice{0});
  {  // one product first: its output's block is then in the device's cache
    const T warm = matmul(a, b);
    router.sync();
  }
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    T c = matmul(a, b);
    router.sync();
    benchmark::DoNotOptimize(c);
  }
  router.sync();
  cpu_time.finish(st, 1.0);
  st.counters["flop"] = 2.0 * kMat * kMat * kMat;
}
BENCHMARK(matmul_router)->Name("matmul512/router")->UseRealTime()->Unit(benchmark::kMillisecond);

// Two independent streams of matmuls (each: `kStream` products of 256x256 f32), submitted
// round-robin, then synced. devices == 2: stream i runs on cpu:i; devices == 1: both streams
// share cpu:0. One kernel thread per device, so the gain can only come from the two devices
// running in parallel.
constexpr std::int64_t kSide = 256, kStream = 16;
void two_devices(benchmark::State& st) {
  const int devices = static_cast<int>(st.range(0));
  R router(EigenCpu(devices), async_mode(1));
  std::vector<T> a, b;
  for (int s = 0; s < 2; ++s) {
    const CpuDevice d{devices == 2 ? s : 0};
    a.push_back(router.from_data(host_data({kSide, kSide}), d));
    b.push_back(router.from_data(host_data({kSide, kSide}), d));
  }
  router.sync();
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    for (std::int64_t i = 0; i < kStream; ++i)
      for (int s = 0; s < 2; ++s) {
        T c = matmul(a[static_cast<std::size_t>(s)], b[static_cast<std::size_t>(s)]);
        benchmark::DoNotOptimize(c);
      }
    router.sync();
  }
  cpu_time.finish(st, 2.0 * kStream);
  st.SetItemsProcessed(st.iterations() * 2 * kStream);
  st.counters["per_iter_items"] = 2.0 * kStream;
}
BENCHMARK(two_devices)
    ->Name("streams/matmul256x2")
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// B of the row "two devices vs two plain threads": the same two streams as plain Eigen GEMMs on
// two std::threads, one stream each. Two devices cannot run faster than this; the row's ratio
// is what the router keeps of the parallel speedup this machine offers right now (which on a
// busy 2-core VM is well below 2x: the `threads:1` run gives it, for --ferry_verbose).
void two_threads_eigen(benchmark::State& st) {
  const int threads = static_cast<int>(st.range(0));
  const auto& h = host_floats(static_cast<std::size_t>(kSide * kSide));
  Eigen::Map<const RowMat> a(h.data(), kSide, kSide), b(h.data(), kSide, kSide);
  std::vector<RowMat> c(2, RowMat(kSide, kSide));
  auto stream = [&](int first, int count) {
    for (std::int64_t i = 0; i < kStream; ++i)
      for (int s = first; s < first + count; ++s) {
        c[static_cast<std::size_t>(s)].noalias() = a * b;
        benchmark::DoNotOptimize(c[static_cast<std::size_t>(s)].data());
      }
  };
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    if (threads == 2) {
      std::thread t([&] { stream(1, 1); });
      stream(0, 1);
      t.join();
    } else {
      stream(0, 2);
    }
  }
  cpu_time.finish(st, 2.0 * kStream);
  st.SetItemsProcessed(st.iterations() * 2 * kStream);
  st.counters["per_iter_items"] = 2.0 * kStream;
}
BENCHMARK(two_threads_eigen)
    ->Name("streams/eigen_control")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// exp over 16 Mi f32 (values in [-1, 1)): A is Ferry's exp through an async router with one
// kernel thread, synced, a result buffer from the device's cache each time (the input is held, so
// it is not reused); B is a plain loop of std::exp (glibc's expf) over a std::vector<float> into a
// preallocated one, on one thread. The ratio is what the vectorised kernel (math.hpp) buys.
constexpr std::int64_t kExpN = std::int64_t{16} << 20;
void exp_router(benchmark::State& st) {
  R router(EigenCpu(1), async_mode(1));
  const T a = router.from_data(host_data({kExpN}), CpuDevice{0});
  {  // one exp first: its 64 MiB block is then in the device's cache, as in a steady state (B's
     // output vector is allocated and paged in before its loop too); cold, every iteration
     // would also page-fault 64 MiB in.
    const T warm = exp(a);
    router.sync();
  }
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    T e = exp(a);
    router.sync();
    benchmark::DoNotOptimize(e);
  }
  router.sync();
  cpu_time.finish(st, 1.0);
}
BENCHMARK(exp_router)->Name("exp_f32_16Mi/router")->UseRealTime()->Unit(benchmark::kMillisecond);

void exp_std_loop(benchmark::State& st) {
  const auto& x = host_floats(static_cast<std::size_t>(kExpN));
  std::vector<float> y(x.size());
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::exp(x[i]);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  cpu_time.finish(st, 1.0);
}
BENCHMARK(exp_std_loop)
    ->Name("exp_f32_16Mi/std_exp_loop")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry::bench

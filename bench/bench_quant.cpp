// Ferry benchmarks: quantize / dequantize throughput, quantized transfers between devices
// (against memcpy and against the dequantize-move-requantize workaround), and bytes moved.
// SPDX-License-Identifier: Apache-2.0
#include "common.hpp"

namespace ferry::bench {
namespace {

// 64 Mi elements for the (de)quantize rows; a 4096 x 4096 weight matrix (16 Mi) for moves.
const Shape kBig{8192, 8192};
const Shape kWeight{4096, 4096};
constexpr double kBigF32Bytes = 8192.0 * 8192.0 * 4.0;

// B of the throughput rows: std::memcpy of `range(0)` bytes between two warm buffers.
void memcpy_bytes(benchmark::State& st) {
  static std::map<std::int64_t, std::unique_ptr<MemcpyBuffers>> bufs;
  auto& b = bufs[st.range(0)];
  if (!b) b = std::make_unique<MemcpyBuffers>(static_cast<std::size_t>(st.range(0)));
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    std::memcpy(b->dst.data(), b->src.data(), b->src.size());
    benchmark::ClobberMemory();
  }
  cpu_time.finish(st, 1.0);
  st.SetBytesProcessed(st.iterations() * st.range(0));
  st.counters["per_iter_bytes"] = static_cast<double>(st.range(0));
}
BENCHMARK(memcpy_bytes)
    ->Name("memcpy")
    ->ArgName("bytes")
    ->Arg(std::int64_t{256} << 20)  // the f32 side of the 64 Mi (de)quantize rows
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A: quantize_dynamic to int8 per tensor (f32 scale) of a 64 Mi f32 tensor, warm; throughput
// counted as f32 bytes read. Default router options: the device's kernels use every core.
// A call takes ~60 ms here, so a 0.1 s repetition runs one or two: without the warm-up call the
// row timed a fresh router's first call (its output's pages never touched) and printed that
// as throughput. The first call has a row of its own below.
void quantize_i8(benchmark::State& st) {
  R router(EigenCpu(1), async_mode());
  const T x = router.from_data(host_data(kBig), CpuDevice{0});
  {  // one call first: its output's block is then in the device's cache, as in a steady state
    const T warm = quantize_dynamic(x, i8_per_tensor());
    router.sync();
  }
  for (auto _ : st) {
    T q = quantize_dynamic(x, i8_per_tensor());
    router.sync();
    benchmark::DoNotOptimize(q);
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) *
                       static_cast<std::int64_t>(kBigF32Bytes));
  st.counters["per_iter_bytes"] = kBigF32Bytes;
}
BENCHMARK(quantize_i8)
    ->Name("quantize_dynamic/i8_per_tensor/64Mi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A: the first quantize_dynamic of a fresh router, as latency: what a user's first inference
// after loading weights pays. Each iteration makes a router and its 64 Mi f32 input (untimed),
// times one quantize + sync, and lets the router go (untimed). B: the warm call above. The
// router's memory cache is empty, so its 64 MiB output is fresh memory from the OS, and on a VM
// part of this row is the host's: memory freed goes back to the host within seconds, and
// writing 64 MiB of it again costs 115-150 ms on one thread (5 ms on memory the host still
// backs; a plain C loop, no Ferry, issue #33). --ferry_verbose prints each iteration.
void quantize_i8_first(benchmark::State& st) {
  for (auto _ : st) {
    st.PauseTiming();
    {
      R router(EigenCpu(1), async_mode());
      const T x = router.from_data(host_data(kBig), CpuDevice{0});
      router.sync();
      st.ResumeTiming();
      T q = quantize_dynamic(x, i8_per_tensor());
      router.sync();
      benchmark::DoNotOptimize(q);
      st.PauseTiming();
    }
    st.ResumeTiming();
  }
  st.counters["per_iter_items"] = 1.0;
}
BENCHMARK(quantize_i8_first)
    ->Name("quantize_dynamic/i8_per_tensor/64Mi/first_call")
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A: dequantize of int4, blocks of 32, f16 scales, 64 Mi elements, to f32; throughput counted
// as f32 bytes written.
void dequantize_i4(benchmark::State& st) {
  R router(EigenCpu(1), async_mode());
  const T q = quantize_dynamic(router.from_data(host_data(kBig), CpuDevice{0}), i4_block32());
  {  // one call first, so that the row times warm calls (see quantize_i8)
    const T warm = dequantize(q);
    router.sync();
  }
  for (auto _ : st) {
    T y = dequantize(q);
    router.sync();
    benchmark::DoNotOptimize(y);
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) *
                       static_cast<std::int64_t>(kBigF32Bytes));
  st.counters["per_iter_bytes"] = kBigF32Bytes;
}
BENCHMARK(dequantize_i4)
    ->Name("dequantize/i4_block32_f16/64Mi")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// A of the transfer rows: q.to(cpu:1) of a 4096 x 4096 quantized weight held on cpu:0 (shared,
// so the source keeps it), synced; the moved copy is dropped before the next move. EigenCpu
// splits a copy of 1 MiB or more over every core (memcpy, B, is one thread): the summary's CPU
// lines show what each side used.
// range(0): 8 = int8 or 4 = int4, both per block of 32 with f16 scales.
Scheme scheme_for(std::int64_t bits) { return bits == 8 ? i8_block32() : i4_block32(); }

void q_to(benchmark::State& st) {
  const Scheme s = scheme_for(st.range(0));
  R router(EigenCpu(2), async_mode());
  const T q = quantize_dynamic(router.from_data(host_data(kWeight), CpuDevice{0}), s);
  router.sync();
  const double bytes = static_cast<double>(q_bytes(s, kWeight));
  const ProcessCpu cpu_time;
  for (auto _ : st) {
    T moved = q.to(CpuDevice{1});
    router.sync();
    benchmark::DoNotOptimize(moved);
  }
  cpu_time.finish(st, 1.0);
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * bytes));
  st.counters["per_iter_bytes"] = bytes;
}
BENCHMARK(q_to)
    ->Name("q_to/packed")
    ->ArgName("bits")
    ->Arg(8)
    ->Arg(4)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// B of the transfer rows: memcpy of exactly the bytes q.to moves (packed data + f16 scales).
void memcpy_q(benchmark::State& st) { memcpy_bytes(st); }
BENCHMARK(memcpy_q)
    ->Name("memcpy_q")
    ->ArgName("bytes")
    ->Arg(static_cast<std::int64_t>(q_bytes(i8_block32(), kWeight)))
    ->Arg(static_cast<std::int64_t>(q_bytes(i4_block32(), kWeight)))
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The workaround users of other routers are told to use: dequantize on the source, move the
// f32 tensor, quantize it again on the target (int4, blocks of 32, f16 scales).
void q_to_workaround(benchmark::State& st) {
  const Scheme s = i4_block32();
  R router(EigenCpu(2), async_mode());
  const T q = quantize_dynamic(router.from_data(host_data(kWeight), CpuDevice{0}), s);
  router.sync();
  for (auto _ : st) {
    T f = dequantize(q);
    T moved = quantize_dynamic(std::move(f).to(CpuDevice{1}), s);
    router.sync();
    benchmark::DoNotOptimize(moved);
  }
}
BENCHMARK(q_to_workaround)
    ->Name("q_to/workaround_i4")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Bytes a quantized move puts on the wire, read from the target's stats().bytes_in, against
// the f32 tensor it stands for. Not a timing: the counters carry the numbers.
void q_to_bytes(benchmark::State& st) {
  const Scheme s = i4_block32();
  R router(EigenCpu(2), async_mode());
  const T q = quantize_dynamic(router.from_data(host_data(kWeight), CpuDevice{0}), s);
  router.sync();
  std::uint64_t moved_bytes = 0;
  for (auto _ : st) {
    const auto before = router.stats(CpuDevice{1}).bytes_in;
    T moved = q.to(CpuDevice{1});
    router.sync();
    moved_bytes = router.stats(CpuDevice{1}).bytes_in - before;
    benchmark::DoNotOptimize(moved);
  }
  st.counters["bytes_in"] = static_cast<double>(moved_bytes);
  st.counters["f32_bytes"] = static_cast<double>(kWeight.numel()) * 4.0;
}
BENCHMARK(q_to_bytes)->Name("q_to/bytes_in_i4")->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace ferry::bench

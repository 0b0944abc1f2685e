// Ferry benchmarks for the neural-network ops of #19, each through an async router with one
// kernel thread per device, synced: linear with int4 weights against f32 ones at decode size
// and with MXFP4 weights at a batch of 8,
// conv2d against im2col + Eigen GEMM written here, fused attention against its decomposition,
// and a decode step of examples/gpt_model.hpp with its layers split over two devices against
// one device.
// SPDX-License-Identifier: Apache-2.0
#include <Eigen/Core>

#include "../examples/gpt_model.hpp"
#include "common.hpp"

namespace ferry::bench {
namespace {

// linear(x [rows, 4096], w [4096, 4096]) with a quantized weight multiplied packed (A) against
// the f32 weight (B). At one row (a decode step, int4 per block of 32 inputs, f16 scales) the
// product reads the weight once, so this is the weight's bytes against the dequantization's
// cost; at 8 rows (a small batch) with OCP MXFP4 (e2m1 codes, a ue8m0 scale per 32 inputs:
// issue #20's row; and NVIDIA's NVFP4, blocks of 16, a ue4m3 scale each and an f32 one per
// tensor) the packed kernel takes two passes over w, still an eighth of f32's bytes.
constexpr std::int64_t kLin = 4096;
void linear_run(benchmark::State& st, const Scheme* s, std::int64_t rows) {
  R router(EigenCpu(1), async_mode(1));
  const CpuDevice d{0};
  const T x = router.from_data(host_data(Shape{rows, kLin}), d);
  T w = ferry::cast(router.from_data(host_data(Shape{kLin, kLin}), d), DType::f32);
  if (s != nullptr) w = quantize_dynamic(std::move(w), *s);
  {
    const T warm = linear(x, w);
    router.sync();
  }
  for (auto _ : st) {
    T y = linear(x, w);
    router.sync();
    benchmark::DoNotOptimize(y);
  }
}
void linear_int4(benchmark::State& st) {
  const Scheme s = i4_block32();
  linear_run(st, &s, 1);
}
void linear_f32(benchmark::State& st) { linear_run(st, nullptr, 1); }
void linear_mxfp4_b8(benchmark::State& st) {
  const Scheme s = Scheme::mxfp4();
  linear_run(st, &s, 8);
}
void linear_nvfp4_b8(benchmark::State& st) {
  const Scheme s = Scheme::nvfp4();
  linear_run(st, &s, 8);
}
void linear_f32_b8(benchmark::State& st) { linear_run(st, nullptr, 8); }
BENCHMARK(linear_int4)->Name("linear_decode/int4")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(linear_f32)->Name("linear_decode/f32")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(linear_mxfp4_b8)->Name("linear_b8/mxfp4")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(linear_nvfp4_b8)->Name("linear_b8/nvfp4")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(linear_f32_b8)->Name("linear_b8/f32")->UseRealTime()->Unit(benchmark::kMillisecond);

// conv2d 3x3, 64 -> 64 channels, 56x56, padding 1 (a ResNet stage): the router's (A) against
// im2col by plain loops into one buffer and one Eigen GEMM (B), both one thread.
constexpr std::int64_t kC = 64, kHW = 56;
void conv2d_router(benchmark::State& st) {
  R router(EigenCpu(1), async_mode(1));
  const CpuDevice d{0};
  const T x = router.from_data(host_data(Shape{1, kC, kHW, kHW}), d);
  const T w = router.from_data(host_data(Shape{kC, kC, 3, 3}), d);
  {
    const T warm = conv2d(x, w, std::nullopt, {.padding = {1, 1}});
    router.sync();
  }
  for (auto _ : st) {
    T y = conv2d(x, w, std::nullopt, {.padding = {1, 1}});
    router.sync();
    benchmark::DoNotOptimize(y);
  }
}
void conv2d_eigen(benchmark::State& st) {
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto& x = host_floats(static_cast<std::size_t>(kC * kHW * kHW));
  const auto& wv = host_floats(static_cast<std::size_t>(kC * kC * 9));
  Eigen::Map<const RowMat> w(wv.data(), kC, kC * 9);
  RowMat col(kC * 9, kHW * kHW), y(kC, kHW * kHW);
  for (auto _ : st) {
    for (std::int64_t c = 0; c < kC; ++c)
      for (std::int64_t a = 0; a < 3; ++a)
        for (std::int64_t b = 0; b < 3; ++b) {
          float* row = col.row((c * 3 + a) * 3 + b).data();
          for (std::int64_t i = 0; i < kHW; ++i)
            for (std::int64_t j = 0; j < kHW; ++j) {
              const std::int64_t r = i + a - 1, q = j + b - 1;
              row[i * kHW + j] = r < 0 || r >= kHW || q < 0 || q >= kHW
                                     ? 0.0f
                                     : x[static_cast<std::size_t>((c * kHW + r) * kHW + q)];
            }
        }
    y.noalias() = w * col;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(conv2d_router)->Name("conv2d_56/router")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(conv2d_eigen)
    ->Name("conv2d_56/eigen_im2col")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// attention(q, k, v) over [1, 8 heads, 512, 64] f32, causal (a decoder's prefill) or not: the
// fused op (A) against its decomposition (B: matmul, scale, causal mask, softmax, matmul), which
// the router records for a backend without the kernel; both one thread.
struct NoAttention : EigenCpu {
  using EigenCpu::EigenCpu;
  template <class... A>
  void attention(A&&...) = delete;
};
template <class Be>
void attention_512(benchmark::State& st) {
  const bool causal = st.range(0) != 0;
  Router<Be> router(Be(1), async_mode(1));
  const CpuDevice d{0};
  const Shape s{1, 8, 512, 64};
  const auto q = router.from_data(host_data(s), d), k = router.from_data(host_data(s), d),
             v = router.from_data(host_data(s), d);
  {
    const auto warm = attention(q, k, v, std::nullopt, causal);
    router.sync();
  }
  for (auto _ : st) {
    auto y = attention(q, k, v, std::nullopt, causal);
    router.sync();
    benchmark::DoNotOptimize(y);
  }
}
BENCHMARK(attention_512<EigenCpu>)
    ->Name("attention_512/fused")
    ->ArgName("causal")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(attention_512<NoAttention>)
    ->Name("attention_512/decomposition")
    ->ArgName("causal")
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// One decode step of the GPT of examples/gpt_model.hpp (a token in, the argmax out, the KV
// cache growing from 8 to 63 positions and starting over) with its layers on 2 devices, or all
// on 1: what the split costs a sequential decode.
void decode_step(benchmark::State& st) {
  const auto devices = static_cast<int>(st.range(0));
  R router(EigenCpu(devices), async_mode(1));
  const CpuDevice first{0}, second{devices - 1};
  gpt::Model<EigenCpu> model(router, gpt::make_weights(1), first, second);
  const std::vector<std::int64_t> prompt{17, 256, 3, 999, 42, 7, 512, 88};
  std::int64_t tok =
      argmax(narrow(model.step(prompt, 0), 1, 7, 1)).to_data().to_vector<std::int64_t>()[0];
  std::int64_t pos = 8;
  for (auto _ : st) {
    auto logits = model.step({tok}, pos);
    tok = argmax(reshape(std::move(logits), Shape{gpt::kVocab}))
              .to_data()
              .to_vector<std::int64_t>()[0];
    pos = pos + 1 < gpt::kMaxSeq ? pos + 1 : 8;
  }
}
BENCHMARK(decode_step)
    ->Name("decode_step")
    ->ArgName("devices")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ferry::bench

// A small CNN (examples/cnn_model.hpp) with int8 per-channel conv weights, split over two
// devices: blocks 1-2 on cpu:0, block 3 and the head on cpu:1. Prints the logits and the class
// of one 64x64 input, the time per inference (warm), what crossed between the devices, and the
// weights' bytes packed against f32. tests/test_models.cpp checks the same logits against a
// double-precision reference.
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <ferry/ferry.hpp>
#include <vector>

#include "cnn_model.hpp"

using ferry::CpuDevice;

int main() {
  const CpuDevice cpu0{0}, cpu1{1};
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2));
  const cnn::Weights w = cnn::make_weights(1);
  const cnn::Model<ferry::EigenCpu> model(r, w, cpu0, cpu1);
  const auto x =
      r.from_vector(cnn::make_input(2), ferry::Shape{1, 3, cnn::kSize, cnn::kSize}, cpu0);

  auto logits = model.forward(x).to_data().to_vector<float>();  // the first run, warming up
  const auto before = r.stats(cpu1);
  constexpr int runs = 20;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) logits = model.forward(x).to_data().to_vector<float>();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      runs;
  const auto after = r.stats(cpu1);

  std::size_t packed = 0, f32 = 0;
  for (const auto& b : w.blocks) {
    packed += b.values.size() + b.scales.size() * 4;
    f32 += b.values.size() * 4;
  }
  const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
  fmt::print("logits {::.4f}\n", logits);
  fmt::print("class {} of {}\n", best, cnn::kClasses);
  fmt::print("{:.2f} ms per inference (mean of {} warm runs)\n", ms, runs);
  fmt::print(
      "crossed cpu:0 -> cpu:1 per inference: {} tensor, {} bytes (the block-2 activations)\n",
      (after.transfers_in - before.transfers_in) / runs, (after.bytes_in - before.bytes_in) / runs);
  fmt::print("conv weights: {} bytes int8 + f32 scales, {} as f32 ({:.2f}x less)\n", packed, f32,
             static_cast<double>(f32) / static_cast<double>(packed));
}

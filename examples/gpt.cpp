// A small GPT-style decoder (examples/gpt_model.hpp: 4 layers, d_model 256, 4 heads, vocab
// 1,000, int4 per-block projections loaded packed) over two devices: layers 0-1 on cpu:0,
// layers 2-3 and the head on cpu:1. Runs an 8-token prompt, then generates 32 tokens with the
// KV cache, greedily and by top-k / top-p sampling. Prints the tokens, tokens/s and what crossed
// between the devices. tests/test_models.cpp checks every step's logits against a double
// reference and the greedy tokens exactly.
#include <fmt/ranges.h>

#include <chrono>
#include <ferry/ferry.hpp>
#include <random>
#include <vector>

#include "gpt_model.hpp"

using ferry::CpuDevice;
using Tensor = ferry::Tensor<ferry::EigenCpu>;

namespace {
/// The last position's logits [1000] of a step's [1, L, 1000].
Tensor last_row(const Tensor& logits) {
  const std::int64_t n = logits.shape()[1];
  return ferry::reshape(ferry::narrow(logits, 1, n - 1, 1), ferry::Shape{gpt::kVocab});
}
/// Top-k (50) then top-p (0.9) at temperature 0.8: the smallest set of the 50 most likely
/// tokens whose probability reaches 0.9, renormalised, drawn from with `rng`.
std::int64_t sample(const Tensor& logits, std::mt19937_64& rng) {
  auto top = ferry::topk(last_row(logits) / 0.8, 50);
  auto p = ferry::softmax(std::move(top.values), -1);
  auto before = ferry::cumsum(p, -1) - p;  // the probability of the tokens ranked above
  auto kept = ferry::mask_fill(std::move(p), std::move(before) >= 0.9, 0.0);
  const auto w = kept.to_data().to_vector<float>();
  const auto ids = top.indices.to_data().to_vector<std::int64_t>();
  std::discrete_distribution<std::size_t> pick(w.begin(), w.end());
  return ids[pick(rng)];
}
}  // namespace

int main() {
  const CpuDevice cpu0{0}, cpu1{1};
  ferry::Router<ferry::EigenCpu> r(ferry::EigenCpu(2));
  gpt::Model<ferry::EigenCpu> model(r, gpt::make_weights(1), cpu0, cpu1);
  const std::vector<std::int64_t> prompt{17, 256, 3, 999, 42, 7, 512, 88};
  constexpr int steps = 32;

  for (const bool greedy : {true, false}) {
    std::mt19937_64 rng(5);
    std::vector<std::int64_t> out;
    auto next = [&](const Tensor& logits) {
      return greedy ? ferry::argmax(last_row(logits)).to_data().to_vector<std::int64_t>()[0]
                    : sample(logits, rng);
    };
    out.push_back(next(model.step(prompt, 0)));  // the prompt fills the cache
    r.sync();
    const auto before = r.stats(cpu1);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 1; i < steps; ++i)
      out.push_back(
          next(model.step({out.back()}, static_cast<std::int64_t>(prompt.size()) + i - 1)));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto after = r.stats(cpu1);
    fmt::print("{}: {}\n", greedy ? "greedy" : "top-k 50, top-p 0.9, T 0.8", out);
    fmt::print(
        "  {:.0f} tokens/s decoding ({} steps of one token after the prompt); per step "
        "cpu:0 -> cpu:1 moved {} tensor of {} bytes\n",
        (steps - 1) / s, steps - 1, (after.transfers_in - before.transfers_in) / (steps - 1),
        (after.bytes_in - before.bytes_in) / (steps - 1));
  }
  std::size_t packed = 0, f32 = 0;
  for (const auto& l : gpt::make_weights(1).layers)
    for (const auto* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      packed += w->values.size() / 2 + w->scales.size() * 4;
      f32 += w->values.size() * 4;
    }
  fmt::print("layer weights: {} bytes as int4 + an f32 scale per 32, {} as f32 ({:.2f}x less)\n",
             packed, f32, static_cast<double>(f32) / static_cast<double>(packed));
}

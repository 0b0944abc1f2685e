// A small CNN, split over two devices, with int8 weights per output channel that stay packed:
// three blocks of conv3x3 (padding 1) -> batch_norm (inference) -> relu -> max_pool 2x2
// (3 -> 16 -> 32 -> 64 channels, 64x64 -> 8x8), then adaptive_avg_pool2d to 1x1 and a float
// linear head to 10 classes. Blocks 1 and 2 run on the first device, block 3 and the head on
// the second; the activations cross once. The weights are what a quantized checkpoint holds
// (int8 values and one f32 scale per output channel), made here from a seed, so that
// tests/test_models.cpp can run the same model in double with plain loops.
// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ferry/ferry.hpp>
#include <utility>
#include <vector>

namespace cnn {

inline constexpr std::array<std::int64_t, 4> kChannels{3, 16, 32, 64};
inline constexpr std::int64_t kSize = 64, kClasses = 10;

/// One block's parameters as a checkpoint stores them.
struct Block {
  std::int64_t in = 0, out = 0;
  std::vector<std::int8_t> values;            // [out, in, 3, 3], symmetric int8 in [-127, 127]
  std::vector<float> scales;                  // [out]: weight = value * scale
  std::vector<float> bias;                    // [out], the conv's
  std::vector<float> gamma, beta, mean, var;  // batch_norm's, [out] each
};
struct Weights {
  std::array<Block, 3> blocks;
  std::vector<float> fc_w, fc_b;  // [10, 64], [10]
};

/// Deterministic numbers in [0, 1) (a 32-bit LCG), so the test can make the same weights.
class Lcg {
 public:
  explicit Lcg(std::uint32_t seed) : s_(seed * 2654435761u + 1u) {}
  double next() {
    s_ = s_ * 1664525u + 1013904223u;
    return static_cast<double>(s_ >> 8) / static_cast<double>(1u << 24);
  }
  float in(double lo, double hi) { return static_cast<float>(lo + (hi - lo) * next()); }

 private:
  std::uint32_t s_;
};

inline Weights make_weights(std::uint32_t seed) {
  Lcg g(seed);
  Weights w;
  for (std::size_t b = 0; b < 3; ++b) {
    Block& k = w.blocks[b];
    k.in = kChannels[b];
    k.out = kChannels[b + 1];
    const double a = std::sqrt(6.0 / static_cast<double>(k.in * 9));  // He-uniform bound
    for (std::int64_t o = 0; o < k.out; ++o) {
      k.scales.push_back(static_cast<float>(a / 127.0) * g.in(0.8, 1.2));
      k.bias.push_back(g.in(-0.1, 0.1));
      k.gamma.push_back(g.in(0.8, 1.2));
      k.beta.push_back(g.in(-0.1, 0.1));
      k.mean.push_back(g.in(-0.2, 0.2));
      k.var.push_back(g.in(0.5, 1.5));
    }
    for (std::int64_t i = 0; i < k.out * k.in * 9; ++i)
      k.values.push_back(static_cast<std::int8_t>(std::lround(g.in(-127.0, 127.0))));
  }
  const double a = 1.0 / std::sqrt(64.0);
  for (std::int64_t i = 0; i < kClasses * 64; ++i) w.fc_w.push_back(g.in(-a, a));
  for (std::int64_t i = 0; i < kClasses; ++i) w.fc_b.push_back(g.in(-0.1, 0.1));
  return w;
}

/// A 1 x 3 x 64 x 64 input in [-1, 1).
inline std::vector<float> make_input(std::uint32_t seed) {
  Lcg g(seed);
  std::vector<float> x(static_cast<std::size_t>(3 * kSize * kSize));
  for (auto& v : x) v = g.in(-1.0, 1.0);
  return x;
}

/// The model on a router: conv weights packed on the device of their block.
template <ferry::Backend B>
class Model {
 public:
  using Tensor = ferry::Tensor<B>;
  using Device = typename B::Device;

  Model(ferry::Router<B>& r, const Weights& w, const Device& first, const Device& second)
      : first_(first), second_(second) {
    for (std::size_t b = 0; b < 3; ++b) {
      const Block& k = w.blocks[b];
      const Device& d = b < 2 ? first : second;
      // The checkpoint's bytes as they are: int8 values, f32 scales, no offsets (symmetric).
      std::vector<std::byte> data(k.values.size()), scales(k.scales.size() * 4);
      std::memcpy(data.data(), k.values.data(), data.size());
      std::memcpy(scales.data(), k.scales.data(), scales.size());
      auto parts = ferry::quant::QuantizedParts::make(
          ferry::quant::Scheme::of(ferry::quant::ValueType::i8).per_axis(0),
          ferry::Shape{k.out, k.in, 3, 3}, std::move(data), std::move(scales), {});
      const ferry::Shape c{k.out};
      layers_.push_back({r.q_from_parts(std::move(parts), d), r.from_vector(k.bias, c, d),
                         r.from_vector(k.gamma, c, d), r.from_vector(k.beta, c, d),
                         r.from_vector(k.mean, c, d), r.from_vector(k.var, c, d)});
    }
    fc_w_ = r.from_vector(w.fc_w, ferry::Shape{kClasses, 64}, second);
    fc_b_ = r.from_vector(w.fc_b, ferry::Shape{kClasses}, second);
  }

  /// x [N, 3, 64, 64] on the first device -> logits [N, 10] on the second.
  Tensor forward(Tensor x) const {
    for (std::size_t b = 0; b < 3; ++b) {
      const Layer& l = layers_[b];
      if (b == 2) x = std::move(x).to(second_);
      x = ferry::conv2d(std::move(x), l.w, l.bias, {.padding = {1, 1}});
      x = ferry::batch_norm(std::move(x), l.mean, l.var, l.gamma, l.beta);
      x = ferry::max_pool2d(ferry::relu(std::move(x)), {2, 2});
    }
    const std::int64_t n = x.shape()[0];
    x = ferry::reshape(ferry::adaptive_avg_pool2d(std::move(x), {1, 1}), ferry::Shape{n, 64});
    return ferry::linear(std::move(x), fc_w_, fc_b_);
  }

 private:
  struct Layer {
    Tensor w, bias, gamma, beta, mean, var;
  };
  Device first_, second_;
  std::vector<Layer> layers_;
  Tensor fc_w_, fc_b_;
};

}  // namespace cnn

// A small decoder-only transformer (GPT/llama-style), split over two devices as a pipeline:
// token embedding, then 4 layers of RMSNorm -> causal attention (4 heads of 64, rotary position
// embedding, a KV cache written in place with slice_assign) -> residual, RMSNorm -> SiLU-gated
// MLP (256 -> 512 -> 256) -> residual; a final RMSNorm and a projection to 1,000 logits. Every
// projection of the layers is int4 per block of 32 inputs with an f32 scale a block, loaded
// packed from checkpoint bytes (ONNX's int4 packing: first element in the low nibble). Layers
// 0-1 and the embedding run on the first device, layers 2-3 and the head on the second; the
// hidden state crosses once a step. The weights come from a seed, so tests/test_models.cpp can
// run the same model in double with plain loops.
// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ferry/ferry.hpp>
#include <utility>
#include <vector>

#include "cnn_model.hpp"  // cnn::Lcg

namespace gpt {

inline constexpr std::int64_t kVocab = 1000, kDim = 256, kHeads = 4, kHeadDim = 64, kHidden = 512,
                              kLayers = 4, kMaxSeq = 64, kBlock = 32;
inline constexpr double kEps = 1e-5, kRopeBase = 10000.0;

/// An int4 weight [out, in] as a checkpoint holds it: values in [-7, 7] and one f32 scale per
/// block of 32 consecutive inputs ([out, in / 32]).
struct Int4 {
  std::int64_t out = 0, in = 0;
  std::vector<std::int8_t> values;
  std::vector<float> scales;
  double at(std::int64_t o, std::int64_t i) const {  // the weight value * scale
    return values[static_cast<std::size_t>(o * in + i)] *
           static_cast<double>(scales[static_cast<std::size_t>(o * (in / kBlock) + i / kBlock)]);
  }
};
struct Layer {
  std::vector<float> attn_norm, mlp_norm;     // [256]
  Int4 wq, wk, wv, wo, w_gate, w_up, w_down;  // [out, in]
};
struct Weights {
  std::vector<float> embedding;  // [1000, 256]
  std::array<Layer, kLayers> layers;
  std::vector<float> final_norm;  // [256]
  std::vector<float> head;        // [1000, 256]
};

inline Int4 make_int4(cnn::Lcg& g, std::int64_t out, std::int64_t in) {
  Int4 w{out, in, {}, {}};
  const double a = 1.0 / std::sqrt(static_cast<double>(in));
  for (std::int64_t i = 0; i < out * in; ++i)
    w.values.push_back(static_cast<std::int8_t>(std::lround(g.in(-7.0, 7.0))));
  for (std::int64_t i = 0; i < out * in / kBlock; ++i)
    w.scales.push_back(static_cast<float>(a * std::sqrt(3.0) / 7.0) * g.in(0.8, 1.2));
  return w;
}
inline Weights make_weights(std::uint32_t seed) {
  cnn::Lcg g(seed);
  Weights w;
  auto fill = [&](std::vector<float>& v, std::int64_t n, double lo, double hi) {
    for (std::int64_t i = 0; i < n; ++i) v.push_back(g.in(lo, hi));
  };
  fill(w.embedding, kVocab * kDim, -1.0, 1.0);
  for (auto& l : w.layers) {
    fill(l.attn_norm, kDim, 0.8, 1.2);
    fill(l.mlp_norm, kDim, 0.8, 1.2);
    l.wq = make_int4(g, kDim, kDim);
    l.wk = make_int4(g, kDim, kDim);
    l.wv = make_int4(g, kDim, kDim);
    l.wo = make_int4(g, kDim, kDim);
    l.w_gate = make_int4(g, kHidden, kDim);
    l.w_up = make_int4(g, kHidden, kDim);
    l.w_down = make_int4(g, kDim, kHidden);
  }
  fill(w.final_norm, kDim, 0.8, 1.2);
  const double a = std::sqrt(3.0 / static_cast<double>(kDim));
  fill(w.head, kVocab * kDim, -a, a);
  return w;
}

/// Rotary embedding angles: position p, pair i of a head rotates by p * base^(-2 i / 64).
inline double rope_angle(std::int64_t p, std::int64_t i) {
  return static_cast<double>(p) *
         std::pow(kRopeBase, -2.0 * static_cast<double>(i) / static_cast<double>(kHeadDim));
}

template <ferry::Backend B>
class Model {
 public:
  using Tensor = ferry::Tensor<B>;
  using Device = typename B::Device;

  Model(ferry::Router<B>& r, const Weights& w, const Device& first, const Device& second)
      : r_(&r), first_(first), second_(second) {
    emb_ = r.from_vector(w.embedding, ferry::Shape{kVocab, kDim}, first);
    for (std::int64_t l = 0; l < kLayers; ++l) {
      const Layer& s = w.layers[static_cast<std::size_t>(l)];
      const Device& d = device_of(l);
      const ferry::Shape c{kDim};
      const ferry::Shape cache{1, kHeads, kMaxSeq, kHeadDim};
      layers_.push_back({r.from_vector(s.attn_norm, c, d), r.from_vector(s.mlp_norm, c, d),
                         packed(s.wq, d), packed(s.wk, d), packed(s.wv, d), packed(s.wo, d),
                         packed(s.w_gate, d), packed(s.w_up, d), packed(s.w_down, d),
                         r.zeros(cache, ferry::DType::f32, d),
                         r.zeros(cache, ferry::DType::f32, d)});
    }
    final_norm_ = r.from_vector(w.final_norm, ferry::Shape{kDim}, second);
    head_ = r.from_vector(w.head, ferry::Shape{kVocab, kDim}, second);
    // cos and sin of every position's angles, [64, 64]: each pair's angle twice (halves).
    std::vector<float> c, s;
    for (std::int64_t p = 0; p < kMaxSeq; ++p)
      for (std::int64_t i = 0; i < kHeadDim; ++i) {
        c.push_back(static_cast<float>(std::cos(rope_angle(p, i % (kHeadDim / 2)))));
        s.push_back(static_cast<float>(std::sin(rope_angle(p, i % (kHeadDim / 2)))));
      }
    for (const Device& d : {first, second})
      rope_.push_back({r.from_vector(c, ferry::Shape{kMaxSeq, kHeadDim}, d),
                       r.from_vector(s, ferry::Shape{kMaxSeq, kHeadDim}, d)});
  }

  /// Runs `tokens` at positions [pos, pos + L), writing their keys and values into the cache:
  /// logits [1, L, 1000] on the second device.
  Tensor step(const std::vector<std::int64_t>& tokens, std::int64_t pos) {
    const auto n = static_cast<std::int64_t>(tokens.size());
    auto x = ferry::embedding(emb_, r_->from_vector(tokens, ferry::Shape{1, n}, first_));
    for (std::int64_t l = 0; l < kLayers; ++l) {
      if (l == kLayers / 2) x = std::move(x).to(second_);
      x = block(layers_[static_cast<std::size_t>(l)], std::move(x), pos, l >= kLayers / 2);
    }
    x = ferry::rms_norm(std::move(x), ferry::Shape{kDim}, final_norm_, kEps);
    return ferry::linear(std::move(x), head_);
  }
  const Device& device_of(std::int64_t layer) const {
    return layer < kLayers / 2 ? first_ : second_;
  }

 private:
  struct LayerT {
    Tensor attn_norm, mlp_norm, wq, wk, wv, wo, w_gate, w_up, w_down, k_cache, v_cache;
  };
  struct Rope {
    Tensor cos, sin;
  };

  Tensor packed(const Int4& w, const Device& d) {
    std::vector<std::byte> data(static_cast<std::size_t>(w.out * w.in / 2));
    for (std::size_t e = 0; e < w.values.size(); ++e) {  // first element in the low nibble
      const auto nib = static_cast<unsigned>(w.values[e]) & 0xFu;
      data[e / 2] |= static_cast<std::byte>(e % 2 == 0 ? nib : nib << 4);
    }
    std::vector<std::byte> scales(w.scales.size() * 4);
    std::memcpy(scales.data(), w.scales.data(), scales.size());
    using namespace ferry::quant;
    return r_->q_from_parts(
        QuantizedParts::make(Scheme::of(ValueType::i4).per_block({kBlock}).packed_u8(),
                             ferry::Shape{w.out, w.in}, std::move(data), std::move(scales), {}),
        d);
  }

  /// x [1, L, 256] -> [1, heads, L, 64], rotated for positions [pos, pos + L).
  Tensor heads(Tensor x, std::int64_t pos, const Rope* rope) const {
    const std::int64_t n = x.shape()[1];
    x = ferry::swap_dims(ferry::reshape(std::move(x), ferry::Shape{1, n, kHeads, kHeadDim}), 1, 2);
    if (!rope) return x;
    const std::int64_t h = kHeadDim / 2;
    auto c = ferry::narrow(rope->cos, 0, pos, n), s = ferry::narrow(rope->sin, 0, pos, n);
    // rotate_half: (-x2, x1) for the halves x1, x2 of each head.
    auto rot = ferry::cat({ferry::neg(ferry::narrow(x, -1, h, h)), ferry::narrow(x, -1, 0, h)}, -1);
    return x * std::move(c) + std::move(rot) * std::move(s);
  }

  Tensor block(LayerT& l, Tensor x, std::int64_t pos, bool second) {
    const Rope* rope = &rope_[second ? 1 : 0];
    const std::int64_t n = x.shape()[1];
    auto h = ferry::rms_norm(x, ferry::Shape{kDim}, l.attn_norm, kEps);
    auto q = heads(ferry::linear(h, l.wq), pos, rope);
    auto k = heads(ferry::linear(h, l.wk), pos, rope);
    auto v = heads(ferry::linear(std::move(h), l.wv), pos, nullptr);
    // The cache rows [pos, pos + n) take the new keys and values, in place.
    const ferry::Range all_b{0, 1}, all_h{0, kHeads}, all_d{0, kHeadDim};
    l.k_cache = ferry::slice_assign(std::move(l.k_cache), {all_b, all_h, {pos, pos + n}, all_d},
                                    std::move(k));
    l.v_cache = ferry::slice_assign(std::move(l.v_cache), {all_b, all_h, {pos, pos + n}, all_d},
                                    std::move(v));
    auto kc = ferry::slice(l.k_cache, {all_b, all_h, {0, pos + n}, all_d});
    auto vc = ferry::slice(l.v_cache, {all_b, all_h, {0, pos + n}, all_d});
    auto a = ferry::attention(std::move(q), std::move(kc), std::move(vc), std::nullopt, true);
    a = ferry::reshape(ferry::swap_dims(std::move(a), 1, 2), ferry::Shape{1, n, kDim});
    x = std::move(x) + ferry::linear(std::move(a), l.wo);
    h = ferry::rms_norm(x, ferry::Shape{kDim}, l.mlp_norm, kEps);
    auto up = ferry::linear(h, l.w_up);
    auto g = ferry::silu(ferry::linear(std::move(h), l.w_gate)) * std::move(up);
    return std::move(x) + ferry::linear(std::move(g), l.w_down);
  }

  ferry::Router<B>* r_;
  Device first_, second_;
  Tensor emb_, final_norm_, head_;
  std::vector<LayerT> layers_;
  std::vector<Rope> rope_;
};

}  // namespace gpt

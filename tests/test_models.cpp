// The models of examples/ run through the router against references computed here in double
// with plain loops from the same checkpoint numbers (no Ferry op): the CNN of
// examples/cnn_model.hpp, split over two devices with int8 weights packed, and the GPT-style
// decoder of examples/gpt_model.hpp (int4 weights, rotary embedding, KV cache), every step's
// logits and the greedy tokens. Both also on a backend with only the primitive kernels (no
// fused softmax, attention, q_linear or q_matmul), which runs the decompositions and the host
// paths instead.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <vector>

#include "../examples/cnn_model.hpp"
#include "../examples/gpt_model.hpp"
#include "no_composite.hpp"

using namespace ferry;

namespace {
using V = std::vector<double>;

/// conv3x3, padding 1, stride 1: x [c, h, w] -> [o, h, w], with weight value * scale + bias.
V conv3x3(const V& x, std::int64_t c, std::int64_t h, std::int64_t w, const cnn::Block& k) {
  V y(static_cast<std::size_t>(k.out * h * w));
  for (std::int64_t o = 0; o < k.out; ++o)
    for (std::int64_t i = 0; i < h; ++i)
      for (std::int64_t j = 0; j < w; ++j) {
        double s = k.bias[static_cast<std::size_t>(o)];
        for (std::int64_t cc = 0; cc < c; ++cc)
          for (std::int64_t a = 0; a < 3; ++a)
            for (std::int64_t b = 0; b < 3; ++b) {
              const std::int64_t r = i + a - 1, q = j + b - 1;
              if (r < 0 || r >= h || q < 0 || q >= w) continue;
              const double wv = k.values[static_cast<std::size_t>(((o * c + cc) * 3 + a) * 3 + b)] *
                                static_cast<double>(k.scales[static_cast<std::size_t>(o)]);
              s += wv * x[static_cast<std::size_t>((cc * h + r) * w + q)];
            }
        y[static_cast<std::size_t>((o * h + i) * w + j)] = s;
      }
  return y;
}

/// batch_norm (inference), relu and a 2x2 max pool of y [o, h, w] -> [o, h / 2, w / 2].
V bn_relu_pool(const V& y, std::int64_t h, std::int64_t w, const cnn::Block& k) {
  V z(static_cast<std::size_t>(k.out * (h / 2) * (w / 2)));
  for (std::int64_t o = 0; o < k.out; ++o) {
    const auto u = static_cast<std::size_t>(o);
    const double m = k.mean[u], sd = std::sqrt(static_cast<double>(k.var[u]) + 1e-5);
    for (std::int64_t i = 0; i < h / 2; ++i)
      for (std::int64_t j = 0; j < w / 2; ++j) {
        double best = 0;  // relu: the max of the relu'd window is >= 0
        for (std::int64_t a = 0; a < 2; ++a)
          for (std::int64_t b = 0; b < 2; ++b) {
            const double v = y[static_cast<std::size_t>((o * h + 2 * i + a) * w + 2 * j + b)];
            best = std::max(best, (v - m) / sd * k.gamma[u] + k.beta[u]);
          }
        z[static_cast<std::size_t>((o * (h / 2) + i) * (w / 2) + j)] = best;
      }
  }
  return z;
}

V cnn_reference(const cnn::Weights& wt, const std::vector<float>& input) {
  V x(input.begin(), input.end());
  std::int64_t c = 3, h = cnn::kSize;
  for (const auto& k : wt.blocks) {
    x = bn_relu_pool(conv3x3(x, c, h, h, k), h, h, k);
    c = k.out;
    h /= 2;
  }
  V pooled(static_cast<std::size_t>(c), 0.0);
  for (std::int64_t o = 0; o < c; ++o) {
    for (std::int64_t i = 0; i < h * h; ++i)
      pooled[static_cast<std::size_t>(o)] += x[static_cast<std::size_t>(o * h * h + i)];
    pooled[static_cast<std::size_t>(o)] /= static_cast<double>(h * h);
  }
  V logits(cnn::kClasses);
  for (std::int64_t k = 0; k < cnn::kClasses; ++k) {
    double s = wt.fc_b[static_cast<std::size_t>(k)];
    for (std::int64_t o = 0; o < c; ++o)
      s += static_cast<double>(wt.fc_w[static_cast<std::size_t>(k * c + o)]) *
           pooled[static_cast<std::size_t>(o)];
    logits[static_cast<std::size_t>(k)] = s;
  }
  return logits;
}

/// EigenCpu with only the primitive kernels: the composite ones hidden (NoComposite), and the
/// fused quantized products, so that linear(x, q) takes the host path (dequantize, matmul).
struct OnlyPrimitives : ferry_test::NoComposite {
  using NoComposite::NoComposite;
  template <class... A>
  void q_linear(A&&...) = delete;
  template <class... A>
  void q_matmul(A&&...) = delete;
};
static_assert(!kernel::attention<OnlyPrimitives> && !kernel::q_linear<OnlyPrimitives> &&
              !kernel::softmax<OnlyPrimitives>);

template <class Be>
void check_cnn(Execution mode, unsigned seed) {
  const CpuDevice cpu0{0}, cpu1{1};
  Router<Be> r(Be(2), {.execution = mode});
  const auto w = cnn::make_weights(seed);
  const auto input = cnn::make_input(seed + 1);
  const cnn::Model<Be> model(r, w, cpu0, cpu1);
  r.sync();
  const auto before = r.stats(cpu1);
  const auto x = r.from_vector(input, Shape{1, 3, cnn::kSize, cnn::kSize}, cpu0);
  const auto y = model.forward(x);
  CHECK(y.shape() == Shape{1, cnn::kClasses});
  CHECK(y.device() == cpu1);
  const auto got = y.to_data().template to_vector<float>();
  const V want = cnn_reference(w, input);
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("logit " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= 1e-4 * std::max(1.0, std::abs(want[i])));
  }
  CHECK(std::max_element(got.begin(), got.end()) - got.begin() ==
        std::max_element(want.begin(), want.end()) - want.begin());
  // The weights stayed where they were put: only the block-2 activations crossed.
  const auto after = r.stats(cpu1);
  CHECK(after.transfers_in - before.transfers_in == 1);
  CHECK(after.bytes_in - before.bytes_in == 32 * 16 * 16 * 4);
}
}  // namespace

TEST_CASE("the CNN of examples/ over two devices matches a double reference") {
  check_cnn<EigenCpu>(GENERATE(Execution::Async, Execution::Inline), GENERATE(1u, 7u));
}
TEST_CASE("the CNN of examples/ on a backend with only primitive kernels") {
  check_cnn<OnlyPrimitives>(Execution::Async, 7u);
}

namespace {
/// The decoder of gpt_model.hpp in double, one token at a time, with its own KV cache.
class GptRef {
 public:
  explicit GptRef(const gpt::Weights& w) : w_(w), k_(gpt::kLayers), v_(gpt::kLayers) {}

  V step(std::int64_t token, std::int64_t pos) {
    const auto d = static_cast<std::size_t>(gpt::kDim);
    V x(w_.embedding.begin() + token * gpt::kDim, w_.embedding.begin() + (token + 1) * gpt::kDim);
    for (std::size_t l = 0; l < static_cast<std::size_t>(gpt::kLayers); ++l) {
      const gpt::Layer& L = w_.layers[l];
      V h = rms(x, L.attn_norm);
      V q = mv(L.wq, h), k = mv(L.wk, h), v = mv(L.wv, h);
      rope(q, pos);
      rope(k, pos);
      k_[l].push_back(k);
      v_[l].push_back(v);
      V att(d, 0.0);
      for (std::int64_t hd = 0; hd < gpt::kHeads; ++hd) {
        const auto o = static_cast<std::size_t>(hd * gpt::kHeadDim);
        V sc;
        double mx = -1e300;
        for (const V& kj : k_[l]) {
          double s = 0;
          for (std::size_t i = 0; i < 64; ++i) s += q[o + i] * kj[o + i];
          sc.push_back(s / 8.0);  // 1 / sqrt(64)
          mx = std::max(mx, sc.back());
        }
        double z = 0;
        for (double& s : sc) z += (s = std::exp(s - mx));
        for (std::size_t j = 0; j < sc.size(); ++j)
          for (std::size_t i = 0; i < 64; ++i) att[o + i] += sc[j] / z * v_[l][j][o + i];
      }
      const V a = mv(L.wo, att);
      for (std::size_t i = 0; i < d; ++i) x[i] += a[i];
      h = rms(x, L.mlp_norm);
      V g = mv(L.w_gate, h);
      const V u = mv(L.w_up, h);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const V m = mv(L.w_down, g);
      for (std::size_t i = 0; i < d; ++i) x[i] += m[i];
    }
    const V h = rms(x, w_.final_norm);
    V logits(static_cast<std::size_t>(gpt::kVocab));
    for (std::size_t t = 0; t < logits.size(); ++t)
      for (std::size_t i = 0; i < d; ++i)
        logits[t] += static_cast<double>(w_.head[t * d + i]) * h[i];
    return logits;
  }

 private:
  static V rms(const V& x, const std::vector<float>& w) {
    double ms = 0;
    for (double e : x) ms += e * e;
    const double r = 1.0 / std::sqrt(ms / static_cast<double>(x.size()) + gpt::kEps);
    V y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * w[i];
    return y;
  }
  static V mv(const gpt::Int4& w, const V& x) {
    V y(static_cast<std::size_t>(w.out));
    for (std::int64_t o = 0; o < w.out; ++o)
      for (std::int64_t i = 0; i < w.in; ++i)
        y[static_cast<std::size_t>(o)] += w.at(o, i) * x[static_cast<std::size_t>(i)];
    return y;
  }
  /// Each head's halves (a, b) rotated: (a cos - b sin, b cos + a sin).
  static void rope(V& x, std::int64_t pos) {
    for (std::int64_t hd = 0; hd < gpt::kHeads; ++hd)
      for (std::int64_t i = 0; i < gpt::kHeadDim / 2; ++i) {
        const auto a = static_cast<std::size_t>(hd * gpt::kHeadDim + i), b = a + 32;
        const double t = gpt::rope_angle(pos, i), c = std::cos(t), s = std::sin(t);
        const double xa = x[a], xb = x[b];
        x[a] = xa * c - xb * s;
        x[b] = xb * c + xa * s;
      }
  }
  const gpt::Weights& w_;
  std::vector<std::vector<V>> k_, v_;
};

std::int64_t argmax(const V& v) { return std::max_element(v.begin(), v.end()) - v.begin(); }
void check_logits(const std::vector<float>& got, std::size_t offset, const V& want,
                  std::int64_t pos) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("position " << pos << ", logit " << i << ": got " << got[offset + i] << ", want "
                     << want[i]);
    CHECK(std::abs(got[offset + i] - want[i]) <= 2e-4 * std::max(1.0, std::abs(want[i])));
  }
}
}  // namespace

namespace {
template <class Be>
void check_gpt(Execution mode) {
  const CpuDevice cpu0{0}, cpu1{1};
  Router<Be> r(Be(2), {.execution = mode});
  const auto w = gpt::make_weights(3);
  gpt::Model<Be> model(r, w, cpu0, cpu1);
  GptRef ref(w);
  const std::vector<std::int64_t> prompt{5, 900, 31, 1, 640, 77};
  const auto n = static_cast<std::int64_t>(prompt.size());
  // The prompt in one step: its logits at every position.
  const auto first = model.step(prompt, 0);
  REQUIRE(first.shape() == Shape{1, n, gpt::kVocab});
  const auto all = first.to_data().template to_vector<float>();
  V want;
  for (std::int64_t p = 0; p < n; ++p) {
    want = ref.step(prompt[static_cast<std::size_t>(p)], p);
    check_logits(all, static_cast<std::size_t>(p * gpt::kVocab), want, p);
  }
  // 24 greedy steps of one token: the same logits and the same tokens as the reference's.
  std::vector<std::int64_t> got_tokens, want_tokens;
  std::int64_t tok = argmax(want);
  r.sync();
  const auto before = r.stats(cpu1);
  for (std::int64_t p = n; p < n + 24; ++p) {
    want_tokens.push_back(tok);
    const auto logits = model.step({tok}, p).to_data().template to_vector<float>();
    got_tokens.push_back(std::max_element(logits.begin(), logits.end()) - logits.begin());
    want = ref.step(tok, p);
    check_logits(logits, 0, want, p);
    CHECK(got_tokens.back() == argmax(want));
    tok = argmax(want);
  }
  got_tokens.erase(got_tokens.end() - 1);
  want_tokens.erase(want_tokens.begin());
  CHECK(got_tokens == want_tokens);
  // Only the hidden state crossed, once a step: [1, 1, 256] f32.
  const auto after = r.stats(cpu1);
  CHECK(after.transfers_in - before.transfers_in == 24);
  CHECK(after.bytes_in - before.bytes_in == 24 * 1024);
}
}  // namespace

TEST_CASE("the GPT decoder of examples/ matches a double reference at every step") {
  check_gpt<EigenCpu>(GENERATE(Execution::Async, Execution::Inline));
}
TEST_CASE("the GPT decoder of examples/ on a backend with only primitive kernels") {
  check_gpt<OnlyPrimitives>(Execution::Async);
}

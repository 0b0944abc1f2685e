// The models of examples/ run through the router against references computed here in double
// with plain loops from the same checkpoint numbers (no Ferry op): the CNN of
// examples/cnn_model.hpp, split over two devices with int8 weights packed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <vector>

#include "../examples/cnn_model.hpp"

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
}  // namespace

TEST_CASE("the CNN of examples/ over two devices matches a double reference") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  const auto seed = GENERATE(1u, 7u);
  const CpuDevice cpu0{0}, cpu1{1};
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode});
  const auto w = cnn::make_weights(seed);
  const auto input = cnn::make_input(seed + 1);
  const cnn::Model<EigenCpu> model(r, w, cpu0, cpu1);
  r.sync();
  const auto before = r.stats(cpu1);
  const auto x = r.from_vector(input, Shape{1, 3, cnn::kSize, cnn::kSize}, cpu0);
  const auto y = model.forward(x);
  CHECK(y.shape() == Shape{1, cnn::kClasses});
  CHECK(y.device() == cpu1);
  const auto got = y.to_data().to_vector<float>();
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

// A quantized MLP (256 -> 512 -> 512 -> 64, batch 64) run as a pipeline over three devices.
// The weights are quantized to int4 once, on cpu:0, and travel packed (data + f16 scales) to
// the device that runs their layer; activations flow cpu:0 -> cpu:1 -> cpu:2 in micro-batches,
// so the three devices work at the same time. Prints the error against the float model, the
// bytes the weights took to move, and where the time went.
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <ferry/ferry.hpp>
#include <ferry/format.hpp>
#include <map>
#include <vector>

using ferry::CpuDevice;
using Tensor = ferry::Tensor<ferry::EigenCpu>;
namespace q = ferry::quant;

int main() {
  constexpr std::int64_t batch = 64, micro = 16;
  const std::vector<std::int64_t> widths{256, 512, 512, 64};
  const std::vector<CpuDevice> dev{{0}, {1}, {2}};  // layer i runs on dev[i]

  ferry::Router<ferry::EigenCpu> router(ferry::EigenCpu(3), ferry::RouterOptions{.trace = true});

  // Float weights [K, N] on cpu:0, scaled so activations stay O(1), and the input.
  std::vector<Tensor> w;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i)
    w.push_back(router.random_normal({widths[i], widths[i + 1]}, 100 + i, dev[0], 0.0,
                                     1.0 / std::sqrt(static_cast<double>(widths[i]))));
  auto x = router.random_normal({batch, widths[0]}, 7, dev[0]);

  // int4 values in blocks of 32 along each row of W (its trailing dim), one f16 scale a block.
  const auto scheme =
      q::Scheme::of(q::ValueType::i4).per_block({32}).packed_u8().scales(q::ScaleType::f16);
  std::vector<Tensor> wq;
  std::uint64_t f32_bytes = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    wq.push_back(ferry::quantize_dynamic(w[i], scheme).to(dev[i]));  // packed, bit-exact
    if (i > 0) f32_bytes += static_cast<std::uint64_t>(w[i].numel()) * 4;
  }
  router.sync();
  const std::uint64_t moved = router.stats(dev[1]).bytes_in + router.stats(dev[2]).bytes_in;

  // The pipeline: each micro-batch hops device to device; ops queue up and run in parallel.
  std::vector<Tensor> outs;
  for (std::int64_t m = 0; m < batch; m += micro) {
    auto h = ferry::slice(x, {{m, m + micro}});
    for (std::size_t i = 0; i < wq.size(); ++i) {
      h = ferry::matmul(std::move(h).to(dev[i]), wq[i]);
      if (i + 1 < wq.size()) h = ferry::relu(std::move(h));
    }
    outs.push_back(std::move(h));
  }
  auto y = ferry::cat(std::move(outs), 0);  // on cpu:2

  // The float model, on cpu:0: plain matmuls with the float weights.
  auto ref = x;
  for (std::size_t i = 0; i < w.size(); ++i) {
    ref = ferry::matmul(std::move(ref), w[i]);
    if (i + 1 < w.size()) ref = ferry::relu(std::move(ref));
  }
  auto scalar = [](Tensor t) { return std::move(t).into_data().to_vector<double>()[0]; };
  auto ref2 = ref.to(dev[2]);
  auto diff = y - ref2;
  const double err = scalar(ferry::max(ferry::abs(diff)));
  const double rel = std::sqrt(scalar(ferry::sum(diff * diff)) / scalar(ferry::sum(ref2 * ref2)));
  const double peak = scalar(ferry::max(ferry::abs(ref)));
  router.sync();

  fmt::print("MLP {} -> {} -> {} -> {}, batch {} in micro-batches of {}, layer i on cpu:i\n",
             widths[0], widths[1], widths[2], widths[3], batch, micro);
  fmt::print("weights: {}\n\n", scheme);
  fmt::print(
      "output {}: max abs error vs float reference {:.4f} (largest |output| {:.4f}),\n"
      "  relative L2 error {:.2f}%\n",
      y.shape(), err, peak, 100.0 * rel);
  fmt::print("first outputs: [{:.4f}, ...]\n\n",
             fmt::join(ferry::slice(y, {{0, 1}, {0, 6}}).to_data().to_vector<float>(), ", "));
  fmt::print("weights moved to cpu:1 and cpu:2: {} bytes packed, {} bytes as f32 ({:.2f}x less)\n",
             moved, f32_bytes, static_cast<double>(f32_bytes) / static_cast<double>(moved));
  const auto parts = wq[1].to_parts();
  fmt::print("  layer 2 weights: {}\n\n", parts);

  // Where the time went: ops per device from the stats, busy time from the trace.
  std::map<std::size_t, double> busy_ms;
  std::map<std::size_t, std::map<std::string, double>> by_op;
  for (const auto& e : router.trace()) {
    const double ms = static_cast<double>(e.end_ns - e.start_ns) / 1e6;
    busy_ms[e.device] += ms;
    by_op[e.device][e.phase == ferry::TraceEvent::Phase::op ? e.name : "transfer"] += ms;
  }
  fmt::print("{:<7}{:>6}{:>10}{:>12}   {}\n", "device", "ops", "bytes in", "busy ms",
             "top ops (ms)");
  for (std::size_t d = 0; d < dev.size(); ++d) {
    const auto s = router.stats(dev[d]);
    std::vector<std::pair<std::string, double>> top(by_op[d].begin(), by_op[d].end());
    std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.second > b.second; });
    std::string t;
    for (std::size_t k = 0; k < std::min<std::size_t>(3, top.size()); ++k)
      t += fmt::format("{}{} {:.2f}", k ? ", " : "", top[k].first, top[k].second);
    fmt::print("{:<7}{:>6}{:>10}{:>12.2f}   {}\n", fmt::format("{}", dev[d]), s.ops, s.bytes_in,
               busy_ms[d], t);
  }
  return 0;
}

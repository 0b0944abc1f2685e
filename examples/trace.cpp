// What ran where and when: an async run over three devices with tracing on, written as Chrome
// Trace Event JSON. Open the file in https://ui.perfetto.dev or chrome://tracing: one track
// per device, one slice per op, and an arrow from each send to its receive.
//
//   ./trace [out.json]        (default ferry-trace.json)
#include <ferry/ferry.hpp>
#include <map>
#include <string>
#include <vector>

using ferry::CpuDevice;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "ferry-trace.json";
  ferry::Router<ferry::EigenCpu> router(ferry::EigenCpu(3), ferry::RouterOptions{.trace = true});
  const std::vector<CpuDevice> dev{{0}, {1}, {2}};

  // Each device makes its own data and works on it; partial results gather on cpu:0.
  std::vector<ferry::Tensor<ferry::EigenCpu>> parts;
  for (std::size_t i = 0; i < dev.size(); ++i) {
    auto a = router.random_normal({256, 256}, 10 + i, dev[i]);
    auto b = router.random_uniform({256, 256}, 20 + i, dev[i], -1.0, 1.0);
    auto c = ferry::tanh(ferry::matmul(a, b));
    parts.push_back(ferry::sum(std::move(c), 0).to(dev[0]));
  }
  // A ring: cpu:0 -> cpu:1 -> cpu:2 -> cpu:0, with work at every stop.
  auto ring = router.ones({128, 128}, ferry::DType::f32, dev[0]);
  for (std::size_t hop = 1; hop <= dev.size(); ++hop)
    ring = ferry::exp(std::move(ring).to(dev[hop % dev.size()]) * 0.5f);
  auto total = ferry::sum(ferry::cat(std::move(parts), 0)) + ferry::mean(ring);
  fmt::print("result: {:.4f}\n", total.to_data().to_vector<float>()[0]);
  router.sync();

  // Events per device and per kind, as they went into the file.
  const auto events = router.trace();
  std::map<std::size_t, std::map<std::string, int>> count;
  for (const auto& e : events)
    ++count[e.device][e.phase == ferry::TraceEvent::Phase::op     ? "op"
                      : e.phase == ferry::TraceEvent::Phase::send ? "send"
                                                                  : "receive"];
  for (std::size_t d = 0; d < dev.size(); ++d)
    fmt::print("{}: {} events ({} ops, {} sends, {} receives)\n", dev[d],
               count[d]["op"] + count[d]["send"] + count[d]["receive"], count[d]["op"],
               count[d]["send"], count[d]["receive"]);
  router.write_trace(path);
  fmt::print("trace: {} events on {} devices written to {}\n", events.size(), dev.size(), path);
  return 0;
}

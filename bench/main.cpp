// Ferry benchmarks: runs every registered benchmark (repeated, repetitions interleaved at
// random so that A and B of a row see the same machine), then prints one summary table of
// A-vs-B ratios against their aims and writes it, with every repetition, as JSON.
// SPDX-License-Identifier: Apache-2.0
//
// Usage: ferry_bench [--ferry_json=PATH] [--ferry_strict] [--ferry_verbose] [benchmark flags]
//   --ferry_strict   exit 1 when a row misses its aim
//   --ferry_verbose  also print Google Benchmark's own console report (to stderr)
// Defaults: --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//           --benchmark_min_time=0.1; flags given on the command line win.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Rep {
  double seconds;  // real time per iteration
  std::int64_t iterations;
  std::map<std::string, double> counters;
};
struct Series {
  std::vector<Rep> reps;
  std::string error;
};

/// Keeps every repetition of every benchmark, keyed "function/args" (no /real_time etc.).
class Collector : public benchmark::BenchmarkReporter {
 public:
  explicit Collector(bool verbose) : verbose_(verbose) {
    console_.SetOutputStream(&std::cerr);
    console_.SetErrorStream(&std::cerr);
  }
  bool ReportContext(const Context& c) override {
    cpus_ = c.cpu_info.num_cpus;
    load_ = c.cpu_info.load_avg;
    return verbose_ ? console_.ReportContext(c) : true;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    if (verbose_) console_.ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.run_type != Run::RT_Iteration) continue;
      auto& s = series_[key(r)];
      if (r.error_occurred) {
        s.error = r.error_message;
        continue;
      }
      Rep rep{
          r.real_accumulated_time / static_cast<double>(std::max<std::int64_t>(1, r.iterations)),
          r.iterations,
          {}};
      for (const auto& [name, c] : r.counters) rep.counters[name] = c.value;
      s.reps.push_back(std::move(rep));
    }
    if (!verbose_) std::cerr << '.' << std::flush;
  }
  void Finalize() override {
    if (verbose_) console_.Finalize();
    if (!verbose_) std::cerr << '\n';
  }

  static std::string key(const Run& r) {
    return r.run_name.args.empty() ? r.run_name.function_name
                                   : r.run_name.function_name + "/" + r.run_name.args;
  }
  [[nodiscard]] const std::map<std::string, Series>& series() const { return series_; }
  [[nodiscard]] int cpus() const { return cpus_; }
  [[nodiscard]] const std::vector<double>& load() const { return load_; }

 private:
  bool verbose_;
  benchmark::ConsoleReporter console_;
  std::map<std::string, Series> series_;
  int cpus_ = 0;
  std::vector<double> load_;
};

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---- what each row measures ---------------------------------------------------------------

enum class Measure {
  time_per_item,  // seconds per iteration / per_iter_items (or 1)
  bytes_rate,     // per_iter_bytes / seconds
  items_rate,     // per_iter_items / seconds
  counter,        // a counter's value (named by `counter`)
};
enum class Ratio { a_over_b, b_over_a };

struct Side {
  std::string label;
  std::string bench;
  Measure measure;
  std::string counter = {};
};
struct Row {
  std::string name;
  Side a, b;
  Ratio ratio;
  bool at_most;  // aim is "ratio <= aim" (else ">=")
  double aim;
  std::string ratio_unit = "";  // printed after the ratio ("x" for speedups)
};

std::optional<double> value(const std::map<std::string, Series>& all, const Side& s,
                            std::string& why) {
  auto it = all.find(s.bench);
  if (it == all.end()) {
    why = fmt::format("benchmark '{}' did not run", s.bench);
    return std::nullopt;
  }
  if (!it->second.error.empty()) {
    why = fmt::format("'{}' failed: {}", s.bench, it->second.error);
    return std::nullopt;
  }
  std::vector<double> v;
  for (const auto& r : it->second.reps) {
    auto c = [&](const std::string& n, double dflt) {
      auto f = r.counters.find(n);
      return f == r.counters.end() ? dflt : f->second;
    };
    switch (s.measure) {
      case Measure::time_per_item:
        v.push_back(r.seconds / c("per_iter_items", 1.0));
        break;
      case Measure::bytes_rate:
        v.push_back(c("per_iter_bytes", std::nan("")) / r.seconds);
        break;
      case Measure::items_rate:
        v.push_back(c("per_iter_items", 1.0) / r.seconds);
        break;
      case Measure::counter:
        v.push_back(c(s.counter, std::nan("")));
        break;
    }
  }
  return median(std::move(v));
}

std::string human(Measure m, double x) {
  switch (m) {
    case Measure::time_per_item:
      if (x < 1e-6) return fmt::format("{:.0f} ns", x * 1e9);
      if (x < 1e-3) return fmt::format("{:.2f} us", x * 1e6);
      return fmt::format("{:.2f} ms", x * 1e3);
    case Measure::bytes_rate:
      return fmt::format("{:.2f} GB/s", x / 1e9);
    case Measure::items_rate:
      if (x >= 1e6) return fmt::format("{:.2f} M/s", x / 1e6);
      return fmt::format("{:.1f} k/s", x / 1e3);
    case Measure::counter:
      return fmt::format("{:.2f} MiB", x / (1024.0 * 1024.0));
  }
  return "?";
}

std::vector<Row> rows() {
  using M = Measure;
  return {
      {"dispatch, tiny add, inline",
       {"router (Inline) per add", "dispatch/router_inline", M::time_per_item},
       {"kernel called directly", "dispatch/direct_kernel", M::time_per_item},
       Ratio::a_over_b,
       true,
       1.5},
      {"dispatch, tiny add, async stream",
       {"router (Async), 1000 adds + sync, per add", "dispatch/router_async_stream/1000",
        M::time_per_item},
       {"kernel called directly", "dispatch/direct_kernel", M::time_per_item},
       Ratio::a_over_b,
       true,
       3.0},
      {"matmul 512x512 f32 (1 thread)",
       {"router", "matmul512/router", M::time_per_item},
       {"Eigen GEMM directly", "matmul512/eigen_direct", M::time_per_item},
       Ratio::a_over_b,
       true,
       1.05},
      {"quantize_dynamic int8 per tensor, 64Mi",
       {"f32 read", "quantize_dynamic/i8_per_tensor/64Mi", M::bytes_rate},
       {"memcpy 256MiB", "memcpy/bytes:268435456", M::bytes_rate},
       Ratio::a_over_b,
       false,
       0.5},
      {"quantize_dynamic int8 64Mi: first call vs warm",
       {"fresh router, first call", "quantize_dynamic/i8_per_tensor/64Mi/first_call",
        M::time_per_item},
       {"warm call", "quantize_dynamic/i8_per_tensor/64Mi", M::time_per_item},
       Ratio::a_over_b,
       true,
       2.0},
      {"dequantize int4 block32 f16, 64Mi",
       {"f32 written", "dequantize/i4_block32_f16/64Mi", M::bytes_rate},
       {"memcpy 256MiB", "memcpy/bytes:268435456", M::bytes_rate},
       Ratio::a_over_b,
       false,
       0.5},
      {"q.to(device) int8 block32 f16, 4096^2",
       {"bytes moved", "q_to/packed/bits:8", M::bytes_rate},
       {"memcpy same bytes", "memcpy_q/bytes:17825792", M::bytes_rate},
       Ratio::a_over_b,
       false,
       0.9},
      {"q.to(device) int4 block32 f16, 4096^2",
       {"bytes moved", "q_to/packed/bits:4", M::bytes_rate},
       {"memcpy same bytes", "memcpy_q/bytes:9437184", M::bytes_rate},
       Ratio::a_over_b,
       false,
       0.9},
      {"q.to(device) vs workaround, int4",
       {"packed move", "q_to/packed/bits:4", M::time_per_item},
       {"dequantize, move f32, quantize", "q_to/workaround_i4", M::time_per_item},
       Ratio::b_over_a,
       false,
       20.0,
       "x"},
      {"bytes moved by q.to, int4 block32 f16",
       {"stats().bytes_in", "q_to/bytes_in_i4", M::counter, "bytes_in"},
       {"the f32 tensor", "q_to/bytes_in_i4", M::counter, "f32_bytes"},
       Ratio::a_over_b,
       true,
       0.15},
      {"topk k=50 over 50k f32 logits",
       {"topk", "topk_50k/k50", M::time_per_item},
       {"full sort", "topk_50k/full_sort", M::time_per_item},
       Ratio::a_over_b,
       true,
       0.3},
      {"linear int4 block32, decode [1, 4096] x [4096, 4096] (1 thread)",
       {"int4 packed (q_linear)", "linear_decode/int4", M::time_per_item},
       {"f32 weight", "linear_decode/f32", M::time_per_item},
       Ratio::a_over_b,
       true,
       0.6},
      {"linear MXFP4, batch [8, 4096] x [4096, 4096] (1 thread)",
       {"MXFP4 packed (q_linear)", "linear_b8/mxfp4", M::time_per_item},
       {"f32 weight", "linear_b8/f32", M::time_per_item},
       Ratio::a_over_b,
       true,
       1.0},
      {"linear NVFP4, batch [8, 4096] x [4096, 4096] (1 thread)",
       {"NVFP4 packed (q_linear)", "linear_b8/nvfp4", M::time_per_item},
       {"f32 weight", "linear_b8/f32", M::time_per_item},
       Ratio::a_over_b,
       true,
       1.0},
      {"conv2d 3x3 64->64 56x56 f32 (1 thread)",
       {"router conv2d", "conv2d_56/router", M::time_per_item},
       {"im2col + Eigen GEMM directly", "conv2d_56/eigen_im2col", M::time_per_item},
       Ratio::a_over_b,
       true,
       1.1},
      {"attention causal [1, 8, 512, 64] f32 (1 thread)",
       {"fused attention", "attention_512/fused/causal:1", M::time_per_item},
       {"its decomposition", "attention_512/decomposition/causal:1", M::time_per_item},
       Ratio::a_over_b,
       true,
       0.7},
      {"attention [1, 8, 512, 64] f32 (1 thread)",
       {"fused attention", "attention_512/fused/causal:0", M::time_per_item},
       {"its decomposition", "attention_512/decomposition/causal:0", M::time_per_item},
       Ratio::a_over_b,
       true,
       0.7},
      {"GPT decode step (examples/gpt_model.hpp), 2 devices vs 1",
       {"steps/s, layers on 2 devices", "decode_step/devices:2", M::items_rate},
       {"steps/s, 1 device", "decode_step/devices:1", M::items_rate},
       Ratio::a_over_b,
       false,
       0.9},
      {"softmax over rows, [4096, 4096] f32 (1 thread)",
       {"fused softmax", "softmax_4096^2/fused", M::time_per_item},
       {"its decomposition", "softmax_4096^2/decomposition", M::time_per_item},
       Ratio::a_over_b,
       true,
       0.5},
      {"cumsum 16Mi f32 (1 thread)",
       {"cumsum elements/s", "cumsum_16Mi", M::items_rate},
       {"add elements/s", "add_16Mi/f16:0", M::items_rate},
       Ratio::a_over_b,
       false,
       0.5},
      {"two devices, 2 matmul256 streams",
       {"matmuls/s, 2 devices", "streams/matmul256x2/devices:2", M::items_rate},
       {"matmuls/s, 1 device", "streams/matmul256x2/devices:1", M::items_rate},
       Ratio::a_over_b,
       false,
       1.7},
      {"two devices vs two plain threads",
       {"matmuls/s, 2 devices", "streams/matmul256x2/devices:2", M::items_rate},
       {"matmuls/s, Eigen on 2 std::threads", "streams/eigen_control/threads:2", M::items_rate},
       Ratio::a_over_b,
       false,
       0.9},
      {"exp f32, 16 Mi",
       {"router exp, 1 kernel thread", "exp_f32_16Mi/router", M::time_per_item},
       {"std::exp loop", "exp_f32_16Mi/std_exp_loop", M::time_per_item},
       Ratio::b_over_a,
       false,
       2.0,
       "x"},
      {"cast f32 -> f16, 64 Mi",
       {"f32 read", "cast/f32_to_f16/64Mi", M::bytes_rate},
       {"memcpy 256MiB", "memcpy/bytes:268435456", M::bytes_rate},
       Ratio::a_over_b,
       false,
       0.5},
      {"add f16, 16 Mi (1 thread)",
       {"f16 elements/s", "add_16Mi/f16:1", M::items_rate},
       {"f32 elements/s", "add_16Mi/f16:0", M::items_rate},
       Ratio::a_over_b,
       false,
       0.8},
      {"matmul 512 f16 (1 thread)",
       {"f16", "matmul512_dtype/dtype:1", M::time_per_item},
       {"f32", "matmul512_dtype/dtype:0", M::time_per_item},
       Ratio::a_over_b,
       true,
       1.5},
      {"matmul 512 bf16 (1 thread)",
       {"bf16", "matmul512_dtype/dtype:2", M::time_per_item},
       {"f32", "matmul512_dtype/dtype:0", M::time_per_item},
       Ratio::a_over_b,
       true,
       1.5},
      {"dequantize int4 block32 -> f16, 64Mi",
       {"f16 written", "dequantize/i4_block32_to_f16/64Mi", M::bytes_rate},
       {"memcpy 256MiB", "memcpy/bytes:268435456", M::bytes_rate},
       Ratio::a_over_b,
       false,
       0.5},
      {"registry, tiny adds (Inline)",
       {"adds/s, 1e5 live tensors", "registry/live_tensors/100000", M::items_rate},
       {"adds/s, 10 live tensors", "registry/live_tensors/10", M::items_rate},
       Ratio::a_over_b,
       false,
       0.8},
#ifdef FERRY_BENCH_PEERS
      // Peers (bench_peers.cpp, issue #22): Ferry against libtorch, in this process.
      {"peer: tiny add, inline (1 thread)",
       {"Ferry router (Inline)", "dispatch/router_inline", M::time_per_item},
       {"libtorch at::add", "peer/torch/tiny_add", M::time_per_item},
       Ratio::b_over_a,
       false,
       5.0,
       "x"},
      {"peer: tiny add, stream of 1000 (1 thread)",
       {"Ferry router (Async) + sync, per add", "dispatch/router_async_stream/1000",
        M::time_per_item},
       {"libtorch at::add, per add", "peer/torch/tiny_add_stream/1000", M::time_per_item},
       Ratio::b_over_a,
       false,
       3.0,
       "x"},
      {"peer: quantize u8 per tensor, given scale/zero point, 64Mi",
       {"Ferry quantize, f32 read", "peer/ferry/quantize_u8_given/64Mi", M::bytes_rate},
       {"at::quantize_per_tensor", "peer/torch/quantize_u8_given/64Mi", M::bytes_rate},
       Ratio::a_over_b,
       false,
       4.0,
       "x"},
      {"peer: dequantize u8 per tensor, 64Mi",
       {"Ferry dequantize, f32 written", "peer/ferry/dequantize_u8/64Mi", M::bytes_rate},
       {"libtorch q.dequantize()", "peer/torch/dequantize_u8/64Mi", M::bytes_rate},
       Ratio::a_over_b,
       false,
       4.0,
       "x"},
      {"peer: quantized move, u8 4096^2",
       {"Ferry q.to(device), bytes", "peer/ferry/q_move_u8/4096^2", M::bytes_rate},
       {"libtorch quantized clone()", "peer/torch/q_clone_u8/4096^2", M::bytes_rate},
       Ratio::a_over_b,
       false,
       1.5,
       "x"},
#endif
  };
}

std::string json_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      o += fmt::format("\\u{:04x}", static_cast<int>(c));
      continue;
    }
    o += c;
  }
  return o;
}
std::string num(double x) { return std::isfinite(x) ? fmt::format("{}", x) : "null"; }

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "bench.json";
  bool strict = false, verbose = false;
  std::vector<std::string> args{argv[0], "--benchmark_repetitions=5",
                                "--benchmark_enable_random_interleaving=true",
                                "--benchmark_min_time=0.1"};
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.starts_with("--ferry_json="))
      json_path = std::string(a.substr(13));
    else if (a == "--ferry_strict")
      strict = true;
    else if (a == "--ferry_verbose")
      verbose = true;
    else
      args.emplace_back(a);
  }
  std::vector<char*> cargv;
  for (auto& s : args) cargv.push_back(s.data());
  int cargc = static_cast<int>(cargv.size());
  benchmark::Initialize(&cargc, cargv.data());
  if (benchmark::ReportUnrecognizedArguments(cargc, cargv.data())) return 2;

  Collector col(verbose);
  benchmark::RunSpecifiedBenchmarks(&col);
  benchmark::Shutdown();

  // ---- the table -----------------------------------------------------------------------------
  struct Out {
    Row row;
    std::optional<double> a, b, ratio;
    std::string verdict;
  };
  std::vector<Out> outs;
  int misses = 0;
  for (auto& r : rows()) {
    Out o{r, {}, {}, {}, {}};
    std::string why;
    o.a = value(col.series(), r.a, why);
    o.b = value(col.series(), r.b, why);
    if (o.a && o.b) {
      o.ratio = r.ratio == Ratio::a_over_b ? *o.a / *o.b : *o.b / *o.a;
      const double x = *o.ratio;
      const bool meets = r.at_most ? x <= r.aim : x >= r.aim;
      if (meets) {
        o.verdict = "meets";
      } else {
        ++misses;
        const double f = r.at_most ? x / r.aim : r.aim / x;
        o.verdict = f < 2.0 ? fmt::format("MISSES by {:.0f}%", (f - 1.0) * 100.0)
                            : fmt::format("MISSES by {:.1f}x", f);
      }
    } else {
      ++misses;
      o.verdict = "NOT MEASURED: " + why;
    }
    outs.push_back(std::move(o));
  }

  std::vector<std::array<std::string, 6>> cells;
  cells.push_back({"row", "A", "B", "ratio", "aim", "verdict"});
  for (const auto& o : outs) {
    auto side = [](const Side& s, const std::optional<double>& v) {
      return v ? fmt::format("{} ({})", human(s.measure, *v), s.label) : std::string("-");
    };
    const std::string ratio_name = o.row.ratio == Ratio::a_over_b ? "A/B" : "B/A";
    cells.push_back({o.row.name, side(o.row.a, o.a), side(o.row.b, o.b),
                     o.ratio ? fmt::format("{:.3f}{}", *o.ratio, o.row.ratio_unit) : "-",
                     fmt::format("{} {} {}{}", ratio_name, o.row.at_most ? "<=" : ">=", o.row.aim,
                                 o.row.ratio_unit),
                     o.verdict});
  }
  std::array<std::size_t, 6> w{};
  for (const auto& c : cells)
    for (std::size_t i = 0; i < c.size(); ++i) w[i] = std::max(w[i], c[i].size());
  auto line = [&](const std::array<std::string, 6>& c) {
    std::string s;
    for (std::size_t i = 0; i < c.size(); ++i)
      s += fmt::format("{}{:<{}}", i ? " | " : "", c[i], i + 1 < c.size() ? w[i] : 0);
    return s;
  };
  std::string rule;
  for (std::size_t i = 0; i < w.size(); ++i) rule += std::string(w[i] + (i ? 3 : 0), '-');
  std::size_t reps = 0;
  for (const auto& [k, s] : col.series()) reps = std::max(reps, s.reps.size());
  fmt::print(
      "Ferry benchmarks: medians of {} interleaved repetitions, real time; {} CPUs, load "
      "avg {:.2f}\n",
      reps, col.cpus(), col.load().empty() ? 0.0 : col.load()[0]);
  fmt::print("{}\n{}\n", line(cells[0]), rule);
  for (std::size_t i = 1; i < cells.size(); ++i) fmt::print("{}\n", line(cells[i]));
  fmt::print("{}\n{} of {} rows meet their aim\n", rule,
             outs.size() - static_cast<std::size_t>(misses), outs.size());
#ifndef FERRY_BENCH_PEERS
  fmt::print(
      "peer rows (libtorch) not built: Debian's libtorch-dev was not found when this was "
      "configured; FERRY_BENCH_PEERS=1 scripts/bench installs it\n");
#endif

  // ---- diagnostics: CPU the whole process used per item, and cores busy (CPU / wall). On a
  // shared machine wall time also counts waiting for a core; these two show how much. -------
  bool header = false;
  for (const auto& o : outs) {
    auto diag = [&](const Side& s) -> std::optional<std::pair<double, double>> {
      std::string why;
      const Side cpu{s.label, s.bench, Measure::counter, "proc_cpu_per_item"};
      const Side wall{s.label, s.bench, Measure::time_per_item};
      auto c = value(col.series(), cpu, why);
      auto t = value(col.series(), wall, why);
      if (!c || !t || !std::isfinite(*c)) return std::nullopt;
      return std::pair{*c, *c / *t};
    };
    const auto a = diag(o.row.a), b = diag(o.row.b);
    if (!a || !b) continue;
    if (!header) {
      fmt::print("process CPU per item (all threads) and cores busy (CPU / wall):\n");
      header = true;
    }
    fmt::print("  {}: A {} CPU, {:.2f} cores busy | B {} CPU, {:.2f} cores busy | CPU A/B {:.3f}\n",
               o.row.name, human(Measure::time_per_item, a->first), a->second,
               human(Measure::time_per_item, b->first), b->second, a->first / b->first);
  }

  // ---- JSON ----------------------------------------------------------------------------------
  std::ofstream js(json_path);
  if (!js) {
    fmt::print(stderr, "ferry_bench: cannot write {}\n", json_path);
    return 2;
  }
  js << "{\n  \"context\": {\"cpus\": " << col.cpus() << ", \"load_avg\": ["
     << (col.load().empty() ? std::string() : num(col.load()[0])) << "], \"repetitions\": " << reps
     << "},\n  \"rows\": [\n";
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const auto& o = outs[i];
    js << fmt::format(
        "    {{\"row\": \"{}\", \"a\": {{\"label\": \"{}\", \"benchmark\": \"{}\", \"value\": {}, "
        "\"shown\": \"{}\"}}, \"b\": {{\"label\": \"{}\", \"benchmark\": \"{}\", \"value\": {}, "
        "\"shown\": \"{}\"}}, \"ratio\": \"{}\", \"ratio_value\": {}, \"aim\": \"{} {}\", "
        "\"meets\": {}, \"verdict\": \"{}\"}}{}\n",
        json_escape(o.row.name), json_escape(o.row.a.label), o.row.a.bench,
        o.a ? num(*o.a) : "null", o.a ? human(o.row.a.measure, *o.a) : "",
        json_escape(o.row.b.label), o.row.b.bench, o.b ? num(*o.b) : "null",
        o.b ? human(o.row.b.measure, *o.b) : "", o.row.ratio == Ratio::a_over_b ? "A/B" : "B/A",
        o.ratio ? num(*o.ratio) : "null", o.row.at_most ? "<=" : ">=", o.row.aim,
        o.verdict == "meets" ? "true" : "false", json_escape(o.verdict),
        i + 1 < outs.size() ? "," : "");
  }
  js << "  ],\n  \"benchmarks\": {\n";
  std::size_t k = 0;
  for (const auto& [name, s] : col.series()) {
    std::vector<double> t;
    for (const auto& r : s.reps) t.push_back(r.seconds);
    js << fmt::format("    \"{}\": {{\"median_s\": {}, \"error\": \"{}\", \"repetitions\": [",
                      json_escape(name), num(median(t)), json_escape(s.error));
    for (std::size_t i = 0; i < s.reps.size(); ++i) {
      const auto& r = s.reps[i];
      js << fmt::format("{}{{\"s\": {}, \"iterations\": {}", i ? ", " : "", num(r.seconds),
                        r.iterations);
      for (const auto& [cn, cv] : r.counters)
        js << fmt::format(", \"{}\": {}", json_escape(cn), num(cv));
      js << "}";
    }
    js << "]}" << (++k < col.series().size() ? "," : "") << "\n";
  }
  js << "  }\n}\n";
  return strict && misses > 0 ? 1 : 0;
}

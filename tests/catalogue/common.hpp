// The bad-input catalogue's fixture: a router with bystander tensors of every kind on every
// device, a snapshot of their values and of each device's counts, and check_intact(), which
// every case calls after feeding its one bad input.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <ferry/ferry.hpp>
#include <fstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "matchers.hpp"

namespace catalogue {

using ferry::CpuDevice;
using ferry::DType;
using ferry::EigenCpu;
using ferry::Execution;
using ferry::Router;
using ferry::Shape;
using ferry::TensorData;
using ferry::quant::QuantizedParts;
using ferry::quant::Scheme;
using ferry::quant::ValueType;
using T = ferry::Tensor<EigenCpu>;

/// Matches an exception whose dynamic type is exactly `E` (REQUIRE_THROWS_MATCHES catches by
/// reference, so on its own it would also accept a subclass of `E`). With FERRY_CATALOGUE_DUMP
/// set to a path, appends "case<TAB>type<TAB>message" there: docs/errors.md quotes those lines.
template <class E>
class IsExactly : public Catch::MatcherBase<std::exception> {
 public:
  explicit IsExactly(const char* type) : type_(type) {}
  bool match(const std::exception& e) const override {
    if (const char* path = std::getenv("FERRY_CATALOGUE_DUMP")) {
      std::ofstream(path, std::ios::app) << Catch::getResultCapture().getCurrentTestName() << '\t'
                                         << type_ << '\t' << e.what() << '\n';
    }
    return typeid(e) == typeid(E);
  }
  std::string describe() const override { return std::string("is exactly ") + type_; }

 private:
  const char* type_;
};

/// The one assertion of the catalogue: `expr` throws exactly `E` and its message contains `part`.
#define REQUIRE_RAISES(expr, E, part) \
  REQUIRE_THROWS_MATCHES(expr, E, ::ferry_test::Says(part) && ::catalogue::IsExactly<E>(#E))

inline const std::vector<float> kF32{1.5f, -2.0f, 3.25f, 0.0f, -0.5f, 8.0f};
inline const std::vector<double> kF64{0.125, -1e300, 7.0};
inline const std::vector<std::int32_t> kI32{-3, 0, 2147483647, 5};
inline const std::vector<std::int64_t> kI64{-9000000000LL, 1, 2, 3};
inline const std::vector<bool> kBool{true, false, true};

/// The weights of the quantized bystanders: [4, 64] of distinct, deterministic values.
inline std::vector<float> weights(int seed) {
  std::vector<float> w(4 * 64);
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>((static_cast<int>(i) * 37 + seed * 11) % 97 - 48) / 16.0f;
  return w;
}
inline Scheme int4_block() {
  return Scheme::of(ValueType::i4).per_block({32}).packed_u8().scales(ferry::quant::ScaleType::f16);
}
inline Scheme int8_tensor() { return Scheme::of(ValueType::i8); }

/// A router over a backend's devices in `mode`, holding on every device one bystander of each
/// kind: f32, f64, i32, i64, bool, int4 per_block[32] packed_u8 (f16 scales) and int8
/// per-tensor. Their values and every device's counts are snapshotted after a sync. One fixture
/// for every backend the catalogue feeds bad input to (EigenCpu: World; mini::Faulty).
template <class B>
struct BasicWorld {
  using Tn = ferry::Tensor<B>;
  struct Bystander {
    std::string name;
    Tn t;
    ferry::ReadResult value;
  };

  BasicWorld(Execution m, B b) : mode(m), backend(std::move(b)), r(backend, {.execution = m}) {
    for (std::size_t i = 0; i < r.devices().size(); ++i) {
      const auto& d = r.devices()[i];
      add(fmt::format("f32@{}", d), r.from_vector(kF32, {2, 3}, d));
      add(fmt::format("f64@{}", d), r.from_vector(kF64, {3}, d));
      add(fmt::format("i32@{}", d), r.from_vector(kI32, {4}, d));
      add(fmt::format("i64@{}", d), r.from_vector(kI64, {2, 2}, d));
      add(fmt::format("bool@{}", d), r.from_data(TensorData::from(kBool, {3}), d));
      add(fmt::format("q4@{}", d),
          ferry::quantize_dynamic(r.from_vector(weights(static_cast<int>(i)), {4, 64}, d),
                                  int4_block()));
      add(fmt::format("q8@{}", d),
          ferry::quantize(r.from_vector(kF32, {2, 3}, d), int8_tensor(), {0.0625f}));
    }
    snapshot();
  }

  /// The bystander of `kind` ("f32", "q4", ...) on device number `d`.
  [[nodiscard]] const Tn& get(const std::string& kind, int d = 0) const {
    const auto name = fmt::format("{}@{}", kind, r.devices().at(static_cast<std::size_t>(d)));
    for (const auto& b : all)
      if (b.name == name) return b.t;
    FAIL("no bystander " << name);
    return all.front().t;
  }

  /// Everything the case did not own is as it was: values byte for byte, live tensors and bytes
  /// per device, the backend's allocated bytes (where it counts them), no failure marks left in
  /// any registry, no error pending; and fresh ops (an add, a move, a quantized move, a
  /// dequantize) still work.
  void check_intact() {
    REQUIRE_NOTHROW(r.sync());
    check_values_and_counts();
    {
      const auto& f = get("f32");
      auto twice = (f + f).to_data().template to_vector<float>();
      for (std::size_t i = 0; i < kF32.size(); ++i) REQUIRE(twice[i] == 2.0f * kF32[i]);
      const int last = static_cast<int>(r.devices().size()) - 1;
      const auto& to = r.devices().back();
      REQUIRE(f.to(to).to_data() == std::get<TensorData>(value_of("f32")));
      REQUIRE(get("q4").to(to).to_parts() == std::get<QuantizedParts>(value_of("q4")));
      REQUIRE(ferry::dequantize(get("q8", last)).to_data().template to_vector<float>() ==
              std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, -0.5f, 7.9375f});
    }
    REQUIRE_NOTHROW(r.sync());
    check_values_and_counts();
  }

  Execution mode;
  B backend;  ///< a copy of the router's (EigenCpu's copies share their accounts)
  Router<B> r;
  std::vector<Bystander> all;
  std::vector<ferry::DeviceStats> stats;
  std::vector<std::int64_t> allocated;

 private:
  static constexpr bool kCounts = requires(const B& b, const typename B::Device& d) {
    b.allocated_bytes(d);
  };

  void add(std::string name, Tn t) { all.push_back({std::move(name), std::move(t), {}}); }

  [[nodiscard]] static ferry::ReadResult read(const Tn& t) {
    if (t.is_quantized()) return t.to_parts();
    return t.to_data();
  }
  [[nodiscard]] const ferry::ReadResult& value_of(const std::string& kind) const {
    const auto name = fmt::format("{}@{}", kind, r.devices().front());
    for (const auto& b : all)
      if (b.name == name) return b.value;
    FAIL("no bystander " << name);
    return all.front().value;
  }

  void snapshot() {
    for (auto& b : all) b.value = read(b.t);
    r.sync();
    for (const auto& d : r.devices()) {
      stats.push_back(r.stats(d));
      if constexpr (kCounts) allocated.push_back(backend.allocated_bytes(d));
    }
  }

  void check_values_and_counts() {
    for (const auto& b : all) {
      INFO("bystander " << b.name);
      REQUIRE(read(b.t) == b.value);
    }
    REQUIRE_NOTHROW(r.sync());
    for (std::size_t i = 0; i < r.devices().size(); ++i) {
      const auto& d = r.devices()[i];
      INFO("device " << fmt::format("{}", d));
      const auto s = r.stats(d);
      REQUIRE(s.live_tensors == stats[i].live_tensors);
      REQUIRE(s.live_bytes == stats[i].live_bytes);
      if constexpr (kCounts) REQUIRE(backend.allocated_bytes(d) == allocated[i]);
      REQUIRE(r.with_interpreter(d, [](auto& in) { return in.registry().failed_size(); }) == 0);
    }
  }
};

/// The catalogue's world on EigenCpu: `devices` devices (two unless a case needs more).
struct World : BasicWorld<EigenCpu> {
  explicit World(Execution m, int devices = 2) : BasicWorld(m, EigenCpu(devices)) {}
};

/// A bad input only the kernel can see, in both modes: inline, `expr` throws exactly `E` (message
/// containing `part`) at the call; async, the call returns, reading the result throws OpFailed
/// containing `failed` ("op 'div' on device cpu:0 failed"), sync() throws `E` and then nothing.
#define REQUIRE_KERNEL_RAISES(w, expr, E, failed, part)             \
  do {                                                              \
    if ((w).mode == ::ferry::Execution::Inline) {                   \
      REQUIRE_RAISES(expr, E, part);                                \
    } else {                                                        \
      auto bad_ = expr;                                             \
      if (bad_.dtype() == ::ferry::DType::quantized)                \
        REQUIRE_RAISES(bad_.to_parts(), ::ferry::OpFailed, failed); \
      else                                                          \
        REQUIRE_RAISES(bad_.to_data(), ::ferry::OpFailed, failed);  \
      REQUIRE_RAISES((w).r.sync(), E, part);                        \
      REQUIRE_NOTHROW((w).r.sync()); /* reported once */            \
    }                                                               \
  } while (false)

/// Both execution modes: every argument check throws at the call in both.
#define CATALOGUE_MODES GENERATE(::ferry::Execution::Inline, ::ferry::Execution::Async)

}  // namespace catalogue

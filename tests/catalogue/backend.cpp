// Bad-input catalogue, what a backend lets out that is not a ferry::Error: a kernel that throws
// std::runtime_error or an int, a transfer that throws std::runtime_error. Each becomes
// BackendError naming the op, the backend, the device and the output, with the original nested
// (std::rethrow_if_nested gives it back). Inline, the call throws it; async, a read of the output
// throws OpFailed quoting it and sync() throws the BackendError, once. The backend is
// tests/mini_backend.hpp's Faulty (EigenCpu's kernels throw only ferry errors and bad_alloc), so
// the world here is a Router<mini::Faulty> with bystanders of its own.
#include <exception>
#include <stdexcept>

#include "catalogue/common.hpp"
#include "mini_backend.hpp"

namespace backend_faults {
using catalogue::IsExactly;
using catalogue::kF32;
using ferry::BackendError;
using ferry::DType;
using ferry::Execution;
using ferry::OpFailed;
using ferry::TensorData;
using ferry::quant::QuantizedParts;
using FT = ferry::Tensor<mini::Faulty>;
const mini::Device m0{0}, m1{1};

/// Matches an exception that nests (std::nested_exception) a std::runtime_error saying `what`.
class NestsRuntimeError : public Catch::MatcherBase<std::exception> {
 public:
  explicit NestsRuntimeError(std::string what) : what_(std::move(what)) {}
  bool match(const std::exception& e) const override {
    try {
      std::rethrow_if_nested(e);
    } catch (const std::runtime_error& x) {
      return typeid(x) == typeid(std::runtime_error) && x.what() == what_;
    } catch (...) {
    }
    return false;
  }
  std::string describe() const override { return "nests std::runtime_error(\"" + what_ + "\")"; }

 private:
  std::string what_;
};
/// Matches an exception that nests the int `v`.
class NestsInt : public Catch::MatcherBase<std::exception> {
 public:
  explicit NestsInt(int v) : v_(v) {}
  bool match(const std::exception& e) const override {
    try {
      std::rethrow_if_nested(e);
    } catch (int x) {
      return x == v_;
    } catch (...) {
    }
    return false;
  }
  std::string describe() const override { return "nests the int " + std::to_string(v_); }

 private:
  int v_;
};

/// `expr` throws exactly BackendError, its message containing `part`, nesting what `nests` matches.
#define REQUIRE_BACKEND_ERROR(expr, part, nests) \
  REQUIRE_THROWS_MATCHES(                        \
      expr, BackendError,                        \
      ::ferry_test::Says(part) && ::catalogue::IsExactly<BackendError>("BackendError") && nests)

/// catalogue::World for mini::Faulty: on each of its two devices an f32 [2, 3], an i64 [4], a
/// bool [3] and an int8 per-tensor [2, 3] bystander, snapshotted after a sync; check_intact()
/// requires what World's does (no pending error, values byte for byte, the same live tensors and
/// bytes, no failure marks, a fresh add, move and quantized move that work, and again after).
struct FaultyWorld {
  struct Bystander {
    std::string name;
    FT t;
    ferry::ReadResult value;
  };

  explicit FaultyWorld(Execution m) : mode(m), r(mini::Faulty{}, {.execution = m}) {
    for (const auto& d : {m0, m1}) {
      add(fmt::format("f32@{}", d), r.from_vector(kF32, {2, 3}, d));
      add(fmt::format("i64@{}", d), r.from_vector(catalogue::kI64, {4}, d));
      add(fmt::format("bool@{}", d), r.from_data(TensorData::from(catalogue::kBool, {3}), d));
      add(fmt::format("q8@{}", d),
          ferry::quantize(r.from_vector(kF32, {2, 3}, d), catalogue::int8_tensor(), {0.0625f}));
    }
    for (auto& b : all) b.value = read(b.t);
    r.sync();
    for (const auto& d : r.devices()) stats.push_back(r.stats(d));
  }

  [[nodiscard]] const FT& get(const std::string& name) const {
    for (const auto& b : all)
      if (b.name == name) return b.t;
    FAIL("no bystander " << name);
    return all.front().t;
  }

  void check_intact() {
    REQUIRE_NOTHROW(r.sync());
    check_values_and_counts();
    {
      const auto& f = get("f32@mini:0");
      auto twice = (f + f).to_data().to_vector<float>();
      for (std::size_t i = 0; i < kF32.size(); ++i) REQUIRE(twice[i] == 2.0f * kF32[i]);
      REQUIRE(f.to(m1).to_data() == f.to_data());
      REQUIRE(get("q8@mini:0").to(m1).to_parts() == get("q8@mini:0").to_parts());
    }
    REQUIRE_NOTHROW(r.sync());
    check_values_and_counts();
  }

  Execution mode;
  ferry::Router<mini::Faulty> r;
  std::vector<Bystander> all;
  std::vector<ferry::DeviceStats> stats;

 private:
  void add(std::string name, FT t) { all.push_back({std::move(name), std::move(t), {}}); }
  [[nodiscard]] static ferry::ReadResult read(const FT& t) {
    if (t.is_quantized()) return t.to_parts();
    return t.to_data();
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
      REQUIRE(r.with_interpreter(d, [](auto& in) { return in.registry().failed_size(); }) == 0);
    }
  }
};

TEST_CASE("backend: a kernel that throws std::runtime_error", "[backend]") {
  FaultyWorld w(CATALOGUE_MODES);
  {
    auto x = w.r.from_vector(std::vector<float>(13, 1.0f), {13}, m0);
    const char* part = "[ferry.backend] add: backend 'faulty' failed on device mini:0 making t";
    const char* what = ":f32[13]: std::runtime_error: mini: the adder overheated";
    const auto nests = NestsRuntimeError("mini: the adder overheated");
    if (w.mode == Execution::Inline) {
      REQUIRE_BACKEND_ERROR(x + x, part, ::ferry_test::Says(what) && nests);
    } else {
      auto bad = x + x;
      REQUIRE_RAISES(bad.to_data(), OpFailed,
                     "op 'add' on device mini:0 failed: [ferry.backend] add");
      REQUIRE_BACKEND_ERROR(w.r.sync(), part, ::ferry_test::Says(what) && nests);
      REQUIRE_NOTHROW(w.r.sync());  // reported once
    }
  }
  w.check_intact();
}

TEST_CASE("backend: a kernel that throws an int", "[backend]") {
  FaultyWorld w(CATALOGUE_MODES);
  {
    auto x = w.r.from_vector(std::vector<std::int32_t>(7, 1), {7}, m1);
    const char* part = "[ferry.backend] add: backend 'faulty' failed on device mini:1 making t";
    const char* what = ":i32[7]: int (not a std::exception)";
    if (w.mode == Execution::Inline) {
      REQUIRE_BACKEND_ERROR(x + x, part, ::ferry_test::Says(what) && NestsInt(7));
    } else {
      auto bad = (x + x) * 2;  // the mul is poisoned by the add
      REQUIRE_RAISES(bad.to_data(), OpFailed, "op 'add' on device mini:1 failed: [ferry.backend]");
      REQUIRE_BACKEND_ERROR(w.r.sync(), part, ::ferry_test::Says(what) && NestsInt(7));
      REQUIRE_NOTHROW(w.r.sync());
    }
  }
  w.check_intact();
}

TEST_CASE("backend: a transfer that throws std::runtime_error", "[backend]") {
  FaultyWorld w(CATALOGUE_MODES);
  {
    auto x = w.r.from_vector(std::vector<float>(13, 1.0f), {13}, m0);
    const char* part = "[ferry.backend] to_device: backend 'faulty' failed moving t";
    const char* what =
        ":f32[13] from device mini:0 to mini:1: std::runtime_error: mini: the link is down";
    const auto nests = NestsRuntimeError("mini: the link is down");
    if (w.mode == Execution::Inline) {
      REQUIRE_BACKEND_ERROR(x.to(m1), part, ::ferry_test::Says(what) && nests);
    } else {
      auto moved = x.to(m1);
      REQUIRE_RAISES(moved.to_data(), OpFailed,
                     "op 'to_device' on device mini:1 failed: [ferry.backend]");
      // The send failed on mini:0 and the receive on mini:1: each device reports it.
      REQUIRE_BACKEND_ERROR(w.r.sync(m0), part, ::ferry_test::Says(what) && nests);
      REQUIRE_BACKEND_ERROR(w.r.sync(m1), part, ::ferry_test::Says(what) && nests);
      REQUIRE_NOTHROW(w.r.sync());
    }
  }
  w.check_intact();
}

#undef REQUIRE_BACKEND_ERROR
}  // namespace backend_faults

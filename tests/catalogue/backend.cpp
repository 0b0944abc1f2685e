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

/// catalogue's world on mini::Faulty (two devices, the bystanders of every kind, the same
/// check_intact()).
struct FaultyWorld : catalogue::BasicWorld<mini::Faulty> {
  explicit FaultyWorld(Execution m) : BasicWorld(m, mini::Faulty{}) {}
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
      auto bad = (x + x) + x;  // the second add is poisoned by the first
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
      // The send failed on mini:0, which reports the BackendError; the receive on mini:1
      // reports OpFailed quoting it (an exception of its own: none is shared across threads).
      REQUIRE_BACKEND_ERROR(w.r.sync(m0), part, ::ferry_test::Says(what) && nests);
      REQUIRE_RAISES(w.r.sync(m1), OpFailed,
                     std::string("[ferry.failed] op 'to_device' on device mini:1 failed: ") + part);
      REQUIRE_NOTHROW(w.r.sync(m1));
      REQUIRE_NOTHROW(w.r.sync());
    }
  }
  w.check_intact();
}

#undef REQUIRE_BACKEND_ERROR
}  // namespace backend_faults

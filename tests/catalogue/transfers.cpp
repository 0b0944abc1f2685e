// Bad-input catalogue, transfers: moves to devices the router lacks, moves of Tensors that
// name nothing, bad QuantizedParts placed on each device, and moves of a failed tensor.
#include "catalogue/common.hpp"

namespace transfers {
using namespace catalogue;
using ferry::DeviceError;
using ferry::HandleError;
using ferry::QuantError;
}  // namespace transfers

using namespace transfers;

TEST_CASE("transfers: to(cpu:5) of a two-device router", "[transfers]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("f32").to(CpuDevice{5}), DeviceError,
                 "to: device cpu:5 is not one of this router's devices [cpu:0, cpu:1]");
  w.check_intact();
}

TEST_CASE("transfers: to(cpu:5) of a quantized tensor", "[transfers]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("q4", 1).to(CpuDevice{5}), DeviceError,
                 "to: device cpu:5 is not one of this router's devices");
  w.check_intact();
}

TEST_CASE("transfers: to() of a Tensor after std::move(t).to()", "[transfers]") {
  World w(CATALOGUE_MODES);
  {
    T a = w.r.from_vector(kF32, {2, 3}, CpuDevice{0});
    auto b = std::move(a).to(CpuDevice{1});
    REQUIRE_RAISES(a.to(CpuDevice{1}), HandleError,  // NOLINT(bugprone-use-after-move)
                   "to: this Tensor was moved from (or default constructed) and names no tensor");
    REQUIRE(b.to_data().to_vector<float>() == kF32);
  }
  w.check_intact();
}

TEST_CASE("transfers: to() of a default-constructed Tensor", "[transfers]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(T{}.to(CpuDevice{0}), HandleError, "to: this Tensor was moved from");
  w.check_intact();
}

TEST_CASE("transfers: to() of a device the backend has but this router does not", "[transfers]") {
  const auto mode = CATALOGUE_MODES;
  World w(mode);
  {
    // A second router on the same backend, over cpu:0 only.
    Router<EigenCpu> narrow(w.backend, std::vector<CpuDevice>{CpuDevice{0}}, {.execution = mode});
    auto t = narrow.from_vector(kF32, {2, 3}, CpuDevice{0});
    REQUIRE_RAISES(t.to(CpuDevice{1}), DeviceError,
                   "to: device cpu:1 is not one of this router's devices [cpu:0]");
    REQUIRE(t.to_data().to_vector<float>() == kF32);
  }
  w.check_intact();
}

TEST_CASE("transfers: q_from_parts with truncated data onto each device", "[transfers]") {
  World w(CATALOGUE_MODES);
  const int dev = GENERATE(0, 1);
  auto p = w.get("q4", dev).to_parts();
  p.data.resize(p.data.size() / 2);
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{dev}), QuantError,
                 "over shape [4, 64]: data holds 64 bytes, expected 128");
  w.check_intact();
}

TEST_CASE("transfers: q_from_parts with a zero scale onto each device", "[transfers]") {
  World w(CATALOGUE_MODES);
  const int dev = GENERATE(0, 1);
  auto p = w.get("q8", dev).to_parts();
  ferry::quant::store_scale(p.scheme.scale_type, 0.0f, p.scales.data());
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{dev}), QuantError,
                 "'int8 symmetric per_tensor native scale=f32' over shape [2, 3]: scale 0 of param "
                 "0 must be finite and > 0");
  w.check_intact();
}

TEST_CASE("transfers: q_from_parts with a scheme that does not fit the shape onto each device",
          "[transfers]") {
  World w(CATALOGUE_MODES);
  const int dev = GENERATE(0, 1);
  auto p = w.get("q4", dev).to_parts();
  p.shape = Shape{256};
  p.scheme = p.scheme.per_axis(1);
  REQUIRE_RAISES(w.r.q_from_parts(p, CpuDevice{dev}), QuantError,
                 "over shape [256]: axis 1 is out of range for rank 1");
  w.check_intact();
}

TEST_CASE("transfers: moving a tensor whose producing op failed", "[transfers]") {
  const auto mode = CATALOGUE_MODES;
  World w(mode);
  {
    auto zero = w.r.zeros({4}, DType::i32, CpuDevice{0});
    if (mode == Execution::Inline) {
      // Inline, the division throws at the call: there is no failed tensor to move.
      REQUIRE_RAISES(w.get("i32") / zero, ferry::ValueError, "div: integer division by zero (i32)");
    } else {
      auto bad = w.get("i32") / zero;
      auto moved = bad.to(CpuDevice{1});  // accepted: the failure is not known yet
      REQUIRE_RAISES(moved.to_data(), ferry::OpFailed, "op 'div' on device cpu:0 failed");
      REQUIRE_RAISES(w.r.sync(CpuDevice{0}), ferry::ValueError,
                     "div: integer division by zero (i32)");
      REQUIRE_RAISES(w.r.sync(CpuDevice{1}), ferry::OpFailed, "op 'div' on device cpu:0 failed");
      REQUIRE_NOTHROW(w.r.sync());
      // The failure travels on: a move back fails the same way.
      REQUIRE_RAISES(moved.to(CpuDevice{0}).to_data(), ferry::OpFailed,
                     "op 'div' on device cpu:0 failed");
      REQUIRE_RAISES(w.r.sync(), ferry::OpFailed, "op 'div' on device cpu:0 failed");
    }
  }
  w.check_intact();
}

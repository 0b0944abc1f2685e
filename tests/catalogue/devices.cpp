// Bad-input catalogue, devices: devices the router does not have, operands on different
// devices or of different routers, routers built over bad device lists.
#include "catalogue/common.hpp"

namespace devices {
using namespace catalogue;
using ferry::DeviceError;
using ferry::Range;
}  // namespace devices

using namespace devices;

TEST_CASE("devices: from_data to cpu:7 of a two-device router", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.from_vector(kF32, {2, 3}, CpuDevice{7}), DeviceError,
                 "from_data: device cpu:7 is not one of this router's devices [cpu:0, cpu:1]");
  w.check_intact();
}

TEST_CASE("devices: zeros on cpu:-1", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.zeros({2}, DType::f32, CpuDevice{-1}), DeviceError,
                 "zeros: device cpu:-1 is not one of this router's devices");
  w.check_intact();
}

TEST_CASE("devices: random_normal on cpu:2", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.random_normal({2}, 1, CpuDevice{2}), DeviceError,
                 "random: device cpu:2 is not one of this router's devices");
  w.check_intact();
}

TEST_CASE("devices: sync, stats and with_interpreter of cpu:9", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.sync(CpuDevice{9}), DeviceError,
                 "sync: device cpu:9 is not one of this router's devices");
  REQUIRE_RAISES(w.r.stats(CpuDevice{9}), DeviceError,
                 "stats: device cpu:9 is not one of this router's devices");
  REQUIRE_RAISES(w.r.with_interpreter(CpuDevice{9}, [](auto&) { return 0; }), DeviceError,
                 "with_interpreter: device cpu:9 is not one of this router's devices");
  w.check_intact();
}

TEST_CASE("devices: add of tensors on cpu:0 and cpu:1", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("f32", 0) + w.get("f32", 1), DeviceError,
                 "add: operands are on different devices (cpu:0 and cpu:1); move one with "
                 ".to(device) first");
  w.check_intact();
}

TEST_CASE("devices: matmul of tensors on cpu:1 and cpu:0", "[devices]") {
  World w(CATALOGUE_MODES);
  {
    auto b = w.r.zeros({3, 2}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(matmul(w.get("f32", 1), b), DeviceError,
                   "matmul: operands are on different devices (cpu:1 and cpu:0)");
  }
  w.check_intact();
}

TEST_CASE("devices: where with its mask on another device", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(where(w.get("bool", 1), w.get("f64", 0), w.get("f64", 0)), DeviceError,
                 "where: operands are on different devices (cpu:1 and cpu:0)");
  w.check_intact();
}

TEST_CASE("devices: cat of tensors on two devices", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(cat(std::vector<T>{w.get("f32", 0), w.get("f32", 1)}, 0), DeviceError,
                 "cat: operands are on different devices (cpu:0 and cpu:1)");
  w.check_intact();
}

TEST_CASE("devices: gather with its index on another device", "[devices]") {
  World w(CATALOGUE_MODES);
  {
    auto idx = w.r.zeros({1, 3}, DType::i64, CpuDevice{1});
    REQUIRE_RAISES(gather(w.get("f32", 0), 0, idx), DeviceError,
                   "gather: operands are on different devices (cpu:0 and cpu:1)");
  }
  w.check_intact();
}

TEST_CASE("devices: slice_assign of a value on another device", "[devices]") {
  World w(CATALOGUE_MODES);
  {
    auto v = w.r.zeros({1, 3}, DType::f32, CpuDevice{1});
    REQUIRE_RAISES(slice_assign(w.get("f32", 0), {Range{0, 1}}, v), DeviceError,
                   "slice_assign: operands are on different devices (cpu:0 and cpu:1)");
  }
  w.check_intact();
}

TEST_CASE("devices: add of tensors from two routers on the same device", "[devices]") {
  const auto mode = CATALOGUE_MODES;
  World w(mode);
  {
    Router<EigenCpu> other(EigenCpu(2), {.execution = mode});
    // Same device index, same shape, same dtype, and (both routers count from 1) an id that the
    // first router also uses: without the check this silently adds two of w's own tensors.
    auto theirs = other.from_vector(kF32, {2, 3}, CpuDevice{0});
    REQUIRE_RAISES(w.get("f32") + theirs, DeviceError, "add: operands belong to different routers");
    REQUIRE_RAISES(cat(std::vector<T>{theirs, w.get("f32")}, 0), DeviceError,
                   "cat: operands belong to different routers");
    REQUIRE(theirs.to_data().to_vector<float>() == kF32);
  }
  w.check_intact();
}

TEST_CASE("devices: a router over no devices", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(Router<EigenCpu>(w.backend, std::vector<CpuDevice>{}), DeviceError,
                 "a router needs at least one device (backend 'eigen-cpu')");
  w.check_intact();
}

TEST_CASE("devices: a router listing cpu:0 twice", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(Router<EigenCpu>(w.backend, std::vector<CpuDevice>{CpuDevice{0}, CpuDevice{0}}),
                 DeviceError, "device cpu:0 is listed twice");
  w.check_intact();
}

TEST_CASE("devices: a router over cpu:5 of a two-device backend", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(Router<EigenCpu>(w.backend, std::vector<CpuDevice>{CpuDevice{0}, CpuDevice{5}}),
                 DeviceError,
                 "device cpu:5 is not a device of backend 'eigen-cpu' (it has [cpu:0, cpu:1])");
  w.check_intact();
}

TEST_CASE("devices: an EigenCpu backend of 0 devices", "[devices]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(EigenCpu(0), ferry::ValueError, "eigen-cpu: needs at least one device, got 0");
  w.check_intact();
}

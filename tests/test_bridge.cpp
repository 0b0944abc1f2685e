// The bridge: a router over two backends of different types (EigenCpu and mini, whose storage
// is vector<double>) moves Float/Int/Bool through host data and Quantized through
// QuantizedParts, bit-exact, and runs each op on the backend that owns its operands.
#include <catch2/catch.hpp>
#include <ferry/backends/multi.hpp>

#include "matchers.hpp"
#include "mini_backend.hpp"

using ferry_test::Says;
using Both = ferry::Multi<ferry::EigenCpu, mini::Backend>;
using ferry::CpuDevice;
using ferry::DType;
using namespace ferry::quant;

static_assert(ferry::Backend<Both>);

namespace {
const Both::Device cpu0{CpuDevice{0}}, cpu1{CpuDevice{1}}, mini0{mini::Device{0}};
}

TEST_CASE("the bridge lists every member's devices and prints them") {
  ferry::Router<Both> r(Both(ferry::EigenCpu(2), mini::Backend{}));
  REQUIRE(r.devices().size() == 4);
  REQUIRE(fmt::format("{}", r.devices()[1]) == "cpu:1");
  REQUIRE(fmt::format("{}", r.devices()[2]) == "mini:0");
}

TEST_CASE("plain tensors cross between backends through host data") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  ferry::Router<Both> r(Both(ferry::EigenCpu(2), mini::Backend{}), {.execution = mode});
  auto f = r.from_vector(std::vector<float>{1.5f, -2.25f, 3.0f}, {3}, cpu0);
  auto i = r.from_vector(std::vector<std::int64_t>{-7, 0, 1LL << 40}, {3}, cpu0);
  auto b = f > 0.0f;
  auto f_m = f.to(mini0);
  auto i_m = i.to(mini0);
  auto b_m = b.to(mini0);
  REQUIRE(f_m.to_data().to_vector<float>() == std::vector<float>{1.5f, -2.25f, 3.0f});
  REQUIRE(i_m.to_data().to_vector<std::int64_t>() == std::vector<std::int64_t>{-7, 0, 1LL << 40});
  REQUIRE(b_m.dtype() == DType::boolean);
  REQUIRE(b_m.to_data().to_vector<int>() == std::vector<int>{1, 0, 1});
  // Each side runs its own kernels: mini's add, EigenCpu's mul, and back again.
  auto sum_m = f_m + f_m;
  auto back = (sum_m.to(cpu1) * 2.0f).to(cpu0);
  REQUIRE(back.to_data().to_vector<float>() == std::vector<float>{6.0f, -9.0f, 12.0f});
  r.sync();
  REQUIRE(r.stats(mini0).transfers_in == 3);
}

TEST_CASE("every dtype crosses the bridge byte for byte; u64 is refused by mini at the call") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  ferry::Router<Both> r(Both(ferry::EigenCpu(2), mini::Backend{}), {.execution = mode});
  const std::vector<double> v{0.0, -0.0, 1.0, -2.5, 100.0, 3e-5, 65504.0, -7.0};
  for (DType d : ferry::kPlainDTypes) {
    INFO("dtype " << d);
    const auto src = ferry::visit_dtype(d, [&]<class T>(T) {
      if constexpr (std::is_same_v<T, bool>) {
        std::vector<bool> b;
        for (double x : v) b.push_back(x != 0.0);
        return ferry::TensorData::from(b);
      } else {
        std::vector<T> t;
        for (double x : v) t.push_back(ferry::detail::convert<T>(x));
        return ferry::TensorData::from(t);
      }
    });
    auto x = r.from_data(src, cpu0);
    if (d == DType::u64) {
      REQUIRE_THROWS_MATCHES(x.to(mini0), ferry::Unsupported,
                             Says("to: backend 'mini' does not hold u64 tensors (device mini:0)"));
      continue;
    }
    auto there = x.to(mini0);
    REQUIRE(there.dtype() == d);
    const auto back = there.to(cpu1).to_data();
    REQUIRE(back.dtype() == d);
    REQUIRE(std::equal(back.bytes().begin(), back.bytes().end(), src.bytes().begin(),
                       src.bytes().end()));
    const auto on_mini = there.to_data();
    REQUIRE(std::equal(on_mini.bytes().begin(), on_mini.bytes().end(), src.bytes().begin(),
                       src.bytes().end()));
  }
}

TEST_CASE("quantized tensors cross between backends bit-exact, as their parts") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  auto scheme = GENERATE(
      Scheme::of(ValueType::i4).affine().per_block({32}).packed_u8().scales(ScaleType::f16),
      Scheme::of(ValueType::u8).affine().per_axis(0),
      Scheme::of(ValueType::i2).per_block({2, 8}).packed_u32().scales(ScaleType::bf16));
  ferry::Router<Both> r(Both(ferry::EigenCpu(2), mini::Backend{}), {.execution = mode});
  auto x = r.random_normal({8, 64}, 11, cpu0);
  auto q = ferry::quantize_dynamic(x, scheme);
  const auto parts = q.to_parts();
  auto there = q.to(mini0);
  REQUIRE(there.to_parts() == parts);  // byte for byte
  auto and_back = there.to(cpu1).to(cpu0);
  REQUIRE(and_back.to_parts() == parts);
  // Dequantizing on either side gives the same numbers.
  REQUIRE(ferry::dequantize(there).to_data() == ferry::dequantize(and_back).to_data());
  r.sync();
  REQUIRE(r.stats(mini0).bytes_in == parts.nbytes());
  // linear(x, q [8, 64]) on the EigenCpu member runs its fused q_linear; the mini member has no
  // matmul to fall back on.
  auto xs = r.random_normal({3, 64}, 12, cpu0);
  const auto y = ferry::linear(xs, and_back).to_data().to_vector<float>();
  const auto want =
      ferry::matmul(xs, ferry::swap_dims(ferry::dequantize(q), 0, 1)).to_data().to_vector<float>();
  REQUIRE(y.size() == 3 * 8);
  for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == Approx(want[i]).margin(1e-4));
  REQUIRE_THROWS(ferry::linear(xs.to(mini0), there).to_data());
}

TEST_CASE("an op a member backend lacks names that member") {
  ferry::Router<Both> r(Both(ferry::EigenCpu(1), mini::Backend{}),
                        {.execution = ferry::Execution::Inline});
  auto m = r.from_vector(std::vector<float>{1, 2}, {2}, mini0);
  REQUIRE_THROWS_MATCHES(m * m, ferry::Unsupported,
                         Says("backend 'mini' does not implement 'mul'"));
  auto c = r.from_vector(std::vector<float>{1, 2}, {2}, cpu0);
  REQUIRE((c * c).to_data().to_vector<float>() == std::vector<float>{1, 4});
  REQUIRE_THROWS_MATCHES(c + m, ferry::DeviceError, Says("different devices (cpu:0 and mini:0)"));
}

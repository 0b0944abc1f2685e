// One router over two backends of different types: ferry::Multi<EigenCpu, host::Backend>.
// Plain tensors cross the bridge as host data; quantized ones as their QuantizedParts (packed
// data, scales, offsets), copied byte for byte and never dequantized on the way.
#include <fmt/ranges.h>

#include <ferry/backends/multi.hpp>
#include <ferry/ferry.hpp>
#include <ferry/format.hpp>
#include <memory>
#include <vector>

// A second backend, as small as the concept allows plus `add`: tensors stay TensorData.
namespace host {
struct Device {
  int index = 0;
  friend bool operator==(Device, Device) = default;
};
using Buf = std::shared_ptr<const ferry::TensorData>;
struct Backend {
  using Device = host::Device;
  using FloatHandle = Buf;
  using IntHandle = Buf;
  using BoolHandle = Buf;
  using QuantizedHandle = std::shared_ptr<const ferry::quant::QuantizedParts>;
  static constexpr std::string_view name() { return "host"; }
  std::vector<Device> devices() const { return {{0}}; }

  static Buf keep(ferry::TensorData d) {
    return std::make_shared<const ferry::TensorData>(std::move(d));
  }
  Buf float_from_data(ferry::TensorData d, const Device&) { return keep(std::move(d)); }
  Buf int_from_data(ferry::TensorData d, const Device&) { return keep(std::move(d)); }
  Buf bool_from_data(ferry::TensorData d, const Device&) { return keep(std::move(d)); }
  ferry::TensorData float_into_data(Buf b) { return *b; }
  ferry::TensorData int_into_data(Buf b) { return *b; }
  ferry::TensorData bool_into_data(Buf b) { return *b; }
  Buf float_to_device(Buf b, const Device&) { return b; }  // one device: nothing to copy
  Buf int_to_device(Buf b, const Device&) { return b; }
  Buf bool_to_device(Buf b, const Device&) { return b; }
  QuantizedHandle q_from_parts(ferry::quant::QuantizedParts p, const Device&) {
    return std::make_shared<const ferry::quant::QuantizedParts>(std::move(p));
  }
  ferry::quant::QuantizedParts q_into_parts(QuantizedHandle q) { return *q; }

  Buf add(Buf a, Buf b) {  // same-shape f32
    std::vector<float> out = a->to_vector<float>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += b->values<float>()[i];
    return keep(ferry::TensorData::from(out, a->shape()));
  }
};
}  // namespace host

template <>
struct fmt::formatter<host::Device> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(host::Device d, Ctx& ctx) const {
    return fmt::format_to(ctx.out(), "host:{}", d.index);
  }
};

using Both = ferry::Multi<ferry::EigenCpu, host::Backend>;
namespace q = ferry::quant;

int main() {
  ferry::Router<Both> router(Both(ferry::EigenCpu(2), host::Backend{}));
  const Both::Device cpu0{ferry::CpuDevice{0}}, cpu1{ferry::CpuDevice{1}}, host0{host::Device{0}};
  fmt::print("devices: {}\n\n", fmt::join(router.devices(), ", "));

  // Plain tensors: EigenCpu multiplies, the host backend adds, the result comes back.
  auto x = router.from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}, cpu0);
  auto on_host = (x * 10.0f).to(host0);
  auto back = (on_host + on_host).to(cpu1);
  fmt::print("(x * 10 on cpu:0) + itself on host:0, back on cpu:1:\n{}\n\n", back);

  // Quantized tensors: the same bytes on every side of the bridge.
  const std::vector<q::Scheme> schemes{
      q::Scheme::of(q::ValueType::i4).per_block({32}).packed_u8().scales(q::ScaleType::f16),
      q::Scheme::of(q::ValueType::u8).affine().per_axis(0),
      q::Scheme::of(q::ValueType::i2)
          .affine()
          .per_block({2, 16})
          .packed_u32()
          .scales(q::ScaleType::bf16)};
  auto w = router.random_normal({8, 64}, 42, cpu0);
  bool all_equal = true;
  for (const auto& s : schemes) {
    auto wq = ferry::quantize_dynamic(w, s);
    const auto before = wq.to_parts();
    auto there = wq.to(host0);   // EigenCpu -> host: parts copied as they are
    auto home = there.to(cpu1);  // host -> EigenCpu, another device
    const bool same = there.to_parts() == before && home.to_parts() == before;
    all_equal = all_equal && same;
    fmt::print("{}\n  cpu:0 -> host:0 -> cpu:1: parts {} byte for byte ({} bytes)\n", before,
               same ? "equal" : "DIFFER", before.nbytes());
    // The host backend has no dequantize kernel: Ferry dequantizes its parts on the host.
    const bool values = ferry::dequantize(there).to_data() == ferry::dequantize(wq).to_data();
    all_equal = all_equal && values;
    fmt::print("  dequantized on host:0 == on cpu:0: {}\n", values);
  }
  router.sync();
  fmt::print("\nhost:0 received {} tensors\n", router.stats(host0).transfers_in);
  fmt::print("{}\n", all_equal ? "all parts equal across the bridge" : "MISMATCH");
  return all_equal ? 0 : 1;
}

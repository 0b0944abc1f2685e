// A backend of your own in a few dozen lines: the Backend concept's required part (a Device,
// four handle types, data in/out and device transfer per kind) plus two kernels, add and
// matmul. The router drives it like any other backend; quantized ops it has no kernel for run
// through QuantizedParts on the host; an op it lacks is a clear ferry::Unsupported error.
#include <fmt/ranges.h>

#include <ferry/eigen.hpp>
#include <ferry/ferry.hpp>
#include <ferry/format.hpp>
#include <memory>
#include <vector>

namespace toy {

struct Device {
  int index = 0;
  friend bool operator==(Device, Device) = default;
};

/// Host memory, shared and immutable: copying a handle (a shared operand) costs nothing.
using Buf = std::shared_ptr<const ferry::TensorData>;

struct Backend {
  using Device = toy::Device;
  using FloatHandle = Buf;
  using IntHandle = Buf;
  using BoolHandle = Buf;
  using QuantizedHandle = ferry::quant::QuantizedParts;

  static constexpr std::string_view name() { return "toy"; }
  std::vector<Device> devices() const { return {{0}, {1}}; }

  // All three plain kinds keep their TensorData as it came; a move to another device is a copy.
  static Buf keep(ferry::TensorData d) {
    return std::make_shared<const ferry::TensorData>(std::move(d));
  }
  Buf float_from_data(ferry::TensorData d, const Device&) { return keep(std::move(d)); }
  Buf int_from_data(ferry::TensorData d, const Device&) { return keep(std::move(d)); }
  Buf bool_from_data(ferry::TensorData d, const Device&) { return keep(std::move(d)); }
  ferry::TensorData float_into_data(Buf b) { return *b; }
  ferry::TensorData int_into_data(Buf b) { return *b; }
  ferry::TensorData bool_into_data(Buf b) { return *b; }
  Buf float_to_device(Buf b, const Device&) { return keep(*b); }
  Buf int_to_device(Buf b, const Device&) { return keep(*b); }
  Buf bool_to_device(Buf b, const Device&) { return keep(*b); }
  QuantizedHandle q_from_parts(ferry::quant::QuantizedParts p, const Device&) { return p; }
  ferry::quant::QuantizedParts q_into_parts(QuantizedHandle q) { return q; }

  // Two kernels, f32 only. The router has already checked shapes and dtypes of the call.
  Buf add(Buf a, Buf b) {
    if (a->shape() != b->shape() || a->dtype() != ferry::DType::f32)
      throw ferry::Unsupported("[toy] add: only f32 tensors of one shape");
    std::vector<float> out(a->values<float>().begin(), a->values<float>().end());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += b->values<float>()[i];
    return keep(ferry::TensorData::from(out, a->shape()));
  }
  Buf matmul(Buf a, Buf b) {
    if (a->shape().rank() != 2 || b->shape().rank() != 2 || a->dtype() != ferry::DType::f32)
      throw ferry::Unsupported("[toy] matmul: only 2-D f32 tensors");
    ferry::TensorData::RowMajor<float> c = a->matrix<float>() * b->matrix<float>();
    const std::vector<float> out(c.data(), c.data() + c.size());
    return keep(ferry::TensorData::from(out, {c.rows(), c.cols()}));
  }
};

}  // namespace toy

template <>
struct fmt::formatter<toy::Device> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(toy::Device d, Ctx& ctx) const {
    return fmt::format_to(ctx.out(), "toy:{}", d.index);
  }
};

static_assert(ferry::Backend<toy::Backend>);

int main() {
  ferry::Router<toy::Backend> router(toy::Backend{});
  const toy::Device d0{0}, d1{1};

  auto a = router.from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}, d0);
  auto b = router.from_vector(std::vector<float>{0.5f, 0, 0, 2}, {2, 2}, d0);
  auto c = ferry::matmul(a + a, b).to(d1);  // toy's add and matmul, then a move to toy:1
  fmt::print("(a + a) @ b on {}:\n{}\n\n", c.device(), c);

  // Quantized ops need no kernel: quantize, transfer and the quantized matmul run through
  // QuantizedParts on the host, then call the backend's own matmul.
  auto w = ferry::quantize_dynamic(b, ferry::quant::Scheme::of(ferry::quant::ValueType::i8));
  fmt::print("a @ int8(b):\n{}\n\n", ferry::matmul(a, w.to(d1).to(d0)));

  // An op the backend lacks fails with the op and the backend named. In async mode (the
  // default) the error surfaces at the next sync or read of that device.
  try {
    [[maybe_unused]] auto sq = a * a;
    router.sync();
  } catch (const ferry::Unsupported& e) {
    fmt::print("a * a: ferry::Unsupported: {}\n", e.what());
  }
  // The device goes on working after an error.
  fmt::print("a + b still works: {}\n", (a + b).to_data().to_vector<float>());
  return 0;
}

// A deliberately small backend for tests: only what the Backend concept requires, plus `add`.
// Its storage is a vector<double> per tensor (unlike EigenCpu's typed, aligned buffers), which
// also makes it the "other" backend in bridge tests.
#pragma once

#include <array>
#include <ferry/backends/multi.hpp>
#include <ferry/ferry.hpp>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace mini {

struct Device {
  int index = 0;
  friend bool operator==(Device, Device) = default;
};

/// Every plain tensor is a shared vector<double> plus shape and dtype.
struct Buf {
  std::shared_ptr<std::vector<double>> v;
  ferry::Shape shape;
  ferry::DType dtype = ferry::DType::f32;
};

struct Backend {
  using Device = mini::Device;
  using FloatHandle = Buf;
  using IntHandle = Buf;
  using BoolHandle = Buf;
  using QuantizedHandle = std::shared_ptr<const ferry::quant::QuantizedParts>;

  static constexpr std::string_view name() { return "mini"; }
  /// The dtypes its doubles hold: all but u64 (i64 is exact to 2^53, as far as the tests go),
  /// so that tests see a router refuse a dtype a backend does not declare.
  static constexpr std::array<ferry::DType, 12> dtypes{
      ferry::DType::f32, ferry::DType::f64, ferry::DType::f16, ferry::DType::bf16,
      ferry::DType::i8,  ferry::DType::i16, ferry::DType::i32, ferry::DType::i64,
      ferry::DType::u8,  ferry::DType::u16, ferry::DType::u32, ferry::DType::boolean};
  std::vector<Device> devices() const { return {{0}, {1}}; }

  static Buf in(ferry::TensorData d) {
    return {std::make_shared<std::vector<double>>(d.to_vector<double>()), d.shape(), d.dtype()};
  }
  static ferry::TensorData out(const Buf& b) {
    return ferry::visit_dtype(b.dtype, [&]<class T>(T) {
      if constexpr (std::is_same_v<T, bool>) {
        std::vector<bool> v(b.v->size());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = (*b.v)[i] != 0.0;
        return ferry::TensorData::from(v, b.shape);
      } else {
        std::vector<T> v(b.v->size());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = ferry::detail::convert<T>((*b.v)[i]);
        return ferry::TensorData::from(std::span<const T>(v), b.shape);
      }
    });
  }
  Buf float_from_data(ferry::TensorData d, const Device&) { return in(std::move(d)); }
  Buf int_from_data(ferry::TensorData d, const Device&) { return in(std::move(d)); }
  Buf bool_from_data(ferry::TensorData d, const Device&) { return in(std::move(d)); }
  ferry::TensorData float_into_data(Buf b) { return out(b); }
  ferry::TensorData int_into_data(Buf b) { return out(b); }
  ferry::TensorData bool_into_data(Buf b) { return out(b); }
  Buf float_to_device(Buf b, const Device&) {
    return {std::make_shared<std::vector<double>>(*b.v), b.shape, b.dtype};
  }
  Buf int_to_device(Buf b, const Device& d) { return float_to_device(std::move(b), d); }
  Buf bool_to_device(Buf b, const Device& d) { return float_to_device(std::move(b), d); }
  QuantizedHandle q_from_parts(ferry::quant::QuantizedParts p, const Device&) {
    return std::make_shared<const ferry::quant::QuantizedParts>(std::move(p));
  }
  ferry::quant::QuantizedParts q_into_parts(QuantizedHandle q) { return *q; }

  // The one optional kernel: same-shape add.
  Buf add(Buf a, Buf b) {
    if (a.shape != b.shape)
      throw ferry::Unsupported("[ferry.unsupported] mini add: broadcasting is not implemented");
    Buf o{std::make_shared<std::vector<double>>(*a.v), a.shape, a.dtype};
    for (std::size_t i = 0; i < o.v->size(); ++i) (*o.v)[i] += (*b.v)[i];
    return o;
  }
};

/// mini with the faults of a careless kernel, decided by shape so that any thread and either
/// execution mode sees the same: `add` of shape [13] throws std::runtime_error, of shape [7]
/// the int 7 (not a std::exception at all); moving a [13] tensor throws std::runtime_error.
/// Every other shape works as mini does.
struct Faulty : Backend {
  static constexpr std::string_view name() { return "faulty"; }
  Buf add(Buf a, Buf b) {
    if (a.shape == ferry::Shape{13}) throw std::runtime_error("mini: the adder overheated");
    if (a.shape == ferry::Shape{7}) throw 7;
    return Backend::add(std::move(a), std::move(b));
  }
  Buf float_to_device(Buf b, const Device& d) {
    if (b.shape == ferry::Shape{13}) throw std::runtime_error("mini: the link is down");
    return Backend::float_to_device(std::move(b), d);
  }
};

/// mini that cannot be copied, as a backend owning a GPU context or a connection: it holds its
/// "context" through a std::unique_ptr. A router must move it in.
struct MoveOnly : Backend {
  std::unique_ptr<int> context = std::make_unique<int>(42);
  MoveOnly() = default;
  MoveOnly(const MoveOnly&) = delete;
  MoveOnly& operator=(const MoveOnly&) = delete;
  MoveOnly(MoveOnly&&) noexcept = default;
  MoveOnly& operator=(MoveOnly&&) noexcept = default;
  ~MoveOnly() = default;
  static constexpr std::string_view name() { return "move-only"; }
};

}  // namespace mini

template <>
struct fmt::formatter<mini::Device> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(mini::Device d, Ctx& ctx) const {
    return fmt::format_to(ctx.out(), "mini:{}", d.index);
  }
};

// Each router runtime the tests use over these backends is compiled once, in tests/mini_*.cpp
// (FERRY_INSTANTIATE_BACKEND), not in every test file that makes such a router: the pattern
// router.hpp documents for a user's backend, and ~20 s of compile time per test file saved.
FERRY_EXTERN_BACKEND(mini::Backend);
FERRY_EXTERN_BACKEND(mini::Faulty);
FERRY_EXTERN_BACKEND(mini::MoveOnly);
FERRY_EXTERN_BACKEND(ferry::Multi<ferry::EigenCpu, mini::Backend>);
FERRY_EXTERN_BACKEND(ferry::Multi<ferry::EigenCpu, mini::Faulty>);
FERRY_EXTERN_BACKEND(ferry::Multi<ferry::EigenCpu, mini::MoveOnly>);

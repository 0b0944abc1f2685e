// Ferry: Tensor<B>, a cheap value naming a tensor that lives on one of a router's devices.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <memory>
#include <optional>
#include <ostream>
#include <utility>
#include <variant>

#include "ferry/data.hpp"
#include "ferry/detail/core.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/ir.hpp"
#include "ferry/shape.hpp"

namespace ferry {

template <Backend B>
class Tensor;

namespace detail {

/// What all copies of one Tensor share. The last copy to go sends a Drop, unless an op took
/// the handle read-write (then the registry entry is already gone).
template <Backend B>
struct TensorState {
  std::shared_ptr<RouterCore<B>> core;
  TensorId id = 0;
  Shape shape;
  DType dtype = DType::f32;
  std::size_t device = 0;
  std::shared_ptr<const quant::Scheme> scheme;
  bool consumed = false;

  TensorState(std::shared_ptr<RouterCore<B>> c, TensorId i, Shape s, DType d, std::size_t dev,
              std::shared_ptr<const quant::Scheme> sch = nullptr)
      : core(std::move(c)),
        id(i),
        shape(std::move(s)),
        dtype(d),
        device(dev),
        scheme(std::move(sch)) {}
  TensorState(const TensorState&) = delete;
  TensorState& operator=(const TensorState&) = delete;
  ~TensorState() {
    // The state is going away: its shape and scheme move into the Drop (no copies on this path).
    if (!consumed)
      core->drop(device, id, [this] {
        return TensorRef{id, std::move(shape), dtype, Access::ReadWrite, std::move(scheme)};
      });
  }
};

template <Backend B>
struct TensorAccess;

}  // namespace detail

/// @brief A tensor on one of a router's devices: id, shape, dtype, device and a shared count.
///
/// @code
///   ferry::Router<ferry::EigenCpu> router(ferry::EigenCpu(2));
///   auto a = router.from_data(ferry::TensorData::from(std::vector<float>{1, 2, 3}), {0});
///   auto b = a + 1.0f;                         // a is shared: read-only, unchanged
///   auto c = exp(std::move(b));                // b held once: its buffer may be reused
///   auto d = c.to(ferry::CpuDevice{1});        // a real copy into device 1's memory
///   std::vector<float> v = d.to_data().to_vector<float>();
/// @endcode
/// Copies share one count; moving a Tensor sends no op. Ops take tensors by value: pass an
/// lvalue and it is shared (read-only); pass `std::move(t)` of the only copy and the op may
/// reuse its memory. A moved-from Tensor throws HandleError when used. Safe to copy and use
/// from several threads (the count is atomic).
template <Backend B>
class Tensor {
 public:
  using Device = typename B::Device;

  Tensor() = default;

  [[nodiscard]] bool valid() const noexcept { return s_ != nullptr; }
  [[nodiscard]] TensorId id() const { return state("id").id; }
  [[nodiscard]] const Shape& shape() const { return state("shape").shape; }
  [[nodiscard]] DType dtype() const { return state("dtype").dtype; }
  [[nodiscard]] Kind kind() const { return kind_of(dtype()); }
  [[nodiscard]] bool is_quantized() const { return dtype() == DType::quantized; }
  [[nodiscard]] std::size_t rank() const { return shape().rank(); }
  [[nodiscard]] std::int64_t numel() const { return shape().numel(); }
  /// The scheme of a quantized tensor; throws DTypeError for a plain one.
  [[nodiscard]] const quant::Scheme& scheme() const {
    const auto& st = state("scheme");
    if (!st.scheme)
      detail::raise<DTypeError>("dtype", "scheme(): tensor {} is {}, not quantized", st.id,
                                st.dtype);
    return *st.scheme;
  }
  [[nodiscard]] const Device& device() const {
    const auto& st = state("device");
    return st.core->device(st.device);
  }
  /// Number of Tensor copies sharing this tensor.
  [[nodiscard]] long use_count() const noexcept { return s_.use_count(); }

  /// Moves (a copy of) this tensor to `target`. A quantized tensor moves as its packed data and
  /// scale/offset buffers, bit-exact. Moving to its own device returns the same tensor.
  [[nodiscard]] Tensor to(const Device& target) const& { return Tensor(*this).to_impl(target); }
  [[nodiscard]] Tensor to(const Device& target) && { return to_impl(target); }

  /// The contents on the host, once the device has produced them (waits in async mode).
  [[nodiscard]] TensorData to_data() const { return Tensor(*this).data_impl("to_data"); }
  [[nodiscard]] TensorData into_data() && { return data_impl("into_data"); }
  /// The packed data, scales and offsets of a quantized tensor, byte for byte.
  [[nodiscard]] quant::QuantizedParts to_parts() const {
    auto r = Tensor(*this).read_impl("to_parts");
    if (auto* p = std::get_if<quant::QuantizedParts>(&r)) return std::move(*p);
    detail::raise<DTypeError>("dtype", "to_parts: tensor {} is {}, not quantized", id(), dtype());
  }

 private:
  friend struct detail::TensorAccess<B>;
  explicit Tensor(std::shared_ptr<detail::TensorState<B>> s) : s_(std::move(s)) {}

  const detail::TensorState<B>& state(const char* what) const {
    if (!s_)
      detail::raise<HandleError>("tensor.moved",
                                 "{}: this Tensor was moved from (or default "
                                 "constructed) and names no tensor",
                                 what);
    return *s_;
  }

  TensorData data_impl(const char* what) {
    auto r = read_impl(what);
    if (auto* d = std::get_if<TensorData>(&r)) return std::move(*d);
    detail::raise<DTypeError>("dtype",
                              "{}: tensor is quantized ({}); use to_parts() for its packed "
                              "form or dequantize() for values",
                              what, std::get<quant::QuantizedParts>(r).scheme);
  }

  // Reads with the same ownership rule as every op: the only copy is read read-write.
  ReadResult read_impl(const char* what) {
    const auto& st = state(what);
    auto core = st.core;
    const std::size_t dev = st.device;
    const TensorRef ref = detail::TensorAccess<B>::ref(*this);
    auto r = core->read(dev, ref);
    detail::TensorAccess<B>::release(*this, ref.access);
    return r;
  }

  Tensor to_impl(const Device& target) {
    const auto& st = state("to");
    const std::size_t to = st.core->index_of(target, "to");
    if (to == st.device) return std::move(*this);
    detail::check_holds(*st.core, to, "to", st.dtype);
    auto core = st.core;
    op::ToDevice o;
    o.in = detail::TensorAccess<B>::ref(*this);
    o.from = st.device;
    o.to = to;
    o.out = TensorRef{core->new_id(), st.shape, st.dtype, Access::ReadWrite, st.scheme};
    auto out =
        std::make_shared<detail::TensorState<B>>(core, o.out.id, st.shape, st.dtype, to, st.scheme);
    const TensorRef in = o.in;
    core->move(std::move(o));
    detail::TensorAccess<B>::release(*this, in.access);
    return Tensor(std::move(out));
  }

  std::shared_ptr<detail::TensorState<B>> s_;
};

namespace detail {
/// Ferry-internal access to a Tensor's state (ops and the router build refs and results).
template <Backend B>
struct TensorAccess {
  static const TensorState<B>& state(const Tensor<B>& t, const char* op) { return t.state(op); }
  static const std::shared_ptr<RouterCore<B>>& core(const Tensor<B>& t, const char* op) {
    return t.state(op).core;
  }
  /// The ref an op uses for `t`: read-write only when `t` is the last copy.
  static TensorRef ref(const Tensor<B>& t) {
    const auto& s = *t.s_;
    const Access a = t.s_.use_count() == 1 ? Access::ReadWrite : Access::ReadOnly;
    return TensorRef{s.id, s.shape, s.dtype, a, s.scheme};
  }
  /// Call after the op using `t` was submitted without error: when it took `t` read-write the
  /// registry entry is (or will be) gone, so `t` is forgotten without a Drop. If the submit
  /// threw, `t` is left alone and its destructor's Drop frees whatever is left.
  static void release(Tensor<B>& t, Access used) {
    if (used == Access::ReadWrite) t.s_->consumed = true;
    t.s_.reset();
  }
  static Tensor<B> make(std::shared_ptr<RouterCore<B>> core, const TensorRef& out,
                        std::size_t dev) {
    return Tensor<B>(std::make_shared<TensorState<B>>(std::move(core), out.id, out.shape, out.dtype,
                                                      dev, out.scheme));
  }
  /// Lets go of `t` without a Drop: its op was rejected, so no device holds it.
  static void forget(Tensor<B>& t) noexcept { release(t, Access::ReadWrite); }
};
}  // namespace detail

}  // namespace ferry

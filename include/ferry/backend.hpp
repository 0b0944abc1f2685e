// Ferry: the Backend concept — what every backend must provide — and optional-kernel detection.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <concepts>
#include <cstddef>
#include <string_view>
#include <type_traits>

#include "ferry/data.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/quant/parts.hpp"

namespace ferry {

/// @brief What a backend must provide: a Device type, four handle types and, for each kind,
/// data in, data out and a move to another device.
///
/// @code
///   struct MyBackend {
///     using Device = MyDevice;                      // == comparable, printable with fmt
///     using FloatHandle = MyBuf; using IntHandle = MyBuf; using BoolHandle = MyBuf;
///     using QuantizedHandle = ferry::quant::QuantizedParts;
///     static constexpr std::string_view name() { return "mine"; }
///     MyBuf float_from_data(ferry::TensorData, const Device&);
///     ferry::TensorData float_into_data(MyBuf);
///     MyBuf float_to_device(MyBuf, const Device&);
///     // ... the same for int_ and bool_, and q_from_parts / q_into_parts ...
///     MyBuf add(MyBuf, MyBuf);                      // optional kernels: any subset
///   };
/// @endcode
/// Every other kernel is optional and found at compile time by name (`add`, `add_scalar`,
/// `sum`, `matmul`, `reshape`, ... — the list is in docs/backend.md); calling one a backend
/// lacks throws ferry::Unsupported naming the op and the backend. Quantized ops a backend lacks
/// run through QuantizedParts on the host, so they work on every backend.
///
/// Kernels take handles by value: a handle moved in was held once (the kernel may reuse its
/// memory); a copied one is shared and must not be changed. Kernels for different devices may
/// run at the same time on different threads.
template <class B>
concept Backend = requires {
  typename B::Device;
  typename B::FloatHandle;
  typename B::IntHandle;
  typename B::BoolHandle;
  typename B::QuantizedHandle;
  { B::name() } -> std::convertible_to<std::string_view>;
}
&&std::equality_comparable<typename B::Device>&& std::copy_constructible<typename B::FloatHandle>&&
    std::copy_constructible<typename B::IntHandle>&& std::copy_constructible<
        typename B::BoolHandle>&& std::copy_constructible<typename B::QuantizedHandle>&&
        fmt::is_formattable<typename B::Device>::value&& requires(
            B& b, const typename B::Device& d, TensorData data, quant::QuantizedParts parts,
            typename B::FloatHandle f, typename B::IntHandle i, typename B::BoolHandle bo,
            typename B::QuantizedHandle q) {
  { b.float_from_data(std::move(data), d) } -> std::same_as<typename B::FloatHandle>;
  { b.int_from_data(std::move(data), d) } -> std::same_as<typename B::IntHandle>;
  { b.bool_from_data(std::move(data), d) } -> std::same_as<typename B::BoolHandle>;
  { b.float_into_data(std::move(f)) } -> std::same_as<TensorData>;
  { b.int_into_data(std::move(i)) } -> std::same_as<TensorData>;
  { b.bool_into_data(std::move(bo)) } -> std::same_as<TensorData>;
  { b.float_to_device(std::move(f), d) } -> std::same_as<typename B::FloatHandle>;
  { b.int_to_device(std::move(i), d) } -> std::same_as<typename B::IntHandle>;
  { b.bool_to_device(std::move(bo), d) } -> std::same_as<typename B::BoolHandle>;
  { b.q_from_parts(std::move(parts), d) } -> std::same_as<typename B::QuantizedHandle>;
  { b.q_into_parts(std::move(q)) } -> std::same_as<quant::QuantizedParts>;
};

/// The handle type a backend uses for kind K.
template <class B, Kind K>
using handle_t = std::conditional_t<
    K == Kind::Float, typename B::FloatHandle,
    std::conditional_t<
        K == Kind::Int, typename B::IntHandle,
        std::conditional_t<K == Kind::Bool, typename B::BoolHandle, typename B::QuantizedHandle>>>;

/// True when `b.devices()` lists every device the backend accepts, so a router can refuse an
/// unknown one at construction. A backend without devices() cannot say; one whose list is
/// partial (a bridge whose members do not all list theirs) specializes this to false.
template <class B>
inline constexpr bool lists_all_devices = requires(const B& b) {
  b.devices();
};

/// @brief Whether backend `b` holds tensors of dtype `d` on device `dev`.
///
/// A backend whose handles cannot store every dtype declares the ones they can, as any range
/// of DType: `static constexpr std::array<ferry::DType, 3> dtypes{f32, i64, boolean};`. A
/// backend whose devices differ (a bridge) answers per device with a member
/// `bool holds_dtype(const Device&, DType) const`. A backend that declares neither holds all.
/// A Router refuses an op whose result has a dtype its device does not hold (from_data, cast,
/// creation, to(device), every op) with Unsupported at the call, before the backend sees it.
template <class B>
bool holds_dtype(const B& b, const typename B::Device& dev, DType d) {
  if (d == DType::quantized) return true;
  if constexpr (requires { b.holds_dtype(dev, d); }) {
    return b.holds_dtype(dev, d);
  } else if constexpr (requires { B::dtypes; }) {
    for (DType x : B::dtypes)
      if (x == d) return true;
    return false;
  } else {
    return true;
  }
}

namespace detail {

template <class B>
Unsupported unsupported(const char* op) {
  return Unsupported(
      fmt::format("[ferry.unsupported] backend '{}' does not implement '{}'", B::name(), op));
}
/// Calls `f(b)` when the backend has the kernel `f` calls (f is SFINAE-friendly), otherwise
/// throws ferry::Unsupported naming the op and the backend.
template <class Ret, class B, class F>
Ret call_kernel(B& b, const char* op, F&& f) {
  if constexpr (std::is_invocable_v<F&, B&>) {
    return f(b);
  } else {
    throw unsupported<B>(op);
  }
}

}  // namespace detail

/// Calls the backend kernel `name` with the arguments when the backend has one, otherwise throws
/// ferry::Unsupported naming the op and the backend. `Ret` is the handle type the result must be.
#define FERRY_KERNEL(Ret, backend, name, ...)                                                     \
  ::ferry::detail::call_kernel<Ret>(backend, #name,                                               \
                                    [&](auto& ferry_b_) -> decltype(ferry_b_.name(__VA_ARGS__)) { \
                                      return ferry_b_.name(__VA_ARGS__);                          \
                                    })

}  // namespace ferry

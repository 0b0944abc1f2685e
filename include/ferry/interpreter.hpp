// Ferry: Interpreter<B>, which executes ops for one device against its handle registry.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ferry/backend.hpp"
#include "ferry/detail/handoff.hpp"
#include "ferry/detail/quant_host.hpp"
#include "ferry/error.hpp"
#include "ferry/ir.hpp"
#include "ferry/registry.hpp"

namespace ferry {

/// What a Read op delivers: plain data, or the parts of a quantized tensor.
using ReadResult = std::variant<TensorData, quant::QuantizedParts>;
struct ReadSlot {
  detail::Handoff<ReadResult> result;  ///< the reader takes the data, or the error, out
};

/// Per-device counters; `stats(device)` returns a snapshot.
struct DeviceStats {
  std::size_t live_tensors = 0;     ///< handles in the registry
  std::size_t live_bytes = 0;       ///< their bytes as the backend reports them
  std::uint64_t ops = 0;            ///< ops executed on this device (drops and reads included)
  std::uint64_t failed_ops = 0;     ///< ops that threw
  std::uint64_t bytes_in = 0;       ///< bytes that arrived from other devices
  std::uint64_t bytes_out = 0;      ///< bytes sent to other devices
  std::uint64_t transfers_in = 0;   ///< tensors that arrived
  std::uint64_t transfers_out = 0;  ///< tensors sent
  friend bool operator==(const DeviceStats&, const DeviceStats&) = default;
};

namespace detail {
/// Calls f(std::integral_constant<Kind, K>{}) for the kind of a plain dtype.
template <class F>
decltype(auto) with_plain_kind(DType d, F&& f) {
  switch (kind_of(d)) {
    case Kind::Float:
      return f(std::integral_constant<Kind, Kind::Float>{});
    case Kind::Int:
      return f(std::integral_constant<Kind, Kind::Int>{});
    case Kind::Bool:
      return f(std::integral_constant<Kind, Kind::Bool>{});
    case Kind::Quantized:
      break;
  }
  raise<DTypeError>("dtype", "a quantized tensor cannot be used where a plain one is expected");
}
template <class F>
decltype(auto) with_kind(DType d, F&& f) {
  if (d == DType::quantized) return f(std::integral_constant<Kind, Kind::Quantized>{});
  return with_plain_kind(d, std::forward<F>(f));
}
}  // namespace detail

/// @brief Executes ops for one device: takes operand handles from its registry, calls the
/// backend's kernel, registers the result.
///
/// @code
///   Interpreter<EigenCpu> in(backend, CpuDevice{1});
///   in.execute(Op{op::Full{Scalar{1.0f}, out}});
///   in.register_tensor_to_device(42, std::move(handle));   // arrival of a moved tensor
/// @endcode
/// Not thread-safe: one worker (or the caller, in inline mode) drives it. Quantized ops the
/// backend lacks run through QuantizedParts on the host, so they work on every backend.
template <Backend B>
class Interpreter {
 public:
  using Device = typename B::Device;
  using Handle = typename HandleRegistry<B>::Handle;

  Interpreter(B& backend, Device device)
      : b_(backend), device_(std::move(device)), reg_(fmt::format("{}", device_)) {}

  [[nodiscard]] const Device& device() const noexcept { return device_; }
  [[nodiscard]] const HandleRegistry<B>& registry() const noexcept { return reg_; }
  [[nodiscard]] HandleRegistry<B>& registry() noexcept { return reg_; }
  [[nodiscard]] const DeviceStats& stats() const noexcept { return stats_; }

  /// Runs one op. Throws what the op throws, a ferry::Error as it is; std::bad_alloc becomes
  /// OutOfMemory and anything else the backend lets out BackendError (the original nested in
  /// it). The registry stays consistent either way.
  /// (Defined below the class, not inline, so FERRY_EXTERN_BACKEND can keep the kernels it
  /// reaches out of a translation unit.)
  void execute(Op& o);
  /// The same for one op type: what inline mode calls, with no Op variant built.
#define FERRY_DETAIL_EXECUTE(T) void execute(op::T& o);
  FERRY_OP_TYPES(FERRY_DETAIL_EXECUTE)
#undef FERRY_DETAIL_EXECUTE

  /// Frees tensor `id`: what op::Drop does, for a caller that has only the id.
  void drop(TensorId id) noexcept {
    ++stats_.ops;
    reg_.drop(id);
  }

  /// Source half of a move: takes the handle (moved out when held once) and copies it into
  /// `target`'s memory with the backend's transfer for its kind. Counted as one op of this
  /// device, a failed one when it throws (then no transfer and no bytes are counted).
  [[nodiscard]] Handle send(const op::ToDevice& o, const Device& target) {
    ++stats_.ops;
    try {
      return send_counted(o, target);
    } catch (...) {
      ++stats_.failed_ops;
      throw;
    }
  }

  /// Target half of a move, and the entry point for handles made elsewhere: registers `h`
  /// as tensor `id`. Every kind is accepted, Quantized included.
  void register_tensor_to_device(TensorId id, Handle h, const TensorRef* ref = nullptr) {
    const std::size_t n = ref ? bytes_of(h, *ref) : bytes_of(h, TensorRef{});
    reg_.put(id, std::move(h), n);
    stats_.bytes_in += n;
    ++stats_.transfers_in;
  }

  /// Marks the output of a failed op so that its users fail with the original error.
  void mark_failed(TensorId id, std::string why) { reg_.mark_failed(id, std::move(why)); }

 private:
  Handle send_counted(const op::ToDevice& o, const Device& target) {
    Handle h = reg_.take_any(o.in, "to_device");
    const std::size_t n = bytes_of(h, o.in);
    Handle moved = [&]() -> Handle {
      try {
        return copy_to(std::move(h), target);
      } catch (const Error&) {
        throw;
      } catch (const std::bad_alloc&) {
        detail::raise<OutOfMemory>(
            "memory", "to_device: device {} is out of memory receiving {} ({} bytes) from {}",
            target, as_named(o.out), n, device_);
      } catch (...) {
        detail::raise<BackendError>(
            "backend", "to_device: backend '{}' failed moving {} from device {} to {}: {}",
            backend_name(), as_named(o.out), device_, target, detail::current_exception_text());
      }
    }();
    stats_.bytes_out += n;
    ++stats_.transfers_out;
    return moved;
  }

 public:
  /// Bytes of a handle: the backend's `nbytes` when it has one, else what the ref implies.
  [[nodiscard]] std::size_t bytes_of(const Handle& h, const TensorRef& ref) const {
    return std::visit([&](const auto& x) { return bytes_of_one(x, ref); }, h);
  }
  template <class X>
  [[nodiscard]] std::size_t bytes_of_one(const X& x, const TensorRef& ref) const {
    if constexpr (requires { b_.nbytes(x); }) {
      return static_cast<std::size_t>(b_.nbytes(x));
    } else if (ref.scheme) {
      return quant::data_bytes(*ref.scheme, ref.shape.numel()) +
             static_cast<std::size_t>(quant::num_params(*ref.scheme, ref.shape)) *
                 (quant::scale_bytes(ref.scheme->scale_type) +
                  (ref.scheme->mode == quant::Mode::affine ? 1 : 0)) +
             quant::tensor_scale_bytes(*ref.scheme);
    } else {
      return static_cast<std::size_t>(ref.shape.numel()) * dtype_size(ref.dtype);
    }
  }

 private:
  template <Kind K>
  using H = handle_t<B, K>;
  static constexpr auto F = std::integral_constant<Kind, Kind::Float>{};
  static constexpr auto I = std::integral_constant<Kind, Kind::Int>{};
  static constexpr auto Bo = std::integral_constant<Kind, Kind::Bool>{};
  static constexpr auto Q = std::integral_constant<Kind, Kind::Quantized>{};

  template <Kind K>
  H<K> take(const TensorRef& r, const char* op) {
    return reg_.template take<K>(r, op);
  }
  template <Kind K>
  void put(const TensorRef& out, H<K> h) {
    // Counted on the typed handle: visiting a just-built variant trips GCC's
    // -Wmaybe-uninitialized under the sanitizers.
    const std::size_t n = bytes_of_one(h, out);
    reg_.template put<K>(out.id, std::move(h), n);
  }

  // The op bodies, one family a file: interpreter/compute.hpp (creation, element-wise,
  // reductions, scans, sorting, matmul) and interpreter/layout.hpp (layout, indexing,
  // quantized, runtime).
#define FERRY_DETAIL_RUN(T) void run(op::T& o);
  FERRY_OP_TYPES(FERRY_DETAIL_RUN)
#undef FERRY_DETAIL_RUN

  template <class O, class Call>
  void unary_layout(O& o, Call&& call) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K> k) {
      put<K>(o.out, call(k, take<K>(o.in, O::name)));
    });
  }
  // Each uses the backend's kernel when it has one, else the host path through QuantizedParts
  // (detail/quant_host.hpp), so quantized ops work on every backend.
  using QH = H<Kind::Quantized>;
  template <class O, class Kernel, class Host>
  void q_layout(O& o, Kernel&& kernel, Host&& host) {
    put<Kind::Quantized>(o.out, detail::qhost::layout(b_, take<Kind::Quantized>(o.in, O::name),
                                                      device_, kernel, host));
  }

  // The backend's transfer for the kind `h` holds.
  Handle copy_to(Handle h, const Device& target) {
    switch (h.index()) {
      case 0:
        return Handle(std::in_place_index<0>,
                      b_.float_to_device(std::get<0>(std::move(h)), target));
      case 1:
        return Handle(std::in_place_index<1>, b_.int_to_device(std::get<1>(std::move(h)), target));
      case 2:
        return Handle(std::in_place_index<2>, b_.bool_to_device(std::get<2>(std::move(h)), target));
      default:
        return Handle(std::in_place_index<3>,
                      detail::qhost::to_device(b_, std::get<3>(std::move(h)), target));
    }
  }

  // `r` as a message names a tensor: id, dtype and shape, without the access mark.
  static TensorRef as_named(TensorRef r) {
    r.access = Access::ReadOnly;
    return r;
  }

  // An allocation that failed inside op `o` (std::bad_alloc from a kernel or the backend's
  // allocator) becomes OutOfMemory naming the op, the device and the output it was making.
  template <class T>
  [[noreturn]] void out_of_memory(const T& o) const {
    const char* op = op_name(o);
    if constexpr (requires { o.out; }) {
      std::string size;  // as a double: the shape may ask for more bytes than 64 bits hold
      if (o.out.dtype != DType::quantized)
        size = fmt::format(" ({:.0f} bytes)", static_cast<double>(o.out.shape.numel()) *
                                                  static_cast<double>(dtype_size(o.out.dtype)));
      detail::raise<OutOfMemory>("memory", "{}: device {} is out of memory making {}{}", op,
                                 device_, as_named(o.out), size);
    } else {
      detail::raise<OutOfMemory>("memory", "{}: device {} is out of memory", op, device_);
    }
  }

  // Anything else a kernel or the backend let out (a std::runtime_error, an int, ...) becomes
  // BackendError naming the op, the backend, the device and the output, with the original
  // nested in it. Called inside the catch block: that is where BackendError captures it.
  template <class T>
  [[noreturn]] void backend_error(const T& o) const {
    const char* op = op_name(o);
    const std::string what = detail::current_exception_text();
    if constexpr (requires { o.out; })
      detail::raise<BackendError>("backend", "{}: backend '{}' failed on device {} making {}: {}",
                                  op, backend_name(), device_, as_named(o.out), what);
    else if constexpr (requires { o.in; })
      detail::raise<BackendError>("backend", "{}: backend '{}' failed on device {} reading {}: {}",
                                  op, backend_name(), device_, as_named(o.in), what);
    else
      detail::raise<BackendError>("backend", "{}: backend '{}' failed on device {}: {}", op,
                                  backend_name(), device_, what);
  }
  // The backend that owns this device: B's name, or for a bridge (Multi) its member's.
  [[nodiscard]] std::string_view backend_name() const {
    if constexpr (requires { b_.backend_name(device_); })
      return b_.backend_name(device_);
    else
      return B::name();
  }

  B& b_;
  Device device_;
  HandleRegistry<B> reg_;
  DeviceStats stats_;
};

}  // namespace ferry

#include "ferry/interpreter/compute.hpp"
#include "ferry/interpreter/layout.hpp"

namespace ferry {

template <Backend B>
void Interpreter<B>::execute(Op& o) {
  std::visit([this](auto& x) { this->execute(x); }, o);
}
#define FERRY_DETAIL_EXECUTE(T)            \
  template <Backend B>                     \
  void Interpreter<B>::execute(op::T& o) { \
    ++stats_.ops;                          \
    try {                                  \
      run(o);                              \
    } catch (const Error&) {               \
      ++stats_.failed_ops;                 \
      throw;                               \
    } catch (const std::bad_alloc&) {      \
      ++stats_.failed_ops;                 \
      out_of_memory(o);                    \
    } catch (...) {                        \
      ++stats_.failed_ops;                 \
      backend_error(o);                    \
    }                                      \
  }
FERRY_OP_TYPES(FERRY_DETAIL_EXECUTE)
#undef FERRY_DETAIL_EXECUTE

}  // namespace ferry

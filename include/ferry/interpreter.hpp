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
                  (ref.scheme->mode == quant::Mode::affine ? 1 : 0));
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

  // ---- data in / out, creation -------------------------------------------------------
  void run(op::FromData& o) {
    detail::with_plain_kind(o.out.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      if constexpr (K == Kind::Float)
        put<K>(o.out, b_.float_from_data(std::move(o.data), device_));
      else if constexpr (K == Kind::Int)
        put<K>(o.out, b_.int_from_data(std::move(o.data), device_));
      else
        put<K>(o.out, b_.bool_from_data(std::move(o.data), device_));
    });
  }
  void run(op::Full& o) {
    const auto& s = o.out.shape;
    const auto d = o.out.dtype;
    detail::with_plain_kind(d, [&]<Kind K>(std::integral_constant<Kind, K>) {
      if constexpr (K == Kind::Float)
        put<K>(o.out, FERRY_KERNEL(H<K>, b_, float_full, s, d, o.value, device_));
      else if constexpr (K == Kind::Int)
        put<K>(o.out, FERRY_KERNEL(H<K>, b_, int_full, s, d, o.value, device_));
      else
        put<K>(o.out, FERRY_KERNEL(H<K>, b_, bool_full, s, d, o.value, device_));
    });
  }
  void run(op::Arange& o) {
    const auto n = o.out.shape.numel();
    const auto d = o.out.dtype;
    detail::with_plain_kind(d, [&]<Kind K>(std::integral_constant<Kind, K>) {
      if constexpr (K == Kind::Float)
        put<K>(o.out, FERRY_KERNEL(H<K>, b_, float_arange, o.start, o.step, n, d, device_));
      else if constexpr (K == Kind::Int)
        put<K>(o.out, FERRY_KERNEL(H<K>, b_, int_arange, o.start, o.step, n, d, device_));
      else
        detail::raise<DTypeError>("dtype", "arange: bool is not a valid dtype");
    });
  }
  void run(op::RandomInt& o) {
    put<Kind::Int>(o.out, FERRY_KERNEL(H<Kind::Int>, b_, int_random, o.out.shape, o.out.dtype,
                                       o.low, o.high, o.seed, device_));
  }
  void run(op::Random& o) {
    put<Kind::Float>(o.out, FERRY_KERNEL(H<Kind::Float>, b_, float_random, o.out.shape, o.out.dtype,
                                         o.dist, o.seed, device_));
  }

  // ---- elementwise -------------------------------------------------------------------------
  void run(op::Unary& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, name(o.kind));
      switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                \
  case UnaryKind::n:                                        \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n, std::move(x))); \
    break;
        FERRY_UNARY_KINDS(FERRY_DETAIL_CASE)
        FERRY_UNARY_COMPOSITE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
#define FERRY_DETAIL_CASE(n)                                                  \
  case UnaryKind::n:                                                          \
    put<Kind::Bool>(o.out, FERRY_KERNEL(H<Kind::Bool>, b_, n, std::move(x))); \
    break;
        FERRY_PREDICATE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
      }
    });
  }
  void run(op::Binary& o) {
    detail::with_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      const char* nm = name(o.kind);
      auto x = take<K>(o.lhs, nm);
      auto y = take<K>(o.rhs, nm);
      switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                              \
  case BinaryKind::n:                                                     \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n, std::move(x), std::move(y))); \
    break;
        FERRY_ARITH_KINDS(FERRY_DETAIL_CASE)
        FERRY_ARITH_COMPOSITE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
#define FERRY_DETAIL_CASE(n)                                                                \
  case BinaryKind::n:                                                                       \
    put<Kind::Bool>(o.out, FERRY_KERNEL(H<Kind::Bool>, b_, n, std::move(x), std::move(y))); \
    break;
        FERRY_COMPARE_KINDS(FERRY_DETAIL_CASE)
        FERRY_LOGICAL_KINDS(FERRY_DETAIL_CASE)
        FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
      }
    });
  }
  void run(op::BinaryScalar& o) {
    detail::with_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.lhs, name(o.kind));
      switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                                \
  case BinaryKind::n:                                                       \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n##_scalar, std::move(x), o.rhs)); \
    break;
        FERRY_ARITH_KINDS(FERRY_DETAIL_CASE)
        FERRY_ARITH_COMPOSITE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
#define FERRY_DETAIL_CASE(n)                                                                  \
  case BinaryKind::n:                                                                         \
    put<Kind::Bool>(o.out, FERRY_KERNEL(H<Kind::Bool>, b_, n##_scalar, std::move(x), o.rhs)); \
    break;
        FERRY_COMPARE_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
        default:
          detail::raise<Unsupported>("unsupported", "'{}' has no scalar form", name(o.kind));
      }
    });
  }
  void run(op::Clamp& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, "clamp");
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, clamp, std::move(x), o.lo, o.hi));
    });
  }
  void run(op::Where& o) {
    auto m = take<Kind::Bool>(o.mask, "where");
    detail::with_plain_kind(o.a.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.a, "where");
      auto y = take<K>(o.b, "where");
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, where, std::move(m), std::move(x), std::move(y)));
    });
  }
  void run(op::Cast& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, "cast");
      detail::with_plain_kind(o.out.dtype, [&]<Kind KO>(std::integral_constant<Kind, KO>) {
        if constexpr (KO == Kind::Float)
          put<KO>(o.out, FERRY_KERNEL(H<KO>, b_, to_float, std::move(x), o.out.dtype));
        else if constexpr (KO == Kind::Int)
          put<KO>(o.out, FERRY_KERNEL(H<KO>, b_, to_int, std::move(x), o.out.dtype));
        else
          put<KO>(o.out, FERRY_KERNEL(H<KO>, b_, to_bool, std::move(x)));
      });
    });
  }

  // ---- reductions, matmul ------------------------------------------------------------------
  void run(op::Reduce& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, name(o.kind));
      switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                                  \
  case ReduceKind::n:                                                         \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n, std::move(x), o.dim, o.keepdim)); \
    break;
        FERRY_DETAIL_CASE(sum)
        FERRY_DETAIL_CASE(prod)
        FERRY_DETAIL_CASE(mean)
        FERRY_DETAIL_CASE(max)
        FERRY_DETAIL_CASE(min)
#undef FERRY_DETAIL_CASE
#define FERRY_DETAIL_CASE(n)                                                                  \
  case ReduceKind::n:                                                                         \
    put<Kind::Int>(o.out, FERRY_KERNEL(H<Kind::Int>, b_, n, std::move(x), o.dim, o.keepdim)); \
    break;
        FERRY_DETAIL_CASE(argmax) FERRY_DETAIL_CASE(argmin)
#undef FERRY_DETAIL_CASE
      }
    });
  }
  void run(op::Scan& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, name(o.kind));
      switch (o.kind) {
#define FERRY_DETAIL_CASE(n)                                       \
  case ScanKind::n:                                                \
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, n, std::move(x), o.dim)); \
    break;
        FERRY_SCAN_KINDS(FERRY_DETAIL_CASE)
#undef FERRY_DETAIL_CASE
      }
    });
  }
  void run(op::Argsort& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, "argsort");
      put<Kind::Int>(
          o.out, FERRY_KERNEL(H<Kind::Int>, b_, argsort, std::move(x), o.dim, o.descending, o.k));
    });
  }
  void run(op::Matmul& o) {
    detail::with_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.lhs, "matmul");
      auto y = take<K>(o.rhs, "matmul");
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, matmul, std::move(x), std::move(y)));
    });
  }

  // ---- layout ---------------------------------------------------------------------------------
  template <class O, class Call>
  void unary_layout(O& o, Call&& call) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K> k) {
      put<K>(o.out, call(k, take<K>(o.in, O::name)));
    });
  }
  void run(op::Reshape& o) {
    unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
      return FERRY_KERNEL(H<K>, b_, reshape, std::move(x), o.out.shape);
    });
  }
  void run(op::Permute& o) {
    unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
      return FERRY_KERNEL(H<K>, b_, permute, std::move(x), std::span<const std::size_t>(o.perm));
    });
  }
  void run(op::Flip& o) {
    unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
      return FERRY_KERNEL(H<K>, b_, flip, std::move(x), std::span<const std::size_t>(o.axes));
    });
  }
  void run(op::Expand& o) {
    unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
      return FERRY_KERNEL(H<K>, b_, expand, std::move(x), o.out.shape);
    });
  }
  void run(op::Slice& o) {
    unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
      return FERRY_KERNEL(H<K>, b_, slice, std::move(x), std::span<const Range>(o.ranges));
    });
  }
  void run(op::Repeat& o) {
    unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
      return FERRY_KERNEL(H<K>, b_, repeat, std::move(x), std::span<const std::int64_t>(o.times));
    });
  }
  void run(op::Scatter& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      const char* n = name(o.kind);
      auto x = take<K>(o.in, n);
      auto i = take<Kind::Int>(o.index, n);
      auto v = take<K>(o.value, n);
      if (o.kind == ScatterKind::scatter)
        put<K>(o.out,
               FERRY_KERNEL(H<K>, b_, scatter, std::move(x), o.dim, std::move(i), std::move(v)));
      else
        put<K>(o.out, FERRY_KERNEL(H<K>, b_, scatter_add, std::move(x), o.dim, std::move(i),
                                   std::move(v)));
    });
  }
  void run(op::GatherNd& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, "gather_nd");
      auto i = take<Kind::Int>(o.index, "gather_nd");
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, gather_nd, std::move(x), std::move(i)));
    });
  }
  void run(op::ScatterNd& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      const char* n = name(o.kind);
      auto x = take<K>(o.in, n);
      auto i = take<Kind::Int>(o.index, n);
      auto v = take<K>(o.value, n);
      if (o.kind == ScatterNdKind::scatter_nd)
        put<K>(o.out, FERRY_KERNEL(H<K>, b_, scatter_nd, std::move(x), std::move(i), std::move(v)));
      else
        put<K>(o.out,
               FERRY_KERNEL(H<K>, b_, scatter_nd_add, std::move(x), std::move(i), std::move(v)));
    });
  }
  void run(op::SliceAssign& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, "slice_assign");
      auto v = take<K>(o.value, "slice_assign");
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, slice_assign, std::move(x),
                                 std::span<const Range>(o.ranges), std::move(v)));
    });
  }
  void run(op::Cat& o) {
    detail::with_plain_kind(o.out.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      std::vector<H<K>> xs;
      xs.reserve(o.ins.size());
      for (const auto& r : o.ins) xs.push_back(take<K>(r, "cat"));
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, cat, std::move(xs), o.dim));
    });
  }
  void run(op::Gather& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, "gather");
      auto idx = take<Kind::Int>(o.index, "gather");
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, gather, std::move(x), o.dim, std::move(idx)));
    });
  }
  void run(op::IndexSelect& o) {
    detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto x = take<K>(o.in, "index_select");
      auto idx = take<Kind::Int>(o.index, "index_select");
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, index_select, std::move(x), o.dim, std::move(idx)));
    });
  }

  // ---- quantized ------------------------------------------------------------------------------
  // Each uses the backend's kernel when it has one, else the host path through QuantizedParts
  // (detail/quant_host.hpp), so quantized ops work on every backend.
  using QH = H<Kind::Quantized>;
  void run(op::Quantize& o) {
    put<Kind::Quantized>(o.out, detail::qhost::quantize(b_, take<Kind::Float>(o.in, "quantize"),
                                                        o.scheme, o.scales, o.offsets, device_));
  }
  void run(op::QuantizeDynamic& o) {
    put<Kind::Quantized>(
        o.out, detail::qhost::quantize_dynamic(b_, take<Kind::Float>(o.in, "quantize_dynamic"),
                                               o.scheme, device_));
  }
  void run(op::Dequantize& o) {
    put<Kind::Float>(o.out, detail::qhost::dequantize(b_, take<Kind::Quantized>(o.in, "dequantize"),
                                                      o.out.dtype, device_));
  }
  void run(op::QFromParts& o) {
    put<Kind::Quantized>(o.out, b_.q_from_parts(std::move(o.parts), device_));
  }
  template <class O, class Kernel, class Host>
  void q_layout(O& o, Kernel&& kernel, Host&& host) {
    put<Kind::Quantized>(o.out, detail::qhost::layout(b_, take<Kind::Quantized>(o.in, O::name),
                                                      device_, kernel, host));
  }
  void run(op::QReshape& o) {
    const Shape& to = o.out.shape;
    q_layout(
        o,
        [&](auto& b, QH q) -> decltype(b.q_reshape(std::move(q), to)) {
          return b.q_reshape(std::move(q), to);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_reshape(p, to); });
  }
  void run(op::QPermute& o) {
    const std::span<const std::int64_t> perm(o.perm);
    q_layout(
        o,
        [&](auto& b, QH q) -> decltype(b.q_permute(std::move(q), perm)) {
          return b.q_permute(std::move(q), perm);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_permute(p, perm); });
  }
  void run(op::QFlip& o) {
    const std::span<const std::int64_t> axes(o.axes);
    q_layout(
        o,
        [&](auto& b, QH q) -> decltype(b.q_flip(std::move(q), axes)) {
          return b.q_flip(std::move(q), axes);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_flip(p, axes); });
  }
  void run(op::QSlice& o) {
    const std::span<const std::pair<std::int64_t, std::int64_t>> r(o.ranges);
    q_layout(
        o,
        [&](auto& b, QH q) -> decltype(b.q_slice(std::move(q), r)) {
          return b.q_slice(std::move(q), r);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_slice(p, r); });
  }
  void run(op::QMatmul& o) {
    auto x = take<Kind::Float>(o.lhs, "q_matmul");
    auto w = take<Kind::Quantized>(o.rhs, "q_matmul");
    put<Kind::Float>(o.out,
                     detail::qhost::q_matmul(b_, std::move(x), std::move(w), o.lhs.dtype, device_));
  }

  // ---- runtime ---------------------------------------------------------------------------------
  void run(op::Read& o) {
    detail::with_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      auto h = take<K>(o.in, "read");
      if constexpr (K == Kind::Float)
        o.slot->result.set_value(b_.float_into_data(std::move(h)));
      else if constexpr (K == Kind::Int)
        o.slot->result.set_value(b_.int_into_data(std::move(h)));
      else if constexpr (K == Kind::Bool)
        o.slot->result.set_value(b_.bool_into_data(std::move(h)));
      else
        o.slot->result.set_value(b_.q_into_parts(std::move(h)));
    });
  }
  void run(op::ToDevice&) {
    detail::raise<Error>("internal", "to_device runs through Interpreter::send/receive");
  }
  void run(op::Drop& o) { reg_.drop(o.in.id); }

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

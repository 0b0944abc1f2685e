// Ferry: Router<B>, the one front an application uses for every device of a backend.
// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <ranges>
#include <utility>
#include <vector>

#include "ferry/backend.hpp"
#include "ferry/data.hpp"
#include "ferry/detail/checked.hpp"
#include "ferry/detail/core.hpp"
#include "ferry/detail/infer.hpp"
#include "ferry/detail/kernel_check.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/tensor.hpp"
#include "ferry/trace.hpp"

namespace ferry {

namespace detail {
/// Bytes of the tensor `out` describes, checked: ShapeError naming `op` for a negative dim or an
/// element count past int64, nullopt when the byte count passes 2^63 - 1 (more than a device
/// can address). Every op's output goes through here (submit_op), so no backend is ever asked
/// for a tensor whose size wrapped.
inline std::optional<std::int64_t> output_bytes(const char* op, const TensorRef& out) {
  const auto dims = out.shape.dims();
  for (const std::int64_t d : dims)
    if (d < 0) raise<ShapeError>("shape", "{}: shape {} has a negative dim", op, out.shape);
  const auto n = product_i64(dims);
  if (!n)
    raise<ShapeError>("shape", "{}: shape {} has more elements than int64 holds (2^63 - 1)", op,
                      out.shape);
  if (out.dtype != DType::quantized || !out.scheme) return bytes_i64(*n, dtype_size(out.dtype));
  const quant::Scheme& s = *out.scheme;
  const auto params = mul_i64(quant::num_params(s, out.shape),
                              static_cast<std::int64_t>(quant::scale_bytes(s.scale_type) +
                                                        (s.mode == quant::Mode::affine ? 1 : 0)));
  if (!params) return std::nullopt;
  const auto parts = add_i64(*params, static_cast<std::int64_t>(quant::tensor_scale_bytes(s)));
  if (!parts) return std::nullopt;
  return add_i64(static_cast<std::int64_t>(quant::data_bytes(s, *n)), *parts);
}

/// output_bytes(), with OutOfMemory naming `op` and device `dev` when the bytes do not fit, and
/// Unsupported when the device does not hold the output's dtype.
template <Backend B>
void check_output(const RouterCore<B>& core, std::size_t dev, const char* op,
                  const TensorRef& out) {
  check_holds(core, dev, op, out.dtype);
  if (!output_bytes(op, out))
    raise<OutOfMemory>("memory",
                       "{}: a {} tensor of shape {} needs more than 2^63 - 1 bytes, more than "
                       "device {} can hold",
                       op, out.dtype, out.shape, core.device(dev));
}

/// Submits `o` on device `dev` and returns the Tensor for its output. The output's Tensor
/// exists before the op runs, so nothing can fail between the op and it; if the op is rejected
/// the Tensor is forgotten without a Drop (it was never registered), and `release_inputs()`,
/// which lets go of the inputs the op took read-write, runs only once the op was accepted, so a
/// rejected op loses nothing. An op whose kernel the backend lacks is rejected here. (`core` may
/// belong to an input: it is copied into the output before any input is released.)
template <Backend B, class O, class Release>
Tensor<B> submit_op(const std::shared_ptr<RouterCore<B>>& core, std::size_t dev, O&& o,
                    Release&& release_inputs) {
  check_output(*core, dev, op_name(o), o.out);
  // A kernel the backend lacks is known now, in either execution mode (kernel_check.hpp).
  if (const char* kernel = missing_kernel<B>(std::as_const(o))) throw unsupported<B>(kernel);
  Tensor<B> out = TensorAccess<B>::make(core, o.out, dev);
  try {
    core->submit(dev, std::forward<O>(o));
  } catch (...) {
    TensorAccess<B>::forget(out);
    throw;
  }
  release_inputs();
  return out;
}

/// Records `o` on device `dev` and returns the Tensor for its output (see submit_op).
template <Backend B, class O, class... Ts>
Tensor<B> emit(const std::shared_ptr<RouterCore<B>>& core, std::size_t dev, O&& o, Ts&... inputs) {
  // Which inputs the op takes read-write, looked up by id before the op is moved away.
  [[maybe_unused]] std::array<Access, sizeof...(Ts)> access{};
  std::size_t i = 0;
  ((access[i++] =
        [&] {
          Access a = Access::ReadOnly;
          for_each_input(o, [&](const TensorRef& r) {
            if (r.id == TensorAccess<B>::state(inputs, "op").id) a = r.access;
          });
          return a;
        }()),
   ...);
  return submit_op(core, dev, std::forward<O>(o), [&] {
    i = 0;
    ((TensorAccess<B>::release(inputs, access[i++])), ...);
  });
}
}  // namespace detail

/// @brief The front of Ferry: creates tensors on a backend's devices and records every op on
/// them as IR, run by the interpreter of the device the operands live on.
///
/// @code
///   ferry::Router<ferry::EigenCpu> router(ferry::EigenCpu(2));       // devices cpu:0, cpu:1
///   auto x = router.random_uniform({256, 256}, 42, ferry::CpuDevice{0});
///   auto w = ferry::quantize_dynamic(router.ones({256, 64}, ferry::DType::f32, {0}),
///                                    ferry::quant::Scheme::of(ferry::quant::ValueType::i4)
///                                        .per_block({32}).packed_u8());
///   auto y = ferry::matmul(x, w.to(ferry::CpuDevice{1}).to(ferry::CpuDevice{0}));
///   router.sync();
/// @endcode
/// Thread-safe: every call of the router, every op, read and move may run from many threads at
/// once, on any device, and one tensor may be used from several threads through their own
/// Tensor copies; one Tensor object must not be changed (assigned, moved from, destroyed) while
/// another thread uses it (docs/execution.md, "Threads"). In async mode (the default) errors
/// found while an op runs surface at the next read or sync that depends on it, a sync from any
/// thread; errors in the call itself (shapes, dtypes, devices) are thrown at once in both
/// modes.
template <Backend B>
class Router {
 public:
  using Device = typename B::Device;

  /// A router over every device the backend reports (`backend.devices()`). The backend is
  /// taken by value and moved into the router, so a move-only backend works: pass
  /// `std::move(b)` (or a temporary); an lvalue is copied.
  explicit Router(B backend, RouterOptions opts = {}) requires requires(const B& b) {
    { b.devices() } -> std::convertible_to<std::vector<Device>>;
  } : Router(Moved{}, std::move(backend), opts) {
  }
  /// A router over the given devices. A template, so that a braced `{.trace = true}` in the
  /// second place can only mean RouterOptions.
  template <std::ranges::input_range R>
  requires std::convertible_to<std::ranges::range_reference_t<R>, Device> Router(
      B backend, const R& devices, RouterOptions opts = {})
      : core_(std::make_shared<detail::RouterCore<B>>(
            std::move(backend),
            std::vector<Device>(std::ranges::begin(devices), std::ranges::end(devices)), opts)) {}

  [[nodiscard]] const std::vector<Device>& devices() const noexcept { return core_->devices(); }
  [[nodiscard]] B& backend() noexcept { return core_->backend(); }
  [[nodiscard]] const RouterOptions& options() const noexcept { return core_->options(); }

  // ---- creation -----------------------------------------------------------------------------
  [[nodiscard]] Tensor<B> from_data(TensorData data, const Device& d) {
    const auto dev = core_->index_of(d, "from_data");
    TensorRef out{core_->new_id(), data.shape(), data.dtype()};
    return detail::emit(core_, dev, op::FromData{std::move(data), out});
  }
  template <class T>
  [[nodiscard]] Tensor<B> from_vector(const std::vector<T>& v, Shape shape, const Device& d) {
    return from_data(TensorData::from(v, std::move(shape)), d);
  }
  [[nodiscard]] Tensor<B> full(Shape shape, Scalar value, DType dtype, const Device& d) {
    return full_as("full", std::move(shape), value, dtype, d);
  }
  [[nodiscard]] Tensor<B> zeros(Shape shape, DType dtype, const Device& d) {
    return full_as("zeros", std::move(shape), Scalar(0), dtype, d);
  }
  [[nodiscard]] Tensor<B> ones(Shape shape, DType dtype, const Device& d) {
    return full_as("ones", std::move(shape), Scalar(1), dtype, d);
  }
  /// [start, end) by step, as numpy.arange: ceil((end - start) / step) elements.
  [[nodiscard]] Tensor<B> arange(Scalar start, Scalar end, Scalar step, DType dtype,
                                 const Device& d) {
    const auto dev = core_->index_of(d, "arange");
    not_creatable("arange", dtype);
    detail::want_kind("arange", dtype, {Kind::Float, Kind::Int}, "a float or int dtype");
    const double s = start.as<double>(), e = end.as<double>(), st = step.as<double>();
    if (st == 0.0 || !std::isfinite(s) || !std::isfinite(e) || !std::isfinite(st))
      detail::raise<ValueError>("value", "arange: start {}, end {}, step {} do not make a range",
                                start, end, step);
    std::int64_t n = 0;
    if (kind_of(dtype) == Kind::Int) {  // exact integers (u64 past INT64_MAX too), in the dtype
      detail::scalar_fits("arange", "start", start, dtype);
      // Any whole step (negative on unsigned dtypes too, as numpy): only the values must fit.
      if (!detail::scalar_exact_in(step, DType::i64) && !detail::scalar_exact_in(step, DType::u64))
        detail::raise<ValueError>("value",
                                  "arange: step {} is not a whole number in the range of "
                                  "i64 or u64",
                                  step);
      const auto len = detail::int_arange_len(start, end, step, dtype);
      if (len.n < 0)
        detail::raise<ValueError>("value",
                                  "arange: start {}, end {}, step {} make more than 2^53 "
                                  "elements, too many for one tensor",
                                  start, end, step);
      if (!len.fits)
        detail::raise<ValueError>("value",
                                  "arange: start {}, end {}, step {} run past the range of {}",
                                  start, end, step, dtype);
      n = len.n;
    } else {
      const double count = std::max(0.0, std::ceil((e - s) / st));
      // 2^53: past it the count is not exact as a double, and (far sooner) no buffer could hold
      // it; converting a larger one to int64 would be undefined.
      if (!(count <= 9007199254740992.0))
        detail::raise<ValueError>("value",
                                  "arange: start {}, end {}, step {} make {} elements, too many "
                                  "for one tensor",
                                  start, end, step, count);
      n = static_cast<std::int64_t>(count);
    }
    return detail::emit(core_, dev,
                        op::Arange{start, step, TensorRef{core_->new_id(), Shape{n}, dtype}});
  }
  [[nodiscard]] Tensor<B> random(Shape shape, Distribution dist, std::uint64_t seed,
                                 const Device& d, DType dtype = DType::f32) {
    const auto dev = core_->index_of(d, "random");
    not_creatable("random", dtype);
    detail::want_kind("random", dtype, {Kind::Float}, "a float dtype");
    if (!(dist.b > 0.0) && dist.kind == Distribution::Kind::normal)
      detail::raise<ValueError>("value", "random: normal std must be > 0, got {}", dist.b);
    if (!(dist.a < dist.b) && dist.kind == Distribution::Kind::uniform)
      detail::raise<ValueError>("value", "random: uniform needs low < high, got [{}, {})", dist.a,
                                dist.b);
    return detail::emit(
        core_, dev, op::Random{dist, seed, TensorRef{core_->new_id(), std::move(shape), dtype}});
  }
  /// torch.randint(low, high): integers uniform on [low, high), seeded (the same values in
  /// both execution modes, on every run and machine). low and high are whole numbers with low <
  /// high, low and high - 1 values of `dtype` (an integer dtype).
  [[nodiscard]] Tensor<B> random_int(Shape shape, Scalar low, Scalar high, std::uint64_t seed,
                                     const Device& d, DType dtype = DType::i64) {
    const auto dev = core_->index_of(d, "random_int");
    not_creatable("random_int", dtype);
    detail::want_kind("random_int", dtype, {Kind::Int}, "an int dtype");
    const auto lo = detail::scalar_whole(low), hi = detail::scalar_whole(high);
    if (!lo || !hi || *lo >= *hi || !detail::whole_in(*lo, dtype) ||
        !detail::whole_in(*hi - 1, dtype))
      detail::raise<ValueError>("value",
                                "random_int: [{}, {}) must be a nonempty range of whole numbers "
                                "of {} (low and high - 1 values of it)",
                                low, high, dtype);
    return detail::emit(
        core_, dev,
        op::RandomInt{low, high, seed, TensorRef{core_->new_id(), std::move(shape), dtype}});
  }
  [[nodiscard]] Tensor<B> random_uniform(Shape shape, std::uint64_t seed, const Device& d,
                                         double lo = 0.0, double hi = 1.0) {
    return random(std::move(shape), Distribution::uniform(lo, hi), seed, d);
  }
  [[nodiscard]] Tensor<B> random_normal(Shape shape, std::uint64_t seed, const Device& d,
                                        double mean = 0.0, double std = 1.0) {
    return random(std::move(shape), Distribution::normal(mean, std), seed, d);
  }
  /// A quantized tensor from its packed parts (validated), placed on `d` as they are.
  [[nodiscard]] Tensor<B> q_from_parts(quant::QuantizedParts parts, const Device& d) {
    const auto dev = core_->index_of(d, "q_from_parts");
    parts.validate();
    TensorRef out{core_->new_id(), parts.shape, DType::quantized, Access::ReadOnly,
                  std::make_shared<const quant::Scheme>(parts.scheme)};
    return detail::emit(core_, dev, op::QFromParts{std::move(parts), out});
  }

  // ---- execution ----------------------------------------------------------------------------
  /// Waits for all work submitted to `d`; throws the first error an op hit there since the
  /// last sync.
  void sync(const Device& d) { core_->sync(core_->index_of(d, "sync")); }
  /// Waits for every device; throws the first error any of them hit.
  void sync() { core_->sync_all(); }
  /// Live tensors and bytes, ops run, bytes moved in and out, for one device (a snapshot
  /// taken between two of its ops).
  [[nodiscard]] DeviceStats stats(const Device& d) {
    return core_->stats(core_->index_of(d, "stats"));
  }

  /// What ran where and when, on every device (needs RouterOptions::trace; empty otherwise).
  /// Events of ops still queued are not there yet: call sync() first.
  [[nodiscard]] std::vector<TraceEvent> trace() { return core_->trace(); }
  /// Writes the trace as Chrome Trace Event JSON (Perfetto, chrome://tracing): one track per
  /// device, transfers linked by flow arrows.
  void write_trace(const std::string& path) {
    std::vector<std::string> names;
    for (const auto& d : devices()) names.push_back(fmt::format("{}", d));
    write_chrome_trace(path, trace(), names);
  }

  /// Runs `f(interpreter)` under `d`'s lock, for introspection and tests.
  template <class F>
  decltype(auto) with_interpreter(const Device& d, F&& f) {
    return core_->client(core_->index_of(d, "with_interpreter"))
        .with_interpreter(std::forward<F>(f));
  }

 private:
  // full(), zeros() and ones(): one op::Full; argument errors name the call the user made.
  Tensor<B> full_as(const char* op, Shape shape, Scalar value, DType dtype, const Device& d) {
    const auto dev = core_->index_of(d, op);
    not_creatable(op, dtype);
    detail::scalar_fits(op, "value", value, dtype);
    TensorRef out{core_->new_id(), std::move(shape), dtype};
    detail::check_output(*core_, dev, op, out);  // here, to name zeros/ones rather than full
    return detail::emit(core_, dev, op::Full{value, std::move(out)});
  }
  static void not_creatable(const char* op, DType d) {
    if (d == DType::quantized)
      detail::raise<DTypeError>("dtype",
                                "{}: cannot create a quantized tensor; use quantize(), "
                                "quantize_dynamic() or q_from_parts()",
                                op);
  }

  // The first constructor's body. make_shared takes its arguments by reference, so
  // backend.devices() has run before the backend is moved into the core (delegating with
  // `Router(std::move(backend), backend.devices(), opts)` could move it first).
  struct Moved {};
  Router(Moved, B&& backend, RouterOptions opts)
      : core_(std::make_shared<detail::RouterCore<B>>(
            std::move(backend), std::vector<Device>(backend.devices()), opts)) {}

  std::shared_ptr<detail::RouterCore<B>> core_;
};

}  // namespace ferry

/// Build time. Every translation unit that runs ops on backend B compiles B's runtime (its
/// Interpreter, whose execute() reaches every kernel of B, its Client and RouterCore) unless
/// told that it is compiled elsewhere. For EigenCpu, `ferry::ferry` does this for you
/// (ferry/backends/eigen_cpu/instances.hpp). For your own backend, put FERRY_EXTERN_BACKEND(B);
/// in a header the users of B include and FERRY_INSTANTIATE_BACKEND(B); in one .cpp file
/// (after that header); docs/build.md shows the CMake side:
///
/// @code
///   // my_backend.hpp                             // my_backend.cpp
///   #include <ferry/ferry.hpp>                    #include "my_backend.hpp"
///   struct MyBackend { ... };                     FERRY_INSTANTIATE_BACKEND(MyBackend);
///   FERRY_EXTERN_BACKEND(MyBackend);
/// @endcode
///
/// Optional: without them every unit compiles its own copy and the linker keeps one.
///
/// FERRY_EXTERN_BACKEND names only RouterCore<B>: a router reaches its Clients and their
/// Interpreters through RouterCore's out-of-line members alone, so a user file never
/// instantiates them (not even their class definitions) unless it asks for an interpreter
/// (Router::with_interpreter), which then works as usual.
#define FERRY_EXTERN_BACKEND(...) extern template class ::ferry::detail::RouterCore<__VA_ARGS__>
#define FERRY_INSTANTIATE_BACKEND(...)                 \
  template class ::ferry::Interpreter<__VA_ARGS__>;    \
  template class ::ferry::detail::Client<__VA_ARGS__>; \
  template class ::ferry::detail::RouterCore<__VA_ARGS__>
/// The names of Ferry 0.1, kept: the same as FERRY_EXTERN_BACKEND / FERRY_INSTANTIATE_BACKEND.
#define FERRY_EXTERN_INTERPRETER(...) FERRY_EXTERN_BACKEND(__VA_ARGS__)
#define FERRY_INSTANTIATE_INTERPRETER(...) FERRY_INSTANTIATE_BACKEND(__VA_ARGS__)

// Ferry: Multi<Bs...>, one backend made of several — the bridge that moves tensors between
// backends of different types (Float/Int/Bool through host data, Quantized through
// QuantizedParts, bit-exact).
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ferry/backend.hpp"
#include "ferry/backends/multi/args.hpp"
#include "ferry/backends/multi/dispatch.hpp"
#include "ferry/data.hpp"
#include "ferry/detail/has_kernel.hpp"
#include "ferry/detail/quant_host.hpp"
#include "ferry/detail/text.hpp"
#include "ferry/error.hpp"
#include "ferry/ir.hpp"
#include "ferry/quant/parts.hpp"

namespace ferry {

/// A device of one of the backends of a Multi.
template <Backend... Bs>
struct MultiDevice {
  std::variant<typename Bs::Device...> v;
  template <class D>
  requires(std::is_constructible_v<std::variant<typename Bs::Device...>, D>) MultiDevice(D d)
      : v(std::move(d)) {}  // NOLINT(google-explicit-constructor): a device is a device
  friend bool operator==(const MultiDevice& a, const MultiDevice& b) { return a.v == b.v; }
};

/// @brief A backend made of several backends: a Router<Multi<A, B>> holds tensors on A's and
/// B's devices, runs each op on the backend that owns its device, and moves tensors across.
///
/// @code
///   using Both = ferry::Multi<ferry::EigenCpu, MyGpu>;
///   ferry::Router<Both> router(Both(ferry::EigenCpu(1), MyGpu{}));
///   auto w = ferry::quantize_dynamic(router.ones({64, 64}, ferry::DType::f32,
///   ferry::CpuDevice{0}), scheme); auto on_gpu = w.to(MyGpuDevice{0});     // packed data + scales
///   + offsets, bit-exact
/// @endcode
/// Within one backend, moves use that backend's own transfer. Across backends, Float/Int/Bool
/// go through TensorData on the host and Quantized through QuantizedParts: copied as they are,
/// never dequantized. An op a member backend lacks raises Unsupported naming that backend.
template <Backend... Bs>
class Multi {
  static constexpr std::size_t N = sizeof...(Bs);
  template <std::size_t I>
  using Bi = std::tuple_element_t<I, std::tuple<Bs...>>;

 public:
  using Device = MultiDevice<Bs...>;
  /// A plain handle of any member backend; alternative 3*i + kind holds backend i's handle.
  /// Handles remember their device: the host fallbacks of quantized ops create results there.
  struct Plain {
    typename detail::multi::to_variant<decltype(std::tuple_cat(
        std::declval<detail::multi::plain_tuple<Bs>>()...))>::type h;
    Device dev;
  };
  struct Quant {
    std::variant<typename Bs::QuantizedHandle...> h;
    Device dev;
  };
  using FloatHandle = Plain;
  using IntHandle = Plain;
  using BoolHandle = Plain;
  using QuantizedHandle = Quant;

  static constexpr std::string_view name() { return "multi"; }

  explicit Multi(Bs... backends) : b_(std::move(backends)...) {}

  template <std::size_t I>
  [[nodiscard]] Bi<I>& member() noexcept {
    return std::get<I>(b_);
  }

  /// The name of the member that owns `d`: what error messages name (BackendError).
  [[nodiscard]] static std::string_view backend_name(const Device& d) noexcept {
    return on_index(d.v.index(),
                    []<std::size_t I>(idx<I>) -> std::string_view { return Bi<I>::name(); });
  }

  /// Whether the member that owns `d` holds `dt` tensors (see ferry::holds_dtype).
  [[nodiscard]] bool holds_dtype(const Device& d, DType dt) const {
    return on_index(d.v.index(), [&]<std::size_t I>(idx<I>) {
      return ferry::holds_dtype(std::get<I>(b_), std::get<I>(d.v), dt);
    });
  }

  /// Every member's devices, in member order (members that can list theirs).
  [[nodiscard]] std::vector<Device> devices() const {
    std::vector<Device> out;
    auto add = [&](const auto& b) {
      if constexpr (requires { b.devices(); })
        for (const auto& d : b.devices()) out.emplace_back(d);
    };
    std::apply([&](const auto&... b) { (add(b), ...); }, b_);
    return out;
  }

  // ---- the required part -----------------------------------------------------------------------
  Plain float_from_data(TensorData d, const Device& dev) { return from_data<0>(std::move(d), dev); }
  Plain int_from_data(TensorData d, const Device& dev) { return from_data<1>(std::move(d), dev); }
  Plain bool_from_data(TensorData d, const Device& dev) { return from_data<2>(std::move(d), dev); }
  TensorData float_into_data(Plain h) { return into_data(std::move(h)); }
  TensorData int_into_data(Plain h) { return into_data(std::move(h)); }
  TensorData bool_into_data(Plain h) { return into_data(std::move(h)); }
  Plain float_to_device(Plain h, const Device& dev) { return to_device(std::move(h), dev); }
  Plain int_to_device(Plain h, const Device& dev) { return to_device(std::move(h), dev); }
  Plain bool_to_device(Plain h, const Device& dev) { return to_device(std::move(h), dev); }

  Quant q_from_parts(quant::QuantizedParts p, const Device& dev) {
    return on_index(dev.v.index(), [&]<std::size_t I>(idx<I>) {
      return Quant{decltype(Quant::h)(std::in_place_index<I>,
                                      member<I>().q_from_parts(std::move(p), std::get<I>(dev.v))),
                   dev};
    });
  }
  quant::QuantizedParts q_into_parts(Quant q) {
    return on_index(q.h.index(), [&]<std::size_t I>(idx<I>) {
      return member<I>().q_into_parts(std::get<I>(std::move(q.h)));
    });
  }
  /// Within a member: its own quantized transfer when it has one. Across members: the parts,
  /// byte for byte.
  Quant q_to_device(Quant q, const Device& dev) {
    const std::size_t from = q.h.index(), to = dev.v.index();
    if (from == to)
      return on_index(to, [&]<std::size_t I>(idx<I>) {
        return Quant{
            decltype(Quant::h)(std::in_place_index<I>,
                               detail::qhost::to_device(member<I>(), std::get<I>(std::move(q.h)),
                                                        std::get<I>(dev.v))),
            dev};
      });
    return q_from_parts(q_into_parts(std::move(q)), dev);
  }

  /// Byte counts, only when every member reports its own (else the router counts shape x dtype).
  [[nodiscard]] std::size_t nbytes(const Plain& h) requires(
      detail::multi::has_plain_nbytes<Bs>&&...) {
    return on_index(
        h.h.index(),
        [&]<std::size_t J>(idx<J>) -> std::size_t {
          return static_cast<std::size_t>(member<J / 3>().nbytes(std::get<J>(h.h)));
        },
        3 * N);
  }
  [[nodiscard]] std::size_t nbytes(const Quant& q) requires(
      detail::multi::has_quant_nbytes<Bs>&&...) {
    return on_index(q.h.index(), [&]<std::size_t I>(idx<I>) -> std::size_t {
      return static_cast<std::size_t>(member<I>().nbytes(std::get<I>(q.h)));
    });
  }

  // ---- every optional kernel, forwarded to the member that owns the operands -------------------
#define FERRY_MULTI_FORWARD(fn, rule) FERRY_MULTI_FORWARD_IF(fn, rule, true)
  // A composite op's kernel exists on the bridge only when every member has it, so that the
  // router records the op's decomposition for a bridge with a member that lacks it.
#define FERRY_MULTI_FORWARD_IF(fn, rule, cond)                                        \
  template <class... A>                                                               \
  requires(cond) auto fn(A&&... a) {                                                  \
    return forward<rule>(                                                             \
        #fn,                                                                          \
        [](auto& b, auto&&... x) -> decltype(b.fn(std::forward<decltype(x)>(x)...)) { \
          return b.fn(std::forward<decltype(x)>(x)...);                               \
        },                                                                            \
        std::forward<A>(a)...);                                                       \
  }
#define FERRY_MULTI_SAME(fn) FERRY_MULTI_FORWARD(fn, detail::multi::Rule::same_first)
#define FERRY_MULTI_SAME_SCALAR(fn) \
  FERRY_MULTI_FORWARD(fn##_scalar, detail::multi::Rule::same_first)
#define FERRY_MULTI_BOOL(fn) FERRY_MULTI_FORWARD(fn, detail::multi::Rule::to_bool)
#define FERRY_MULTI_BOOL_SCALAR(fn) FERRY_MULTI_FORWARD(fn##_scalar, detail::multi::Rule::to_bool)
  FERRY_UNARY_KINDS(FERRY_MULTI_SAME)
  FERRY_ARITH_KINDS(FERRY_MULTI_SAME)
  FERRY_ARITH_KINDS(FERRY_MULTI_SAME_SCALAR)
  FERRY_COMPARE_KINDS(FERRY_MULTI_BOOL)
  FERRY_COMPARE_KINDS(FERRY_MULTI_BOOL_SCALAR)
  FERRY_LOGICAL_KINDS(FERRY_MULTI_BOOL)
#define FERRY_MULTI_ALL(fn, rule) \
  FERRY_MULTI_FORWARD_IF(fn, rule, (detail::has_kernel_##fn<Bs> && ...))
#define FERRY_MULTI_ALL_SAME(fn) FERRY_MULTI_ALL(fn, detail::multi::Rule::same_first)
#define FERRY_MULTI_ALL_SAME_SCALAR(fn) \
  FERRY_MULTI_ALL(fn##_scalar, detail::multi::Rule::same_first)
#define FERRY_MULTI_ALL_BOOL(fn) FERRY_MULTI_ALL(fn, detail::multi::Rule::to_bool)
  FERRY_UNARY_COMPOSITE_KINDS(FERRY_MULTI_ALL_SAME)
  FERRY_ARITH_COMPOSITE_KINDS(FERRY_MULTI_ALL_SAME)
  FERRY_ARITH_COMPOSITE_KINDS(FERRY_MULTI_ALL_SAME_SCALAR)
  FERRY_PREDICATE_KINDS(FERRY_MULTI_ALL_BOOL)
  FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_MULTI_ALL_BOOL)
  FERRY_SOFTMAX_KINDS(FERRY_MULTI_ALL_SAME)
#undef FERRY_MULTI_ALL_BOOL
#undef FERRY_MULTI_ALL_SAME_SCALAR
#undef FERRY_MULTI_ALL_SAME
#undef FERRY_MULTI_ALL
  FERRY_MULTI_SAME(clamp)
  FERRY_MULTI_SAME(sum)
  FERRY_MULTI_SAME(prod)
  FERRY_MULTI_SAME(mean)
  FERRY_MULTI_SAME(max)
  FERRY_MULTI_SAME(min)
  FERRY_SCAN_KINDS(FERRY_MULTI_SAME)
  FERRY_MULTI_SAME(matmul)
  FERRY_MULTI_SAME(reshape)
  FERRY_MULTI_SAME(permute)
  FERRY_MULTI_SAME(flip)
  FERRY_MULTI_SAME(expand)
  FERRY_MULTI_SAME(slice)
  FERRY_MULTI_SAME(slice_assign)
  FERRY_MULTI_SAME(cat)
  FERRY_MULTI_SAME(gather)
  FERRY_MULTI_SAME(index_select)
  FERRY_SCATTER_KINDS(FERRY_MULTI_SAME)
  FERRY_MULTI_SAME(gather_nd)
  FERRY_SCATTER_ND_KINDS(FERRY_MULTI_SAME)
  FERRY_MULTI_SAME(repeat)
  FERRY_MULTI_FORWARD(where, detail::multi::Rule::same_last)
  FERRY_MULTI_FORWARD(argmax, detail::multi::Rule::to_int)
  FERRY_MULTI_FORWARD(argmin, detail::multi::Rule::to_int)
  FERRY_MULTI_FORWARD(argsort, detail::multi::Rule::to_int)
  FERRY_MULTI_FORWARD(to_int, detail::multi::Rule::to_int)
  FERRY_MULTI_FORWARD(int_full, detail::multi::Rule::to_int)
  FERRY_MULTI_FORWARD(int_arange, detail::multi::Rule::to_int)
  FERRY_MULTI_FORWARD(to_bool, detail::multi::Rule::to_bool)
  FERRY_MULTI_FORWARD(bool_full, detail::multi::Rule::to_bool)
  FERRY_MULTI_FORWARD(to_float, detail::multi::Rule::to_float)
  FERRY_MULTI_FORWARD(float_full, detail::multi::Rule::to_float)
  FERRY_MULTI_FORWARD(float_arange, detail::multi::Rule::to_float)
  FERRY_MULTI_FORWARD(float_random, detail::multi::Rule::to_float)
  FERRY_MULTI_FORWARD(int_random, detail::multi::Rule::to_int)

  // ---- quantized ops: the member's kernel, else its host path through QuantizedParts ---------
  Quant quantize(Plain x, const quant::Scheme& s, std::span<const float> scales,
                 std::span<const std::int32_t> offsets) {
    return with_float(std::move(x), "quantize", [&](auto& b, auto hx, const auto& d) {
      return detail::qhost::quantize(b, std::move(hx), s, scales, offsets, d);
    });
  }
  Quant quantize_dynamic(Plain x, const quant::Scheme& s) {
    return with_float(std::move(x), "quantize_dynamic", [&](auto& b, auto hx, const auto& d) {
      return detail::qhost::quantize_dynamic(b, std::move(hx), s, d);
    });
  }
  Plain dequantize(Quant q, DType to) {
    const Device dev = q.dev;
    return on_index(q.h.index(), [&]<std::size_t I>(idx<I>) {
      return Plain{
          decltype(Plain::h)(plain_index<0, I>,
                             detail::qhost::dequantize(member<I>(), std::get<I>(std::move(q.h)), to,
                                                       std::get<I>(dev.v))),
          dev};
    });
  }
  /// With a member that has no fused q_matmul (q_linear), w is dequantized to f32, so x must
  /// be f32.
  Plain q_matmul(Plain x, Quant w) { return q_product(std::move(x), std::move(w), false); }
  Plain q_linear(Plain x, Quant w) { return q_product(std::move(x), std::move(w), true); }
  Quant q_reshape(Quant q, const Shape& to) {
    return q_layout(
        std::move(q),
        [&](auto& b, auto h) -> decltype(b.q_reshape(std::move(h), to)) {
          return b.q_reshape(std::move(h), to);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_reshape(p, to); });
  }
  Quant q_permute(Quant q, std::span<const std::int64_t> perm) {
    return q_layout(
        std::move(q),
        [&](auto& b, auto h) -> decltype(b.q_permute(std::move(h), perm)) {
          return b.q_permute(std::move(h), perm);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_permute(p, perm); });
  }
  Quant q_flip(Quant q, std::span<const std::int64_t> axes) {
    return q_layout(
        std::move(q),
        [&](auto& b, auto h) -> decltype(b.q_flip(std::move(h), axes)) {
          return b.q_flip(std::move(h), axes);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_flip(p, axes); });
  }
  Quant q_slice(Quant q, std::span<const std::pair<std::int64_t, std::int64_t>> r) {
    return q_layout(
        std::move(q),
        [&](auto& b, auto h) -> decltype(b.q_slice(std::move(h), r)) {
          return b.q_slice(std::move(h), r);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_slice(p, r); });
  }
#undef FERRY_MULTI_BOOL_SCALAR
#undef FERRY_MULTI_BOOL
#undef FERRY_MULTI_SAME_SCALAR
#undef FERRY_MULTI_SAME
#undef FERRY_MULTI_FORWARD
#undef FERRY_MULTI_FORWARD_IF

 private:
  Plain q_product(Plain x, Quant w, bool transposed) {
    const Device dev = x.dev;
    return on_index(w.h.index(), [&]<std::size_t I>(idx<I>) {
      if (x.h.index() != 3 * I)
        detail::raise<DTypeError>("dtype",
                                  "multi: {} needs float activations on the member of its weights",
                                  transposed ? "q_linear" : "q_matmul");
      auto xh = std::get<3 * I>(std::move(x.h));
      auto wh = std::get<I>(std::move(w.h));
      auto& m = member<I>();
      const auto& d = std::get<I>(dev.v);
      return Plain{
          decltype(Plain::h)(
              plain_index<0, I>,
              transposed ? detail::qhost::q_linear(m, std::move(xh), std::move(wh), DType::f32, d)
                         : detail::qhost::q_matmul(m, std::move(xh), std::move(wh), DType::f32, d)),
          dev};
    });
  }
  template <std::size_t I>
  using idx = detail::multi::idx<I>;
  using args = detail::multi::Args<Plain, Quant, Device>;

  /// f(idx<I>{}) for the member index i; with a third argument, over the 3 * N plain
  /// alternatives.
  template <class F>
  static decltype(auto) on_index(std::size_t i, F&& f) {
    return detail::multi::on_index<0, N>(i, f);
  }
  template <class F>
  static decltype(auto) on_index(std::size_t i, F&& f, std::size_t /*3 * N*/) {
    return detail::multi::on_index<0, 3 * N>(i, f);
  }

  template <std::size_t K, std::size_t I>
  static constexpr auto plain_index = std::in_place_index<3 * I + K>;

  template <std::size_t K>
  Plain from_data(TensorData d, const Device& dev) {
    return on_index(dev.v.index(), [&]<std::size_t I>(idx<I>) {
      auto& b = member<I>();
      const auto& md = std::get<I>(dev.v);
      if constexpr (K == 0)
        return Plain{decltype(Plain::h)(plain_index<0, I>, b.float_from_data(std::move(d), md)),
                     dev};
      else if constexpr (K == 1)
        return Plain{decltype(Plain::h)(plain_index<1, I>, b.int_from_data(std::move(d), md)), dev};
      else
        return Plain{decltype(Plain::h)(plain_index<2, I>, b.bool_from_data(std::move(d), md)),
                     dev};
    });
  }
  TensorData into_data(Plain h) {
    return on_index(
        h.h.index(),
        [&]<std::size_t J>(idx<J>) {
          auto& b = member<J / 3>();
          auto x = std::get<J>(std::move(h.h));
          if constexpr (J % 3 == 0)
            return b.float_into_data(std::move(x));
          else if constexpr (J % 3 == 1)
            return b.int_into_data(std::move(x));
          else
            return b.bool_into_data(std::move(x));
        },
        3 * N);
  }
  Plain to_device(Plain h, const Device& dev) {
    const std::size_t from = h.h.index() / 3, to = dev.v.index(), kind = h.h.index() % 3;
    if (from == to)
      return on_index(
          h.h.index(),
          [&]<std::size_t J>(idx<J>) {
            auto& b = member<J / 3>();
            const auto& md = std::get<J / 3>(dev.v);
            auto x = std::get<J>(std::move(h.h));
            if constexpr (J % 3 == 0)
              return Plain{
                  decltype(Plain::h)(std::in_place_index<J>, b.float_to_device(std::move(x), md)),
                  dev};
            else if constexpr (J % 3 == 1)
              return Plain{
                  decltype(Plain::h)(std::in_place_index<J>, b.int_to_device(std::move(x), md)),
                  dev};
            else
              return Plain{
                  decltype(Plain::h)(std::in_place_index<J>, b.bool_to_device(std::move(x), md)),
                  dev};
          },
          3 * N);
    // Across members: through host data, which both sides understand.
    TensorData d = into_data(std::move(h));
    if (kind == 0) return from_data<0>(std::move(d), dev);
    if (kind == 1) return from_data<1>(std::move(d), dev);
    return from_data<2>(std::move(d), dev);
  }

  template <detail::multi::Rule R>
  using result_t = std::conditional_t<R == detail::multi::Rule::to_quantized, Quant, Plain>;

  template <detail::multi::Rule R, class Call, class... A>
  result_t<R> forward(const char* op, Call call, A&&... a) {
    using detail::multi::Rule;
    const Device* where = args::owner(a...);
    if (!where)
      detail::raise<Unsupported>("unsupported", "multi: '{}' has no operand to route by", op);
    const Device dev = *where;
    const std::size_t i = dev.v.index();
    std::size_t kind = 0;
    if constexpr (R == Rule::same_first)
      kind = args::template plain_kind<false>(a...);
    else if constexpr (R == Rule::same_last)
      kind = args::template plain_kind<true>(a...);
    else if constexpr (R == Rule::to_int)
      kind = 1;
    else if constexpr (R == Rule::to_bool)
      kind = 2;
    return on_index(i, [&]<std::size_t I>(idx<I>) -> result_t<R> {
      auto& b = member<I>();
      return args::template unwrap_all<I>(
          [&](auto&&... x) -> result_t<R> {
            if constexpr (std::is_invocable_v<Call&, Bi<I>&, decltype(x)...>) {
              auto out = call(b, std::forward<decltype(x)>(x)...);
              if constexpr (R == Rule::to_quantized) {
                return Quant{decltype(Quant::h)(std::in_place_index<I>, std::move(out)), dev};
              } else {
                // Plain kinds of one member may share a C++ type: place by the rule's kind.
                using O = decltype(out);
                using V = decltype(Plain::h);
                if (kind == 0) {
                  if constexpr (std::is_same_v<O, std::variant_alternative_t<3 * I, V>>)
                    return Plain{V(std::in_place_index<3 * I>, std::move(out)), dev};
                } else if (kind == 1) {
                  if constexpr (std::is_same_v<O, std::variant_alternative_t<3 * I + 1, V>>)
                    return Plain{V(std::in_place_index<3 * I + 1>, std::move(out)), dev};
                } else {
                  if constexpr (std::is_same_v<O, std::variant_alternative_t<3 * I + 2, V>>)
                    return Plain{V(std::in_place_index<3 * I + 2>, std::move(out)), dev};
                }
                detail::raise<DTypeError>(
                    "dtype", "multi: backend '{}' returned a handle of the wrong kind from '{}'",
                    Bi<I>::name(), op);
              }
            } else {
              throw detail::unsupported<Bi<I>>(op);
            }
          },
          std::forward<A>(a)...);
    });
  }

  template <class F>
  Quant with_float(Plain x, const char* op, F&& f) {
    const Device dev = x.dev;
    return on_index(x.h.index() / 3, [&]<std::size_t I>(idx<I>) {
      if (x.h.index() != 3 * I)
        detail::raise<DTypeError>("dtype", "multi: {} needs a float tensor", op);
      return Quant{
          decltype(Quant::h)(std::in_place_index<I>,
                             f(member<I>(), std::get<3 * I>(std::move(x.h)), std::get<I>(dev.v))),
          dev};
    });
  }
  template <class Kernel, class Host>
  Quant q_layout(Quant q, Kernel&& kernel, Host&& host) {
    const Device dev = q.dev;
    return on_index(q.h.index(), [&]<std::size_t I>(idx<I>) {
      return Quant{
          decltype(Quant::h)(std::in_place_index<I>,
                             detail::qhost::layout(member<I>(), std::get<I>(std::move(q.h)),
                                                   std::get<I>(dev.v), kernel, host)),
          dev};
    });
  }

  std::tuple<Bs...> b_;
};

/// A bridge lists every device only when each of its members does.
template <Backend... Bs>
inline constexpr bool lists_all_devices<Multi<Bs...>> = (lists_all_devices<Bs> && ...);

}  // namespace ferry

template <ferry::Backend... Bs>
struct fmt::formatter<ferry::MultiDevice<Bs...>> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::MultiDevice<Bs...>& d, Ctx& ctx) const {
    return write(std::visit([](const auto& x) { return fmt::format("{}", x); }, d.v), ctx);
  }
};

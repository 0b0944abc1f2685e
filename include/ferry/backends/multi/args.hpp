// Ferry: how Multi<Bs...> unwraps the arguments of a forwarded kernel: the device an op runs
// on (its first handle's or device argument's), the handle kind of its result, and each
// argument as the member backend's own handle. Included by ferry/backends/multi.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ferry/error.hpp"

namespace ferry::detail::multi {

template <std::size_t I>
struct idx {};

/// Over Multi's handle types: Plain (alternative 3*i + kind holds member i's Float, Int or Bool
/// handle), Quant (alternative i: member i's quantized handle) and Device.
template <class Plain, class Quant, class Device>
struct Args {
  template <class A>
  static constexpr bool is_plain = std::is_same_v<std::remove_cvref_t<A>, Plain>;
  template <class A>
  static constexpr bool is_quant = std::is_same_v<std::remove_cvref_t<A>, Quant>;
  template <class A>
  static constexpr bool is_device = std::is_same_v<std::remove_cvref_t<A>, Device>;
  template <class A>
  static constexpr bool is_plain_vec = std::is_same_v<std::remove_cvref_t<A>, std::vector<Plain>>;

  /// The device of the first handle or device among the arguments: where the result lives.
  template <class... A>
  static const Device* owner(const A&... a) {
    const Device* d = nullptr;
    auto look = [&](const auto& x) {
      using X = std::remove_cvref_t<decltype(x)>;
      if (d) return;
      if constexpr (is_plain<X> || is_quant<X>)
        d = &x.dev;
      else if constexpr (is_device<X>)
        d = &x;
      else if constexpr (is_plain_vec<X>) {
        if (!x.empty()) d = &x.front().dev;
      }
    };
    (look(a), ...);
    return d;
  }
  /// The kind (0 float, 1 int, 2 bool) of the first or last plain argument.
  template <bool Last, class... A>
  static std::size_t plain_kind(const A&... a) {
    std::size_t k = 0;
    bool found = false;
    auto look = [&](const auto& x) {
      using X = std::remove_cvref_t<decltype(x)>;
      if (found && !Last) return;
      if constexpr (is_plain<X>) {
        k = x.h.index() % 3;
        found = true;
      } else if constexpr (is_plain_vec<X>) {
        if (!x.empty()) {
          k = x.front().h.index() % 3;
          found = true;
        }
      }
    };
    (look(a), ...);
    return k;
  }

  /// Calls k(a unwrapped for member I).
  template <std::size_t I, class A, class K>
  static decltype(auto) unwrap_one(A&& a, K&& k) {
    using X = std::remove_cvref_t<A>;
    if constexpr (is_plain<X>) {
      const std::size_t j = a.h.index();
      if (j / 3 != I)
        raise<DeviceError>("device", "multi: operands live on different member backends");
      if (j % 3 == 0) return k(std::get<3 * I>(std::forward<A>(a).h));
      if (j % 3 == 1) return k(std::get<3 * I + 1>(std::forward<A>(a).h));
      return k(std::get<3 * I + 2>(std::forward<A>(a).h));
    } else if constexpr (is_quant<X>) {
      if (a.h.index() != I)
        raise<DeviceError>("device", "multi: operands live on different member backends");
      return k(std::get<I>(std::forward<A>(a).h));
    } else if constexpr (is_device<X>) {
      return k(std::get<I>(a.v));
    } else if constexpr (is_plain_vec<X>) {
      const std::size_t kind = a.empty() ? 0 : a.front().h.index() % 3;
      auto collect = [&]<std::size_t J>(idx<J>) {
        std::vector<std::variant_alternative_t<J, decltype(Plain::h)>> v;
        v.reserve(a.size());
        for (auto& p : a) {
          if (p.h.index() != J)
            raise<DTypeError>("dtype", "multi: cat operands of different kinds or members");
          v.push_back(std::get<J>(std::move(p.h)));
        }
        return k(std::move(v));
      };
      if (kind == 0) return collect(idx<3 * I>{});
      if (kind == 1) return collect(idx<3 * I + 1>{});
      return collect(idx<3 * I + 2>{});
    } else {
      return k(std::forward<A>(a));
    }
  }
  template <std::size_t I, class F>
  static decltype(auto) unwrap_all(F&& f) {
    return f();
  }
  template <std::size_t I, class F, class A, class... R>
  static decltype(auto) unwrap_all(F&& f, A&& a, R&&... r) {
    return unwrap_one<I>(std::forward<A>(a), [&](auto&& ua) -> decltype(auto) {
      return unwrap_all<I>(
          [&](auto&&... ur) -> decltype(auto) {
            return f(std::forward<decltype(ua)>(ua), std::forward<decltype(ur)>(ur)...);
          },
          std::forward<R>(r)...);
    });
  }
};

}  // namespace ferry::detail::multi

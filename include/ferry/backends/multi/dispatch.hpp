// Ferry: Multi's compile-time plumbing: the handle variants of its members, the result rule
// of each forwarded kernel, and the dispatch of a runtime member index to a compile-time one.
// Included by ferry/backends/multi.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <tuple>
#include <variant>

#include "ferry/backends/multi/args.hpp"

namespace ferry::detail::multi {
template <class... Ts>
struct to_variant;
template <class... Ts>
struct to_variant<std::tuple<Ts...>> {
  using type = std::variant<Ts...>;
};
template <class B>
using plain_tuple =
    std::tuple<typename B::FloatHandle, typename B::IntHandle, typename B::BoolHandle>;

/// Whether a member reports the bytes of its handles (Multi's nbytes forwards when it does).
template <class B>
inline constexpr bool has_plain_nbytes = requires(B& b, const typename B::FloatHandle& f,
                                                  const typename B::IntHandle& i,
                                                  const typename B::BoolHandle& bo) {
  b.nbytes(f);
  b.nbytes(i);
  b.nbytes(bo);
};
template <class B>
inline constexpr bool has_quant_nbytes = requires(B& b, const typename B::QuantizedHandle& q) {
  b.nbytes(q);
};

/// The result kind of each forwarded kernel: the kind of its first (or last) plain handle
/// argument, or a fixed kind.
enum class Rule { same_first, same_last, to_float, to_int, to_bool, to_quantized };

/// Calls f(idx<I>{}) for the runtime index i in [I, End) (the last index catches anything
/// larger): how Multi reaches the member (or plain alternative) a handle's variant index names.
template <std::size_t I, std::size_t End, class F>
decltype(auto) on_index(std::size_t i, F& f) {
  if constexpr (I + 1 == End) {
    return f(idx<I>{});
  } else {
    if (i == I) return f(idx<I>{});
    return on_index<I + 1, End>(i, f);
  }
}
}  // namespace ferry::detail::multi

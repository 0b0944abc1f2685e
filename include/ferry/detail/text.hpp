// Ferry: TextFormatter, the base of Ferry's fmt formatters — each type is printed as text built
// with fmt::format (libfmt's compiled engine), so that a file printing a Shape or a Tensor does
// not instantiate fmt's formatting engine again for its output iterator.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "ferry/config.hpp"

namespace ferry::detail {

/// `text` formatted with the spec `spec` as a string would be (`>10`, `^8`, `*<6`, ...).
[[nodiscard]] FERRY_FUNC std::string padded_text(std::string_view spec, std::string_view text);

/// @brief Base of a formatter for a Ferry type: accepts a string's format spec (fill, align,
/// width) and writes the text given to write().
///
/// @code
///   template <> struct fmt::formatter<my::T> : ferry::detail::TextFormatter {
///     template <class Ctx> auto format(const my::T& x, Ctx& ctx) const { return
///     write(to_string(x), ctx); }
///   };
/// @endcode
struct TextFormatter {
  std::string_view spec;

  template <class ParseContext>
  constexpr auto parse(ParseContext& ctx) {
    auto it = ctx.begin();
    const auto first = it;
    while (it != ctx.end() && *it != '}') ++it;
    spec = std::string_view(first, static_cast<std::size_t>(it - first));
    return it;
  }
  template <class Ctx>
  auto write(std::string_view text, Ctx& ctx) const {
    if (spec.empty()) return std::copy(text.begin(), text.end(), ctx.out());
    const std::string s = padded_text(spec, text);
    return std::copy(s.begin(), s.end(), ctx.out());
  }
};

}  // namespace ferry::detail

#ifdef FERRY_HEADER_ONLY
#  include "ferry/impl/error.hpp"
#endif

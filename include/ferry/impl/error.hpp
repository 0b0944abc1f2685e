// Ferry: detail::error_message (error.hpp) and detail::padded_text (detail/text.hpp). Compiled once
// by src/error.cpp, or included inline by error.hpp with FERRY_HEADER_ONLY.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/format.h>

#include <iterator>
#include <string>

#include "ferry/config.hpp"
#include "ferry/detail/text.hpp"
#include "ferry/error.hpp"

namespace ferry::detail {

FERRY_FUNC std::string error_message(const char* id, fmt::string_view f, fmt::format_args args) {
  std::string out = "[ferry.";
  out += id;
  out += "] ";
  fmt::vformat_to(std::back_inserter(out), f, args);
  return out;
}

FERRY_FUNC std::string padded_text(std::string_view spec, std::string_view text) {
  std::string f = "{:";
  f += spec;
  f += '}';
  return fmt::vformat(f, fmt::make_format_args(text));
}

}  // namespace ferry::detail

// Ferry: detail::error_message (error.hpp) and detail::padded_text (detail/text.hpp). Compiled once
// by src/error.cpp, or included inline by error.hpp with FERRY_HEADER_ONLY.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <iterator>
#include <memory>
#include <string>
#include <typeinfo>

#if __has_include(<cxxabi.h>)
#  include <cxxabi.h>
#  define FERRY_DETAIL_HAS_CXXABI 1
#endif

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

// The name of `t` as its source spells it where the ABI can demangle it, else as typeid says.
FERRY_FUNC std::string demangled_name(const std::type_info& t) {
#ifdef FERRY_DETAIL_HAS_CXXABI
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status),
                                           std::free);
  if (status == 0 && s) return s.get();
#endif
  return t.name();
}

FERRY_FUNC std::string current_exception_text() {
  try {
    throw;
  } catch (const std::exception& e) {
    return demangled_name(typeid(e)) + ": " + e.what();
  } catch (const char* s) {
    return std::string("const char*: ") + (s ? s : "(null)");
  } catch (const std::string& s) {
    return "std::string: " + s;
  } catch (...) {
#ifdef FERRY_DETAIL_HAS_CXXABI
    if (const std::type_info* t = abi::__cxa_current_exception_type())
      return demangled_name(*t) + " (not a std::exception)";
#endif
    return "an object of unknown type (not a std::exception)";
  }
}

FERRY_FUNC std::string padded_text(std::string_view spec, std::string_view text) {
  std::string f = "{:";
  f += spec;
  f += '}';
  return fmt::vformat(f, fmt::make_format_args(text));
}

}  // namespace ferry::detail

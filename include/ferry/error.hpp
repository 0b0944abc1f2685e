// Ferry: the exception types every layer throws.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "ferry/config.hpp"

namespace ferry {

/// @brief Base of every exception Ferry throws on bad input or a failed op.
///
/// Messages carry a stable id in brackets, then the values involved, e.g.
/// `[ferry.shape] add: shapes [2, 3] and [4] cannot be broadcast`.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Shapes that do not fit the operation (broadcast, matmul, reshape, data size).
class ShapeError : public Error {
  using Error::Error;
};
/// A dtype the operation does not take, or two operands whose dtypes differ.
class DTypeError : public Error {
  using Error::Error;
};
/// An axis, index or range out of bounds, or an argument outside its domain.
class IndexError : public Error {
  using Error::Error;
};
/// A value outside the op's domain (integer division by zero, an empty max, a bad range).
class ValueError : public Error {
  using Error::Error;
};
/// An unknown device, or operands that live on different devices.
class DeviceError : public Error {
  using Error::Error;
};
/// A tensor id the registry does not hold, of the wrong kind, already consumed, or a
/// Tensor used after it was moved from.
class HandleError : public Error {
  using Error::Error;
};
/// The backend does not implement the requested op.
class Unsupported : public Error {
  using Error::Error;
};
/// Invalid quantization scheme, parameters or packed buffers.
class QuantError : public Error {
  using Error::Error;
};
/// A device could not allocate the memory an op needs (its output, a transfer's copy, a
/// kernel's scratch). The op fails as a whole: other tensors and the router stay usable.
class OutOfMemory : public Error {
  using Error::Error;
};
/// An op that failed on a device, reported where its result is used or synced.
class OpFailed : public Error {
  using Error::Error;
};
/// A backend's kernel or transfer threw something that is neither a ferry::Error nor
/// std::bad_alloc (a std::runtime_error, an int, ...). The message names the op, the backend,
/// the device and the output; the original object is nested: `std::rethrow_if_nested(e)` throws
/// it again. Made by the interpreter inside its catch block, which is where the nested part
/// captures the original (one made outside a handler nests nothing, and then
/// rethrow_if_nested terminates, as for any std::nested_exception).
class BackendError : public Error, public std::nested_exception {
  using Error::Error;
};

namespace detail {

/// `[ferry.<id>] <text>`, the text formatted by fmt at run time from type-erased arguments.
/// Out of line, so that each raise() site costs its arguments' formatters and no copy of fmt's
/// formatting engine (libfmt has it compiled).
[[nodiscard]] FERRY_FUNC std::string error_message(const char* id, fmt::string_view f,
                                                   fmt::format_args args);

/// The exception being handled, as a message quotes it: `<type>: <what()>` for a
/// std::exception, `<type>: <text>` for a thrown C string or std::string, and
/// `<type> (not a std::exception)` for anything else (the type demangled where the C++ ABI
/// offers it). Call it only inside a catch block.
[[nodiscard]] FERRY_FUNC std::string current_exception_text();

/// The values of `r` as text joined by `sep`, for messages: each with fmt::format, which runs
/// libfmt's compiled engine, where fmt::join would instantiate it again in every file.
template <class R>
[[nodiscard]] std::string joined(const R& r, const char* sep = ", ") {
  std::string s;
  bool first = true;
  for (const auto& x : r) {
    if (!first) s += sep;
    first = false;
    s += fmt::format("{}", x);
  }
  return s;
}

/// Throws `E` with the message `[ferry.<id>] <formatted text>`. The format string is checked
/// against the arguments at compile time.
template <class E, class... Args>
[[noreturn]] void raise(const char* id, fmt::format_string<Args...> f, Args&&... args) {
  throw E(error_message(id, f, fmt::make_format_args(args...)));
}

}  // namespace detail
}  // namespace ferry

#ifdef FERRY_HEADER_ONLY
#  include "ferry/impl/error.hpp"
#endif

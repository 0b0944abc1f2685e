// Ferry: the exception types every layer throws.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

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

namespace detail {

/// Throws `E` with the message `[ferry.<id>] <formatted text>`.
template <class E, class... Args>
[[noreturn]] void raise(const char* id, fmt::format_string<Args...> f, Args&&... args) {
  throw E(fmt::format("[ferry.{}] {}", id, fmt::format(f, std::forward<Args>(args)...)));
}

}  // namespace detail
}  // namespace ferry

// Ferry: Shape, the dims of a tensor, and its fmt formatter.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <ostream>
#include <span>
#include <vector>

#include "ferry/error.hpp"

namespace ferry {

/// @brief The dims of a tensor, outermost first (row-major).
///
/// @code
///   ferry::Shape s{2, 3};      // s.rank() == 2, s.numel() == 6, fmt prints "[2, 3]"
/// @endcode
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}
  explicit Shape(std::span<const std::int64_t> dims) : dims_(dims.begin(), dims.end()) {}

  [[nodiscard]] std::size_t rank() const noexcept { return dims_.size(); }
  [[nodiscard]] std::int64_t numel() const noexcept {
    return std::accumulate(dims_.begin(), dims_.end(), std::int64_t{1}, std::multiplies<>{});
  }
  [[nodiscard]] std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
  [[nodiscard]] std::int64_t& operator[](std::size_t i) noexcept { return dims_[i]; }
  [[nodiscard]] const std::vector<std::int64_t>& dims() const noexcept { return dims_; }
  [[nodiscard]] auto begin() const noexcept { return dims_.begin(); }
  [[nodiscard]] auto end() const noexcept { return dims_.end(); }

  /// Row-major strides, in elements.
  [[nodiscard]] std::vector<std::int64_t> strides() const {
    std::vector<std::int64_t> s(dims_.size(), 1);
    for (std::size_t i = dims_.size(); i-- > 1;) s[i - 1] = s[i] * dims_[i];
    return s;
  }

  /// Normalises a possibly negative axis against this rank; throws IndexError naming `op`.
  [[nodiscard]] std::size_t axis(std::int64_t a, const char* op) const {
    const auto r = static_cast<std::int64_t>(dims_.size());
    const std::int64_t n = a < 0 ? a + r : a;
    if (n < 0 || n >= r)
      detail::raise<IndexError>("axis", "{}: axis {} is out of range for shape [{}] (rank {})", op,
                                a, fmt::join(dims_, ", "), r);
    return static_cast<std::size_t>(n);
  }

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<std::int64_t> dims_;
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << fmt::format("[{}]", fmt::join(s.dims(), ", "));
}

}  // namespace ferry

template <>
struct fmt::formatter<ferry::Shape> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const ferry::Shape& s, Ctx& ctx) const {
    return fmt::format_to(ctx.out(), "[{}]", fmt::join(s.dims(), ", "));
  }
};

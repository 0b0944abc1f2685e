// Ferry: Shape, the dims of a tensor, and its fmt formatter.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <span>
#include <utility>
#include <vector>

#include "ferry/detail/checked.hpp"
#include "ferry/detail/text.hpp"
#include "ferry/error.hpp"

namespace ferry {

/// @brief The dims of a tensor, outermost first (row-major).
///
/// @code
///   ferry::Shape s{2, 3};      // s.rank() == 2, s.numel() == 6, fmt prints "[2, 3]"
/// @endcode
/// Up to rank 6 the dims are stored inline (no allocation): every op records a Shape per
/// operand, so on the dispatch path a heap-allocated Shape would cost more than a tiny kernel.
/// Higher ranks work the same, with the dims on the heap.
class Shape {
 public:
  /// Ranks up to this many dims need no allocation.
  static constexpr std::size_t inline_rank = 6;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.size()); }
  explicit Shape(const std::vector<std::int64_t>& dims) { assign(dims.data(), dims.size()); }
  explicit Shape(std::span<const std::int64_t> dims) { assign(dims.data(), dims.size()); }
  // Copies the inline array whole (a fixed 48 bytes, no loop over the rank): Shapes are copied
  // several times per op on the dispatch path.
  Shape(const Shape& o) : small_(o.small_), n_(o.n_) {
    if (o.big_) {
      big_ = std::make_unique<std::int64_t[]>(n_);
      std::copy_n(o.big_.get(), n_, big_.get());
    }
  }
  Shape(Shape&& o) noexcept : small_(o.small_), big_(std::move(o.big_)), n_(o.n_) { o.n_ = 0; }
  Shape& operator=(const Shape& o) {
    if (this != &o) {
      Shape t(o);
      *this = std::move(t);
    }
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    small_ = o.small_;
    big_ = std::move(o.big_);
    n_ = std::exchange(o.n_, 0);
    return *this;
  }
  ~Shape() = default;

  [[nodiscard]] std::size_t rank() const noexcept { return n_; }
  /// The product of the dims. Throws ShapeError when it does not fit in int64 (checked, never
  /// wrapped: a wrapped count would make a kernel allocate or index a buffer of the wrong size).
  [[nodiscard]] std::int64_t numel() const {
    if (const auto n = detail::product_i64(dims())) return *n;
    too_many_elements();
  }
  [[nodiscard]] std::int64_t operator[](std::size_t i) const noexcept { return data()[i]; }
  [[nodiscard]] std::int64_t& operator[](std::size_t i) noexcept { return data()[i]; }
  [[nodiscard]] std::span<const std::int64_t> dims() const noexcept { return {data(), n_}; }
  [[nodiscard]] std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }
  [[nodiscard]] const std::int64_t* begin() const noexcept { return data(); }
  [[nodiscard]] const std::int64_t* end() const noexcept { return data() + n_; }

  /// Row-major strides, in elements (valid for a shape whose numel() fits: each stride is at
  /// most numel()).
  [[nodiscard]] std::vector<std::int64_t> strides() const {
    std::vector<std::int64_t> s(n_, 1);
    // Past int64 only when another dim is 0 (numel() fits): no element is addressed then.
    for (std::size_t i = n_; i-- > 1;) s[i - 1] = detail::mul_i64(s[i], data()[i]).value_or(0);
    return s;
  }

  /// Normalises a possibly negative axis against this rank; throws IndexError naming `op`.
  [[nodiscard]] std::size_t axis(std::int64_t a, const char* op) const {
    const auto r = static_cast<std::int64_t>(n_);
    const std::int64_t n = a < 0 ? a + r : a;
    if (n < 0 || n >= r)
      detail::raise<IndexError>("axis", "{}: axis {} is out of range for shape [{}] (rank {})", op,
                                a, ::ferry::detail::joined(dims()), r);
    return static_cast<std::size_t>(n);
  }

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  [[noreturn]] void too_many_elements() const;
  [[nodiscard]] const std::int64_t* data() const noexcept {
    return big_ ? big_.get() : small_.data();
  }
  [[nodiscard]] std::int64_t* data() noexcept { return big_ ? big_.get() : small_.data(); }
  void assign(const std::int64_t* p, std::size_t n) {
    if (n > inline_rank) {
      big_ = std::make_unique<std::int64_t[]>(n);
      std::copy_n(p, n, big_.get());
    } else {
      std::copy_n(p, n, small_.data());
    }
    n_ = n;
  }

  std::array<std::int64_t, inline_rank> small_{};
  std::unique_ptr<std::int64_t[]> big_;
  std::size_t n_ = 0;
};

namespace detail {
/// `[2, 3]`: how shapes print.
[[nodiscard]] inline std::string shape_string(std::span<const std::int64_t> dims) {
  // Appended, not `"[" + ... + "]"`: GCC 12 at -O3 warns (-Wrestrict, a false positive, GCC bug
  // 105329) on that form.
  std::string s = "[";
  s += joined(dims);
  s += ']';
  return s;
}
}  // namespace detail

inline void Shape::too_many_elements() const {
  detail::raise<ShapeError>("shape", "shape {} has more elements than int64 holds (2^63 - 1)",
                            detail::shape_string(dims()));
}

inline std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << fmt::format("[{}]", ::ferry::detail::joined(s.dims()));
}

}  // namespace ferry

template <>
struct fmt::formatter<ferry::Shape> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::Shape& s, Ctx& ctx) const {
    return write(ferry::detail::shape_string(s.dims()), ctx);
  }
};

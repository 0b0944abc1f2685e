// Ferry: small parameter types shared by the IR and backend kernels.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstdint>

#include "ferry/detail/text.hpp"

namespace ferry {

/// A half-open range [start, end) with a positive step along one dim. Ranges that reach a
/// backend kernel are already normalised and checked by the router: 0 <= start <= end <= dim,
/// step >= 1; the slice has ceil((end - start) / step) elements along that dim.
struct Range {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int64_t step = 1;
  /// Elements the range selects for step >= 1: ceil((end - start) / step), computed without
  /// `end - start + step - 1`, which overflows for steps near 2^63.
  [[nodiscard]] constexpr std::int64_t size() const noexcept {
    if (end <= start || step < 1) return 0;
    const std::uint64_t span = static_cast<std::uint64_t>(end) - static_cast<std::uint64_t>(start);
    const std::uint64_t n = (span - 1) / static_cast<std::uint64_t>(step) + 1;
    return n > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(n);
  }
  friend bool operator==(const Range&, const Range&) = default;
};

/// A random distribution for `random`: uniform on [a, b), or normal with mean a and std b.
struct Distribution {
  enum class Kind : std::uint8_t { uniform, normal };
  Kind kind = Kind::uniform;
  double a = 0.0;
  double b = 1.0;
  static constexpr Distribution uniform(double lo = 0.0, double hi = 1.0) noexcept {
    return {Kind::uniform, lo, hi};
  }
  static constexpr Distribution normal(double mean = 0.0, double std = 1.0) noexcept {
    return {Kind::normal, mean, std};
  }
  friend bool operator==(const Distribution&, const Distribution&) = default;
};

}  // namespace ferry

template <>
struct fmt::formatter<ferry::Range> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::Range& r, Ctx& ctx) const {
    return write(r.step == 1 ? fmt::format("{}:{}", r.start, r.end)
                             : fmt::format("{}:{}:{}", r.start, r.end, r.step),
                 ctx);
  }
};
template <>
struct fmt::formatter<ferry::Distribution> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::Distribution& d, Ctx& ctx) const {
    return write(d.kind == ferry::Distribution::Kind::uniform
                     ? fmt::format("uniform({}, {})", d.a, d.b)
                     : fmt::format("normal({}, {})", d.a, d.b),
                 ctx);
  }
};

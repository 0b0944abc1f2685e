// Ferry: shape and dtype inference and checks that the router runs before recording an op
// (internal). Errors here are thrown at the call, before anything is queued.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <variant>
#include <vector>

#include "ferry/detail/checked.hpp"
#include "ferry/detail/convert.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/params.hpp"
#include "ferry/shape.hpp"

namespace ferry::detail {

/// numpy broadcasting of two shapes.
inline Shape broadcast(const char* op, const Shape& a, const Shape& b) {
  if (a == b) return a;  // the common case, and a Shape copy allocates nothing up to inline_rank
  const std::size_t r = std::max(a.rank(), b.rank());
  std::array<std::int64_t, Shape::inline_rank> small{};
  std::vector<std::int64_t> big(r > small.size() ? r : 0);
  const std::span<std::int64_t> out = big.empty() ? std::span(small.data(), r) : std::span(big);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t x = i < r - a.rank() ? 1 : a[i - (r - a.rank())];
    const std::int64_t y = i < r - b.rank() ? 1 : b[i - (r - b.rank())];
    if (x != y && x != 1 && y != 1)
      raise<ShapeError>("shape", "{}: shapes {} and {} cannot be broadcast (dim {}: {} vs {})", op,
                        a, b, i, x, y);
    out[i] = x == 1 ? y : x;
  }
  return Shape(std::span<const std::int64_t>(out));
}

inline void same_dtype(const char* op, DType a, DType b) {
  if (a != b)
    raise<DTypeError>("dtype", "{}: operand dtypes differ ({} and {}); cast one with cast() first",
                      op, a, b);
}

inline void not_quantized(const char* op, DType d) {
  if (d == DType::quantized)
    raise<DTypeError>(
        "dtype", "{}: operand is quantized; dequantize() it first or use the q_ form of the op",
        op);
}

inline void want_kind(const char* op, DType d, std::initializer_list<Kind> kinds,
                      const char* what) {
  not_quantized(op, d);
  for (Kind k : kinds)
    if (kind_of(d) == k) return;
  raise<DTypeError>("dtype", "{}: needs {}, got {}", op, what, d);
}

/// True when `s` is exactly a value of dtype `d` (see detail::scalar_exact).
inline bool scalar_exact_in(const Scalar& s, DType d) {
  if (d == DType::quantized) return true;
  return visit_dtype(d, [&]<class T>(T) { return scalar_exact<T>(s); });
}

/// The one rule for a scalar operand of an int or bool tensor (arithmetic, clamp bounds, full's
/// value, arange's start and step): it must be exactly representable in the tensor's dtype, else
/// ValueError at the call naming `op` and what the scalar is (`i32 + 0.5`, `clamp(i32, 0.5, 3)`,
/// `full(..., 0.5, i32)` all fail alike). Comparisons are exempt: they compare exact values.
inline void scalar_fits(const char* op, const char* what, const Scalar& s, DType d) {
  if (!scalar_exact_in(s, d))
    raise<ValueError>("value", "{}: {} {} is not exactly representable as {}", op, what, s, d);
}

/// The length of an integer arange, and whether its last value is a value of the dtype.
struct IntArangeLen {
  std::int64_t n = 0;  ///< -1: more than 2^53 elements
  bool fits = true;
};
/// @brief The length of an integer arange in exact arithmetic (128 bits), and whether its last
/// value is in dtype `d`.
///
/// `start` is an exact value of `d` and `step` a whole nonzero number of i64 or u64 (checked
/// before); `end` is any finite real. Every value of every integer dtype, u64 above INT64_MAX
/// included, is exact here, where a double would round 2^63 + 5 and 2^63 + 10 to one value.
inline IntArangeLen int_arange_len(const Scalar& start, const Scalar& end, const Scalar& step,
                                   DType d) {
  __extension__ using i128 = __int128;  // GCC and Clang; -Wpedantic-clean through __extension__
  auto exact = [](const Scalar& v) {
    return std::visit([]<class V>(V x) -> i128 { return static_cast<i128>(x); }, v.value());
  };
  const i128 s = exact(start), st = exact(step);
  // For integers x, x < e (e real) is x < ceil(e) and x > e is x > floor(e). |e| is cut at 2^70,
  // past every dtype's range, so that the conversion is defined.
  i128 e;
  if (end.is_floating()) {
    const double v = std::clamp(end.as<double>(), -0x1p70, 0x1p70);
    e = static_cast<i128>(st > 0 ? std::ceil(v) : std::floor(v));
  } else {
    e = exact(end);
  }
  const i128 gap = st > 0 ? e - s : s - e, by = st > 0 ? st : -st;
  const i128 n = gap <= 0 ? 0 : (gap + by - 1) / by;
  // (n - 1) |step| < gap <= 2^71, so `last` cannot overflow.
  if (n > 0) {
    const i128 last = s + (n - 1) * st;
    const bool fits = visit_dtype(d, [&]<class T>(T) {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        return last >= static_cast<i128>(std::numeric_limits<T>::min()) &&
               last <= static_cast<i128>(std::numeric_limits<T>::max());
      else
        return false;
    });
    if (!fits) return {0, false};
  }
  if (n > (i128{1} << 53)) return {-1, true};
  return {static_cast<std::int64_t>(n), true};
}

/// Output shape of a reduction along `dim` (all dims when empty).
inline Shape reduced(const Shape& s, std::optional<std::size_t> dim, bool keepdim) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < s.rank(); ++i) {
    const bool r = !dim || *dim == i;
    if (!r)
      out.push_back(s[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return Shape(std::move(out));
}

/// Resolves one -1 in a reshape target and checks the element count.
inline Shape reshape_target(const char* op, const Shape& from, const Shape& to) {
  std::vector<std::int64_t> d = to.to_vector();
  std::optional<std::size_t> infer;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (d[i] == -1 && !infer)
      infer = i;
    else if (d[i] < 0)
      raise<ShapeError>("shape", "{}: target shape {} has an invalid dim {}", op, to, d[i]);
  }
  if (infer) d[*infer] = 1;  // the product of the known dims, checked (a 0 dim makes it 0)
  const auto product = product_i64(d);
  if (!product)
    raise<ShapeError>("shape", "{}: target shape {} has more elements than int64 holds", op, to);
  const std::int64_t known = *product;
  if (infer) {
    if (known == 0 || from.numel() % known != 0)
      raise<ShapeError>("shape", "{}: cannot reshape {} ({} elements) to {}", op, from,
                        from.numel(), to);
    d[*infer] = from.numel() / known;
  }
  Shape out(std::move(d));
  if (out.numel() != from.numel())
    raise<ShapeError>("shape", "{}: cannot reshape {} ({} elements) to {} ({} elements)", op, from,
                      from.numel(), out, out.numel());
  return out;
}

/// Checks a permutation of 0..rank-1 (negative entries count from the end).
inline std::vector<std::size_t> permutation(const char* op, const Shape& s,
                                            std::span<const std::int64_t> perm) {
  if (perm.size() != s.rank())
    raise<IndexError>("axis", "{}: permutation [{}] has {} entries for shape {} of rank {}", op,
                      ::ferry::detail::joined(perm), perm.size(), s, s.rank());
  std::vector<std::size_t> p(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (std::size_t i = 0; i < perm.size(); ++i) {
    p[i] = s.axis(perm[i], op);
    if (seen[p[i]])
      raise<IndexError>("axis", "{}: permutation [{}] repeats axis {}", op,
                        ::ferry::detail::joined(perm), p[i]);
    seen[p[i]] = true;
  }
  return p;
}

inline std::vector<std::size_t> distinct_axes(const char* op, const Shape& s,
                                              std::span<const std::int64_t> axes) {
  std::vector<std::size_t> out;
  for (auto a : axes) {
    const auto n = s.axis(a, op);
    if (std::find(out.begin(), out.end(), n) != out.end())
      raise<IndexError>("axis", "{}: axis {} is given twice", op, a);
    out.push_back(n);
  }
  return out;
}

/// Normalises python-style slice ranges (negative start/end count from the end, clamped to
/// the dim; fewer ranges than dims means whole dims).
inline std::vector<Range> normalise_ranges(const char* op, const Shape& s,
                                           std::span<const Range> ranges) {
  if (ranges.size() > s.rank())
    raise<IndexError>("axis", "{}: {} ranges for shape {} of rank {}", op, ranges.size(), s,
                      s.rank());
  std::vector<Range> out(s.rank());
  for (std::size_t i = 0; i < s.rank(); ++i) {
    if (i >= ranges.size()) {
      out[i] = Range{0, s[i], 1};
      continue;
    }
    Range r = ranges[i];
    if (r.step < 1) raise<IndexError>("range", "{}: step {} on dim {} must be >= 1", op, r.step, i);
    auto fix = [&](std::int64_t v) {
      return std::clamp(v < 0 ? v + s[i] : v, std::int64_t{0}, s[i]);
    };
    r.start = fix(r.start);
    r.end = std::max(fix(r.end), r.start);
    out[i] = r;
  }
  return out;
}

inline Shape sliced(const Shape& s, std::span<const Range> r) {
  std::vector<std::int64_t> d(s.rank());
  for (std::size_t i = 0; i < s.rank(); ++i) d[i] = r[i].size();
  return Shape(std::move(d));
}

}  // namespace ferry::detail

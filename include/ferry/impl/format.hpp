// Ferry: the PyTorch-style layout of printed tensors (format.hpp declares tensor_string).
// Compiled once by src/format.cpp, or included inline by format.hpp with FERRY_HEADER_ONLY.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/config.hpp"
#include "ferry/data.hpp"
#include "ferry/dtype.hpp"
#include "ferry/format.hpp"

namespace ferry {
namespace detail::print {

inline constexpr int kPrecision = 4;
inline constexpr std::int64_t kThreshold = 1000;  // more elements than this: summarize
inline constexpr std::int64_t kEdgeItems = 3;
inline constexpr std::size_t kLineWidth = 80;

inline double float_at(const TensorData& d, std::int64_t i) {
  return visit_dtype(d.dtype(), [&]<class T>(T) {
    if constexpr (std::is_same_v<T, bool>)
      return d.bytes()[static_cast<std::size_t>(i)] != std::byte{0} ? 1.0 : 0.0;
    else
      return detail::convert<double>(d.values<T>()[static_cast<std::size_t>(i)]);
  });
}
/// An integer element's decimal text (u64 above INT64_MAX included); "1"/"0" for bool.
inline std::string int_text(const TensorData& d, std::int64_t i) {
  return visit_dtype(d.dtype(), [&]<class T>(T) -> std::string {
    if constexpr (std::is_same_v<T, bool>)
      return d.bytes()[static_cast<std::size_t>(i)] != std::byte{0} ? "1" : "0";
    else if constexpr (std::is_integral_v<T>)
      return fmt::format("{}", d.values<T>()[static_cast<std::size_t>(i)]);
    else
      return fmt::format("{}",
                         detail::convert<std::int64_t>(d.values<T>()[static_cast<std::size_t>(i)]));
  });
}

/// The indices of dim `n` that are shown: all, or the first and last kEdgeItems.
inline std::vector<std::int64_t> shown(std::int64_t n, bool summarize) {
  std::vector<std::int64_t> v;
  if (summarize && n > 2 * kEdgeItems) {
    for (std::int64_t i = 0; i < kEdgeItems; ++i) v.push_back(i);
    for (std::int64_t i = n - kEdgeItems; i < n; ++i) v.push_back(i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
  }
  return v;
}

/// torch's _Formatter: picks the notation from the shown elements, then pads all to one width.
class ElementFormatter {
 public:
  ElementFormatter(const TensorData& d, std::span<const std::int64_t> sample) : d_(&d) {
    const Kind k = kind_of(d.dtype());
    if (k != Kind::Float) {
      mode_ = k == Kind::Bool ? Mode::boolean : Mode::integer;
      for (auto i : sample) width_ = std::max(width_, raw(i).size());
      return;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
    bool any = false, integral = true;
    for (auto i : sample) {
      const double v = float_at(d, i);
      if (!std::isfinite(v) || v == 0.0) continue;
      any = true;
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      integral = integral && v == std::ceil(v);
    }
    mode_ = Mode::int_float;
    if (!any) return;  // zeros, inf and nan only: `0.`, `inf`
    const bool wide = hi / lo > 1000.0 || hi > 1.0e8;
    if (integral)
      mode_ = wide ? Mode::sci : Mode::int_float;
    else
      mode_ = wide || lo < 1.0e-4 ? Mode::sci : Mode::fixed;
    for (auto i : sample) {
      const double v = float_at(d, i);
      if (!std::isfinite(v) || v == 0.0) continue;
      width_ = std::max(width_, raw(i).size());  // int_float counts its trailing '.'
    }
  }

  [[nodiscard]] std::size_t width() const noexcept { return width_; }

  /// Element `flat`, right-aligned to width().
  [[nodiscard]] std::string operator()(std::int64_t flat) const {
    std::string s = raw(flat);
    if (s.size() < width_) s.insert(0, width_ - s.size(), ' ');
    return s;
  }

 private:
  enum class Mode : std::uint8_t { integer, boolean, int_float, fixed, sci };

  [[nodiscard]] std::string raw(std::int64_t i) const {
    switch (mode_) {
      case Mode::integer:
        return int_text(*d_, i);
      case Mode::boolean:
        return int_text(*d_, i) != "0" ? "True" : "False";
      default:
        break;
    }
    double v = float_at(*d_, i);
    if (std::isnan(v)) return "nan";  // never "-nan"
    if (mode_ == Mode::sci) return fmt::format("{:.{}e}", v, kPrecision);
    if (mode_ == Mode::fixed) return fmt::format("{:.{}f}", v, kPrecision);
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return fmt::format("{:.0f}.", v);
  }

  const TensorData* d_;
  Mode mode_ = Mode::integer;
  std::size_t width_ = 1;
};

/// torch's _tensor_str_with_formatter, over row-major host data.
class Renderer {
 public:
  Renderer(const TensorData& d, bool summarize)
      : shape_(d.shape()), strides_(d.shape().strides()), summarize_(summarize) {}

  std::string tensor(std::size_t dim, std::int64_t base, std::size_t indent,
                     const ElementFormatter& f) const {
    if (shape_.rank() == 0) return f(0);
    if (dim + 1 == shape_.rank()) return vector(base, indent, f);
    const std::int64_t n = shape_[dim];
    std::vector<std::string> slices;
    for (auto i : shown(n, summarize_)) {
      if (summarize_ && n > 2 * kEdgeItems && i == n - kEdgeItems) slices.emplace_back("...");
      slices.push_back(tensor(dim + 1, base + i * strides_[dim], indent + 1, f));
    }
    const std::string sep =
        "," + std::string(shape_.rank() - dim - 1, '\n') + std::string(indent + 1, ' ');
    return "[" + join(slices, sep) + "]";
  }

 private:
  std::string vector(std::int64_t base, std::size_t indent, const ElementFormatter& f) const {
    const std::int64_t n = shape_[shape_.rank() - 1];
    const std::size_t per_line =
        std::max<std::size_t>(1, (kLineWidth - std::min(indent, kLineWidth)) / (f.width() + 2));
    std::vector<std::string> items;
    for (auto i : shown(n, summarize_)) {
      if (summarize_ && n > 2 * kEdgeItems && i == n - kEdgeItems) items.emplace_back(" ...");
      items.push_back(f(base + i * strides_.back()));
    }
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < items.size(); i += per_line)
      lines.push_back(
          join(std::span(items).subspan(i, std::min(per_line, items.size() - i)), ", "));
    return "[" + join(lines, ",\n" + std::string(indent + 1, ' ')) + "]";
  }

  static std::string join(std::span<const std::string> parts, const std::string& sep) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i) out += sep;
      out += parts[i];
    }
    return out;
  }

  const Shape& shape_;
  std::vector<std::int64_t> strides_;
  bool summarize_;
};

/// `tensor(<values>, <suffixes>)`; suffixes wrap to a new line past 80 columns (_add_suffixes).
FERRY_FUNC std::string tensor_string(const TensorData& d, std::vector<std::string> suffixes) {
  constexpr std::string_view prefix = "tensor(";
  const std::size_t indent = prefix.size();
  std::string body;
  if (d.numel() == 0) {
    body = "[]";
    if (d.shape().rank() != 1) {  // torch's order: device, size, dtype
      auto at = std::find_if(suffixes.begin(), suffixes.end(),
                             [](const std::string& s) { return s.starts_with("dtype="); });
      suffixes.insert(at, fmt::format("size={}", d.shape()));
    }
  } else {
    const bool summarize = d.numel() > kThreshold;
    // The formatter sees only the shown elements, as torch's get_summarized_data.
    std::vector<std::int64_t> sample{0};
    const auto strides = d.shape().strides();
    for (std::size_t dim = 0; dim < d.shape().rank(); ++dim) {
      std::vector<std::int64_t> next;
      for (auto base : sample)
        for (auto i : shown(d.shape()[dim], summarize)) next.push_back(base + i * strides[dim]);
      sample = std::move(next);
    }
    const ElementFormatter f(d, sample);
    body = Renderer(d, summarize).tensor(0, 0, indent, f);
  }
  std::string out = std::string(prefix) + body;
  const auto nl = out.rfind('\n');
  std::size_t last = nl == std::string::npos ? out.size() + 2 : out.size() - nl + 1;
  for (const auto& s : suffixes) {
    if (last + s.size() + 2 > kLineWidth) {
      out += ",\n" + std::string(indent, ' ') + s;
      last = indent + s.size();
    } else {
      out += ", " + s;
      last += s.size() + 2;
    }
  }
  return out + ")";
}

}  // namespace detail::print

}  // namespace ferry

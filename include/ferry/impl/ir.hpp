// Ferry: what ir.hpp declares about the Op variant as a whole — its name, inputs, output and
// printed form. Each visits every alternative, so it is compiled once (src/ir.cpp), or included
// inline by ir.hpp with FERRY_HEADER_ONLY.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iterator>
#include <string>
#include <variant>
#include <vector>

#include "ferry/config.hpp"
#include "ferry/ir.hpp"

namespace ferry {

FERRY_FUNC const char* op_name(const Op& o) noexcept {
  return std::visit([](const auto& x) { return op_name(x); }, o);
}

/// Refs of the tensors an op reads, for traces, stats and failure marking.
FERRY_FUNC std::vector<const TensorRef*> op_inputs(const Op& o) {
  std::vector<const TensorRef*> v;
  std::visit(
      [&](const auto& x) { for_each_input(x, [&](const TensorRef& r) { v.push_back(&r); }); }, o);
  return v;
}
FERRY_FUNC const TensorRef* op_output(const Op& o) noexcept {
  return std::visit(
      [](const auto& x) -> const TensorRef* {
        if constexpr (requires { x.out; })
          return &x.out;
        else
          return nullptr;
      },
      o);
}

namespace detail {
FERRY_FUNC std::string op_string(const Op& o) {
  std::string text;
  auto it = std::back_inserter(text);
  it = fmt::format_to(it, "{}(", ferry::op_name(o));
  bool first = true;
  for (const auto* r : ferry::op_inputs(o)) {
    it = fmt::format_to(it, "{}{}", first ? "" : ", ", *r);
    first = false;
  }
  std::visit(
      [&](const auto& x) {
        auto sep = [&] {
          const char* s = first ? "" : ", ";
          first = false;
          return s;
        };
        if constexpr (requires { x.value.value(); })
          it = fmt::format_to(it, "{}{}", sep(), x.value);
        if constexpr (requires { x.rhs.value(); }) it = fmt::format_to(it, "{}{}", sep(), x.rhs);
        if constexpr (requires { x.lo; }) it = fmt::format_to(it, "{}{}, {}", sep(), x.lo, x.hi);
        if constexpr (requires { x.start; })
          it = fmt::format_to(it, "{}{}, step {}", sep(), x.start, x.step);
        if constexpr (requires { x.low; })
          it = fmt::format_to(it, "{}[{}, {}), seed {}", sep(), x.low, x.high, x.seed);
        if constexpr (requires { x.dist; })
          it = fmt::format_to(it, "{}{}, seed {}", sep(), x.dist, x.seed);
        if constexpr (requires { x.keepdim; }) {
          if (x.dim) it = fmt::format_to(it, "{}dim {}", sep(), *x.dim);
          if (x.keepdim) it = fmt::format_to(it, "{}keepdim", sep());
        }
        if constexpr (requires { x.perm; })
          it = fmt::format_to(it, "{}perm [{}]", sep(), fmt::join(x.perm, ", "));
        if constexpr (requires { x.axes; })
          it = fmt::format_to(it, "{}axes [{}]", sep(), fmt::join(x.axes, ", "));
        if constexpr (requires { x.times; })
          it = fmt::format_to(it, "{}times [{}]", sep(), fmt::join(x.times, ", "));
        if constexpr (requires { x.ranges; }) {
          it = fmt::format_to(it, "{}[", sep());
          bool f2 = true;
          for (const auto& r : x.ranges) {
            if constexpr (requires { r.first; })
              it = fmt::format_to(it, "{}{}:{}", f2 ? "" : ", ", r.first, r.second);
            else
              it = fmt::format_to(it, "{}{}", f2 ? "" : ", ", r);
            f2 = false;
          }
          it = fmt::format_to(it, "]");
        }
        if constexpr (
            requires { x.dim; } && !requires { x.keepdim; })
          it = fmt::format_to(it, "{}dim {}", sep(), x.dim);
        if constexpr (requires { x.descending; }) {
          if (x.descending) it = fmt::format_to(it, "{}descending", sep());
          it = fmt::format_to(it, "{}k {}", sep(), x.k);
        }
        if constexpr (requires { x.causal; }) {
          if (x.causal) it = fmt::format_to(it, "{}causal", sep());
          it = fmt::format_to(it, "{}scale {}", sep(), x.scale);
        }
        if constexpr (requires { x.scheme; }) it = fmt::format_to(it, "{}{}", sep(), x.scheme);
        if constexpr (requires { x.from; })
          it = fmt::format_to(it, "{}dev {} -> dev {}", sep(), x.from, x.to);
        if constexpr (requires { x.data.shape(); })
          it = fmt::format_to(it, "{}{}{}", sep(), x.data.dtype(), x.data.shape());
        if constexpr (requires { x.parts.scheme; })
          it = fmt::format_to(it, "{}{}", sep(), x.parts.scheme);
      },
      o);
  it = fmt::format_to(it, ")");
  if (const auto* out = ferry::op_output(o)) it = fmt::format_to(it, " -> {}", *out);
  return text;
}
}  // namespace detail

}  // namespace ferry

// Shared helpers for the router-level op tests (test_ops*.cpp): tensor creation and read-back,
// naive index arithmetic for computing expected values, tolerance checks, an exception-message
// matcher. Expected values are always computed here with plain loops, never with Ferry.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/ferry.hpp"
#include "matchers.hpp"

namespace ops_test {

using Cpu = ferry::EigenCpu;
using R = ferry::Router<Cpu>;
using T = ferry::Tensor<Cpu>;
using ferry::DType;
using ferry::Shape;
using Dims = std::vector<std::int64_t>;

inline const ferry::CpuDevice D0{0};
inline const ferry::CpuDevice D1{1};

inline const char* mode_name(ferry::Execution m) {
  return m == ferry::Execution::Inline ? "inline" : "async";
}

using ferry_test::Says;

// ---- creation / read-back ---------------------------------------------------------------------
template <class V>
T make(R& r, const std::vector<V>& v, Dims dims, ferry::CpuDevice d = D0) {
  return r.from_data(ferry::TensorData::from(v, Shape(std::move(dims))), d);
}
/// A bool tensor from 0/1 ints.
inline T make_bool(R& r, const std::vector<int>& v, Dims dims, ferry::CpuDevice d = D0) {
  std::vector<bool> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = v[i] != 0;
  return r.from_data(ferry::TensorData::from(b, Shape(std::move(dims))), d);
}

/// Reads `t` back; its data must have t's shape and exactly the dtype of V.
template <class V>
std::vector<V> read(const T& t) {
  ferry::TensorData d = t.to_data();
  CHECK(d.shape() == t.shape());
  REQUIRE(d.dtype() == ferry::dtype_of<V>);
  auto s = d.values<V>();
  return {s.begin(), s.end()};
}
/// A bool tensor's elements as 0/1 bytes.
inline std::vector<std::uint8_t> read_bool(const T& t) {
  ferry::TensorData d = t.to_data();
  CHECK(d.shape() == t.shape());
  REQUIRE(d.dtype() == DType::boolean);
  auto s = d.values<std::uint8_t>();
  return {s.begin(), s.end()};
}

/// The shape and dtype the router reports, checked before the contents are read.
inline void check_meta(const T& t, const Dims& dims, DType dt) {
  CHECK(t.shape() == Shape(dims));
  CHECK(t.dtype() == dt);
}

// ---- deterministic host data -------------------------------------------------------------------
/// n values from a small LCG: integers in [lo, hi]; floats are those integers divided by `div`
/// (exactly representable, so sums and products of a few of them are exact).
template <class V>
std::vector<V> data(std::int64_t n, std::uint32_t seed, int lo = -9, int hi = 9, double div = 4.0) {
  std::vector<V> out(static_cast<std::size_t>(n));
  std::uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : out) {
    s = s * 1664525u + 1013904223u;
    const int v = lo + static_cast<int>((s >> 8) % static_cast<std::uint32_t>(hi - lo + 1));
    if constexpr (std::is_floating_point_v<V>)
      x = static_cast<V>(v / div);
    else
      x = static_cast<V>(v);
  }
  return out;
}
/// Like data(), with zeros replaced by `repl` (divisors).
template <class V>
std::vector<V> nonzero(std::int64_t n, std::uint32_t seed, int lo = -9, int hi = 9) {
  auto v = data<V>(n, seed, lo, hi);
  for (auto& x : v)
    if (x == V(0)) x = V(3);
  return v;
}

// ---- naive index arithmetic
// ------------------------------------------------------------------------
inline std::int64_t numel(const Dims& d) {
  std::int64_t n = 1;
  for (auto x : d) n *= x;
  return n;
}
inline Dims unravel(std::int64_t flat, const Dims& dims) {
  Dims idx(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    idx[i] = flat % dims[i];
    flat /= dims[i];
  }
  return idx;
}
inline std::int64_t ravel(const Dims& idx, const Dims& dims) {
  std::int64_t f = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) f = f * dims[i] + idx[i];
  return f;
}
/// Flat index into an operand of `in` dims that numpy broadcasting maps output index `out` to.
inline std::int64_t bcast_src(const Dims& out, const Dims& in) {
  const std::size_t off = out.size() - in.size();
  std::int64_t f = 0;
  for (std::size_t i = 0; i < in.size(); ++i) f = f * in[i] + (in[i] == 1 ? 0 : out[i + off]);
  return f;
}
/// out[i] = f(a[src], b[src]) over the broadcast output dims `od`.
template <class O, class A, class B, class F>
std::vector<O> naive_binary(const std::vector<A>& a, const Dims& ad, const std::vector<B>& b,
                            const Dims& bd, const Dims& od, F f) {
  std::vector<O> out(static_cast<std::size_t>(numel(od)));
  for (std::int64_t i = 0; i < numel(od); ++i) {
    const Dims idx = unravel(i, od);
    out[static_cast<std::size_t>(i)] =
        static_cast<O>(f(a[static_cast<std::size_t>(bcast_src(idx, ad))],
                         b[static_cast<std::size_t>(bcast_src(idx, bd))]));
  }
  return out;
}
template <class O, class A, class F>
std::vector<O> naive_map(const std::vector<A>& a, F f) {
  std::vector<O> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = static_cast<O>(f(a[i]));
  return out;
}

// ---- comparisons of results ------------------------------------------------------------------
template <class V>
struct Tol {
  static constexpr double rel = std::is_same_v<V, float> ? 2e-6 : 1e-13;
  static constexpr double abs = std::is_same_v<V, float> ? 1e-6 : 1e-13;
};

/// One CHECK for a whole vector: counts elements outside |g - w| <= abs + rel |w| (NaN must
/// match NaN, infinities must match exactly) and reports the first one.
template <class G, class W>
void check_close(const std::vector<G>& got, const std::vector<W>& want, double rel, double abs,
                 const char* what = "") {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto g = static_cast<double>(got[i]);
    const auto w = static_cast<double>(want[i]);
    bool ok;
    if (std::isnan(w))
      ok = std::isnan(g);
    else if (std::isinf(w))
      ok = g == w;
    else
      ok = std::abs(g - w) <= abs + rel * std::abs(w);
    if (!ok && bad++ == 0) first = i;
  }
  std::ostringstream msg;
  msg << what << ": " << bad << " of " << got.size() << " elements differ";
  if (bad) msg << "; first at " << first << ": got " << got[first] << ", want " << want[first];
  INFO(msg.str());
  CHECK(bad == 0);
}
template <class V, class W>
void check_close(const std::vector<V>& got, const std::vector<W>& want, const char* what = "") {
  check_close(got, want, Tol<V>::rel, Tol<V>::abs, what);
}

}  // namespace ops_test

// Helpers shared by the EigenCpu backend tests (tests/test_eigen_cpu*.cpp): building and
// reading handles, test values, and naive reference loops.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ferry/backends/eigen_cpu.hpp"
#include "matchers.hpp"

using namespace ferry;

namespace ferry_test {

/// Matches an exception whose what() contains `part` (Catch2 v2's Contains matches strings,
/// and Message only a whole message).
using ferry_test::Contains;

inline constexpr CpuDevice D0{0}, D1{1};

template <class T>
CpuTensor make(const EigenCpu& cpu, const std::vector<T>& v, Shape s, CpuDevice d = D0) {
  auto data = TensorData::from(std::span<const T>(v), std::move(s));
  switch (kind_of(data.dtype())) {
    case Kind::Float:
      return cpu.float_from_data(std::move(data), d);
    case Kind::Int:
      return cpu.int_from_data(std::move(data), d);
    default:
      return cpu.bool_from_data(std::move(data), d);
  }
}

inline CpuTensor make_bool(const EigenCpu& cpu, const std::vector<int>& v, Shape s,
                           CpuDevice d = D0) {
  std::vector<bool> b(v.begin(), v.end());
  return cpu.bool_from_data(TensorData::from(b, std::move(s)), d);
}

template <class T>
std::vector<T> read(const EigenCpu& cpu, CpuTensor t) {
  REQUIRE(t.dtype == dtype_of<T>);
  TensorData d = kind_of(t.dtype) == Kind::Float ? cpu.float_into_data(std::move(t))
                 : kind_of(t.dtype) == Kind::Int ? cpu.int_into_data(std::move(t))
                                                 : cpu.bool_into_data(std::move(t));
  auto v = d.values<T>();
  return {v.begin(), v.end()};
}

/// A bool tensor's elements as 0/1 bytes.
inline std::vector<std::uint8_t> read_bool(const EigenCpu& cpu, CpuTensor t) {
  REQUIRE(t.dtype == DType::boolean);
  TensorData d = cpu.bool_into_data(std::move(t));
  auto v = d.values<std::uint8_t>();
  return {v.begin(), v.end()};
}

/// Deterministic test values in [-range, range] (not the backend's generator).
template <class T>
std::vector<T> values(std::int64_t n, int salt, int range = 9) {
  std::vector<T> v(static_cast<std::size_t>(n));
  std::uint32_t s = 2463534242u + static_cast<std::uint32_t>(salt) * 7919u;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    const int k = static_cast<int>(s % static_cast<std::uint32_t>(2 * range + 1)) - range;
    if constexpr (std::is_floating_point_v<T>)
      x = static_cast<T>(k) + static_cast<T>(0.25) * static_cast<T>(s % 4);
    else
      x = static_cast<T>(k);
  }
  return v;
}

/// Index into `in` of output element `flat` when `in` is broadcast to `out` (naive).
inline std::int64_t bcast_index(const Shape& in, const Shape& out, std::int64_t flat) {
  std::int64_t idx = 0, stride = 1;
  for (std::size_t k = 0; k < out.rank(); ++k) {
    const std::size_t d = out.rank() - 1 - k;
    const std::int64_t c = flat % out[d];
    flat /= out[d];
    if (k < in.rank()) {
      const std::size_t di = in.rank() - 1 - k;
      if (in[di] != 1) idx += c * stride;
      stride *= in[di];
    }
  }
  return idx;
}

template <class R, class T, class F>
std::vector<R> naive_binary(const std::vector<T>& a, const Shape& sa, const std::vector<T>& b,
                            const Shape& sb, const Shape& so, F f) {
  std::vector<R> out(static_cast<std::size_t>(so.numel()));
  for (std::int64_t i = 0; i < so.numel(); ++i)
    out[static_cast<std::size_t>(i)] =
        static_cast<R>(f(a[static_cast<std::size_t>(bcast_index(sa, so, i))],
                         b[static_cast<std::size_t>(bcast_index(sb, so, i))]));
  return out;
}

inline std::vector<std::int64_t> unravel(std::int64_t flat, const Shape& s) {
  std::vector<std::int64_t> c(s.rank());
  for (std::size_t d = s.rank(); d-- > 0;) {
    c[d] = flat % s[d];
    flat /= s[d];
  }
  return c;
}
inline std::int64_t ravel(const std::vector<std::int64_t>& c, const Shape& s) {
  std::int64_t f = 0;
  for (std::size_t d = 0; d < s.rank(); ++d) f = f * s[d] + c[d];
  return f;
}

template <class T>
void require_close(const std::vector<T>& got, const std::vector<T>& want, double rel = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(static_cast<double>(want[i])))
      REQUIRE(std::isnan(static_cast<double>(got[i])));
    else
      REQUIRE(static_cast<double>(got[i]) ==
              Approx(static_cast<double>(want[i])).epsilon(rel).margin(rel));
  }
}

inline const void* ptr(const CpuTensor& t) { return t.buf->data(); }

}  // namespace ferry_test

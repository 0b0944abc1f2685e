// What the tests of the neural-network ops share (test_nn, test_conv, test_pool,
// test_interpolate): deterministic input values, a tensor's values as doubles, and the check
// of values against a long-double reference.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <vector>

namespace ferry_test {

/// Deterministic values in [-3, 3) with some spread (no two rows alike).
inline std::vector<double> data(std::size_t n, unsigned seed) {
  std::vector<double> v(n);
  std::uint32_t s = 0x9E3779B9u ^ seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<double>(s >> 8) / static_cast<double>(1u << 24) * 6.0 - 3.0;
  }
  return v;
}

/// A tensor's values as doubles (any float or int dtype).
template <class Be>
std::vector<double> values(const ferry::Tensor<Be>& t) {
  return ferry::cast(t, ferry::DType::f64).to_data().template to_vector<double>();
}

/// |got - want| <= rel |want| + abs element by element; a NaN wants a NaN.
inline void check_close(const std::vector<double>& got, const std::vector<long double>& want,
                        double rel, double abs = 0) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << static_cast<double>(want[i]));
    if (std::isnan(static_cast<double>(want[i]))) {
      CHECK(std::isnan(got[i]));
      continue;
    }
    CHECK(std::abs(static_cast<long double>(got[i]) - want[i]) <= rel * std::abs(want[i]) + abs);
  }
}

/// check_close with one tolerance for both: |got - want| <= tol (1 + |want|).
inline void check_near(const std::vector<double>& got, const std::vector<long double>& want,
                       double tol) {
  check_close(got, want, tol, tol);
}

}  // namespace ferry_test

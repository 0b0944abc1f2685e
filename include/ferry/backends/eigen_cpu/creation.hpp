// Ferry: EigenCpu's creation kernels: full, arange and a counter-based random generator.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/convert.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/loops.hpp"
#include "ferry/detail/convert.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/params.hpp"
#include "ferry/shape.hpp"

namespace ferry::detail::cpu {

inline void check_create(const AccountsPtr& acc, const Shape& shape, DType dtype, Kind kind,
                         int device, const char* op) {
  acc->check(device, op);
  if (kind_of(dtype) != kind)
    detail::raise<DTypeError>("cpu.dtype", "{}: dtype {} is not of kind {}", op, dtype, kind);
  for (auto d : shape)
    if (d < 0) detail::raise<ShapeError>("shape", "{}: shape {} has a negative dim", op, shape);
}

/// A tensor of `shape` filled with `value` converted as a cast would (see convert).
inline CpuTensor full(const AccountsPtr& acc, const Shape& shape, DType dtype, const Scalar& value,
                      int device, Kind kind, const char* op) {
  check_create(acc, shape, dtype, kind, device, op);
  CpuTensor out = alloc(acc, device, shape, dtype);
  visit_dtype(dtype, [&]<class T>(T) {
    const T v = scalar_cast<T>(value);
    T* o = out.data<T>();
    parallel_for(0, out.numel(), kGrain,
                 [&](std::int64_t lo, std::int64_t hi) { std::fill(o + lo, o + hi, v); });
  });
  return out;
}

/// [start, start + step, ...] of n elements: computed in f64 for float dtypes, modulo 2^64 for
/// integer ones (whose start and step must be values of the dtype: ValueError otherwise).
inline CpuTensor arange(const AccountsPtr& acc, const Scalar& start, const Scalar& step,
                        std::int64_t n, DType dtype, int device, Kind kind, const char* op) {
  if (n < 0) detail::raise<ValueError>("cpu.arange", "{}: negative length {}", op, n);
  check_create(acc, Shape{n}, dtype, kind, device, op);
  CpuTensor out = alloc(acc, device, Shape{n}, dtype);
  visit_dtype(dtype, [&]<class T>(T) {
    T* o = out.data<T>();
    if constexpr (is_float_v<T>) {
      const double s = start.as<double>(), d = step.as<double>();
      parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i) o[i] = convert<T>(s + static_cast<double>(i) * d);
      });
    } else if constexpr (is_int_v<T>) {
      // Modulo 2^64, where every value is exact (u64 above INT64_MAX too); the router checked
      // that the true values are in T's range, so the wrapped ones are they.
      const auto s = static_cast<std::uint64_t>(scalar_operand<T>(start, op));
      // The step is any whole number of i64 or u64 (negative for unsigned T too).
      const auto d = std::visit(
          []<class V>(V v) -> std::uint64_t {
            if constexpr (std::is_same_v<V, double>)
              return v < 0 ? static_cast<std::uint64_t>(static_cast<std::int64_t>(v))
                           : static_cast<std::uint64_t>(v);
            else
              return static_cast<std::uint64_t>(v);
          },
          step.value());
      parallel_for(0, n, kGrain, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t i = lo; i < hi; ++i)
          o[i] = static_cast<T>(s + static_cast<std::uint64_t>(i) * d);
      });
    }
  });
  return out;
}

/// splitmix64's output for counter i of stream `seed`: element i of a tensor depends only on
/// (seed, i), so the values are the same for any thread count and chunking.
constexpr std::uint64_t random_bits(std::uint64_t seed, std::uint64_t i) noexcept {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Uniform on [0, 1) with 53 random bits.
constexpr double random_unit(std::uint64_t seed, std::uint64_t i) noexcept {
  return static_cast<double>(random_bits(seed, i) >> 11) * 0x1.0p-53;
}

/// @brief Uniform [a, b) or normal(mean a, std b) values, deterministic for a seed.
///
/// Uniform: a + (b - a) * u with u from 53 bits, then rounded to the dtype (a value that
/// rounds up to b is moved to the largest value below b). Normal: Box-Muller on the pair of
/// counters (2k, 2k+1), cos for even and sin for odd elements. The bits are identical on every
/// machine; normal values go through the C library's log/sqrt/cos/sin, so they agree to the
/// last bit wherever those are correctly rounded (glibc) and within an ulp elsewhere.
inline CpuTensor random(const AccountsPtr& acc, const Shape& shape, DType dtype,
                        const Distribution& dist, std::uint64_t seed, int device) {
  check_create(acc, shape, dtype, Kind::Float, device, "random");
  if (!std::isfinite(dist.a) || !std::isfinite(dist.b) ||
      (dist.kind == Distribution::Kind::uniform ? dist.b < dist.a : dist.b < 0))
    detail::raise<ValueError>("cpu.random", "random: invalid distribution {}", dist);
  if (dtype == DType::f16 || dtype == DType::bf16) {
    // The f64 values rounded once; a uniform value that rounds up to b moves below it.
    CpuTensor out = cast(acc, random(acc, shape, DType::f64, dist, seed, device), dtype, "random");
    if (dist.kind == Distribution::Kind::uniform && dist.b > dist.a)
      visit_dtype(dtype, [&]<class T>(T) {
        if constexpr (is_half_v<T>) {
          const T hi = convert<T>(dist.b), lo = convert<T>(dist.a);
          // The largest value below hi (hi is finite: b is).
          const T below =
              T::from_bits(static_cast<std::uint16_t>(static_cast<float>(hi) > 0.0f   ? hi.bits - 1
                                                      : static_cast<float>(hi) < 0.0f ? hi.bits + 1
                                                                                      : 0x8001));
          const T fix = static_cast<float>(below) < static_cast<float>(lo) ? lo : below;
          T* o = out.data<T>();
          parallel_for(0, out.numel(), kGrain, [&](std::int64_t b0, std::int64_t e) {
            for (std::int64_t i = b0; i < e; ++i)
              if (static_cast<float>(o[i]) >= static_cast<float>(hi)) o[i] = fix;
          });
        }
      });
    return out;
  }
  CpuTensor out = alloc(acc, device, shape, dtype);
  visit_dtype(dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T>) {
      T* o = out.data<T>();
      const double a = dist.a, b = dist.b;
      if (dist.kind == Distribution::Kind::uniform) {
        const T hi = static_cast<T>(b), below = std::nextafter(hi, static_cast<T>(a));
        parallel_for(0, out.numel(), kGrain, [&](std::int64_t lo, std::int64_t e) {
          for (std::int64_t i = lo; i < e; ++i) {
            const T v =
                static_cast<T>(a + (b - a) * random_unit(seed, static_cast<std::uint64_t>(i)));
            o[i] = (v >= hi && b > a) ? std::max(below, static_cast<T>(a)) : v;
          }
        });
      } else {
        constexpr double two_pi = 6.283185307179586476925286766559;
        parallel_for(0, out.numel(), kGrain, [&](std::int64_t lo, std::int64_t e) {
          for (std::int64_t i = lo; i < e; ++i) {
            const auto k = static_cast<std::uint64_t>(i) & ~std::uint64_t{1};
            const double u1 = 1.0 - random_unit(seed, k);  // (0, 1]: log is finite
            const double u2 = random_unit(seed, k + 1);
            const double r = std::sqrt(-2.0 * std::log(u1));
            const double z = (i & 1) ? r * std::sin(two_pi * u2) : r * std::cos(two_pi * u2);
            o[i] = static_cast<T>(a + b * z);
          }
        });
      }
    }
  });
  return out;
}

/// @brief Integers uniform on [low, high), deterministic for a seed: element i is low +
/// floor(bits(seed, i) * (high - low) / 2^64) in 128-bit arithmetic, so every span up to 2^64 is
/// exact (u64 above INT64_MAX too) and each value's probability is within (high - low) / 2^64
/// of uniform (no rejection: one counter per element keeps the values independent of threads).
inline CpuTensor random_int(const AccountsPtr& acc, const Shape& shape, DType dtype,
                            const Scalar& low, const Scalar& high, std::uint64_t seed, int device) {
  constexpr const char* op = "random_int";
  check_create(acc, shape, dtype, Kind::Int, device, op);
  __extension__ using u128 = unsigned __int128;
  const auto lo = scalar_whole(low), hi = scalar_whole(high);
  if (!lo || !hi || *lo >= *hi || !whole_in(*lo, dtype) || !whole_in(*hi - 1, dtype))
    detail::raise<ValueError>("cpu.random", "{}: [{}, {}) is not a nonempty range of {}", op, low,
                              high, dtype);
  const auto span = static_cast<u128>(*hi - *lo);                        // 1 .. 2^64
  const auto base = static_cast<std::uint64_t>(static_cast<u128>(*lo));  // modulo 2^64
  CpuTensor out = alloc(acc, device, shape, dtype);
  visit_dtype(dtype, [&]<class T>(T) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      T* o = out.data<T>();
      parallel_for(0, out.numel(), kGrain, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) {
          const auto u = static_cast<u128>(random_bits(seed, static_cast<std::uint64_t>(i)));
          o[i] = static_cast<T>(base + static_cast<std::uint64_t>((u * span) >> 64));
        }
      });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

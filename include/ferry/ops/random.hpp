// Ferry: bernoulli, as a composition of a seeded uniform tensor and a comparison. Included by
// ferry/ops.hpp. (random_uniform, random_normal and random_int are Router methods: they make a
// tensor on a device rather than take one.)
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <utility>

#include "ferry/ops.hpp"

namespace ferry {

/// torch.bernoulli(p): 1 where a seeded uniform draw u on [0, 1) (53 bits, in f64) is below
/// p, else 0, in p's dtype (a float dtype); the same values in both execution modes and on
/// every run. Where torch raises for p outside [0, 1], here p <= 0 (and NaN) give 0 and p >= 1
/// gives 1: the values are on the device, and checking them would cost a read.
template <Backend B>
[[nodiscard]] Tensor<B> bernoulli(Tensor<B> p, std::uint64_t seed) {
  const char* op = "bernoulli";
  const auto dev = detail::common_device(op, p);
  detail::want_kind(op, p.dtype(), {Kind::Float}, "float probabilities");
  const auto& core = detail::TA<B>::core(p, op);
  TensorRef ur{core->new_id(), p.shape(), DType::f64};
  auto u = detail::emit(core, dev, op::Random{Distribution::uniform(0.0, 1.0), seed, ur});
  const DType dt = p.dtype();
  auto p64 = dt == DType::f64 ? std::move(p) : cast(std::move(p), DType::f64);
  return cast(less(std::move(u), std::move(p64)), dt);
}

}  // namespace ferry

// Ferry: quantized ops for any backend — its own kernel when it has one, else the host path
// through QuantizedParts, built only from the Backend concept's required part (internal).
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ferry/backend.hpp"
#include "ferry/data.hpp"
#include "ferry/quant/kernels.hpp"
#include "ferry/quant/layout.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/join.hpp"

namespace ferry::detail::qhost {

template <class B>
using FH = typename B::FloatHandle;
template <class B>
using QH = typename B::QuantizedHandle;

/// A float tensor's values as f32, with its shape.
template <class B>
std::pair<std::vector<float>, Shape> floats(B& b, FH<B> x) {
  TensorData d = b.float_into_data(std::move(x));
  if (d.dtype() == DType::f32) {
    auto v = d.values<float>();
    return {std::vector<float>(v.begin(), v.end()), d.shape()};
  }
  return {d.to_vector<float>(), d.shape()};
}

template <class B>
FH<B> from_floats(B& b, const std::vector<float>& v, const Shape& shape, DType to,
                  const typename B::Device& dev) {
  if (to == DType::f32)
    return b.float_from_data(TensorData::from(std::span<const float>(v), shape), dev);
  auto as = [&]<class T>(T) {
    std::vector<T> w(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) w[i] = detail::convert<T>(v[i]);
    return b.float_from_data(TensorData::from(std::span<const T>(w), shape), dev);
  };
  switch (to) {
    case DType::f64:
      return as(double{});
    case DType::f16:
      return as(f16{});
    case DType::bf16:
      return as(bf16{});
    default:
      raise<DTypeError>("dtype", "dequantize: {} is not a float dtype", to);
  }
}

template <class B>
QH<B> quantize(B& b, FH<B> x, const quant::Scheme& s, std::span<const float> scales,
               std::span<const std::int32_t> offsets, const typename B::Device& dev) {
  if constexpr (requires {
                  { b.quantize(std::move(x), s, scales, offsets) } -> std::same_as<QH<B>>;
                })
    return b.quantize(std::move(x), s, scales, offsets);
  else {
    auto [v, shape] = floats(b, std::move(x));
    return b.q_from_parts(quant::quantize(s, shape, v, scales, offsets), dev);
  }
}

template <class B>
QH<B> quantize_dynamic(B& b, FH<B> x, const quant::Scheme& s, const typename B::Device& dev) {
  if constexpr (requires {
                  { b.quantize_dynamic(std::move(x), s) } -> std::same_as<QH<B>>;
                })
    return b.quantize_dynamic(std::move(x), s);
  else {
    auto [v, shape] = floats(b, std::move(x));
    return b.q_from_parts(quant::quantize_dynamic(s, shape, v), dev);
  }
}

template <class B>
FH<B> dequantize(B& b, QH<B> q, DType to, const typename B::Device& dev) {
  if constexpr (requires {
                  { b.dequantize(std::move(q), to) } -> std::same_as<FH<B>>;
                }) {
    return b.dequantize(std::move(q), to);
  } else {
    const auto parts = b.q_into_parts(std::move(q));
    std::vector<float> v(static_cast<std::size_t>(parts.shape.numel()));
    quant::dequantize(parts, v);
    return from_floats(b, v, parts.shape, to, dev);
  }
}

/// Layout ops: `kernel(b, q)` when the backend has it, else `host(parts)` on the host.
template <class B, class Kernel, class Host>
QH<B> layout(B& b, QH<B> q, const typename B::Device& dev, Kernel&& kernel, Host&& host) {
  if constexpr (std::is_invocable_v<Kernel&, B&, QH<B>>)
    return kernel(b, std::move(q));
  else
    return b.q_from_parts(host(b.q_into_parts(std::move(q))), dev);
}

/// The fallback of q_matmul and q_linear: w dequantized, transposed by the backend's permute
/// when `transposed`, and the backend's matmul; f16/bf16 x in f32 (the backend's casts), the
/// result rounded once, as the fused kernels.
template <class B>
FH<B> dequantized_product(B& b, FH<B> x, QH<B> w, DType x_dtype, const typename B::Device& dev,
                          bool transposed) {
  const bool half = x_dtype == DType::f16 || x_dtype == DType::bf16;
  const DType at = half ? DType::f32 : x_dtype;
  if (half) x = FERRY_KERNEL(FH<B>, b, to_float, std::move(x), at);
  auto wf = dequantize(b, std::move(w), at, dev);
  if (transposed) {
    static constexpr std::size_t swap[] = {1, 0};
    wf = FERRY_KERNEL(FH<B>, b, permute, std::move(wf), std::span<const std::size_t>(swap));
  }
  auto y = FERRY_KERNEL(FH<B>, b, matmul, std::move(x), std::move(wf));
  return half ? FERRY_KERNEL(FH<B>, b, to_float, std::move(y), x_dtype) : y;
}

/// float x [..., M, K] times quantized w [K, N]: the backend's fused kernel, else
/// dequantized_product.
template <class B>
FH<B> q_matmul(B& b, FH<B> x, QH<B> w, DType x_dtype, const typename B::Device& dev) {
  if constexpr (requires {
                  { b.q_matmul(std::move(x), std::move(w)) } -> std::same_as<FH<B>>;
                })
    return b.q_matmul(std::move(x), std::move(w));
  else
    return dequantized_product(b, std::move(x), std::move(w), x_dtype, dev, false);
}

/// float x [..., M, K] times quantized w [N, K] transposed (linear's weight layout): the
/// backend's fused kernel, else dequantized_product.
template <class B>
FH<B> q_linear(B& b, FH<B> x, QH<B> w, DType x_dtype, const typename B::Device& dev) {
  if constexpr (requires {
                  { b.q_linear(std::move(x), std::move(w)) } -> std::same_as<FH<B>>;
                })
    return b.q_linear(std::move(x), std::move(w));
  else
    return dequantized_product(b, std::move(x), std::move(w), x_dtype, dev, true);
}

/// A move to another device of the same backend: its own transfer, else the parts as they are.
template <class B>
QH<B> to_device(B& b, QH<B> q, const typename B::Device& target) {
  if constexpr (requires {
                  { b.q_to_device(std::move(q), target) } -> std::same_as<QH<B>>;
                })
    return b.q_to_device(std::move(q), target);
  else
    return b.q_from_parts(b.q_into_parts(std::move(q)), target);
}

}  // namespace ferry::detail::qhost

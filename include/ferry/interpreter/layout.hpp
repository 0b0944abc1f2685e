// Ferry: the interpreter's op bodies for layout, indexing, quantized and runtime ops:
// Interpreter<B>::run for each (declared in ferry/interpreter.hpp).
// SPDX-License-Identifier: MIT
#pragma once

#include <span>
#include <type_traits>
#include <utility>

#include "ferry/interpreter.hpp"

namespace ferry {

// ---- layout ---------------------------------------------------------------------------------
template <Backend B>
void Interpreter<B>::run(op::Reshape& o) {
  unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
    return FERRY_KERNEL(H<K>, b_, reshape, std::move(x), o.out.shape);
  });
}

template <Backend B>
void Interpreter<B>::run(op::Permute& o) {
  unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
    return FERRY_KERNEL(H<K>, b_, permute, std::move(x), std::span<const std::size_t>(o.perm));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Flip& o) {
  unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
    return FERRY_KERNEL(H<K>, b_, flip, std::move(x), std::span<const std::size_t>(o.axes));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Expand& o) {
  if (o.in.dtype == DType::quantized) {  // q_expand: the values and their params, exactly
    const Shape& to = o.out.shape;
    return q_layout(
        o,
        [&](auto& b, QH q) -> decltype(b.q_expand(std::move(q), to)) {
          return b.q_expand(std::move(q), to);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_expand(p, to); });
  }
  unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
    return FERRY_KERNEL(H<K>, b_, expand, std::move(x), o.out.shape);
  });
}

template <Backend B>
void Interpreter<B>::run(op::Slice& o) {
  unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
    return FERRY_KERNEL(H<K>, b_, slice, std::move(x), std::span<const Range>(o.ranges));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Repeat& o) {
  if (o.in.dtype == DType::quantized) {  // q_repeat
    const std::span<const std::int64_t> t(o.times);
    return q_layout(
        o,
        [&](auto& b, QH q) -> decltype(b.q_repeat(std::move(q), t)) {
          return b.q_repeat(std::move(q), t);
        },
        [&](const quant::QuantizedParts& p) { return quant::q_repeat(p, t); });
  }
  unary_layout(o, [&]<Kind K>(std::integral_constant<Kind, K>, H<K> x) {
    return FERRY_KERNEL(H<K>, b_, repeat, std::move(x), std::span<const std::int64_t>(o.times));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Scatter& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    const char* n = name(o.kind);
    auto x = take<K>(o.in, n);
    auto i = take<Kind::Int>(o.index, n);
    auto v = take<K>(o.value, n);
    if (o.kind == ScatterKind::scatter)
      put<K>(o.out,
             FERRY_KERNEL(H<K>, b_, scatter, std::move(x), o.dim, std::move(i), std::move(v)));
    else
      put<K>(o.out,
             FERRY_KERNEL(H<K>, b_, scatter_add, std::move(x), o.dim, std::move(i), std::move(v)));
  });
}

template <Backend B>
void Interpreter<B>::run(op::GatherNd& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, "gather_nd");
    auto i = take<Kind::Int>(o.index, "gather_nd");
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, gather_nd, std::move(x), std::move(i)));
  });
}

template <Backend B>
void Interpreter<B>::run(op::ScatterNd& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    const char* n = name(o.kind);
    auto x = take<K>(o.in, n);
    auto i = take<Kind::Int>(o.index, n);
    auto v = take<K>(o.value, n);
    if (o.kind == ScatterNdKind::scatter_nd)
      put<K>(o.out, FERRY_KERNEL(H<K>, b_, scatter_nd, std::move(x), std::move(i), std::move(v)));
    else
      put<K>(o.out,
             FERRY_KERNEL(H<K>, b_, scatter_nd_add, std::move(x), std::move(i), std::move(v)));
  });
}

template <Backend B>
void Interpreter<B>::run(op::SliceAssign& o) {
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, "slice_assign");
    auto v = take<K>(o.value, "slice_assign");
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, slice_assign, std::move(x),
                               std::span<const Range>(o.ranges), std::move(v)));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Cat& o) {
  if (o.out.dtype == DType::quantized) {  // q_cat, on the host parts
    std::vector<quant::QuantizedParts> ps;
    ps.reserve(o.ins.size());
    for (const auto& r : o.ins) ps.push_back(b_.q_into_parts(take<Kind::Quantized>(r, "cat")));
    return put<Kind::Quantized>(
        o.out, b_.q_from_parts(quant::q_cat(ps, static_cast<std::int64_t>(o.dim)), device_));
  }
  detail::with_plain_kind(o.out.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    std::vector<H<K>> xs;
    xs.reserve(o.ins.size());
    for (const auto& r : o.ins) xs.push_back(take<K>(r, "cat"));
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, cat, std::move(xs), o.dim));
  });
}

template <Backend B>
void Interpreter<B>::run(op::Gather& o) {
  if (o.in.dtype == DType::quantized) {  // q_gather: the indices are read on the host
    const std::vector<std::int64_t> idx =
        b_.int_into_data(take<Kind::Int>(o.index, "gather")).template to_vector<std::int64_t>();
    auto p = b_.q_into_parts(take<Kind::Quantized>(o.in, "gather"));
    return put<Kind::Quantized>(
        o.out,
        b_.q_from_parts(quant::q_gather(p, static_cast<std::int64_t>(o.dim), o.out.shape, idx),
                        device_));
  }
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, "gather");
    auto idx = take<Kind::Int>(o.index, "gather");
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, gather, std::move(x), o.dim, std::move(idx)));
  });
}

template <Backend B>
void Interpreter<B>::run(op::IndexSelect& o) {
  if (o.in.dtype == DType::quantized) {    // q_select: the indices are read on the host
    const std::vector<std::int64_t> idx =  // saturating: a u64 past int64 is out of range
        b_.int_into_data(take<Kind::Int>(o.index, "index_select"))
            .template to_vector<std::int64_t>();
    const auto dim = static_cast<std::int64_t>(o.dim);
    return q_layout(
        o,
        [&](auto& b,
            QH q) -> decltype(b.q_select(std::move(q), dim, std::span<const std::int64_t>(idx))) {
          return b.q_select(std::move(q), dim, std::span<const std::int64_t>(idx));
        },
        [&](const quant::QuantizedParts& p) { return quant::q_select(p, dim, idx); });
  }
  detail::with_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto x = take<K>(o.in, "index_select");
    auto idx = take<Kind::Int>(o.index, "index_select");
    put<K>(o.out, FERRY_KERNEL(H<K>, b_, index_select, std::move(x), o.dim, std::move(idx)));
  });
}

// ---- quantized ------------------------------------------------------------------------------
template <Backend B>
void Interpreter<B>::run(op::Quantize& o) {
  put<Kind::Quantized>(o.out, detail::qhost::quantize(b_, take<Kind::Float>(o.in, "quantize"),
                                                      o.scheme, o.scales, o.offsets, device_));
}

template <Backend B>
void Interpreter<B>::run(op::QuantizeDynamic& o) {
  put<Kind::Quantized>(
      o.out, detail::qhost::quantize_dynamic(b_, take<Kind::Float>(o.in, "quantize_dynamic"),
                                             o.scheme, device_));
}

template <Backend B>
void Interpreter<B>::run(op::Dequantize& o) {
  put<Kind::Float>(o.out, detail::qhost::dequantize(b_, take<Kind::Quantized>(o.in, "dequantize"),
                                                    o.out.dtype, device_));
}

template <Backend B>
void Interpreter<B>::run(op::QFromParts& o) {
  put<Kind::Quantized>(o.out, b_.q_from_parts(std::move(o.parts), device_));
}

template <Backend B>
void Interpreter<B>::run(op::QReshape& o) {
  const Shape& to = o.out.shape;
  q_layout(
      o,
      [&](auto& b, QH q) -> decltype(b.q_reshape(std::move(q), to)) {
        return b.q_reshape(std::move(q), to);
      },
      [&](const quant::QuantizedParts& p) { return quant::q_reshape(p, to); });
}

template <Backend B>
void Interpreter<B>::run(op::QPermute& o) {
  const std::span<const std::int64_t> perm(o.perm);
  q_layout(
      o,
      [&](auto& b, QH q) -> decltype(b.q_permute(std::move(q), perm)) {
        return b.q_permute(std::move(q), perm);
      },
      [&](const quant::QuantizedParts& p) { return quant::q_permute(p, perm); });
}

template <Backend B>
void Interpreter<B>::run(op::QFlip& o) {
  const std::span<const std::int64_t> axes(o.axes);
  q_layout(
      o,
      [&](auto& b, QH q) -> decltype(b.q_flip(std::move(q), axes)) {
        return b.q_flip(std::move(q), axes);
      },
      [&](const quant::QuantizedParts& p) { return quant::q_flip(p, axes); });
}

template <Backend B>
void Interpreter<B>::run(op::QSlice& o) {
  const std::span<const std::pair<std::int64_t, std::int64_t>> r(o.ranges);
  q_layout(
      o,
      [&](auto& b, QH q) -> decltype(b.q_slice(std::move(q), r)) {
        return b.q_slice(std::move(q), r);
      },
      [&](const quant::QuantizedParts& p) { return quant::q_slice(p, r); });
}

template <Backend B>
void Interpreter<B>::run(op::QMatmul& o) {
  auto x = take<Kind::Float>(o.lhs, "q_matmul");
  auto w = take<Kind::Quantized>(o.rhs, "q_matmul");
  put<Kind::Float>(o.out,
                   detail::qhost::q_matmul(b_, std::move(x), std::move(w), o.lhs.dtype, device_));
}

template <Backend B>
void Interpreter<B>::run(op::QLinear& o) {
  auto x = take<Kind::Float>(o.lhs, "q_linear");
  auto w = take<Kind::Quantized>(o.rhs, "q_linear");
  put<Kind::Float>(o.out,
                   detail::qhost::q_linear(b_, std::move(x), std::move(w), o.lhs.dtype, device_));
}

// ---- runtime ---------------------------------------------------------------------------------
template <Backend B>
void Interpreter<B>::run(op::Read& o) {
  detail::with_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
    auto h = take<K>(o.in, "read");
    if constexpr (K == Kind::Float)
      o.slot->result.set_value(b_.float_into_data(std::move(h)));
    else if constexpr (K == Kind::Int)
      o.slot->result.set_value(b_.int_into_data(std::move(h)));
    else if constexpr (K == Kind::Bool)
      o.slot->result.set_value(b_.bool_into_data(std::move(h)));
    else
      o.slot->result.set_value(b_.q_into_parts(std::move(h)));
  });
}

template <Backend B>
void Interpreter<B>::run(op::ToDevice&) {
  detail::raise<Error>("internal", "to_device runs through Interpreter::send/receive");
}

template <Backend B>
void Interpreter<B>::run(op::Drop& o) {
  reg_.drop(o.in.id);
}

}  // namespace ferry

// Ferry: the layout operations that are IR ops of their own (every backend has a kernel for
// each): reshape, permute, swap_dims, flip, expand, slice (negative steps too), slice_assign,
// cat, gather, index_select and repeat. Included by ferry/ops.hpp; ops/layout.hpp composes
// more from these.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "ferry/ops.hpp"

namespace ferry {

template <Backend B>
[[nodiscard]] Tensor<B> q_reshape(Tensor<B> x, Shape shape);
template <Backend B>
[[nodiscard]] Tensor<B> q_permute(Tensor<B> x, std::vector<std::int64_t> perm);
template <Backend B>
[[nodiscard]] Tensor<B> q_flip(Tensor<B> x, std::vector<std::int64_t> axes);
template <Backend B>
[[nodiscard]] Tensor<B> q_slice(Tensor<B> x, std::vector<Range> ranges);

/// Same elements in a new shape (one dim may be -1). Quantized tensors go to q_reshape.
template <Backend B>
[[nodiscard]] Tensor<B> reshape(Tensor<B> x, Shape shape) {
  if (x.is_quantized()) return q_reshape(std::move(x), std::move(shape));
  const auto dev = detail::common_device("reshape", x);
  Shape s = detail::reshape_target("reshape", x.shape(), shape);
  op::Reshape o{detail::TA<B>::ref(x), detail::out_ref(x, std::move(s), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "reshape"), dev, std::move(o), x);
}
template <Backend B>
[[nodiscard]] Tensor<B> permute(Tensor<B> x, std::vector<std::int64_t> perm) {
  if (x.is_quantized()) return q_permute(std::move(x), std::move(perm));
  const auto dev = detail::common_device("permute", x);
  auto p = detail::permutation("permute", x.shape(), perm);
  std::vector<std::int64_t> s(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) s[i] = x.shape()[p[i]];
  op::Permute o{detail::TA<B>::ref(x), std::move(p),
                detail::out_ref(x, Shape(std::move(s)), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "permute"), dev, std::move(o), x);
}
template <Backend B>
[[nodiscard]] Tensor<B> swap_dims(Tensor<B> x, std::int64_t a, std::int64_t b) {
  const auto ia = x.shape().axis(a, "swap_dims");
  const auto ib = x.shape().axis(b, "swap_dims");
  std::vector<std::int64_t> perm(x.rank());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
  std::swap(perm[ia], perm[ib]);
  return permute(std::move(x), std::move(perm));
}
template <Backend B>
[[nodiscard]] Tensor<B> flip(Tensor<B> x, std::vector<std::int64_t> axes) {
  if (x.is_quantized()) return q_flip(std::move(x), std::move(axes));
  const auto dev = detail::common_device("flip", x);
  auto a = detail::distinct_axes("flip", x.shape(), axes);
  op::Flip o{detail::TA<B>::ref(x), std::move(a), detail::out_ref(x, x.shape(), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "flip"), dev, std::move(o), x);
}
/// Broadcasts to `shape` (numpy rules; may add leading dims). A -1 keeps that dim of `x`, as
/// torch's expand does. A quantized `x` keeps its codes and params (always exact; q_expand).
template <Backend B>
[[nodiscard]] Tensor<B> expand(Tensor<B> x, Shape shape) {
  const auto dev = detail::common_device("expand", x);
  const Shape asked = shape;
  if (shape.rank() < x.rank())
    detail::raise<ShapeError>("shape", "expand: shape {} cannot be expanded to {} (fewer dims)",
                              x.shape(), asked);
  const std::size_t lead = shape.rank() - x.rank();
  for (std::size_t i = 0; i < shape.rank(); ++i) {
    if (shape[i] == -1 && i >= lead) shape[i] = x.shape()[i - lead];
    if (shape[i] < 0)
      detail::raise<ShapeError>("shape", "expand: target {} has an invalid dim {} at {}", asked,
                                shape[i], i);
  }
  if (detail::broadcast("expand", x.shape(), shape) != shape)
    detail::raise<ShapeError>("shape", "expand: shape {} cannot be expanded to {}", x.shape(),
                              asked);
  auto sch = x.is_quantized() ? std::make_shared<const quant::Scheme>(
                                    quant::expanded_scheme(x.scheme(), x.shape(), shape))
                              : nullptr;  // a quantized x: q_expand, its params follow exactly
  op::Expand o{detail::TA<B>::ref(x),
               detail::out_ref(x, std::move(shape), x.dtype(), std::move(sch))};
  return detail::emit(detail::TA<B>::core(x, "expand"), dev, std::move(o), x);
}
namespace detail {
/// Turns each range with a negative step into the positive-step range of the same elements
/// (start..end read from end - 1 down, every |step|, as burn's and ndarray's slices) and
/// returns the dims whose result must then be flipped.
inline std::vector<std::int64_t> reversed_ranges(const Shape& s, std::vector<Range>& ranges) {
  std::vector<std::int64_t> flips;
  for (std::size_t i = 0; i < ranges.size() && i < s.rank(); ++i) {
    Range& r = ranges[i];
    if (r.step >= 0) continue;
    if (r.step == std::numeric_limits<std::int64_t>::min())
      raise<IndexError>("range", "slice: step {} on dim {} has no magnitude in i64", r.step, i);
    const std::int64_t step = -r.step;
    const Range n =
        normalise_ranges("slice", Shape{s[i]}, std::vector<Range>{{r.start, r.end, 1}})[0];
    if (n.end > n.start) {
      const std::int64_t last = n.end - 1;
      r = Range{last - (last - n.start) / step * step, n.end, step};
    } else {
      r = Range{n.start, n.start, 1};
    }
    flips.push_back(static_cast<std::int64_t>(i));
  }
  return flips;
}
}  // namespace detail

/// Python-style ranges per leading dim (negative start/end = from the end, clamped). A step
/// >= 1 takes start, start + step, ...; a negative step takes the range's elements from end - 1
/// down, every |step| (burn's and ndarray's rule: [0..5; -2] is 4, 2, 0); 0 is an IndexError.
template <Backend B>
[[nodiscard]] Tensor<B> slice(Tensor<B> x, std::vector<Range> ranges) {
  const auto flips = detail::reversed_ranges(x.shape(), ranges);
  if (!flips.empty()) {
    auto y = slice(std::move(x), std::move(ranges));
    return flip(std::move(y), flips);
  }
  if (x.is_quantized()) return q_slice(std::move(x), std::move(ranges));
  const auto dev = detail::common_device("slice", x);
  auto r = detail::normalise_ranges("slice", x.shape(), ranges);
  Shape s = detail::sliced(x.shape(), r);
  op::Slice o{detail::TA<B>::ref(x), std::move(r), detail::out_ref(x, std::move(s), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "slice"), dev, std::move(o), x);
}
/// A copy of `x` with the slice replaced by `value` (whose shape must be the slice's).
template <Backend B>
[[nodiscard]] Tensor<B> slice_assign(Tensor<B> x, std::vector<Range> ranges, Tensor<B> value) {
  const auto dev = detail::common_device("slice_assign", x, value);
  detail::not_quantized("slice_assign", x.dtype());
  detail::same_dtype("slice_assign", x.dtype(), value.dtype());
  auto r = detail::normalise_ranges("slice_assign", x.shape(), ranges);
  if (detail::sliced(x.shape(), r) != value.shape())
    detail::raise<ShapeError>("shape", "slice_assign: the slice of {} has shape {}, the value {}",
                              x.shape(), detail::sliced(x.shape(), r), value.shape());
  op::SliceAssign o{detail::TA<B>::ref(x), std::move(r), detail::TA<B>::ref(value),
                    detail::out_ref(x, x.shape(), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "slice_assign"), dev, std::move(o), x, value);
}
template <Backend B>
[[nodiscard]] Tensor<B> cat(std::vector<Tensor<B>> xs, std::int64_t dim) {
  if (xs.empty()) detail::raise<ShapeError>("shape", "cat: no tensors given");
  const auto& first = xs.front();
  const auto d = first.shape().axis(dim, "cat");
  std::vector<std::int64_t> s = first.shape().to_vector();
  s[d] = 0;
  op::Cat o;
  for (const auto& t : xs) {
    (void)detail::common_device("cat", first, t);
    detail::same_dtype("cat", first.dtype(), t.dtype());
    if (t.rank() != first.rank())
      detail::raise<ShapeError>("shape", "cat: shapes {} and {} differ in rank", first.shape(),
                                t.shape());
    for (std::size_t i = 0; i < t.rank(); ++i)
      if (i != d && t.shape()[i] != first.shape()[i])
        detail::raise<ShapeError>("shape",
                                  "cat: shapes {} and {} differ in dim {} (not the cat dim {})",
                                  first.shape(), t.shape(), i, d);
    const auto sum = detail::add_i64(s[d], t.shape()[d]);
    if (!sum)
      detail::raise<ShapeError>("shape", "cat: dim {} of the result passes 2^63 - 1 (at {})", d,
                                t.shape());
    s[d] = *sum;
  }
  std::shared_ptr<const quant::Scheme> sch;
  if (first.is_quantized()) {  // q_cat: one scheme, whole blocks up to the last tensor
    std::vector<quant::Scheme> schemes;
    std::vector<Shape> shapes;
    for (const auto& t : xs) {
      schemes.push_back(t.scheme());
      shapes.push_back(t.shape());
    }
    sch = std::make_shared<const quant::Scheme>(quant::cat_scheme(schemes, shapes, d));
  }
  // Refs are taken after all copies exist: a tensor listed twice is shared, hence read-only.
  for (const auto& t : xs) o.ins.push_back(detail::TA<B>::ref(t));
  o.dim = d;
  o.out = detail::out_ref(first, Shape(std::move(s)), first.dtype(), std::move(sch));
  const auto dev = detail::TA<B>::state(first, "cat").device;
  auto core = detail::TA<B>::core(first, "cat");
  std::vector<Access> acc;
  for (const auto& r : o.ins) acc.push_back(r.access);
  return detail::submit_op(core, dev, std::move(o), [&] {
    for (std::size_t i = 0; i < xs.size(); ++i) detail::TA<B>::release(xs[i], acc[i]);
  });
}
/// `cat({a, b}, 0)`: the same for a braced list, whose element type a vector parameter cannot
/// deduce. An initializer_list can only be copied from, so its tensors are passed shared
/// (read-only); to let the kernel reuse last copies, fill a vector with push_back(std::move(t))
/// and move that in.
template <Backend B>
[[nodiscard]] Tensor<B> cat(std::initializer_list<Tensor<B>> xs, std::int64_t dim) {
  return cat(std::vector<Tensor<B>>(xs), dim);
}
/// torch.gather: out[i][j] = x[index[i][j]][j] along `dim`; index is an int tensor of x's rank.
/// A quantized `x` keeps its codes and params when `dim` has one param along it (q_gather).
template <Backend B>
[[nodiscard]] Tensor<B> gather(Tensor<B> x, std::int64_t dim, Tensor<B> index) {
  const auto dev = detail::common_device("gather", x, index);
  detail::want_kind("gather", index.dtype(), {Kind::Int}, "an int index");
  const auto d = x.shape().axis(dim, "gather");
  if (index.rank() != x.rank())
    detail::raise<ShapeError>("shape", "gather: index shape {} must have the rank of {}",
                              index.shape(), x.shape());
  for (std::size_t i = 0; i < x.rank(); ++i)
    if (i != d && index.shape()[i] > x.shape()[i])
      detail::raise<ShapeError>("shape", "gather: index shape {} exceeds {} in dim {}",
                                index.shape(), x.shape(), i);
  std::shared_ptr<const quant::Scheme> sch;
  if (x.is_quantized()) {  // q_gather: one param along the dim, or QuantError
    quant::check_gather(x.scheme(), x.shape(), d);
    sch = std::make_shared<const quant::Scheme>(x.scheme());
  }
  op::Gather o{detail::TA<B>::ref(x), d, detail::TA<B>::ref(index),
               detail::out_ref(x, index.shape(), x.dtype(), std::move(sch))};
  return detail::emit(detail::TA<B>::core(x, "gather"), dev, std::move(o), x, index);
}
/// Picks the entries `index` (1-D int) along `dim`. A quantized `x` keeps its codes and params
/// when `dim` has block 1 (or one block) in its scheme, else QuantError (q_select).
template <Backend B>
[[nodiscard]] Tensor<B> index_select(Tensor<B> x, std::int64_t dim, Tensor<B> index) {
  const auto dev = detail::common_device("index_select", x, index);
  detail::want_kind("index_select", index.dtype(), {Kind::Int}, "an int index");
  const auto d = x.shape().axis(dim, "index_select");
  if (index.rank() != 1)
    detail::raise<ShapeError>("shape", "index_select: index must be 1-D, got {}", index.shape());
  std::vector<std::int64_t> s = x.shape().to_vector();
  s[d] = index.shape()[0];
  std::shared_ptr<const quant::Scheme> sch;
  if (x.is_quantized()) {  // q_select: the params are picked with the values, or QuantError
    quant::check_select(x.scheme(), x.shape(), d);
    sch = std::make_shared<const quant::Scheme>(x.scheme());
  }
  op::IndexSelect o{detail::TA<B>::ref(x), d, detail::TA<B>::ref(index),
                    detail::out_ref(x, Shape(std::move(s)), x.dtype(), std::move(sch))};
  return detail::emit(detail::TA<B>::core(x, "index_select"), dev, std::move(o), x, index);
}
/// torch.Tensor.repeat: tiles `x` times[i] along dim i (times.size() == rank). A quantized `x`
/// keeps its codes and params when every repeated dim holds whole blocks (q_repeat).
template <Backend B>
[[nodiscard]] Tensor<B> repeat(Tensor<B> x, std::vector<std::int64_t> times) {
  const auto dev = detail::common_device("repeat", x);
  if (times.size() != x.rank())
    detail::raise<ShapeError>("shape", "repeat: {} repeat counts for shape {} of rank {}",
                              times.size(), x.shape(), x.rank());
  std::vector<std::int64_t> s = x.shape().to_vector();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (times[i] < 0)
      detail::raise<ValueError>("value", "repeat: count {} on dim {} is negative", times[i], i);
    const auto d = detail::mul_i64(s[i], times[i]);
    if (!d)
      detail::raise<ShapeError>("shape", "repeat: dim {} of {} repeated {} times passes 2^63 - 1",
                                i, x.shape(), times[i]);
    s[i] = *d;
  }
  std::shared_ptr<const quant::Scheme> sch;
  if (x.is_quantized()) {  // q_repeat: whole blocks only, or QuantError
    quant::check_repeat(x.scheme(), x.shape(), times);
    sch = std::make_shared<const quant::Scheme>(x.scheme());
  }
  op::Repeat o{detail::TA<B>::ref(x), std::move(times),
               detail::out_ref(x, Shape(std::move(s)), x.dtype(), std::move(sch))};
  return detail::emit(detail::TA<B>::core(x, "repeat"), dev, std::move(o), x);
}

}  // namespace ferry

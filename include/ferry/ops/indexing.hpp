// Ferry: scatter and scatter_add (op::Scatter), gather_nd and scatter_nd (op::GatherNd,
// op::ScatterNd), and as compositions of those and the layout ops: scatter of a scalar,
// select_assign (index_add), one_hot and unfold. Included by ferry/ops.hpp. PyTorch's names and
// semantics, ONNX's for the nd ops.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "ferry/detail/checked.hpp"
#include "ferry/ops.hpp"
#include "ferry/ops/layout.hpp"

namespace ferry {

namespace detail {
/// The dtype rules of the scatters: any plain dtype is written, float and int are added; the
/// source has the tensor's dtype.
inline void scatter_dtypes(const char* op, bool add, DType x, DType src) {
  if (add)
    want_kind(op, x, {Kind::Float, Kind::Int}, "float or int operands");
  else
    not_quantized(op, x);
  same_dtype(op, x, src);
}
template <Backend B>
Tensor<B> scatter_op(ScatterKind k, Tensor<B> x, std::int64_t dim, Tensor<B> index, Tensor<B> src) {
  const char* op = name(k);
  const auto dev = common_device(op, x, index, src);
  scatter_dtypes(op, k == ScatterKind::scatter_add, x.dtype(), src.dtype());
  want_kind(op, index.dtype(), {Kind::Int}, "an int index");
  const std::size_t d = x.shape().axis(dim, op);
  const std::size_t r = x.rank();
  bool ok = index.rank() == r && src.rank() == r;
  for (std::size_t i = 0; ok && i < r; ++i)
    ok = index.shape()[i] <= src.shape()[i] && (i == d || index.shape()[i] <= x.shape()[i]);
  if (!ok)
    raise<ShapeError>("shape",
                      "{}: index of shape {} must have the rank of {} and of source {}, and fit "
                      "in the source in every dim and in the tensor in every dim but {}",
                      op, index.shape(), x.shape(), src.shape(), d);
  op::Scatter o{
      k, TA<B>::ref(x), d, TA<B>::ref(index), TA<B>::ref(src), out_ref(x, x.shape(), x.dtype())};
  return emit(TA<B>::core(x, op), dev, std::move(o), x, index, src);
}
}  // namespace detail

/// torch.Tensor.scatter(dim, index, src): a copy of x with src[p] written at each position p of
/// index, its `dim` coordinate replaced by index[p] (in [0, x.shape[dim]): an IndexError naming
/// the index and the dim otherwise, at the read of the result). index has x's rank and fits in
/// src in every dim and in x in every dim but `dim`. Repeated indices: the last in row-major
/// order of index wins (torch leaves it unspecified). Every dtype.
template <Backend B>
[[nodiscard]] Tensor<B> scatter(Tensor<B> x, std::int64_t dim, Tensor<B> index, Tensor<B> src) {
  return detail::scatter_op(ScatterKind::scatter, std::move(x), dim, std::move(index),
                            std::move(src));
}
/// torch.Tensor.scatter(dim, index, value): `value` written at every position index names.
template <Backend B>
[[nodiscard]] Tensor<B> scatter(Tensor<B> x, std::int64_t dim, Tensor<B> index, Scalar value) {
  (void)detail::common_device("scatter", x, index);
  detail::not_quantized("scatter", x.dtype());
  auto v = detail::full_on(x, "scatter", index.shape(), value, x.dtype());
  return scatter(std::move(x), dim, std::move(index), std::move(v));
}
/// torch.Tensor.scatter_add(dim, index, src): as scatter, adding instead of writing; repeated
/// indices accumulate, in the row-major order of index (integers wrap, halves round each add).
/// Float and int dtypes.
template <Backend B>
[[nodiscard]] Tensor<B> scatter_add(Tensor<B> x, std::int64_t dim, Tensor<B> index, Tensor<B> src) {
  return detail::scatter_op(ScatterKind::scatter_add, std::move(x), dim, std::move(index),
                            std::move(src));
}

namespace detail {
/// index.shape[:-1] + x.shape[m:] for an nd index [..., m] into x (ShapeError otherwise).
template <Backend B>
Shape nd_result(const char* op, const Tensor<B>& x, const Tensor<B>& index) {
  want_kind(op, index.dtype(), {Kind::Int}, "an int index");
  if (index.rank() == 0 || index.shape()[index.rank() - 1] > static_cast<std::int64_t>(x.rank()))
    raise<ShapeError>("shape", "{}: index of shape {} needs a last dim of at most the rank of {}",
                      op, index.shape(), x.shape());
  const auto m = static_cast<std::size_t>(index.shape()[index.rank() - 1]);
  std::vector<std::int64_t> s(index.shape().begin(), index.shape().end() - 1);
  for (std::size_t d = m; d < x.rank(); ++d) s.push_back(x.shape()[d]);
  return Shape(std::move(s));
}
template <Backend B>
Tensor<B> scatter_nd_op(ScatterNdKind k, Tensor<B> x, Tensor<B> index, Tensor<B> updates) {
  const char* op = name(k);
  const auto dev = common_device(op, x, index, updates);
  scatter_dtypes(op, k == ScatterNdKind::scatter_nd_add, x.dtype(), updates.dtype());
  const Shape want = nd_result(op, x, index);
  if (updates.shape() != want)
    raise<ShapeError>("shape", "{}: updates of shape {} must be {} (index {}, tensor {})", op,
                      updates.shape(), want, index.shape(), x.shape());
  op::ScatterNd o{k, TA<B>::ref(x), TA<B>::ref(index), TA<B>::ref(updates),
                  out_ref(x, x.shape(), x.dtype())};
  return emit(TA<B>::core(x, op), dev, std::move(o), x, index, updates);
}
}  // namespace detail

/// ONNX GatherND (batch_dims 0): index [..., m] holds tuples of m coordinates into x's first m
/// dims; the result, index.shape[:-1] + x.shape[m:], holds the slice each tuple names. A
/// coordinate outside its dim (negative ones too: they are not wrapped) is an IndexError naming
/// it, its tuple and the dim, at the read. Every dtype.
template <Backend B>
[[nodiscard]] Tensor<B> gather_nd(Tensor<B> x, Tensor<B> index) {
  const auto dev = detail::common_device("gather_nd", x, index);
  detail::not_quantized("gather_nd", x.dtype());
  Shape s = detail::nd_result("gather_nd", x, index);
  op::GatherNd o{detail::TA<B>::ref(x), detail::TA<B>::ref(index),
                 detail::out_ref(x, std::move(s), x.dtype())};
  return detail::emit(detail::TA<B>::core(x, "gather_nd"), dev, std::move(o), x, index);
}
/// ONNX ScatterND: a copy of x with updates[k, ...] written at the slice tuple k of index names
/// (updates has gather_nd's result shape). Repeated tuples: the last wins (ONNX leaves it
/// undefined). Every dtype.
template <Backend B>
[[nodiscard]] Tensor<B> scatter_nd(Tensor<B> x, Tensor<B> index, Tensor<B> updates) {
  return detail::scatter_nd_op(ScatterNdKind::scatter_nd, std::move(x), std::move(index),
                               std::move(updates));
}
/// ONNX ScatterND with reduction "add": repeated tuples accumulate, in order. Float and int.
template <Backend B>
[[nodiscard]] Tensor<B> scatter_nd_add(Tensor<B> x, Tensor<B> index, Tensor<B> updates) {
  return detail::scatter_nd_op(ScatterNdKind::scatter_nd_add, std::move(x), std::move(index),
                               std::move(updates));
}

/// burn's select_assign, torch.Tensor.index_add(dim, index, source): x with source's slice i
/// along `dim` added to x's slice index[i]; index is 1-D, source is x's shape with dim =
/// index's length. Repeated indices accumulate. A scatter_add with the index expanded.
template <Backend B>
[[nodiscard]] Tensor<B> select_assign(Tensor<B> x, std::int64_t dim, Tensor<B> index,
                                      Tensor<B> source) {
  const char* op = "select_assign";
  (void)detail::common_device(op, x, index, source);
  detail::want_kind(op, x.dtype(), {Kind::Float, Kind::Int}, "float or int operands");
  detail::want_kind(op, index.dtype(), {Kind::Int}, "an int index");
  const std::size_t d = x.shape().axis(dim, op);
  if (index.rank() != 1)
    detail::raise<ShapeError>("shape", "{}: index must be 1-D, got shape {}", op, index.shape());
  const Shape want = detail::with_dim(x.shape(), d, index.shape()[0]);
  if (source.shape() != want)
    detail::raise<ShapeError>("shape", "{}: source of shape {} must be {} ({} with dim {} = {})",
                              op, source.shape(), want, x.shape(), d, index.shape()[0]);
  std::vector<std::int64_t> s(x.rank(), 1);
  s[d] = index.shape()[0];
  auto i = expand(reshape(std::move(index), Shape(std::move(s))), source.shape());
  return scatter_add(std::move(x), static_cast<std::int64_t>(d), std::move(i), std::move(source));
}
/// torch's name for select_assign.
template <Backend B>
[[nodiscard]] Tensor<B> index_add(Tensor<B> x, std::int64_t dim, Tensor<B> index,
                                  Tensor<B> source) {
  return select_assign(std::move(x), dim, std::move(index), std::move(source));
}

/// torch.nn.functional.one_hot(index, num_classes): index's shape plus a last dim of
/// num_classes, 1 at each index value and 0 elsewhere, in `dtype` (i64 as torch; any plain
/// dtype). num_classes must be given (torch's -1 would read the max on the host); an index
/// outside [0, num_classes) is an IndexError at the read (a scatter underneath).
template <Backend B>
[[nodiscard]] Tensor<B> one_hot(Tensor<B> index, std::int64_t num_classes,
                                DType dtype = DType::i64) {
  const char* op = "one_hot";
  (void)detail::common_device(op, index);
  detail::want_kind(op, index.dtype(), {Kind::Int}, "an int index");
  detail::not_quantized(op, dtype);
  if (num_classes < 0)
    detail::raise<ValueError>("value", "{}: num_classes must be >= 0, got {}", op, num_classes);
  std::vector<std::int64_t> s = index.shape().to_vector();
  s.push_back(num_classes);
  std::vector<std::int64_t> s1 = index.shape().to_vector();
  s1.push_back(1);
  auto zeros = detail::full_on(index, op, Shape(std::move(s)), Scalar(0), dtype);
  auto ones = detail::full_on(index, op, Shape(s1), Scalar(1), dtype);
  auto i = reshape(std::move(index), Shape(std::move(s1)));
  return scatter(std::move(zeros), -1, std::move(i), std::move(ones));
}

/// torch.Tensor.unfold(dim, size, step): every window of `size` elements along `dim`, `step`
/// apart, as a new last dim: dim becomes (n - size) / step + 1 windows. size <= n, step >= 1.
/// An index_select of the windows' elements, a reshape and a permute: values are bit copies.
template <Backend B>
[[nodiscard]] Tensor<B> unfold(Tensor<B> x, std::int64_t dim, std::int64_t size,
                               std::int64_t step) {
  const char* op = "unfold";
  (void)detail::common_device(op, x);
  detail::not_quantized(op, x.dtype());
  if (x.rank() == 0) {  // torch: a 0-d tensor unfolds as one element
    (void)Shape{1}.axis(dim, op);
    return unfold(reshape(std::move(x), Shape{1}), 0, size, step);
  }
  const std::size_t d = x.shape().axis(dim, op);
  const std::int64_t n = x.shape()[d];
  if (size < 0 || size > n)
    detail::raise<ValueError>("value", "{}: size {} must be in [0, {}] (dim {} of shape {})", op,
                              size, n, d, x.shape());
  if (step < 1) detail::raise<ValueError>("value", "{}: step must be >= 1, got {}", op, step);
  const std::int64_t w = (n - size) / step + 1;
  if (!detail::mul_i64(w, size) ||
      !detail::mul_i64(*detail::mul_i64(w, size), x.numel() / std::max<std::int64_t>(n, 1)))
    detail::raise<ValueError>(
        "value", "{}: {} windows of {} elements of shape {} overflow the element count", op, w,
        size, x.shape());
  std::vector<std::int64_t> at;
  at.reserve(static_cast<std::size_t>(w * size));
  for (std::int64_t i = 0; i < w; ++i)
    for (std::int64_t j = 0; j < size; ++j) at.push_back(i * step + j);
  auto idx = detail::from_host(x, op, TensorData::from(at, Shape{w * size}));
  std::vector<std::int64_t> s = x.shape().to_vector();
  s[d] = w;
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(d) + 1, size);
  auto y =
      reshape(index_select(std::move(x), static_cast<std::int64_t>(d), std::move(idx)), Shape(s));
  std::vector<std::int64_t> perm;  // move the window dim (d + 1) last
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i != d + 1) perm.push_back(static_cast<std::int64_t>(i));
  perm.push_back(static_cast<std::int64_t>(d) + 1);
  return permute(std::move(y), std::move(perm));
}

}  // namespace ferry

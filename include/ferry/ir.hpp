// Ferry: the IR — one plain struct per operation family, held in `ferry::Op`.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ferry/config.hpp"
#include "ferry/data.hpp"
#include "ferry/detail/text.hpp"
#include "ferry/dtype.hpp"
#include "ferry/ir_kinds.hpp"
#include "ferry/params.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/shape.hpp"

namespace ferry {

/// Tensor ids are a per-router 64-bit counter and never reused, so a stale id can never name a
/// newer tensor (the registry reports it as unknown instead).
using TensorId = std::uint64_t;

/// How an op may use an operand's handle. ReadWrite: the caller held the tensor once and gave
/// it up, so the registry hands the handle over and the kernel may reuse its buffer. ReadOnly:
/// other tensors still hold it, so the kernel gets a shared copy and must leave it unchanged.
enum class Access : std::uint8_t { ReadOnly, ReadWrite };

/// An operand or a result as the IR sees it: which tensor, what it looks like, how it is used.
struct TensorRef {
  TensorRef() = default;
  TensorRef(TensorId i, Shape s, DType d, Access a = Access::ReadOnly,
            std::shared_ptr<const quant::Scheme> sch = nullptr)
      : id(i), shape(std::move(s)), dtype(d), access(a), scheme(std::move(sch)) {}

  TensorId id = 0;
  Shape shape;
  DType dtype = DType::f32;
  Access access = Access::ReadOnly;
  /// The scheme of a quantized tensor (dtype == quantized); null for plain tensors.
  std::shared_ptr<const quant::Scheme> scheme;
};

/// Where a Read op delivers its result; the reader waits on it.
struct ReadSlot;

/// The op structs. Every router action is one of these, so a stream can be queued, traced,
/// replayed or sent elsewhere. `out` is the result's ref; its shape and dtype were inferred
/// (and the inputs checked) by the router before the op was recorded.
namespace op {
struct FromData {
  static constexpr const char* name = "from_data";
  TensorData data;
  TensorRef out;
};
struct Full {
  static constexpr const char* name = "full";
  Scalar value;
  TensorRef out;
};
struct Arange {
  static constexpr const char* name = "arange";
  Scalar start, step;
  TensorRef out;
};
struct Random {
  static constexpr const char* name = "random";
  Distribution dist;
  std::uint64_t seed = 0;
  TensorRef out;
};
/// Integers uniform on [low, high) (whole numbers; low and high - 1 values of the dtype).
struct RandomInt {
  static constexpr const char* name = "random_int";
  Scalar low, high;
  std::uint64_t seed = 0;
  TensorRef out;
};
struct Unary {
  UnaryKind kind;
  TensorRef in, out;
};
struct Binary {
  BinaryKind kind;
  TensorRef lhs, rhs, out;
};
struct BinaryScalar {
  BinaryKind kind;
  TensorRef lhs;
  Scalar rhs;
  TensorRef out;
};
struct Clamp {
  static constexpr const char* name = "clamp";
  TensorRef in;
  Scalar lo, hi;
  TensorRef out;
};
struct Where {
  static constexpr const char* name = "where";
  TensorRef mask, a, b, out;
};
struct Cast {
  static constexpr const char* name = "cast";
  TensorRef in, out;
};
struct Reduce {
  ReduceKind kind;
  TensorRef in;
  std::optional<std::size_t> dim;
  bool keepdim = false;
  TensorRef out;
};
struct Scan {
  ScanKind kind;
  TensorRef in;
  std::size_t dim = 0;
  TensorRef out;
};
/// softmax or log_softmax of a float tensor along `dim`, fused; recorded only for a backend with
/// the kernel (ferry/ops/reductions.hpp records the decomposition otherwise).
struct Softmax {
  SoftmaxKind kind;
  TensorRef in;
  std::size_t dim = 0;
  TensorRef out;
};
/// Scaled dot-product attention, fused: ins = q [..., L, E], k [..., S, E], v [..., S, Ev] and,
/// when given, an additive float mask broadcasting to [..., L, S] (ferry/ops/nn.hpp turns a bool
/// mask into one). Recorded only for a backend with the kernel; the decomposition otherwise.
struct Attention {
  static constexpr const char* name = "attention";
  std::vector<TensorRef> ins;
  bool causal = false;
  double scale = 1.0;
  TensorRef out;
};
/// The indices that sort `in` along `dim` (i64), the first `k` of them (k == the dim's size:
/// argsort; less: topk). Stable: equal values keep their order; NaN after every number in
/// both directions.
struct Argsort {
  static constexpr const char* name = "argsort";
  TensorRef in;
  std::size_t dim = 0;
  bool descending = false;
  std::size_t k = 0;
  TensorRef out;
};
struct Matmul {
  static constexpr const char* name = "matmul";
  TensorRef lhs, rhs, out;
};
struct Reshape {
  static constexpr const char* name = "reshape";
  TensorRef in, out;
};
struct Permute {
  static constexpr const char* name = "permute";
  TensorRef in;
  std::vector<std::size_t> perm;
  TensorRef out;
};
struct Flip {
  static constexpr const char* name = "flip";
  TensorRef in;
  std::vector<std::size_t> axes;
  TensorRef out;
};
struct Expand {
  static constexpr const char* name = "expand";
  TensorRef in, out;
};
struct Slice {
  static constexpr const char* name = "slice";
  TensorRef in;
  std::vector<Range> ranges;
  TensorRef out;
};
struct SliceAssign {
  static constexpr const char* name = "slice_assign";
  TensorRef in;
  std::vector<Range> ranges;
  TensorRef value, out;
};
struct Cat {
  static constexpr const char* name = "cat";
  std::vector<TensorRef> ins;
  std::size_t dim = 0;
  TensorRef out;
};
struct Gather {
  static constexpr const char* name = "gather";
  TensorRef in;
  std::size_t dim = 0;
  TensorRef index, out;
};
struct IndexSelect {
  static constexpr const char* name = "index_select";
  TensorRef in;
  std::size_t dim = 0;
  TensorRef index, out;
};
/// torch.Tensor.scatter / scatter_add: a copy of `in` with `value[p]` written (added) at
/// position p of `index` with its `dim` coordinate replaced by index[p].
struct Scatter {
  ScatterKind kind;
  TensorRef in;
  std::size_t dim = 0;
  TensorRef index, value, out;
};
/// ONNX GatherND (batch_dims 0): index [..., m] holds tuples into the first m dims of `in`; the
/// result is index.shape[:-1] + in.shape[m:].
struct GatherNd {
  static constexpr const char* name = "gather_nd";
  TensorRef in, index, out;
};
/// ONNX ScatterND: a copy of `in` with value[k] (shape in.shape[m:]) written or added at tuple k.
struct ScatterNd {
  ScatterNdKind kind;
  TensorRef in, index, value, out;
};
struct Repeat {
  static constexpr const char* name = "repeat";
  TensorRef in;
  std::vector<std::int64_t> times;
  TensorRef out;
};

// Quantized ops. Scales/offsets given by the user travel in the op (they are small).
struct Quantize {
  static constexpr const char* name = "quantize";
  TensorRef in;
  quant::Scheme scheme;
  std::vector<float> scales;
  std::vector<std::int32_t> offsets;
  TensorRef out;
};
struct QuantizeDynamic {
  static constexpr const char* name = "quantize_dynamic";
  TensorRef in;
  quant::Scheme scheme;
  TensorRef out;
};
struct Dequantize {
  static constexpr const char* name = "dequantize";
  TensorRef in, out;
};
struct QFromParts {
  static constexpr const char* name = "q_from_parts";
  quant::QuantizedParts parts;
  TensorRef out;
};
struct QReshape {
  static constexpr const char* name = "q_reshape";
  TensorRef in, out;
};
struct QPermute {
  static constexpr const char* name = "q_permute";
  TensorRef in;
  std::vector<std::int64_t> perm;
  TensorRef out;
};
struct QFlip {
  static constexpr const char* name = "q_flip";
  TensorRef in;
  std::vector<std::int64_t> axes;
  TensorRef out;
};
struct QSlice {
  static constexpr const char* name = "q_slice";
  TensorRef in;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  TensorRef out;
};
struct QMatmul {
  static constexpr const char* name = "q_matmul";
  TensorRef lhs, rhs, out;
};
/// lhs [..., M, K] times quantized rhs [N, K] transposed: linear's layout (rows are outputs).
struct QLinear {
  static constexpr const char* name = "q_linear";
  TensorRef lhs, rhs, out;
};

// Runtime ops.
struct Read {
  static constexpr const char* name = "read";
  TensorRef in;
  std::shared_ptr<ReadSlot> slot;
};
/// Moves `in` from device `from` to device `to` as `out` (a new id on the target). The router
/// runs it in two halves: the source takes the handle out and copies it to the target device,
/// then the target registers it.
struct ToDevice {
  static constexpr const char* name = "to_device";
  TensorRef in;
  std::size_t from = 0, to = 0;
  TensorRef out;
};
struct Drop {
  static constexpr const char* name = "drop";
  TensorRef in;
};
}  // namespace op

using Op = std::variant<op::FromData, op::Full, op::Arange, op::Random, op::RandomInt, op::Unary,
                        op::Binary, op::BinaryScalar, op::Clamp, op::Where, op::Cast, op::Reduce,
                        op::Scan, op::Softmax, op::Attention, op::Argsort, op::Matmul, op::Reshape,
                        op::Permute, op::Flip, op::Expand, op::Slice, op::SliceAssign, op::Cat,
                        op::Gather, op::IndexSelect, op::Scatter, op::GatherNd, op::ScatterNd,
                        op::Repeat, op::Quantize, op::QuantizeDynamic, op::Dequantize,
                        op::QFromParts, op::QReshape, op::QPermute, op::QFlip, op::QSlice,
                        op::QMatmul, op::QLinear, op::Read, op::ToDevice, op::Drop>;

/// X(T) for each op type op::T of Op, in Op's order (the interpreter declares one entry point
/// per op type with it).
// clang-format off
#define FERRY_OP_TYPES(X)                                                                        \
  X(FromData) X(Full) X(Arange) X(Random) X(RandomInt) X(Unary) X(Binary) X(BinaryScalar) X(Clamp) X(Where) \
  X(Cast) X(Reduce) X(Scan) X(Softmax) X(Attention) X(Argsort) X(Matmul) X(Reshape) X(Permute) X(Flip) X(Expand) X(Slice)         \
  X(SliceAssign) X(Cat) X(Gather) X(IndexSelect) X(Scatter) X(GatherNd) X(ScatterNd) X(Repeat) X(Quantize) X(QuantizeDynamic)      \
  X(Dequantize) X(QFromParts) X(QReshape) X(QPermute) X(QFlip) X(QSlice) X(QMatmul) X(QLinear) X(Read) \
  X(ToDevice) X(Drop)
// clang-format on
namespace detail {
template <class V>
struct with_monostate;
template <class... Ts>
struct with_monostate<std::variant<Ts...>> {
  using type = std::variant<std::monostate, Ts...>;
};
#define FERRY_DETAIL_COMMA_OP(T) , op::T
static_assert(std::is_same_v<with_monostate<Op>::type,
                             std::variant<std::monostate FERRY_OP_TYPES(FERRY_DETAIL_COMMA_OP)>>,
              "FERRY_OP_TYPES must list Op's alternatives, in order");
#undef FERRY_DETAIL_COMMA_OP
}  // namespace detail

/// The op's name as messages and traces show it ("add", "sum", "to_device", ...).
template <class T>
[[nodiscard]] const char* op_name(const T& x) noexcept {
  if constexpr (requires { x.kind; })
    return name(x.kind);
  else
    return T::name;
}
[[nodiscard]] const char* op_name(const Op& o) noexcept;

/// Calls `f(ref)` for each tensor an op reads, in a fixed order.
template <class T, class F>
void for_each_input(const T& x, F&& f) {
  if constexpr (requires { x.in; }) f(x.in);
  if constexpr (requires { x.lhs; }) f(x.lhs);
  if constexpr (requires { x.rhs.id; }) f(x.rhs);
  if constexpr (requires { x.mask; }) {
    f(x.mask);
    f(x.a);
    f(x.b);
  }
  if constexpr (requires { x.value.id; }) f(x.value);
  if constexpr (requires { x.index; }) f(x.index);
  if constexpr (requires { x.ins; })
    for (const auto& r : x.ins) f(r);
}
/// Refs of the tensors an op reads, for traces, stats and failure marking.
[[nodiscard]] std::vector<const TensorRef*> op_inputs(const Op& o);
/// The ref of the tensor an op makes, or null (read, drop).
[[nodiscard]] const TensorRef* op_output(const Op& o) noexcept;

namespace detail {
/// What `fmt::format("{}", op)` prints: `name(inputs, params) -> out`.
[[nodiscard]] std::string op_string(const Op& o);
}  // namespace detail

}  // namespace ferry

template <>
struct fmt::formatter<ferry::TensorRef> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::TensorRef& r, Ctx& ctx) const {
    std::string s = r.scheme ? fmt::format("t{}:q<{}>{}", r.id, *r.scheme, r.shape)
                             : fmt::format("t{}:{}{}", r.id, r.dtype, r.shape);
    if (r.access == ferry::Access::ReadWrite) s += " rw";
    return write(s, ctx);
  }
};

/// Prints an op as `name(inputs, params) -> out`, e.g. `add(t1:f32[2, 3] rw, t2:f32[3]) ->
/// t3:f32[2, 3]` (detail::op_string, compiled once: the Op variant has an alternative per op).
template <>
struct fmt::formatter<ferry::Op> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::Op& o, Ctx& ctx) const {
    const std::string s = ferry::detail::op_string(o);
    return write(s, ctx);
  }
};

#ifdef FERRY_HEADER_ONLY
#  include "ferry/impl/ir.hpp"
#endif

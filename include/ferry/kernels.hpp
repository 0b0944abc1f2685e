// Ferry: every optional kernel a backend may provide, as a concept named after it, with the
// signature the router calls it with (docs/backend.md's tables). The router finds a kernel by
// trying the call: one misspelled or with a parameter of the wrong type is simply not found,
// and the op throws Unsupported at run time or takes its fallback. Pin down the kernels you
// mean to provide, and the compiler names the requirement that fails:
//
//   static_assert(ferry::kernel::add<MyBackend>);  // H add(H, H), H a Float, Int or Bool handle
//   static_assert(ferry::kernel::matmul<MyBackend> && ferry::kernel::softmax<MyBackend>);
//
// Each concept holds when the kernel takes at least one handle kind the op applies to (a
// backend may implement add for floats only) and returns a handle of the kind the router stores.
// SPDX-License-Identifier: MIT
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ferry/data.hpp"
#include "ferry/ir.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

namespace ferry::kernel {

namespace k_ {
template <class B>
using F = typename B::FloatHandle;
template <class B>
using I = typename B::IntHandle;
template <class B>
using Bo = typename B::BoolHandle;
template <class B>
using Q = typename B::QuantizedHandle;
template <class B>
using D = typename B::Device;
}  // namespace k_

// FERRY_K_ANY3(n, params_of, call_of, R_of): the concept n, true when B has the kernel n for a
// Float, an Int or a Bool handle H: params_of(H) are the requires-parameters, call_of(n) the call
// and R_of(H) the result's handle type.
#define FERRY_K_FOR(R, params, call)      \
  requires(B & b, params) {               \
    { b.call } -> std::convertible_to<R>; \
  }
#define FERRY_K_ANY3(n, params_of, call_of, R_of)                             \
  template <class B>                                                          \
  concept n = FERRY_K_FOR(R_of(k_::F<B>), params_of(k_::F<B>), call_of(n)) || \
      FERRY_K_FOR(R_of(k_::I<B>), params_of(k_::I<B>), call_of(n)) ||         \
      FERRY_K_FOR(R_of(k_::Bo<B>), params_of(k_::Bo<B>), call_of(n));
#define FERRY_K_SAME(H) H
#define FERRY_K_BOOL(H) k_::Bo<B>
#define FERRY_K_INT(H) k_::I<B>

// ---- element-wise: H n(H); BoolHandle n(H) for the predicates -------------------------------
#define FERRY_K_P1(H) H h
#define FERRY_K_C1(n) n(std::move(h))
#define FERRY_K_UNARY(n) FERRY_K_ANY3(n, FERRY_K_P1, FERRY_K_C1, FERRY_K_SAME)
#define FERRY_K_PRED(n) FERRY_K_ANY3(n, FERRY_K_P1, FERRY_K_C1, FERRY_K_BOOL)
FERRY_UNARY_KINDS(FERRY_K_UNARY)
FERRY_UNARY_COMPOSITE_KINDS(FERRY_K_UNARY)
FERRY_PREDICATE_KINDS(FERRY_K_PRED)

// ---- H n(H, H), H n_scalar(H, Scalar); comparisons and logic give BoolHandle ---------------
#define FERRY_K_P2(H) H h, H g
#define FERRY_K_C2(n) n(std::move(h), std::move(g))
#define FERRY_K_PS(H) H h, Scalar s
#define FERRY_K_CS(n) n(std::move(h), s)
#define FERRY_K_BINARY(n)                               \
  FERRY_K_ANY3(n, FERRY_K_P2, FERRY_K_C2, FERRY_K_SAME) \
  FERRY_K_ANY3(n##_scalar, FERRY_K_PS, FERRY_K_CS, FERRY_K_SAME)
#define FERRY_K_COMPARE(n)                              \
  FERRY_K_ANY3(n, FERRY_K_P2, FERRY_K_C2, FERRY_K_BOOL) \
  FERRY_K_ANY3(n##_scalar, FERRY_K_PS, FERRY_K_CS, FERRY_K_BOOL)
#define FERRY_K_LOGICAL(n) FERRY_K_ANY3(n, FERRY_K_P2, FERRY_K_C2, FERRY_K_BOOL)
FERRY_ARITH_KINDS(FERRY_K_BINARY)
FERRY_ARITH_COMPOSITE_KINDS(FERRY_K_BINARY)
FERRY_COMPARE_KINDS(FERRY_K_COMPARE)
FERRY_LOGICAL_KINDS(FERRY_K_LOGICAL)
FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_K_LOGICAL)

// ---- clamp, where, casts --------------------------------------------------------------------
#define FERRY_K_PCLAMP(H) H h, Scalar lo, Scalar hi
#define FERRY_K_CCLAMP(n) n(std::move(h), lo, hi)
FERRY_K_ANY3(clamp, FERRY_K_PCLAMP, FERRY_K_CCLAMP, FERRY_K_SAME)
#define FERRY_K_PWHERE(H) k_::Bo<B> m, H h, H g
#define FERRY_K_CWHERE(n) n(std::move(m), std::move(h), std::move(g))
FERRY_K_ANY3(where, FERRY_K_PWHERE, FERRY_K_CWHERE, FERRY_K_SAME)
#define FERRY_K_PCAST(H) H h, DType to
#define FERRY_K_CCAST(n) n(std::move(h), to)
#define FERRY_K_FLOAT(H) k_::F<B>
FERRY_K_ANY3(to_float, FERRY_K_PCAST, FERRY_K_CCAST, FERRY_K_FLOAT)
FERRY_K_ANY3(to_int, FERRY_K_PCAST, FERRY_K_CCAST, FERRY_K_INT)
FERRY_K_ANY3(to_bool, FERRY_K_P1, FERRY_K_C1, FERRY_K_BOOL)

// ---- reductions, scans, softmax, argsort, matmul ----------------------------------------------
#define FERRY_K_PRED_DIM(H) H h, std::optional<std::size_t> dim, bool keepdim
#define FERRY_K_CRED_DIM(n) n(std::move(h), dim, keepdim)
#define FERRY_K_REDUCE(n) FERRY_K_ANY3(n, FERRY_K_PRED_DIM, FERRY_K_CRED_DIM, FERRY_K_SAME)
FERRY_K_REDUCE(sum)
FERRY_K_REDUCE(prod)
FERRY_K_REDUCE(mean)
FERRY_K_REDUCE(max)
FERRY_K_REDUCE(min)
FERRY_K_ANY3(argmax, FERRY_K_PRED_DIM, FERRY_K_CRED_DIM, FERRY_K_INT)
FERRY_K_ANY3(argmin, FERRY_K_PRED_DIM, FERRY_K_CRED_DIM, FERRY_K_INT)
#define FERRY_K_PDIM(H) H h, std::size_t dim
#define FERRY_K_CDIM(n) n(std::move(h), dim)
#define FERRY_K_SCAN(n) FERRY_K_ANY3(n, FERRY_K_PDIM, FERRY_K_CDIM, FERRY_K_SAME)
FERRY_SCAN_KINDS(FERRY_K_SCAN)
#define FERRY_K_SOFTMAX(n)                                       \
  template <class B>                                             \
  concept n = requires(B & b, k_::F<B> h, std::size_t dim) {     \
    { b.n(std::move(h), dim) } -> std::convertible_to<k_::F<B>>; \
  };
FERRY_SOFTMAX_KINDS(FERRY_K_SOFTMAX)
/// Fused attention (optional; ferry::attention decomposes it otherwise): q, k, v and an
/// additive mask of q's dtype, the causal flag and the scale.
template <class B>
concept attention = requires(B& b, k_::F<B> h, std::optional<k_::F<B>> m, bool causal,
                             double scale) {
  {
    b.attention(std::move(h), std::move(h), std::move(h), std::move(m), causal, scale)
    } -> std::convertible_to<k_::F<B>>;
};
#define FERRY_K_PSORT(H) H h, std::size_t dim, bool descending, std::size_t k
#define FERRY_K_CSORT(n) n(std::move(h), dim, descending, k)
FERRY_K_ANY3(argsort, FERRY_K_PSORT, FERRY_K_CSORT, FERRY_K_INT)
FERRY_K_ANY3(matmul, FERRY_K_P2, FERRY_K_C2, FERRY_K_SAME)

// ---- layout and indexing --------------------------------------------------------------------
#define FERRY_K_PSHAPE(H) H h, const Shape &s
#define FERRY_K_CSHAPE(n) n(std::move(h), s)
FERRY_K_ANY3(reshape, FERRY_K_PSHAPE, FERRY_K_CSHAPE, FERRY_K_SAME)
FERRY_K_ANY3(expand, FERRY_K_PSHAPE, FERRY_K_CSHAPE, FERRY_K_SAME)
#define FERRY_K_PAXES(H) H h, std::span<const std::size_t> axes
#define FERRY_K_CAXES(n) n(std::move(h), axes)
FERRY_K_ANY3(permute, FERRY_K_PAXES, FERRY_K_CAXES, FERRY_K_SAME)
FERRY_K_ANY3(flip, FERRY_K_PAXES, FERRY_K_CAXES, FERRY_K_SAME)
#define FERRY_K_PRANGES(H) H h, std::span<const Range> r
#define FERRY_K_CRANGES(n) n(std::move(h), r)
FERRY_K_ANY3(slice, FERRY_K_PRANGES, FERRY_K_CRANGES, FERRY_K_SAME)
#define FERRY_K_PSLICE_ASSIGN(H) H h, std::span<const Range> r, H v
#define FERRY_K_CSLICE_ASSIGN(n) n(std::move(h), r, std::move(v))
FERRY_K_ANY3(slice_assign, FERRY_K_PSLICE_ASSIGN, FERRY_K_CSLICE_ASSIGN, FERRY_K_SAME)
#define FERRY_K_PCAT(H) std::vector<H> hs, std::size_t dim
#define FERRY_K_CCAT(n) n(std::move(hs), dim)
FERRY_K_ANY3(cat, FERRY_K_PCAT, FERRY_K_CCAT, FERRY_K_SAME)
#define FERRY_K_PINDEX(H) H h, std::size_t dim, k_::I<B> i
#define FERRY_K_CINDEX(n) n(std::move(h), dim, std::move(i))
FERRY_K_ANY3(gather, FERRY_K_PINDEX, FERRY_K_CINDEX, FERRY_K_SAME)
FERRY_K_ANY3(index_select, FERRY_K_PINDEX, FERRY_K_CINDEX, FERRY_K_SAME)
#define FERRY_K_PSCATTER(H) H h, std::size_t dim, k_::I<B> i, H v
#define FERRY_K_CSCATTER(n) n(std::move(h), dim, std::move(i), std::move(v))
#define FERRY_K_SCATTER(n) FERRY_K_ANY3(n, FERRY_K_PSCATTER, FERRY_K_CSCATTER, FERRY_K_SAME)
FERRY_SCATTER_KINDS(FERRY_K_SCATTER)
#define FERRY_K_PGATHER_ND(H) H h, k_::I<B> i
#define FERRY_K_CGATHER_ND(n) n(std::move(h), std::move(i))
FERRY_K_ANY3(gather_nd, FERRY_K_PGATHER_ND, FERRY_K_CGATHER_ND, FERRY_K_SAME)
#define FERRY_K_PSCATTER_ND(H) H h, k_::I<B> i, H v
#define FERRY_K_CSCATTER_ND(n) n(std::move(h), std::move(i), std::move(v))
#define FERRY_K_SCATTER_ND(n) \
  FERRY_K_ANY3(n, FERRY_K_PSCATTER_ND, FERRY_K_CSCATTER_ND, FERRY_K_SAME)
FERRY_SCATTER_ND_KINDS(FERRY_K_SCATTER_ND)
#define FERRY_K_PREPEAT(H) H h, std::span<const std::int64_t> times
#define FERRY_K_CREPEAT(n) n(std::move(h), times)
FERRY_K_ANY3(repeat, FERRY_K_PREPEAT, FERRY_K_CREPEAT, FERRY_K_SAME)

// ---- creation -------------------------------------------------------------------------------
#define FERRY_K_CREATE(n, R, ...)                                                                  \
  template <class B>                                                                               \
  concept n = requires(B & b, const k_::D<B>& dev, const Shape& s, DType d, Scalar v, Scalar step, \
                       std::int64_t len, Distribution dist, std::uint64_t seed) {                  \
    { b.__VA_ARGS__ } -> std::convertible_to<R>;                                                   \
  };
FERRY_K_CREATE(float_full, k_::F<B>, float_full(s, d, v, dev))
FERRY_K_CREATE(int_full, k_::I<B>, int_full(s, d, v, dev))
FERRY_K_CREATE(bool_full, k_::Bo<B>, bool_full(s, d, v, dev))
FERRY_K_CREATE(float_arange, k_::F<B>, float_arange(v, step, len, d, dev))
FERRY_K_CREATE(int_arange, k_::I<B>, int_arange(v, step, len, d, dev))
FERRY_K_CREATE(float_random, k_::F<B>, float_random(s, d, dist, seed, dev))
FERRY_K_CREATE(int_random, k_::I<B>, int_random(s, d, v, step, seed, dev))

// ---- quantized: the exact handle types (else the host fallback is used) ---------------------
template <class B>
concept quantize = requires(B& b, k_::F<B> x, const quant::Scheme& s, std::span<const float> sc,
                            std::span<const std::int32_t> off) {
  { b.quantize(std::move(x), s, sc, off) } -> std::same_as<k_::Q<B>>;
};
template <class B>
concept quantize_dynamic = requires(B& b, k_::F<B> x, const quant::Scheme& s) {
  { b.quantize_dynamic(std::move(x), s) } -> std::same_as<k_::Q<B>>;
};
template <class B>
concept dequantize = requires(B& b, k_::Q<B> q, DType to) {
  { b.dequantize(std::move(q), to) } -> std::same_as<k_::F<B>>;
};
template <class B>
concept q_matmul = requires(B& b, k_::F<B> x, k_::Q<B> w) {
  { b.q_matmul(std::move(x), std::move(w)) } -> std::same_as<k_::F<B>>;
};
template <class B>
concept q_linear = requires(B& b, k_::F<B> x, k_::Q<B> w) {
  { b.q_linear(std::move(x), std::move(w)) } -> std::same_as<k_::F<B>>;
};
template <class B>
concept q_to_device = requires(B& b, k_::Q<B> q, const k_::D<B>& dev) {
  { b.q_to_device(std::move(q), dev) } -> std::same_as<k_::Q<B>>;
};

#undef FERRY_K_FOR
#undef FERRY_K_ANY3
#undef FERRY_K_SAME
#undef FERRY_K_BOOL
#undef FERRY_K_INT
#undef FERRY_K_FLOAT
#undef FERRY_K_P1
#undef FERRY_K_C1
#undef FERRY_K_UNARY
#undef FERRY_K_PRED
#undef FERRY_K_P2
#undef FERRY_K_C2
#undef FERRY_K_PS
#undef FERRY_K_CS
#undef FERRY_K_BINARY
#undef FERRY_K_COMPARE
#undef FERRY_K_LOGICAL
#undef FERRY_K_PCLAMP
#undef FERRY_K_CCLAMP
#undef FERRY_K_PWHERE
#undef FERRY_K_CWHERE
#undef FERRY_K_PCAST
#undef FERRY_K_CCAST
#undef FERRY_K_PRED_DIM
#undef FERRY_K_CRED_DIM
#undef FERRY_K_REDUCE
#undef FERRY_K_PDIM
#undef FERRY_K_CDIM
#undef FERRY_K_SCAN
#undef FERRY_K_SOFTMAX
#undef FERRY_K_PSORT
#undef FERRY_K_CSORT
#undef FERRY_K_PSHAPE
#undef FERRY_K_CSHAPE
#undef FERRY_K_PAXES
#undef FERRY_K_CAXES
#undef FERRY_K_PRANGES
#undef FERRY_K_CRANGES
#undef FERRY_K_PSLICE_ASSIGN
#undef FERRY_K_CSLICE_ASSIGN
#undef FERRY_K_PCAT
#undef FERRY_K_CCAT
#undef FERRY_K_PINDEX
#undef FERRY_K_CINDEX
#undef FERRY_K_PSCATTER
#undef FERRY_K_CSCATTER
#undef FERRY_K_SCATTER
#undef FERRY_K_PGATHER_ND
#undef FERRY_K_CGATHER_ND
#undef FERRY_K_PSCATTER_ND
#undef FERRY_K_CSCATTER_ND
#undef FERRY_K_SCATTER_ND
#undef FERRY_K_PREPEAT
#undef FERRY_K_CREPEAT
#undef FERRY_K_CREATE

}  // namespace ferry::kernel

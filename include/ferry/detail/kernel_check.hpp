// Ferry: which kernel an op would miss on a backend, known at compile time and asked at the
// call that records the op (detail::submit_op), so that a missing kernel is an Unsupported there
// in both execution modes rather than at the next sync() of an async device.
//
// missing_kernel<B>(op) mirrors the interpreter's calls (interpreter/compute.hpp and layout.hpp):
// the same kernel names with the same argument types (moved handles, the op's fields as lvalues)
// for the operand's handle kind. test_backend holds the two to each other on a backend with few
// kernels, in both modes. Ops with a host path or a required kernel answer nullptr.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/backend.hpp"
#include "ferry/data.hpp"
#include "ferry/interpreter.hpp"
#include "ferry/ir.hpp"
#include "ferry/shape.hpp"

namespace ferry::detail {

/// True when `f(b, a...)` (a lambda that calls one kernel) compiles and gives something
/// convertible to R: FERRY_KERNEL's test, with the argument types spelled out.
template <class R, class B, class... A, class F>
constexpr bool kernel_callable(F) {
  return std::is_invocable_r_v<R, F&, B&, A...>;
}

// FERRY_HAS_KERNEL(R, name, A...): B has `R name(A...)` (B and the handle kinds in scope).
#define FERRY_HAS_KERNEL(R, name, ...)                                                             \
  ::ferry::detail::kernel_callable<R, B, __VA_ARGS__>(                                             \
      [](auto& ferry_b_, auto&&... ferry_a_) -> decltype(ferry_b_.name(                            \
                                                 std::forward<decltype(ferry_a_)>(ferry_a_)...)) { \
        return ferry_b_.name(std::forward<decltype(ferry_a_)>(ferry_a_)...);                       \
      })
// The kernel's name when B lacks it, else nullptr.
#define FERRY_NEED_KERNEL(R, name, ...) (FERRY_HAS_KERNEL(R, name, __VA_ARGS__) ? nullptr : #name)

/// f(std::integral_constant<Kind, K>{}) for a plain dtype's kind; nullptr for a quantized one
/// (its ops have host paths).
template <class F>
const char* on_plain_kind(DType d, F&& f) {
  if (kind_of(d) == Kind::Quantized) return nullptr;
  return with_plain_kind(d, std::forward<F>(f));
}

/// The name of the kernel B lacks to run `o` (as Unsupported names it), or nullptr.
template <Backend B, class O>
const char* missing_kernel(const O& o) {
  using Dev [[maybe_unused]] = typename B::Device&;
  using HF [[maybe_unused]] = typename B::FloatHandle&&;
  using HI [[maybe_unused]] = typename B::IntHandle&&;
  using HB [[maybe_unused]] = typename B::BoolHandle&&;
  using HFr [[maybe_unused]] = typename B::FloatHandle;
  using HIr [[maybe_unused]] = typename B::IntHandle;
  using HBr [[maybe_unused]] = typename B::BoolHandle;
// The handle types of kind K: RK as a kernel returns it, HK as the interpreter passes it.
#define FERRY_K_KIND_TYPES                    \
  using RK [[maybe_unused]] = handle_t<B, K>; \
  using HK [[maybe_unused]] = RK&&;
#define FERRY_K_M(field) std::remove_cvref_t<decltype(o.field)>&
  if constexpr (std::is_same_v<O, op::Full>) {
    return on_plain_kind(o.out.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      using S = const Shape&;
      using D = const DType&;
      if constexpr (K == Kind::Float)
        return FERRY_NEED_KERNEL(HFr, float_full, S, D, FERRY_K_M(value), Dev);
      else if constexpr (K == Kind::Int)
        return FERRY_NEED_KERNEL(HIr, int_full, S, D, FERRY_K_M(value), Dev);
      else
        return FERRY_NEED_KERNEL(HBr, bool_full, S, D, FERRY_K_M(value), Dev);
    });
  } else if constexpr (std::is_same_v<O, op::Arange>) {
    return on_plain_kind(o.out.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      using N = const std::int64_t&;
      using D = const DType&;
      if constexpr (K == Kind::Float)
        return FERRY_NEED_KERNEL(HFr, float_arange, FERRY_K_M(start), FERRY_K_M(step), N, D, Dev);
      else if constexpr (K == Kind::Int)
        return FERRY_NEED_KERNEL(HIr, int_arange, FERRY_K_M(start), FERRY_K_M(step), N, D, Dev);
      else
        return static_cast<const char*>(nullptr);  // refused by the interpreter as a dtype error
    });
  } else if constexpr (std::is_same_v<O, op::RandomInt>) {
    return FERRY_NEED_KERNEL(HIr, int_random, Shape&, DType&, FERRY_K_M(low), FERRY_K_M(high),
                             FERRY_K_M(seed), Dev);
  } else if constexpr (std::is_same_v<O, op::Random>) {
    return FERRY_NEED_KERNEL(HFr, float_random, Shape&, DType&, FERRY_K_M(dist), FERRY_K_M(seed),
                             Dev);
  } else if constexpr (std::is_same_v<O, op::Unary>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) -> const char* {
      FERRY_K_KIND_TYPES
      switch (o.kind) {
#define FERRY_K_CASE(n) \
  case UnaryKind::n:    \
    return FERRY_NEED_KERNEL(RK, n, HK);
        FERRY_UNARY_KINDS(FERRY_K_CASE)
        FERRY_UNARY_COMPOSITE_KINDS(FERRY_K_CASE)
#undef FERRY_K_CASE
#define FERRY_K_CASE(n) \
  case UnaryKind::n:    \
    return FERRY_NEED_KERNEL(HBr, n, HK);
        FERRY_PREDICATE_KINDS(FERRY_K_CASE)
#undef FERRY_K_CASE
      }
      return nullptr;
    });
  } else if constexpr (std::is_same_v<O, op::Binary>) {
    return on_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) -> const char* {
      FERRY_K_KIND_TYPES
      switch (o.kind) {
#define FERRY_K_CASE(n) \
  case BinaryKind::n:   \
    return FERRY_NEED_KERNEL(RK, n, HK, HK);
        FERRY_ARITH_KINDS(FERRY_K_CASE)
        FERRY_ARITH_COMPOSITE_KINDS(FERRY_K_CASE)
#undef FERRY_K_CASE
#define FERRY_K_CASE(n) \
  case BinaryKind::n:   \
    return FERRY_NEED_KERNEL(HBr, n, HK, HK);
        FERRY_COMPARE_KINDS(FERRY_K_CASE)
        FERRY_LOGICAL_KINDS(FERRY_K_CASE)
        FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_K_CASE)
#undef FERRY_K_CASE
      }
      return nullptr;
    });
  } else if constexpr (std::is_same_v<O, op::BinaryScalar>) {
    return on_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) -> const char* {
      FERRY_K_KIND_TYPES
      switch (o.kind) {
#define FERRY_K_CASE(n) \
  case BinaryKind::n:   \
    return FERRY_NEED_KERNEL(RK, n##_scalar, HK, FERRY_K_M(rhs));
        FERRY_ARITH_KINDS(FERRY_K_CASE)
        FERRY_ARITH_COMPOSITE_KINDS(FERRY_K_CASE)
#undef FERRY_K_CASE
#define FERRY_K_CASE(n) \
  case BinaryKind::n:   \
    return FERRY_NEED_KERNEL(HBr, n##_scalar, HK, FERRY_K_M(rhs));
        FERRY_COMPARE_KINDS(FERRY_K_CASE)
#undef FERRY_K_CASE
        default:
          return nullptr;  // no scalar form: the interpreter says so
      }
    });
  } else if constexpr (std::is_same_v<O, op::Clamp>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(RK, clamp, HK, FERRY_K_M(lo), FERRY_K_M(hi));
    });
  } else if constexpr (std::is_same_v<O, op::Where>) {
    return on_plain_kind(o.a.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(RK, where, HB, HK, HK);
    });
  } else if constexpr (std::is_same_v<O, op::Cast>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return on_plain_kind(o.out.dtype, [&]<Kind KO>(std::integral_constant<Kind, KO>) {
        if constexpr (KO == Kind::Float)
          return FERRY_NEED_KERNEL(HFr, to_float, HK, DType&);
        else if constexpr (KO == Kind::Int)
          return FERRY_NEED_KERNEL(HIr, to_int, HK, DType&);
        else
          return FERRY_NEED_KERNEL(HBr, to_bool, HK);
      });
    });
  } else if constexpr (std::is_same_v<O, op::Reduce>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) -> const char* {
      FERRY_K_KIND_TYPES
      switch (o.kind) {
#define FERRY_K_CASE(n) \
  case ReduceKind::n:   \
    return FERRY_NEED_KERNEL(RK, n, HK, FERRY_K_M(dim), FERRY_K_M(keepdim));
        FERRY_K_CASE(sum)
        FERRY_K_CASE(prod)
        FERRY_K_CASE(mean)
        FERRY_K_CASE(max)
        FERRY_K_CASE(min)
#undef FERRY_K_CASE
#define FERRY_K_CASE(n) \
  case ReduceKind::n:   \
    return FERRY_NEED_KERNEL(HIr, n, HK, FERRY_K_M(dim), FERRY_K_M(keepdim));
        FERRY_K_CASE(argmax)
        FERRY_K_CASE(argmin)
#undef FERRY_K_CASE
      }
      return nullptr;
    });
  } else if constexpr (std::is_same_v<O, op::Scan>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) -> const char* {
      FERRY_K_KIND_TYPES
      switch (o.kind) {
#define FERRY_K_CASE(n) \
  case ScanKind::n:     \
    return FERRY_NEED_KERNEL(RK, n, HK, FERRY_K_M(dim));
        FERRY_SCAN_KINDS(FERRY_K_CASE)
#undef FERRY_K_CASE
      }
      return nullptr;
    });
  } else if constexpr (std::is_same_v<O, op::Softmax>) {
    switch (o.kind) {
#define FERRY_K_CASE(n) \
  case SoftmaxKind::n:  \
    return FERRY_NEED_KERNEL(HFr, n, HF, FERRY_K_M(dim));
      FERRY_SOFTMAX_KINDS(FERRY_K_CASE)
#undef FERRY_K_CASE
    }
    return nullptr;
  } else if constexpr (std::is_same_v<O, op::Attention>) {
    return FERRY_NEED_KERNEL(HFr, attention, HF, HF, HF, std::optional<HFr>&&, FERRY_K_M(causal),
                             FERRY_K_M(scale));
  } else if constexpr (std::is_same_v<O, op::Argsort>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(HIr, argsort, HK, FERRY_K_M(dim), FERRY_K_M(descending),
                               FERRY_K_M(k));
    });
  } else if constexpr (std::is_same_v<O, op::Matmul>) {
    return on_plain_kind(o.lhs.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(RK, matmul, HK, HK);
    });
  } else if constexpr (std::is_same_v<O, op::Reshape> || std::is_same_v<O, op::Expand>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      if constexpr (std::is_same_v<O, op::Reshape>)
        return FERRY_NEED_KERNEL(RK, reshape, HK, Shape&);
      else
        return FERRY_NEED_KERNEL(RK, expand, HK, Shape&);
    });
  } else if constexpr (std::is_same_v<O, op::Permute> || std::is_same_v<O, op::Flip>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      using Axes = std::span<const std::size_t>&&;
      if constexpr (std::is_same_v<O, op::Permute>)
        return FERRY_NEED_KERNEL(RK, permute, HK, Axes);
      else
        return FERRY_NEED_KERNEL(RK, flip, HK, Axes);
    });
  } else if constexpr (std::is_same_v<O, op::Slice>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(RK, slice, HK, std::span<const Range> &&);
    });
  } else if constexpr (std::is_same_v<O, op::Repeat>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(RK, repeat, HK, std::span<const std::int64_t> &&);
    });
  } else if constexpr (std::is_same_v<O, op::Scatter>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      if (o.kind == ScatterKind::scatter)
        return FERRY_NEED_KERNEL(RK, scatter, HK, FERRY_K_M(dim), HI, HK);
      return FERRY_NEED_KERNEL(RK, scatter_add, HK, FERRY_K_M(dim), HI, HK);
    });
  } else if constexpr (std::is_same_v<O, op::GatherNd>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(RK, gather_nd, HK, HI);
    });
  } else if constexpr (std::is_same_v<O, op::ScatterNd>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      if (o.kind == ScatterNdKind::scatter_nd) return FERRY_NEED_KERNEL(RK, scatter_nd, HK, HI, HK);
      return FERRY_NEED_KERNEL(RK, scatter_nd_add, HK, HI, HK);
    });
  } else if constexpr (std::is_same_v<O, op::SliceAssign>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(RK, slice_assign, HK, std::span<const Range>&&, HK);
    });
  } else if constexpr (std::is_same_v<O, op::Cat>) {
    return on_plain_kind(o.out.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      return FERRY_NEED_KERNEL(RK, cat, std::vector<RK>&&, FERRY_K_M(dim));
    });
  } else if constexpr (std::is_same_v<O, op::Gather> || std::is_same_v<O, op::IndexSelect>) {
    return on_plain_kind(o.in.dtype, [&]<Kind K>(std::integral_constant<Kind, K>) {
      FERRY_K_KIND_TYPES
      if constexpr (std::is_same_v<O, op::Gather>)
        return FERRY_NEED_KERNEL(RK, gather, HK, FERRY_K_M(dim), HI);
      else
        return FERRY_NEED_KERNEL(RK, index_select, HK, FERRY_K_M(dim), HI);
    });
  } else {
    // Data in and out, moves and drops (required kernels); quantized ops (host paths).
    (void)o;
    return nullptr;
  }
#undef FERRY_K_M
#undef FERRY_K_KIND_TYPES
}

#undef FERRY_NEED_KERNEL
#undef FERRY_HAS_KERNEL

}  // namespace ferry::detail

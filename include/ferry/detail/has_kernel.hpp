// Ferry: compile-time detection of a backend's composite kernels, so that the router can record
// the op itself when the backend has its kernel and the op's decomposition when it does not.
// SPDX-License-Identifier: MIT
#pragma once

#include <utility>

#include "ferry/data.hpp"
#include "ferry/ir.hpp"
#include "ferry/kernels.hpp"

namespace ferry::detail {

// has_kernel_<name><B>: B has the kernel `name` for the handles the op takes.
#define FERRY_DETAIL_HAS_UNARY(n)                                       \
  template <class B>                                                    \
  concept has_kernel_##n = requires(B & b, typename B::FloatHandle h) { \
    b.n(std::move(h));                                                  \
  };
FERRY_UNARY_COMPOSITE_KINDS(FERRY_DETAIL_HAS_UNARY)
#undef FERRY_DETAIL_HAS_UNARY
#define FERRY_DETAIL_HAS_PREDICATE(n)                                                            \
  template <class B>                                                                             \
  concept has_kernel_##n = requires(B & b, typename B::FloatHandle h, typename B::IntHandle i) { \
    b.n(std::move(h));                                                                           \
    b.n(std::move(i));                                                                           \
  };
FERRY_PREDICATE_KINDS(FERRY_DETAIL_HAS_PREDICATE)
#undef FERRY_DETAIL_HAS_PREDICATE
#define FERRY_DETAIL_HAS_BINARY(n)                                                         \
  template <class B>                                                                       \
  concept has_kernel_##n = requires(B & b, typename B::FloatHandle h) {                    \
    b.n(h, std::move(h));                                                                  \
  };                                                                                       \
  template <class B>                                                                       \
  concept has_kernel_##n##_scalar = requires(B & b, typename B::FloatHandle h, Scalar s) { \
    b.n##_scalar(std::move(h), s);                                                         \
  };
FERRY_ARITH_COMPOSITE_KINDS(FERRY_DETAIL_HAS_BINARY)
#undef FERRY_DETAIL_HAS_BINARY
#define FERRY_DETAIL_HAS_LOGICAL(n)                                    \
  template <class B>                                                   \
  concept has_kernel_##n = requires(B & b, typename B::BoolHandle h) { \
    b.n(h, std::move(h));                                              \
  };
FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_DETAIL_HAS_LOGICAL)
#undef FERRY_DETAIL_HAS_LOGICAL
// softmax, log_softmax: ferry/kernels.hpp's concepts, the one statement of their signature.
#define FERRY_DETAIL_HAS_ALONG_DIM(n) \
  template <class B>                  \
  concept has_kernel_##n = ::ferry::kernel::n<B>;
FERRY_SOFTMAX_KINDS(FERRY_DETAIL_HAS_ALONG_DIM)
#undef FERRY_DETAIL_HAS_ALONG_DIM
template <class B>
concept has_kernel_attention = ::ferry::kernel::attention<B>;

}  // namespace ferry::detail

// Ferry: EigenCpu's reductions: sum, prod, mean, max, min, argmax, argmin over one dim or all.
// SPDX-License-Identifier: MIT
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"

namespace ferry::detail::cpu {

/// The input viewed as [outer, n, inner] with n the reduced extent, and the output's shape.
struct ReduceGeom {
  std::int64_t outer = 1, n = 1, inner = 1;
  Shape out;
};

inline ReduceGeom reduce_geom(const Shape& s, std::optional<std::size_t> dim, bool keepdim,
                              const char* op) {
  ReduceGeom g;
  if (!dim) {
    g.n = s.numel();
    g.out = keepdim ? Shape(std::vector<std::int64_t>(s.rank(), 1)) : Shape{};
    return g;
  }
  if (*dim >= s.rank())
    detail::raise<IndexError>("axis", "{}: dim {} is out of range for shape {} (rank {})", op, *dim,
                              s, s.rank());
  std::vector<std::int64_t> out;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    if (d < *dim) g.outer *= s[d];
    if (d > *dim) g.inner *= s[d];
    if (d != *dim)
      out.push_back(s[d]);
    else if (keepdim)
      out.push_back(1);
  }
  g.n = s[*dim];
  g.out = Shape(std::move(out));
  return g;
}

enum class RedOp : std::uint8_t { sum, prod, mean, max, min };

constexpr const char* op_name(RedOp op) noexcept {
  constexpr const char* names[] = {"sum", "prod", "mean", "max", "min"};
  return names[static_cast<int>(op)];
}

/// The elementwise op that folds two partial results.
constexpr BinOp fold_op(RedOp op) noexcept {
  switch (op) {
    case RedOp::prod:
      return BinOp::mul;
    case RedOp::max:
      return BinOp::maximum;
    case RedOp::min:
      return BinOp::minimum;
    default:
      return BinOp::add;
  }
}

/// Calls f(r, c0, len) for every outer row r and chunk [c0, c0 + len) of up to 4096 inner
/// columns, in parallel: how reductions and scans along a strided dim fold whole rows of inner
/// elements at once, vectorised, with enough tasks for every core.
template <class F>
void for_inner_chunks(const ReduceGeom& g, F&& f) {
  constexpr std::int64_t kCols = 4096;
  const std::int64_t chunks = (g.inner + kCols - 1) / kCols;
  const std::int64_t work = g.n * std::min(g.inner, kCols);
  parallel_for(0, g.outer * chunks, std::max<std::int64_t>(1, kGrain / work),
               [&](std::int64_t lo, std::int64_t hi) {
                 for (std::int64_t t = lo; t < hi; ++t) {
                   const std::int64_t c0 = (t % chunks) * kCols;
                   f(t / chunks, c0, std::min(kCols, g.inner - c0));
                 }
               });
}

/// Elements one task of a long contiguous reduction folds before its partial is combined.
/// Fixed, so the result does not depend on the number of threads.
inline constexpr std::int64_t kReduceBlock = std::int64_t{1} << 16;

/// Folds p[0..n) (n >= 1) serially: Eigen's vectorised reductions for floats (max/min
/// propagate NaN), a wrapping loop for integers.
template <RedOp op, class T>
T fold_serial(const T* p, std::int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    ConstArrMap<T> m(p, n);
    if constexpr (op == RedOp::prod) return m.prod();
    if constexpr (op == RedOp::max) return m.template maxCoeff<Eigen::PropagateNaN>();
    if constexpr (op == RedOp::min) return m.template minCoeff<Eigen::PropagateNaN>();
    if constexpr (op == RedOp::sum || op == RedOp::mean) return m.sum();
  } else {
    T acc = p[0];
    for (std::int64_t i = 1; i < n; ++i) acc = binary_one<fold_op(op), T>(acc, p[i]);
    return acc;
  }
}

/// Folds p[0..n) (n >= 1), in fixed blocks in parallel when long.
template <RedOp op, class T>
T fold(const T* p, std::int64_t n) {
  if (n <= kReduceBlock) return fold_serial<op, T>(p, n);
  const std::int64_t blocks = (n + kReduceBlock - 1) / kReduceBlock;
  std::vector<T> part(static_cast<std::size_t>(blocks));
  parallel_for(0, blocks, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t k = lo; k < hi; ++k) {
      const std::int64_t b = k * kReduceBlock;
      part[static_cast<std::size_t>(k)] = fold_serial<op, T>(p + b, std::min(kReduceBlock, n - b));
    }
  });
  return fold_serial<op, T>(part.data(), blocks);
}

/// sum/prod/mean/max/min (max and min of bool are any and all, as torch). A reduced extent of 1
/// returns the input's buffer reshaped (shared, zero-copy). Empty extents: sum 0, prod 1, mean NaN,
/// max/min ValueError. Integer sum and prod accumulate in and return i64 (u64 for u64; see
/// accumulate_dtype), wrapping modulo 2^64, as torch.sum and numpy do: sum of i32 {INT_MAX, 1} is
/// 2^31, not INT_MIN. f16 and bf16 reduce in f32 and round the result once.
template <RedOp op>
CpuTensor reduce(const AccountsPtr& acc, CpuTensor a, std::optional<std::size_t> dim,
                 bool keepdim) {
  constexpr const char* name = op_name(op);
  check(acc, a, name);
  const Kind k = kind_of(a.dtype);
  if constexpr (op == RedOp::max || op == RedOp::min) {
    if (k == Kind::Bool) {  // any / all: the 0/1 bytes reduced as u8, read back as bool
      a.dtype = DType::u8;
      CpuTensor r = reduce<op>(acc, std::move(a), dim, keepdim);
      r.dtype = DType::boolean;
      return r;
    }
  }
  if (op == RedOp::mean ? k != Kind::Float : (k != Kind::Float && k != Kind::Int))
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported", name, a.dtype);
  if constexpr (op == RedOp::sum || op == RedOp::prod)
    if (k == Kind::Int && a.dtype != accumulate_dtype(a.dtype))
      a = cast(acc, std::move(a), accumulate_dtype(a.dtype), name);
  if (a.dtype == DType::f16 || a.dtype == DType::bf16) {  // in f32 (exact), rounded once
    const DType h = a.dtype;
    return cast(acc, reduce<op>(acc, cast(acc, std::move(a), DType::f32, name), dim, keepdim), h,
                name);
  }
  ReduceGeom g = reduce_geom(a.shape, dim, keepdim, name);
  if (g.n == 0 && (op == RedOp::max || op == RedOp::min))
    detail::raise<ValueError>("cpu.empty",
                              "{}: cannot reduce an empty extent (shape {}, {}); it has no "
                              "identity",
                              name, a.shape, dim ? fmt::format("dim {}", *dim) : "all dims");
  if (g.n == 1) return CpuTensor{std::move(a.buf), std::move(g.out), a.dtype, a.device};
  CpuTensor out = alloc(acc, a.device, g.out, a.dtype);
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (is_numeric_v<T> && !is_half_v<T>) {
      const T* p = a.data<const T>();
      T* o = out.data<T>();
      const std::int64_t rows = g.outer * g.inner;
      if (rows == 0) return;
      if (g.n == 0) {
        const T v = op == RedOp::prod   ? T(1)
                    : op == RedOp::mean ? std::numeric_limits<T>::quiet_NaN()
                                        : T(0);
        std::fill(o, o + rows, v);
        return;
      }
      auto finish = [&](T v) -> T {
        if constexpr (op == RedOp::mean)
          return static_cast<T>(v / static_cast<T>(g.n));
        else
          return v;
      };
      if (g.inner == 1) {  // contiguous rows
        parallel_for(0, g.outer, std::max<std::int64_t>(1, kGrain / g.n),
                     [&](std::int64_t lo, std::int64_t hi) {
                       for (std::int64_t r = lo; r < hi; ++r)
                         o[r] = finish(fold<op, T>(p + r * g.n, g.n));
                     });
        return;
      }
      // Strided: fold whole rows of `inner` elements into the output row, vectorised.
      for_inner_chunks(g, [&](std::int64_t r, std::int64_t c0, std::int64_t len) {
        const T* in = p + r * g.n * g.inner + c0;
        ArrMap<T> acc_row(o + r * g.inner + c0, len);
        acc_row = ConstArrMap<T>(in, len);
        for (std::int64_t j = 1; j < g.n; ++j)
          acc_row = binary_expr<fold_op(op), T>(acc_row, ConstArrMap<T>(in + j * g.inner, len));
        if constexpr (op == RedOp::mean) acc_row /= static_cast<T>(g.n);
      });
    }
  });
  return out;
}

/// True when x should replace the current best: strictly greater (less) keeps ties on the
/// first index; a NaN beats any number and the first NaN stays (torch's argmax/argmin).
template <bool is_max, class T>
constexpr bool better(T x, T best) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    if (x != x) return best == best;
  }
  return is_max ? x > best : x < best;
}

template <bool is_max>
CpuTensor arg_reduce(const AccountsPtr& acc, CpuTensor a, std::optional<std::size_t> dim,
                     bool keepdim) {
  constexpr const char* name = is_max ? "argmax" : "argmin";
  check(acc, a, name);
  const Kind k = kind_of(a.dtype);
  if (k != Kind::Float && k != Kind::Int)
    detail::raise<DTypeError>("cpu.dtype", "{}: {} operands are not supported", name, a.dtype);
  ReduceGeom g = reduce_geom(a.shape, dim, keepdim, name);
  if (g.n == 0)
    detail::raise<ValueError>("cpu.empty", "{}: cannot reduce an empty extent (shape {}, {})", name,
                              a.shape, dim ? fmt::format("dim {}", *dim) : "all dims");
  if (a.dtype == DType::f16 || a.dtype == DType::bf16)  // exact in f32
    return arg_reduce<is_max>(acc, cast(acc, std::move(a), DType::f32, name), dim, keepdim);
  CpuTensor out = alloc(acc, a.device, g.out, DType::i64);
  // No output rows (a 0 dim beside the reduced one, say argmin of [2, 3, 0] along dim 1): no work,
  // and the grain below would divide by the empty row length.
  if (g.outer * g.inner == 0) return out;
  visit_dtype(a.dtype, [&]<class T>(T) {
    if constexpr (is_numeric_v<T> && !is_half_v<T>) {
      const T* p = a.data<const T>();
      auto* o = out.data<std::int64_t>();
      using Best = std::pair<T, std::int64_t>;
      auto scan = [](const T* q, std::int64_t lo, std::int64_t hi) {
        Best b{q[lo], lo};
        for (std::int64_t i = lo + 1; i < hi; ++i)
          if (better<is_max>(q[i], b.first)) b = {q[i], i};
        return b;
      };
      if (g.inner == 1) {
        parallel_for(0, g.outer, std::max<std::int64_t>(1, kGrain / g.n),
                     [&](std::int64_t lo, std::int64_t hi) {
                       for (std::int64_t r = lo; r < hi; ++r) {
                         const T* q = p + r * g.n;
                         if (g.n <= kReduceBlock) {
                           o[r] = scan(q, 0, g.n).second;
                           continue;
                         }
                         const std::int64_t blocks = (g.n + kReduceBlock - 1) / kReduceBlock;
                         std::vector<Best> part(static_cast<std::size_t>(blocks));
                         parallel_for(0, blocks, 1, [&](std::int64_t b0, std::int64_t b1) {
                           for (std::int64_t b = b0; b < b1; ++b)
                             part[static_cast<std::size_t>(b)] =
                                 scan(q, b * kReduceBlock, std::min(g.n, (b + 1) * kReduceBlock));
                         });
                         Best best = part[0];
                         for (const Best& c : part)
                           if (better<is_max>(c.first, best.first)) best = c;
                         o[r] = best.second;
                       }
                     });
        return;
      }
      parallel_for(0, g.outer, std::max<std::int64_t>(1, kGrain / (g.n * g.inner)),
                   [&](std::int64_t lo, std::int64_t hi) {
                     std::vector<T> best(static_cast<std::size_t>(g.inner));
                     for (std::int64_t r = lo; r < hi; ++r) {
                       const T* in = p + r * g.n * g.inner;
                       std::int64_t* idx = o + r * g.inner;
                       std::copy(in, in + g.inner, best.begin());
                       std::fill(idx, idx + g.inner, std::int64_t{0});
                       for (std::int64_t j = 1; j < g.n; ++j) {
                         const T* row = in + j * g.inner;
                         for (std::int64_t i = 0; i < g.inner; ++i)
                           if (better<is_max>(row[i], best[static_cast<std::size_t>(i)])) {
                             best[static_cast<std::size_t>(i)] = row[i];
                             idx[i] = j;
                           }
                       }
                     }
                   });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

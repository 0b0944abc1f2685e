// Ferry: EigenCpu's fused scaled dot-product attention.
// SPDX-License-Identifier: MIT
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/backends/eigen_cpu/elementwise.hpp"
#include "ferry/backends/eigen_cpu/gemm_avx2.hpp"
#include "ferry/backends/eigen_cpu/softmax_rows.hpp"
#include "ferry/detail/parallel.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/shape.hpp"

namespace ferry::detail::cpu {

namespace attn {

/// The batch dims of `s`: all but its last two.
inline Shape batch_of(const Shape& s) {
  const auto v = s.to_vector();
  return Shape(
      std::vector<std::int64_t>(v.begin(), v.end() - std::min<std::ptrdiff_t>(std::ssize(v), 2)));
}

/// Element offsets, per output batch dim of `ob`, of an operand's matrices of `mat` elements:
/// broadcast_strides in matrices, 0 where the operand broadcasts.
inline std::vector<std::int64_t> batch_strides(const Shape& own, const Shape& ob,
                                               std::int64_t mat) {
  auto st = broadcast_strides(own, ob);
  for (auto& x : st) x *= mat;
  return st;
}

}  // namespace attn

/// @brief softmax(q kᵀ · scale + mask, causal) v, fused, for q [..., L, E], k [..., S, E],
/// v [..., S, Ev] and an optional additive mask broadcasting to [..., L, S]; batch dims
/// broadcast. ferry::attention's maths (ferry/ops/nn.hpp), which checks the operands and turns a
/// bool mask into an additive one; causal keeps key j for query i when j <= i + S - L.
///
/// Per batch matrix and block of query rows (at most 30 rows and ~64 Ki scores, in a task's own
/// buffer; causal: only the keys the block's last row sees): the scores by a GEMM (f32 on a CPU
/// with AVX2 and FMA: gemm_avx2.hpp's, on keys and v packed once per batch matrix; else Eigen's),
/// scaled, the mask added, the causal tail set to -inf, each row's softmax by the softmax kernel's
/// max and exp_sum (so its edge rows: a row with no key left, or with NaN or +inf, gives NaN), and
/// the weights times v by a second GEMM. Nothing of size L x S is ever a tensor. f32 or f64 (the
/// caller runs halves in f32); the output is [batch..., L, Ev].
inline CpuTensor attention(const AccountsPtr& acc, const CpuTensor& q, const CpuTensor& k,
                           const CpuTensor& v, const std::optional<CpuTensor>& mask, bool causal,
                           double scale) {
  constexpr const char* op = "attention";
  for (const CpuTensor* t : {&q, &k, &v}) check(acc, *t, op);
  if (mask) check(acc, *mask, op);
  if (q.dtype != DType::f32 && q.dtype != DType::f64)
    raise<DTypeError>("cpu.dtype", "{}: needs f32 or f64 operands, got {}", op, q.dtype);
  if (k.dtype != q.dtype || v.dtype != q.dtype || (mask && mask->dtype != q.dtype))
    raise<DTypeError>("cpu.dtype", "{}: q, k, v and the mask must share q's dtype {}", op, q.dtype);
  if (q.shape.rank() < 2 || k.shape.rank() < 2 || v.shape.rank() < 2)
    raise<ShapeError>("cpu.shape", "{}: q, k and v need rank >= 2, got {}, {} and {}", op, q.shape,
                      k.shape, v.shape);
  const std::int64_t L = q.shape[q.shape.rank() - 2], E = q.shape[q.shape.rank() - 1];
  const std::int64_t S = k.shape[k.shape.rank() - 2], Ev = v.shape[v.shape.rank() - 1];
  const Shape ms = mask ? mask->shape : Shape{};
  const std::int64_t mL = ms.rank() >= 2 ? ms[ms.rank() - 2] : 1;
  const std::int64_t mS = ms.rank() >= 1 ? ms[ms.rank() - 1] : 1;
  if (k.shape[k.shape.rank() - 1] != E || v.shape[v.shape.rank() - 2] != S ||
      (mL != 1 && mL != L) || (mS != 1 && mS != S) || (causal && S < L))
    raise<ShapeError>("cpu.shape", "{}: q {}, k {}, v {} and mask {} do not fit{}", op, q.shape,
                      k.shape, v.shape, ms, causal ? " (causal)" : "");
  // The output's batch dims: every operand's, broadcast.
  const Shape bq = attn::batch_of(q.shape), bk = attn::batch_of(k.shape),
              bv = attn::batch_of(v.shape), bm = attn::batch_of(ms);
  const Shape ob = broadcast_shapes(broadcast_shapes(bq, bk, op), broadcast_shapes(bv, bm, op), op);
  const std::size_t br = ob.rank();
  std::vector<std::int64_t> od = ob.to_vector();
  od.push_back(L);
  od.push_back(Ev);
  CpuTensor out = alloc(acc, q.device, Shape(std::move(od)), q.dtype);
  if (out.numel() == 0) return out;
  const std::vector<std::int64_t> sq = attn::batch_strides(bq, ob, L * E),
                                  sk = attn::batch_strides(bk, ob, S * E),
                                  sv = attn::batch_strides(bv, ob, S * Ev),
                                  sm = attn::batch_strides(bm, ob, mL * mS);
  const std::int64_t batches = ob.numel();
  // Query rows per block: at most 30 (five of the GEMM's 6-row tiles), and about 64 Ki scores.
  // Causal blocks stop at their last row's last key, so a prefill computes about half of q kᵀ and
  // of the weights times v.
  const std::int64_t rows = std::clamp<std::int64_t>(
      (std::int64_t{1} << 16) / std::max<std::int64_t>(S, 1), 1, std::min<std::int64_t>(L, 30));
  const std::int64_t blocks = (L + rows - 1) / rows;
  visit_dtype(q.dtype, [&]<class T>(T) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      using CMap = Eigen::Map<const Mat>;
      constexpr T ninf = -std::numeric_limits<T>::infinity();
      const T sc = static_cast<T>(scale);
      bool fast = false;  // f32 on a CPU with AVX2 and FMA: the blocks' GEMMs in 256 bits
#ifdef FERRY_GEMM_AVX2
      if constexpr (std::is_same_v<T, float>) fast = gemm::available();
#endif
      // A task takes a whole batch matrix when there are enough of them to go round (its blocks
      // share one transpose of the keys), else one block.
      const std::int64_t per = batches >= 2 * concurrency() ? blocks : 1;
      parallel_for(0, batches * blocks / per, 1, [&](std::int64_t lo, std::int64_t hi) {
        Mat p;  // scores, then weights, of one block
        // (fast) the keys transposed and v of batch packed_of, packed for the GEMM once and
        // shared by the batch's blocks.
        std::vector<float> kp, vp;
        std::int64_t packed_of = -1;
        for (std::int64_t t = lo * per; t < hi * per; ++t) {
          const std::int64_t b = t / blocks, i0 = (t % blocks) * rows, n = std::min(rows, L - i0);
          std::int64_t oq = 0, ok = 0, ov = 0, om = 0;
          for (std::size_t d = br, r = static_cast<std::size_t>(b); d-- > 0;) {
            const auto c = static_cast<std::int64_t>(r % static_cast<std::size_t>(ob[d]));
            r /= static_cast<std::size_t>(ob[d]);
            oq += c * sq[d], ok += c * sk[d], ov += c * sv[d], om += c * sm[d];
          }
          const CMap Q(q.data<const T>() + oq + i0 * E, n, E), K(k.data<const T>() + ok, S, E),
              V(v.data<const T>() + ov, S, Ev);
          Eigen::Map<Mat> Y(out.data<T>() + (b * L + i0) * Ev, n, Ev);
          if (S == 0) {  // no keys: the weights are an empty row, the product zeros
            Y.setZero();
            continue;
          }
          // The keys this block sees: all, or (causal) up to its last row's i + S - L.
          const std::int64_t kn = causal ? std::min(S, i0 + n + S - L) : S;
          p.resize(n, kn);
          if (fast) {
#ifdef FERRY_GEMM_AVX2
            if constexpr (std::is_same_v<T, float>) {
              if (packed_of != b) {
                kp.resize(static_cast<std::size_t>(gemm::packed_floats(E, S)));
                vp.resize(static_cast<std::size_t>(gemm::packed_floats(S, Ev)));
                gemm::pack(E, S, K.data(), 1, E, kp.data());
                gemm::pack(S, Ev, V.data(), Ev, 1, vp.data());
                packed_of = b;
              }
              gemm::multiply(n, kn, E, Q.data(), E, kp.data(), E, S, K.data(), 1, E, p.data(), kn);
            }
#endif
          } else {
            p.noalias() = Q * K.topRows(kn).transpose();
          }
          for (std::int64_t i = 0; i < n; ++i) {
            T* row = p.data() + i * kn;
            if (!mask) {
              for (std::int64_t j = 0; j < kn; ++j) row[j] *= sc;
            } else {
              const T* m = mask->data<const T>() + om + (mL == 1 ? 0 : (i0 + i) * mS);
              if (mS == 1)
                for (std::int64_t j = 0; j < kn; ++j) row[j] = row[j] * sc + m[0];
              else
                for (std::int64_t j = 0; j < kn; ++j) row[j] = row[j] * sc + m[j];
            }
            if (causal)  // keys after i + S - L are the future
              std::fill(row + std::min(kn, i0 + i + S - L + 1), row + kn, ninf);
            const T mx = math::row_max(row, kn);
            const T s = math::exp_sum(row, mx, row, kn);
            math::scale(row, T(1) / s, kn);
          }
          if (fast) {
#ifdef FERRY_GEMM_AVX2
            if constexpr (std::is_same_v<T, float>)
              gemm::multiply(n, Ev, kn, p.data(), kn, vp.data(), S, Ev, V.data(), Ev, 1, Y.data(),
                             Ev);
#endif
          } else {
            Y.noalias() = p * V.topRows(kn);
          }
        }
      });
    }
  });
  return out;
}

}  // namespace ferry::detail::cpu

// Ferry: where a quantization scheme puts its parameters over a tensor's shape: the canonical
// (dims, blocks) form the kernels walk, param_shape, num_params, data_bytes, ParamMap and
// param_index. Included by ferry/quant/scheme.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/quant/scheme.hpp"
#include "ferry/shape.hpp"

namespace ferry::quant {

namespace detail {

/// ceil(a / b) for a >= 0, b >= 1 (checked form: a block of 2^63 - 1 must not overflow it).
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept {
  return ferry::detail::ceil_div_i64(a, b);
}

/// The scheme seen over every dim of the shape: for each dim the extent of one block (clamped
/// to [1, dim]) and the number of blocks along it. Per-tensor and the non-axis dims of
/// per-axis are "whole" dims: one block along them, whatever their size.
struct FullBlocks {
  std::vector<std::int64_t> block;  // 1 <= block[i] <= max(dim, 1)
  std::vector<std::int64_t> grid;   // blocks along each dim; the param grid, row-major
  std::vector<bool> whole;
};

/// Assumes `s.validate_for(shape)` passed.
inline FullBlocks full_blocks(const Scheme& s, const Shape& shape) {
  const std::size_t r = shape.rank();
  FullBlocks f{std::vector<std::int64_t>(r), std::vector<std::int64_t>(r), std::vector<bool>(r)};
  const std::size_t first_blocked =
      s.granularity == Granularity::per_block ? r - s.block.size() : r;
  const std::size_t ax =
      s.granularity == Granularity::per_axis
          ? static_cast<std::size_t>(s.axis < 0 ? s.axis + static_cast<std::int64_t>(r) : s.axis)
          : r;
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t d = shape[i];
    const std::int64_t d1 = std::max<std::int64_t>(d, 1);
    if (s.granularity == Granularity::per_tensor ||
        (s.granularity == Granularity::per_axis && i != ax)) {
      f.block[i] = d1;
      f.grid[i] = 1;
      f.whole[i] = true;
    } else if (s.granularity == Granularity::per_axis || i < first_blocked) {
      f.block[i] = 1;
      f.grid[i] = d;
    } else {
      f.block[i] = std::min(s.block[i - first_blocked], d1);
      f.grid[i] = ceil_div(d, f.block[i]);
    }
  }
  return f;
}

/// @brief The element -> parameter map in its smallest form, the one the kernels walk.
///
/// Dims of size 1 are dropped and neighbours merged where the map allows (a dim whose block
/// spans it folds into the dim before it; a dim with block 1 folds into a following dim its
/// block divides), so per-tensor becomes one dim with one block, per-axis(0) one dim with
/// blocks of the row size, and per_block[32] over [N, K] with 32 | K one dim of blocks of 32.
/// The parameter of canonical coords c is sum_i (c_i / block_i) * gstride_i. Two layouts with
/// equal Canon map every flat element to the same parameter, which is what q_reshape checks.
struct Canon {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> block;
  std::vector<std::int64_t> gstride;
  std::int64_t numel = 0;
  std::int64_t nparams = 0;
  friend bool operator==(const Canon&, const Canon&) = default;
};

inline Canon make_canon(const Scheme& s, const Shape& shape) {
  const FullBlocks f = full_blocks(s, shape);
  Canon c;
  c.numel = shape.numel();
  c.nparams = 1;
  for (const std::int64_t g : f.grid) c.nparams *= g;
  if (c.numel == 0) return c;
  // Walk from the innermost dim outwards, merging into the front of the result.
  std::vector<std::int64_t> dims, block;  // reversed: innermost first
  for (std::size_t i = shape.rank(); i-- > 0;) {
    const std::int64_t d = shape[i], b = f.block[i];
    if (d == 1) continue;
    if (!dims.empty()) {
      std::int64_t& id = dims.back();
      std::int64_t& ib = block.back();
      if (ib == id) {  // the inner dim is one block: it folds into this one
        ib = b * id;
        id = d * id;
        continue;
      }
      if (b == 1 && id % ib == 0) {  // this dim has block 1 and the inner blocks tile exactly
        id = d * id;
        continue;
      }
    }
    dims.push_back(d);
    block.push_back(b);
  }
  if (dims.empty()) {
    dims.push_back(1);
    block.push_back(1);
  }
  c.dims.assign(dims.rbegin(), dims.rend());
  c.block.assign(block.rbegin(), block.rend());
  c.gstride.assign(c.dims.size(), 1);
  for (std::size_t i = c.dims.size() - 1; i-- > 0;)
    c.gstride[i] = c.gstride[i + 1] * ceil_div(c.dims[i + 1], c.block[i + 1]);
  return c;
}

}  // namespace detail

/// Shape of the scale (and offset) grid: per_tensor `[]`; per_axis `[shape[axis]]`; per_block
/// over the trailing k dims: the leading dims followed by ceil(dim_i / block_i) (ONNX blocked
/// quantization, generalised to k dims).
inline Shape param_shape(const Scheme& s, const Shape& shape) {
  s.validate_for(shape);
  switch (s.granularity) {
    case Granularity::per_tensor:
      return Shape{};
    case Granularity::per_axis:
      return Shape{shape[shape.axis(s.axis, "param_shape")]};
    case Granularity::per_block: {
      std::vector<std::int64_t> dims(shape.begin(), shape.end());
      const std::size_t first = dims.size() - s.block.size();
      for (std::size_t i = first; i < dims.size(); ++i)
        dims[i] = detail::ceil_div(dims[i], s.block[i - first]);
      return Shape{std::move(dims)};
    }
  }
  return Shape{};
}

/// Number of scales (and, for affine, offsets) the scheme needs for `shape`.
inline std::int64_t num_params(const Scheme& s, const Shape& shape) {
  return param_shape(s, shape).numel();
}

/// Bytes of value data for `numel` values: native numel; packed_u8 ceil(numel*bits/8);
/// packed_u32 4*ceil(numel*bits/32).
/// Computed without forming numel * bits, so it cannot wrap (numel >= 0; the result is at most
/// numel bytes, as values are at most 8 bits).
inline std::size_t data_bytes(ValueType v, Storage st, std::int64_t numel) {
  const int b = bits(v);
  switch (st) {
    case Storage::native:
      return static_cast<std::size_t>(numel);
    case Storage::packed_u8:
      return static_cast<std::size_t>(ferry::detail::packed_bytes_i64(numel, b).value_or(0));
    case Storage::packed_u32: {  // whole 32-bit words
      const std::int64_t words = numel / 32 * b + ((numel % 32) * b + 31) / 32;
      return 4 * static_cast<std::size_t>(words);
    }
  }
  ferry::detail::raise<QuantError>("quant.scheme", "unknown storage {}", static_cast<int>(st));
}
inline std::size_t data_bytes(const Scheme& s, std::int64_t numel) {
  return data_bytes(s.value, s.storage, numel);
}

/// Bytes the tensor-level scale takes after the per-group scales (0 without a second level).
inline std::size_t tensor_scale_bytes(const Scheme& s) {
  return s.tensor_scale ? scale_bytes(*s.tensor_scale) : 0;
}

/// @brief Maps a flat (row-major) element index to the index of its parameter.
///
/// @code
///   ParamMap map(Scheme{}.per_block({2, 4}), Shape{4, 8});
///   map(13);   // element (1, 5) -> block (0, 1) -> param 1
/// @endcode
///
/// Built once (validates the scheme), then each lookup is a few divisions over the merged
/// dims (usually one or two), with no branching on the granularity.
class ParamMap {
 public:
  ParamMap(const Scheme& s, const Shape& shape) {
    s.validate_for(shape);
    canon_ = detail::make_canon(s, shape);
  }
  /// Param of flat element `flat`, 0 <= flat < numel() (not checked).
  [[nodiscard]] std::int64_t operator()(std::int64_t flat) const noexcept {
    std::int64_t p = 0;
    for (std::size_t i = canon_.dims.size(); i-- > 0;) {
      const std::int64_t c = flat % canon_.dims[i];
      flat /= canon_.dims[i];
      p += (c / canon_.block[i]) * canon_.gstride[i];
    }
    return p;
  }
  [[nodiscard]] std::int64_t num_params() const noexcept { return canon_.nparams; }
  [[nodiscard]] std::int64_t numel() const noexcept { return canon_.numel; }

 private:
  detail::Canon canon_;
};

/// One-off lookup of the param of flat element `flat`; IndexError when out of range. Build a
/// ParamMap for many lookups.
inline std::int64_t param_index(const Scheme& s, const Shape& shape, std::int64_t flat) {
  const ParamMap map(s, shape);
  if (flat < 0 || flat >= map.numel())
    ferry::detail::raise<IndexError>(
        "quant.index", "param_index: element {} is out of range for shape {} ({} elements)", flat,
        shape, map.numel());
  return map(flat);
}

}  // namespace ferry::quant

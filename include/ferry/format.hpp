// Ferry: printing tensors as PyTorch does — fmt formatters and operator<< for Tensor<B>,
// TensorData and quant::QuantizedParts.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/config.hpp"
#include "ferry/data.hpp"
#include "ferry/detail/text.hpp"
#include "ferry/dtype.hpp"
#include "ferry/ops.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/shape.hpp"
#include "ferry/tensor.hpp"

// The layout is torch's (torch/_tensor_str.py with its default print options): 4 decimals;
// floats that are all integers print as `1.`; scientific notation when the nonzero magnitudes
// span more than 1000x, exceed 1e8 or (non-integers) go below 1e-4; every element padded to one
// width; 80-column lines; tensors of more than 1000 elements show the first and last 3 entries
// of each dim around `...`. Suffixes always name the device and dtype (torch omits defaults):
//
//   tensor([[1.5000, 2.0000],
//           [3.0000, 4.2500]], device=cpu:0, dtype=f32)

namespace ferry {
namespace detail::print {
/// The PyTorch-style text of `d` (layout above), with `suffixes` (`device=`, `dtype=`) at the end.
/// Compiled once (impl/format.hpp, src/format.cpp): the layout code is the same for every file.
[[nodiscard]] FERRY_FUNC std::string tensor_string(const TensorData& d,
                                                   std::vector<std::string> suffixes);
}  // namespace detail::print

/// @brief A tensor's values as PyTorch prints them, with its device and dtype.
///
/// @code
///   auto t = router.from_vector(std::vector<float>{1.5f, 2, 3, 4.25f}, {2, 2},
///   ferry::CpuDevice{0}); fmt::print("{}\n", t);
///   // tensor([[1.5000, 2.0000],
///   //         [3.0000, 4.2500]], device=cpu:0, dtype=f32)
/// @endcode
/// Printing reads the tensor (it waits for its device, as to_data() does). A quantized tensor
/// prints its dequantized values and its scheme; a moved-from Tensor prints `tensor(<invalid>)`.
template <Backend B>
[[nodiscard]] std::string to_string(const Tensor<B>& t) {
  if (!t.valid()) return "tensor(<invalid>)";
  std::vector<std::string> suffixes{fmt::format("device={}", t.device()),
                                    fmt::format("dtype={}", t.dtype())};
  if (t.is_quantized()) {
    suffixes.push_back(fmt::format("scheme={}", t.scheme()));
    return detail::print::tensor_string(ferry::dequantize(t).to_data(), std::move(suffixes));
  }
  return detail::print::tensor_string(t.to_data(), std::move(suffixes));
}

/// Host data, printed as a tensor without a device: `tensor([1, 2], dtype=i64)`.
[[nodiscard]] inline std::string to_string(const TensorData& d) {
  return detail::print::tensor_string(d, {fmt::format("dtype={}", d.dtype())});
}

template <Backend B>
std::ostream& operator<<(std::ostream& os, const Tensor<B>& t) {
  return os << to_string(t);
}
inline std::ostream& operator<<(std::ostream& os, const TensorData& d) {
  return os << to_string(d);
}

namespace quant {
/// `QuantizedParts(int4 symmetric per_block[32] packed_u8 scale=f16, shape=[64, 64],
/// data=2048 B, scales=256 B, offsets=0 B)`.
[[nodiscard]] inline std::string to_string(const QuantizedParts& p) {
  return fmt::format("QuantizedParts({}, shape={}, data={} B, scales={} B, offsets={} B)", p.scheme,
                     p.shape, p.data.size(), p.scales.size(), p.offsets.size());
}
inline std::ostream& operator<<(std::ostream& os, const QuantizedParts& p) {
  return os << to_string(p);
}
}  // namespace quant

}  // namespace ferry

template <ferry::Backend B>
struct fmt::formatter<ferry::Tensor<B>> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::Tensor<B>& t, Ctx& ctx) const {
    return write(ferry::to_string(t), ctx);
  }
};
template <>
struct fmt::formatter<ferry::TensorData> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::TensorData& d, Ctx& ctx) const {
    return write(ferry::to_string(d), ctx);
  }
};
template <>
struct fmt::formatter<ferry::quant::QuantizedParts> : ferry::detail::TextFormatter {
  template <class Ctx>
  auto format(const ferry::quant::QuantizedParts& p, Ctx& ctx) const {
    return write(ferry::quant::to_string(p), ctx);
  }
};

#ifdef FERRY_HEADER_ONLY
#  include "ferry/impl/format.hpp"
#endif

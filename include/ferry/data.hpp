// Ferry: TensorData, host-side tensor contents (shape, dtype, bytes) with typed views.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "ferry/detail/convert.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/shape.hpp"

namespace ferry {

namespace detail {
/// What TensorData::vector() and matrix() return; defined in ferry/eigen.hpp.
template <class T>
struct EigenViews;
}  // namespace detail

/// @brief The host-side contents of a plain tensor: what `from_data` takes and a read returns.
///
/// @code
///   auto d = ferry::TensorData::from(std::vector<float>{1, 2, 3, 4}, {2, 2});
///   float x = d.values<float>()[3];            // 4
///   auto m = d.matrix<float>();                 // Eigen::Map, row-major 2x2 (ferry/eigen.hpp)
/// @endcode
/// The byte count must equal numel * dtype_size: the constructor checks it, so a TensorData
/// that exists is always consistent.
class TensorData {
 public:
  TensorData() = default;
  TensorData(Shape shape, DType dtype, std::vector<std::byte> bytes)
      : shape_(std::move(shape)), dtype_(dtype), bytes_(std::move(bytes)) {
    if (dtype_ == DType::quantized)
      detail::raise<DTypeError>("data",
                                "TensorData holds plain tensors; use quant::QuantizedParts "
                                "for quantized ones");
    for (auto d : shape_)
      if (d < 0) detail::raise<ShapeError>("data", "shape {} has a negative dim", shape_);
    const auto want_i = detail::bytes_i64(shape_.numel(), dtype_size(dtype_));
    if (!want_i)
      detail::raise<ShapeError>("data", "shape {} of {} needs more than 2^63 - 1 bytes", shape_,
                                dtype_);
    const auto want = static_cast<std::size_t>(*want_i);
    if (bytes_.size() != want)
      detail::raise<ShapeError>(
          "data", "shape {} of {} needs {} bytes ({} elements x {} bytes), got {}", shape_, dtype_,
          want, shape_.numel(), dtype_size(dtype_), bytes_.size());
  }

  /// Copies `values` into a new TensorData of the given shape (1-D of size() when omitted).
  template <class T>
  static TensorData from(std::span<const T> values, Shape shape) {
    std::vector<std::byte> b(values.size_bytes());
    if (!b.empty()) std::memcpy(b.data(), values.data(), b.size());
    return TensorData(std::move(shape), dtype_of<T>, std::move(b));
  }
  template <class T>
  static TensorData from(const std::vector<T>& values, Shape shape) {
    return from(std::span<const T>(values), std::move(shape));
  }
  template <class T>
  static TensorData from(const std::vector<T>& values) {
    return from(std::span<const T>(values), Shape{static_cast<std::int64_t>(values.size())});
  }
  static TensorData from(const std::vector<bool>& values) {
    return from(values, Shape{static_cast<std::int64_t>(values.size())});
  }
  static TensorData from(const std::vector<bool>& values, Shape shape) {
    std::vector<std::byte> b(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      b[i] = std::byte{values[i] ? std::uint8_t{1} : std::uint8_t{0}};
    return TensorData(std::move(shape), DType::boolean, std::move(b));
  }

  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  [[nodiscard]] std::int64_t numel() const { return shape_.numel(); }
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::span<std::byte> bytes() noexcept { return bytes_; }
  [[nodiscard]] std::vector<std::byte> release_bytes() && noexcept { return std::move(bytes_); }

  /// Typed view; T must match the dtype exactly (bool reads as bool or as its std::uint8_t bytes).
  template <class T>
  [[nodiscard]] std::span<const T> values() const {
    check<T>("values");
    return {reinterpret_cast<const T*>(bytes_.data()), bytes_.size() / sizeof(T)};
  }
  template <class T>
  [[nodiscard]] std::span<T> values() {
    check<T>("values");
    return {reinterpret_cast<T*>(bytes_.data()), bytes_.size() / sizeof(T)};
  }
  /// Copies out the values converted to T (any plain dtype to any element type), by the rule
  /// casts follow (detail::convert: NaN -> 0 and saturation for float -> integer).
  template <class T>
  [[nodiscard]] std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<std::size_t>(numel()));
    visit_dtype(dtype_, [&]<class S>(S) {
      // A bool is read as its byte (any non-zero byte is true, as a backend takes it).
      using R = std::conditional_t<std::is_same_v<S, bool>, std::uint8_t, S>;
      const auto* p = reinterpret_cast<const R*>(bytes_.data());
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = detail::convert<T>(p[i]);
    });
    return out;
  }

  /// The row-major Eigen matrix of T that matrix() views (needs `#include <ferry/eigen.hpp>`).
  template <class T, class V = detail::EigenViews<T>>
  using RowMajor = typename V::Matrix;

  /// Eigen view of a 1-D tensor (a column vector). Needs `#include <ferry/eigen.hpp>`, so that
  /// a file which does not look at data through Eigen never parses Eigen's headers.
  template <class T, class V = detail::EigenViews<T>>
  [[nodiscard]] auto vector() const {
    static_assert(
        requires { sizeof(V); }, "TensorData::vector(): #include <ferry/eigen.hpp>");
    check<T>("vector");
    if (shape_.rank() != 1)
      detail::raise<ShapeError>("data", "vector(): shape {} is not 1-D", shape_);
    return V::vector(reinterpret_cast<const T*>(bytes_.data()), shape_[0]);
  }
  /// Eigen view of a 2-D tensor, row-major as stored (needs `#include <ferry/eigen.hpp>`).
  template <class T, class V = detail::EigenViews<T>>
  [[nodiscard]] auto matrix() const {
    static_assert(
        requires { sizeof(V); }, "TensorData::matrix(): #include <ferry/eigen.hpp>");
    check<T>("matrix");
    if (shape_.rank() != 2)
      detail::raise<ShapeError>("data", "matrix(): shape {} is not 2-D", shape_);
    return V::matrix(reinterpret_cast<const T*>(bytes_.data()), shape_[0], shape_[1]);
  }

  friend bool operator==(const TensorData&, const TensorData&) = default;

 private:
  template <class T>
  void check(const char* what) const {
    constexpr DType want = dtype_of<T>;
    if (std::is_same_v<T, std::uint8_t> && dtype_ == DType::boolean) return;  // its bytes
    if (want != dtype_)
      detail::raise<DTypeError>("data", "{}(): tensor data of shape {} is {}, not {}", what, shape_,
                                dtype_, want);
  }

  Shape shape_;
  DType dtype_ = DType::f32;
  std::vector<std::byte> bytes_;
};

}  // namespace ferry

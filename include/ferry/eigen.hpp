// Ferry: Eigen views of host data — TensorData::vector<T>() and matrix<T>(). The one public
// header that includes Eigen, so that files which do not ask for Eigen never parse it.
// SPDX-License-Identifier: MIT
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "ferry/data.hpp"

namespace ferry {

/// A row-major dynamic Eigen matrix of T: how TensorData lays out a 2-D tensor.
template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace detail {
template <class T>
struct EigenViews {
  using Matrix = RowMajorMatrix<T>;
  static Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> vector(const T* p, std::int64_t n) {
    return {p, n};
  }
  static Eigen::Map<const RowMajorMatrix<T>> matrix(const T* p, std::int64_t rows,
                                                    std::int64_t cols) {
    return {p, rows, cols};
  }
};
}  // namespace detail

}  // namespace ferry

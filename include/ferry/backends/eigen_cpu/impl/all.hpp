// Ferry: every EigenCpu kernel family, for header-only use (FERRY_HEADER_ONLY) — what the
// library's src/eigen_cpu/*.cpp compile one family a file.
// SPDX-License-Identifier: MIT
#pragma once

#include "ferry/backends/eigen_cpu/impl/attention.hpp"
#include "ferry/backends/eigen_cpu/impl/binary.hpp"
#include "ferry/backends/eigen_cpu/impl/bitwise.hpp"
#include "ferry/backends/eigen_cpu/impl/cast.hpp"
#include "ferry/backends/eigen_cpu/impl/compare.hpp"
#include "ferry/backends/eigen_cpu/impl/creation.hpp"
#include "ferry/backends/eigen_cpu/impl/data.hpp"
#include "ferry/backends/eigen_cpu/impl/layout.hpp"
#include "ferry/backends/eigen_cpu/impl/matmul.hpp"
#include "ferry/backends/eigen_cpu/impl/quantized.hpp"
#include "ferry/backends/eigen_cpu/impl/reduce.hpp"
#include "ferry/backends/eigen_cpu/impl/scan.hpp"
#include "ferry/backends/eigen_cpu/impl/scatter.hpp"
#include "ferry/backends/eigen_cpu/impl/softmax.hpp"
#include "ferry/backends/eigen_cpu/impl/sort.hpp"
#include "ferry/backends/eigen_cpu/impl/unary.hpp"
#include "ferry/backends/eigen_cpu/impl/unary_math.hpp"

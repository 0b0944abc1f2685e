// Ferry: the umbrella header — everything a user needs, with the EigenCpu reference backend.
// It includes no Eigen header and no kernel: those are compiled once in `ferry::ferry` (or,
// with FERRY_HEADER_ONLY, included by backends/eigen_cpu.hpp). Eigen views of data:
// ferry/eigen.hpp.
// SPDX-License-Identifier: MIT
#pragma once

#include "ferry/backend.hpp"
#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/backends/eigen_cpu/instances.hpp"
#include "ferry/config.hpp"
#include "ferry/data.hpp"
#include "ferry/dtype.hpp"
#include "ferry/error.hpp"
#include "ferry/format.hpp"
#include "ferry/interpreter.hpp"
#include "ferry/ir.hpp"
#include "ferry/kernels.hpp"
#include "ferry/ops.hpp"
#include "ferry/params.hpp"
#include "ferry/quant.hpp"
#include "ferry/registry.hpp"
#include "ferry/router.hpp"
#include "ferry/shape.hpp"
#include "ferry/tensor.hpp"
#include "ferry/trace.hpp"

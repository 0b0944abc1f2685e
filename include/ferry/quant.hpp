// Ferry: the quantization library, host side (schemes, packing, kernels, layout ops).
// SPDX-License-Identifier: MIT
#pragma once

#include "ferry/quant/half.hpp"
#include "ferry/quant/join.hpp"
#include "ferry/quant/gemv.hpp"
#include "ferry/quant/kernels.hpp"
#include "ferry/quant/layout.hpp"
#include "ferry/quant/minifloat.hpp"
#include "ferry/quant/pack.hpp"
#include "ferry/quant/parts.hpp"
#include "ferry/quant/pick.hpp"
#include "ferry/quant/scheme.hpp"

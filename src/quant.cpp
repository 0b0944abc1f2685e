// Ferry's compiled host quantization kernels (ferry/quant/kernels.hpp and gemv.hpp declare them).
// SPDX-License-Identifier: MIT
#include "ferry/quant/impl/kernels.hpp"
#include "ferry/quant/impl/gemv.hpp"

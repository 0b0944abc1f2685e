// Ferry's compiled host quantization kernels (ferry/quant/kernels.hpp declares them).
// SPDX-License-Identifier: MIT
#include "ferry/quant/impl/kernels.hpp"

// Ferry's compiled EigenCpu kernels, one family a file so that a parallel build spreads them.
// SPDX-License-Identifier: MIT
#include "ferry/backends/eigen_cpu/impl/attention.hpp"

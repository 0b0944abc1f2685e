// Ferry's compiled parallel loop (detail/parallel.hpp) over oneTBB.
// SPDX-License-Identifier: MIT
#include "ferry/detail/impl/parallel.hpp"

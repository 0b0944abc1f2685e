// Ferry's compiled oneTBB arenas (detail/arena.hpp): a device's, and the one large copies use.
// SPDX-License-Identifier: MIT
#include "ferry/detail/impl/arena.hpp"

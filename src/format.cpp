// Ferry's compiled tensor printing (detail::print::tensor_string, format.hpp).
// SPDX-License-Identifier: MIT
#include "ferry/impl/format.hpp"

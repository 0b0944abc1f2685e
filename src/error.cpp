// Ferry's compiled error formatting (detail::error_message, error.hpp).
// SPDX-License-Identifier: MIT
#include "ferry/impl/error.hpp"

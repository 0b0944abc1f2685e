// Ferry's compiled IR helpers: the Op variant's name, inputs, output and printed form.
// SPDX-License-Identifier: MIT
#include "ferry/impl/ir.hpp"

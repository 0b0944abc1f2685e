// Ferry: EigenCpu's runtime (Interpreter, Client, RouterCore) as compiled once in the library
// (src/eigen_cpu/runtime.cpp), so that a file running ops on EigenCpu does not compile it again.
// With FERRY_HEADER_ONLY there is no library and this header declares nothing.
// SPDX-License-Identifier: MIT
#pragma once

#include "ferry/backends/eigen_cpu.hpp"
#include "ferry/config.hpp"
#include "ferry/router.hpp"

#ifndef FERRY_HEADER_ONLY
FERRY_EXTERN_BACKEND(ferry::EigenCpu);
#endif

// Part of the tests' precompiled header: every test unit sees EigenCpu's interpreter as
// instantiated elsewhere (tests/instantiate.cpp), so its kernels compile once per build rather
// than once per test file (see FERRY_EXTERN_INTERPRETER in ferry/interpreter.hpp).
#pragma once
#include "ferry/ferry.hpp"

FERRY_EXTERN_INTERPRETER(ferry::EigenCpu);

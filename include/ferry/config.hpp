// Ferry: build configuration — compiled kernels (the default) or header-only.
// SPDX-License-Identifier: MIT
#pragma once

/// FERRY_HEADER_ONLY: define it (the `ferry::header-only` CMake target does) to use Ferry with
/// no library at all: backend kernels are then defined inline in the headers, and every file
/// that runs ops compiles them. Without it (`ferry::ferry`), the kernels of EigenCpu and its
/// runtime are compiled once into the library and user files only declare them.
///
/// FERRY_FUNC marks a function defined in an `impl/` header: `inline` in header-only mode,
/// nothing when the library compiles that header once.
#ifdef FERRY_HEADER_ONLY
#  define FERRY_FUNC inline
#else
#  define FERRY_FUNC
#endif

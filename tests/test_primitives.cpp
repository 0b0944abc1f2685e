// The whole op table of docs/dtypes.md on a backend with only the primitive kernels: EigenCpu
// with every composite kernel hidden (no_composite.hpp), so silu, gelu, hypot, isnan, prelu,
// logical_xor, softmax, ... run as their decompositions. test_dtypes.cpp's table test, compiled
// again over that backend: every op on every dtype, refused where the table says, and the values
// checked against the same independent references (the documented edges where a decomposition
// differs are named in the runners: kDecomposed).
#include "no_composite.hpp"

#define FERRY_T_BACKEND ferry_test::NoComposite
#define FERRY_T_PRIMITIVES
#include "test_dtypes.cpp"  // NOLINT(bugprone-suspicious-include)

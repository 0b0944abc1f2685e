// Includes every public header a second time in each test binary: a header-defined function
// that is missing `inline` then fails at link time (one-definition rule).
#include "ferry/ferry.hpp"

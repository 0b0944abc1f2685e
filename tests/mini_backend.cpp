// Router runtimes over tests/mini_backend.hpp's backends, compiled once for every test binary
// (declared extern in mini_backend.hpp; the library ferry_test_mini).
#include "mini_backend.hpp"

FERRY_INSTANTIATE_BACKEND(mini::Backend);
FERRY_INSTANTIATE_BACKEND(mini::Faulty);
FERRY_INSTANTIATE_BACKEND(mini::MoveOnly);

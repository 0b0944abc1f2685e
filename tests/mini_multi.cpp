// Router runtimes over Multi<EigenCpu, a mini backend>, compiled once for the tests that make
// such a router (declared extern in mini_backend.hpp; the library ferry_test_multi).
#include "mini_backend.hpp"

FERRY_INSTANTIATE_BACKEND(ferry::Multi<ferry::EigenCpu, mini::Backend>);
FERRY_INSTANTIATE_BACKEND(ferry::Multi<ferry::EigenCpu, mini::Faulty>);
FERRY_INSTANTIATE_BACKEND(ferry::Multi<ferry::EigenCpu, mini::MoveOnly>);

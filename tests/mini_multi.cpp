// Router runtimes over Multi<EigenCpu, a mini backend>, compiled once for every test binary
// (declared extern in mini_backend.hpp).
#include "mini_backend.hpp"

FERRY_INSTANTIATE_BACKEND(ferry::Multi<ferry::EigenCpu, mini::Backend>);
FERRY_INSTANTIATE_BACKEND(ferry::Multi<ferry::EigenCpu, mini::Faulty>);
FERRY_INSTANTIATE_BACKEND(ferry::Multi<ferry::EigenCpu, mini::MoveOnly>);

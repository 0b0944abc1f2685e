// The one instantiation of EigenCpu's interpreter that every test binary links (the others
// see FERRY_EXTERN_INTERPRETER through the precompiled header, tests/extern_eigen_cpu.hpp).
#include "extern_eigen_cpu.hpp"

FERRY_INSTANTIATE_INTERPRETER(ferry::EigenCpu);

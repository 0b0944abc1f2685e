// Ferry's compiled runtime for EigenCpu: Interpreter<EigenCpu> (the dispatch of every op to its
// kernel), Client<EigenCpu> and RouterCore<EigenCpu>, declared extern in
// ferry/backends/eigen_cpu/instances.hpp. The kernels themselves are in the other files here.
// SPDX-License-Identifier: MIT
#include "ferry/backends/eigen_cpu/instances.hpp"

#ifdef FERRY_HEADER_ONLY
#  error "src/ is the compiled library; FERRY_HEADER_ONLY builds use the headers alone"
#endif

FERRY_INSTANTIATE_BACKEND(ferry::EigenCpu);

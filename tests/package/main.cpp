// A consumer of the installed (or add_subdirectory'd) package: the result is checked by value.
#include <ferry/ferry.hpp>

int main() {
  ferry::Router<ferry::EigenCpu> router(ferry::EigenCpu(2));
  auto a = router.from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}, ferry::CpuDevice{0});
  auto b = (a * 2.0f).to(ferry::CpuDevice{1});
  const auto v = b.to_data().to_vector<float>();
  return v == std::vector<float>{2, 4, 6, 8} ? 0 : 1;
}

// Ferry: EigenCpu's data in and out, and transfers between devices — the definitions of
// eigen_cpu.hpp's declarations for this family. Compiled once by src/eigen_cpu/data.cpp, or
// included inline by eigen_cpu.hpp with FERRY_HEADER_ONLY. Nothing but those two includes this
// file. SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ferry/backends/eigen_cpu.hpp"

namespace ferry {

FERRY_FUNC CpuTensor EigenCpu::float_from_data(TensorData d, const CpuDevice& dev) const {
  return from_data(std::move(d), dev, Kind::Float, "float_from_data");
}
FERRY_FUNC CpuTensor EigenCpu::int_from_data(TensorData d, const CpuDevice& dev) const {
  return from_data(std::move(d), dev, Kind::Int, "int_from_data");
}
FERRY_FUNC CpuTensor EigenCpu::bool_from_data(TensorData d, const CpuDevice& dev) const {
  return from_data(std::move(d), dev, Kind::Bool, "bool_from_data");
}
FERRY_FUNC TensorData EigenCpu::float_into_data(CpuTensor t) const {
  return into_data(std::move(t), Kind::Float, "float_into_data");
}
FERRY_FUNC TensorData EigenCpu::int_into_data(CpuTensor t) const {
  return into_data(std::move(t), Kind::Int, "int_into_data");
}
FERRY_FUNC TensorData EigenCpu::bool_into_data(CpuTensor t) const {
  return into_data(std::move(t), Kind::Bool, "bool_into_data");
}
FERRY_FUNC CpuTensor EigenCpu::float_to_device(CpuTensor t, const CpuDevice& dev) const {
  return to_device(std::move(t), dev, Kind::Float, "float_to_device");
}
FERRY_FUNC CpuTensor EigenCpu::int_to_device(CpuTensor t, const CpuDevice& dev) const {
  return to_device(std::move(t), dev, Kind::Int, "int_to_device");
}
FERRY_FUNC CpuTensor EigenCpu::bool_to_device(CpuTensor t, const CpuDevice& dev) const {
  return to_device(std::move(t), dev, Kind::Bool, "bool_to_device");
}

FERRY_FUNC CpuTensor EigenCpu::from_data(TensorData d, const CpuDevice& dev, Kind k,
                                         const char* op) const {
  acc_->check(dev.index, op);
  if (kind_of(d.dtype()) != k)
    detail::raise<DTypeError>("cpu.dtype", "{}: data of dtype {} is not of kind {}", op, d.dtype(),
                              k);
  CpuTensor t = detail::cpu::alloc(acc_, dev.index, d.shape(), d.dtype());
  const auto bytes = d.bytes();
  acc_->copy(t.buf->data(), bytes.data(), bytes.size());
  if (k == Kind::Bool)  // any non-zero byte is true; kernels rely on 0/1
    for (std::size_t i = 0; i < bytes.size(); ++i)
      t.buf->data()[i] = std::byte{bytes[i] != std::byte{0} ? std::uint8_t{1} : std::uint8_t{0}};
  return t;
}

FERRY_FUNC TensorData EigenCpu::into_data(CpuTensor t, Kind k, const char* op) const {
  detail::cpu::check(acc_, t, op);
  detail::cpu::check_kind(t, k, op);
  std::vector<std::byte> bytes(t.nbytes());
  acc_->copy(bytes.data(), t.buf->data(), bytes.size());
  return TensorData(t.shape, t.dtype, std::move(bytes));
}

FERRY_FUNC CpuTensor EigenCpu::to_device(CpuTensor t, const CpuDevice& dev, Kind k,
                                         const char* op) const {
  detail::cpu::check(acc_, t, op);
  detail::cpu::check_kind(t, k, op);
  acc_->check(dev.index, op);
  if (dev.index == t.device) return t;
  CpuTensor out = detail::cpu::alloc(acc_, dev.index, t.shape, t.dtype);
  acc_->copy(out.buf->data(), t.buf->data(), t.nbytes());
  return out;
}

}  // namespace ferry

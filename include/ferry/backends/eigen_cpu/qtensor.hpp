// Ferry: CpuQTensor, EigenCpu's quantized handle: packed data, scales and offsets held in one
// device's memory and counted there. No kernels here, so every user file can hold one.
// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "ferry/backends/eigen_cpu/buffer.hpp"
#include "ferry/quant/parts.hpp"

namespace ferry {

namespace detail::cpu {
/// The parts of one quantized tensor, counted against the device they live on for as long as
/// they live. Immutable once made, so copies of a CpuQTensor share them safely.
class QStorage {
 public:
  QStorage(AccountsPtr acc, int device, quant::QuantizedParts parts)
      : acc_(std::move(acc)), device_(device), parts_(std::move(parts)) {
    acc_->check(device_, "q_alloc");
    auto& c = (*acc_)[device_];
    c.bytes.fetch_add(static_cast<std::int64_t>(parts_.nbytes()), std::memory_order_relaxed);
    c.allocations.fetch_add(1, std::memory_order_relaxed);
  }
  ~QStorage() {
    auto& c = (*acc_)[device_];
    c.bytes.fetch_sub(static_cast<std::int64_t>(parts_.nbytes()), std::memory_order_relaxed);
    c.cache.give_vector(std::move(parts_.data));
    c.cache.give_vector(std::move(parts_.scales));
    c.cache.give_vector(std::move(parts_.offsets));
  }
  QStorage(const QStorage&) = delete;
  QStorage& operator=(const QStorage&) = delete;
  [[nodiscard]] const quant::QuantizedParts& parts() const noexcept { return parts_; }
  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  AccountsPtr acc_;
  int device_;
  quant::QuantizedParts parts_;
};
}  // namespace detail::cpu

/// EigenCpu's quantized handle: shared, immutable parts on one device.
struct CpuQTensor {
  std::shared_ptr<const detail::cpu::QStorage> storage;
  [[nodiscard]] const quant::QuantizedParts& parts() const noexcept { return storage->parts(); }
  [[nodiscard]] int device() const noexcept { return storage->device(); }
  [[nodiscard]] std::size_t nbytes() const noexcept { return storage->parts().nbytes(); }
};

namespace detail::cpu {

inline CpuQTensor make_q(const AccountsPtr& acc, int device, quant::QuantizedParts parts) {
  return CpuQTensor{std::make_shared<const QStorage>(acc, device, std::move(parts))};
}

}  // namespace detail::cpu

}  // namespace ferry

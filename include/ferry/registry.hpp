// Ferry: HandleRegistry<B>, one device's map from tensor id to backend handle.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <memory_resource>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

#include "ferry/backend.hpp"
#include "ferry/error.hpp"
#include "ferry/ir.hpp"

namespace ferry {

/// @brief Tensor id -> backend handle, for the four kinds Float, Int, Bool and Quantized.
///
/// @code
///   HandleRegistry<EigenCpu> reg("cpu:0");
///   reg.put<Kind::Float>(7, std::move(h), bytes);
///   auto shared = reg.take<Kind::Float>(ref_ro, "add");   // copy; the entry stays
///   auto owned  = reg.take<Kind::Float>(ref_rw, "add");   // moved out; the entry is gone
/// @endcode
/// Owned by one interpreter and touched only by that device's worker, so it has no lock. An
/// unknown id, a wrong kind or a consumed handle throws HandleError naming the tensor, the op
/// and the device; a tensor whose producing op failed throws OpFailed with that op's error.
///
/// Entries come from a pool owned by the registry (std::pmr::unsynchronized_pool_resource):
/// every op inserts one entry and erases another, and with 10^5 live tensors on a device the
/// general-purpose allocator spent more time consolidating its free lists than the registry
/// spent hashing. Nodes freed by erase are reused by the next insert.
template <Backend B>
class HandleRegistry {
 public:
  /// One alternative per Kind, in Kind order; alternatives may be the same C++ type, so the
  /// variant is always accessed by index.
  using Handle = std::variant<typename B::FloatHandle, typename B::IntHandle,
                              typename B::BoolHandle, typename B::QuantizedHandle>;

  explicit HandleRegistry(std::string device_name)
      : device_(std::move(device_name)), map_(&pool_), failed_(&pool_) {}
  HandleRegistry(const HandleRegistry&) = delete;
  HandleRegistry& operator=(const HandleRegistry&) = delete;

  template <Kind K>
  void put(TensorId id, handle_t<B, K> h, std::size_t bytes) {
    put(id, Handle(std::in_place_index<static_cast<std::size_t>(K)>, std::move(h)), bytes);
  }
  void put(TensorId id, Handle h, std::size_t bytes) {
    if (!failed_.empty()) failed_.erase(id);
    auto [it, fresh] = map_.try_emplace(id, Entry{std::move(h), bytes});
    if (!fresh)
      detail::raise<HandleError>("registry.1", "tensor {} is already registered on device {}", id,
                                 device_);
    bytes_ += bytes;
  }

  /// The handle for `ref`: moved out (entry removed) when ReadWrite, a shared copy when ReadOnly.
  template <Kind K>
  [[nodiscard]] handle_t<B, K> take(const TensorRef& ref, const char* op) {
    auto it = find_or_throw(ref.id, op);
    if (it->second.h.index() != static_cast<std::size_t>(K))
      detail::raise<HandleError>("registry.3",
                                 "op '{}' wants a {} handle for tensor {} on device {}, but it "
                                 "holds a {} handle",
                                 op, static_cast<Kind>(K), ref.id, device_,
                                 static_cast<Kind>(it->second.h.index()));
    if (ref.access == Access::ReadOnly) return std::get<static_cast<std::size_t>(K)>(it->second.h);
    auto h = std::get<static_cast<std::size_t>(K)>(std::move(it->second.h));
    bytes_ -= it->second.bytes;
    map_.erase(it);
    return h;
  }
  /// Type-erased take, for transfers that move whatever kind the tensor has.
  [[nodiscard]] Handle take_any(const TensorRef& ref, const char* op) {
    auto it = find_or_throw(ref.id, op);
    if (ref.access == Access::ReadOnly) return it->second.h;
    Handle h = std::move(it->second.h);
    bytes_ -= it->second.bytes;
    map_.erase(it);
    return h;
  }

  /// Frees the handle (or the failure mark) of `id`. Returns false when nothing was there,
  /// which is normal for a tensor consumed read-write by its last op.
  bool drop(TensorId id) noexcept {
    if (!failed_.empty()) failed_.erase(id);
    auto it = map_.find(id);
    if (it == map_.end()) return false;
    bytes_ -= it->second.bytes;
    map_.erase(it);
    return true;
  }

  /// Marks `id` as the output of a failed op: later ops that read it throw OpFailed(why).
  void mark_failed(TensorId id, std::string why) { failed_.insert_or_assign(id, std::move(why)); }

  [[nodiscard]] bool contains(TensorId id) const noexcept { return map_.contains(id); }
  /// The kind of `id`, or nothing when the registry does not hold it (non-throwing lookup).
  [[nodiscard]] std::optional<Kind> find(TensorId id) const noexcept {
    auto it = map_.find(id);
    if (it == map_.end()) return std::nullopt;
    return static_cast<Kind>(it->second.h.index());
  }
  [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }
  [[nodiscard]] std::size_t failed_size() const noexcept { return failed_.size(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] const std::string& device_name() const noexcept { return device_; }

 private:
  struct Entry {
    Handle h;
    std::size_t bytes;
  };

  auto find_or_throw(TensorId id, const char* op) {
    auto it = map_.find(id);
    if (it != map_.end()) return it;
    if (auto f = failed_.find(id); f != failed_.end())
      detail::raise<OpFailed>("failed", "op '{}' cannot use tensor {} on device {}: {}", op, id,
                              device_, f->second);
    detail::raise<HandleError>("registry.2",
                               "op '{}' needs tensor {} but device {} does not hold it (it was "
                               "consumed by an earlier op, dropped, or never created here)",
                               op, id, device_);
  }

  std::string device_;
  std::pmr::unsynchronized_pool_resource pool_;  // before the maps: they free into it
  std::pmr::unordered_map<TensorId, Entry> map_;
  std::pmr::unordered_map<TensorId, std::string> failed_;
  std::size_t bytes_ = 0;
};

}  // namespace ferry

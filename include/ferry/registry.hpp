// Ferry: HandleRegistry<B>, one device's map from tensor id to backend handle.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

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
/// Storage: dense vectors of entries (the ids with their chain links in one, the handles in
/// another), chained from a power-of-two bucket array by 32-bit indices, at most one entry per
/// two buckets. Every op inserts one entry and erases another, so this is on the dispatch
/// path: a node-based std::unordered_map paid an allocation, a division and a pointer chase per
/// operation. A router numbers tensors consecutively, and consecutive ids land in consecutive
/// buckets (see bucket()), so with 10^5 live tensors each op's new tensor touches the cache
/// line its predecessor touched (a hash that scattered them cost a cache miss per op there,
/// 70-100 ns), and a chain walk past a long-lived tensor reads its 16-byte link, not its
/// handle. Erasing moves the last entry into the hole. Nothing shrinks once grown.
template <Backend B>
class HandleRegistry {
 public:
  /// One alternative per Kind, in Kind order; alternatives may be the same C++ type, so the
  /// variant is always accessed by index.
  using Handle = std::variant<typename B::FloatHandle, typename B::IntHandle,
                              typename B::BoolHandle, typename B::QuantizedHandle>;

  explicit HandleRegistry(std::string device_name) : device_(std::move(device_name)) {}
  HandleRegistry(const HandleRegistry&) = delete;
  HandleRegistry& operator=(const HandleRegistry&) = delete;

  template <Kind K>
  void put(TensorId id, handle_t<B, K> h, std::size_t bytes) {
    emplace(id, bytes, std::in_place_index<static_cast<std::size_t>(K)>, std::move(h));
  }
  void put(TensorId id, Handle h, std::size_t bytes) { emplace(id, bytes, std::move(h)); }

  /// The handle for `ref`: moved out (entry removed) when ReadWrite, a shared copy when ReadOnly.
  template <Kind K>
  [[nodiscard]] handle_t<B, K> take(const TensorRef& ref, const char* op) {
    const std::size_t pos = pos_or_throw(ref.id, op);
    Entry& e = entries_[pos];
    if (e.h.index() != static_cast<std::size_t>(K))
      detail::raise<HandleError>("registry.3",
                                 "op '{}' wants a {} handle for tensor {} on device {}, but it "
                                 "holds a {} handle",
                                 op, static_cast<Kind>(K), ref.id, device_,
                                 static_cast<Kind>(e.h.index()));
    if (ref.access == Access::ReadOnly) return std::get<static_cast<std::size_t>(K)>(e.h);
    auto h = std::get<static_cast<std::size_t>(K)>(std::move(e.h));
    erase_at(pos);
    return h;
  }
  /// Type-erased take, for transfers that move whatever kind the tensor has.
  [[nodiscard]] Handle take_any(const TensorRef& ref, const char* op) {
    const std::size_t pos = pos_or_throw(ref.id, op);
    Entry& e = entries_[pos];
    if (ref.access == Access::ReadOnly) return e.h;
    Handle h = std::move(e.h);
    erase_at(pos);
    return h;
  }

  /// Frees the handle (or the failure mark) of `id`. Returns false when nothing was there,
  /// which is normal for a tensor consumed read-write by its last op.
  bool drop(TensorId id) noexcept {
    if (!failed_.empty()) failed_.erase(id);
    const std::size_t pos = pos_of(id);
    if (pos == npos) return false;
    erase_at(pos);
    return true;
  }

  /// Marks `id` as the output of a failed op: later ops that read it throw OpFailed(why).
  void mark_failed(TensorId id, std::string why) { failed_.insert_or_assign(id, std::move(why)); }

  [[nodiscard]] bool contains(TensorId id) const noexcept { return pos_of(id) != npos; }
  /// The kind of `id`, or nothing when the registry does not hold it (non-throwing lookup).
  [[nodiscard]] std::optional<Kind> find(TensorId id) const noexcept {
    const std::size_t pos = pos_of(id);
    if (pos == npos) return std::nullopt;
    return static_cast<Kind>(entries_[pos].h.index());
  }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] std::size_t failed_size() const noexcept { return failed_.size(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] const std::string& device_name() const noexcept { return device_; }

 private:
  using Index = std::uint32_t;  // an entry's position; kNone ends a chain
  static constexpr Index kNone = ~Index{0};
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // Entry i's id and chain link are links_[i], its handle entries_[i]: a chain walk reads only
  // the compact links (16 bytes each), never the handles (EigenCpu's take 96 bytes, 112 with
  // their byte count).
  struct Link {
    TensorId id;
    Index next;  // the next entry of the same bucket
  };
  struct Entry {
    template <class... Args>
    explicit Entry(std::size_t n, Args&&... args) : h(std::forward<Args>(args)...), bytes(n) {}
    Handle h;
    std::size_t bytes;
  };

  // The low 12 bits of the id are kept, so a run of consecutive ids fills consecutive buckets
  // (from a base the higher bits pick); the higher bits go through a Fibonacci multiply, so ids
  // that differ only there (i << 40, say) still spread over the table.
  [[nodiscard]] std::size_t bucket(TensorId id) const noexcept {
    const std::uint64_t base = ((id >> 12) * 0x9E3779B97F4A7C15ull) >> 20;
    return static_cast<std::size_t>((id + base) & mask_);
  }
  [[nodiscard]] std::size_t pos_of(TensorId id) const noexcept {
    if (heads_.empty()) return npos;
    for (Index i = heads_[bucket(id)]; i != kNone; i = links_[i].next)
      if (links_[i].id == id) return i;
    return npos;
  }
  // The link that points at entry `pos` (a bucket head or the previous entry's `next`).
  [[nodiscard]] Index& link_to(std::size_t pos) noexcept {
    Index* l = &heads_[bucket(links_[pos].id)];
    while (*l != pos) l = &links_[*l].next;
    return *l;
  }

  // Registers `id` with the handle built from `args` in place.
  template <class... Args>
  void emplace(TensorId id, std::size_t bytes, Args&&... args) {
    if (!failed_.empty()) failed_.erase(id);
    if (pos_of(id) != npos)
      detail::raise<HandleError>("registry.1", "tensor {} is already registered on device {}", id,
                                 device_);
    if (entries_.size() >= kNone)
      detail::raise<HandleError>("registry.4", "device {} holds {} tensors, the most it can",
                                 device_, entries_.size());
    // At most one entry per two buckets, so a new id's bucket is usually empty.
    if (2 * (entries_.size() + 1) > heads_.size()) grow();
    entries_.emplace_back(bytes, std::forward<Args>(args)...);
    Index& head = heads_[bucket(id)];
    try {
      links_.push_back(Link{id, head});
    } catch (...) {
      entries_.pop_back();
      throw;
    }
    head = static_cast<Index>(entries_.size() - 1);
    bytes_ += bytes;
  }
  void grow() {
    std::vector<Index> heads(heads_.empty() ? 16 : 2 * heads_.size(), kNone);
    heads_.swap(heads);
    mask_ = heads_.size() - 1;
    for (std::size_t pos = 0; pos < links_.size(); ++pos) {
      Index& head = heads_[bucket(links_[pos].id)];
      links_[pos].next = head;
      head = static_cast<Index>(pos);
    }
  }

  // Removes entry `pos`: unlinked from its chain, then the last entry moves into its place.
  void erase_at(std::size_t pos) noexcept {
    link_to(pos) = links_[pos].next;
    bytes_ -= entries_[pos].bytes;
    const std::size_t last = entries_.size() - 1;
    if (pos != last) {
      link_to(last) = static_cast<Index>(pos);
      links_[pos] = links_[last];
      if constexpr (std::is_move_assignable_v<Entry>) {
        entries_[pos] = std::move(entries_[last]);
      } else {  // a handle type that is only copy-constructible, as the Backend concept allows
        std::destroy_at(&entries_[pos]);
        std::construct_at(&entries_[pos], std::move(entries_[last]));
      }
    }
    links_.pop_back();
    entries_.pop_back();
  }

  std::size_t pos_or_throw(TensorId id, const char* op) {
    const std::size_t pos = pos_of(id);
    if (pos != npos) return pos;
    if (auto f = failed_.find(id); f != failed_.end())
      detail::raise<OpFailed>("failed", "op '{}' cannot use tensor {} on device {}: {}", op, id,
                              device_, f->second);
    detail::raise<HandleError>("registry.2",
                               "op '{}' needs tensor {} but device {} does not hold it (it was "
                               "consumed by an earlier op, dropped, or never created here)",
                               op, id, device_);
  }

  std::string device_;
  std::vector<Index> heads_;    // bucket -> first entry; size 0 or a power of two
  std::size_t mask_ = 0;        // heads_.size() - 1
  std::vector<Link> links_;     // dense, in no particular order; at most heads_.size() / 2
  std::vector<Entry> entries_;  // the same order as links_
  std::unordered_map<TensorId, std::string> failed_;
  std::size_t bytes_ = 0;
};

}  // namespace ferry

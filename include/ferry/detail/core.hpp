// Ferry: RouterCore<B>, the shared state behind a Router and its Tensors (internal).
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "ferry/backend.hpp"
#include "ferry/detail/client.hpp"
#include "ferry/error.hpp"
#include "ferry/ir.hpp"

namespace ferry::detail {

/// Owns the backend and one Client per device. Tensors hold it through a shared_ptr, so it
/// lives until the router and every tensor are gone; its destructor drains the queues.
template <Backend B>
class RouterCore {
 public:
  using Device = typename B::Device;
  using Client = detail::Client<B>;

  RouterCore(B backend, std::vector<Device> devices, RouterOptions opts);
  RouterCore(const RouterCore&) = delete;
  RouterCore& operator=(const RouterCore&) = delete;
  ~RouterCore();

  [[nodiscard]] B& backend() noexcept { return backend_; }
  [[nodiscard]] const B& backend() const noexcept { return backend_; }
  [[nodiscard]] const std::vector<Device>& devices() const noexcept { return devices_; }
  [[nodiscard]] const RouterOptions& options() const noexcept { return opts_; }
  [[nodiscard]] const Device& device(std::size_t i) const noexcept { return devices_[i]; }
  [[nodiscard]] Client& client(std::size_t i) noexcept { return *clients_[i]; }

  [[nodiscard]] std::size_t index_of(const Device& d, const char* op) const {
    for (std::size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i] == d) return i;
    unknown_device(d, op);
  }

  [[nodiscard]] TensorId new_id() noexcept {
    return next_id_.fetch_add(1, std::memory_order_relaxed);
  }

  /// Runs op `o` (an op:: struct) on device `dev`: now, in inline mode; queued, in async mode.
  template <class O>
  void submit(std::size_t dev, O&& o) {
    if constexpr (std::is_lvalue_reference_v<O>)
      submit_to(dev, std::remove_cvref_t<O>(o));
    else
      submit_to(dev, std::move(o));
  }
  /// The same for each op type, out of line: what keeps a file that runs ops from instantiating
  /// Client<B>, Interpreter<B> and HandleRegistry<B> (FERRY_EXTERN_BACKEND).
#define FERRY_DETAIL_SUBMIT(T) void submit_to(std::size_t dev, op::T&& o);
  FERRY_OP_TYPES(FERRY_DETAIL_SUBMIT)
#undef FERRY_DETAIL_SUBMIT

  /// Moves a tensor between devices: the send is queued on the source before the receive is
  /// queued on the target, which is what keeps concurrent moves free of wait cycles.
  void move(op::ToDevice op);

  /// Reads a tensor's contents once its device has produced it.
  [[nodiscard]] ReadResult read(std::size_t dev, TensorRef in);

  /// Called from a Tensor's destructor: never throws. `make_ref()` gives the tensor's ref,
  /// built only when a Drop op is queued (see Client::try_drop_now); otherwise the id is enough.
  template <class MakeRef>
  void drop(std::size_t dev, TensorId id, MakeRef&& make_ref) noexcept {
    try {
      if (!try_drop_now(dev, id)) submit(dev, op::Drop{make_ref()});
    } catch (...) {
      // A drop can only fail if the process is out of memory; the handle is then freed when
      // the router goes away.
    }
  }

  /// Frees `id` at once when nothing can be ahead of its Drop (Client::try_drop_now).
  bool try_drop_now(std::size_t dev, TensorId id);
  void sync(std::size_t dev);
  void sync_all();
  [[nodiscard]] DeviceStats stats(std::size_t dev);

  /// Every device's trace events, ordered by start time.
  [[nodiscard]] std::vector<TraceEvent> trace();

 private:
  [[noreturn]] void unknown_device(const Device& d, const char* op) const;

  B backend_;
  std::vector<Device> devices_;
  RouterOptions opts_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::atomic<TensorId> next_id_{1};
};

// Out of the class body, so that FERRY_EXTERN_BACKEND keeps them out of a user file.
template <Backend B>
RouterCore<B>::RouterCore(B backend, std::vector<Device> devices, RouterOptions opts)
    : backend_(std::move(backend)), devices_(std::move(devices)), opts_(opts) {
  if (devices_.empty())
    raise<DeviceError>("device", "a router needs at least one device (backend '{}')", B::name());
  for (std::size_t i = 0; i < devices_.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (devices_[i] == devices_[j])
        raise<DeviceError>("device", "device {} is listed twice", devices_[i]);
  // A device the backend does not have would only fail later, inside the first kernel run
  // there (and in async mode at a read or sync far from this constructor).
  if constexpr (lists_all_devices<B>) {
    const auto known = backend_.devices();
    for (const auto& d : devices_)
      if (std::find(known.begin(), known.end(), d) == known.end())
        raise<DeviceError>("device", "device {} is not a device of backend '{}' (it has [{}])", d,
                           B::name(), ::ferry::detail::joined(known));
  }
  if (opts_.queue_capacity == 0) opts_.queue_capacity = 1;
  int threads = opts_.threads_per_device;
  if (threads <= 0) {
    const auto hw = std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<int>(std::max<std::size_t>(1, hw / devices_.size()));
  }
  clients_.reserve(devices_.size());
  const auto epoch = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < devices_.size(); ++i)
    clients_.push_back(std::make_unique<Client>(backend_, devices_[i], i, opts_, threads, epoch));
}

template <Backend B>
RouterCore<B>::~RouterCore() {
  // Workers drain their queues concurrently (a receive may wait on another device's send),
  // then stop; destroying the interpreters frees every handle left.
  clients_.clear();
}

#define FERRY_DETAIL_SUBMIT(T)                                \
  template <Backend B>                                        \
  void RouterCore<B>::submit_to(std::size_t dev, op::T&& o) { \
    clients_[dev]->submit_op(std::move(o));                   \
  }
FERRY_OP_TYPES(FERRY_DETAIL_SUBMIT)
#undef FERRY_DETAIL_SUBMIT

template <Backend B>
bool RouterCore<B>::try_drop_now(std::size_t dev, TensorId id) {
  return clients_[dev]->try_drop_now(id);
}
template <Backend B>
void RouterCore<B>::sync(std::size_t dev) {
  clients_[dev]->sync();
}
template <Backend B>
DeviceStats RouterCore<B>::stats(std::size_t dev) {
  return clients_[dev]->stats();
}

template <Backend B>
void RouterCore<B>::unknown_device(const Device& d, const char* op) const {
  raise<DeviceError>("device", "{}: device {} is not one of this router's devices [{}]", op, d,
                     ::ferry::detail::joined(devices_));
}

template <Backend B>
void RouterCore<B>::move(op::ToDevice op) {
  using Handle = typename Client::Handle;
  using Task = typename Client::Task;
  auto xfer = std::make_shared<Transfer<Handle>>();
  const std::size_t from = op.from, to = op.to;
  clients_[from]->submit(Task{op, Task::Role::send, xfer, &devices_[to]});
  clients_[to]->submit(Task{std::move(op), Task::Role::receive, xfer, nullptr});
}

template <Backend B>
ReadResult RouterCore<B>::read(std::size_t dev, TensorRef in) {
  auto slot = std::make_shared<ReadSlot>();
  submit(dev, op::Read{std::move(in), slot});
  return slot->result.take();
}

template <Backend B>
void RouterCore<B>::sync_all() {
  // Wait for every device before reporting the first error, so that one failure does not
  // leave other devices' work unsynced.
  std::exception_ptr first;
  for (auto& c : clients_) {
    try {
      c->sync();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

template <Backend B>
std::vector<TraceEvent> RouterCore<B>::trace() {
  std::vector<TraceEvent> all;
  for (auto& c : clients_) {
    auto t = c->trace();
    all.insert(all.end(), std::make_move_iterator(t.begin()), std::make_move_iterator(t.end()));
  }
  std::stable_sort(all.begin(), all.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.start_ns < b.start_ns;
  });
  return all;
}

/// Unsupported naming `op`, the dtype, the backend and the device when device `dev` does not
/// hold `dtype` tensors (see holds_dtype).
template <Backend B>
void check_holds(const RouterCore<B>& core, std::size_t dev, const char* op, DType dtype) {
  if (!holds_dtype(core.backend(), core.device(dev), dtype)) {
    std::string_view name = B::name();
    if constexpr (requires { B::backend_name(core.device(dev)); })
      name = B::backend_name(core.device(dev));
    raise<Unsupported>("unsupported", "{}: backend '{}' does not hold {} tensors (device {})", op,
                       name, dtype, core.device(dev));
  }
}

}  // namespace ferry::detail

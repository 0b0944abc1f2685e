// Ferry: Client<B>, one device's op queue, worker and interpreter (internal).
// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/detail/arena.hpp"
#include "ferry/detail/handoff.hpp"
#include "ferry/interpreter.hpp"
#include "ferry/ir.hpp"
#include "ferry/trace.hpp"

namespace ferry {

/// How a router runs ops. Async: each device has an ordered queue and a worker thread, devices
/// run in parallel, submission returns at once. Inline: each op runs in the calling thread
/// before the call returns (the reference mode, and the easiest to debug).
enum class Execution : std::uint8_t { Async, Inline };

struct RouterOptions {
  Execution execution = Execution::Async;
  /// Ops a device queue holds before a submitting thread blocks (async mode). The worker takes
  /// the queue whole, so up to twice this many ops are queued or running per device.
  std::size_t queue_capacity = 1024;
  /// oneTBB threads each device's kernels may use (its own task_arena); 0 = cores / devices.
  int threads_per_device = 0;
  /// Record each op's device, start, end and bytes moved (see Router::write_trace).
  bool trace = false;
};

namespace detail {

/// One cross-device move: the source worker fulfils it with the handle copied into the target's
/// memory, the target worker waits for it and registers the handle. A failed send hands over an
/// OpFailed of its own, made for the target (the source keeps its error for its own sync), so
/// that no exception object is shared by two workers and the caller.
template <class Handle>
using Transfer = Handoff<Handle>;

/// Op, as a type that depends on B: code in Client that names it then compiles the variant's
/// moves and destructor (a visit over every op type) only where Client<B> is instantiated, not
/// in every file that includes this header.
template <class B>
using OpFor = std::conditional_t<sizeof(B*) != 0, Op, void>;

template <Backend B>
class Client {
 public:
  using Device = typename B::Device;
  using Handle = typename Interpreter<B>::Handle;

  struct Task {
    enum class Role : std::uint8_t { run, send, receive };
    Task() = default;
    // Out of the class: an inline body would make every file that names Client compile Op's
    // move (a visit over every op type).
    explicit Task(OpFor<B> o, Role r = Role::run, std::shared_ptr<Transfer<Handle>> x = nullptr,
                  const Device* t = nullptr);
    OpFor<B> op;
    Role role = Role::run;
    std::shared_ptr<Transfer<Handle>> xfer;
    const Device* target = nullptr;
  };

  Client(B& backend, Device device, std::size_t index, const RouterOptions& opts, int threads,
         std::chrono::steady_clock::time_point epoch);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  [[nodiscard]] const Device& device() const noexcept { return interp_.device(); }
  [[nodiscard]] bool is_async() const noexcept { return opts_.execution == Execution::Async; }

  /// Inline: runs the task now and rethrows its error. Async: queues it (blocking while the
  /// queue is full) and returns.
  void submit(Task t);

  /// Runs op `o` now (inline mode; nothing is built around it, no Op variant and no Task,
  /// unless it is traced) or queues it (async). One out-of-line entry point per op type, so
  /// that a file which submits ops does not compile the Op variant, the queue or the kernels
  /// (FERRY_EXTERN_BACKEND keeps them all in one file).
#define FERRY_DETAIL_SUBMIT(T) void submit_op(op::T&& o);
  FERRY_OP_TYPES(FERRY_DETAIL_SUBMIT)
#undef FERRY_DETAIL_SUBMIT

  /// Frees tensor `id` now, in the calling thread, when nothing can be ahead of its Drop: in
  /// inline mode always, in async mode when the device has nothing queued or running (the
  /// tensor's last copy is going, so no later op can name it). Returns false when the Drop
  /// must be queued instead (a busy async device, or a traced router, whose trace shows it).
  /// An idle device so gives memory back when the tensor goes, not at its next op: a buffer
  /// dropped after a sync() is in the cache for the next allocation.
  bool try_drop_now(TensorId id);

  /// Waits until every task submitted so far has run; throws the first error this device hit
  /// since the last sync (and clears it).
  void sync();

  [[nodiscard]] DeviceStats stats();

  /// Runs `f(interpreter)` under the device's lock (tests and introspection).
  template <class F>
  decltype(auto) with_interpreter(F&& f) {
    std::lock_guard lk(exec_mu_);
    return f(interp_);
  }

  /// The trace recorded so far (a copy).
  [[nodiscard]] std::vector<TraceEvent> trace();

 private:
  template <class O>
  void run_inline(O& o);
  // Runs a task, and records it when tracing. Called with exec_mu_ held.
  void run(Task& t);
  [[nodiscard]] std::int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                epoch_)
        .count();
  }
  void run_untraced(Task& t);
  // A failed op marks its output so that users of it fail with this message, and keeps the
  // first error for the next sync. Reads hand their error to the waiting reader instead.
  void fail(Task& t, std::exception_ptr e);
  // The Tensors of inputs an op took read-write were let go without a Drop when the op was
  // queued, so what a failed op left of them here (a failure mark, or a handle it did not reach
  // before it threw) would stay until the router goes: drop it now. A receive's input lives on
  // the source device.
  void drop_consumed_inputs(const Task& t);
  // The worker: takes everything queued in one swap under q_mu_, then runs the batch inside
  // the device's arena and retires it with one more lock. A stream of tiny ops so pays one arena
  // entry and two q_mu_ round trips per batch rather than per task, and the submitting thread
  // rarely finds q_mu_ held. (A bounded spin before sleeping was tried: on 2 cores it stole the
  // core a transfer's other half needed, q.to ran 10-30% slower, and the stream got no faster.)
  void work();
  // Waits for work and swaps the queue into `batch` (empty on entry; the queue gets its
  // storage). Returns false once stopping with nothing left to run.
  bool take_batch(std::vector<Task>& batch);
  void run_batch(std::vector<Task>& batch);
  void stop();

  Interpreter<B> interp_;
  std::size_t index_;
  RouterOptions opts_;
  std::chrono::steady_clock::time_point epoch_;
  std::vector<TraceEvent> trace_;  // guarded by exec_mu_
  std::mutex exec_mu_;             // guards interp_ and first_error_
  std::exception_ptr first_error_;

  std::mutex q_mu_;  // guards q_, pending_, stopping_
  std::condition_variable not_empty_, not_full_, idle_;
  std::vector<Task> q_;
  std::size_t pending_ = 0;
  bool stopping_ = false;
  std::optional<DeviceArena> arena_;
  std::thread worker_;
};

// Out of the class body, so that FERRY_EXTERN_BACKEND keeps them out of a user file (the
// body of a member defined in its class is instantiated wherever it is used).
template <Backend B>
Client<B>::Task::Task(OpFor<B> o, Role r, std::shared_ptr<Transfer<Handle>> x, const Device* t)
    : op(std::move(o)), role(r), xfer(std::move(x)), target(t) {}

template <Backend B>
Client<B>::Client(B& backend, Device device, std::size_t index, const RouterOptions& opts,
                  int threads, std::chrono::steady_clock::time_point epoch)
    : interp_(backend, std::move(device)), index_(index), opts_(opts), epoch_(epoch) {
  if (opts_.execution == Execution::Async) {
    arena_.emplace(threads);
    worker_ = std::thread([this] { work(); });
  }
}
template <Backend B>
Client<B>::~Client() {
  stop();
}

template <Backend B>
void Client<B>::submit(Task t) {
  if (!is_async()) {
    std::lock_guard lk(exec_mu_);
    run(t);
    return;
  }
  std::unique_lock lk(q_mu_);
  not_full_.wait(lk, [&] { return q_.size() < opts_.queue_capacity; });
  q_.push_back(std::move(t));
  ++pending_;
  not_empty_.notify_one();
}

template <Backend B>
template <class O>
void Client<B>::run_inline(O& o) {
  std::lock_guard lk(exec_mu_);
  if (!opts_.trace) return interp_.execute(o);
  Task t{OpFor<B>(std::move(o))};
  run(t);
}

template <Backend B>
bool Client<B>::try_drop_now(TensorId id) {
  if (opts_.trace) return false;
  if (is_async()) {
    std::lock_guard lk(q_mu_);
    if (pending_ != 0) return false;
  }
  std::lock_guard lk(exec_mu_);
  interp_.drop(id);
  return true;
}

template <Backend B>
void Client<B>::sync() {
  if (is_async()) {
    std::unique_lock lk(q_mu_);
    idle_.wait(lk, [&] { return pending_ == 0; });
  }
  std::lock_guard lk(exec_mu_);
  if (first_error_) {
    auto e = std::exchange(first_error_, nullptr);
    std::rethrow_exception(e);
  }
}

template <Backend B>
DeviceStats Client<B>::stats() {
  std::lock_guard lk(exec_mu_);
  DeviceStats s = interp_.stats();
  s.live_tensors = interp_.registry().size();
  s.live_bytes = interp_.registry().bytes();
  return s;
}

template <Backend B>
std::vector<TraceEvent> Client<B>::trace() {
  std::lock_guard lk(exec_mu_);
  return trace_;
}

template <Backend B>
void Client<B>::run(Task& t) {
  if (!opts_.trace) return run_untraced(t);
  TraceEvent e;
  e.device = index_;
  e.phase = t.role == Task::Role::send      ? TraceEvent::Phase::send
            : t.role == Task::Role::receive ? TraceEvent::Phase::receive
                                            : TraceEvent::Phase::op;
  e.name = op_name(t.op);
  e.detail = fmt::format("{}", t.op);
  if (t.role != Task::Role::run) e.flow = std::get<op::ToDevice>(t.op).out.id;
  const auto before = interp_.stats();
  e.start_ns = now_ns();
  try {
    run_untraced(t);
  } catch (...) {
    e.end_ns = now_ns();
    e.failed = true;
    trace_.push_back(std::move(e));
    throw;
  }
  e.end_ns = now_ns();
  const auto& after = interp_.stats();
  e.bytes = (after.bytes_in - before.bytes_in) + (after.bytes_out - before.bytes_out);
  trace_.push_back(std::move(e));
}

template <Backend B>
void Client<B>::run_untraced(Task& t) {
  switch (t.role) {
    case Task::Role::run:
      interp_.execute(t.op);
      return;
    case Task::Role::send: {
      auto& o = std::get<op::ToDevice>(t.op);
      try {
        t.xfer->set_value(interp_.send(o, *t.target));
      } catch (const std::exception& x) {
        t.xfer->set_exception(std::make_exception_ptr(OpFailed(fmt::format(
            "[ferry.failed] op 'to_device' on device {} failed: {}", *t.target, x.what()))));
        throw;
      } catch (...) {  // Interpreter::send lets out ferry errors only; kept for safety
        t.xfer->set_exception(std::make_exception_ptr(OpFailed(fmt::format(
            "[ferry.failed] op 'to_device' on device {} failed: unknown error", *t.target))));
        throw;
      }
      return;
    }
    case Task::Role::receive: {
      auto& o = std::get<op::ToDevice>(t.op);
      interp_.register_tensor_to_device(o.out.id, t.xfer->take(), &o.out);
      return;
    }
  }
}

// Takes the worker's only reference to the error (the caller of run_batch let go of its
// handler's): it ends in the read slot or first_error_, which the caller takes out, so the
// exception is freed on the caller's side, never on this worker after the caller saw it.
template <Backend B>
void Client<B>::fail(Task& t, std::exception_ptr e) {
  std::string what = "unknown error";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    what = x.what();
  } catch (...) {
  }
  drop_consumed_inputs(t);
  if (auto* rd = std::get_if<op::Read>(&t.op)) {
    rd->slot->result.set_exception(std::move(e));
    return;
  }
  const TensorRef* out = op_output(t.op);
  if (out && t.role != Task::Role::send) {
    // An already-"failed" input passes its original message through unchanged.
    const bool inherited = what.starts_with("[ferry.failed]");
    interp_.mark_failed(out->id, inherited ? what
                                           : fmt::format("op '{}' on device {} failed: {}",
                                                         op_name(t.op), interp_.device(), what));
  }
  if (!first_error_) first_error_ = std::move(e);
}

template <Backend B>
void Client<B>::drop_consumed_inputs(const Task& t) {
  if (t.role == Task::Role::receive) return;
  for (const TensorRef* r : op_inputs(t.op))
    if (r->access == Access::ReadWrite) interp_.registry().drop(r->id);
}

template <Backend B>
void Client<B>::work() {
  std::vector<Task> batch;
  while (take_batch(batch)) {
    arena_->execute([&] { run_batch(batch); });  // no arena under FERRY_SERIAL_KERNELS
    std::lock_guard lk(q_mu_);
    pending_ -= batch.size();
    batch.clear();  // keeps its capacity for the next batch
    if (pending_ == 0) idle_.notify_all();
  }
}

template <Backend B>
bool Client<B>::take_batch(std::vector<Task>& batch) {
  std::unique_lock lk(q_mu_);
  not_empty_.wait(lk, [&] { return stopping_ || !q_.empty(); });
  if (q_.empty()) return false;
  batch.swap(q_);
  not_full_.notify_all();
  return true;
}

template <Backend B>
void Client<B>::run_batch(std::vector<Task>& batch) {
  for (Task& t : batch) {
    // A receive waits for its send outside the lock; the send was queued before it, so
    // this wait always ends (see docs/execution.md for why no cycle can form).
    if (t.role == Task::Role::receive) t.xfer->wait();
    {
      std::lock_guard lk(exec_mu_);
      std::exception_ptr err;
      try {
        run(t);
      } catch (...) {
        err = std::current_exception();
      }
      // Out of the handler, which held a reference of its own until here.
      if (err) fail(t, std::move(err));
    }
    // Let go of what the task holds (a finished move still holds the moved buffer through
    // its Transfer) at once, and so before sync() may return: nothing is held once a device
    // is idle.
    t = Task();
  }
}

template <Backend B>
void Client<B>::stop() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lk(q_mu_);
    stopping_ = true;
  }
  not_empty_.notify_all();
  worker_.join();
}

#define FERRY_DETAIL_SUBMIT(T)              \
  template <Backend B>                      \
  void Client<B>::submit_op(op::T&& o) {    \
    if (is_async())                         \
      submit(Task{OpFor<B>(std::move(o))}); \
    else                                    \
      run_inline(o);                        \
  }
FERRY_OP_TYPES(FERRY_DETAIL_SUBMIT)
#undef FERRY_DETAIL_SUBMIT

}  // namespace detail
}  // namespace ferry

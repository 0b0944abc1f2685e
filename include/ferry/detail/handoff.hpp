// Ferry: a one-shot hand-off of a value or an error from a device worker to the thread that
// waits for it (a read's reader, a move's receiving worker).
// SPDX-License-Identifier: MIT
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>

namespace ferry::detail {

/// @brief std::promise/std::future for one producer and one consumer, where the consumer moves
/// the error out.
///
/// With std::promise, the shared state keeps its copy of the exception_ptr until the last of
/// promise and future goes; when the worker's promise goes last, the exception is destroyed on
/// the worker after the reader caught it and read its message. The reference count that orders
/// the two is libsupc++'s, which ThreadSanitizer does not see (Debian's libstdc++ is not built
/// with it). Here take() moves the error out under the mutex: once the reader has it, the worker
/// holds no reference, so the reader (or whoever it hands the exception to) frees it, after
/// every use, on a thread TSan sees ordered. Producers must give up their own references before
/// they publish (set_exception takes the pointer by value: move it in).
template <class T>
class Handoff {
 public:
  void set_value(T v) {
    std::lock_guard lk(mu_);
    value_.emplace(std::move(v));
    done_ = true;
    cv_.notify_all();  // under the lock: the waiter may free *this once it sees done_
  }
  void set_exception(std::exception_ptr e) {
    std::lock_guard lk(mu_);
    error_ = std::move(e);
    done_ = true;
    cv_.notify_all();
  }
  /// Waits until a value or an error is set.
  void wait() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return done_; });
  }
  /// Waits, then moves the value out, or rethrows the error after taking it out of *this.
  /// Once only.
  T take() {
    std::exception_ptr e;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return done_; });
      if (!error_) return std::move(*value_);
      e = std::move(error_);
    }
    std::rethrow_exception(std::move(e));
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<T> value_;
  std::exception_ptr error_;
  bool done_ = false;
};

}  // namespace ferry::detail

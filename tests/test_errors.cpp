// What a backend lets out that is not a ferry::Error: a std::runtime_error, an int. The
// interpreter wraps it in ferry::BackendError naming the op, the backend, the device and the
// output, with the original nested; std::bad_alloc stays OutOfMemory (test_backend.cpp) and a
// ferry::Error passes as it is. Inline, the call throws it; async, reads of the output throw
// OpFailed quoting it and sync() throws the BackendError itself. The router keeps working.
#include <catch2/catch.hpp>
#include <exception>
#include <ferry/backends/multi.hpp>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include "matchers.hpp"
#include "mini_backend.hpp"

using ferry::Execution;
using ferry::Router;
using ferry_test::Says;

namespace {
const mini::Device m0{0}, m1{1};

/// Runs `f`, which must throw exactly ferry::BackendError whose message contains `part`; returns
/// what std::rethrow_if_nested gives back (the original object).
template <class F>
std::exception_ptr nested_in_backend_error(F&& f, const std::string& part) {
  try {
    f();
  } catch (const ferry::BackendError& e) {
    INFO("message: " << e.what());
    REQUIRE(typeid(e) == typeid(ferry::BackendError));
    REQUIRE(std::string(e.what()).find(part) != std::string::npos);
    try {
      std::rethrow_if_nested(e);
    } catch (...) {
      return std::current_exception();
    }
    FAIL("BackendError nests nothing");
  }
  FAIL("nothing was thrown");
  return nullptr;
}

std::string runtime_error_text(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const std::runtime_error& e) {
    REQUIRE(typeid(e) == typeid(std::runtime_error));
    return e.what();
  }
}

int int_value(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (int v) {
    return v;
  }
}

/// The router still works: a fresh add and a move give the right values, and no failure mark
/// is left in either registry once the failed tensors are gone.
template <class R>
void still_works(R& r, std::size_t live_on_0) {
  auto x = r.from_vector(std::vector<float>{1, 2}, {2}, m0);
  REQUIRE((x + x).to(m1).to_data().template to_vector<float>() == std::vector<float>{2, 4});
  REQUIRE_NOTHROW(r.sync());
  REQUIRE(r.stats(m0).live_tensors == live_on_0 + 1);
  REQUIRE(r.stats(m1).live_tensors == 0);
  for (const auto& d : {m0, m1})
    REQUIRE(r.with_interpreter(d, [](auto& in) { return in.registry().failed_size(); }) == 0);
}
}  // namespace

TEST_CASE("a kernel's std::runtime_error becomes BackendError naming op, backend, device, output") {
  const auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<mini::Faulty> r(mini::Faulty{}, {.execution = mode});
  auto a = r.from_vector(std::vector<float>(13, 1.0f), {13}, m0);
  const std::string says = "[ferry.backend] add: backend 'faulty' failed on device mini:0 making t";
  const std::string what = ":f32[13]: std::runtime_error: mini: the adder overheated";
  {
    std::exception_ptr original;
    if (mode == Execution::Inline) {
      original = nested_in_backend_error([&] { (void)(a + a); }, says);
      original = nested_in_backend_error([&] { (void)(a + a); }, what);
    } else {
      auto sum = a + a;  // returns; the add fails on the worker
      REQUIRE_THROWS_MATCHES(sum.to_data(), ferry::OpFailed,
                             Says("op 'add' on device mini:0 failed: " + says) && Says(what));
      original = nested_in_backend_error([&] { r.sync(); }, says + std::to_string(sum.id()) + what);
      REQUIRE_NOTHROW(r.sync());  // reported once
    }
    REQUIRE(runtime_error_text(original) == "mini: the adder overheated");
  }
  REQUIRE(a.to_data().to_vector<float>() == std::vector<float>(13, 1.0f));
  still_works(r, 1);
}

TEST_CASE("a kernel that throws an int gives BackendError with the int nested") {
  const auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<mini::Faulty> r(mini::Faulty{}, {.execution = mode});
  auto a = r.from_vector(std::vector<std::int32_t>(7, 3), {7}, m0);
  const std::string says = "[ferry.backend] add: backend 'faulty' failed on device mini:0 making t";
  const std::string what = ":i32[7]: int (not a std::exception)";
  {
    std::exception_ptr original;
    if (mode == Execution::Inline) {
      original = nested_in_backend_error([&] { (void)(a + a); }, what);
    } else {
      auto sum = a + a;
      auto more = sum + a;  // poisoned: fails with the first add's message
      REQUIRE_THROWS_MATCHES(more.to_data(), ferry::OpFailed,
                             Says("op 'add' on device mini:0 failed: " + says) && Says(what));
      original = nested_in_backend_error([&] { r.sync(m0); }, what);  // not "unknown error"
      REQUIRE_NOTHROW(r.sync());
    }
    REQUIRE(int_value(original) == 7);
  }
  REQUIRE(a.to_data().to_vector<std::int32_t>() == std::vector<std::int32_t>(7, 3));
  still_works(r, 1);
}

TEST_CASE("a transfer's std::runtime_error becomes BackendError naming both devices") {
  const auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<mini::Faulty> r(mini::Faulty{}, {.execution = mode});
  auto a = r.from_vector(std::vector<float>(13, 2.0f), {13}, m0);
  const std::string says = "[ferry.backend] to_device: backend 'faulty' failed moving t";
  const std::string what =
      ":f32[13] from device mini:0 to mini:1: std::runtime_error: mini: the link is down";
  {
    std::exception_ptr original;
    if (mode == Execution::Inline) {
      original = nested_in_backend_error([&] { (void)a.to(m1); }, what);
    } else {
      auto moved = a.to(m1);
      REQUIRE_THROWS_MATCHES(moved.to_data(), ferry::OpFailed,
                             Says("op 'to_device' on device mini:1 failed: " + says) && Says(what));
      // The send failed on mini:0, which reports the BackendError; the receive on mini:1
      // reports OpFailed quoting it (an exception of its own: none is shared across threads).
      original = nested_in_backend_error([&] { r.sync(m0); }, says);
      REQUIRE_THROWS_MATCHES(
          r.sync(m1), ferry::OpFailed,
          Says("[ferry.failed] op 'to_device' on device mini:1 failed: " + says) && Says(what));
      REQUIRE_NOTHROW(r.sync());
    }
    REQUIRE(runtime_error_text(original) == "mini: the link is down");
  }
  // Counted as one failed op of the source; no transfer, no bytes, on either side.
  const auto s0 = r.stats(m0), s1 = r.stats(m1);
  CHECK(s0.failed_ops == 1);
  CHECK(s0.ops == 2);  // from_data and the send
  CHECK(s0.transfers_out == 0);
  CHECK(s0.bytes_out == 0);
  CHECK(s1.transfers_in == 0);
  CHECK(s1.bytes_in == 0);
  REQUIRE(a.to_data().to_vector<float>() == std::vector<float>(13, 2.0f));
  still_works(r, 1);
}

TEST_CASE("a ferry::Error from a kernel passes through unwrapped") {
  const auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<mini::Faulty> r(mini::Faulty{}, {.execution = mode});
  auto a = r.from_vector(std::vector<float>{1, 2}, {2}, m0);
  auto b = r.from_vector(std::vector<float>{1}, {1}, m0);  // broadcasts; mini's add refuses
  if (mode == Execution::Inline) {
    REQUIRE_THROWS_MATCHES(a + b, ferry::Unsupported, Says("mini add: broadcasting"));
  } else {
    auto c = a + b;
    REQUIRE_THROWS_MATCHES(c.to_data(), ferry::OpFailed, Says("mini add: broadcasting"));
    REQUIRE_THROWS_AS(r.sync(), ferry::Unsupported);
  }
  still_works(r, 2);
}

TEST_CASE("through the bridge, BackendError names the member backend that threw") {
  using Both = ferry::Multi<ferry::EigenCpu, mini::Faulty>;
  const Both::Device mini0{m0}, cpu0{ferry::CpuDevice{0}};
  const auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<Both> r(Both(ferry::EigenCpu(1), mini::Faulty{}), {.execution = mode});
  auto a = r.from_vector(std::vector<float>(13, 1.0f), {13}, mini0);
  const std::string says = "add: backend 'faulty' failed on device mini:0 making t";
  std::exception_ptr original;
  if (mode == Execution::Inline) {
    original = nested_in_backend_error([&] { (void)(a + a); }, says);
  } else {
    auto sum = a + a;
    original = nested_in_backend_error([&] { r.sync(); }, says);
  }
  REQUIRE(runtime_error_text(original) == "mini: the adder overheated");
  auto c = r.from_vector(std::vector<float>{1, 2}, {2}, cpu0);
  REQUIRE((c + c).to(mini0).to_data().to_vector<float>() == std::vector<float>{2, 4});
}

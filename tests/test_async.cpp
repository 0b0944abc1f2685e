// Asynchronous execution: ordered per-device queues, parallel devices, bounded queues, safe
// cross-device moves, many application threads, error propagation and clean shutdown.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ferry/ferry.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "matchers.hpp"
#include "mini_backend.hpp"

using ferry::CpuDevice;
using ferry::DType;
using ferry::EigenCpu;
using ferry::Execution;
using ferry::Router;
using ferry_test::Says;
using T = ferry::Tensor<EigenCpu>;

namespace {
// A little program mixing elementwise ops, reductions, matmul, layout and moves; run the same
// way in both modes, it must give the same numbers.
std::vector<float> program(Router<EigenCpu>& r, int seed) {
  const int nd = static_cast<int>(r.devices().size());
  const CpuDevice a{seed % nd}, b{(seed + 1) % nd};
  auto x = r.random_uniform({16, 16}, static_cast<std::uint64_t>(seed), a, -1.0, 1.0);
  auto y = r.arange(0, 256, 1, DType::f32, a);
  auto z = tanh(x * 0.5f + reshape(y, {16, 16}) / 256.0f);
  auto w = matmul(z, permute(z, {1, 0})).to(b);
  auto s = sum(relu(w - 0.1f), 1, true);
  auto q =
      ferry::quantize_dynamic(z, ferry::quant::Scheme::of(ferry::quant::ValueType::i8).per_axis(0));
  auto back = ferry::dequantize(q.to(b));
  auto t = ferry::cat(std::vector<T>{s, sum(back, 1, true)}, 1).to(a);
  return t.to_data().to_vector<float>();
}
}  // namespace

TEST_CASE("many threads times many ops give the inline mode's results", "[async]") {
  constexpr int threads = 6, per_thread = 12;
  std::vector<std::vector<float>> want(threads * per_thread);
  {
    Router<EigenCpu> ref(EigenCpu(3), {.execution = Execution::Inline});
    for (int i = 0; i < threads * per_thread; ++i)
      want[static_cast<std::size_t>(i)] = program(ref, i);
  }
  Router<EigenCpu> r(EigenCpu(3), {.execution = Execution::Async, .queue_capacity = 8});
  std::vector<std::vector<float>> got(want.size());
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int k = 0; k < per_thread; ++k) {
        const int i = t * per_thread + k;
        got[static_cast<std::size_t>(i)] = program(r, i);
      }
    });
  for (auto& th : pool) th.join();
  r.sync();
  for (std::size_t i = 0; i < want.size(); ++i) REQUIRE(got[i] == want[i]);
  for (auto d : r.devices()) {
    REQUIRE(r.stats(d).live_tensors == 0);
    REQUIRE(r.backend().allocated_bytes(d) == 0);
  }
}

TEST_CASE("tensors moving both ways between two devices with tiny queues finish", "[async]") {
  Router<EigenCpu> r(EigenCpu(2), {.execution = Execution::Async, .queue_capacity = 1});
  const CpuDevice d0{0}, d1{1};
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> done{0};
  auto pingpong = [&](CpuDevice from, CpuDevice to, float seed) {
    auto t = r.full({32}, seed, DType::f32, from);
    for (int i = 0; i < 300; ++i) {
      t = (std::move(t) + 1.0f).to(i % 2 == 0 ? to : from);
    }
    auto v = t.to_data().to_vector<float>();
    REQUIRE(v[0] == seed + 300.0f);
    ++done;
  };
  std::thread a(pingpong, d0, d1, 0.0f), b(pingpong, d1, d0, 1000.0f);
  a.join();
  b.join();
  r.sync();
  REQUIRE(done == 2);
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
  REQUIRE(r.stats(d0).transfers_out + r.stats(d1).transfers_out == 600);
  REQUIRE(r.backend().allocated_bytes(d0) + r.backend().allocated_bytes(d1) == 0);
}

namespace {
/// mini's backend whose `add` waits for a gate, to hold a device's worker busy.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard lk(mu);
      open = true;
    }
    cv.notify_all();
  }
};
struct Gated : mini::Backend {
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  mini::Buf add(mini::Buf a, mini::Buf b) {
    gate->wait();
    return mini::Backend::add(std::move(a), std::move(b));
  }
};
}  // namespace

TEST_CASE("a producer far ahead of its device blocks on the bounded queue", "[async]") {
  Gated g;
  auto gate = g.gate;
  Router<Gated> r(g, {.execution = Execution::Async, .queue_capacity = 4});
  auto a = r.from_vector(std::vector<float>{1}, {1}, mini::Device{0});
  r.sync();
  std::atomic<int> submitted{0};
  std::thread producer([&] {
    auto t = a;
    for (int i = 0; i < 50; ++i) {
      t = t + a;
      ++submitted;
    }
    REQUIRE(t.to_data().to_vector<float>()[0] == 51.0f);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // One add runs (blocked in the gate), the queue holds 4 more tasks (adds and drops).
  REQUIRE(submitted.load() <= 6);
  gate->release();
  producer.join();
  REQUIRE(submitted.load() == 50);
}

TEST_CASE("submitting does not wait for the op to run", "[async]") {
  Gated g;
  auto gate = g.gate;
  Router<Gated> r(g, {.execution = Execution::Async});
  auto a = r.from_vector(std::vector<float>{2}, {2 - 1}, mini::Device{0});
  auto b = a + a;  // the worker is stuck in the gate; the call returned anyway
  REQUIRE(b.shape() == ferry::Shape{1});
  gate->release();
  REQUIRE(b.to_data().to_vector<float>()[0] == 4.0f);
}

TEST_CASE("a dropped tensor is freed at once on an idle device, after its readers on a busy one",
          "[async]") {
  Gated g;
  auto gate = g.gate;
  Router<Gated> r(g, {.execution = Execution::Async});
  const mini::Device d{0};
  auto a = r.from_vector(std::vector<float>{3}, {1}, d);
  auto b = r.from_vector(std::vector<float>{4}, {1}, d);
  r.sync();
  REQUIRE(r.stats(d).live_tensors == 2);
  b = ferry::Tensor<Gated>();             // the last copy: nothing queued, so freed in this thread
  REQUIRE(r.stats(d).live_tensors == 1);  // no sync needed
  auto first = a + a;                     // the worker now waits in the gate
  auto second = a + a;                    // queued behind it, reading `a`
  a = ferry::Tensor<Gated>();             // `a` must outlive `second`: its drop queues behind it
  gate->release();
  REQUIRE(second.to_data().to_vector<float>()[0] == 6.0f);
  r.sync();
  REQUIRE(r.stats(d).live_tensors == 2);  // first and second; `a` is gone
}

TEST_CASE("devices run in parallel: one device stuck does not hold up another", "[async]") {
  Gated g;
  auto gate = g.gate;
  Router<Gated> r(g, {.execution = Execution::Async});
  auto a = r.from_vector(std::vector<float>{1}, {1}, mini::Device{0});
  auto stuck = a + a;  // device 0's worker is now waiting in the gate
  auto other = r.from_vector(std::vector<float>{5}, {1}, mini::Device{1});
  REQUIRE(other.to_data().to_vector<float>()[0] == 5.0f);  // device 1 answers meanwhile
  gate->release();
  REQUIRE(stuck.to_data().to_vector<float>()[0] == 2.0f);
}

TEST_CASE("a failed op poisons its users, surfaces once at sync, and the device keeps going",
          "[async]") {
  Router<EigenCpu> r(EigenCpu(2), {.execution = Execution::Async});
  const CpuDevice d0{0}, d1{1};
  auto n = r.from_vector(std::vector<std::int64_t>{1, 2, 3}, {3}, d0);
  auto zero = r.zeros({3}, DType::i64, d0);
  auto bad = n % zero;
  auto worse = (bad * 2).to(d1);  // the failure travels with the move
  auto fine = n + 1;
  REQUIRE_THROWS_MATCHES(worse.to_data(), ferry::OpFailed,
                         Says("op 'remainder' on device cpu:0 failed"));
  REQUIRE(fine.to_data().to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 3, 4});
  REQUIRE_THROWS_AS(r.sync(d0), ferry::ValueError);
  REQUIRE_NOTHROW(r.sync(d0));                     // reported once
  REQUIRE_THROWS_AS(r.sync(d1), ferry::OpFailed);  // the move's arrival failed on d1
  {
    auto drop_them = std::move(bad);
    auto and_this = std::move(worse);
  }
  r.sync();
  REQUIRE(r.stats(d1).live_tensors == 0);
  REQUIRE(r.stats(d0).live_tensors == 3);  // n, zero, fine
}

TEST_CASE("destroying the router with work still queued neither hangs nor leaks", "[async]") {
  auto backend = EigenCpu(2);
  {
    Router<EigenCpu> r(backend, {.execution = Execution::Async, .queue_capacity = 64});
    auto x = r.random_normal({128, 128}, 3, CpuDevice{0});
    for (int i = 0; i < 20; ++i) x = tanh(matmul(x, x) * 0.01f).to(CpuDevice{i % 2 == 0 ? 1 : 0});
    // x, and the router, go out of scope with most of this still queued.
  }
  REQUIRE(backend.allocated_bytes(CpuDevice{0}) == 0);
  REQUIRE(backend.allocated_bytes(CpuDevice{1}) == 0);
}

namespace {
/// A [rows, cols] row-major matrix times a [cols, n] one, on the host.
std::vector<float> host_matmul(const std::vector<float>& a, const std::vector<float>& b, int rows,
                               int cols, int n) {
  std::vector<float> out(static_cast<std::size_t>(rows * n), 0.0f);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < cols; ++k)
        out[static_cast<std::size_t>(i * n + j)] +=
            a[static_cast<std::size_t>(i * cols + k)] * b[static_cast<std::size_t>(k * n + j)];
  return out;
}
}  // namespace

// docs/execution.md, "Threads": one router and its tensors shared by application threads. Run by
// CI under ThreadSanitizer (the tsan preset), whose FERRY_SERIAL_KERNELS build makes every
// synchronisation Ferry's own (std::mutex, std::condition_variable, futures) and so visible.
TEST_CASE("four threads share one router: ops and moves on two devices, every value checked",
          "[async]") {
  const auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode, .queue_capacity = 4});
  constexpr int threads = 4, rounds = 24;
  // Small integers in f32, so that every sum and product is exact and the host's loops give the
  // very bits the kernels must, whatever order they add in.
  std::vector<float> base(16);
  for (std::size_t k = 0; k < base.size(); ++k) base[k] = static_cast<float>(k % 5) - 2.0f;
  // One tensor every thread reads, computes with and moves: shared, so never written.
  const T shared = r.from_vector(base, {4, 4}, CpuDevice{0});
  // Catch2's assertions are not thread-safe: each thread writes down what went wrong, and this
  // thread checks it after the join.
  std::vector<std::vector<std::string>> wrong(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      auto& bad = wrong[static_cast<std::size_t>(t)];
      auto expect = [&](const char* what, int s, const auto& got, const auto& want) {
        if (got != want) bad.push_back(fmt::format("thread {} round {}: {} differs", t, s, what));
      };
      for (int i = 0; i < rounds; ++i) {
        const int s = t * rounds + i;
        const CpuDevice home{s % 2}, away{(s + 1) % 2};
        std::vector<float> x(16), y(16);
        for (std::size_t k = 0; k < 16; ++k) {
          x[k] = static_cast<float>((static_cast<int>(k) * 7 + s) % 9 - 4);
          y[k] = static_cast<float>((static_cast<int>(k) * 3 + 2 * s) % 7 - 3);
        }
        std::vector<std::int64_t> n{s, -s, 3, 1000000007LL * s};
        auto a = r.from_vector(x, {4, 4}, home);
        auto b = r.from_vector(y, {4, 4}, away).to(home);  // a move into `home`
        auto w = shared.to(home);  // every thread moves (a copy of) the shared tensor
        auto plus = a + b;
        auto prod = matmul(a, w);
        auto rows = sum(prod, 1);
        auto back = (plus * 2.0f).to(away);
        auto ints = (r.from_vector(n, {4}, away) * 3 + 1).to(home);
        auto total = sum(matmul(shared, shared));  // the shared tensor as an operand, on cpu:0
        if (i % 6 == 0) (void)r.stats(home);
        if (i % 8 == 0) r.sync(away);

        std::vector<float> want_plus(16), want_back(16), want_rows(4, 0.0f);
        for (std::size_t k = 0; k < 16; ++k) {
          want_plus[k] = x[k] + y[k];
          want_back[k] = 2.0f * want_plus[k];
        }
        const auto want_prod = host_matmul(x, base, 4, 4, 4);
        for (std::size_t k = 0; k < 16; ++k) want_rows[k / 4] += want_prod[k];
        float want_total = 0.0f;
        for (float v : host_matmul(base, base, 4, 4, 4)) want_total += v;
        std::vector<std::int64_t> want_ints;
        for (auto v : n) want_ints.push_back(v * 3 + 1);

        expect("a + b", s, plus.to_data().to_vector<float>(), want_plus);
        expect("matmul(a, shared)", s, prod.to_data().to_vector<float>(), want_prod);
        expect("sum(matmul, 1)", s, rows.to_data().to_vector<float>(), want_rows);
        expect("(a + b) * 2 moved", s, back.to_data().to_vector<float>(), want_back);
        expect("i64 * 3 + 1 moved", s, ints.to_data().to_vector<std::int64_t>(), want_ints);
        expect("sum(shared @ shared)", s, total.to_data().to_vector<float>(),
               std::vector<float>{want_total});
        expect("devices", s, std::vector<CpuDevice>{b.device(), w.device(), back.device()},
               std::vector<CpuDevice>{home, home, away});
      }
    });
  for (auto& th : pool) th.join();
  for (const auto& list : wrong)
    for (const auto& line : list) FAIL_CHECK(line);
  REQUIRE_NOTHROW(r.sync());
  REQUIRE(shared.to_data().to_vector<float>() == base);  // never written
  REQUIRE(r.stats(CpuDevice{0}).live_tensors == 1);      // only `shared` is left
  REQUIRE(r.stats(CpuDevice{1}).live_tensors == 0);
  REQUIRE(r.stats(CpuDevice{0}).failed_ops + r.stats(CpuDevice{1}).failed_ops == 0);
  REQUIRE(r.backend().allocated_bytes(CpuDevice{1}) == 0);
}

TEST_CASE("errors cross threads: readers and syncs catch what workers threw, many times over",
          "[async]") {
  // Each exception a worker throws ends on the caller's side, which frees it (detail::Handoff;
  // docs/execution.md). Under ThreadSanitizer, with no suppressions, this is the check: the
  // failed reads, failed moves and syncs below race the workers' own clean-up every iteration.
  Router<mini::Faulty> r(mini::Faulty{});
  const mini::Device m0{0}, m1{1};
  for (int i = 0; i < 200; ++i) {
    auto x = r.from_vector(std::vector<float>(13, 1.0f), {13}, m0);
    auto bad = x + x;  // Faulty's add throws std::runtime_error for [13]
    std::string seen;
    try {
      (void)bad.to_data();
    } catch (const ferry::OpFailed& e) {
      seen = e.what();  // reads the message the worker formatted
    }
    CHECK(seen.find("the adder overheated") != std::string::npos);
    auto moved = x.to(m1);  // Faulty's transfer throws for [13]: fails on both devices
    std::string sent, received;
    try {
      r.sync(m0);
    } catch (const ferry::Error& e) {
      sent = e.what();
    }
    try {
      (void)moved.to_data();
    } catch (const ferry::OpFailed& e) {
      received = e.what();
    }
    try {
      r.sync(m1);
    } catch (const ferry::OpFailed& e) {
      received += e.what();
    }
    CHECK(sent.find("the adder overheated") != std::string::npos);  // the first error of m0
    CHECK(received.find("the link is down") != std::string::npos);
  }
  REQUIRE_NOTHROW(r.sync());
  CHECK(r.stats(m0).live_tensors == 0);
}

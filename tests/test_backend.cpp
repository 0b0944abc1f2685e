// The Backend concept: a backend with only the required part works through the router; the
// ops it lacks raise ferry::Unsupported naming the op and the backend; quantized ops still work
// through QuantizedParts on the host.
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "matchers.hpp"
#include "mini_backend.hpp"

using ferry::DType;
using ferry_test::Says;

static_assert(ferry::Backend<mini::Backend>);
static_assert(ferry::Backend<ferry::EigenCpu>);
struct NotABackend {
  using Device = int;
};
static_assert(!ferry::Backend<NotABackend>);

// ferry/kernels.hpp: one concept per kernel name, the signature the router calls.
namespace kernel = ferry::kernel;
// EigenCpu has every kernel of docs/backend.md's tables, so each concept must hold for it: this
// checks the concepts against the calls the interpreter makes.
#define FERRY_T_HAS(n) static_assert(kernel::n<ferry::EigenCpu>, #n);
FERRY_UNARY_KINDS(FERRY_T_HAS)
FERRY_UNARY_COMPOSITE_KINDS(FERRY_T_HAS)
FERRY_PREDICATE_KINDS(FERRY_T_HAS)
FERRY_ARITH_KINDS(FERRY_T_HAS)
FERRY_ARITH_COMPOSITE_KINDS(FERRY_T_HAS)
FERRY_COMPARE_KINDS(FERRY_T_HAS)
FERRY_LOGICAL_KINDS(FERRY_T_HAS)
FERRY_LOGICAL_COMPOSITE_KINDS(FERRY_T_HAS)
FERRY_SCAN_KINDS(FERRY_T_HAS)
FERRY_SOFTMAX_KINDS(FERRY_T_HAS)
FERRY_SCATTER_KINDS(FERRY_T_HAS)
FERRY_SCATTER_ND_KINDS(FERRY_T_HAS)
#undef FERRY_T_HAS
static_assert(kernel::add_scalar<ferry::EigenCpu> && kernel::less_scalar<ferry::EigenCpu> &&
              kernel::prelu_scalar<ferry::EigenCpu> && kernel::clamp<ferry::EigenCpu> &&
              kernel::where<ferry::EigenCpu> && kernel::to_float<ferry::EigenCpu> &&
              kernel::to_int<ferry::EigenCpu> && kernel::to_bool<ferry::EigenCpu>);
static_assert(kernel::sum<ferry::EigenCpu> && kernel::mean<ferry::EigenCpu> &&
              kernel::argmax<ferry::EigenCpu> && kernel::argsort<ferry::EigenCpu> &&
              kernel::matmul<ferry::EigenCpu> && kernel::reshape<ferry::EigenCpu> &&
              kernel::permute<ferry::EigenCpu> && kernel::slice_assign<ferry::EigenCpu> &&
              kernel::cat<ferry::EigenCpu> && kernel::gather<ferry::EigenCpu> &&
              kernel::index_select<ferry::EigenCpu> && kernel::gather_nd<ferry::EigenCpu> &&
              kernel::repeat<ferry::EigenCpu>);
static_assert(kernel::float_full<ferry::EigenCpu> && kernel::bool_full<ferry::EigenCpu> &&
              kernel::int_arange<ferry::EigenCpu> && kernel::float_random<ferry::EigenCpu> &&
              kernel::int_random<ferry::EigenCpu>);
static_assert(kernel::quantize<ferry::EigenCpu> && kernel::quantize_dynamic<ferry::EigenCpu> &&
              kernel::dequantize<ferry::EigenCpu> && kernel::q_matmul<ferry::EigenCpu> &&
              kernel::q_to_device<ferry::EigenCpu>);
// mini has add and nothing else.
static_assert(kernel::add<mini::Backend> && !kernel::mul<mini::Backend> &&
              !kernel::add_scalar<mini::Backend> && !kernel::float_full<mini::Backend> &&
              !kernel::quantize<mini::Backend>);
/// The mistakes the concepts are for: a misspelled kernel, a parameter of the wrong type, a
/// result of the wrong kind. The router would take each as absent.
struct Mistaken : mini::Backend {
  static constexpr std::string_view name() { return "mistaken"; }
  mini::Buf mull(mini::Buf a, mini::Buf) { return a; }                  // misspelled mul
  mini::Buf sub_scalar(mini::Buf a, int) { return a; }                  // Scalar taken as int
  int equal(mini::Buf, mini::Buf) { return 0; }                         // not a handle
  mini::Buf cumsum(mini::Buf a, const std::vector<int>&) { return a; }  // no dim
};
static_assert(!kernel::mul<Mistaken> && !kernel::sub_scalar<Mistaken> && !kernel::equal<Mistaken> &&
              !kernel::cumsum<Mistaken>);
static_assert(kernel::add<Mistaken>);

TEST_CASE("a backend with only the required part runs its one kernel through the router") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  ferry::Router<mini::Backend> r(mini::Backend{}, {.execution = mode});
  auto a = r.from_vector(std::vector<float>{1, 2, 3}, {3}, mini::Device{0});
  auto b = r.from_vector(std::vector<float>{10, 20, 30}, {3}, mini::Device{0});
  auto c = a + b;
  REQUIRE(c.dtype() == DType::f32);
  REQUIRE(c.to_data().to_vector<float>() == std::vector<float>{11, 22, 33});
  auto moved = c.to(mini::Device{1});
  REQUIRE(moved.to_data().to_vector<float>() == std::vector<float>{11, 22, 33});
  REQUIRE(r.stats(mini::Device{1}).transfers_in == 1);
}

TEST_CASE("an op the backend lacks raises Unsupported naming the op and the backend") {
  ferry::Router<mini::Backend> r(mini::Backend{}, {.execution = ferry::Execution::Inline});
  auto a = r.from_vector(std::vector<float>{1, 2, 3}, {3}, mini::Device{0});
  REQUIRE_THROWS_MATCHES(a * a, ferry::Unsupported,
                         Says("backend 'mini' does not implement 'mul'"));
  REQUIRE_THROWS_MATCHES(ferry::exp(a), ferry::Unsupported, Says("'exp'"));
  REQUIRE_THROWS_MATCHES(r.zeros({2}, DType::f32, mini::Device{0}), ferry::Unsupported,
                         Says("'float_full'"));
  // Nothing was lost: a is intact and the router still works.
  REQUIRE((a + a).to_data().to_vector<float>() == std::vector<float>{2, 4, 6});
  REQUIRE(r.stats(mini::Device{0}).live_tensors == 1);
}

TEST_CASE("a missing kernel is an Unsupported at the call that records the op, in both modes") {
  for (auto mode : {ferry::Execution::Inline, ferry::Execution::Async}) {
    ferry::Router<mini::Backend> r(mini::Backend{}, {.execution = mode});
    auto a = r.from_vector(std::vector<float>{1, 2}, {2}, mini::Device{0});
    REQUIRE_THROWS_MATCHES(a * a, ferry::Unsupported,
                           Says("[ferry.unsupported] backend 'mini' does not implement 'mul'"));
    REQUIRE_THROWS_MATCHES(a + 1.0f, ferry::Unsupported, Says("'add_scalar'"));
    REQUIRE_THROWS_MATCHES(ferry::cumsum(a, 0), ferry::Unsupported, Says("'cumsum'"));
    REQUIRE_THROWS_MATCHES(r.arange(0, 4, 1, DType::i32, mini::Device{0}), ferry::Unsupported,
                           Says("'int_arange'"));
    r.sync();  // nothing was queued, so nothing is left to report
    REQUIRE((a + a).to_data().to_vector<float>() == std::vector<float>{2, 4});
    r.sync();  // the sum's Drop, queued in async mode
    REQUIRE(r.stats(mini::Device{0}).live_tensors == 1);
  }
}

// detail::missing_kernel (asked at the call) against the interpreter (which calls the kernel):
// on a backend with one kernel, in async mode, each op below either raises Unsupported at the
// call or runs with no error at sync(). One that passed the call and then failed at sync()
// would mean the two disagree on a kernel's signature.
TEST_CASE("the kernel check at the call agrees with the interpreter on every op family") {
  using T = ferry::Tensor<mini::Backend>;
  ferry::Router<mini::Backend> r(mini::Backend{}, {.execution = ferry::Execution::Async});
  const mini::Device d{0};
  auto f = r.from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}, d);
  auto i = r.from_vector(std::vector<std::int64_t>{0, 1, 1, 0}, {2, 2}, d);
  auto i1 = r.from_vector(std::vector<std::int64_t>{1, 0}, {2}, d);
  auto m = r.from_vector(std::vector<bool>{true, false, false, true}, {2, 2}, d);
  const std::vector<std::pair<const char*, std::function<T()>>> ops{
      {"add", [&] { return f + f; }},
      {"mul", [&] { return f * f; }},
      {"add_scalar", [&] { return f + 1.0f; }},
      {"lt", [&] { return f < f; }},
      {"exp", [&] { return ferry::exp(f); }},
      {"isnan", [&] { return ferry::isnan(f); }},
      {"neg", [&] { return -i; }},
      {"clamp", [&] { return ferry::clamp(f, 0, 1); }},
      {"where", [&] { return ferry::where(m, f, f); }},
      {"cast", [&] { return ferry::cast(f, DType::i32); }},
      {"sum", [&] { return ferry::sum(f, 0); }},
      {"argmax", [&] { return ferry::argmax(i, 1); }},
      {"cumsum", [&] { return ferry::cumsum(f, 1); }},
      {"softmax", [&] { return ferry::softmax(f, 1); }},
      {"argsort", [&] { return ferry::argsort(f, 1); }},
      {"matmul", [&] { return ferry::matmul(f, f); }},
      {"reshape", [&] { return ferry::reshape(f, {4}); }},
      {"permute",
       [&] {
         return ferry::permute(f, {1, 0});
       }},
      {"flip", [&] { return ferry::flip(f, {0}); }},
      {"expand",
       [&] {
         return ferry::expand(i1, {2, 2});
       }},
      {"slice",
       [&] {
         return ferry::slice(f, {{0, 1, 1}});
       }},
      {"repeat",
       [&] {
         return ferry::repeat(f, {1, 2});
       }},
      {"cat",
       [&] {
         return ferry::cat({f, f}, 0);
       }},
      {"gather", [&] { return ferry::gather(f, 1, i); }},
      {"index_select", [&] { return ferry::index_select(f, 0, i1); }},
      {"scatter", [&] { return ferry::scatter(f, 1, i, f); }},
      {"zeros", [&] { return r.zeros({2}, DType::f32, d); }},
      {"ones_i", [&] { return r.ones({2}, DType::i64, d); }},
  };
  std::size_t ran = 0, refused = 0;
  for (const auto& [what, op] : ops) {
    INFO(what);
    try {
      auto t = op();
      ++ran;
    } catch (const ferry::Unsupported& e) {
      ++refused;
      REQUIRE_THAT(std::string(e.what()), Catch::Contains("backend 'mini' does not implement"));
    }
    REQUIRE_NOTHROW(r.sync());  // whatever passed the call had its kernel
  }
  REQUIRE(ran >= 1);       // add
  REQUIRE(refused >= 20);  // the rest, on a backend whose only kernel is add
  REQUIRE(r.stats(d).live_tensors == 4);
}

// A backend whose memory runs out: its add and its transfers into device 1 throw
// std::bad_alloc, as an allocator does.
struct Starved : mini::Backend {
  mini::Buf add(mini::Buf, mini::Buf) { throw std::bad_alloc(); }
  mini::Buf float_to_device(mini::Buf b, const mini::Device& d) {
    if (d.index == 1) throw std::bad_alloc();
    return mini::Backend::float_to_device(std::move(b), d);
  }
};
static_assert(ferry::Backend<Starved>);

TEST_CASE("std::bad_alloc in a kernel or a transfer becomes OutOfMemory naming op and device") {
  const auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  ferry::Router<Starved> r(Starved{}, {.execution = mode});
  auto a = r.from_vector(std::vector<float>{1, 2}, {2}, mini::Device{0});
  const auto add_says = Says("add: device mini:0 is out of memory making t");
  const auto move_says = Says("to_device: device mini:1 is out of memory receiving t");
  if (mode == ferry::Execution::Inline) {
    REQUIRE_THROWS_MATCHES(a + a, ferry::OutOfMemory, add_says && Says(":f32[2] (8 bytes)"));
    REQUIRE_THROWS_MATCHES(a.to(mini::Device{1}), ferry::OutOfMemory,
                           move_says && Says(":f32[2] (8 bytes) from mini:0"));
  } else {
    auto sum = a + a;
    REQUIRE_THROWS_MATCHES(sum.to_data(), ferry::OpFailed, Says("op 'add'") && add_says);
    REQUIRE_THROWS_MATCHES(r.sync(), ferry::OutOfMemory, add_says);
    auto moved = a.to(mini::Device{1});
    REQUIRE_THROWS_MATCHES(moved.to_data(), ferry::OpFailed, move_says);
    REQUIRE_THROWS_MATCHES(r.sync(), ferry::OutOfMemory, move_says);
  }
  // Nothing was lost: a reads back, and both devices still take tensors.
  REQUIRE(a.to_data().to_vector<float>() == std::vector<float>{1, 2});
  auto b = r.from_vector(std::vector<float>{5}, {1}, mini::Device{1});
  REQUIRE(b.to(mini::Device{0}).to_data().to_vector<float>() == std::vector<float>{5});
  REQUIRE(r.stats(mini::Device{0}).failed_ops >= 1);
}

TEST_CASE("quantized ops work on a backend without quantized kernels, through QuantizedParts") {
  auto mode = GENERATE(ferry::Execution::Inline, ferry::Execution::Async);
  ferry::Router<mini::Backend> r(mini::Backend{}, {.execution = mode});
  using namespace ferry::quant;
  std::vector<float> x{-1.0f, -0.5f, 0.0f, 0.25f, 0.5f, 1.0f};
  auto t = r.from_vector(x, {2, 3}, mini::Device{0});
  auto q = ferry::quantize(t, Scheme::of(ValueType::i8), {1.0f / 127});
  auto q1 = q.to(mini::Device{1});
  REQUIRE(q1.to_parts() == q.to_parts());
  auto back = ferry::dequantize(q1).to_data().to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float want = std::nearbyint(x[i] * 127.0f) / 127.0f;
    REQUIRE(back[i] == Approx(static_cast<double>(want)).margin(1e-6));
  }
  auto flipped = ferry::dequantize(ferry::q_permute(q1, {1, 0}));
  REQUIRE(flipped.shape() == ferry::Shape{3, 2});
  REQUIRE(flipped.to_data().to_vector<float>()[1] == Approx(static_cast<double>(back[3])));
}

// Router and Tensor semantics: ownership (read-only vs read-write), drops, moves between
// devices with byte accounting, stats, the IR as printed, and errors that leave everything
// else intact.
#include <catch2/catch.hpp>
#include <ferry/backends/multi.hpp>
#include <ferry/eigen.hpp>
#include <ferry/ferry.hpp>
#include <type_traits>

#include "matchers.hpp"
#include "mini_backend.hpp"

using ferry::CpuDevice;
using ferry::DType;
using ferry::EigenCpu;
using ferry::Execution;
using ferry::Router;
using ferry_test::Says;

namespace {
constexpr CpuDevice d0{0}, d1{1};
std::vector<float> vals(const ferry::Tensor<EigenCpu>& t) { return t.to_data().to_vector<float>(); }
}  // namespace

TEST_CASE("copies share one count and moving a Tensor sends no op") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode});
  auto a = r.from_vector(std::vector<float>{1, 2}, {2}, d0);
  r.sync();
  const auto ops = r.stats(d0).ops;
  {
    auto b = a;
    REQUIRE(a.use_count() == 2);
    auto c = std::move(b);
    REQUIRE(a.use_count() == 2);
    REQUIRE_FALSE(b.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  }
  r.sync();
  REQUIRE(r.stats(d0).ops == ops);  // no op for copies, moves or dropping a non-last copy
  REQUIRE(a.use_count() == 1);
}

TEST_CASE("an operand held once is passed read-write and its buffer is reused") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(1), {.execution = mode});
  auto a = r.from_vector(std::vector<float>{1, 2, 3}, {3}, d0);
  auto b = r.from_vector(std::vector<float>{10, 20, 30}, {3}, d0);
  r.sync();
  const auto before = r.backend().allocations(d0);
  auto c = std::move(a) + b;  // a's only copy: its buffer becomes c's
  auto d = exp(std::move(c) * 0.0f);
  REQUIRE(vals(d) == std::vector<float>{1, 1, 1});
  r.sync();
  REQUIRE(r.backend().allocations(d0) == before);  // no new buffer for +, * or exp
  REQUIRE(vals(b) == std::vector<float>{10, 20, 30});
}

TEST_CASE("a shared operand is passed read-only and other holders see it unchanged") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(1), {.execution = mode});
  auto a = r.from_vector(std::vector<float>{1, 2, 3}, {3}, d0);
  auto keep = a;
  r.sync();
  const auto before = r.backend().allocations(d0);
  auto c = std::move(a) + 1.0f;  // moved, but `keep` still shares it: read-only
  REQUIRE(vals(c) == std::vector<float>{2, 3, 4});
  REQUIRE(vals(keep) == std::vector<float>{1, 2, 3});
  r.sync();
  REQUIRE(r.backend().allocations(d0) == before + 1);
}

TEST_CASE("the registries return to zero tensors and zero bytes when a scope ends") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode});
  {
    auto a = r.random_uniform({64, 64}, 7, d0);
    auto b = matmul(a, a) + a;
    auto c = b.to(d1);
    auto s = sum(c, 0, true);
    auto q = ferry::quantize_dynamic(
        a, ferry::quant::Scheme::of(ferry::quant::ValueType::i4).per_block({32}).packed_u8());
    auto q1 = q.to(d1);
    r.sync();
    REQUIRE(r.stats(d0).live_tensors == 3);
    REQUIRE(r.stats(d1).live_tensors == 3);
    REQUIRE(r.backend().allocated_bytes(d1) > 0);
  }
  r.sync();
  for (auto d : {d0, d1}) {
    const auto st = r.stats(d);
    REQUIRE(st.live_tensors == 0);
    REQUIRE(st.live_bytes == 0);
    REQUIRE(r.backend().allocated_bytes(d) == 0);
  }
}

TEST_CASE("a move between devices copies the data and accounts bytes on both sides") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode});
  std::vector<double> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * static_cast<double>(i);
  auto a = r.from_vector(v, {10, 100}, d0);
  auto b = a.to(d1);
  REQUIRE(b.device() == d1);
  REQUIRE(b.shape() == ferry::Shape{10, 100});
  REQUIRE(b.to_data().to_vector<double>() == v);
  r.sync();
  REQUIRE(r.stats(d0).bytes_out == 8000);
  REQUIRE(r.stats(d1).bytes_in == 8000);
  REQUIRE(r.stats(d0).transfers_out == 1);
  REQUIRE(r.stats(d1).transfers_in == 1);
  REQUIRE(r.backend().allocated_bytes(d0) == 8000);  // a is still there: it was shared
  REQUIRE(r.backend().allocated_bytes(d1) == 8000);
  SECTION("moving the last copy frees the source") {
    auto c = std::move(a).to(d1);
    r.sync();
    REQUIRE(r.backend().allocated_bytes(d0) == 0);
    REQUIRE(r.stats(d0).live_tensors == 0);
    REQUIRE(c.to_data().to_vector<double>() == v);
  }
  SECTION("moving to the tensor's own device is free") {
    auto same = a.to(d0);
    REQUIRE(same.id() == a.id());
  }
}

TEST_CASE("TensorData gives typed spans and Eigen views, and checks its byte count") {
  auto d = ferry::TensorData::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  REQUIRE(d.values<float>()[4] == 5.0f);
  REQUIRE(d.matrix<float>()(1, 0) == 4.0f);
  REQUIRE(d.matrix<float>().rows() == 2);
  auto v = ferry::TensorData::from(std::vector<std::int32_t>{7, 8});
  REQUIRE(v.vector<std::int32_t>()(1) == 8);
  REQUIRE_THROWS_MATCHES(d.values<double>(), ferry::DTypeError, Says("is f32, not f64"));
  REQUIRE_THROWS_MATCHES(d.vector<float>(), ferry::ShapeError, Says("[2, 3] is not 1-D"));
  REQUIRE_THROWS_MATCHES(
      ferry::TensorData(ferry::Shape{2, 2}, DType::f32, std::vector<std::byte>(12)),
      ferry::ShapeError, Says("shape [2, 2] of f32 needs 16 bytes (4 elements x 4 bytes), got 12"));
}

TEST_CASE("every op prints as readable IR") {
  using namespace ferry;
  TensorRef a(1, Shape{2, 3}, DType::f32, Access::ReadWrite), b(2, Shape{3}, DType::f32);
  TensorRef out(3, Shape{2, 3}, DType::f32);
  CHECK(fmt::format("{}", Op(op::Binary{BinaryKind::add, a, b, out})) ==
        "add(t1:f32[2, 3] rw, t2:f32[3]) -> t3:f32[2, 3]");
  CHECK(fmt::format("{}", Op(op::Reduce{ReduceKind::sum, b, 0, true,
                                        TensorRef(4, Shape{1}, DType::f32)})) ==
        "sum(t2:f32[3], dim 0, keepdim) -> t4:f32[1]");
  CHECK(fmt::format("{}", Op(op::ToDevice{b, 0, 1, TensorRef(5, Shape{3}, DType::f32)})) ==
        "to_device(t2:f32[3], dev 0 -> dev 1) -> t5:f32[3]");
  CHECK(fmt::format("{}", Op(op::BinaryScalar{BinaryKind::mul, b, Scalar(2.5), out})) ==
        "mul(t2:f32[3], 2.5) -> t3:f32[2, 3]");
  CHECK(fmt::format("{}", Op(op::Drop{b})) == "drop(t2:f32[3])");
}

TEST_CASE("bad input throws a typed error and leaves the router and other tensors intact") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode});
  auto a = r.from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, d0);
  auto i = r.from_vector(std::vector<std::int32_t>{1, 2}, {2}, d0);
  auto far = r.from_vector(std::vector<float>{1, 2, 3}, {3}, d1);
  r.sync();
  const auto live0 = r.stats(d0).live_tensors;

  REQUIRE_THROWS_MATCHES(a + r.zeros({4}, DType::f32, d0), ferry::ShapeError,
                         Says("add: shapes [2, 3] and [4] cannot be broadcast"));
  REQUIRE_THROWS_MATCHES(a + i, ferry::DTypeError,
                         Says("add: operand dtypes differ (f32 and i32)"));
  REQUIRE_THROWS_MATCHES(sum(a, 2), ferry::IndexError,
                         Says("sum: axis 2 is out of range for shape [2, 3] (rank 2)"));
  REQUIRE_THROWS_MATCHES(a + far, ferry::DeviceError,
                         Says("add: operands are on different devices (cpu:0 and cpu:1)"));
  REQUIRE_THROWS_MATCHES(a.to(CpuDevice{7}), ferry::DeviceError,
                         Says("device cpu:7 is not one of this router's devices [cpu:0, cpu:1]"));
  REQUIRE_THROWS_MATCHES(
      r.from_data(ferry::TensorData(ferry::Shape{3}, DType::f32, std::vector<std::byte>(8)), d0),
      ferry::ShapeError, Says("needs 12 bytes"));
  auto gone = r.ones({2}, DType::f32, d0);
  auto taken = std::move(gone);
  REQUIRE_THROWS_MATCHES(gone + taken, ferry::HandleError,  // NOLINT(bugprone-use-after-move)
                         Says("this Tensor was moved from"));
  REQUIRE_THROWS_MATCHES(exp(i), ferry::DTypeError, Says("exp: needs float operands, got i32"));

  // Nothing was lost, nothing leaked, and the router still runs ops.
  REQUIRE(vals(a) == std::vector<float>{1, 2, 3, 4, 5, 6});
  REQUIRE(vals(far) == std::vector<float>{1, 2, 3});
  REQUIRE(vals(a * 2.0f) == std::vector<float>{2, 4, 6, 8, 10, 12});
  r.sync();
  REQUIRE(r.stats(d0).live_tensors == live0 + 1);  // + `taken`
}

TEST_CASE("a failing kernel throws at the call inline, and at the read and sync in async mode") {
  SECTION("inline") {
    Router<EigenCpu> r(EigenCpu(1), {.execution = Execution::Inline});
    auto x = r.from_vector(std::vector<std::int32_t>{4, 5}, {2}, d0);
    auto z = r.zeros({2}, DType::i32, d0);
    REQUIRE_THROWS_AS(x / z, ferry::ValueError);
    REQUIRE(x.to_data().to_vector<std::int32_t>() == std::vector<std::int32_t>{4, 5});
  }
  SECTION("async") {
    Router<EigenCpu> r(EigenCpu(1), {.execution = Execution::Async});
    auto x = r.from_vector(std::vector<std::int32_t>{4, 5}, {2}, d0);
    auto z = r.zeros({2}, DType::i32, d0);
    auto q = x / z;
    auto later = q + 1;  // uses the failed result: fails with the original op's message
    REQUIRE_THROWS_MATCHES(later.to_data(), ferry::OpFailed,
                           Says("op 'div' on device cpu:0 failed"));
    REQUIRE_THROWS_AS(r.sync(), ferry::ValueError);
    REQUIRE(x.to_data().to_vector<std::int32_t>() == std::vector<std::int32_t>{4, 5});
  }
}

static_assert(!std::is_copy_constructible_v<mini::MoveOnly>);
static_assert(ferry::Backend<mini::MoveOnly>);

TEST_CASE("a move-only backend is moved into the router, by every constructor") {
  const auto mode = GENERATE(Execution::Inline, Execution::Async);
  const mini::Device m0{0}, m1{1};
  auto works = [&](auto& r, std::size_t devices) {
    REQUIRE(r.devices().size() == devices);
    REQUIRE(r.backend().context != nullptr);
    REQUIRE(*r.backend().context == 42);
    auto a = r.from_vector(std::vector<float>{1, 2}, {2}, m0);
    REQUIRE((a + a).to_data().template to_vector<float>() == std::vector<float>{2, 4});
  };
  {
    Router<mini::MoveOnly> r(mini::MoveOnly{}, {.execution = mode});  // every device it lists
    works(r, 2);
    REQUIRE((r.from_vector(std::vector<float>{3}, {1}, m0).to(m1).to_data().to_vector<float>()) ==
            std::vector<float>{3});
  }
  {
    mini::MoveOnly b;
    Router<mini::MoveOnly> r(std::move(b), std::vector<mini::Device>{m0}, {.execution = mode});
    REQUIRE(b.context == nullptr);  // NOLINT(bugprone-use-after-move): it was moved, not copied
    works(r, 1);
  }
  {
    using Both = ferry::Multi<EigenCpu, mini::MoveOnly>;
    static_assert(!std::is_copy_constructible_v<Both>);
    Router<Both> r(Both(EigenCpu(1), mini::MoveOnly{}), {.execution = mode});
    REQUIRE(r.devices().size() == 3);
    REQUIRE(*r.backend().member<1>().context == 42);
    auto a = r.from_vector(std::vector<float>{1, 2}, {2}, Both::Device{d0});
    REQUIRE((a.to(Both::Device{m0}) + a.to(Both::Device{m1}).to(Both::Device{m0}))
                .to_data()
                .to_vector<float>() == std::vector<float>{2, 4});
  }
}

TEST_CASE("cat takes a braced list, as cat({a, b}, 0)") {
  const auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(1), {.execution = mode});
  auto a = r.from_vector(std::vector<float>{1, 2, 3}, {1, 3}, d0);
  auto b = r.from_vector(std::vector<float>{4, 5, 6}, {1, 3}, d0);
  auto c = ferry::cat({a, b}, 0);
  REQUIRE(c.shape() == ferry::Shape{2, 3});
  REQUIRE(vals(c) == std::vector<float>{1, 2, 3, 4, 5, 6});
  // A braced list has no namespace for ADL to find: the call is spelled ferry::cat.
  REQUIRE(vals(ferry::cat({a, b, a}, 1)) == std::vector<float>{1, 2, 3, 4, 5, 6, 1, 2, 3});
  REQUIRE(vals(a) == std::vector<float>{1, 2, 3});  // the list's tensors are read, not reused
  REQUIRE_THROWS_MATCHES(ferry::cat({a, r.zeros({3}, DType::f32, d0)}, 0), ferry::ShapeError,
                         Says("cat: shapes [1, 3] and [3] differ in rank"));
}

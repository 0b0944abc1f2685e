// HandleRegistry: register, read-only and read-write takes, drops, kinds, byte counts, and the
// errors that name the tensor, the op and the device.
#include <catch2/catch.hpp>
#include <map>
#include <random>

#include "matchers.hpp"
#include "mini_backend.hpp"

using ferry::Access;
using ferry::DType;
using ferry::Kind;
using ferry::TensorRef;
using ferry_test::Says;

namespace {
mini::Buf buf(std::vector<double> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return {std::make_shared<std::vector<double>>(std::move(v)), ferry::Shape{n}, DType::f32};
}
TensorRef ro(ferry::TensorId id) { return TensorRef(id, {}, DType::f32, Access::ReadOnly); }
TensorRef rw(ferry::TensorId id) { return TensorRef(id, {}, DType::f32, Access::ReadWrite); }
}  // namespace

TEST_CASE("a read-only take copies the shared handle and keeps the entry") {
  ferry::HandleRegistry<mini::Backend> reg("mini:0");
  reg.put<Kind::Float>(7, buf({1, 2}), 8);
  auto h = reg.take<Kind::Float>(ro(7), "add");
  REQUIRE(reg.contains(7));
  REQUIRE(reg.size() == 1);
  REQUIRE(reg.bytes() == 8);
  REQUIRE(h.v.use_count() == 2);  // shared with the registry's copy
}

TEST_CASE("a read-write take moves the handle out and frees the entry") {
  ferry::HandleRegistry<mini::Backend> reg("mini:0");
  reg.put<Kind::Float>(7, buf({1, 2}), 8);
  auto h = reg.take<Kind::Float>(rw(7), "add");
  REQUIRE(h.v.use_count() == 1);
  REQUIRE_FALSE(reg.contains(7));
  REQUIRE(reg.size() == 0);
  REQUIRE(reg.bytes() == 0);
  SECTION("a second take names the tensor, the op and the device") {
    REQUIRE_THROWS_MATCHES(reg.take<Kind::Float>(ro(7), "mul"), ferry::HandleError,
                           Says("op 'mul' needs tensor 7 but device mini:0 does not hold it"));
  }
}

TEST_CASE("taking a handle of the wrong kind is a HandleError naming both kinds") {
  ferry::HandleRegistry<mini::Backend> reg("mini:1");
  reg.put<Kind::Int>(3, buf({1}), 4);
  REQUIRE_THROWS_MATCHES(reg.take<Kind::Float>(ro(3), "exp"), ferry::HandleError,
                         Says("op 'exp' wants a Float handle for tensor 3 on device mini:1, "
                              "but it holds a Int handle"));
  REQUIRE(reg.find(3) == Kind::Int);  // untouched
  REQUIRE(reg.find(4) == std::nullopt);
}

TEST_CASE("registering an id twice is refused and the first handle stays") {
  ferry::HandleRegistry<mini::Backend> reg("mini:0");
  reg.put<Kind::Bool>(1, buf({1}), 1);
  REQUIRE_THROWS_MATCHES(reg.put<Kind::Bool>(1, buf({0}), 1), ferry::HandleError,
                         Says("tensor 1 is already registered on device mini:0"));
  REQUIRE(reg.take<Kind::Bool>(ro(1), "read").v->at(0) == 1.0);
  REQUIRE(reg.bytes() == 1);
}

TEST_CASE("quantized handles are taken and dropped like the other kinds") {
  ferry::HandleRegistry<mini::Backend> reg("mini:0");
  auto parts = std::make_shared<const ferry::quant::QuantizedParts>();
  reg.put<Kind::Quantized>(9, parts, 5);
  {
    auto shared = reg.take<Kind::Quantized>(ro(9), "to_device");
    REQUIRE(shared.get() == parts.get());
    REQUIRE(reg.contains(9));
  }
  auto owned = reg.take<Kind::Quantized>(rw(9), "to_device");
  REQUIRE(owned.get() == parts.get());
  REQUIRE_FALSE(reg.contains(9));
  REQUIRE_FALSE(reg.drop(9));  // nothing left: a normal no-op
}

TEST_CASE("a failed tensor reports the original error to its users until dropped") {
  ferry::HandleRegistry<mini::Backend> reg("mini:0");
  reg.mark_failed(5, "op 'div' on device mini:0 failed: division by zero");
  REQUIRE_THROWS_MATCHES(reg.take<Kind::Float>(ro(5), "exp"), ferry::OpFailed,
                         Says("op 'exp' cannot use tensor 5 on device mini:0: op 'div' on "
                              "device mini:0 failed: division by zero"));
  REQUIRE(reg.failed_size() == 1);
  reg.drop(5);
  REQUIRE(reg.failed_size() == 0);
}

TEST_CASE("drops return the byte count to zero") {
  ferry::HandleRegistry<mini::Backend> reg("mini:0");
  for (ferry::TensorId i = 1; i <= 100; ++i) reg.put<Kind::Float>(i, buf({1, 2, 3}), 12);
  REQUIRE(reg.bytes() == 1200);
  for (ferry::TensorId i = 1; i <= 100; ++i) REQUIRE(reg.drop(i));
  REQUIRE(reg.size() == 0);
  REQUIRE(reg.bytes() == 0);
}

TEST_CASE("the registry agrees with a std::map over a long random run of puts, takes and drops") {
  // The index is open addressing with backward-shift deletion and swap-with-last entries: every
  // erase moves other entries' slots and positions, so each step is checked against a plain
  // map, and every live handle must still hold the value it was registered with.
  const auto id_set = GENERATE(0, 1, 2);
  CAPTURE(id_set);
  std::mt19937_64 rng(42 + id_set);
  std::vector<ferry::TensorId> ids;
  for (ferry::TensorId i = 1; i <= 3000; ++i) {
    if (id_set == 0) ids.push_back(i);          // consecutive, as a router makes
    if (id_set == 1) ids.push_back(i << 40);    // equal low bits
    if (id_set == 2) ids.push_back(rng() | 1);  // anywhere in 64 bits
  }
  ferry::HandleRegistry<mini::Backend> reg("mini:0");
  std::map<ferry::TensorId, double> ref;
  std::size_t ref_bytes = 0;
  auto value_of = [](ferry::TensorId id) { return static_cast<double>(id % 1000003); };
  for (int step = 0; step < 40000; ++step) {
    const ferry::TensorId id = ids[rng() % ids.size()];
    const auto it = ref.find(id);
    switch (rng() % 4) {
      case 0:
      case 1:  // put (twice as often, so the table grows through several sizes)
        if (it == ref.end()) {
          reg.put<Kind::Float>(id, buf({value_of(id)}), id % 7 + 1);
          ref.emplace(id, value_of(id));
          ref_bytes += id % 7 + 1;
        } else {
          REQUIRE_THROWS_AS(reg.put<Kind::Float>(id, buf({0}), 1), ferry::HandleError);
        }
        break;
      case 2:  // drop
        REQUIRE(reg.drop(id) == (it != ref.end()));
        if (it != ref.end()) {
          ref_bytes -= id % 7 + 1;
          ref.erase(it);
        }
        break;
      default:  // take, read-only or read-write
        if (it == ref.end()) {
          REQUIRE_THROWS_AS(reg.take<Kind::Float>(ro(id), "t"), ferry::HandleError);
        } else if (rng() % 2 == 0) {
          REQUIRE(reg.take<Kind::Float>(ro(id), "t").v->at(0) == it->second);
        } else {
          REQUIRE(reg.take<Kind::Float>(rw(id), "t").v->at(0) == it->second);
          ref_bytes -= id % 7 + 1;
          ref.erase(it);
        }
    }
    REQUIRE(reg.size() == ref.size());
    REQUIRE(reg.bytes() == ref_bytes);
  }
  for (const auto id : ids) REQUIRE(reg.contains(id) == ref.contains(id));
  for (const auto& [id, v] : ref) REQUIRE(reg.take<Kind::Float>(ro(id), "t").v->at(0) == v);
  for (const auto& [id, v] : ref) REQUIRE(reg.drop(id));
  REQUIRE(reg.size() == 0);
  REQUIRE(reg.bytes() == 0);
}

TEST_CASE("a Shape of any rank copies, moves and compares by its dims") {
  const ferry::Shape small{2, 3, 4};
  const ferry::Shape big{1, 2, 3, 4, 5, 6, 7, 8};  // above the inline rank: dims on the heap
  REQUIRE(ferry::Shape::inline_rank == 6);
  REQUIRE(big.rank() == 8);
  REQUIRE(big.numel() == 40320);
  REQUIRE(big.to_vector() == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
  REQUIRE(big.strides() == std::vector<std::int64_t>{40320, 20160, 6720, 1680, 336, 56, 8, 1});
  ferry::Shape a = big;
  REQUIRE(a == big);
  a[7] = 9;
  REQUIRE(a != big);  // a deep copy
  REQUIRE(big[7] == 8);
  ferry::Shape b = std::move(a);
  REQUIRE(b[7] == 9);
  REQUIRE(a.rank() == 0);  // NOLINT(bugprone-use-after-move): moved-from is empty
  b = small;
  REQUIRE(b == small);
  REQUIRE(b != big);
  b = big;
  REQUIRE(b == big);
  REQUIRE(fmt::format("{}", big) == "[1, 2, 3, 4, 5, 6, 7, 8]");
  REQUIRE(ferry::Shape{} == ferry::Shape(std::vector<std::int64_t>{}));
  REQUIRE(ferry::Shape{}.numel() == 1);
  REQUIRE_THROWS_MATCHES(big.axis(8, "sum"), ferry::IndexError,
                         Says("sum: axis 8 is out of range for shape [1, 2, 3, 4, 5, 6, 7, 8]"));
}

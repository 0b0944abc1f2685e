// Bad-input catalogue, handles: default-constructed and moved-from Tensors, and (through
// with_interpreter, as a backend author or a test would) registry lookups of ids that are not
// there, of the wrong kind, or registered twice.
#include "catalogue/common.hpp"

namespace handles {
using namespace catalogue;
using ferry::HandleError;
using ferry::TensorRef;

/// Runs one op directly on `d`'s interpreter.
inline void execute(World& w, CpuDevice d, ferry::Op o) {
  w.r.with_interpreter(d, [&](auto& in) { in.execute(o); });
}
}  // namespace handles

using namespace handles;

TEST_CASE("handles: add with a default-constructed Tensor", "[handles]") {
  World w(CATALOGUE_MODES);
  {
    T none;
    REQUIRE_RAISES(w.get("f32") + none, HandleError,
                   "add: this Tensor was moved from (or default constructed) and names no tensor");
  }
  w.check_intact();
}

TEST_CASE("handles: to_data of a default-constructed Tensor", "[handles]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(T{}.to_data(), HandleError, "to_data: this Tensor was moved from");
  w.check_intact();
}

TEST_CASE("handles: shape() of a default-constructed Tensor", "[handles]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(T{}.shape(), HandleError, "shape: this Tensor was moved from");
  w.check_intact();
}

TEST_CASE("handles: exp of a Tensor after std::move", "[handles]") {
  World w(CATALOGUE_MODES);
  {
    T a = w.get("f32");
    T b = std::move(a);
    REQUIRE_RAISES(exp(a), HandleError,  // NOLINT(bugprone-use-after-move)
                   "exp: this Tensor was moved from");
    REQUIRE(b.to_data().to_vector<float>() == kF32);
  }
  w.check_intact();
}

TEST_CASE("handles: sum of a Tensor after it was moved into an op", "[handles]") {
  World w(CATALOGUE_MODES);
  {
    T a = w.r.from_vector(kF32, {2, 3}, CpuDevice{0});
    auto y = exp(std::move(a));
    REQUIRE_RAISES(sum(a), HandleError,  // NOLINT(bugprone-use-after-move)
                   "sum: this Tensor was moved from");
  }
  w.check_intact();
}

TEST_CASE("handles: to_data of a Tensor after it was moved into to()", "[handles]") {
  World w(CATALOGUE_MODES);
  {
    T a = w.r.from_vector(kF32, {2, 3}, CpuDevice{0});
    auto b = std::move(a).to(CpuDevice{1});
    REQUIRE_RAISES(a.to_data(), HandleError,  // NOLINT(bugprone-use-after-move)
                   "to_data: this Tensor was moved from");
    REQUIRE(b.to_data().to_vector<float>() == kF32);
  }
  w.check_intact();
}

TEST_CASE("handles: cat of a list holding a default-constructed Tensor", "[handles]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(cat(std::vector<T>{w.get("f32"), T{}}, 0), HandleError,
                 "cat: this Tensor was moved from");
  w.check_intact();
}

TEST_CASE("handles: dequantize of a moved-from quantized Tensor", "[handles]") {
  World w(CATALOGUE_MODES);
  {
    T q = w.get("q4");
    T keep = std::move(q);
    REQUIRE_RAISES(ferry::dequantize(q), HandleError,  // NOLINT(bugprone-use-after-move)
                   "dequantize: this Tensor was moved from");
    REQUIRE_RAISES(q.scheme(), HandleError, "scheme: this Tensor was moved from");
  }
  w.check_intact();
}

TEST_CASE("handles: an op on an id the registry does not hold", "[handles]") {
  World w(CATALOGUE_MODES);
  const ferry::op::Unary o{ferry::UnaryKind::exp, TensorRef{999999, Shape{2, 3}, DType::f32},
                           TensorRef{999998, Shape{2, 3}, DType::f32}};
  REQUIRE_RAISES(execute(w, CpuDevice{0}, o), HandleError,
                 "[ferry.registry.2] op 'exp' needs tensor 999999 but device cpu:0 does not hold "
                 "it");
  w.check_intact();
}

TEST_CASE("handles: an op reading an Int handle as Float", "[handles]") {
  World w(CATALOGUE_MODES);
  const auto id = w.get("i32").id();
  const ferry::op::Unary o{ferry::UnaryKind::exp, TensorRef{id, Shape{4}, DType::f32},
                           TensorRef{999998, Shape{4}, DType::f32}};
  REQUIRE_RAISES(
      execute(w, CpuDevice{0}, o), HandleError,
      fmt::format("[ferry.registry.3] op 'exp' wants a Float handle for tensor {} on device cpu:0, "
                  "but it holds a Int handle",
                  id));
  w.check_intact();
}

TEST_CASE("handles: registering a handle under an id already held", "[handles]") {
  World w(CATALOGUE_MODES);
  const auto id = w.get("f32", 1).id();
  auto reg = [&] {
    w.r.with_interpreter(CpuDevice{1}, [&](auto& in) {
      using Handle = typename std::remove_reference_t<decltype(in)>::Handle;
      in.register_tensor_to_device(
          id, Handle(std::in_place_index<0>,
                     w.backend.float_from_data(TensorData::from(kF32, {2, 3}), CpuDevice{1})));
    });
  };
  REQUIRE_RAISES(
      reg(), HandleError,
      fmt::format("[ferry.registry.1] tensor {} is already registered on device cpu:1", id));
  w.check_intact();
}

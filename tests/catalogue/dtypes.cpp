// Bad-input catalogue, dtypes: operands of the wrong kind, operands whose dtypes differ,
// scalars that do not fit, casts and creation with dtypes that cannot be, typed reads.
#include "catalogue/common.hpp"

namespace dtypes {
using namespace catalogue;
using ferry::DTypeError;
using ferry::Range;
using ferry::ValueError;
}  // namespace dtypes

using namespace dtypes;

TEST_CASE("dtypes: add of f32 and i32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto i = w.r.zeros({2, 3}, DType::i32, CpuDevice{0});
    REQUIRE_RAISES(w.get("f32") + i, DTypeError,
                   "add: operand dtypes differ (f32 and i32); cast one with cast() first");
  }
  w.check_intact();
}

TEST_CASE("dtypes: equal of f64 and f32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto f = w.r.zeros({3}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(equal(w.get("f64"), f), DTypeError,
                   "equal: operand dtypes differ (f64 and f32)");
  }
  w.check_intact();
}

TEST_CASE("dtypes: exp of i32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(exp(w.get("i32")), DTypeError, "exp: needs float operands, got i32");
  w.check_intact();
}

TEST_CASE("dtypes: add of bool and bool", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("bool") + w.get("bool"), DTypeError,
                 "add: needs float or int operands, got bool");
  w.check_intact();
}

TEST_CASE("dtypes: logical_not of f32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(!w.get("f32"), DTypeError, "logical_not: needs bool operands, got f32");
  w.check_intact();
}

TEST_CASE("dtypes: logical_and of bool and i32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto i = w.r.zeros({3}, DType::i32, CpuDevice{0});
    REQUIRE_RAISES(w.get("bool") & i, DTypeError, "logical_and: needs bool operands, got i32");
  }
  w.check_intact();
}

TEST_CASE("dtypes: mean of i64", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(mean(w.get("i64")), DTypeError, "mean: needs float operands, got i64");
  w.check_intact();
}

TEST_CASE("dtypes: clamp of bool", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(clamp(w.get("bool"), 0, 1), DTypeError,
                 "clamp: needs float or int operands, got bool");
  w.check_intact();
}

TEST_CASE("dtypes: i32 plus the scalar 0.5", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("i32") + 0.5, ValueError,
                 "add: scalar 0.5 is not exactly representable as i32");
  w.check_intact();
}

TEST_CASE("dtypes: i32 times the scalar 3000000000", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("i32") * std::int64_t{3000000000}, ValueError,
                 "mul: scalar 3000000000 is not exactly representable as i32");
  w.check_intact();
}

// One rule for scalars of another type, at the call (detail::scalar_fits): an int or bool tensor
// takes a scalar only when it is exactly a value of its dtype; clamp bounds, full's value and
// arange's start and step included (clamp used to truncate 0.5 to 0; arange failed at the read).
TEST_CASE("dtypes: clamp of i32 with the bound 0.5", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(clamp(w.get("i32"), 0.5, 3), ValueError,
                 "clamp: min 0.5 is not exactly representable as i32");
  REQUIRE_RAISES(clamp(w.get("i64"), -1, 1e300), ValueError,
                 "clamp: max 1e+300 is not exactly representable as i64");
  w.check_intact();
}

TEST_CASE("dtypes: full of i32 with 0.5, of bool with 2", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.full({2}, 0.5, DType::i32, CpuDevice{0}), ValueError,
                 "full: value 0.5 is not exactly representable as i32");
  REQUIRE_RAISES(w.r.full({2}, 2, DType::boolean, CpuDevice{0}), ValueError,
                 "full: value 2 is not exactly representable as bool");
  w.check_intact();
}

TEST_CASE("dtypes: arange of i32 from 0.5, and past the range of i32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.arange(0.5, 3, 1, DType::i32, CpuDevice{0}), ValueError,
                 "arange: start 0.5 is not exactly representable as i32");
  REQUIRE_RAISES(w.r.arange(0, 3, 0.5, DType::i64, CpuDevice{0}), ValueError,
                 "arange: step 0.5 is not a whole number in the range of i64 or u64");
  REQUIRE_RAISES(w.r.arange(0, 4e9, 1e9, DType::i32, CpuDevice{0}), ValueError,
                 "arange: start 0, end 4000000000, step 1000000000 run past the range of i32");
  w.check_intact();
}

TEST_CASE("dtypes: matmul of bool matrices", "[dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto b = w.r.full({2, 2}, true, DType::boolean, CpuDevice{0});
    REQUIRE_RAISES(matmul(b, b), DTypeError, "matmul: needs float or int operands, got bool");
  }
  w.check_intact();
}

TEST_CASE("dtypes: matmul of f32 and f64", "[dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto b = w.r.zeros({3, 2}, DType::f64, CpuDevice{0});
    REQUIRE_RAISES(matmul(w.get("f32"), b), DTypeError,
                   "matmul: operand dtypes differ (f32 and f64)");
  }
  w.check_intact();
}

TEST_CASE("dtypes: where with an f32 mask", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(where(w.get("f32"), w.get("f32"), w.get("f32")), DTypeError,
                 "where: needs a bool mask, got f32");
  w.check_intact();
}

TEST_CASE("dtypes: where choosing between f64 and i32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto i = w.r.zeros({3}, DType::i32, CpuDevice{0});
    REQUIRE_RAISES(where(w.get("bool"), w.get("f64"), i), DTypeError,
                   "where: operand dtypes differ (f64 and i32)");
  }
  w.check_intact();
}

TEST_CASE("dtypes: cat of f32 and f64", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(cat(std::vector<T>{w.get("f32"), w.get("f64")}, 0), DTypeError,
                 "cat: operand dtypes differ (f32 and f64)");
  w.check_intact();
}

TEST_CASE("dtypes: slice_assign of an i32 value into f32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto v = w.r.zeros({1, 3}, DType::i32, CpuDevice{0});
    REQUIRE_RAISES(slice_assign(w.get("f32"), {Range{0, 1}}, v), DTypeError,
                   "slice_assign: operand dtypes differ (f32 and i32)");
  }
  w.check_intact();
}

TEST_CASE("dtypes: gather with an f32 index", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(gather(w.get("f32"), 0, w.get("f32")), DTypeError,
                 "gather: needs an int index, got f32");
  w.check_intact();
}

TEST_CASE("dtypes: index_select with a bool index", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(index_select(w.get("f32"), 0, w.get("bool")), DTypeError,
                 "index_select: needs an int index, got bool");
  w.check_intact();
}

TEST_CASE("dtypes: cast of f32 to quantized", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(cast(w.get("f32"), DType::quantized), DTypeError,
                 "cast: cannot cast to quantized; use quantize() or quantize_dynamic()");
  w.check_intact();
}

TEST_CASE("dtypes: zeros of dtype quantized", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.zeros({2}, DType::quantized, CpuDevice{0}), DTypeError,
                 "zeros: cannot create a quantized tensor; use quantize(), quantize_dynamic() or "
                 "q_from_parts()");
  w.check_intact();
}

TEST_CASE("dtypes: arange of dtype bool", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.arange(0, 3, 1, DType::boolean, CpuDevice{0}), DTypeError,
                 "arange: needs a float or int dtype, got bool");
  w.check_intact();
}

TEST_CASE("dtypes: random of dtype i32", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.random({2}, ferry::Distribution::uniform(), 1, CpuDevice{0}, DType::i32),
                 DTypeError, "random: needs a float dtype, got i32");
  w.check_intact();
}

TEST_CASE("dtypes: TensorData of dtype quantized", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.from_data(TensorData(Shape{1}, DType::quantized, {}), CpuDevice{0}),
                 DTypeError, "TensorData holds plain tensors; use quant::QuantizedParts");
  w.check_intact();
}

TEST_CASE("dtypes: an f32 read viewed as i32 values", "[dtypes]") {
  World w(CATALOGUE_MODES);
  {
    auto d = w.get("f32").to_data();
    REQUIRE_RAISES(d.values<std::int32_t>(), DTypeError,
                   "values(): tensor data of shape [2, 3] is f32, not i32");
  }
  w.check_intact();
}

TEST_CASE("dtypes: to_parts of a plain f32 tensor", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("f32").to_parts(), DTypeError, "is f32, not quantized");
  w.check_intact();
}

TEST_CASE("dtypes: scheme() of a plain i64 tensor", "[dtypes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.get("i64").scheme(), DTypeError, "is i64, not quantized");
  w.check_intact();
}

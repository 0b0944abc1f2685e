// Bad-input catalogue, shapes: broadcasting, creation, reshape, permute, slice, cat, expand,
// matmul, gather, repeat, reductions. Each case feeds one bad input, checks the exact error
// type and that the message names the op and the shapes, then that nothing else changed.
#include "catalogue/common.hpp"

namespace shapes {
using namespace catalogue;
using ferry::IndexError;
using ferry::Range;
using ferry::ShapeError;
using ferry::ValueError;
}  // namespace shapes

using namespace shapes;

TEST_CASE("shapes: add of [2, 3] and [4] cannot broadcast", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto b = w.r.zeros({4}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(w.get("f32") + b, ShapeError,
                   "add: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  }
  w.check_intact();
}

TEST_CASE("shapes: where of a [3] mask over [2, 2] operands cannot broadcast", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto a = w.r.zeros({2, 2}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(where(w.get("bool"), a, a), ShapeError,
                   "where: shapes [3] and [2, 2] cannot be broadcast");
  }
  w.check_intact();
}

TEST_CASE("shapes: zeros with a negative dim", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.zeros({2, -1}, DType::f32, CpuDevice{0}), ShapeError,
                 "zeros: shape [2, -1] has a negative dim");
  w.check_intact();
}

TEST_CASE("shapes: from_vector with 5 values for shape [2, 3]", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.from_vector(std::vector<float>(5), {2, 3}, CpuDevice{0}), ShapeError,
                 "shape [2, 3] of f32 needs 24 bytes (6 elements x 4 bytes), got 20");
  w.check_intact();
}

TEST_CASE("shapes: TensorData with a negative dim in a zero-size shape", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.from_vector(std::vector<float>{}, {-1, 0}, CpuDevice{0}), ShapeError,
                 "shape [-1, 0] has a negative dim");
  w.check_intact();
}

TEST_CASE("shapes: reshape of [2, 3] to [4, 2] changes the element count", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(reshape(w.get("f32"), {4, 2}), ShapeError,
                 "reshape: cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)");
  w.check_intact();
}

TEST_CASE("shapes: reshape with two -1 dims", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(reshape(w.get("f32"), {-1, -1}), ShapeError,
                 "reshape: target shape [-1, -1] has an invalid dim -1");
  w.check_intact();
}

TEST_CASE("shapes: reshape of [2, 3] to [4, -1] does not divide", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(reshape(w.get("f32"), {4, -1}), ShapeError,
                 "reshape: cannot reshape [2, 3] (6 elements) to [4, -1]");
  w.check_intact();
}

TEST_CASE("shapes: reshape of a zero-size [0, 3] to [-1, 0] is ambiguous", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto e = w.r.zeros({0, 3}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(reshape(e, {-1, 0}), ShapeError,
                   "reshape: cannot reshape [0, 3] (0 elements) to [-1, 0]");
  }
  w.check_intact();
}

TEST_CASE("shapes: permute of rank 2 with one entry", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(permute(w.get("f32"), {0}), IndexError,
                 "permute: permutation [0] has 1 entries for shape [2, 3] of rank 2");
  w.check_intact();
}

TEST_CASE("shapes: permute repeating an axis", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(permute(w.get("f32"), {1, -1}), IndexError,
                 "permute: permutation [1, -1] repeats axis 1");
  w.check_intact();
}

TEST_CASE("shapes: swap_dims with axis 5 of rank 2", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(swap_dims(w.get("f32"), 0, 5), IndexError,
                 "swap_dims: axis 5 is out of range for shape [2, 3] (rank 2)");
  w.check_intact();
}

TEST_CASE("shapes: flip naming one axis twice", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(flip(w.get("f32"), {0, -2}), IndexError, "flip: axis -2 is given twice");
  w.check_intact();
}

TEST_CASE("shapes: slice with 3 ranges for rank 2", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(slice(w.get("f32"), {Range{0, 1}, Range{0, 1}, Range{0, 1}}), IndexError,
                 "slice: 3 ranges for shape [2, 3] of rank 2");
  w.check_intact();
}

TEST_CASE("shapes: slice with step 0", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(slice(w.get("f32"), {Range{0, 2, 1}, Range{0, 3, 0}}), IndexError,
                 "slice: step 0 on dim 1 must be >= 1");
  w.check_intact();
}

TEST_CASE("shapes: slice_assign of a [2, 3] value into a [1, 3] slice", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(slice_assign(w.get("f32"), {Range{0, 1}}, w.get("f32")), ShapeError,
                 "slice_assign: the slice of [2, 3] has shape [1, 3], the value [2, 3]");
  w.check_intact();
}

TEST_CASE("shapes: cat of an empty list", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(cat(std::vector<T>{}, 0), ShapeError, "cat: no tensors given");
  w.check_intact();
}

TEST_CASE("shapes: cat of [2, 3] and [3] differ in rank", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto b = w.r.zeros({3}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(cat(std::vector<T>{w.get("f32"), b}, 0), ShapeError,
                   "cat: shapes [2, 3] and [3] differ in rank");
  }
  w.check_intact();
}

TEST_CASE("shapes: cat of [2, 3] and [2, 4] along dim 0", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto b = w.r.zeros({2, 4}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(cat(std::vector<T>{w.get("f32"), b}, 0), ShapeError,
                   "cat: shapes [2, 3] and [2, 4] differ in dim 1 (not the cat dim 0)");
  }
  w.check_intact();
}

TEST_CASE("shapes: cat along dim 2 of rank-2 tensors", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(cat(std::vector<T>{w.get("f32"), w.get("f32")}, 2), IndexError,
                 "cat: axis 2 is out of range for shape [2, 3] (rank 2)");
  w.check_intact();
}

TEST_CASE("shapes: expand of [2, 3] to the lower-rank [3]", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(expand(w.get("f32"), {3}), ShapeError,
                 "expand: shape [2, 3] cannot be expanded to [3] (fewer dims)");
  w.check_intact();
}

TEST_CASE("shapes: expand of [3] to [3, 1]", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(expand(w.get("f64"), {3, 1}), ShapeError,
                 "expand: shape [3] cannot be expanded to [3, 1]");
  w.check_intact();
}

TEST_CASE("shapes: expand with -1 on a new leading dim", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(expand(w.get("f32"), {-1, 2, 3}), ShapeError,
                 "expand: target [-1, 2, 3] has an invalid dim -1 at 0");
  w.check_intact();
}

TEST_CASE("shapes: matmul of 1-D operands", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(matmul(w.get("f64"), w.get("f64")), ShapeError,
                 "matmul: operands need rank >= 2, got [3] and [3]");
  w.check_intact();
}

TEST_CASE("shapes: matmul of [2, 3] and [2, 3] inner dims", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(matmul(w.get("f32"), w.get("f32")), ShapeError,
                 "matmul: shapes [2, 3] and [2, 3] do not fit (3 != 2)");
  w.check_intact();
}

TEST_CASE("shapes: matmul with batch dims [2] and [3]", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto a = w.r.zeros({2, 2, 3}, DType::f32, CpuDevice{0});
    auto b = w.r.zeros({3, 3, 4}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(matmul(a, b), ShapeError,
                   "matmul: batch dims [2] of [2, 2, 3] and [3] of [3, 3, 4] cannot be broadcast");
  }
  w.check_intact();
}

TEST_CASE("shapes: gather with an index of another rank", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(gather(w.get("f32"), 1, w.get("i32")), ShapeError,
                 "gather: index shape [4] must have the rank of [2, 3]");
  w.check_intact();
}

TEST_CASE("shapes: gather with an index larger than the tensor off the gather dim", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto idx = w.r.zeros({3, 1}, DType::i64, CpuDevice{0});
    REQUIRE_RAISES(gather(w.get("f32"), 1, idx), ShapeError,
                   "gather: index shape [3, 1] exceeds [2, 3] in dim 0");
  }
  w.check_intact();
}

TEST_CASE("shapes: index_select with a 2-D index", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(index_select(w.get("f32"), 0, w.get("i64")), ShapeError,
                 "index_select: index must be 1-D, got [2, 2]");
  w.check_intact();
}

TEST_CASE("shapes: repeat with 1 count for rank 2", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(repeat(w.get("f32"), {2}), ShapeError,
                 "repeat: 1 repeat counts for shape [2, 3] of rank 2");
  w.check_intact();
}

TEST_CASE("shapes: repeat with a negative count", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(repeat(w.get("f32"), {1, -1}), ValueError,
                 "repeat: count -1 on dim 1 is negative");
  w.check_intact();
}

TEST_CASE("shapes: sum along axis -3 of rank 2", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(sum(w.get("f32"), -3), IndexError,
                 "sum: axis -3 is out of range for shape [2, 3] (rank 2)");
  w.check_intact();
}

TEST_CASE("shapes: max of an empty [0, 3] tensor", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto e = w.r.zeros({0, 3}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(max(e), ValueError, "max: tensor of shape [0, 3] is empty");
  }
  w.check_intact();
}

TEST_CASE("shapes: arange with step 0", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.arange(0, 5, 0, DType::i32, CpuDevice{0}), ValueError,
                 "arange: start 0, end 5, step 0 do not make a range");
  w.check_intact();
}

TEST_CASE("shapes: arange of more elements than a shape can hold", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.arange(0.0, 1e30, 1e-30, DType::f32, CpuDevice{0}), ValueError,
                 "arange: start 0, end 1e+30, step 1e-30");
  w.check_intact();
}

TEST_CASE("shapes: random normal with std 0", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(w.r.random_normal({2}, 1, CpuDevice{0}, 0.0, 0.0), ValueError,
                 "random: normal std must be > 0, got 0");
  w.check_intact();
}

TEST_CASE("shapes: linear of [2, 3] with a weight [2, 4] that does not take 3 inputs", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto wt = w.r.zeros({2, 4}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(linear(w.get("f32"), wt), ShapeError,
                   "linear: input [2, 3] and weight [2, 4] do not fit (weight is [out, in])");
  }
  w.check_intact();
}

TEST_CASE("shapes: layer_norm over a normalized_shape that is not the last dims", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(layer_norm(w.get("f32"), Shape{2}), ShapeError,
                 "layer_norm: normalized_shape [2] is not the last dims of [2, 3]");
  w.check_intact();
}

TEST_CASE("shapes: group_norm of 3 channels in 2 groups", "[shapes]") {
  World w(CATALOGUE_MODES);
  REQUIRE_RAISES(group_norm(w.get("f32"), 2), ValueError,
                 "group_norm: 3 channels of [2, 3] do not split into 2 groups");
  w.check_intact();
}

TEST_CASE("shapes: attention with keys whose width differs from the queries'", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto q = w.r.zeros({4, 8}, DType::f32, CpuDevice{0});
    auto k = w.r.zeros({6, 5}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(attention(q, k, k), ShapeError,
                   "attention: q [4, 8], k [6, 5] and v [6, 5] do not fit (q [..., L, E], k "
                   "[..., S, E], v [..., S, Ev])");
  }
  w.check_intact();
}

TEST_CASE("shapes: conv2d with a weight whose channels do not match the input's", "[shapes]") {
  World w(CATALOGUE_MODES);
  {
    auto x = w.r.zeros({1, 3, 8, 8}, DType::f32, CpuDevice{0});
    auto wt = w.r.zeros({4, 2, 3, 3}, DType::f32, CpuDevice{0});
    REQUIRE_RAISES(conv2d(x, wt), ShapeError,
                   "conv2d: input [1, 3, 8, 8], weight [4, 2, 3, 3] and 1 groups do not fit");
  }
  w.check_intact();
}

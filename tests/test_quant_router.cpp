// Quantized tensors through the router: every scheme moves between devices bit-exact as packed
// data + scales + offsets, the bytes moved are the packed size, quantized matmul matches
// dequantize-then-matmul, layout ops agree with the host functions, and bad input gets
// QuantError while everything else stays intact.
#include <catch2/catch.hpp>
#include <ferry/ferry.hpp>

#include "matchers.hpp"

using ferry::CpuDevice;
using ferry::DType;
using ferry::EigenCpu;
using ferry::Execution;
using ferry::Router;
using ferry_test::Says;
using namespace ferry::quant;

namespace {
constexpr CpuDevice d0{0}, d1{1};

/// Every combination of value type x mode x granularity x storage x scale type, over [4, 6, 40]
/// (per_block includes a partial last block: 40 = 32 + 8, and a 2-D block).
std::vector<Scheme> all_schemes() {
  std::vector<Scheme> out;
  for (auto v : {ValueType::i8, ValueType::u8, ValueType::i4, ValueType::u4, ValueType::i2,
                 ValueType::u2, ValueType::e4m3, ValueType::e5m2, ValueType::e2m1})
    for (auto m : {Mode::symmetric, Mode::affine, Mode::symmetric_full})
      for (int g = 0; g < 4; ++g)
        for (auto st : {Storage::native, Storage::packed_u8, Storage::packed_u32})
          for (auto sc : {ScaleType::f32, ScaleType::f16, ScaleType::bf16, ScaleType::ue8m0,
                          ScaleType::ue4m3}) {
            if (st == Storage::packed_u8 && bits(v) == 8) continue;    // not a valid scheme
            if (is_float(v) && m == Mode::affine) continue;            // nor this
            if (m == Mode::symmetric_full && !is_signed(v)) continue;  // nor this
            Scheme s = Scheme::of(v);
            s = m == Mode::affine           ? s.affine()
                : m == Mode::symmetric_full ? s.symmetric_full()
                                            : s.symmetric();
            s = g == 0   ? s.per_tensor()
                : g == 1 ? s.per_axis(1)
                : g == 2 ? s.per_block({32})
                         : s.per_block({2, 16});
            s = st == Storage::native      ? s.native()
                : st == Storage::packed_u8 ? s.packed_u8()
                                           : s.packed_u32();
            out.push_back(s.scales(sc));
            // Two levels on every per-axis and per-block scheme, with two pairings of types.
            if (g != 0 && sc == ScaleType::ue4m3)
              out.push_back(out.back().tensor_scales(ScaleType::f32));
            if (g != 0 && sc == ScaleType::f16)
              out.push_back(out.back().tensor_scales(ScaleType::ue8m0));
          }
  out.push_back(Scheme::nf4());  // a codebook: the table travels in the scheme
  return out;
}
}  // namespace

TEST_CASE("every scheme moves device 0 -> 1 -> 0 bit-exact and dequantizes identically") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode});
  auto x = r.random_normal({4, 6, 40}, 5, d0, 0.0, 2.0);
  const auto schemes = all_schemes();
  // Integers: 6 types x 2 modes x 4 granularities x 3 storages, less packed_u8 of the 8-bit
  // ones; floats: symmetric only, e4m3 and e5m2 without packed_u8; each with 5 scale types,
  // and the three quarters that are not per tensor once more for each of two two-level pairs.
  // symmetric_full: the 3 signed integer types, less packed_u8 of int8.
  constexpr std::size_t per_scale_type =
      6 * 2 * 4 * 3 - 2 * 2 * 4 + (2 * 2 + 3) * 4 + (3 * 4 * 3 - 4);
  REQUIRE(schemes.size() == per_scale_type * 5 + per_scale_type / 4 * 3 * 2 + 1);
  for (const auto& s : schemes) {
    CAPTURE(fmt::format("{}", s));
    auto q = ferry::quantize_dynamic(x, s);
    const auto parts = q.to_parts();
    REQUIRE(parts.scheme == s);
    auto there = q.to(d1);
    REQUIRE(there.to_parts() == parts);
    auto back = there.to(d0);
    REQUIRE(back.to_parts() == parts);
    REQUIRE(ferry::dequantize(back).to_data() == ferry::dequantize(q).to_data());
    // The arithmetic is the host library's: the router adds no numbers of its own.
    std::vector<float> host(static_cast<std::size_t>(x.numel()));
    dequantize(parts, host);
    REQUIRE(ferry::dequantize(there).to_data().to_vector<float>() == host);
  }
}

TEST_CASE("a move copies the packed bytes and the parameter buffers, not floats") {
  Router<EigenCpu> r(EigenCpu(2), {.execution = Execution::Async});
  const auto s = Scheme::of(ValueType::i4).per_block({32}).packed_u8().scales(ScaleType::f16);
  auto q = ferry::quantize_dynamic(r.random_uniform({256, 256}, 1, d0, -1, 1), s);
  auto moved = q.to(d1);
  r.sync();
  const std::uint64_t n = 256 * 256;
  const auto in = r.stats(d1).bytes_in;
  REQUIRE(in == n / 2 + (n / 32) * 2);  // 4 bits per value + one f16 scale per 32 values
  REQUIRE(static_cast<double>(in) / static_cast<double>(n) == Approx(0.5625));
  REQUIRE(r.stats(d0).bytes_out == in);
  REQUIRE(r.backend().allocated_bytes(d1) == static_cast<std::int64_t>(in));
  SECTION("affine adds one offset byte per group") {
    auto qa = ferry::quantize_dynamic(r.random_uniform({256, 256}, 2, d0), s.affine());
    auto ma = qa.to(d1);
    r.sync();
    REQUIRE(r.stats(d1).bytes_in == 2 * in + n / 32);
  }
}

TEST_CASE("a quantized handle held once is freed on its way out; a shared one stays") {
  Router<EigenCpu> r(EigenCpu(2), {.execution = Execution::Inline});
  auto q = ferry::quantize_dynamic(r.ones({64}, DType::f32, d0), Scheme::of(ValueType::i8));
  const auto bytes = r.backend().allocated_bytes(d0);
  auto keep = q;
  auto a = q.to(d1);
  REQUIRE(r.backend().allocated_bytes(d0) == bytes);  // shared: still on device 0
  REQUIRE(r.stats(d0).live_tensors == 1);  // q (the temporary ones() was consumed by quantize)
  keep = ferry::Tensor<EigenCpu>();
  auto b = std::move(q).to(d1);  // the last copy: moved out and freed on device 0
  REQUIRE(r.stats(d0).live_tensors == 0);
  REQUIRE(bytes == static_cast<std::int64_t>(a.to_parts().nbytes()));
  REQUIRE(r.backend().allocated_bytes(d0) == 0);
  REQUIRE(b.to_parts() == a.to_parts());
}

TEST_CASE("quantize with given scales follows the ONNX formula") {
  Router<EigenCpu> r(EigenCpu(1), {.execution = Execution::Inline});
  std::vector<float> x{-3.0f, -0.25f, 0.0f, 0.26f, 0.75f, 1.25f, 40.0f, -40.0f};
  auto t = r.from_vector(x, {2, 4}, d0);
  const std::vector<float> scales{0.5f, 0.25f};
  const std::vector<std::int32_t> offsets{3, -2};
  auto q = ferry::quantize(t, Scheme::of(ValueType::i4).affine().per_axis(0).packed_u8(), scales,
                           offsets);
  const auto v = values(q.to_parts());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t row = i / 4;
    const double want = std::clamp(
        static_cast<double>(std::nearbyint(x[i] / scales[row])) + offsets[row], -8.0, 7.0);
    CAPTURE(i);
    REQUIRE(v[i] == static_cast<std::int32_t>(want));
  }
  auto deq = ferry::dequantize(q).to_data().to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t row = i / 4;
    REQUIRE(deq[i] == static_cast<float>(v[i] - offsets[row]) * scales[row]);
  }
}

TEST_CASE("matmul with quantized weights equals dequantize-then-matmul") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(1), {.execution = mode});
  const auto s = GENERATE(
      Scheme::of(ValueType::i4).per_block({32}).packed_u8().scales(ScaleType::f16),
      Scheme::of(ValueType::u8).affine().per_axis(1),
      Scheme::of(ValueType::i2).affine().per_block({4, 8}).packed_u32(),
      Scheme::of(ValueType::e4m3).per_block({32}),
      Scheme::of(ValueType::e2m1).per_block({32}).packed_u8().scales(ScaleType::bf16),
      Scheme::mxfp4(), Scheme::of(ValueType::u8).affine().per_axis(1).scales(ScaleType::ue4m3),
      Scheme::nvfp4(), Scheme::nf4(),
      Scheme::of(ValueType::i4)
          .per_block({32})
          .packed_u8()
          .scales(ScaleType::f16)
          .tensor_scales(ScaleType::f32));
  auto x = r.random_normal({3, 5, 96}, 1, d0);
  auto w = ferry::quantize_dynamic(r.random_normal({96, 70}, 2, d0), s);
  auto fused = ferry::matmul(x, w).to_data().to_vector<float>();
  auto reference = ferry::matmul(x, ferry::dequantize(w)).to_data().to_vector<float>();
  REQUIRE(fused.size() == 3 * 5 * 70);
  for (std::size_t i = 0; i < fused.size(); ++i)
    REQUIRE(fused[i] == Approx(reference[i]).margin(1e-4));
  SECTION("f64 activations") {
    auto x64 = ferry::cast(x, DType::f64);
    auto y64 = ferry::matmul(x64, w);
    REQUIRE(y64.dtype() == DType::f64);
    auto v = y64.to_data().to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(v[i] == Approx(reference[i]).margin(1e-4));
  }
  SECTION("linear at one row (q_linear): the weight as [N, K]") {
    auto wt = ferry::quantize_dynamic(r.random_normal({70, 96}, 3, d0), s);
    auto x1 = r.random_normal({1, 96}, 4, d0);
    auto got = ferry::linear(x1, wt).to_data().to_vector<float>();
    auto want = ferry::linear(x1, ferry::dequantize(wt)).to_data().to_vector<float>();
    REQUIRE(got.size() == 70);
    for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-4));
  }
}

namespace {
std::vector<std::pair<std::int64_t, std::int64_t>> rg2() { return {{0, 4}, {2, 5}, {0, 16}}; }
}  // namespace

TEST_CASE("quantized layout ops through the router agree with the host functions") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode});
  auto s = GENERATE(
      Scheme::of(ValueType::i8), Scheme::of(ValueType::u4).affine().per_axis(0).packed_u8(),
      Scheme::of(ValueType::i4).per_block({2, 8}).packed_u32().scales(ScaleType::bf16));
  auto q = ferry::quantize_dynamic(r.random_normal({4, 6, 16}, 9, d0), s);
  const auto p = q.to_parts();
  const std::vector<std::int64_t> perm{2, 0, 1}, axes{0};
  REQUIRE(ferry::q_permute(q, perm).to_parts() == q_permute(p, perm));
  REQUIRE(ferry::q_swap_dims(q, 0, 2).to_parts() == q_swap_dims(p, 0, 2));
  REQUIRE(ferry::q_flip(q, axes).to_parts() == q_flip(p, axes));
  const std::vector<std::pair<std::int64_t, std::int64_t>> rg{{2, 4}, {0, 6}, {0, 16}};
  REQUIRE(ferry::q_slice(q, {{2, 4}}).to_parts() == q_slice(p, rg));
  REQUIRE(ferry::q_reshape(q, {1, 4, 6, 16}).to_parts() == q_reshape(p, ferry::Shape{1, 4, 6, 16}));
  // Layout ops also run on the tensor's device after a move.
  REQUIRE(ferry::q_permute(q.to(d1), perm).to_parts() == q_permute(p, perm));
  // expand, repeat, index_select and narrow route quantized tensors to the exact q_ ops.
  auto q1 = ferry::q_slice(q, {{0, 4}, {0, 1}});  // [4, 1, 16]
  const auto p1 = q1.to_parts();
  REQUIRE(ferry::expand(q1, {3, 4, 5, 16}).to_parts() == q_expand(p1, ferry::Shape{3, 4, 5, 16}));
  REQUIRE(ferry::q_expand(q1, {-1, 2, -1}).to_parts() == q_expand(p1, ferry::Shape{4, 2, 16}));
  const std::vector<std::int64_t> times{2, 1, 1};
  REQUIRE(ferry::q_repeat(q, times).to_parts() == q_repeat(p, times));
  const std::vector<std::int64_t> idx{3, 0, 0, 2};
  auto index = r.from_vector(std::vector<std::int32_t>{3, 0, 0, 2}, {4}, d0);
  REQUIRE(ferry::q_select(q, 0, index).to_parts() == q_select(p, 0, idx));
  REQUIRE(ferry::index_select(q.to(d1), 0, index.to(d1)).to_parts() == q_select(p, 0, idx));
  REQUIRE(ferry::q_narrow(q, 1, 2, 3).to_parts() == q_slice(p, rg2()));
  // cat and gather: the host functions' results, through either execution mode.
  const std::vector<ferry::quant::QuantizedParts> pp{p, p};
  REQUIRE(ferry::q_cat({q, q}, 1).to_parts() == q_cat(pp, 1));
  auto gidx = r.from_vector(std::vector<std::int64_t>(4 * 6 * 3, 1), {4, 6, 3}, d0);
  if (s.granularity != Granularity::per_block)  // per_block[2, 8] has 2 params along dim 2
    REQUIRE(ferry::q_gather(q, 2, gidx).to_parts() ==
            q_gather(p, 2, ferry::Shape{4, 6, 3}, std::vector<std::int64_t>(72, 1)));
  // The values are the plain ops' on the dequantized tensor, bit for bit.
  REQUIRE(ferry::dequantize(ferry::q_select(q, 0, index)).to_data() ==
          ferry::index_select(ferry::dequantize(q), 0, index).to_data());
  REQUIRE(ferry::dequantize(ferry::q_repeat(q, times)).to_data() ==
          ferry::repeat(ferry::dequantize(q), times).to_data());
  REQUIRE(ferry::dequantize(ferry::q_expand(q1, {3, 4, 5, 16})).to_data() ==
          ferry::expand(ferry::dequantize(q1), {3, 4, 5, 16}).to_data());
}

TEST_CASE("layout ops that would break a scheme are refused at the call, with the reason") {
  Router<EigenCpu> r(EigenCpu(1), {.execution = Execution::Async});
  auto blocked = ferry::quantize_dynamic(r.random_normal({4, 40}, 1, d0),
                                         Scheme::of(ValueType::i4).per_block({32}).packed_u8());
  REQUIRE_THROWS_MATCHES(ferry::q_reshape(blocked, {8, 20}), ferry::QuantError,
                         Says("the 1 blocked trailing dim(s) must stay as they are"));
  REQUIRE_THROWS_MATCHES(ferry::q_flip(blocked, {1}), ferry::QuantError,
                         Says("dim 1 (size 40) is not a multiple of its block 32"));
  REQUIRE_THROWS_MATCHES(ferry::q_slice(blocked, {{0, 4}, {8, 40}}), ferry::QuantError,
                         Says("range 8:40 on dim 1 starts inside a block (block 32)"));
  // Ending mid-block is fine: the values stay exact.
  REQUIRE(ferry::dequantize(ferry::q_slice(blocked, {{0, 4}, {0, 20}})).to_data() ==
          ferry::slice(ferry::dequantize(blocked), {{0, 4}, {0, 20}}).to_data());
  auto axis = ferry::quantize_dynamic(r.random_normal({4, 40}, 1, d0),
                                      Scheme::of(ValueType::i8).per_axis(1));
  REQUIRE_THROWS_MATCHES(ferry::q_reshape(axis, {40, 4}), ferry::QuantError,
                         Says("quantization axis 1 (size 40)"));
  REQUIRE_THROWS_MATCHES(ferry::q_repeat(blocked, {1, 2}), ferry::QuantError,
                         Says("dim 1 (size 40) is not a multiple of its block 32, so its second "
                              "copy would start inside a block"));
  auto index = r.from_vector(std::vector<std::int64_t>{0, 39}, {2}, d0);
  REQUIRE_THROWS_MATCHES(ferry::index_select(blocked, 1, index), ferry::QuantError,
                         Says("dim 1 is split into blocks of 32"));
  REQUIRE_THROWS_MATCHES(ferry::q_select(r.random_normal({2}, 1, d0), 0, index), ferry::DTypeError,
                         Says("q_select: tensor"));
  auto other = ferry::quantize_dynamic(r.random_normal({4, 40}, 2, d0),
                                       Scheme::of(ValueType::i4).per_block({16}).packed_u8());
  REQUIRE_THROWS_MATCHES(ferry::cat({blocked, other}, 0), ferry::QuantError,
                         Says("q_cat: tensor 1 has scheme"));
  REQUIRE_THROWS_MATCHES(ferry::q_cat({blocked, blocked}, 1), ferry::QuantError,
                         Says("tensor 0 has size 40 along dim 1, not a multiple of its block 32"));
  REQUIRE_THROWS_MATCHES(
      ferry::gather(blocked, 1, r.from_vector(std::vector<std::int64_t>{0}, {1, 1}, d0)),
      ferry::QuantError, Says("dim 1 has 2 params along it"));
  // Params that must agree are compared when the op runs: at sync here (async).
  auto pt1 = ferry::quantize_dynamic(r.random_normal({2, 3}, 3, d0), Scheme::of(ValueType::i8));
  auto pt2 = ferry::quantize_dynamic(r.random_normal({2, 3}, 4, d0), Scheme::of(ValueType::i8));
  auto joined = ferry::cat({pt1, pt2}, 0);
  REQUIRE_THROWS_MATCHES(r.sync(), ferry::Error, Says("differ from tensor 0's"));
  REQUIRE(ferry::dequantize(ferry::cat({pt1, pt1}, 0)).to_data() ==
          ferry::cat({ferry::dequantize(pt1), ferry::dequantize(pt1)}, 0).to_data());
  // Allowed forms still work and the tensors are intact.
  auto rows = r.from_vector(std::vector<std::int64_t>{3, 0}, {2}, d0);
  REQUIRE(ferry::dequantize(ferry::index_select(blocked, 0, rows)).to_data() ==
          ferry::index_select(ferry::dequantize(blocked), 0, rows).to_data());
  REQUIRE(ferry::q_repeat(blocked, {3, 1}).shape() == ferry::Shape{12, 40});
  REQUIRE(ferry::q_reshape(blocked, {2, 2, 40}).shape() == ferry::Shape{2, 2, 40});
  REQUIRE(ferry::q_flip(blocked, {0}).to_parts().shape == ferry::Shape{4, 40});
  REQUIRE(ferry::q_slice(blocked, {{1, 3}, {0, 32}}).shape() == ferry::Shape{2, 32});
  r.sync();
}

TEST_CASE("bad quantization input gets QuantError and the router stays usable") {
  auto mode = GENERATE(Execution::Inline, Execution::Async);
  Router<EigenCpu> r(EigenCpu(2), {.execution = mode});
  auto x = r.random_normal({4, 64}, 3, d0);
  auto i = r.from_vector(std::vector<std::int32_t>{1, 2}, {2}, d0);
  const auto i4 = Scheme::of(ValueType::i4).per_block({32}).packed_u8();
  REQUIRE_THROWS_MATCHES(ferry::quantize(x, i4, {1.0f, 2.0f}), ferry::QuantError,
                         Says("2 scales given, expected 8 (param shape [4, 2])"));
  REQUIRE_THROWS_MATCHES(ferry::quantize(x, Scheme::of(ValueType::i8).affine(), {1.0f}, {}),
                         ferry::QuantError, Says("0 offsets given, expected 1 (one per param)"));
  REQUIRE_THROWS_AS(ferry::quantize_dynamic(x, Scheme::of(ValueType::i8).per_block({2, 2, 2})),
                    ferry::QuantError);
  REQUIRE_THROWS_AS(ferry::quantize_dynamic(x, Scheme::of(ValueType::i8).packed_u8()),
                    ferry::QuantError);
  REQUIRE_THROWS_MATCHES(ferry::quantize_dynamic(i, Scheme::of(ValueType::i8)), ferry::DTypeError,
                         Says("needs float operands, got i32"));
  auto q = ferry::quantize_dynamic(x, i4);
  REQUIRE_THROWS_MATCHES(ferry::dequantize(q, DType::i32), ferry::DTypeError,
                         Says("must be a float dtype (f32, f64, f16, bf16), got i32"));
  REQUIRE_THROWS_MATCHES(q + q, ferry::DTypeError, Says("operand is quantized"));
  REQUIRE_THROWS_MATCHES(q.to_data(), ferry::DTypeError, Says("use to_parts()"));
  SECTION("parts from outside are validated before they reach a device") {
    auto p = q.to_parts();
    auto truncated = p;
    truncated.data.pop_back();
    REQUIRE_THROWS_AS(r.q_from_parts(truncated, d1), ferry::QuantError);
    auto oversized = p;
    oversized.scales.push_back(std::byte{0});
    REQUIRE_THROWS_AS(r.q_from_parts(oversized, d1), ferry::QuantError);
    auto bad_offset = ferry::quantize_dynamic(x, i4.affine()).to_parts();
    bad_offset.offsets[0] = std::byte{0x7f};  // 127 is outside int4's [-8, 7]
    REQUIRE_THROWS_AS(r.q_from_parts(bad_offset, d1), ferry::QuantError);
    REQUIRE(r.q_from_parts(p, d1).to_parts() == p);
  }
  // Everything else is intact.
  REQUIRE(ferry::dequantize(q).to_data().numel() == 256);
  r.sync();
  REQUIRE(r.stats(d0).live_tensors == 3);
}

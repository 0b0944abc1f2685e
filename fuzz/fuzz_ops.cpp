// Fuzz target: one sequence of router calls, run in Execution::Inline and Execution::Async.
// SPDX-License-Identifier: MIT
//
// The input is decoded into up to 40 steps over 2-3 devices and 8 tensor slots: creation,
// elementwise, reductions, layout, quantize_dynamic/dequantize, moves, drops, reads, and the ops
// of #18 (softmax, scans, sorts, scatter and gather_nd, every unary kind, random_int, bernoulli).
// The inline run records each step's outcome (the result's bytes, or the error type and message
// thrown at the call); the async run must give the same outcomes, with the one intended difference:
//   a kernel error (e.g. integer division by zero) throws E at the call inline, while async
//   returns a tensor whose read throws OpFailed quoting E's message, and sync() rethrows E.
// Async reads some results at once and the rest only at the end, so ops queue up and run
// concurrently with moves between devices. At the end both routers drop everything, sync,
// and every device must hold no tensor and no allocated byte.
// Anything else (another exception type, a crash, a mismatch, a leak) traps.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <ferry/ferry.hpp>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

using ferry::CpuDevice;
using ferry::DType;
using ferry::EigenCpu;
using ferry::Router;
using ferry::Scalar;
using ferry::Shape;
using T = ferry::Tensor<EigenCpu>;
namespace q = ferry::quant;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_ops: %s\n", what.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

constexpr std::size_t kSlots = 8;
constexpr std::size_t kMaxSteps = 40;
constexpr std::size_t kArgs = 8;

struct Step {
  std::uint8_t op = 0;
  std::array<std::uint8_t, kArgs> a{};
};

struct Outcome {
  enum Kind : std::uint8_t { none, value, error } kind = none;
  std::string type;  // error: the exception's dynamic type
  std::string text;  // value: encoded bytes; error: what()
};

std::string type_name(const std::exception& e) { return typeid(e).name(); }

/// dtype, shape and bytes of a plain tensor, or scheme, shape and buffers of a quantized one;
/// "!<type>:<what>" when the read throws a ferry::Error.
std::string encode(const T& t) {
  try {
    std::string out;
    if (t.is_quantized()) {
      const auto p = t.to_parts();
      out = fmt::format("Q {} {} |", p.scheme, p.shape);
      for (const auto* buf : {&p.data, &p.scales, &p.offsets}) {
        out.append(reinterpret_cast<const char*>(buf->data()), buf->size());
        out += '|';
      }
    } else {
      const auto d = t.to_data();
      out = fmt::format("P {} {} |", d.dtype(), d.shape());
      out.append(reinterpret_cast<const char*>(d.bytes().data()), d.bytes().size());
    }
    return out;
  } catch (const ferry::Error& e) {
    return "!" + type_name(e) + ":" + e.what();
  } catch (const std::exception& e) {
    fail(std::string("a read threw a non-ferry exception: ") + e.what());
  }
}

constexpr auto& kDTypes = ferry::kPlainDTypes;  // all 13 plain dtypes
constexpr std::size_t kNumDTypes = std::size(ferry::kPlainDTypes);
constexpr float kFloats[] = {0.0f,
                             1.0f,
                             -1.0f,
                             2.0f,
                             0.5f,
                             -3.0f,
                             1.5f,
                             100.0f,
                             -0.0f,
                             7.0f,
                             -2.5f,
                             3.0f,
                             0.25f,
                             -8.0f,
                             __builtin_nanf(""),
                             __builtin_inff()};

/// Sizes at the limits of int64, for the arguments that take sizes: dims, range bounds and
/// steps, block sizes, repeat counts.
constexpr std::int64_t kHuge[] = {std::int64_t{1} << 31,
                                  (std::int64_t{1} << 31) - 1,
                                  std::int64_t{1} << 32,
                                  std::int64_t{1} << 62,
                                  INT64_MAX,
                                  INT64_MAX - 1,
                                  -1,
                                  INT64_MIN};

/// Shapes at the limits (rank byte's top bits 11): an empty dim beside huge ones (valid: no
/// elements), two huge dims whose count overflows int64 (ShapeError at the call), one dim of
/// 2^62 or more (more bytes than any device: OutOfMemory, at the call or from the allocator), or a
/// negative dim. None of them asks for memory a process could actually have.
Shape extreme_shape(std::uint8_t rank_byte, std::uint8_t dims_byte) {
  const std::int64_t h1 = kHuge[dims_byte & 7], h2 = kHuge[(dims_byte >> 3) & 7];
  const auto big = [](std::int64_t h) { return h < 0 || h >= (std::int64_t{1} << 32) ? h : h * 4; };
  switch (rank_byte & 3) {
    case 0:
      return Shape{0, h1 < 0 ? 3 : h1};
    case 1:
      return Shape{big(h1), big(h2)};
    case 2:
      return Shape{h1 >= 0 && h1 < (std::int64_t{1} << 62) ? std::int64_t{1} << 62 : h1};
    default:
      return Shape{2, h2 < 0 ? h2 : 0, big(h1)};
  }
}

Shape shape_of(std::uint8_t rank_byte, std::uint8_t dims_byte) {
  if ((rank_byte & 0xC0) == 0xC0 && (dims_byte & 0x40)) return extreme_shape(rank_byte, dims_byte);
  const int rank = rank_byte % 4;
  std::vector<std::int64_t> d;
  for (int i = 0; i < rank; ++i) {
    const int v = (dims_byte >> (2 * i)) & 3;
    d.push_back(v == 0 && (dims_byte & 0x80) == 0 ? 2 : v);  // empty dims now and then
  }
  return Shape(std::move(d));
}

Scalar scalar_of(std::uint8_t b) {
  if (b & 0x80) return Scalar(static_cast<double>(kFloats[b & 15]));
  return Scalar(static_cast<std::int64_t>(b & 15) - 4);
}

/// A backend whose devices hold 256 MiB each: a valid shape of a few GiB or more (an empty
/// matmul's [3, 2^31] output, a bool [2^62]) is OutOfMemory at the op, as on a GPU, instead of
/// a request the fuzzer's malloc limit or ASan would stop the process for.
EigenCpu limited(int ndev) {
  EigenCpu cpu(ndev);
  cpu.set_memory_limit(std::int64_t{256} << 20);
  return cpu;
}

class Driver {
 public:
  Driver(bool async, int ndev, const std::vector<Outcome>* expected)
      : async_(async), ndev_(ndev), expected_(expected), r_(limited(ndev), options(async)) {}

  void run(const std::vector<Step>& steps) {
    for (std::size_t i = 0; i < steps.size(); ++i) step(steps[i], i);
    // Deferred async reads.
    for (auto& [t, i] : pending_) {
      const std::string v = encode(t);
      if (v != (*expected_)[i].text)
        fail(fmt::format("step {}: async value read at the end differs from inline", i));
    }
    pending_.clear();
    for (auto& s : slot_) s = T();
    try {
      r_.sync();
    } catch (const std::exception& e) {
      fail(fmt::format("final sync threw ({} mode): {}", async_ ? "async" : "inline", e.what()));
    }
    for (int d = 0; d < ndev_; ++d) {
      const auto st = r_.stats(CpuDevice{d});
      const auto bytes = r_.backend().allocated_bytes(CpuDevice{d});
      if (st.live_tensors != 0 || st.live_bytes != 0 || bytes != 0)
        fail(
            fmt::format("{} mode: cpu:{} holds {} tensors, {} live bytes, {} allocated bytes "
                        "after dropping everything",
                        async_ ? "async" : "inline", d, st.live_tensors, st.live_bytes, bytes));
    }
  }

  std::vector<Outcome> outcomes;

 private:
  static ferry::RouterOptions options(bool async) {
    ferry::RouterOptions o;
    o.execution = async ? ferry::Execution::Async : ferry::Execution::Inline;
    o.threads_per_device = 1;
    o.queue_capacity = 16;  // small, so submission also blocks on a full queue now and then
    return o;
  }

  CpuDevice dev(std::uint8_t b) const {
    // One index past the last device now and then: a DeviceError at the call.
    return CpuDevice{b % 16 == 15 ? ndev_ : b % ndev_};
  }

  // The tensor in slot (b & 7), or the next non-empty one; moved out when bit 3 is set.
  T arg(std::uint8_t b) {
    std::size_t i = b & 7;
    for (std::size_t k = 0; k < kSlots && !slot_[i].valid(); ++k) i = (i + 1) % kSlots;
    if (b & 8) return std::move(slot_[i]);
    return slot_[i];
  }
  T& peek(std::uint8_t b) {
    std::size_t i = b & 7;
    for (std::size_t k = 0; k < kSlots && !slot_[i].valid(); ++k) i = (i + 1) % kSlots;
    return slot_[i];
  }

  template <class V>
  std::vector<V> values(std::int64_t n, std::uint8_t seed) {
    std::vector<V> v(static_cast<std::size_t>(n));
    std::uint32_t s = seed * 2654435761u + 1;
    for (auto& x : v) {
      s = s * 1664525u + 1013904223u;
      const auto k = (s >> 24) & 15;
      if constexpr (std::is_floating_point_v<V> || ferry::is_half_v<V>)
        x = static_cast<V>(kFloats[k & ((seed & 1) ? 15 : 13)]);  // NaN/inf on odd seeds only
      else
        x = static_cast<V>(static_cast<int>(k % 9) - 4);
    }
    return v;
  }

  q::Scheme scheme_of(const Step& s) {
    auto sc = q::Scheme::of(static_cast<q::ValueType>(s.a[1] % 9));
    if (s.a[2] & 1) sc = sc.affine();
    if (((s.a[1] >> 4) & 3) == 1) sc = sc.symmetric_full();  // invalid on unsigned and floats
    switch ((s.a[2] >> 1) % 3) {
      case 1:
        sc = sc.per_axis(static_cast<std::int64_t>(s.a[3] % 5) - 2);
        break;
      case 2: {
        std::vector<std::int64_t> blk;
        for (int i = 0; i < 1 + (s.a[3] % 2); ++i) blk.push_back(1 + ((s.a[3] >> (2 + 2 * i)) & 3));
        if ((s.a[3] & 0xC0) == 0xC0) blk.back() = kHuge[s.a[1] & 7];  // huge, or invalid (< 1)
        sc = sc.per_block(std::move(blk));
        break;
      }
      default:
        break;
    }
    switch ((s.a[2] >> 3) % 3) {
      case 1:
        sc = sc.packed_u8();
        break;
      case 2:
        sc = sc.packed_u32();
        break;
      default:
        break;
    }
    if (((s.a[1] >> 4) & 3) == 2) sc = sc.tensor_scales(q::ScaleType::f32);  // two levels
    if (((s.a[1] >> 4) & 3) == 3) sc = sc.tensor_scales(q::ScaleType::ue8m0);
    // A codebook of 2^bits ascending values (invalid on signed and float values).
    if (((s.a[2] >> 3) & 7) == 7) {
      std::vector<float> t(std::size_t{1} << q::bits(sc.value));
      for (std::size_t i = 0; i < t.size(); ++i)
        t[i] = (static_cast<float>(i) - static_cast<float>(t.size() / 2)) * 0.37f;
      sc = sc.codebook_of(std::move(t));
    }
    return sc.scales(static_cast<q::ScaleType>((s.a[2] >> 5) % 5));
  }

  Shape reshape_target(const T& x, std::uint8_t b1, std::uint8_t b2) {
    const std::int64_t n = x.valid() ? x.numel() : 1;
    switch (b1 % 6) {
      case 0:
        return Shape{n};
      case 1:
        return Shape{-1};
      case 2:
        return Shape{1, n};
      case 3:
        return Shape{-1, 1};
      case 4:
        if (n % 2 == 0) return Shape{2, -1};
        return Shape{n, 1, 1};
      default:
        return shape_of(b2, static_cast<std::uint8_t>(b2 >> 2));  // usually wrong: ShapeError
    }
  }

  std::vector<std::int64_t> perm_of(const T& x, std::uint8_t b) {
    const std::size_t r = x.valid() ? x.rank() : 0;
    std::vector<std::int64_t> p(r);
    for (std::size_t i = 0; i < r; ++i) p[i] = static_cast<std::int64_t>(i);
    if (r > 1)
      for (std::size_t i = r - 1; i > 0; --i) std::swap(p[i], p[(b >> i) % (i + 1)]);
    if (b & 0x80 && !p.empty()) p[0] = -1;  // negative axis (allowed, counted from the end)
    if (b & 0x40) p.push_back(0);           // wrong length or repeated axis
    return p;
  }

  std::vector<ferry::Range> ranges_of(const T& x, std::uint8_t b1, std::uint8_t b2) {
    const std::size_t r = x.valid() ? x.rank() : 0;
    const std::size_t n = std::min<std::size_t>(r + (b1 & 0x80 ? 1 : 0), (b1 & 3) + 1);
    std::vector<ferry::Range> out;
    for (std::size_t i = 0; i < n; ++i) {
      const auto v = static_cast<std::uint8_t>(b2 >> (i * 2));
      ferry::Range rg;
      rg.start = static_cast<std::int64_t>(v & 3) - 1;
      rg.end = static_cast<std::int64_t>((b1 >> 2) & 7) - 2;
      if (rg.end == -2) rg.end = 100;  // past the end: clamped
      rg.step = (b1 & 0x40) ? 1 + ((v >> 2) & 1) : 1;
      if ((b1 & 0x60) == 0x60) rg.step = 0;  // invalid
      if ((b2 & 0xC0) == 0xC0) {             // bounds and steps at the limits of int64
        rg.start = (v & 1) ? INT64_MIN : kHuge[(b1 >> 2) & 7];
        rg.end = (v & 2) ? INT64_MAX : -kHuge[(b1 >> 2) & 1];
        if (b1 & 0x40) rg.step = kHuge[(v >> 2) & 7];
      }
      out.push_back(rg);
    }
    return out;
  }

  // Runs one step; returns its result tensor, or nothing for a step that has none.
  std::optional<T> exec(const Step& s, Outcome& read_only_outcome) {
    const auto& a = s.a;
    switch (s.op % 22) {
      case 0: {  // from_vector
        const DType dt = kDTypes[a[0] % kNumDTypes];
        Shape sh = shape_of(a[1], a[2]);
        // A huge valid count gets no values (TensorData's ShapeError); an overflowing one throws
        // ShapeError from numel() itself, in both modes alike; a negative dim (numel() < 0, or
        // > 0 from two of them) gets no values either, and from_vector's own ShapeError.
        const bool negative = std::ranges::any_of(sh.dims(), [](std::int64_t v) { return v < 0; });
        const auto n = negative ? 0 : std::min<std::int64_t>(sh.numel(), 1 << 12);
        if (dt == DType::boolean) {
          auto iv = values<std::int32_t>(n, a[3]);
          std::vector<bool> bv(iv.size());
          for (std::size_t i = 0; i < iv.size(); ++i) bv[i] = iv[i] > 0;
          return r_.from_data(ferry::TensorData::from(bv, sh), dev(a[4]));
        }
        return ferry::visit_dtype(dt, [&]<class V>(V) -> T {
          if constexpr (std::is_same_v<V, bool>)
            return T();
          else
            return r_.from_vector(values<V>(n, a[3]), sh, dev(a[4]));
        });
      }
      case 1:  // full / zeros
        return r_.full(shape_of(a[1], a[2]), scalar_of(a[3]), kDTypes[a[0] % kNumDTypes],
                       dev(a[4]));
      case 2: {  // arange
        const DType dt = kDTypes[a[0] % kNumDTypes];
        if (a[5] & 1)
          return r_.arange(Scalar(static_cast<double>(static_cast<std::int8_t>(a[1]) % 8) / 2),
                           Scalar(static_cast<double>(static_cast<std::int8_t>(a[2]) % 8) / 2),
                           Scalar(static_cast<double>(static_cast<std::int8_t>(a[3]) % 5) / 2), dt,
                           dev(a[4]));
        return r_.arange(Scalar(static_cast<std::int64_t>(static_cast<std::int8_t>(a[1]) % 8)),
                         Scalar(static_cast<std::int64_t>(static_cast<std::int8_t>(a[2]) % 8)),
                         Scalar(static_cast<std::int64_t>(static_cast<std::int8_t>(a[3]) % 3)), dt,
                         dev(a[4]));
      }
      case 3: {  // random
        const auto dist = (a[0] & 1) ? ferry::Distribution::normal(0.0, (a[1] & 3) * 0.5)
                                     : ferry::Distribution::uniform(-1.0, (a[1] & 3) - 1.0);
        static constexpr DType kRandom[] = {DType::f32,  DType::f64, DType::f16,
                                            DType::bf16, DType::i32, DType::u8};
        const DType dt = kRandom[(a[0] >> 1) % 6];
        return r_.random(shape_of(a[2], a[3]), dist, a[5], dev(a[4]), dt);
      }
      case 4: {  // unary
        static constexpr ferry::UnaryKind k[] = {
            ferry::UnaryKind::neg,  ferry::UnaryKind::abs,     ferry::UnaryKind::relu,
            ferry::UnaryKind::exp,  ferry::UnaryKind::log,     ferry::UnaryKind::sqrt,
            ferry::UnaryKind::tanh, ferry::UnaryKind::sigmoid, ferry::UnaryKind::gelu,
            ferry::UnaryKind::sin,  ferry::UnaryKind::cos,     ferry::UnaryKind::logical_not};
        return ferry::detail::unary(k[a[0] % 12], arg(a[1]));
      }
      case 5: {  // binary, tensor-tensor
        T x = arg(a[1]);
        T y = arg(a[2]);
        return ferry::detail::binary(static_cast<ferry::BinaryKind>(a[0] % 17), std::move(x),
                                     std::move(y));
      }
      case 6:  // binary with a scalar (arith and comparisons)
        return ferry::detail::binary_scalar(static_cast<ferry::BinaryKind>(a[0] % 15), arg(a[1]),
                                            scalar_of(a[2]));
      case 7: {  // where
        T m = arg(a[0]);
        T x = arg(a[1]);
        T y = arg(a[2]);
        return ferry::where(std::move(m), std::move(x), std::move(y));
      }
      case 8: {  // reductions
        const auto k = static_cast<ferry::ReduceKind>(a[0] % 7);
        std::optional<std::int64_t> dim;
        if (a[2] % 5 != 4) dim = static_cast<std::int64_t>(a[2] % 5) - 2;
        return ferry::detail::reduce(k, arg(a[1]), dim, (a[3] & 1) != 0);
      }
      case 9: {  // reshape (quantized tensors go to q_reshape)
        Shape target = reshape_target(peek(a[1]), a[2], a[3]);
        return ferry::reshape(arg(a[1]), std::move(target));
      }
      case 10: {  // permute
        auto p = perm_of(peek(a[1]), a[2]);
        return ferry::permute(arg(a[1]), std::move(p));
      }
      case 11: {  // slice
        auto rg = ranges_of(peek(a[1]), a[2], a[3]);
        return ferry::slice(arg(a[1]), std::move(rg));
      }
      case 12: {  // cat of 2 or 3
        std::vector<T> xs;
        xs.push_back(arg(a[1]));
        xs.push_back(arg(a[2]));
        if (a[3] & 1) xs.push_back(arg(a[4]));
        return ferry::cat(std::move(xs), static_cast<std::int64_t>(a[0] % 4) - 1);
      }
      case 13:  // quantize_dynamic
        return ferry::quantize_dynamic(arg(a[0]), scheme_of(s));
      case 14:                                                   // dequantize
        return ferry::dequantize(arg(a[0]), kDTypes[a[1] % 5]);  // 4 float dtypes, or i8
      case 15:                                                   // move to a device
        return arg(a[0]).to(dev(a[1]));
      case 16: {  // drop a slot
        slot_[a[0] & 7] = T();
        return std::nullopt;
      }
      case 17:  // cast
        return ferry::cast(arg(a[0]), kDTypes[a[1] % kNumDTypes]);
      case 18:  // clamp
        return ferry::clamp(arg(a[0]), scalar_of(a[1]), scalar_of(a[2]));
      case 19: {  // matmul
        T x = arg(a[0]);
        T y = arg(a[1]);
        return ferry::matmul(std::move(x), std::move(y));
      }
      case 20: {  // read a slot (no new tensor)
        read_only_outcome.kind = Outcome::value;
        read_only_outcome.text = peek(a[0]).valid() ? encode(peek(a[0])) : "empty";
        return std::nullopt;
      }
      default: {
        // The ops of issue #18 under a second selector, so that the sync steps of the kept
        // inputs (fuzz/regressions, corpus: none has a[7] >> 6 == 1) keep their meaning.
        if ((a[7] >> 6) == 1) return exec_more(s);
        r_.sync(dev(a[0]));  // sync one device: nothing may be pending to throw
        return std::nullopt;
      }
    }
  }

  // An index tensor from a slot: its values cast to i64 (often out of range: IndexError).
  T index_of(std::uint8_t b) { return ferry::cast(arg(b), DType::i64); }

  std::optional<T> exec_more(const Step& s) {
    const auto& a = s.a;
    const auto dim = static_cast<std::int64_t>(a[2] % 5) - 2;
    switch (a[6] % 11) {
      case 0:  // softmax, log_softmax (the fused op)
        return (a[3] & 1) ? ferry::log_softmax(arg(a[1]), dim) : ferry::softmax(arg(a[1]), dim);
      case 1:  // cumsum, cumprod, cummax, cummin
        return ferry::detail::scan(static_cast<ferry::ScanKind>(a[0] % 4), arg(a[1]), dim);
      case 2:  // argsort, stable, both directions
        return ferry::argsort(arg(a[1]), dim, (a[3] & 1) != 0);
      case 3: {  // topk: values or indices; k past the dim's size now and then
        auto vi =
            ferry::topk(arg(a[1]), static_cast<std::int64_t>(a[3] % 7) - 1, dim, (a[4] & 1) != 0);
        return (a[4] & 2) ? std::move(vi.indices) : std::move(vi.values);
      }
      case 4: {  // scatter, scatter_add
        T x = arg(a[1]);
        T i = index_of(a[3]);
        T v = arg(a[4]);
        return (a[0] & 1) ? ferry::scatter_add(std::move(x), dim, std::move(i), std::move(v))
                          : ferry::scatter(std::move(x), dim, std::move(i), std::move(v));
      }
      case 5: {  // gather_nd
        T x = arg(a[1]);
        return ferry::gather_nd(std::move(x), index_of(a[3]));
      }
      case 6: {  // scatter_nd, scatter_nd_add
        T x = arg(a[1]);
        T i = index_of(a[3]);
        T v = arg(a[4]);
        return (a[0] & 1) ? ferry::scatter_nd_add(std::move(x), std::move(i), std::move(v))
                          : ferry::scatter_nd(std::move(x), std::move(i), std::move(v));
      }
      case 7: {  // every unary kind: the second family, the composites, the predicates
#define FERRY_FUZZ_COUNT(n) +1
        constexpr int kinds = 0 FERRY_UNARY_KINDS(FERRY_FUZZ_COUNT)
            FERRY_UNARY_COMPOSITE_KINDS(FERRY_FUZZ_COUNT) FERRY_PREDICATE_KINDS(FERRY_FUZZ_COUNT);
#undef FERRY_FUZZ_COUNT
        return ferry::detail::unary(static_cast<ferry::UnaryKind>(a[0] % kinds), arg(a[1]));
      }
      case 8:  // random_int: bounds in and out of the dtype's range, low >= high
        return r_.random_int(shape_of(a[1], a[2]),
                             Scalar(static_cast<std::int64_t>(static_cast<std::int8_t>(a[3]))),
                             Scalar(static_cast<std::int64_t>(static_cast<std::int8_t>(a[4])) *
                                    ((a[0] & 2) ? 1000 : 1)),
                             a[5], dev(a[0] >> 2), kDTypes[a[5] % kNumDTypes]);
      case 9:  // bernoulli of a slot (p saturates outside [0, 1]; NaN p)
        return ferry::bernoulli(arg(a[1]), a[3]);
      default: {  // cummax/cummin with indices, or unfold
        if (a[0] & 1) {
          auto vi = (a[0] & 2) ? ferry::cummax_with_indices(arg(a[1]), dim)
                               : ferry::cummin_with_indices(arg(a[1]), dim);
          return (a[4] & 2) ? std::move(vi.indices) : std::move(vi.values);
        }
        return ferry::unfold(arg(a[1]), dim, a[3] % 4, static_cast<std::int64_t>(a[4] % 4) - 1);
      }
    }
  }

  void step(const Step& s, std::size_t i) {
    Outcome o;
    std::optional<T> res;
    try {
      res = exec(s, o);
    } catch (const ferry::Error& e) {
      o.kind = Outcome::error;
      o.type = type_name(e);
      o.text = e.what();
    } catch (const std::exception& e) {
      fail(fmt::format("step {} (op {}): non-ferry exception {}: {}", i, s.op % 22, type_name(e),
                       e.what()));
    }
    const std::size_t dst = s.a[7] & 7;
    if (trace_)
      std::fprintf(stderr, "%s step %zu op %d: %s %s\n", async_ ? "async " : "inline", i, s.op % 22,
                   res ? "tensor" : (o.kind == Outcome::error ? o.type.c_str() : "-"),
                   o.kind == Outcome::error ? o.text.c_str() : "");
    if (!async_) {
      if (res) {
        o.kind = Outcome::value;
        o.text = encode(*res);
        if (o.text.starts_with("!"))
          fail(fmt::format("step {}: inline read failed: {}", i, o.text));
        slot_[dst] = std::move(*res);
      }
      outcomes.push_back(std::move(o));
      return;
    }
    const Outcome& want = (*expected_)[i];
    if (!res) {
      if (o.kind != want.kind || o.type != want.type || o.text != want.text)
        fail(fmt::format("step {} (op {}): async outcome [{} {} {}] differs from inline [{} {} {}]",
                         i, s.op % 22, static_cast<int>(o.kind), o.type, o.text,
                         static_cast<int>(want.kind), want.type, want.text));
      return;
    }
    if (want.kind == Outcome::error) {
      // Inline threw at the call; async accepted the op, so this must be a kernel error: the
      // read throws OpFailed quoting the original message and sync() rethrows the original.
      const std::string v = encode(*res);
      const std::string opfailed = "!" + std::string(typeid(ferry::OpFailed).name()) + ":";
      if (!v.starts_with(opfailed) || v.find(want.text) == std::string::npos)
        fail(fmt::format("step {} (op {}): inline threw {} '{}' at the call; async read gave '{}'",
                         i, s.op % 22, want.type, want.text, v));
      res.reset();
      try {
        r_.sync();
      } catch (const ferry::Error& e) {
        if (type_name(e) != want.type || want.text != e.what())
          fail(fmt::format("step {}: async sync threw {} '{}', inline threw {} '{}'", i,
                           type_name(e), e.what(), want.type, want.text));
        return;
      }
      fail(fmt::format("step {}: async sync did not rethrow the kernel error '{}'", i, want.text));
    }
    if (want.kind != Outcome::value)
      fail(fmt::format("step {} (op {}): async returned a tensor, inline did not", i, s.op % 22));
    if (s.a[6] & 1) {
      const std::string v = encode(*res);
      if (v != want.text)
        fail(fmt::format(
            "step {} (op {}): async value differs from inline:\n  async  {}\n  inline {}", i,
            s.op % 22, v, want.text));
    } else {
      pending_.emplace_back(*res, i);
    }
    slot_[dst] = std::move(*res);
  }

  bool trace_ = std::getenv("FERRY_FUZZ_TRACE") != nullptr;
  bool async_;
  int ndev_;
  const std::vector<Outcome>* expected_;
  Router<EigenCpu> r_;
  std::array<T, kSlots> slot_;
  std::vector<std::pair<T, std::size_t>> pending_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider in(bytes, size);
  const int ndev = in.ConsumeBool() ? 3 : 2;
  std::vector<Step> steps;
  while (in.remaining_bytes() > 0 && steps.size() < kMaxSteps) {
    Step s;
    s.op = in.ConsumeIntegral<std::uint8_t>();
    for (auto& x : s.a) x = in.ConsumeIntegral<std::uint8_t>();
    steps.push_back(s);
  }
  std::vector<Outcome> expected;
  {
    Driver inl(false, ndev, nullptr);
    inl.run(steps);
    expected = std::move(inl.outcomes);
  }
  {
    Driver as(true, ndev, &expected);
    as.run(steps);
  }
  return 0;
}

#ifdef FERRY_FUZZ_STANDALONE
// Replays inputs without libFuzzer (e.g. under gdb): fuzz_ops_replay FILE...
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::FILE* f = std::fopen(argv[i], "rb");
    if (!f) return 2;
    std::vector<std::uint8_t> buf;
    for (int c; (c = std::fgetc(f)) != EOF;) buf.push_back(static_cast<std::uint8_t>(c));
    std::fclose(f);
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
    std::printf("%s: ok\n", argv[i]);
  }
}
#endif

// Fuzz target: QuantizedParts::make on arbitrary schemes, shapes and buffers.
// SPDX-License-Identifier: MIT
//
// Every input either makes make() throw a ferry::Error, or gives a valid tensor that must
//  - round-trip bit-exact through q_from_parts -> cpu:0 -> cpu:1 -> cpu:2 -> cpu:0 -> to_parts,
//  - dequantize on the router to the same bytes as quant::dequantize on the host,
//  - leave no live tensor and no allocated byte behind on any device.
// Anything else (another exception type, a crash, a mismatch, a leak) traps.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <ferry/ferry.hpp>
#include <vector>

namespace {

using ferry::CpuDevice;
using ferry::EigenCpu;
using ferry::Router;
namespace q = ferry::quant;

[[noreturn]] void fail(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz_parts: %s %s\n", what, detail.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

// Scale values that are valid, invalid, or on the edge of a half type.
// clang-format off
constexpr float kScales[] = {1.0f,  0.5f,      0.25f, 3.0f,     1e-3f,    65504.0f, 6e-8f,
                             1e30f, 0.0f,      -1.0f, 1e-45f,   7.5f,     0.1f,     2.0f,
                             1e-8f, __FLT_MAX__, -0.0f, __builtin_nanf(""), __builtin_inff()};
// clang-format on

struct Input {
  q::Scheme scheme;
  ferry::Shape shape;
  std::vector<std::byte> data, scales, offsets;
};

std::vector<std::byte> raw_bytes(FuzzedDataProvider& in, std::size_t n) {
  std::vector<std::byte> v(n);
  for (auto& b : v) b = std::byte{in.ConsumeIntegral<std::uint8_t>()};
  return v;
}

Input decode(FuzzedDataProvider& in) {
  Input x;
  // Enumerators, two past the last valid value each, so corrupt ones are exercised too.
  x.scheme.value = static_cast<q::ValueType>(in.ConsumeIntegralInRange<int>(0, 7));
  x.scheme.mode = static_cast<q::Mode>(in.ConsumeIntegralInRange<int>(0, 4));
  x.scheme.granularity = static_cast<q::Granularity>(in.ConsumeIntegralInRange<int>(0, 4));
  x.scheme.storage = static_cast<q::Storage>(in.ConsumeIntegralInRange<int>(0, 4));
  x.scheme.scale_type = static_cast<q::ScaleType>(in.ConsumeIntegralInRange<int>(0, 4));
  // A second level (a tensor scale) on about half the inputs, a corrupt type among them.
  if (const int ts = in.ConsumeIntegralInRange<int>(0, 11); ts <= 5)
    x.scheme.tensor_scale = static_cast<q::ScaleType>(ts);
  const auto flags = in.ConsumeIntegral<std::uint8_t>();
  // Mostly keep axis/block consistent with the granularity (so valid tensors are common).
  const bool stray = flags & 0x80;
  if (x.scheme.granularity == q::Granularity::per_axis || stray)
    x.scheme.axis = in.ConsumeIntegralInRange<std::int64_t>(-5, 5);
  if (x.scheme.granularity == q::Granularity::per_block || stray) {
    const int nb = in.ConsumeIntegralInRange<int>(0, 4);
    for (int i = 0; i < nb; ++i)
      x.scheme.block.push_back(in.ConsumeIntegralInRange<std::int64_t>(-1, 6));
  }
  const int rank = in.ConsumeIntegralInRange<int>(0, 4);
  std::vector<std::int64_t> dims;
  for (int i = 0; i < rank; ++i) dims.push_back(in.ConsumeIntegralInRange<std::int64_t>(0, 6));
  if (flags & 0x40 && rank > 0) dims[0] = -1;  // negative dim: must be rejected
  x.shape = ferry::Shape(std::move(dims));

  if (flags & 0x01) {
    // Raw: arbitrary sizes and contents.
    x.data = raw_bytes(in, in.ConsumeIntegralInRange<std::size_t>(0, 64));
    x.scales = raw_bytes(in, in.ConsumeIntegralInRange<std::size_t>(0, 32));
    x.offsets = raw_bytes(in, in.ConsumeIntegralInRange<std::size_t>(0, 16));
    return x;
  }
  // Shaped: the sizes the scheme asks for (when it can tell), contents from the input, with a
  // few deliberate off-by-ones.
  std::size_t nd = 0, np = 0, sb = 4;
  try {
    const std::int64_t numel = x.shape.numel();
    nd = q::data_bytes(x.scheme, numel);
    np = static_cast<std::size_t>(q::num_params(x.scheme, x.shape));
    sb = q::scale_bytes(x.scheme.scale_type);
  } catch (const ferry::Error&) {
    nd = in.ConsumeIntegralInRange<std::size_t>(0, 16);
    np = in.ConsumeIntegralInRange<std::size_t>(0, 4);
  }
  if (nd > 4096 || np > 1024) return x;  // cannot happen with dims <= 6; keep iterations tiny
  if (flags & 0x02) nd += 1;
  if (flags & 0x04) np += 1;
  x.data = raw_bytes(in, nd);
  if (!(flags & 0x08)) {
    // Clear padding bits past the last value, as validate() demands.
    try {
      const std::size_t used =
          static_cast<std::size_t>(x.shape.numel()) *
          static_cast<std::size_t>(q::detail::slot_bits(x.scheme.value, x.scheme.storage));
      for (std::size_t b = used / 8; b < x.data.size(); ++b) {
        const unsigned keep = b == used / 8 ? (1u << (used % 8)) - 1u : 0u;
        x.data[b] &= std::byte(static_cast<unsigned char>(keep));
      }
    } catch (const ferry::Error&) {
    }
  }
  x.scales.resize(np * sb);
  const bool raw_scales = flags & 0x10;
  for (std::size_t i = 0; i < np; ++i) {
    if (raw_scales) {
      for (std::size_t k = 0; k < sb; ++k)
        x.scales[i * sb + k] = std::byte{in.ConsumeIntegral<std::uint8_t>()};
    } else {
      const float v = kScales[in.ConsumeIntegralInRange<std::size_t>(
          0, (flags & 0x20 ? std::size(kScales) : 8) - 1)];
      try {
        q::store_scale(x.scheme.scale_type, v, x.scales.data() + i * sb);
      } catch (const ferry::Error&) {
      }
    }
  }
  if (x.scheme.tensor_scale) {
    try {
      const std::size_t tb = q::tensor_scale_bytes(x.scheme);
      x.scales.resize(np * sb + tb);
      q::store_scale(*x.scheme.tensor_scale,
                     kScales[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kScales) - 1)],
                     x.scales.data() + np * sb);
    } catch (const ferry::Error&) {
    }
  }
  if (x.scheme.mode == q::Mode::affine || (flags & 0x02)) {
    x.offsets.resize(np);
    for (auto& o : x.offsets) {
      // Mostly small offsets, which are within range for every value type.
      const auto r = in.ConsumeIntegral<std::uint8_t>();
      o = std::byte{static_cast<unsigned char>(raw_scales ? r : r % 2)};
    }
  }
  return x;
}

/// "" when no device holds a tensor or an allocated byte, else what is left where.
std::string leftovers(Router<EigenCpu>& r, int ndev) {
  std::string out;
  for (int d = 0; d < ndev; ++d) {
    const auto s = r.stats(CpuDevice{d});
    const auto bytes = r.backend().allocated_bytes(CpuDevice{d});
    if (s.live_tensors != 0 || s.live_bytes != 0 || bytes != 0)
      out += fmt::format("cpu:{} holds {} tensors, {} live bytes, {} allocated bytes; ", d,
                         s.live_tensors, s.live_bytes, bytes);
  }
  return out;
}

void check_valid(const q::QuantizedParts& p, bool async) {
  constexpr int ndev = 3;
  ferry::RouterOptions opts;
  opts.execution = async ? ferry::Execution::Async : ferry::Execution::Inline;
  opts.threads_per_device = 1;
  Router<EigenCpu> r(EigenCpu(ndev), opts);
  {
    auto t = r.q_from_parts(p, CpuDevice{0}).to(CpuDevice{1}).to(CpuDevice{2}).to(CpuDevice{0});
    const q::QuantizedParts back = t.to_parts();
    if (!(back == p)) fail("round trip changed the parts", fmt::format("{}", p.scheme));

    // Router dequantize vs host dequantize, byte for byte (NaN-safe).
    std::vector<float> host(static_cast<std::size_t>(p.shape.numel()));
    q::dequantize(p, host);
    const auto dev = ferry::dequantize(t.to(CpuDevice{1})).to_data();
    if (dev.dtype() != ferry::DType::f32 || dev.shape() != p.shape)
      fail("dequantize gave the wrong dtype or shape");
    if (dev.bytes().size() != host.size() * sizeof(float) ||
        (!host.empty() && std::memcmp(dev.bytes().data(), host.data(), dev.bytes().size()) != 0))
      fail("router dequantize differs from host dequantize", fmt::format("{}", p.scheme));
  }
  r.sync();
  if (const auto left = leftovers(r, ndev); !left.empty())
    fail(async ? "async: after dropping everything and sync():"
               : "inline: after dropping everything:",
         left);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider in(bytes, size);
  const bool async = in.ConsumeBool();
  Input x = decode(in);
  q::QuantizedParts p;
  try {
    p = q::QuantizedParts::make(x.scheme, x.shape, std::move(x.data), std::move(x.scales),
                                std::move(x.offsets));
  } catch (const ferry::Error&) {
    return 0;  // rejected: fine
  } catch (const std::exception& e) {
    fail("make threw a non-ferry exception:", e.what());
  }
  try {
    check_valid(p, async);
  } catch (const std::exception& e) {
    fail("a valid tensor failed on the router:", e.what());
  }
  return 0;
}

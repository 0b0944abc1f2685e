// Tests of the EigenCpu reference backend, called directly (no router): devices, data in/out,
// accounting, transfers, in-place reuse and concurrency. Expected values are computed independently
// in the test (by hand or naive loops).
#include <algorithm>
#include <vector>

#include "eigen_cpu_helpers.hpp"

using namespace ferry;
using namespace ferry_test;

TEST_CASE("the backend names its devices and rejects unknown ones", "[eigen_cpu]") {
  EigenCpu cpu(3);
  STATIC_REQUIRE(EigenCpu::name() == "eigen-cpu");
  REQUIRE(cpu.devices() == std::vector<CpuDevice>{{0}, {1}, {2}});
  REQUIRE(fmt::format("{}", CpuDevice{2}) == "cpu:2");
  std::ostringstream os;
  os << CpuDevice{1};
  REQUIRE(os.str() == "cpu:1");
  REQUIRE_THROWS_MATCHES(cpu.allocated_bytes(CpuDevice{3}), DeviceError,
                         Contains("unknown device cpu:3"));
  REQUIRE_THROWS_MATCHES(make(cpu, std::vector<float>{1}, Shape{1}, CpuDevice{7}), DeviceError,
                         Contains("[ferry.device] float_from_data: unknown device cpu:7"));
  REQUIRE_THROWS_AS(cpu.float_full(Shape{2}, DType::f32, 1, CpuDevice{-1}), DeviceError);
  REQUIRE_THROWS_AS(EigenCpu(0), ValueError);
}

TEST_CASE("data round-trips through every plain dtype", "[eigen_cpu]") {
  EigenCpu cpu;
  REQUIRE(read<float>(cpu, make(cpu, std::vector<float>{1.5f, -2, 3}, Shape{3})) ==
          std::vector<float>{1.5f, -2, 3});
  REQUIRE(read<double>(cpu, make(cpu, std::vector<double>{1e300, -0.0}, Shape{2, 1})) ==
          std::vector<double>{1e300, -0.0});
  REQUIRE(read<std::int32_t>(cpu, make(cpu, std::vector<std::int32_t>{7, -8}, Shape{2})) ==
          std::vector<std::int32_t>{7, -8});
  const auto big = std::numeric_limits<std::int64_t>::max();
  REQUIRE(read<std::int64_t>(cpu, make(cpu, std::vector<std::int64_t>{big, 1}, Shape{1, 2})) ==
          std::vector<std::int64_t>{big, 1});
  auto scalar = make(cpu, std::vector<float>{4}, Shape{});
  REQUIRE(scalar.shape.rank() == 0);
  REQUIRE(read<float>(cpu, scalar) == std::vector<float>{4});
  auto empty = make(cpu, std::vector<float>{}, Shape{0, 3});
  REQUIRE(cpu.nbytes(empty) == 0);
  REQUIRE(cpu.float_into_data(empty).shape() == Shape{0, 3});

  SECTION("bool bytes are normalised to 0/1") {
    std::vector<std::byte> raw{std::byte{0}, std::byte{2}, std::byte{255}};
    auto t = cpu.bool_from_data(TensorData(Shape{3}, DType::boolean, raw), D0);
    REQUIRE(read_bool(cpu, t) == std::vector<std::uint8_t>{0, 1, 1});
  }
  SECTION("a kind mismatch is a DTypeError naming the op") {
    auto d = TensorData::from(std::vector<std::int32_t>{1, 2});
    REQUIRE_THROWS_MATCHES(cpu.float_from_data(d, D0), DTypeError,
                           Contains("float_from_data: data of dtype i32 is not of kind Float"));
    REQUIRE_THROWS_AS(cpu.bool_from_data(d, D0), DTypeError);
    auto f = make(cpu, std::vector<float>{1}, Shape{1});
    REQUIRE_THROWS_MATCHES(cpu.int_into_data(f), DTypeError, Contains("int_into_data"));
  }
  SECTION("a moved-from handle is an error, not a crash") {
    auto f = make(cpu, std::vector<float>{1}, Shape{1});
    auto g = std::move(f);
    REQUIRE_THROWS_MATCHES(cpu.exp(f), HandleError, Contains("exp: the handle has no buffer"));
  }
}

TEST_CASE("accounting counts live bytes per device and returns to zero", "[eigen_cpu]") {
  EigenCpu cpu(2);
  {
    auto a = make(cpu, std::vector<double>(10, 1.0), Shape{10});
    REQUIRE(cpu.allocated_bytes(D0) == 80);
    REQUIRE(cpu.allocated_bytes(D1) == 0);
    REQUIRE(cpu.allocations(D0) == 1);
    auto b = cpu.float_full(Shape{2, 2}, DType::f32, 0.5, D1);
    REQUIRE(cpu.allocated_bytes(D1) == 16);
    EigenCpu copy = cpu;  // copies share the accounting
    REQUIRE(copy.allocated_bytes(D1) == 16);
  }
  REQUIRE(cpu.allocated_bytes(D0) == 0);
  REQUIRE(cpu.allocated_bytes(D1) == 0);
  REQUIRE(cpu.allocations(D0) == 1);
}

TEST_CASE("tiny buffers live in their own object and are counted like any other", "[eigen_cpu]") {
  using namespace detail::cpu;
  auto acc = std::make_shared<Accounts>(1, std::size_t{1} << 20);
  DeviceCounters& c = (*acc)[0];
  std::vector<CpuTensor> live;
  for (std::int64_t n : {1, 3, 15, 16, 17, 100}) {  // 4 .. 400 bytes of f32
    INFO("elements: " << n);
    const auto bytes = static_cast<std::size_t>(4 * n);
    CpuTensor t = alloc(acc, 0, Shape{n}, DType::f32);
    REQUIRE(t.buf->size() == bytes);
    REQUIRE(reinterpret_cast<std::uintptr_t>(t.buf->data()) % CpuBuffer::alignment == 0);
    REQUIRE(c.bytes == static_cast<std::int64_t>(bytes));
    std::fill_n(t.data<float>(), n, 2.5f);  // every byte is the tensor's (ASan checks)
    REQUIRE(t.data<float>()[n - 1] == 2.5f);
    t = {};
    REQUIRE(c.bytes == 0);
    // Up to CpuBuffer::inline_bytes nothing goes through the device's cache.
    REQUIRE(c.cache.cached_bytes() ==
            (bytes > CpuBuffer::inline_bytes ? MemoryCache::size_class(bytes) : 0));
    c.cache.release();
  }
  REQUIRE(c.allocations == 6);
  for (int i = 0; i < 50; ++i) {  // alignment holds wherever the allocator puts the object
    live.push_back(alloc(acc, 0, Shape{1 + i % 16}, DType::f32));
    REQUIRE(reinterpret_cast<std::uintptr_t>(live.back().buf->data()) % CpuBuffer::alignment == 0);
  }
  live.clear();
  REQUIRE(c.bytes == 0);
  SECTION("poison mode fills them too") {
    c.cache.set_poison(true);
    CpuTensor t = alloc(acc, 0, Shape{3}, DType::i16);
    for (int i = 0; i < 6; ++i) REQUIRE(t.buf->data()[i] == std::byte{0xFF});
  }
  SECTION("the device's memory limit holds for them") {
    c.limit = 12;
    CpuTensor t = alloc(acc, 0, Shape{3}, DType::f32);
    REQUIRE_THROWS_AS(alloc(acc, 0, Shape{1}, DType::f32), std::bad_alloc);
    REQUIRE(c.bytes == 12);
  }
  SECTION("an empty tensor has no bytes at all") {
    CpuTensor t = alloc(acc, 0, Shape{0, 4}, DType::f32);
    REQUIRE(t.buf->data() == nullptr);
    REQUIRE(t.buf->size() == 0);
  }
}

TEST_CASE("a transfer is a real copy accounted on both devices", "[eigen_cpu]") {
  EigenCpu cpu(2);
  auto a = make(cpu, std::vector<std::int64_t>{1, 2, 3}, Shape{3});
  auto b = cpu.int_to_device(a, D1);
  REQUIRE(b.device == 1);
  REQUIRE(ptr(a) != ptr(b));
  REQUIRE(cpu.allocated_bytes(D0) == 24);
  REQUIRE(cpu.allocated_bytes(D1) == 24);
  REQUIRE(read<std::int64_t>(cpu, b) == std::vector<std::int64_t>{1, 2, 3});
  auto same = cpu.int_to_device(a, D0);  // same device: the handle itself
  REQUIRE(ptr(same) == ptr(a));
  REQUIRE(cpu.allocations(D0) == 1);
  auto m = make_bool(cpu, {1, 0}, Shape{2});
  REQUIRE(read_bool(cpu, cpu.bool_to_device(m, D1)) == std::vector<std::uint8_t>{1, 0});
  auto f = cpu.float_to_device(make(cpu, std::vector<float>{2.5f}, Shape{1}), D1);
  REQUIRE(read<float>(cpu, f) == std::vector<float>{2.5f});
  REQUIRE_THROWS_MATCHES(cpu.int_to_device(a, CpuDevice{2}), DeviceError,
                         Contains("int_to_device: unknown device cpu:2"));
  REQUIRE_THROWS_AS(cpu.float_to_device(a, D1), DTypeError);
  a = {};
  b = {};
  same = {};
  m = {};
  f = {};
  REQUIRE(cpu.allocated_bytes(D0) == 0);
  REQUIRE(cpu.allocated_bytes(D1) == 0);
  SECTION("operands on different devices are rejected") {
    auto x = make(cpu, std::vector<float>{1}, Shape{1}, D0);
    auto y = make(cpu, std::vector<float>{1}, Shape{1}, D1);
    REQUIRE_THROWS_MATCHES(cpu.add(x, y), DeviceError,
                           Contains("add: operands live on cpu:0 and cpu:1"));
  }
}

TEST_CASE("freed buffers are cached per device, reused for the same size class, and bounded",
          "[eigen_cpu]") {
  using detail::cpu::MemoryCache;
  // Size classes: 64-byte steps up to 256, then eight per power of two (<= 12.5% slack).
  REQUIRE(MemoryCache::size_class(1) == 64);
  REQUIRE(MemoryCache::size_class(256) == 256);
  REQUIRE(MemoryCache::size_class(257) == 288);    // 256 / 8 = 32-byte steps in [256, 512)
  REQUIRE(MemoryCache::size_class(1000) == 1024);  // 64-byte steps in [512, 1024)
  REQUIRE(MemoryCache::size_class(1025) == 1152);  // 128-byte steps in [1024, 2048)
  REQUIRE(MemoryCache::floor_class(1100) == 1024);
  REQUIRE(MemoryCache::floor_class(63) == 0);

  EigenCpu cpu(2, 4096);  // at most 4 KiB cached per device
  const void* first = nullptr;
  {
    auto a = make(cpu, std::vector<float>(250, 1.0f), Shape{250});  // 1000 bytes: class 1024
    first = ptr(a);
  }
  REQUIRE(cpu.allocated_bytes(D0) == 0);  // live bytes exclude the cache
  REQUIRE(cpu.cached_bytes(D0) == 1024);
  REQUIRE(cpu.cached_bytes(D1) == 0);
  {
    auto b = make(cpu, std::vector<std::int32_t>(255, 7), Shape{255});  // 1020 bytes: class 1024
    REQUIRE(ptr(b) == first);  // the same block, handed out again
    REQUIRE(cpu.cached_bytes(D0) == 0);
    REQUIRE(read<std::int32_t>(cpu, b) == std::vector<std::int32_t>(255, 7));
    auto other = make(cpu, std::vector<float>(250, 1.0f), Shape{250}, D1);  // another device
    REQUIRE(ptr(other) != first);
  }
  REQUIRE(cpu.allocations(D0) == 2);  // every buffer counts, cached or not
  // Over the limit a freed block goes straight back to the system.
  {
    auto big = make(cpu, std::vector<float>(2048, 1.0f), Shape{2048});  // 8 KiB > 4 KiB
  }
  REQUIRE(cpu.cached_bytes(D0) == 1024);
  cpu.empty_cache();
  REQUIRE(cpu.cached_bytes(D0) == 0);
  REQUIRE(cpu.cached_bytes(D1) == 0);

  SECTION("quantized parts moved between devices reuse the memory of dropped copies") {
    const auto s = quant::Scheme::of(quant::ValueType::i4).per_block({32}).packed_u8();
    EigenCpu big_cache(2);
    const auto w = big_cache.quantize_dynamic(
        make(big_cache, std::vector<float>(4096, 0.5f), Shape{64, 64}), s);
    const std::byte* data = nullptr;
    {
      auto moved = big_cache.q_to_device(w, D1);
      data = moved.parts().data.data();
      REQUIRE(moved.parts() == w.parts());
    }
    REQUIRE(big_cache.cached_bytes(D1) >= w.parts().data.size());
    auto again = big_cache.q_to_device(w, D1);
    REQUIRE(again.parts().data.data() == data);
    REQUIRE(again.parts() == w.parts());  // byte for byte, nothing left over from before
  }
  SECTION("a zero limit caches nothing") {
    EigenCpu none(1, 0);
    { auto a = make(none, std::vector<float>(16, 1.0f), Shape{16}); }
    REQUIRE(none.cached_bytes(D0) == 0);
  }
}

TEST_CASE(
    "large transfers are split over cores and arrive byte for byte, in fresh and recycled "
    "memory",
    "[eigen_cpu]") {
  using detail::CopyArena;
  EigenCpu cpu(2);
  // Sizes that are not a multiple of the copy's chunks, above the size where it splits.
  auto values = [](std::size_t n, float phase) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = std::sin(static_cast<float>(i) * 0.37f + phase) * 3.0f;
    return v;
  };
  const std::size_t n = CopyArena::kParallelBytes / 4 + 12345;  // 1.05 MiB of floats
  REQUIRE(n * 4 % CopyArena::kChunkBytes != 0);
  const auto host = values(n, 0.0f);
  auto f = cpu.float_to_device(make(cpu, host, Shape{static_cast<std::int64_t>(n)}), D1);
  REQUIRE(read<float>(cpu, f) == host);

  // int8 per block of 32: 2.25 MiB of packed data (split) and 144 KiB of scales (one memcpy).
  const auto s = quant::Scheme::of(quant::ValueType::i8).per_block({32});
  const auto w1 = cpu.quantize_dynamic(make(cpu, values(1024 * 2304, 1.0f), Shape{1024, 2304}), s);
  // Fewer bytes in the same size class: its move lands in the vector w1's copy left behind.
  const auto w2 = cpu.quantize_dynamic(make(cpu, values(1024 * 2272, 2.0f), Shape{1024, 2272}), s);
  REQUIRE(w1.parts().data.size() >= CopyArena::kParallelBytes);
  REQUIRE(detail::cpu::MemoryCache::size_class(w1.parts().data.size()) ==
          detail::cpu::MemoryCache::size_class(w2.parts().data.size()));
  const std::byte* first = nullptr;
  {
    auto m1 = cpu.q_to_device(w1, D1);
    first = m1.parts().data.data();
    REQUIRE(m1.parts() == w1.parts());
  }
  {
    auto m2 = cpu.q_to_device(w2, D1);  // shrinks the recycled vector: no byte of w1 is left
    REQUIRE(m2.parts().data.data() == first);
    REQUIRE(m2.parts() == w2.parts());
    REQUIRE(cpu.dequantize(m2, DType::f32).shape == Shape{1024, 2272});
  }
  auto m1 = cpu.q_to_device(w1, D1);  // grows it back: the tail is written, not left zero
  REQUIRE(m1.parts().data.data() == first);
  REQUIRE(m1.parts() == w1.parts());
  REQUIRE(read<float>(cpu, cpu.dequantize(m1, DType::f32)) ==
          read<float>(cpu, cpu.dequantize(w1, DType::f32)));
}

TEST_CASE("fresh memory made ready for its first write keeps every byte it holds", "[eigen_cpu]") {
  // prepare_fresh only advises the kernel (huge pages, faults taken by every thread): over
  // written memory, at unaligned starts and ends, below and above its 4 MiB threshold, it
  // changes no byte, and memory it prepared is written and read back whole.
  for (const std::size_t n : {std::size_t{1} << 20, (std::size_t{9} << 20) + 4097}) {
    std::vector<std::uint8_t> v(n + 64);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(i * 131 + 7);
    const auto want = v;
    for (const std::size_t off : {std::size_t{0}, std::size_t{1}, std::size_t{63}})
      detail::prepare_fresh(v.data() + off, n);
    REQUIRE(v == want);
  }
  detail::prepare_fresh(nullptr, std::size_t{8} << 20);  // nothing to prepare: no effect
  // A fresh 9 MiB block and vector from the device cache: every byte writable and kept.
  detail::cpu::MemoryCache cache(0);
  const std::size_t n = (std::size_t{9} << 20) + 100;
  const std::size_t cls = detail::cpu::MemoryCache::size_class(n);
  std::byte* b = cache.take_block(cls);
  std::memset(b, 0x5A, cls);
  REQUIRE(std::all_of(b, b + cls, [](std::byte x) { return x == std::byte{0x5A}; }));
  cache.give_block(b, cls);
  auto sized = cache.take_sized_vector(n);
  REQUIRE(sized.size() == n);
  std::fill(sized.begin(), sized.end(), std::byte{0xC3});
  REQUIRE(std::count(sized.begin(), sized.end(), std::byte{0xC3}) ==
          static_cast<std::ptrdiff_t>(n));
}

TEST_CASE("a handle held once is reused in place, a shared one never written", "[eigen_cpu]") {
  EigenCpu cpu;
  auto fresh = [&] { return make(cpu, std::vector<float>{1, 2, 3, 4}, Shape{2, 2}); };
  SECTION("binary op") {
    auto a = fresh();
    auto b = fresh();
    const void* pa = ptr(a);
    const auto before = cpu.allocations(D0);
    auto c = cpu.add(std::move(a), b);
    REQUIRE(cpu.allocations(D0) == before);
    REQUIRE(ptr(c) == pa);
    REQUIRE(read<float>(cpu, c) == std::vector<float>{2, 4, 6, 8});

    auto keep = c;  // shared now: read-only
    auto d = cpu.mul(c, b);
    REQUIRE(cpu.allocations(D0) == before + 1);
    REQUIRE(ptr(d) != pa);
    REQUIRE(read<float>(cpu, keep) == std::vector<float>{2, 4, 6, 8});
    REQUIRE(read<float>(cpu, d) == std::vector<float>{2, 8, 18, 32});
  }
  SECTION("the second operand is reused when the first is broadcast") {
    auto row = make(cpu, std::vector<float>{10, 20}, Shape{2});
    auto b = fresh();
    const void* pb = ptr(b);
    auto c = cpu.sub(row, std::move(b));
    REQUIRE(ptr(c) == pb);
    REQUIRE(read<float>(cpu, c) == std::vector<float>{9, 18, 7, 16});
  }
  SECTION("a broadcast operand is not reused even when held once") {
    auto row = make(cpu, std::vector<float>{10, 20}, Shape{2});
    auto b = fresh();
    auto keep = b;
    const void* pr = ptr(row);
    auto c = cpu.add(std::move(row), b);
    REQUIRE(ptr(c) != pr);
    REQUIRE(c.shape == Shape{2, 2});
  }
  SECTION("unary, scalar and clamp ops") {
    auto a = fresh();
    const void* p = ptr(a);
    const auto before = cpu.allocations(D0);
    a = cpu.exp(std::move(a));
    a = cpu.add_scalar(std::move(a), 1.0);
    a = cpu.clamp(std::move(a), 0.0, 5.0);
    a = cpu.neg(std::move(a));
    REQUIRE(ptr(a) == p);
    REQUIRE(cpu.allocations(D0) == before);
    auto shared = a;
    auto b = cpu.abs(a);
    REQUIRE(ptr(b) != p);
    REQUIRE(read<float>(cpu, shared)[3] == -5.0f);
  }
  SECTION("comparisons reuse only bool inputs") {
    auto a = fresh();
    const void* pa = ptr(a);
    auto m = cpu.greater_scalar(std::move(a), 2);
    REQUIRE(ptr(m) != pa);  // f32 -> bool: different size
    const void* pm = ptr(m);
    auto n = cpu.equal_scalar(std::move(m), true);
    REQUIRE(ptr(n) == pm);
    REQUIRE(read_bool(cpu, n) == std::vector<std::uint8_t>{0, 0, 1, 1});
    n = cpu.logical_not(std::move(n));
    REQUIRE(ptr(n) == pm);
  }
  SECTION("reshape moves or shares the buffer, never copies") {
    auto a = fresh();
    const void* p = ptr(a);
    const auto before = cpu.allocations(D0);
    auto r = cpu.reshape(std::move(a), Shape{4});
    REQUIRE(ptr(r) == p);
    REQUIRE(r.buf.use_count() == 1);
    auto s = cpu.reshape(r, Shape{1, 4});
    REQUIRE(ptr(s) == p);
    REQUIRE(r.buf.use_count() == 2);
    REQUIRE(cpu.allocations(D0) == before);
    // The shared buffer is now read-only for both.
    auto t = cpu.add_scalar(s, 1);
    REQUIRE(ptr(t) != p);
    REQUIRE(read<float>(cpu, r) == std::vector<float>{1, 2, 3, 4});
  }
  SECTION("slice_assign writes in place only when held once") {
    auto a = fresh();
    const void* p = ptr(a);
    auto v = make(cpu, std::vector<float>{9, 9}, Shape{2, 1});
    std::vector<Range> rg{{0, 2, 1}, {1, 2, 1}};
    auto keep = a;
    auto b = cpu.slice_assign(a, rg, v);
    REQUIRE(ptr(b) != p);
    REQUIRE(read<float>(cpu, keep) == std::vector<float>{1, 2, 3, 4});
    REQUIRE(read<float>(cpu, b) == std::vector<float>{1, 9, 3, 9});
    keep = {};
    a = {};
    const void* pb = ptr(b);
    const auto before = cpu.allocations(D0);
    auto c = cpu.slice_assign(std::move(b), rg, make(cpu, std::vector<float>{7, 8}, Shape{2, 1}));
    REQUIRE(cpu.allocations(D0) == before + 1);  // only the value's buffer
    REQUIRE(ptr(c) == pb);
    REQUIRE(read<float>(cpu, c) == std::vector<float>{1, 7, 3, 8});
  }
  SECTION("where reuses a branch held once") {
    auto m = make_bool(cpu, {1, 0}, Shape{2});
    auto a = fresh();
    auto b = fresh();
    const void* pb = ptr(b);
    auto keep = a;
    auto c = cpu.where(m, a, std::move(b));
    REQUIRE(ptr(c) == pb);
    REQUIRE(read<float>(cpu, c) == std::vector<float>{1, 2, 3, 4});
  }
}

TEST_CASE("kernels on different devices run concurrently with exact accounting", "[eigen_cpu]") {
  EigenCpu cpu(2);
  auto work = [&](CpuDevice d) {
    for (int it = 0; it < 20; ++it) {
      auto a = cpu.float_random(Shape{256, 256}, DType::f32, Distribution::uniform(),
                                static_cast<std::uint64_t>(it), d);
      auto b = cpu.matmul(a, a);
      b = cpu.relu(std::move(b));
      auto s = cpu.sum(std::move(b), std::nullopt, false);
      auto t = cpu.float_to_device(std::move(s), CpuDevice{1 - d.index});
      REQUIRE(t.device == 1 - d.index);
    }
  };
  std::thread t0(work, D0), t1(work, D1);
  t0.join();
  t1.join();
  REQUIRE(cpu.allocated_bytes(D0) == 0);
  REQUIRE(cpu.allocated_bytes(D1) == 0);
  REQUIRE(cpu.allocations(D0) > 40);
}

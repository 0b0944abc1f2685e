// Every op on every dtype, checked against docs/dtypes.md's table (read from the file, so the
// table cannot go stale) and against values computed independently: integers by formula in
// 128-bit arithmetic wrapped to the dtype, f32/f64 by the C++ operators and <cmath>, f16 and bf16
// as the f32 result of the same op rounded by Eigen's conversions (a second implementation),
// compared bit for bit.
#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <ferry/detail/half_bulk.hpp>
#include <ferry/ferry.hpp>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "mini_backend.hpp"

using namespace ferry;

namespace {

__extension__ typedef __int128 i128;           // NOLINT: Wpedantic-clean via __extension__
__extension__ typedef unsigned __int128 u128;  // NOLINT

// test_primitives.cpp compiles this file again with FERRY_T_BACKEND set to NoComposite (every
// composite op decomposed) and FERRY_T_PRIMITIVES defined: the op table's test only.
#ifndef FERRY_T_BACKEND
#  define FERRY_T_BACKEND EigenCpu
constexpr bool kDecomposed = false;
#else
constexpr bool kDecomposed = true;
#endif
using R = Router<FERRY_T_BACKEND>;
using T_ = Tensor<FERRY_T_BACKEND>;
constexpr CpuDevice D0{0}, D1{1};

// ---- the table -----------------------------------------------------------------------------
struct Row {
  std::string ops;
  std::vector<bool> ok;  // per column of kColumns
};
constexpr DType kColumns[] = {DType::f32, DType::f64, DType::f16,    DType::bf16, DType::i8,
                              DType::i16, DType::i32, DType::i64,    DType::u8,   DType::u16,
                              DType::u32, DType::u64, DType::boolean};

std::vector<Row> read_table(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<Row> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("<!-- dtype-table begin -->") != std::string::npos) inside = true;
    if (line.find("<!-- dtype-table end -->") != std::string::npos) break;
    if (!inside || line.rfind("| ", 0) != 0 || line.rfind("| op ", 0) == 0 ||
        line.rfind("| --- ", 0) == 0)
      continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string c; std::getline(ss, c, '|');) {
      c.erase(0, c.find_first_not_of(' '));
      c.erase(c.find_last_not_of(' ') + 1);
      cells.push_back(c);
    }
    if (!cells.empty() && cells.back().empty()) cells.pop_back();
    REQUIRE(cells.size() == 1 + std::size(kColumns));
    Row r{cells[0], {}};
    for (std::size_t i = 1; i < cells.size(); ++i) {
      REQUIRE((cells[i] == "✓" || cells[i] == "—"));
      r.ok.push_back(cells[i] == "✓");
    }
    rows.push_back(std::move(r));
  }
  REQUIRE(!rows.empty());
  return rows;
}

// ---- inputs --------------------------------------------------------------------------------
template <class T>
constexpr bool is_half = is_half_v<T>;
template <class T>
using Host = std::conditional_t<is_half<T>, float, T>;  // what a half's reference computes in

/// 16 values of T with its edges: zeros, signs, inf/NaN/subnormals for floats, min/max for ints.
template <class T>
std::vector<T> inputs_a() {
  if constexpr (std::is_same_v<T, bool>) {
    return {true, false, true, true,  false, false, true,  false,
            true, true,  true, false, false, true,  false, true};
  } else if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    std::vector<T> v{0, 1, 2, 3, 7, 13, 100, L::max(), static_cast<T>(L::max() - 1), 5, 9, 42};
    if constexpr (std::is_signed_v<T>)
      v.insert(v.end(), {T(-1), T(-7), L::min(), static_cast<T>(L::min() + 1)});
    else
      v.insert(v.end(), {T(11), T(64), static_cast<T>(L::max() / 2), static_cast<T>(L::max() / 3)});
    return v;
  } else {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> d{0.0,  -0.0, 1.0,  -1.0, 2.5, -3.75, 0.5, 100.0,
                                1e-3, inf,  -inf, nan,  7.0, -7.0,  1.5, 3e-6};
    std::vector<T> v;
    for (double x : d) v.push_back(static_cast<T>(x));
    return v;
  }
}
/// 16 nonzero values (divisors), different from inputs_a.
template <class T>
std::vector<T> inputs_b() {
  if constexpr (std::is_same_v<T, bool>) {
    auto a = inputs_a<T>();
    std::reverse(a.begin(), a.end());
    return a;
  } else if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    std::vector<T> v{3, 1, 2, 7, 2, 5, 9, 4, 3, L::max(), 1, 6};
    if constexpr (std::is_signed_v<T>)
      v.insert(v.end(), {T(-2), T(-1), T(-1), L::min()});
    else
      v.insert(v.end(), {T(2), T(13), L::max(), T(255)});
    return v;
  } else {
    const std::vector<double> d{2.0,   3.0, -0.5, 4.0, -2.0, 1.25, 0.75, 100.0,
                                -1e-3, 2.0, 5.0,  1.0, -7.0, 0.25, 1.5,  6.0};
    std::vector<T> v;
    for (double x : d) v.push_back(static_cast<T>(x));
    return v;
  }
}

template <class T>
T_ make(R& r, const std::vector<T>& v, Shape s = {}) {
  if (s.rank() == 0 && !v.empty()) s = Shape{static_cast<std::int64_t>(v.size())};
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<bool> b(v.begin(), v.end());
    return r.from_vector(b, std::move(s), D0);
  } else {
    return r.from_vector(v, std::move(s), D0);
  }
}
template <class T>
std::vector<T> read(const T_& t) {
  auto d = t.to_data();
  REQUIRE(d.dtype() == dtype_of<T>);
  auto s = d.values<T>();
  return {s.begin(), s.end()};
}

// ---- independent rounding for f16/bf16 (Eigen's) and exact comparison ------------------------
template <class H>
std::uint16_t eigen_bits(float f) {
  if constexpr (std::is_same_v<H, f16>)
    return Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f));
  else
    return Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(f));
}
template <class T>
bool isnan_v(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(x);
  else if constexpr (is_half<T>)
    return std::isnan(static_cast<float>(x));
  else
    return false;
}
/// Same value: bit for bit (NaNs: both NaN, payloads aside; Eigen's bf16 NaN drops them).
template <class T>
bool same(T got, T want) {
  if (isnan_v(got) || isnan_v(want)) return isnan_v(got) && isnan_v(want);
  if constexpr (is_half<T>)
    return got.bits == want.bits;
  else if constexpr (std::is_floating_point_v<T>)
    return std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(got) ==
           std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(want);
  else
    return got == want;
}
/// Within `ulps` of want (floats), or same().
template <class T>
bool close(T got, T want, int ulps) {
  if constexpr (!std::is_floating_point_v<T>) {
    return same(got, want);  // integers, bools and halves: exact
  } else {
    if (ulps == 0 || std::isnan(want) || std::isinf(want)) return same(got, want);
    for (int i = 0; i <= ulps; ++i) {
      if (same(got, want)) return true;
      want = std::nextafter(want, got);
    }
    return false;
  }
}

/// The f16/bf16 expectation for an op: the same op on the exact f32 values, each result rounded
/// by Eigen. `run` maps f32 tensors to one f32 tensor.
template <class H>
std::vector<H> half_expect(R& r, const std::vector<std::vector<H>>& ins, const Shape& s,
                           const std::function<T_(std::vector<T_>)>& run) {
  std::vector<T_> f;
  for (const auto& v : ins) {
    std::vector<float> w;
    for (H h : v) w.push_back(static_cast<float>(h));
    f.push_back(r.from_vector(w, s, D0));
  }
  std::vector<H> out;
  for (float x : read<float>(run(std::move(f)))) out.push_back(H::from_bits(eigen_bits<H>(x)));
  return out;
}

template <class T>
void check_all(const std::vector<T>& got, const std::vector<T>& want, int ulps = 0) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << +Host<T>(static_cast<Host<T>>(got[i])) << ", want "
                    << +Host<T>(static_cast<Host<T>>(want[i])));
    CHECK(close(got[i], want[i], ulps));
  }
}

/// i128 -> T modulo 2^n (C++20 conversions are modular).
template <class T>
T wrap(i128 v) {
  return static_cast<T>(static_cast<u128>(v));
}

// ---- the runners ---------------------------------------------------------------------------
/// Runs one op on dtype `d`; `ok`: the table says it is defined (check values) or not (expect
/// DTypeError at the call).
using Runner = std::function<void(R&, DType, bool)>;

template <class F>
void with_type(DType d, F&& f) {
  visit_dtype(d, [&]<class T>(T) { f.template operator()<T>(); });
}

#define EXPECT_DTYPE_ERROR(expr) REQUIRE_THROWS_AS((void)(expr), DTypeError)

/// An element-wise binary op: tensor-tensor and tensor-scalar (the scalar b[3]) forms.
Runner binary(std::function<T_(T_, T_)> op, std::function<T_(T_, Scalar)> op_s,
              std::function<i128(i128, i128)> ri,
              std::function<long double(long double, long double)> rf, int ulps) {
  return [=](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      auto a = inputs_a<T>(), b = inputs_b<T>();
      if constexpr (std::is_same_v<T, bool>) {
        EXPECT_DTYPE_ERROR(op(make(r, a), make(r, b)));
        return;
      } else {
        if (!ok) {
          EXPECT_DTYPE_ERROR(op(make(r, a), make(r, b)));
          return;
        }
        std::vector<T> want(a.size()), want_s(a.size());
        if constexpr (is_half<T>) {
          want = half_expect<T>(r, {a, b}, Shape{16},
                                [&](std::vector<T_> t) { return op(t[0], t[1]); });
          want_s = half_expect<T>(r, {a}, Shape{16}, [&](std::vector<T_> t) {
            return op_s(t[0], Scalar(static_cast<float>(b[3])));
          });
        } else {
          for (std::size_t i = 0; i < a.size(); ++i) {
            if constexpr (std::is_integral_v<T>) {
              want[i] = wrap<T>(ri(a[i], b[i]));
              want_s[i] = wrap<T>(ri(a[i], b[3]));
            } else {
              want[i] = static_cast<T>(rf(a[i], b[i]));
              want_s[i] = static_cast<T>(rf(a[i], b[3]));
            }
          }
        }
        check_all(read<T>(op(make(r, a), make(r, b))), want, ulps);
        check_all(read<T>(op_s(make(r, a), Scalar(static_cast<T>(b[3])))), want_s, ulps);
      }
    });
  };
}

i128 floor_div(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
i128 ipow_ref(i128 a, i128 e) {
  u128 r = 1;
  for (i128 k = 0; k < e; ++k) r *= static_cast<u128>(a);
  return static_cast<i128>(r);
}

Runner unary(std::function<T_(T_)> op, std::function<i128(i128, bool)> ri,
             std::function<long double(long double)> rf, int ulps, bool ints) {
  return [=](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      auto a = inputs_a<T>();
      if (!ok) {
        EXPECT_DTYPE_ERROR(op(make(r, a)));
        return;
      }
      if constexpr (std::is_same_v<T, bool>) {
        std::vector<bool> want;
        for (bool x : a) want.push_back(!x);
        auto got = read<bool>(op(make(r, a)));
        CHECK(std::vector<bool>(got.begin(), got.end()) == want);
      } else {
        std::vector<T> want(a.size());
        if constexpr (is_half<T>) {
          want = half_expect<T>(r, {a}, Shape{16}, [&](std::vector<T_> t) { return op(t[0]); });
        } else {
          for (std::size_t i = 0; i < a.size(); ++i) {
            if constexpr (std::is_integral_v<T>) {
              REQUIRE(ints);
              want[i] = wrap<T>(ri(a[i], std::is_signed_v<T>));
            } else {
              want[i] = static_cast<T>(rf(a[i]));
            }
          }
        }
        check_all(read<T>(op(make(r, a))), want, ulps);
      }
    });
  };
}

std::map<std::string, Runner> runners() {
  std::map<std::string, Runner> m;
  auto nan_l = std::numeric_limits<long double>::quiet_NaN();
  // unary
  m["neg"] = unary([](T_ x) { return -x; }, [](i128 a, bool) { return -a; },
                   [](long double a) { return -a; }, 0, true);
  m["abs"] = unary([](T_ x) { return ferry::abs(x); }, [](i128 a, bool) { return a < 0 ? -a : a; },
                   [](long double a) { return std::fabs(a); }, 0, true);
  m["relu"] =
      unary([](T_ x) { return ferry::relu(x); }, [](i128 a, bool) { return a < 0 ? i128(0) : a; },
            [=](long double a) { return std::isnan(a) ? nan_l
                                        : a < 0       ? 0.0L
                                                      : a; }, 0, true);
  auto fl = [&](const char* n, std::function<T_(T_)> op, long double (*f)(long double)) {
    m[n] = unary(op, nullptr, f, 2, false);
  };
  fl(
      "exp", [](T_ x) { return ferry::exp(x); }, [](long double a) { return std::exp(a); });
  fl(
      "log", [](T_ x) { return ferry::log(x); }, [](long double a) { return std::log(a); });
  fl(
      "sqrt", [](T_ x) { return ferry::sqrt(x); }, [](long double a) { return std::sqrt(a); });
  fl(
      "sin", [](T_ x) { return ferry::sin(x); }, [](long double a) { return std::sin(a); });
  fl(
      "cos", [](T_ x) { return ferry::cos(x); }, [](long double a) { return std::cos(a); });
  fl(
      "tanh", [](T_ x) { return ferry::tanh(x); }, [](long double a) { return std::tanh(a); });
  fl(
      "sigmoid", [](T_ x) { return ferry::sigmoid(x); },
      [](long double a) { return 1.0L / (1.0L + std::exp(-a)); });
  fl(
      "gelu", [](T_ x) { return ferry::gelu(x); },
      [](long double a) {  // x * Phi(x); its limits at the infinities: inf and -0
        return std::isinf(a) ? (a > 0 ? a : -0.0L) : 0.5L * a * std::erfc(-a / std::sqrt(2.0L));
      });
  m["logical_not"] = unary([](T_ x) { return !x; }, nullptr, nullptr, 0, false);
  // binary
  auto bin = [&](const char* n, std::function<T_(T_, T_)> op, std::function<T_(T_, Scalar)> op_s,
                 std::function<i128(i128, i128)> ri,
                 std::function<long double(long double, long double)> rf, int ulps) {
    m[n] = binary(std::move(op), std::move(op_s), std::move(ri), std::move(rf), ulps);
  };
  bin(
      "add", [](T_ a, T_ b) { return a + b; }, [](T_ a, Scalar s) { return ferry::add(a, s); },
      [](i128 a, i128 b) { return a + b; }, [](long double a, long double b) { return a + b; }, 0);
  bin(
      "sub", [](T_ a, T_ b) { return a - b; }, [](T_ a, Scalar s) { return ferry::sub(a, s); },
      [](i128 a, i128 b) { return a - b; }, [](long double a, long double b) { return a - b; }, 0);
  bin(
      "mul", [](T_ a, T_ b) { return a * b; }, [](T_ a, Scalar s) { return ferry::mul(a, s); },
      [](i128 a, i128 b) { return static_cast<i128>(static_cast<u128>(a) * static_cast<u128>(b)); },
      [](long double a, long double b) { return a * b; }, 0);
  bin(
      "div", [](T_ a, T_ b) { return a / b; }, [](T_ a, Scalar s) { return ferry::div(a, s); },
      floor_div, [](long double a, long double b) { return a / b; }, 1);
  bin(
      "maximum", [](T_ a, T_ b) { return ferry::maximum(a, b); },
      [](T_ a, Scalar s) { return ferry::maximum(a, s); },
      [](i128 a, i128 b) { return std::max(a, b); },
      [=](long double a, long double b) {
        return std::isnan(a) || std::isnan(b) ? nan_l : std::max(a, b);
      },
      0);
  bin(
      "minimum", [](T_ a, T_ b) { return ferry::minimum(a, b); },
      [](T_ a, Scalar s) { return ferry::minimum(a, s); },
      [](i128 a, i128 b) { return std::min(a, b); },
      [=](long double a, long double b) {
        return std::isnan(a) || std::isnan(b) ? nan_l : std::min(a, b);
      },
      0);
  bin(
      "remainder", [](T_ a, T_ b) { return ferry::remainder(a, b); },
      [](T_ a, Scalar s) { return ferry::remainder(a, s); },
      [](i128 a, i128 b) { return a - floor_div(a, b) * b; },
      [](long double a, long double b) {
        long double q = std::fmod(a, b);
        if (q != 0 && ((q < 0) != (b < 0))) q += b;
        return q;
      },
      1);
  bin(
      "fmod", [](T_ a, T_ b) { return ferry::fmod(a, b); },
      [](T_ a, Scalar s) { return ferry::fmod(a, s); }, [](i128 a, i128 b) { return a % b; },
      [](long double a, long double b) { return std::fmod(a, b); }, 0);
  return m;
}

#include "dtypes_runners.hpp"
#include "dtypes_runners_math.hpp"

}  // namespace

#ifndef FERRY_T_PRIMITIVES
TEST_CASE("the dtype table of docs/dtypes.md and the README agree with each other") {
  const auto doc = read_table(FERRY_SOURCE_DIR "/docs/dtypes.md");
  const auto readme = read_table(FERRY_SOURCE_DIR "/README.md");
  REQUIRE(doc.size() == readme.size());
  for (std::size_t i = 0; i < doc.size(); ++i) {
    CHECK(doc[i].ops == readme[i].ops);
    CHECK(doc[i].ok == readme[i].ok);
  }
}

#endif

TEST_CASE("every op of the dtype table runs on every dtype as the table says") {
  const auto table = read_table(FERRY_SOURCE_DIR "/docs/dtypes.md");
  auto run = runners();
  extra_runners(run);
  math_runners(run);
  reduction_runners(run);
  scan_runners(run);
  sort_runners(run);
  indexing_runners(run);
  random_runners(run);
  std::set<std::string> seen;
  R r(FERRY_T_BACKEND(2));
  for (const Row& row : table) {
    // "gather, index_select (the index)": the ops gather and index_select, each with the
    // qualifier "(the index)", which names a runner of its own.
    std::string ops = row.ops, qualifier;
    if (auto p = ops.find(" ("); p != std::string::npos) {
      qualifier = ops.substr(p);
      ops = ops.substr(0, p);
    }
    std::stringstream ss(ops);
    for (std::string op; std::getline(ss, op, ',');) {
      op.erase(0, op.find_first_not_of(' '));
      op += qualifier;
      INFO("op '" << op << "'");
      auto it = run.find(op);
      REQUIRE(it != run.end());
      seen.insert(op);
      for (std::size_t c = 0; c < std::size(kColumns); ++c) {
        INFO("dtype " << kColumns[c] << (row.ok[c] ? " (defined)" : " (refused)"));
        it->second(r, kColumns[c], row.ok[c]);
      }
    }
  }
  for (const auto& [name, f] : run) {
    INFO("runner '" << name << "' has no row in the table");
    CHECK(seen.count(name) == 1);
  }
}

#ifndef FERRY_T_PRIMITIVES
TEST_CASE("bulk f16 conversion (F16C where the CPU has it) gives the bit code's bits") {
#ifdef FERRY_F16C_DISPATCH
  INFO("F16C on this CPU: " << (detail::has_f16c() ? "yes" : "no"));
#endif
  std::vector<f16> h(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) h[i] = f16::from_bits(static_cast<std::uint16_t>(i));
  std::vector<float> w(h.size());
  detail::widen_n(h.data(), w.data(), static_cast<std::int64_t>(h.size()));
  std::size_t bad = 0;
  for (std::uint32_t i = 0; i < 65536; ++i)
    bad += std::bit_cast<std::uint32_t>(w[i]) !=
           std::bit_cast<std::uint32_t>(detail::f16_bits_to_f32(static_cast<std::uint16_t>(i)));
  CHECK(bad == 0);
  // Every 61st f32 bit pattern (all exponents, signs, NaN payloads), plus a tail of 5.
  std::vector<float> f;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 61)
    f.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
  std::vector<f16> n(f.size());
  detail::narrow_n(f.data(), n.data(), static_cast<std::int64_t>(f.size()));
  bad = 0;
  for (std::size_t i = 0; i < f.size(); ++i) bad += n[i].bits != detail::f32_to_f16_bits(f[i]);
  CHECK(bad == 0);
}

namespace {
/// Every bit pattern of a 16-bit float type: data in, to cpu:1 and back, data out as the same
/// type, a cast to its own dtype, and `full` of a scalar made from it all keep the bits (NaN
/// payloads and signalling NaNs included), in both execution modes.
template <class H>
void check_every_pattern_round_trips(Execution mode) {
  R r(EigenCpu(2), {.execution = mode});
  std::vector<H> all(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) all[i] = H::from_bits(static_cast<std::uint16_t>(i));
  auto t = r.from_vector(all, Shape{65536}, D0);
  auto back = t.to(D1).to(D0);
  const auto got = back.to_data().template to_vector<H>();
  REQUIRE(got.size() == all.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < all.size(); ++i) bad += got[i].bits != all[i].bits;
  CHECK(bad == 0);
  const auto same = cast(back, dtype_of<H>).to_data().template to_vector<H>();
  bad = 0;
  for (std::size_t i = 0; i < all.size(); ++i) bad += same[i].bits != all[i].bits;
  CHECK(bad == 0);
  // A signalling NaN (f16 0x7c01, bf16 0x7f81) and a negative quiet NaN with a payload.
  for (std::uint16_t bits : {std::uint16_t(std::is_same_v<H, f16> ? 0x7c01 : 0x7f81),
                             std::uint16_t(std::is_same_v<H, f16> ? 0xfe2a : 0xffc5)}) {
    INFO("bits " << bits);
    const auto f = r.full(Shape{3}, Scalar(H::from_bits(bits)), dtype_of<H>, D1)
                       .to_data()
                       .template to_vector<H>();
    for (H h : f) CHECK(h.bits == bits);
  }
}
}  // namespace

TEST_CASE("reading a tensor back as its own type keeps every f16 and bf16 bit pattern") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  check_every_pattern_round_trips<f16>(mode);
  check_every_pattern_round_trips<bf16>(mode);
  // f32: signalling and payload NaNs through data, a move, and a scalar of f32.
  R r(EigenCpu(2), {.execution = mode});
  const std::vector<std::uint32_t> bits{0x7f800001u, 0xff800123u, 0x7fc00001u,
                                        0xffffffffu, 0x00000001u, 0x80000000u};
  std::vector<float> v;
  for (auto b : bits) v.push_back(std::bit_cast<float>(b));
  const auto got = r.from_vector(v, Shape{6}, D0).to(D1).to_data().to_vector<float>();
  for (std::size_t i = 0; i < bits.size(); ++i)
    CHECK(std::bit_cast<std::uint32_t>(got[i]) == bits[i]);
  const auto f = r.full(Shape{2}, Scalar(v[0]), DType::f32, D0).to_data().to_vector<float>();
  CHECK(std::bit_cast<std::uint32_t>(f[0]) == bits[0]);
  // Widening is exact and keeps the sign and payload, but makes a signalling NaN quiet (IEEE
  // 754 conversions; F16C does the same): f16 0x7c01 -> f32 0x7fc02000 -> f16 0x7e01.
  auto h = r.from_vector(std::vector<f16>{f16::from_bits(0x7c01)}, Shape{1}, D0);
  const auto w = cast(h, DType::f32).to_data().to_vector<float>();
  CHECK(std::bit_cast<std::uint32_t>(w[0]) == 0x7fc02000u);
  CHECK(cast(cast(h, DType::f32), DType::f16).to_data().to_vector<f16>()[0].bits == 0x7e01);
}
#endif

// The runners of test_dtypes.cpp for the math, rounding, activation, predicate and bitwise ops.
// Included once, by test_dtypes.cpp, inside its anonymous namespace (after runners()).

/// torch's shift rules in 128 bits: a shift by < 0 or >= the width gives 0 to the left and the
/// sign to the right.
template <class T>
T shift_ref(T a, T b, bool left) {
  constexpr int bits = sizeof(T) * 8;
  const i128 k = static_cast<i128>(b);
  if (k < 0 || k >= bits) return left ? T(0) : (a < 0 ? static_cast<T>(-1) : T(0));
  if (left) return wrap<T>(static_cast<i128>(static_cast<u128>(static_cast<i128>(a)) << k));
  return wrap<T>(static_cast<i128>(a) >> k);  // arithmetic: floor(a / 2^k)
}

void math_runners(std::map<std::string, Runner>& m) {
  static constexpr long double inf = std::numeric_limits<long double>::infinity();
  auto fl = [&](const char* n, std::function<T_(T_)> op,
                std::function<long double(long double)> f) {
    m[n] = unary(std::move(op), nullptr, std::move(f), 2, false);
  };
#define FERRY_T_FL(name, ref) \
  fl(                         \
      #name, [](T_ x) { return ferry::name(x); }, [](long double a) { return ref; })
  FERRY_T_FL(erf, std::erf(a));
  FERRY_T_FL(recip, 1.0L / a);
  FERRY_T_FL(log1p, std::log1p(a));
  FERRY_T_FL(expm1, std::expm1(a));
  FERRY_T_FL(tan, std::tan(a));
  FERRY_T_FL(sinh, std::sinh(a));
  FERRY_T_FL(cosh, std::cosh(a));
  FERRY_T_FL(asin, std::asin(a));
  FERRY_T_FL(acos, std::acos(a));
  FERRY_T_FL(atan, std::atan(a));
  FERRY_T_FL(asinh, std::asinh(a));
  FERRY_T_FL(acosh, std::acosh(a));
  FERRY_T_FL(atanh, std::atanh(a));
  // The activations by their formulas in long double; their limits at -inf are -0 and -inf.
  FERRY_T_FL(silu, a == -inf ? -0.0L : a / (1.0L + std::exp(-a)));
  FERRY_T_FL(hard_sigmoid, std::isnan(a) ? a : std::min(std::max(a + 3.0L, 0.0L), 6.0L) / 6.0L);
  FERRY_T_FL(log_sigmoid, a == inf ? 0.0L : -std::log1p(std::exp(-a)));
#undef FERRY_T_FL
  // gelu_tanh is x / (1 + e^-2u): the rounding of u (one ulp of |2u|, up to ~70 for these
  // inputs) becomes a relative error of up to |2u| ulps in e^-2u and the result, in any f64 code
  // (torch's included), so f64 gets 128 ulps; f32, computed in double, stays within 2.
  auto gelu_tanh = [](int ulps) {
    return unary([](T_ x) { return ferry::gelu(x, GeluApprox::tanh); }, nullptr,
                 [](long double a) {  // x/2 (1 + tanh u) = x / (1 + exp(-2u))
                   if (a == -inf) return -0.0L;
                   const long double u = std::sqrt(2.0L / 3.14159265358979323846264338327950288L) *
                                         (a + 0.044715L * a * a * a);
                   return a / (1.0L + std::exp(-2.0L * u));
                 },
                 ulps, false);
  };
  // Decomposed (test_primitives), f32 is computed in f32 as f64 is in f64: the same |2u| ulps
  // (measured: over 8 and within 16 for these inputs; the bound for them is ~36).
  m["gelu_tanh"] = [f64 = gelu_tanh(128), other = gelu_tanh(kDecomposed ? 40 : 2)](
                       R& r, DType d, bool ok) { (d == DType::f64 ? f64 : other)(r, d, ok); };
  fl(
      "leaky_relu", [](T_ x) { return ferry::leaky_relu(x, 0.25); },
      [](long double a) { return a > 0 ? a : 0.25L * a; });
  fl(
      "prelu",
      [](T_ x) {  // one weight, -0.5, made from x[0] (0 for every float dtype); on the
                  // refused dtypes x[0] itself, so that prelu is what refuses them
        auto w0 = ferry::slice(x, {Range{0, 1}});
        if (kind_of(x.dtype()) != Kind::Float) return ferry::prelu(x, std::move(w0));
        auto w = ferry::sub(ferry::mul(std::move(w0), Scalar(0.0)), Scalar(0.5));
        return ferry::prelu(x, std::move(w));
      },
      [](long double a) { return a > 0 ? a : -0.5L * a; });
  // Rounding: the identity on integers; half to even by the FPU's own rint.
  auto rnd = [&](const char* n, std::function<T_(T_)> op, long double (*f)(long double)) {
    m[n] = unary(
        std::move(op), [](i128 a, bool) { return a; }, f, 0, true);
  };
  rnd(
      "round", [](T_ x) { return ferry::round(x); }, [](long double a) { return std::rintl(a); });
  rnd(
      "floor", [](T_ x) { return ferry::floor(x); }, [](long double a) { return std::floor(a); });
  rnd(
      "ceil", [](T_ x) { return ferry::ceil(x); }, [](long double a) { return std::ceil(a); });
  rnd(
      "trunc", [](T_ x) { return ferry::trunc(x); }, [](long double a) { return std::trunc(a); });
  m["sign"] = unary([](T_ x) { return ferry::sign(x); },
                    [](i128 a, bool) { return a > 0   ? i128(1)
                                              : a < 0 ? i128(-1)
                                                      : i128(0); },
                    [](long double a) { return a > 0   ? 1.0L
                                               : a < 0 ? -1.0L
                                                       : a; }, 0, true);
  // Predicates, to bool.
  auto pred = [&](const char* n, std::function<T_(T_)> op, std::function<bool(long double)> f,
                  bool on_ints) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        auto a = inputs_a<T>();
        if (!ok) {
          EXPECT_DTYPE_ERROR(op(make(r, a)));
          return;
        }
        std::vector<bool> want;
        for (T x : a) want.push_back(std::is_integral_v<T> ? on_ints : f(ld(x)));
        CHECK(as_bools(read<bool>(op(make(r, a)))) == want);
      });
    };
  };
  pred(
      "isnan", [](T_ x) { return ferry::isnan(x); }, [](long double a) { return std::isnan(a); },
      false);
  pred(
      "isinf", [](T_ x) { return ferry::isinf(x); }, [](long double a) { return std::isinf(a); },
      false);
  pred(
      "isfinite", [](T_ x) { return ferry::isfinite(x); },
      [](long double a) { return std::isfinite(a); }, true);
  // Binary float functions.
  m["atan2"] = binary([](T_ a, T_ b) { return ferry::atan2(a, b); },
                      [](T_ a, Scalar s) { return ferry::atan2(a, s); }, nullptr,
                      [](long double a, long double b) { return std::atan2(a, b); }, 1);
  m["hypot"] = binary([](T_ a, T_ b) { return ferry::hypot(a, b); },
                      [](T_ a, Scalar s) { return ferry::hypot(a, s); }, nullptr,
                      [](long double a, long double b) { return std::hypot(a, b); }, 1);
  // Bitwise, integers only, two's complement in 128 bits.
  m["bitwise_and"] = binary([](T_ a, T_ b) { return ferry::bitwise_and(a, b); },
                            [](T_ a, Scalar s) { return ferry::bitwise_and(a, s); },
                            [](i128 a, i128 b) { return a & b; }, nullptr, 0);
  m["bitwise_or"] = binary([](T_ a, T_ b) { return ferry::bitwise_or(a, b); },
                           [](T_ a, Scalar s) { return ferry::bitwise_or(a, s); },
                           [](i128 a, i128 b) { return a | b; }, nullptr, 0);
  m["bitwise_xor"] = binary([](T_ a, T_ b) { return ferry::bitwise_xor(a, b); },
                            [](T_ a, Scalar s) { return ferry::bitwise_xor(a, s); },
                            [](i128 a, i128 b) { return a ^ b; }, nullptr, 0);
  m["bitwise_not"] = unary([](T_ x) { return ferry::bitwise_not(x); },
                           [](i128 a, bool) { return ~a; }, nullptr, 0, true);
  auto shift = [&](const char* n, bool left) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        auto a = inputs_a<T>();
        auto op = [&](T_ x, T_ y) {
          return left ? ferry::bitwise_left_shift(x, y) : ferry::bitwise_right_shift(x, y);
        };
        if (!ok) {
          EXPECT_DTYPE_ERROR(op(make(r, a), make(r, a)));
          return;
        }
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          // Amounts 0 .. width + 1, and (signed) -1 and the minimum.
          constexpr int bits = sizeof(T) * 8;
          std::vector<T> k;
          for (std::size_t i = 0; i < a.size(); ++i)
            k.push_back(static_cast<T>((static_cast<int>(i) * 5) % (bits + 2)));
          if constexpr (std::is_signed_v<T>) {
            k[3] = T(-1);
            k[4] = std::numeric_limits<T>::min();
          }
          std::vector<T> want, want_s;
          for (std::size_t i = 0; i < a.size(); ++i) {
            want.push_back(shift_ref(a[i], k[i], left));
            want_s.push_back(shift_ref(a[i], T(3), left));
          }
          check_all(read<T>(op(make(r, a), make(r, k))), want);
          check_all(read<T>(left ? ferry::bitwise_left_shift(make(r, a), Scalar(3))
                                 : ferry::bitwise_right_shift(make(r, a), Scalar(3))),
                    want_s);
          // The operators are the same ops.
          check_all(read<T>(left ? make(r, a) << make(r, k) : make(r, a) >> make(r, k)), want);
        }
      });
    };
  };
  shift("bitwise_left_shift", true);
  shift("bitwise_right_shift", false);
}

/// The along-a-dim reductions of ferry/ops/reductions.hpp on a [4, 4] view, dim 1: f32/f64
/// against long double formulas (8 ulps), f16/bf16 as the f32 op rounded by Eigen (exact).
/// `row` maps one row (long double) to its results (4 for softmax-like ops, 1 for reductions).
void row_runner(std::map<std::string, Runner>& m, const char* n, std::function<T_(T_)> op,
                std::function<std::vector<long double>(const std::vector<long double>&)> row,
                int ulps = 8) {
  m[n] = [=](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      auto a = inputs_b<T>();  // finite values
      if (!ok) {
        EXPECT_DTYPE_ERROR(op(make(r, a, Shape{4, 4})));
        return;
      }
      if constexpr (std::is_floating_point_v<T> || is_half<T>) {
        std::vector<T> want;
        if constexpr (is_half<T>) {
          want = half_expect<T>(r, {a}, Shape{4, 4}, [&](std::vector<T_> t) { return op(t[0]); });
        } else {
          for (int g = 0; g < 4; ++g) {
            std::vector<long double> in;
            for (int j = 0; j < 4; ++j) in.push_back(ld(a[g * 4 + j]));
            for (long double v : row(in)) want.push_back(static_cast<T>(v));
          }
        }
        check_all(read<T>(op(make(r, a, Shape{4, 4}))), want, ulps);
      }
    });
  };
}

void reduction_runners(std::map<std::string, Runner>& m) {
  auto soft = [](const std::vector<long double>& x, bool log, long double sign) {
    long double mx = -INFINITY, s = 0;
    for (long double v : x) mx = std::max(mx, sign * v);
    for (long double v : x) s += std::exp(sign * v - mx);
    std::vector<long double> o;
    for (long double v : x)
      o.push_back(log ? sign * v - mx - std::log(s) : std::exp(sign * v - mx) / s);
    return o;
  };
  row_runner(
      m, "softmax", [](T_ x) { return ferry::softmax(x, 1); },
      [=](const auto& x) { return soft(x, false, 1); });
  // log_softmax's error is absolute, ~eps times the row's log-sum (torch's, the same formula,
  // has it too): where the result is near 0 (the row's max over small others) it is many ulps
  // of the result: 70 at -0.0142 in these rows.
  row_runner(
      m, "log_softmax", [](T_ x) { return ferry::log_softmax(x, 1); },
      [=](const auto& x) { return soft(x, true, 1); }, 128);
  row_runner(
      m, "softmin", [](T_ x) { return ferry::softmin(x, 1); },
      [=](const auto& x) { return soft(x, false, -1); });
  row_runner(
      m, "logsumexp", [](T_ x) { return ferry::logsumexp(x, 1); },
      [](const std::vector<long double>& x) {
        long double s = 0;
        for (long double v : x) s += std::exp(v);
        return std::vector<long double>{std::log(s)};
      });
  row_runner(
      m, "norm", [](T_ x) { return ferry::norm(x, 2.0, 1); },
      [](const std::vector<long double>& x) {
        long double s = 0;
        for (long double v : x) s += v * v;
        return std::vector<long double>{std::sqrt(s)};
      });
  // any / all along dim 1 on inputs_a (zeros in some rows, NaN counts as nonzero).
  auto logic = [&](const char* n, bool is_any) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        auto a = inputs_a<T>();
        auto op = [&](T_ x) { return is_any ? ferry::any(x, 1) : ferry::all(x, 1); };
        if (!ok) {
          EXPECT_DTYPE_ERROR(op(make(r, a, Shape{4, 4})));
          return;
        }
        std::vector<bool> want;
        for (int g = 0; g < 4; ++g) {
          bool acc = !is_any;
          for (int j = 0; j < 4; ++j) {
            const bool nz = [&] {
              if constexpr (std::is_same_v<T, bool>)
                return static_cast<bool>(a[static_cast<std::size_t>(g * 4 + j)]);
              else
                return ld(a[static_cast<std::size_t>(g * 4 + j)]) != 0.0L ||
                       std::isnan(ld(a[static_cast<std::size_t>(g * 4 + j)]));
            }();
            acc = is_any ? (acc || nz) : (acc && nz);
          }
          want.push_back(acc);
        }
        CHECK(as_bools(read<bool>(op(make(r, a, Shape{4, 4})))) == want);
      });
    };
  };
  logic("any", true);
  logic("all", false);
  // max_abs: |x| in 128 bits for integers (|min| wraps back to min, as abs does).
  m["max_abs"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      auto a = inputs_b<T>();
      if (!ok) {
        EXPECT_DTYPE_ERROR(ferry::max_abs(make(r, a)));
        return;
      }
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        T best = wrap<T>(static_cast<i128>(a[0]) < 0 ? -static_cast<i128>(a[0]) : a[0]);
        for (T v : a) {
          const T av = wrap<T>(static_cast<i128>(v) < 0 ? -static_cast<i128>(v) : v);
          best = std::max(best, av);
        }
        CHECK(read<T>(ferry::max_abs(make(r, a))) == std::vector<T>{best});
      } else if constexpr (std::is_floating_point_v<T> || is_half<T>) {
        long double best = 0;
        for (T v : a) best = std::max(best, std::fabs(ld(v)));
        T want;
        if constexpr (is_half<T>)
          want = T(static_cast<float>(best));  // exact: every input is a value of T
        else
          want = static_cast<T>(best);
        CHECK(same(read<T>(ferry::max_abs(make(r, a)))[0], want));
      }
    });
  };
}

/// cumsum / cumprod / cummax / cummin along dim 1 of a [4, 4] view: integers in 128 bits wrapped
/// to i64 (u64 for u64; bool sums as i64), floats in long double (cumprod of inputs_b grows to
/// 1e5: within 4 ulps), halves as the f32 scan rounded once by Eigen.
void scan_runners(std::map<std::string, Runner>& m) {
  auto scan = [&](const char* n, int kind) {  // 0 sum, 1 prod, 2 max, 3 min
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        auto a = inputs_b<T>();
        auto op = [&](T_ x) {
          return kind == 0   ? ferry::cumsum(x, 1)
                 : kind == 1 ? ferry::cumprod(x, 1)
                 : kind == 2 ? ferry::cummax(x, 1)
                             : ferry::cummin(x, 1);
        };
        if (!ok) {
          EXPECT_DTYPE_ERROR(op(make(r, a, Shape{4, 4})));
          return;
        }
        const T_ got = op(make(r, a, Shape{4, 4}));
        if constexpr (std::is_integral_v<T>) {  // bool and the integers
          using A = std::conditional_t<std::is_same_v<T, std::uint64_t>, std::uint64_t,
                                       std::int64_t>;  // what the sums and products run in
          std::vector<std::int64_t> w64;
          std::vector<std::uint64_t> wu;
          std::vector<T> wt;
          for (int g = 0; g < 4; ++g) {
            i128 acc = 0;
            for (int j = 0; j < 4; ++j) {
              const i128 v = static_cast<i128>(a[static_cast<std::size_t>(g * 4 + j)]);
              if (j == 0)
                acc = v;
              else if (kind == 0)
                acc = static_cast<i128>(wrap<A>(acc + v));
              else if (kind == 1)
                acc = static_cast<i128>(
                    wrap<A>(static_cast<i128>(static_cast<u128>(acc) * static_cast<u128>(v))));
              else if (kind == 2)
                acc = std::max(acc, v);
              else
                acc = std::min(acc, v);
              if (kind >= 2)
                wt.push_back(static_cast<T>(acc));
              else if constexpr (std::is_same_v<A, std::uint64_t>)
                wu.push_back(wrap<std::uint64_t>(acc));
              else
                w64.push_back(wrap<std::int64_t>(acc));
            }
          }
          if (kind >= 2)
            check_all(read<T>(got), wt);
          else if constexpr (std::is_same_v<A, std::uint64_t>)
            check_all(read<std::uint64_t>(got), wu);
          else
            check_all(read<std::int64_t>(got), w64);
        } else {
          std::vector<T> want;
          if constexpr (is_half<T>) {
            want = half_expect<T>(r, {a}, Shape{4, 4}, [&](std::vector<T_> t) { return op(t[0]); });
          } else {
            for (int g = 0; g < 4; ++g) {
              long double acc = 0;
              for (int j = 0; j < 4; ++j) {
                const long double v = ld(a[static_cast<std::size_t>(g * 4 + j)]);
                acc = j == 0      ? v
                      : kind == 0 ? acc + v
                      : kind == 1 ? acc * v
                      : kind == 2 ? std::max(acc, v)
                                  : std::min(acc, v);
                want.push_back(static_cast<T>(acc));
              }
            }
          }
          check_all(read<T>(got), want, 4);
        }
      });
    };
  };
  scan("cumsum", 0);
  scan("cumprod", 1);
  scan("cummax", 2);
  scan("cummin", 3);
}

/// argsort, sort, topk and cummax/cummin with indices along dim 1 of inputs_a as [4, 4] (with
/// its infinities, NaN, -0 and integer extremes), against a stable sort and a running loop here.
void sort_runners(std::map<std::string, Runner>& m) {
  // kind: 0 argsort (ascending), 1 sort (descending), 2 topk (k 2, largest)
  auto sorter = [&](const char* n, int kind) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        const auto a = inputs_a<T>();
        const bool desc = kind != 0;
        const std::int64_t k = kind == 2 ? 2 : 4;
        if (!ok) {
          EXPECT_DTYPE_ERROR(ferry::argsort(make(r, a, Shape{4, 4}), 1, desc));
          return;
        }
        std::vector<std::int64_t> wi;
        std::vector<T> wv;
        for (std::int64_t g = 0; g < 4; ++g) {
          std::vector<std::int64_t> idx{0, 1, 2, 3};
          auto at = [&](std::int64_t j) { return a[static_cast<std::size_t>(g * 4 + j)]; };
          std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t x, std::int64_t y) {
            const bool nx = isnan_v(at(x)), ny = isnan_v(at(y));
            if (nx || ny) return !nx && ny;
            return desc ? ld(at(x)) > ld(at(y)) : ld(at(x)) < ld(at(y));
          });
          for (std::int64_t j = 0; j < k; ++j) {
            wi.push_back(idx[static_cast<std::size_t>(j)]);
            wv.push_back(at(idx[static_cast<std::size_t>(j)]));
          }
        }
        const auto t = make(r, a, Shape{4, 4});
        if (kind == 0) {
          CHECK(read<std::int64_t>(ferry::argsort(t, 1)) == wi);
          return;
        }
        const auto got = kind == 1 ? ferry::sort(t, 1, true) : ferry::topk(t, k, 1);
        CHECK(read<std::int64_t>(got.indices) == wi);
        check_all(read<T>(got.values), wv);
      });
    };
  };
  sorter("argsort", 0);
  sorter("sort", 1);
  sorter("topk", 2);
  auto cum = [&](const char* n, bool is_max) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        const auto a = inputs_a<T>();
        auto op = [&](T_ x) {
          return is_max ? ferry::cummax_with_indices(x, 1) : ferry::cummin_with_indices(x, 1);
        };
        if (!ok) {
          EXPECT_DTYPE_ERROR(op(make(r, a, Shape{4, 4})));
          return;
        }
        std::vector<std::int64_t> wi;
        std::vector<T> wv;
        for (std::size_t g = 0; g < 4; ++g)
          for (std::size_t j = 0; j < 4; ++j) {
            const T x = a[g * 4 + j];
            // torch's rule: a NaN, or a value at least as extreme as the running one, takes over
            // (nothing but a NaN after a NaN).
            const bool takes =
                j == 0 || isnan_v(x) ||
                (!isnan_v(wv.back()) && (is_max ? ld(x) >= ld(wv.back()) : ld(x) <= ld(wv.back())));
            wv.push_back(takes ? x : wv.back());
            wi.push_back(takes ? static_cast<std::int64_t>(j) : wi.back());
          }
        const auto got = op(make(r, a, Shape{4, 4}));
        CHECK(read<std::int64_t>(got.indices) == wi);
        check_all(read<T>(got.values), wv);
      });
    };
  };
  cum("cummax_with_indices", true);
  cum("cummin_with_indices", false);
}

/// scatter, scatter_add, select_assign, one_hot and unfold on inputs_a as [4, 4]; the index
/// runners put f32 values at integer indices of each dtype.
void indexing_runners(std::map<std::string, Runner>& m) {
  // gi: a [4, 2] index along dim 1 with a repeat in row 1 (the later write wins, or both add).
  const std::vector<int> gi{1, 3, 0, 0, 2, 1, 3, 2};
  auto scatter_ref = [gi]<class T>(std::vector<T> x, const std::vector<T>& src, bool add) {
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t j = 0; j < 2; ++j) {
        const std::size_t at = i * 4 + static_cast<std::size_t>(gi[i * 2 + j]);
        const T v = src[i * 4 + j];
        if (!add)
          x[at] = v;
        else if constexpr (std::is_integral_v<T>)
          x[at] = wrap<T>(static_cast<i128>(x[at]) + static_cast<i128>(v));
        else
          x[at] = static_cast<T>(static_cast<Host<T>>(ld(x[at]) + ld(v)));
      }
    return x;
  };
  auto scatterer = [&m, gi, scatter_ref](const char* n, bool add) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        const auto a = inputs_a<T>(), b = inputs_b<T>();
        const std::vector<std::int64_t> idx(gi.begin(), gi.end());
        auto run = [&] {
          const auto x = make(r, a, Shape{4, 4}), s = make(r, b, Shape{4, 4});
          const auto i = r.from_vector(idx, Shape{4, 2}, D0);
          return add ? ferry::scatter_add(x, 1, i, s) : ferry::scatter(x, 1, i, s);
        };
        if (!ok) {
          EXPECT_DTYPE_ERROR(run());
          return;
        }
        check_all(read<T>(run()), scatter_ref.template operator()<T>(a, b, add));
      });
    };
  };
  scatterer("scatter", false);
  scatterer("scatter_add", true);
  m["select_assign"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      const auto a = inputs_a<T>(), b = inputs_b<T>();
      const std::vector<std::int64_t> idx{2, 0, 2};
      auto run = [&] {
        return ferry::select_assign(
            make(r, a, Shape{4, 4}), 0, r.from_vector(idx, Shape{3}, D0),
            make(r, std::vector<T>(b.begin(), b.begin() + 12), Shape{3, 4}));
      };
      if (!ok) {
        EXPECT_DTYPE_ERROR(run());
        return;
      }
      std::vector<T> want = a;
      for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 4; ++j) {
          const std::size_t at = static_cast<std::size_t>(idx[i]) * 4 + j;
          if constexpr (std::is_integral_v<T>)
            want[at] = wrap<T>(static_cast<i128>(want[at]) + static_cast<i128>(b[i * 4 + j]));
          else
            want[at] = static_cast<T>(static_cast<Host<T>>(ld(want[at]) + ld(b[i * 4 + j])));
        }
      check_all(read<T>(run()), want);
    });
  };
  m["unfold"] = [](R& r, DType d, bool) {
    with_type(d, [&]<class T>() {
      const auto a = inputs_a<T>();
      std::vector<T> want;  // windows of 3, step 1, along dim 1: [4, 2, 3]
      for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t w = 0; w < 2; ++w)
          for (std::size_t k = 0; k < 3; ++k) want.push_back(a[i * 4 + w + k]);
      check_all(read<T>(ferry::unfold(make(r, a, Shape{4, 4}), 1, 3, 1)), want);
    });
  };
  auto index_runner = [&m, gi, scatter_ref](
                          const char* n, int kind) {  // 0 scatter, 1 scatter_add, 2 select_assign
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class I>() {
        const auto a = inputs_a<float>(), b = inputs_b<float>();
        std::vector<I> idx;
        for (int v : gi) idx.push_back(static_cast<I>(v));
        auto run = [&] {
          const auto x = make(r, a, Shape{4, 4}), s = make(r, b, Shape{4, 4});
          if (kind == 2)
            return ferry::select_assign(
                x, 1, make(r, std::vector<I>(idx.begin(), idx.begin() + 4), Shape{4}), s);
          const auto i = make(r, idx, Shape{4, 2});
          return kind == 1 ? ferry::scatter_add(x, 1, i, s) : ferry::scatter(x, 1, i, s);
        };
        if (!ok) {
          EXPECT_DTYPE_ERROR(run());
          return;
        }
        if (kind == 2) {  // index [1, 3, 0, 0] along dim 1: column j of b adds to column idx[j]
          std::vector<float> want = a;
          for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = 0; j < 4; ++j)
              want[i * 4 + static_cast<std::size_t>(gi[j])] += b[i * 4 + j];
          check_all(read<float>(run()), want);
        } else {
          check_all(read<float>(run()), scatter_ref.template operator()<float>(a, b, kind == 1));
        }
      });
    };
  };
  // gather_nd / scatter_nd(_add) of x [4, 4] at the tuples (2, 1), (0, 3), (2, 1): elements.
  auto nd = [&m](const char* n, int kind) {  // 0 gather_nd, 1 scatter_nd, 2 scatter_nd_add
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        const auto a = inputs_a<T>(), b = inputs_b<T>();
        const auto idx =
            r.from_vector(std::vector<std::int64_t>{2, 1, 0, 3, 2, 1}, Shape{3, 2}, D0);
        auto run = [&] {
          const auto x = make(r, a, Shape{4, 4});
          if (kind == 0) return ferry::gather_nd(x, idx);
          const auto u = make(r, std::vector<T>(b.begin(), b.begin() + 3), Shape{3});
          return kind == 1 ? ferry::scatter_nd(x, idx, u) : ferry::scatter_nd_add(x, idx, u);
        };
        if (!ok) {
          EXPECT_DTYPE_ERROR(run());
          return;
        }
        if (kind == 0) {
          check_all(read<T>(run()), std::vector<T>{a[9], a[3], a[9]});
          return;
        }
        std::vector<T> want = a;
        const std::size_t at[3] = {9, 3, 9};
        for (std::size_t k = 0; k < 3; ++k) {
          if (kind == 1)
            want[at[k]] = b[k];
          else if constexpr (std::is_integral_v<T>)
            want[at[k]] = wrap<T>(static_cast<i128>(want[at[k]]) + static_cast<i128>(b[k]));
          else
            want[at[k]] = static_cast<T>(static_cast<Host<T>>(ld(want[at[k]]) + ld(b[k])));
        }
        check_all(read<T>(run()), want);
      });
    };
  };
  nd("gather_nd", 0);
  nd("scatter_nd", 1);
  nd("scatter_nd_add", 2);
  auto nd_index = [&m](const char* n, bool gather) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class I>() {
        const auto a = inputs_a<float>();
        const std::vector<I> iv{static_cast<I>(2), static_cast<I>(1)};
        auto run = [&] {
          const auto x = make(r, a, Shape{4, 4});
          const auto i = make(r, iv, Shape{1, 2});
          return gather ? ferry::gather_nd(x, i)
                        : ferry::scatter_nd(x, i,
                                            r.from_vector(std::vector<float>{5.5f}, Shape{1}, D0));
        };
        if (!ok) {
          EXPECT_DTYPE_ERROR(run());
          return;
        }
        std::vector<float> want = a;
        want[9] = 5.5f;
        check_all(read<float>(run()), gather ? std::vector<float>{a[9]} : want);
      });
    };
  };
  nd_index("gather_nd (the index)", true);
  nd_index("scatter_nd (the index)", false);
  index_runner("scatter (the index)", 0);
  index_runner("scatter_add (the index)", 1);
  index_runner("select_assign (the index)", 2);
  m["one_hot (the index)"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class I>() {
      const std::vector<I> idx{static_cast<I>(2), static_cast<I>(0), static_cast<I>(3),
                               static_cast<I>(1)};
      if (!ok) {
        EXPECT_DTYPE_ERROR(ferry::one_hot(make(r, idx, Shape{4}), 4));
        return;
      }
      const std::vector<std::int64_t> want{0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0};
      check_all(read<std::int64_t>(ferry::one_hot(make(r, idx, Shape{4}), 4)), want);
    });
  };
}

/// random_int on [-5, 6) (unsigned: [0, 11)) for each int dtype against the generator's formula;
/// bernoulli of p = 0, 1 and 0.5 on each float dtype.
void random_runners(std::map<std::string, Runner>& m) {
  m["random_int"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      const std::int64_t lo = std::is_signed_v<T> ? -5 : 0;
      if (!ok) {
        REQUIRE_THROWS_AS((void)r.random_int(Shape{64}, lo, lo + 11, 7, D0, d), DTypeError);
        return;
      }
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        std::vector<T> want;
        for (std::uint64_t i = 0; i < 64; ++i) {
          std::uint64_t z = 7 + (i + 1) * 0x9E3779B97F4A7C15ULL;  // splitmix64, written out
          z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
          z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
          z ^= z >> 31;
          want.push_back(
              static_cast<T>(lo + static_cast<std::int64_t>((static_cast<u128>(z) * 11) >> 64)));
        }
        check_all(read<T>(r.random_int(Shape{64}, lo, lo + 11, 7, D0, d)), want);
      }
    });
  };
  m["bernoulli"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      const std::vector<double> p{0.0, 1.0, 0.5, 0.5};
      const auto t = cast(r.from_vector(p, Shape{4}, D0), d);
      if (!ok) {
        EXPECT_DTYPE_ERROR(ferry::bernoulli(t, 3));
        return;
      }
      const auto v = read<T>(ferry::bernoulli(t, 3));
      CHECK(ld(v[0]) == 0.0L);
      CHECK(ld(v[1]) == 1.0L);
      for (std::size_t i = 2; i < 4; ++i) {
        std::uint64_t z = 3 + (i + 1) * 0x9E3779B97F4A7C15ULL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        CHECK(ld(v[i]) == (static_cast<double>(z >> 11) * 0x1.0p-53 < 0.5 ? 1.0L : 0.0L));
      }
    });
  };
}

// The runners of test_dtypes.cpp beyond the element-wise ones: comparisons, logic, reductions,
// clamp, where, cast, matmul, layout, indexing, creation, moves and quantization. Included once,
// by test_dtypes.cpp, inside its anonymous namespace.

/// The nearest H to v (a real number held exactly in long double), ties to even: an independent
/// reference for the f64 and 64-bit-integer conversions (a search around Eigen's f32 rounding).
template <class H>
H nearest_half(long double v) {
  if (std::isnan(v)) return H::from_bits(std::is_same_v<H, f16> ? 0x7e00 : 0x7fc0);
  const long double big = std::is_same_v<H, f16> ? 65520.0L : std::ldexp(2.0L - 0x1p-8L, 127);
  if (v >= big) return H::from_bits(std::is_same_v<H, f16> ? 0x7c00 : 0x7f80);
  if (v <= -big) return H::from_bits(std::is_same_v<H, f16> ? 0xfc00 : 0xff80);
  const std::uint16_t c = eigen_bits<H>(static_cast<float>(v));
  H best = H::from_bits(c);
  long double bd = std::fabs(static_cast<long double>(static_cast<float>(best)) - v);
  for (int step : {-1, 1}) {
    const auto n = H::from_bits(static_cast<std::uint16_t>(c + step));
    const float f = static_cast<float>(n);
    if (std::isnan(f) || std::isinf(f)) continue;
    const long double d = std::fabs(static_cast<long double>(f) - v);
    if (d < bd || (d == bd && (n.bits & 1) == 0)) best = n, bd = d;
  }
  return best;
}

/// Host value of any element as long double (halves through float, bools 0/1).
template <class T>
long double ld(T x) {
  if constexpr (is_half<T>)
    return static_cast<float>(x);
  else
    return static_cast<long double>(x);
}

/// The reference cast of one element (independent of detail::convert).
template <class D, class S>
D cast_ref(S x) {
  if constexpr (is_half<S>) {
    return cast_ref<D>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<D, bool>) {
    return !(ld(x) == 0.0L);
  } else if constexpr (is_half<D>) {
    return nearest_half<D>(ld(x));
  } else if constexpr (std::is_floating_point_v<D>) {
    return static_cast<D>(x);
  } else if constexpr (std::is_integral_v<S>) {  // int (or bool) -> int: wraps
    return wrap<D>(static_cast<i128>(x));
  } else {  // float -> int: trunc, NaN -> 0, saturate
    const long double v = ld(x);
    if (std::isnan(v)) return D{0};
    if (v >= static_cast<long double>(std::numeric_limits<D>::max()))
      return std::numeric_limits<D>::max();
    if (v <= static_cast<long double>(std::numeric_limits<D>::min()))
      return std::numeric_limits<D>::min();
    return static_cast<D>(std::trunc(v));
  }
}

template <class T>
std::vector<bool> as_bools(const std::vector<T>& v) {
  return std::vector<bool>(v.begin(), v.end());
}

void extra_runners(std::map<std::string, Runner>& m) {
  // pow: integer exponents 0..3 (a negative one is a ValueError for signed types).
  m["pow"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      auto a = inputs_a<T>();
      std::vector<T> e(a.size());
      for (std::size_t i = 0; i < e.size(); ++i) e[i] = static_cast<T>(static_cast<int>(i % 4));
      if (!ok) {
        EXPECT_DTYPE_ERROR(ferry::pow(make(r, a), make(r, e)));
        return;
      }
      if constexpr (!std::is_same_v<T, bool>) {
        std::vector<T> want(a.size());
        if constexpr (is_half<T>) {
          want = half_expect<T>(r, {a, e}, Shape{16},
                                [](std::vector<T_> t) { return ferry::pow(t[0], t[1]); });
        } else {
          for (std::size_t i = 0; i < a.size(); ++i) {
            if constexpr (std::is_integral_v<T>)
              want[i] = wrap<T>(ipow_ref(a[i], e[i]));
            else
              want[i] = static_cast<T>(std::pow(ld(a[i]), ld(e[i])));
          }
        }
        check_all(read<T>(ferry::pow(make(r, a), make(r, e))), want, 1);
      }
    });
  };
  // comparisons
  auto cmp = [&](const char* n, std::function<T_(T_, T_)> op, std::function<T_(T_, Scalar)> op_s,
                 std::function<bool(long double, long double)> f) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        auto a = inputs_a<T>(), b = inputs_b<T>();
        if (!ok) {
          EXPECT_DTYPE_ERROR(op(make(r, a), make(r, b)));
          return;
        }
        std::vector<bool> want, want_s;
        for (std::size_t i = 0; i < a.size(); ++i) {
          if constexpr (std::is_integral_v<T>) {  // exact, wider than any element
            want.push_back(f(static_cast<long double>(static_cast<i128>(a[i])),
                             static_cast<long double>(static_cast<i128>(b[i]))));
            want_s.push_back(f(static_cast<long double>(static_cast<i128>(a[i])),
                               static_cast<long double>(static_cast<i128>(b[3]))));
          } else {
            want.push_back(f(ld(a[i]), ld(b[i])));
            want_s.push_back(f(ld(a[i]), ld(b[3])));
          }
        }
        CHECK(as_bools(read<bool>(op(make(r, a), make(r, b)))) == want);
        CHECK(as_bools(read<bool>(op_s(make(r, a), Scalar(static_cast<T>(b[3]))))) == want_s);
      });
    };
  };
  cmp(
      "equal", [](T_ a, T_ b) { return a == b; }, [](T_ a, Scalar s) { return ferry::equal(a, s); },
      [](long double x, long double y) { return x == y; });
  cmp(
      "not_equal", [](T_ a, T_ b) { return a != b; },
      [](T_ a, Scalar s) { return ferry::not_equal(a, s); },
      [](long double x, long double y) { return x != y; });
  cmp(
      "greater", [](T_ a, T_ b) { return a > b; },
      [](T_ a, Scalar s) { return ferry::greater(a, s); },
      [](long double x, long double y) { return x > y; });
  cmp(
      "greater_equal", [](T_ a, T_ b) { return a >= b; },
      [](T_ a, Scalar s) { return ferry::greater_equal(a, s); },
      [](long double x, long double y) { return x >= y; });
  cmp(
      "less", [](T_ a, T_ b) { return a < b; }, [](T_ a, Scalar s) { return ferry::less(a, s); },
      [](long double x, long double y) { return x < y; });
  cmp(
      "less_equal", [](T_ a, T_ b) { return a <= b; },
      [](T_ a, Scalar s) { return ferry::less_equal(a, s); },
      [](long double x, long double y) { return x <= y; });
  // logic
  auto logic = [&](const char* n, std::function<T_(T_, T_)> op, std::function<bool(bool, bool)> f) {
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        auto a = inputs_a<T>(), b = inputs_b<T>();
        if (!ok) {
          EXPECT_DTYPE_ERROR(op(make(r, a), make(r, b)));
          return;
        }
        if constexpr (std::is_same_v<T, bool>) {
          std::vector<bool> want;
          for (std::size_t i = 0; i < a.size(); ++i) want.push_back(f(a[i], b[i]));
          CHECK(as_bools(read<bool>(op(make(r, a), make(r, b)))) == want);
        }
      });
    };
  };
  logic(
      "logical_and", [](T_ a, T_ b) { return ferry::logical_and(a, b); },
      [](bool x, bool y) { return x && y; });
  logic(
      "logical_or", [](T_ a, T_ b) { return ferry::logical_or(a, b); },
      [](bool x, bool y) { return x || y; });
  logic(
      "logical_xor", [](T_ a, T_ b) { return ferry::logical_xor(a, b); },
      [](bool x, bool y) { return x != y; });

  // reductions: over all elements and along dim 1 of a [4, 4] view.
  auto red = [&](const char* n, std::function<T_(T_)> all, std::function<T_(T_)> dim1, int kind) {
    // kind: 0 sum, 1 prod, 2 max, 3 min, 4 argmax, 5 argmin, 6 mean
    m[n] = [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        // Floats reduce finite values (a sum's order is the kernel's own), max/min see NaN too.
        auto a = (std::is_integral_v<T> || kind >= 2) && kind != 6 ? inputs_a<T>() : inputs_b<T>();
        if (!ok) {
          EXPECT_DTYPE_ERROR(all(make(r, a, Shape{4, 4})));
          return;
        }
        if constexpr (std::is_same_v<T, bool>) {
          // max is any and min is all, to bool (torch): rows all true, all false and mixed.
          REQUIRE((kind == 2 || kind == 3));
          const std::vector<bool> b{true, true,  true, true, false, false, false, false,
                                    true, false, true, true, false, false, true,  false};
          const T_ whole = all(make(r, b, Shape{4, 4}));
          CHECK(whole.dtype() == DType::boolean);
          CHECK(whole.shape() == Shape{});
          CHECK(as_bools(read<bool>(whole)) == std::vector<bool>{kind == 2});
          CHECK(as_bools(read<bool>(dim1(make(r, b, Shape{4, 4})))) ==
                (kind == 2 ? std::vector<bool>{true, false, true, true}
                           : std::vector<bool>{true, false, false, false}));
        } else {
          for (int mode = 0; mode < 2; ++mode) {
            const std::size_t groups = mode == 0 ? 1 : 4, len = mode == 0 ? 16 : 4;
            T_ got = (mode == 0 ? all : dim1)(make(r, a, Shape{4, 4}));
            for (std::size_t g = 0; g < groups; ++g) {
              INFO("mode " << mode << " group " << g);
              const T* p = a.data() + g * len;
              if (kind == 4 || kind == 5) {  // first NaN, else first extreme
                std::size_t best = 0;
                for (std::size_t i = 1; i < len; ++i) {
                  const long double x = ld(p[i]), y = ld(p[best]);
                  if (std::isnan(y)) break;
                  if (std::isnan(x) || (kind == 4 ? x > y : x < y)) best = i;
                }
                CHECK(read<std::int64_t>(got)[g] == static_cast<std::int64_t>(best));
                continue;
              }
              if constexpr (std::is_integral_v<T>) {
                i128 acc = kind == 1 ? 1 : static_cast<i128>(p[0]);
                for (std::size_t i = kind == 1 ? 0 : 1; i < len; ++i) {
                  const i128 x = p[i];
                  acc = kind == 0 ? acc + x
                        : kind == 1
                            ? static_cast<i128>(static_cast<u128>(acc) * static_cast<u128>(x))
                        : kind == 2 ? std::max(acc, x)
                                    : std::min(acc, x);
                }
                if (kind <= 1) {
                  REQUIRE(got.dtype() == (d == DType::u64 ? DType::u64 : DType::i64));
                  if (d == DType::u64)
                    CHECK(read<std::uint64_t>(got)[g] == wrap<std::uint64_t>(acc));
                  else
                    CHECK(read<std::int64_t>(got)[g] == wrap<std::int64_t>(acc));
                } else {
                  CHECK(read<T>(got)[g] == wrap<T>(acc));
                }
              } else {
                T want;
                if constexpr (is_half<T>) {
                  std::vector<T> sub(p, p + len);
                  want = half_expect<T>(r, {sub}, Shape{static_cast<std::int64_t>(len)},
                                        [&](std::vector<T_> t) { return all(t[0]); })[0];
                  CHECK(same(read<T>(got)[g], want));
                } else {
                  long double acc = kind == 1 ? 1.0L : ld(p[0]);
                  for (std::size_t i = kind == 1 ? 0 : 1; i < len; ++i) {
                    const long double x = ld(p[i]);
                    if (kind == 0 || kind == 6) acc += x;
                    if (kind == 1) acc *= x;
                    if (kind == 2) acc = std::isnan(acc) || std::isnan(x) ? NAN : std::max(acc, x);
                    if (kind == 3) acc = std::isnan(acc) || std::isnan(x) ? NAN : std::min(acc, x);
                  }
                  if (kind == 6) acc /= static_cast<long double>(len);
                  want = static_cast<T>(acc);
                  CHECK(close(read<T>(got)[g], want, 8));
                }
              }
            }
          }
        }
      });
    };
  };
  red(
      "sum", [](T_ x) { return ferry::sum(x); }, [](T_ x) { return ferry::sum(x, 1); }, 0);
  red(
      "prod", [](T_ x) { return ferry::prod(x); }, [](T_ x) { return ferry::prod(x, 1); }, 1);
  red(
      "max", [](T_ x) { return ferry::max(x); }, [](T_ x) { return ferry::max(x, 1); }, 2);
  red(
      "min", [](T_ x) { return ferry::min(x); }, [](T_ x) { return ferry::min(x, 1); }, 3);
  red(
      "argmax", [](T_ x) { return ferry::argmax(x); }, [](T_ x) { return ferry::argmax(x, 1); }, 4);
  red(
      "argmin", [](T_ x) { return ferry::argmin(x); }, [](T_ x) { return ferry::argmin(x, 1); }, 5);
  red(
      "mean", [](T_ x) { return ferry::mean(x); }, [](T_ x) { return ferry::mean(x, 1); }, 6);

  m["clamp"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      auto a = inputs_a<T>();
      if (!ok) {
        EXPECT_DTYPE_ERROR(ferry::clamp(make(r, a), 1, 7));
        return;
      }
      if constexpr (!std::is_same_v<T, bool>) {
        std::vector<T> want;
        for (T x : a)
          want.push_back(isnan_v(x)  ? x
                         : ld(x) < 1 ? static_cast<T>(1)
                         : ld(x) > 7 ? static_cast<T>(7)
                                     : x);
        check_all(read<T>(ferry::clamp(make(r, a), 1, 7)), want);
      }
    });
  };
  m["where (the values)"] = [](R& r, DType d, bool) {
    with_type(d, [&]<class T>() {
      auto a = inputs_a<T>(), b = inputs_b<T>();
      std::vector<bool> mask;
      for (std::size_t i = 0; i < a.size(); ++i) mask.push_back(i % 3 == 0);
      std::vector<T> want;
      for (std::size_t i = 0; i < a.size(); ++i) want.push_back(mask[i] ? a[i] : b[i]);
      auto got = read<T>(ferry::where(r.from_vector(mask, Shape{16}, D0), make(r, a), make(r, b)));
      check_all(got, want);
    });
  };
  m["cast (from; to every dtype)"] = [](R& r, DType d, bool) {
    with_type(d, [&]<class S>() {
      auto a = inputs_a<S>();
      for (DType to : kColumns) {
        INFO("to " << to);
        with_type(to, [&]<class D>() {
          std::vector<D> want;
          for (S x : a) want.push_back(cast_ref<D>(x));
          check_all(read<D>(ferry::cast(make(r, a), to)), want);
        });
      }
    });
  };
  m["matmul"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      auto a = inputs_a<T>(), b = inputs_b<T>();
      if (!ok) {
        EXPECT_DTYPE_ERROR(ferry::matmul(make(r, a, Shape{4, 4}), make(r, b, Shape{4, 4})));
        return;
      }
      if constexpr (!std::is_same_v<T, bool>) {
        std::vector<T> want(16);
        if constexpr (is_half<T>) {
          want = half_expect<T>(r, {a, b}, Shape{4, 4},
                                [](std::vector<T_> t) { return ferry::matmul(t[0], t[1]); });
        } else {
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
              if constexpr (std::is_integral_v<T>) {
                u128 acc = 0;
                for (int k = 0; k < 4; ++k)
                  acc += static_cast<u128>(static_cast<i128>(a[i * 4 + k])) *
                         static_cast<u128>(static_cast<i128>(b[k * 4 + j]));
                want[i * 4 + j] = static_cast<T>(acc);
              } else {
                long double acc = 0;
                for (int k = 0; k < 4; ++k) acc += ld(a[i * 4 + k]) * ld(b[k * 4 + j]);
                want[i * 4 + j] = static_cast<T>(acc);
              }
            }
        }
        check_all(read<T>(ferry::matmul(make(r, a, Shape{4, 4}), make(r, b, Shape{4, 4}))), want,
                  4);
      }
    });
  };

  // Layout: pure data movement, so every result is compared bit for bit with host index math.
  auto layout = [&](const char* n, std::function<T_(T_, T_)> op,
                    std::function<std::size_t(std::size_t, std::size_t&)> pick, std::size_t count) {
    // pick(i, which): the source element of output i; which = 0 for a, 1 for b.
    m[n] = [=](R& r, DType d, bool) {
      with_type(d, [&]<class T>() {
        auto a = inputs_a<T>(), b = inputs_b<T>();
        std::vector<T> want;
        for (std::size_t i = 0; i < count; ++i) {
          std::size_t which = 0;
          const std::size_t k = pick(i, which);
          want.push_back(which == 0 ? a[k] : b[k]);
        }
        check_all(read<T>(op(make(r, a, Shape{4, 4}), make(r, b, Shape{4, 4}))), want);
      });
    };
  };
  layout(
      "reshape",
      [](T_ a, T_) {
        return ferry::reshape(a, Shape{2, 8});
      },
      [](std::size_t i, std::size_t&) { return i; }, 16);
  layout(
      "permute",
      [](T_ a, T_) {
        return ferry::permute(a, {1, 0});
      },
      [](std::size_t i, std::size_t&) { return (i % 4) * 4 + i / 4; }, 16);
  layout(
      "flip", [](T_ a, T_) { return ferry::flip(a, {0}); },
      [](std::size_t i, std::size_t&) { return (3 - i / 4) * 4 + i % 4; }, 16);
  layout(
      "expand",
      [](T_ a, T_) {
        return ferry::expand(ferry::slice(a, {{0, 1}, {0, 4}}), Shape{3, 4});
      },
      [](std::size_t i, std::size_t&) { return i % 4; }, 12);
  layout(
      "slice",
      [](T_ a, T_) {
        return ferry::slice(a, {{1, 3}, {0, 4, 2}});
      },
      [](std::size_t i, std::size_t&) { return (1 + i / 2) * 4 + (i % 2) * 2; }, 4);
  layout(
      "slice_assign",
      [](T_ a, T_ b) {
        return ferry::slice_assign(a, {{0, 1}, {0, 4}}, ferry::slice(b, {{0, 1}, {0, 4}}));
      },
      [](std::size_t i, std::size_t& w) {
        w = i < 4 ? 1 : 0;
        return i;
      },
      16);
  layout(
      "cat",
      [](T_ a, T_ b) {
        return ferry::cat({a, b}, 0);
      },
      [](std::size_t i, std::size_t& w) {
        w = i / 16;
        return i % 16;
      },
      32);
  layout(
      "repeat",
      [](T_ a, T_) {
        return ferry::repeat(a, {2, 1});
      },
      [](std::size_t i, std::size_t&) { return i % 16; }, 32);

  // The compositions of ferry/ops/layout.hpp, on the [4, 4] view of a.
  layout(
      "squeeze",
      [](T_ a, T_) {
        return ferry::squeeze(ferry::reshape(a, Shape{1, 16, 1}));
      },
      [](std::size_t i, std::size_t&) { return i; }, 16);
  layout(
      "unsqueeze", [](T_ a, T_) { return ferry::unsqueeze(a, 1); },
      [](std::size_t i, std::size_t&) { return i; }, 16);
  layout(
      "flatten", [](T_ a, T_) { return ferry::flatten(a); },
      [](std::size_t i, std::size_t&) { return i; }, 16);
  layout(
      "narrow", [](T_ a, T_) { return ferry::narrow(a, 0, 1, 2); },
      [](std::size_t i, std::size_t&) { return 4 + i; }, 8);
  layout(
      "split", [](T_ a, T_) { return ferry::split(a, 3, 0)[1]; },
      [](std::size_t i, std::size_t&) { return 12 + i; }, 4);
  layout(
      "chunk", [](T_ a, T_) { return ferry::chunk(a, 2, 1)[1]; },
      [](std::size_t i, std::size_t&) { return (i / 2) * 4 + 2 + i % 2; }, 8);
  layout(  // replicate: column 0 once more on the left
      "pad",
      [](T_ a, T_) {
        return ferry::pad(a, {1, 0}, PadMode::replicate);
      },
      [](std::size_t i, std::size_t&) { return (i / 5) * 4 + (i % 5 == 0 ? 0 : i % 5 - 1); }, 20);
  // triu / tril keep a or give T(0); mask_fill gives b[0]'s value, mask_where b's elements,
  // where the mask (column 1 and 3) is true.
  auto band = [&](const char* n, bool upper) {
    m[n] = [=](R& r, DType d, bool) {
      with_type(d, [&]<class T>() {
        auto a = inputs_a<T>();
        std::vector<T> want;
        for (std::size_t i = 0; i < 16; ++i) {
          const auto row = static_cast<long>(i / 4), col = static_cast<long>(i % 4);
          want.push_back((upper ? col - row >= 1 : col - row <= -1) ? a[i] : T(0));
        }
        const T_ x = make(r, a, Shape{4, 4});
        check_all(read<T>(upper ? ferry::triu(x, 1) : ferry::tril(x, -1)), want);
      });
    };
  };
  band("triu", true);
  band("tril", false);
  auto masked = [&](const char* n, bool fill) {
    m[n] = [=](R& r, DType d, bool) {
      with_type(d, [&]<class T>() {
        auto a = inputs_a<T>(), b = inputs_b<T>();
        const T_ mask = r.from_vector(std::vector<bool>{false, true, false, true}, Shape{4}, D0);
        std::vector<T> want;
        for (std::size_t i = 0; i < 16; ++i)
          want.push_back(i % 2 == 1 ? (fill ? b[0] : b[i]) : a[i]);
        const T_ x = make(r, a, Shape{4, 4});
        if (fill)
          check_all(read<T>(ferry::mask_fill(x, mask, Scalar(static_cast<T>(b[0])))), want);
        else
          check_all(read<T>(ferry::mask_where(x, mask, make(r, b, Shape{4, 4}))), want);
      });
    };
  };
  masked("mask_fill", true);
  masked("mask_where", false);

  // Indexing: gather(x, 1, [[0, 3], [1, 1], [2, 0], [3, 2]]) and index_select(x, 0, [2, 0]).
  const std::vector<int> gi{0, 3, 1, 1, 2, 0, 3, 2};
  auto gather_want = [gi](std::size_t i) { return (i / 2) * 4 + static_cast<std::size_t>(gi[i]); };
  auto select_want = [](std::size_t i) { return (i < 4 ? 2 : 0) * 4 + i % 4; };
  m["gather (the values)"] = [=](R& r, DType d, bool) {
    with_type(d, [&]<class T>() {
      auto a = inputs_a<T>();
      std::vector<std::int64_t> idx(gi.begin(), gi.end());
      std::vector<T> want, want_s;
      for (std::size_t i = 0; i < 8; ++i) want.push_back(a[gather_want(i)]);
      for (std::size_t i = 0; i < 8; ++i) want_s.push_back(a[select_want(i)]);
      check_all(read<T>(ferry::gather(make(r, a, Shape{4, 4}), 1, r.from_vector(idx, {4, 2}, D0))),
                want);
      check_all(
          read<T>(ferry::index_select(make(r, a, Shape{4, 4}), 0,
                                      r.from_vector(std::vector<std::int64_t>{2, 0}, {2}, D0))),
          want_s);
    });
  };
  m["index_select (the values)"] = m["gather (the values)"];
  m["gather (the index)"] = [=](R& r, DType d, bool ok) {
    with_type(d, [&]<class I>() {
      auto a = inputs_a<float>();
      std::vector<I> idx;
      for (int v : gi) idx.push_back(static_cast<I>(v));
      auto x = make(r, a, Shape{4, 4});
      if (!ok) {
        EXPECT_DTYPE_ERROR(ferry::gather(x, 1, make(r, idx, Shape{4, 2})));
        return;
      }
      std::vector<float> want;
      for (std::size_t i = 0; i < 8; ++i) want.push_back(a[gather_want(i)]);
      check_all(read<float>(ferry::gather(x, 1, make(r, idx, Shape{4, 2}))), want);
    });
  };
  m["index_select (the index)"] = [=](R& r, DType d, bool ok) {
    with_type(d, [&]<class I>() {
      auto a = inputs_a<float>();
      std::vector<I> idx{static_cast<I>(2), static_cast<I>(0)};
      auto x = make(r, a, Shape{4, 4});
      if (!ok) {
        EXPECT_DTYPE_ERROR(ferry::index_select(x, 0, make(r, idx, Shape{2})));
        return;
      }
      std::vector<float> want;
      for (std::size_t i = 0; i < 8; ++i) want.push_back(a[select_want(i)]);
      check_all(read<float>(ferry::index_select(x, 0, make(r, idx, Shape{2}))), want);
    });
  };

  // Data in and out, moves, creation.
  auto moves = [](R& r, DType d, bool) {
    with_type(d, [&]<class T>() {
      auto a = inputs_a<T>();
      auto t = make(r, a);
      check_all(read<T>(t), a);
      check_all(read<T>(t.to(D1)), a);
      check_all(read<T>(t.to(D1).to(D0)), a);
      // The bytes, too (a NaN's payload and -0 included).
      auto bytes = t.to(D1).to_data();
      auto src = ferry::TensorData::from(a);
      CHECK(std::equal(bytes.bytes().begin(), bytes.bytes().end(), src.bytes().begin(),
                       src.bytes().end()));
    });
  };
  m["from_data"] = moves;
  m["to_data"] = moves;
  m["to(device)"] = moves;
  m["full"] = [](R& r, DType d, bool) {
    with_type(d, [&]<class T>() {
      auto got = read<T>(r.full({3}, 1, d, D0));
      check_all(got, std::vector<T>(3, static_cast<T>(1)));
      got = read<T>(r.zeros({2}, d, D0));
      check_all(got, std::vector<T>(2, static_cast<T>(0)));
    });
  };
  m["arange"] = [](R& r, DType d, bool ok) {
    with_type(d, [&]<class T>() {
      if (!ok) {
        EXPECT_DTYPE_ERROR(r.arange(0, 5, 1, d, D0));
        return;
      }
      std::vector<T> want;
      for (int i = 0; i < 5; ++i) want.push_back(static_cast<T>(i * 3));
      check_all(read<T>(r.arange(0, 15, 3, d, D0)), want);
    });
  };
  auto random = [](bool uniform) {
    return [uniform](R& r, DType d, bool ok) {
      const auto dist = uniform ? Distribution::uniform(-1.0, 1.0) : Distribution::normal(0.5, 2.0);
      with_type(d, [&]<class T>() {
        if (!ok) {
          EXPECT_DTYPE_ERROR(r.random({64}, dist, 7, D0, d));
          return;
        }
        auto f64 = read<double>(r.random({64}, dist, 7, D0, DType::f64));
        std::vector<T> want;
        for (double x : f64) {
          if constexpr (is_half<T>) {
            T h = nearest_half<T>(x);
            if (uniform && static_cast<float>(h) >= 1.0f)
              h = T::from_bits(static_cast<std::uint16_t>(h.bits - 1));
            want.push_back(h);
          } else if constexpr (std::is_floating_point_v<T>) {
            want.push_back(static_cast<T>(x));
          }
        }
        if constexpr (is_half<T> || std::is_floating_point_v<T>) {
          if (std::is_same_v<T, float>) return;  // f32 draws its own values in f64 arithmetic
          check_all(read<T>(r.random({64}, dist, 7, D0, d)), want);
        }
      });
    };
  };
  m["random_uniform"] = random(true);
  m["random_normal"] = random(false);

  // Quantization: a float input of any dtype quantizes as its f32 values do; dequantize to a
  // 16-bit float is the f32 result rounded once.
  const auto scheme = quant::Scheme::of(quant::ValueType::i8).per_block({8});
  auto quant_in = [scheme](bool dynamic) {
    return [=](R& r, DType d, bool ok) {
      with_type(d, [&]<class T>() {
        auto b = inputs_b<T>();
        const std::vector<float> scales{0.05f, 0.5f};
        auto q = [&](T_ x) {
          return dynamic ? ferry::quantize_dynamic(x, scheme) : ferry::quantize(x, scheme, scales);
        };
        if (!ok) {
          EXPECT_DTYPE_ERROR(q(make(r, b)));
          return;
        }
        if constexpr (!std::is_same_v<T, bool>) {
          std::vector<float> f;
          for (T x : b) f.push_back(static_cast<float>(x));
          CHECK(q(make(r, b)).to_parts() == q(r.from_vector(f, {16}, D0)).to_parts());
        }
      });
    };
  };
  m["quantize (the input)"] = quant_in(false);
  m["quantize_dynamic (the input)"] = quant_in(true);
  m["dequantize (the result)"] = [scheme](R& r, DType d, bool ok) {
    auto q = ferry::quantize_dynamic(make(r, inputs_b<float>()), scheme);
    if (!ok) {
      EXPECT_DTYPE_ERROR(ferry::dequantize(q, d));
      return;
    }
    const auto f = read<float>(ferry::dequantize(q, DType::f32));
    with_type(d, [&]<class T>() {
      if constexpr (is_half<T> || std::is_floating_point_v<T>) {
        std::vector<T> want;
        for (float x : f) {
          if constexpr (is_half<T>)
            want.push_back(T::from_bits(eigen_bits<T>(x)));
          else
            want.push_back(static_cast<T>(x));
        }
        check_all(read<T>(ferry::dequantize(q, d)), want);
      }
    });
  };
}

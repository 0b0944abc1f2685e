// The composite ops (silu, hard_sigmoid, log_sigmoid, gelu_tanh, isnan, isinf, isfinite, hypot,
// prelu, leaky_relu, logical_xor, softmax, log_softmax): recorded as the op itself on a backend
// with its kernel, and as its decomposition on one without (ferry/ops/composite.hpp). The two paths
// are compared with each other and with values computed here by formula.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ferry/ferry.hpp"
#include "matchers.hpp"
#include "no_composite.hpp"

using namespace ferry;
using ferry_test::NoComposite;

namespace {


static_assert(detail::has_kernel_silu<EigenCpu> && detail::has_kernel_isnan<EigenCpu> &&
              detail::has_kernel_hypot<EigenCpu> && detail::has_kernel_prelu_scalar<EigenCpu> &&
              detail::has_kernel_logical_xor<EigenCpu> && detail::has_kernel_softmax<EigenCpu> &&
              detail::has_kernel_log_softmax<EigenCpu>);
static_assert(!detail::has_kernel_silu<NoComposite> && !detail::has_kernel_isnan<NoComposite> &&
              !detail::has_kernel_hypot<NoComposite> &&
              !detail::has_kernel_prelu_scalar<NoComposite> &&
              !detail::has_kernel_logical_xor<NoComposite> &&
              !detail::has_kernel_softmax<NoComposite> &&
              !detail::has_kernel_log_softmax<NoComposite>);

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double qnan = std::numeric_limits<double>::quiet_NaN();
const std::vector<double> xs{-inf, -40, -3, -1, -0.25, -0.0, 0.0, 0.5, 1, 3, 40, inf};

template <class B>
std::vector<double> values(Tensor<B> t) {
  return t.to_data().template to_vector<double>();
}

/// The ops the router ran (trace), without the data in and out.
template <class B>
std::set<std::string> ops_run(Router<B>& r) {
  std::set<std::string> s;
  for (const auto& e : r.trace())
    if (e.phase == TraceEvent::Phase::op && e.name != "from_data" && e.name != "read" &&
        e.name != "drop")
      s.insert(e.name);
  return s;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else if (std::isinf(want[i]) || want[i] == 0)
      CHECK(got[i] == want[i]);
    else
      CHECK(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]));
  }
}

template <class F>
std::vector<double> map(F f) {
  std::vector<double> v;
  for (double x : xs) v.push_back(f(x));
  return v;
}

}  // namespace

TEST_CASE("composite ops: the kernel and the decomposition agree with the formulas") {
  const auto mode = GENERATE(Execution::Async, Execution::Inline);
  Router<EigenCpu> k(EigenCpu(1), {.execution = mode, .trace = true});
  Router<NoComposite> d(NoComposite(1), {.execution = mode, .trace = true});
  const auto x_k = k.from_vector(xs, Shape{12}, CpuDevice{0});
  const auto x_d = d.from_vector(xs, Shape{12}, CpuDevice{0});

  // silu(x) = x / (1 + e^-x); the kernel's limit at -inf is -0, the decomposition's NaN
  // (-inf * 0, as torch's x * sigmoid(x)).
  auto silu_f = [](double x) { return x == -inf ? -0.0 : x / (1 + std::exp(-x)); };
  check_close(values(silu(x_k)), map(silu_f), 1e-15);
  auto sd = values(silu(x_d));
  CHECK(std::isnan(sd[0]));
  sd[0] = -0.0;
  check_close(sd, map(silu_f), 1e-15);
  CHECK(values(silu(x_k))[8] == Approx(0.7310585786300049).epsilon(1e-15));

  auto hs = [](double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; };
  check_close(values(hard_sigmoid(x_k)), map(hs), 1e-15);
  check_close(values(hard_sigmoid(x_d)), map(hs), 1e-15);
  CHECK(values(hard_sigmoid(x_k))[6] == 0.5);

  // log_sigmoid(x) = -log(1 + e^-x): -40 at -40 (no overflow), -ln 2 at 0.
  auto ls = [](double x) { return std::min(x, 0.0) - std::log1p(std::exp(-std::fabs(x))); };
  check_close(values(log_sigmoid(x_k)), map(ls), 1e-15);
  check_close(values(log_sigmoid(x_d)), map(ls), 1e-15);
  CHECK(values(log_sigmoid(x_k))[6] == Approx(-0.6931471805599453).epsilon(1e-15));

  // gelu tanh: x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3); relative error |2u| ulps.
  auto gt = [](double x) {
    if (x == -inf) return -0.0;
    const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return x / (1 + std::exp(-2 * u));
  };
  auto gk = values(gelu(x_k, GeluApprox::tanh));
  auto gd = values(gelu(x_d, GeluApprox::tanh));
  CHECK(std::isnan(gd[0]));  // -inf * sigmoid(-inf) = -inf * 0, as torch's decomposition
  gd[0] = -0.0;
  // Skip x = -40: the value (~1e-1240) underflows to 0 in either path.
  check_close(gk, map(gt), 1e-13);
  check_close(gd, map(gt), 1e-13);

  // Predicates, to bool.
  const std::vector<double> odd{qnan, -inf, inf, 0, -1e308, 5e-324};
  auto o_k = k.from_vector(odd, Shape{6}, CpuDevice{0});
  auto o_d = d.from_vector(odd, Shape{6}, CpuDevice{0});
  const std::vector<bool> want_nan{true, false, false, false, false, false};
  const std::vector<bool> want_inf{false, true, true, false, false, false};
  const std::vector<bool> want_fin{false, false, false, true, true, true};
  CHECK(isnan(o_k).to_data().to_vector<bool>() == want_nan);
  CHECK(isnan(o_d).to_data().to_vector<bool>() == want_nan);
  CHECK(isinf(o_k).to_data().to_vector<bool>() == want_inf);
  CHECK(isinf(o_d).to_data().to_vector<bool>() == want_inf);
  CHECK(isfinite(o_k).to_data().to_vector<bool>() == want_fin);
  CHECK(isfinite(o_d).to_data().to_vector<bool>() == want_fin);
  // On integers: never NaN or infinite.
  auto i_d = d.from_vector(std::vector<std::int32_t>{-5, 0, 7}, Shape{3}, CpuDevice{0});
  CHECK(isnan(i_d).to_data().to_vector<bool>() == std::vector<bool>{false, false, false});
  CHECK(isfinite(i_d).to_data().to_vector<bool>() == std::vector<bool>{true, true, true});

  // hypot: 3-4-5, and no overflow on the kernel where the decomposition's squares overflow.
  auto a_k = k.from_vector(std::vector<double>{3, -5, 1e200, 0}, Shape{4}, CpuDevice{0});
  auto b_k = k.from_vector(std::vector<double>{4, 12, 1e200, -0.0}, Shape{4}, CpuDevice{0});
  auto a_d = d.from_vector(std::vector<double>{3, -5, 1e200, 0}, Shape{4}, CpuDevice{0});
  auto b_d = d.from_vector(std::vector<double>{4, 12, 1e200, -0.0}, Shape{4}, CpuDevice{0});
  const auto hk = values(hypot(a_k, b_k));
  const auto hd = values(hypot(a_d, b_d));
  CHECK(hk == std::vector<double>{5, 13, std::hypot(1e200, 1e200), 0});
  CHECK(hd[0] == 5);
  CHECK(hd[1] == 13);
  CHECK(hd[2] == inf);  // documented: the plain formula overflows past sqrt(max)
  CHECK(values(hypot(a_k, Scalar(4.0)))[0] == 5);
  CHECK(values(hypot(a_d, Scalar(4.0)))[0] == 5);

  // prelu per channel on [2, 3, 2]: channel c has weight w[c]; leaky_relu one slope.
  std::vector<double> pv;
  for (int i = 0; i < 12; ++i) pv.push_back(i % 2 ? -(i + 1.0) : i + 1.0);
  const std::vector<double> w{0.5, -2, 0};
  std::vector<double> want_p;
  for (int i = 0; i < 12; ++i) {
    const int c = (i / 2) % 3;
    want_p.push_back(pv[i] > 0 ? pv[i] : w[c] * pv[i]);
  }
  auto pk = prelu(k.from_vector(pv, Shape{2, 3, 2}, CpuDevice{0}),
                  k.from_vector(w, Shape{3}, CpuDevice{0}));
  auto pd = prelu(d.from_vector(pv, Shape{2, 3, 2}, CpuDevice{0}),
                  d.from_vector(w, Shape{3}, CpuDevice{0}));
  CHECK(pk.shape() == Shape{2, 3, 2});
  CHECK(values(pk) == want_p);
  CHECK(values(pd) == want_p);
  CHECK(values(leaky_relu(x_k, 0.1))[2] == Approx(-0.3).epsilon(1e-15));
  CHECK(values(leaky_relu(x_d, 0.1))[2] == Approx(-0.3).epsilon(1e-15));
  CHECK(values(leaky_relu(x_k))[3] == Approx(-0.01).epsilon(1e-15));

  // logical_xor, with broadcasting.
  auto p_k = k.from_vector(std::vector<bool>{true, false, true, false}, Shape{2, 2}, CpuDevice{0});
  auto q_k = k.from_vector(std::vector<bool>{true, false}, Shape{1, 2}, CpuDevice{0});
  auto p_d = d.from_vector(std::vector<bool>{true, false, true, false}, Shape{2, 2}, CpuDevice{0});
  auto q_d = d.from_vector(std::vector<bool>{true, false}, Shape{1, 2}, CpuDevice{0});
  const std::vector<bool> want_x{false, false, false, false};
  CHECK(logical_xor(p_k, q_k).to_data().to_vector<bool>() == want_x);
  CHECK(logical_xor(p_d, q_d).to_data().to_vector<bool>() == want_x);
  CHECK((p_d ^ flip(p_d, {1})).to_data().to_vector<bool>() ==
        std::vector<bool>{true, true, true, true});

  // softmax and log_softmax of [3, 4] along each dim (rows of -inf but one: exactly one-hot).
  const std::vector<double> sv{1, -inf, 3, -2, 0.5, -inf, 0.25, 40, -1, -inf, 2, -40};
  for (std::int64_t dim : {0, 1}) {
    for (bool lg : {false, true}) {
      INFO("dim " << dim << (lg ? " log_softmax" : " softmax"));
      auto f = [&](auto t) { return lg ? log_softmax(t, dim) : softmax(t, dim); };
      const auto smk = values(f(k.from_vector(sv, Shape{3, 4}, CpuDevice{0})));
      const auto smd = values(f(d.from_vector(sv, Shape{3, 4}, CpuDevice{0})));
      std::vector<double> want;
      for (int i = 0; i < 12; ++i) {  // the formula, in double, along `dim`
        const int row = i / 4, col = i % 4;
        double m = -inf, s = 0;
        for (int j = 0; j < (dim == 0 ? 3 : 4); ++j)
          m = std::max(m, sv[dim == 0 ? j * 4 + col : row * 4 + j]);
        for (int j = 0; j < (dim == 0 ? 3 : 4); ++j)
          s += std::exp(sv[dim == 0 ? j * 4 + col : row * 4 + j] - m);
        want.push_back(lg ? sv[i] - m - std::log(s) : std::exp(sv[i] - m) / s);
      }
      check_close(smk, want, 4e-16);
      check_close(smd, want, 4e-16);
    }
  }

  // What each router recorded: the ops themselves, or their parts.
  k.sync();
  d.sync();
  const auto rk = ops_run(k);
  const auto rd = ops_run(d);
  for (const char* n : {"silu", "hard_sigmoid", "log_sigmoid", "gelu_tanh", "isnan", "isinf",
                        "isfinite", "hypot", "prelu", "logical_xor", "softmax", "log_softmax"}) {
    INFO(n);
    CHECK(rk.count(n) == 1);
    CHECK(rd.count(n) == 0);
  }
  for (const char* n :
       {"sigmoid", "mul", "clamp", "log1p", "not_equal", "sqrt", "where", "max", "exp", "div"}) {
    INFO(n);
    CHECK(rd.count(n) == 1);
  }
}

TEST_CASE("composite ops: both paths check operands as the op the user called") {
  Router<NoComposite> d(NoComposite(2));
  auto i = d.from_vector(std::vector<std::int32_t>{1, 2}, Shape{2}, CpuDevice{0});
  auto f = d.from_vector(std::vector<float>{1, 2}, Shape{2}, CpuDevice{0});
  auto f1 = d.from_vector(std::vector<float>{1, 2}, Shape{2}, CpuDevice{1});
  auto f3 = d.from_vector(std::vector<float>{1, 2, 3}, Shape{3}, CpuDevice{0});
  using ferry_test::Contains;
  REQUIRE_THROWS_MATCHES(silu(i), DTypeError, Contains("silu"));
  REQUIRE_THROWS_MATCHES(hypot(f, f1), DeviceError, Contains("hypot"));
  REQUIRE_THROWS_MATCHES(hypot(f, f3), ShapeError, Contains("hypot"));
  REQUIRE_THROWS_MATCHES(logical_xor(f, f), DTypeError, Contains("logical_xor"));
  REQUIRE_THROWS_MATCHES(prelu(f, f3), ShapeError, Contains("prelu"));
  REQUIRE_THROWS_MATCHES(leaky_relu(i), DTypeError, Contains("leaky_relu"));
}

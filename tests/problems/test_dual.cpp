// Dual numbers: every operation's derivative against central finite differences of the plain
// function and against its closed form; values bit-identical to the plain scalar path; comparisons
// on the value; float instantiation. Multi-direction duals (Dual<double, Tangent<double, W>>): every
// operation, and every registry model's Jacobian through ModelAdapter, bit for bit equal to
// single-direction Dual<double> evaluations, with negative controls.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "knot/problems/dual.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/problems/models/acrobot.hpp"
#include "knot/problems/models/car.hpp"
#include "knot/problems/models/cartpole.hpp"
#include "knot/problems/models/chain_of_masses.hpp"
#include "knot/problems/models/double_integrator.hpp"
#include "knot/problems/models/linear.hpp"
#include "knot/problems/models/pendulum.hpp"
#include "knot/problems/models/quadrotor.hpp"
#include "knot/problems/models/unicycle.hpp"
#include "knot/problems/params.hpp"
#include "knot/problems/registry.hpp"
#include "knot/problems/robot/dynamics.hpp"
#include "test_util.hpp"

namespace knot::problems {
namespace {

using D = Dual<double>;

struct Unary {
  std::string name;
  std::function<D(D)> dual;
  std::function<double(double)> plain;
  std::function<double(double)> derivative;  // closed form
  std::vector<double> points;
};

std::vector<Unary> unary_cases() {
  const std::vector<double> any = {-2.3, -0.7, 0.4, 1.9};
  const std::vector<double> positive = {0.3, 1.1, 4.7};
  return {
      {"sin", [](D a) { return sin(a); }, [](double a) { return std::sin(a); }, [](double a) { return std::cos(a); },
       any},
      {"cos", [](D a) { return cos(a); }, [](double a) { return std::cos(a); }, [](double a) { return -std::sin(a); },
       any},
      {"tan",
       [](D a) { return tan(a); },
       [](double a) { return std::tan(a); },
       [](double a) { return 1 / (std::cos(a) * std::cos(a)); },
       {-1.2, 0.3, 1.0}},
      {"exp", [](D a) { return exp(a); }, [](double a) { return std::exp(a); }, [](double a) { return std::exp(a); },
       any},
      {"log", [](D a) { return log(a); }, [](double a) { return std::log(a); }, [](double a) { return 1 / a; },
       positive},
      {"sqrt", [](D a) { return sqrt(a); }, [](double a) { return std::sqrt(a); },
       [](double a) { return 0.5 / std::sqrt(a); }, positive},
      {"pow2.5", [](D a) { return pow(a, 2.5); }, [](double a) { return std::pow(a, 2.5); },
       [](double a) { return 2.5 * std::pow(a, 1.5); }, positive},
      {"pow-1", [](D a) { return pow(a, -1.0); }, [](double a) { return std::pow(a, -1.0); },
       [](double a) { return -1 / (a * a); }, positive},
      {"tanh", [](D a) { return tanh(a); }, [](double a) { return std::tanh(a); },
       [](double a) { return 1 - std::tanh(a) * std::tanh(a); }, any},
      {"abs", [](D a) { return abs(a); }, [](double a) { return std::abs(a); },
       [](double a) { return a < 0 ? -1.0 : 1.0; }, any},
      {"neg", [](D a) { return -a; }, [](double a) { return -a; }, [](double) { return -1.0; }, any},
      {"scalar_ops", [](D a) { return (3.0 - a) * 2.0 / (a + 5.0) - 1.5 / a + a / 4; },
       [](double a) { return (3.0 - a) * 2.0 / (a + 5.0) - 1.5 / a + a / 4; },
       [](double a) { return -2.0 / (a + 5) - 2 * (3 - a) / ((a + 5) * (a + 5)) + 1.5 / (a * a) + 0.25; }, any},
      {"compound",
       [](D a) {
         D b = a;
         b *= a;
         b += 1.0;
         b /= (a - 7.0);
         b -= a;
         return b;
       },
       [](double a) { return (a * a + 1) / (a - 7) - a; },
       [](double a) { return (2 * a * (a - 7) - (a * a + 1)) / ((a - 7) * (a - 7)) - 1; }, any},
  };
}

double central_difference(const std::function<double(double)>& g, double a) {
  const double h = 6e-6 * std::max(1.0, std::abs(a));
  return (g(a + h) - g(a - h)) / (2 * h);
}

double rel(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

TEST(Dual, UnaryDerivativesMatchClosedFormAndFiniteDifferences) {
  for (const Unary& c : unary_cases()) {
    for (double a : c.points) {
      SCOPED_TRACE(c.name + " at " + std::to_string(a));
      const D r = c.dual(D{a, 1.0});
      EXPECT_EQ(r.v, c.plain(a));  // the value path is the plain one, bit for bit
      EXPECT_LE(rel(r.d, c.derivative(a)), 1e-14);
      EXPECT_LE(rel(r.d, central_difference(c.plain, a)), 1e-6);
      // A seed of 0 is a constant: no derivative.
      EXPECT_EQ(c.dual(D{a, 0.0}).d, 0.0);
    }
  }
}

TEST(Dual, DerivativeCheckRejectsAWrongRule) {
  // The same comparison catches d/da sin = -cos (a sign slip) and 1e-4 relative errors.
  for (double a : {-0.7, 0.4}) {
    const double fd = central_difference([](double x) { return std::sin(x); }, a);
    EXPECT_GT(rel(-std::cos(a), fd), 1e-6);
    EXPECT_GT(rel(sin(D{a, 1.0}).d * (1 + 1e-4), fd), 1e-6);
  }
}

TEST(Dual, BinaryRulesAlongADirection) {
  // Seeding (da, db) gives the directional derivative g_a da + g_b db.
  const double a = 1.3, b = -0.6, da = 0.7, db = -1.9;
  const D x{a, da}, y{b, db};
  EXPECT_NEAR((x + y).d, da + db, 1e-15);
  EXPECT_NEAR((x - y).d, da - db, 1e-15);
  EXPECT_NEAR((x * y).d, b * da + a * db, 1e-15);
  EXPECT_NEAR((x / y).d, da / b - a * db / (b * b), 1e-14);
  EXPECT_EQ((x / y).v, a / b);
  const double r2 = a * a + b * b;
  // atan2(y, x) with y = x here (a), x = y here (b): d = (b da - a db) / r2.
  EXPECT_NEAR(atan2(x, y).d, (b * da - a * db) / r2, 1e-15);
  EXPECT_EQ(atan2(x, y).v, std::atan2(a, b));
  EXPECT_NEAR(atan2(x, b).d, b * da / r2, 1e-15);
  EXPECT_NEAR(atan2(a, y).d, -a * db / r2, 1e-15);
  // Finite differences along the direction for a composite of both arguments.
  auto g = [](double s, double t) { return std::atan2(s, t) * std::exp(s * t) / (1 + t * t); };
  const D r = atan2(x, y) * exp(x * y) / (1.0 + y * y);
  const double h = 1e-5;
  const double fd = (g(a + h * da, b + h * db) - g(a - h * da, b - h * db)) / (2 * h);
  EXPECT_LE(rel(r.d, fd), 1e-6);
  EXPECT_GT(rel(r.d + 1e-3, fd), 1e-6);  // negative control
}

TEST(Dual, ComparisonsLookAtTheValueOnly) {
  const D a{1.0, 5.0}, b{1.0, -3.0}, c{2.0, 0.0};
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a != b);
  EXPECT_TRUE(a < c);
  EXPECT_TRUE(c > a);
  EXPECT_TRUE(a <= b);
  EXPECT_TRUE(a >= b);
  EXPECT_TRUE(a < 1.5);
  EXPECT_TRUE(0.5 < a);
  EXPECT_TRUE(a == 1);
  EXPECT_FALSE(c <= 1.9);
  EXPECT_TRUE(2.0 >= c);
}

TEST(Dual, ConstructionFromScalars) {
  const D zero{};
  EXPECT_EQ(zero.v, 0.0);
  EXPECT_EQ(zero.d, 0.0);
  const D k = 2.5;  // a constant
  EXPECT_EQ(k.v, 2.5);
  EXPECT_EQ(k.d, 0.0);
  const D m = D(3) * D{2.0, 1.0};
  EXPECT_EQ(m.v, 6.0);
  EXPECT_EQ(m.d, 3.0);
}

// The scalar-generic style models use: `using std::f` then unqualified calls.
template <class S>
S generic(S x) {
  using std::cos;
  using std::exp;
  using std::sin;
  using std::sqrt;
  return sin(x) * cos(x) + exp(-x * x) / sqrt(S(1) + x * x);
}

TEST(Dual, FloatInstantiationAndGenericCode) {
  const Dual<float> f = generic(Dual<float>{0.8f, 1.0f});
  const D d = generic(D{0.8, 1.0});
  EXPECT_EQ(f.v, generic(0.8f));
  EXPECT_NEAR(f.v, d.v, 1e-6);
  EXPECT_NEAR(f.d, d.d, 1e-5);
  EXPECT_EQ(d.v, generic(0.8));
  EXPECT_LE(rel(d.d, central_difference([](double x) { return generic(x); }, 0.8)), 1e-6);
  // Mixed with double constants, Dual<float> stays float.
  const Dual<float> g = 0.5 * f + 2.0;
  static_assert(std::is_same_v<decltype(g.v), float>);
  EXPECT_EQ(g.d, 0.5f * f.d);
}

// --- several directions at once: bitwise equal to one direction at a time ------------------------

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// Every operation of dual.hpp, written once for any scalar S (the way models are written).
constexpr int kUnaryOps = 22;
template <class S>
S unary_op(int op, S a) {
  using std::abs;
  using std::atan2;
  using std::cos;
  using std::exp;
  using std::log;
  using std::pow;
  using std::sin;
  using std::sqrt;
  using std::tan;
  using std::tanh;
  switch (op) {
    case 0:
      return sin(a);
    case 1:
      return cos(a);
    case 2:
      return tan(a);
    case 3:
      return exp(a);
    case 4:
      return log(abs(a));
    case 5:
      return sqrt(abs(a));
    case 6:
      return pow(abs(a), 2.5);
    case 7:
      return pow(abs(a), -1.0);
    case 8:
      return tanh(a);
    case 9:
      return abs(a);
    case 10:
      return -a;
    case 11:
      return +a;
    case 12:
      return a + 1.25;
    case 13:
      return 1.25 + a;
    case 14:
      return a - 0.75;
    case 15:
      return 0.75 - a;
    case 16:
      return a * 3.1;
    case 17:
      return 3.1 * a;
    case 18:
      return a / 0.7;
    case 19:
      return 0.7 / a;
    case 20:
      return atan2(a, 0.6) + atan2(-0.9, a);
    default: {
      S b = a;  // the compound assignments
      b *= a;
      b += S(1);
      b /= (a - S(7));
      b -= a;
      return b;
    }
  }
}
constexpr int kBinaryOps = 9;
template <class S>
S binary_op(int op, S a, S b) {
  using std::atan2;
  switch (op) {
    case 0:
      return a + b;
    case 1:
      return a - b;
    case 2:
      return a * b;
    case 3:
      return a / b;
    case 4:
      return atan2(a, b);
    case 5:
      return b > a ? b - a : a * b;  // branches on values
    case 6: {
      S c = a;
      c += b;
      c -= b * a;
      return c;
    }
    case 7: {
      S c = a;
      c *= b;
      c /= b + S(3);
      return c;
    }
    default:
      return (a * b - a / b) / (S(1) + a * a) * atan2(b, a);
  }
}

// Random tangents with exact zeros, ones and negatives among them, W of them per input.
template <int W>
Tangent<double, W> random_tangent(test::Rng& rng) {
  Tangent<double, W> t;
  for (int k = 0; k < W; ++k) t[k] = k % 3 == 0 ? double(k % 2) : rng.uniform(-2, 2);
  return t;
}

// g evaluated once with W directions against W single-direction evaluations; true when every value
// and tangent component has the same bits.
template <int W, class G>
::testing::AssertionResult matches_single_directions(const G& g, double a, const Tangent<double, W>& ta, double b,
                                                     const Tangent<double, W>& tb) {
  const DualW<W> r = g(DualW<W>(a, ta), DualW<W>(b, tb));
  for (int k = 0; k < W; ++k) {
    const Dual<double> s = g(Dual<double>(a, ta[k]), Dual<double>(b, tb[k]));
    if (!same_bits(r.v, s.v)) return ::testing::AssertionFailure() << "value differs in lane " << k;
    if (!same_bits(r.d[k], s.d))
      return ::testing::AssertionFailure() << "lane " << k << ": " << r.d[k] << " vs single " << s.d;
  }
  return ::testing::AssertionSuccess();
}

template <int W>
void check_every_operation(test::Rng& rng) {
  for (double a : {-2.3, -0.7, 0.0, 0.4, 1.9, 5.5}) {
    for (int op = 0; op < kUnaryOps; ++op) {
      SCOPED_TRACE("unary op " + std::to_string(op) + " at " + std::to_string(a) + ", W " + std::to_string(W));
      const auto g = [op](auto x, auto) { return unary_op(op, x); };
      EXPECT_TRUE(matches_single_directions<W>(g, a, random_tangent<W>(rng), 0.0, Tangent<double, W>{}));
    }
    for (double b : {-1.1, 0.3, 2.6}) {
      for (int op = 0; op < kBinaryOps; ++op) {
        SCOPED_TRACE("binary op " + std::to_string(op) + " at " + std::to_string(a) + ", " + std::to_string(b));
        const auto g = [op](auto x, auto y) { return binary_op(op, x, y); };
        EXPECT_TRUE(matches_single_directions<W>(g, a, random_tangent<W>(rng), b, random_tangent<W>(rng)));
      }
    }
  }
}

TEST(MultiTangent, EveryOperationMatchesSingleDirectionsBitwise) {
  test::Rng rng(71);
  check_every_operation<1>(rng);
  check_every_operation<2>(rng);
  check_every_operation<5>(rng);
  check_every_operation<8>(rng);
}

TEST(MultiTangent, BitwiseCheckRejectsAReorderedRule) {
  // The quotient rule with the division replaced by a reciprocal times (q = a / b,
  // (da - q db) * (1 / b)) agrees to rounding but not bit for bit; the check above would catch it.
  test::Rng rng(72);
  const auto reordered = [](auto a, auto b) {
    auto r = a / b;
    r.d = (a.d - r.v * b.d) * (1.0 / b.v);
    return r;
  };
  int rejected = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const double a = rng.uniform(-3, 3), b = rng.uniform(0.2, 3);
    const Tangent<double, 8> ta = random_tangent<8>(rng), tb = random_tangent<8>(rng);
    const auto exact = [](auto x, auto y) { return x / y; };
    EXPECT_TRUE(matches_single_directions<8>(exact, a, ta, b, tb));
    // The reordered rule in the 8-wide dual against the real one in single-direction duals.
    const DualW<8> r = reordered(DualW<8>(a, ta), DualW<8>(b, tb));
    for (int k = 0; k < 8; ++k)
      if (!same_bits(r.d[k], (Dual<double>(a, ta[k]) / Dual<double>(b, tb[k])).d)) {
        ++rejected;
        break;
      }
  }
  EXPECT_GT(rejected, 0);
}

TEST(MultiTangent, ConstructionAndLayout) {
  static_assert(std::is_trivial_v<Tangent<double, 8>>);
  static_assert(std::is_trivially_default_constructible_v<DualW<8>>);
  static_assert(std::is_trivially_copyable_v<DualW<8>>);
  static_assert(sizeof(DualW<8>) == 9 * sizeof(double));
  const DualW<4> zero{}, k = 2.5;
  EXPECT_EQ(zero.v, 0.0);
  EXPECT_EQ(k.v, 2.5);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(same_bits(zero.d[i], 0.0));
    EXPECT_TRUE(same_bits(k.d[i], 0.0));  // +0, as Dual<double>(2.5).d
  }
  // Mixed with double constants, a float multi-direction dual stays float.
  const Dual<float, Tangent<float, 3>> f(0.5f, Tangent<float, 3>{{1.0f, 2.0f, 3.0f}});
  const auto g = 2.0 * f + 1;
  static_assert(std::is_same_v<decltype(g.d[0]), const float&>);
  EXPECT_EQ(g.d[2], 6.0f);
}

// --- robot::detail::cross3 on W-direction duals (its own lane kernel on the host) ----------------

// a x b for W-direction duals, into a, into b and into a third array, against the generic cross3
// run once per direction on single-direction duals: every value and component bit for bit. `rule`
// replaces the kernel (the negative control).
template <int W, class Cross>
int cross3_lanes_differ(test::Rng& rng, Cross&& rule) {
  int differ = 0;
  for (int trial = 0; trial < 20; ++trial) {
    DualW<W> a[3], b[3];
    for (int i = 0; i < 3; ++i) {
      a[i] = DualW<W>(rng.uniform(-2, 2), random_tangent<W>(rng));
      b[i] = DualW<W>(rng.uniform(-2, 2), random_tangent<W>(rng));
    }
    for (int into = 0; into < 3; ++into) {
      DualW<W> x[3] = {a[0], a[1], a[2]}, y[3] = {b[0], b[1], b[2]}, fresh[3];
      DualW<W>* out = into == 0 ? x : into == 1 ? y : fresh;
      rule(x, y, out);
      for (int k = 0; k < W; ++k) {
        Dual<double> sa[3], sb[3], s[3];
        for (int i = 0; i < 3; ++i) {
          sa[i] = Dual<double>(a[i].v, a[i].d[k]);
          sb[i] = Dual<double>(b[i].v, b[i].d[k]);
        }
        robot::detail::cross3(sa, sb, s);
        for (int i = 0; i < 3; ++i)
          if (!same_bits(out[i].v, s[i].v) || !same_bits(out[i].d[k], s[i].d)) ++differ;
      }
    }
  }
  return differ;
}

template <int W>
void check_cross3_lanes(test::Rng& rng) {
  SCOPED_TRACE("W " + std::to_string(W));
  // What the robot code calls (the lane kernel on the host), and the generic template forced.
  EXPECT_EQ(cross3_lanes_differ<W>(rng, [](auto* a, auto* b, auto* o) { robot::detail::cross3(a, b, o); }), 0);
  EXPECT_EQ(cross3_lanes_differ<W>(rng, [](auto* a, auto* b, auto* o) { robot::detail::cross3<DualW<W>>(a, b, o); }),
            0);
}

TEST(MultiTangent, RobotCross3MatchesSingleDirectionsBitwiseInPlaceToo) {
  test::Rng rng(73);
  check_cross3_lanes<1>(rng);
  check_cross3_lanes<3>(rng);
  check_cross3_lanes<5>(rng);
  check_cross3_lanes<8>(rng);
  check_cross3_lanes<16>(rng);
}

TEST(MultiTangent, Cross3BitwiseCheckRejectsAReassociatedRule) {
  // The derivative of a1 b2 - a2 b1 summed as ((a1' b2 - a2' b1) + a1 b2') - a2 b1': equal in exact
  // arithmetic, off by rounding.
  test::Rng rng(74);
  const auto reassociated = [](auto* a, auto* b, auto* o) {
    using S = std::remove_pointer_t<decltype(o)>;
    S r[3];
    for (int i = 0; i < 3; ++i) {
      const int j = (i + 1) % 3, m = (i + 2) % 3;
      r[i] = a[j] * b[m] - a[m] * b[j];
      r[i].d = ((a[j].d * b[m].v - a[m].d * b[j].v) + a[j].v * b[m].d) - a[m].v * b[j].d;
    }
    for (int i = 0; i < 3; ++i) o[i] = r[i];
  };
  EXPECT_GT(cross3_lanes_differ<8>(rng, reassociated), 0);
}

// --- registry models: Jacobians by W-wide sweeps against one-direction sweeps --------------------

// [f | fx | fu] (nx x (1 + nx + nu), column-major) as one vector.
struct Columns {
  std::vector<double> all;
  Columns(int nx, int nu) : all(std::size_t(nx) * (1 + nx + nu), test::kNaN) {}
};

// The reference: nx + nu evaluations with Dual<double>, one seeded direction each.
template <class M>
Columns single_direction_sweeps(const M& model, const double* x, const double* u) {
  const int n = model.nx(), m = model.nu();
  Columns out(n, m);
  std::vector<Dual<double>> xd(n), ud(m), fd(n);
  for (int i = 0; i < n; ++i) xd[i] = {x[i], 0.0};
  for (int i = 0; i < m; ++i) ud[i] = {u[i], 0.0};
  for (int j = 0; j < n + m; ++j) {
    (j < n ? xd[j] : ud[j - n]).d = 1.0;
    model.template dynamics<Dual<double>>(xd.data(), ud.data(), fd.data());
    (j < n ? xd[j] : ud[j - n]).d = 0.0;
    for (int i = 0; i < n; ++i) out.all[std::size_t(n) * (1 + j) + i] = fd[i].d;
  }
  model.template dynamics<double>(x, u, out.all.data());
  return out;
}

template <class M, int W>
Columns sweeps_of_width(const ModelAdapter<M>& a, const double* x, const double* u) {
  const int n = a.nx(), m = a.nu();
  Columns out(n, m);
  std::vector<DualW<W>> xd(n), ud(m), fd(n);
  double* f = out.all.data();
  a.template dual_sweeps<W>(x, u, f, f + n, f + std::size_t(n) * (1 + n), xd.data(), ud.data(), fd.data());
  return out;
}

template <class M>
Columns adapter_dual_jacobian(const ModelAdapter<M>& a, const double* x, const double* u, bool through_model) {
  const int n = a.nx(), m = a.nu();
  Columns out(n, m);
  auto data = a.make_data();
  double* f = out.all.data();
  if (through_model)  // the virtual entry point the integrators call
    static_cast<const Model&>(a).dynamics_jacobian(*data, x, u, f, f + n, f + std::size_t(n) * (1 + n));
  else
    a.dual_jacobian(*data, x, u, f, f + n, f + std::size_t(n) * (1 + n));
  return out;
}

::testing::AssertionResult bitwise_equal(const Columns& got, const Columns& ref) {
  if (got.all.size() != ref.all.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < ref.all.size(); ++i)
    if (!same_bits(got.all[i], ref.all[i]))
      return ::testing::AssertionFailure() << "entry " << i << ": " << got.all[i] << " vs " << ref.all[i];
  return ::testing::AssertionSuccess();
}

template <class M>
bool check_if_adapter_of(const Model& model, test::Rng& rng) {
  const auto* a = dynamic_cast<const ModelAdapter<M>*>(&model);
  if (a == nullptr) return false;
  for (int trial = 0; trial < 3; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const test::Vec x = rng.vector(a->nx()), u = rng.vector(a->nu());
    const Columns ref = single_direction_sweeps(a->model(), x.data(), u.data());
    EXPECT_TRUE(bitwise_equal(adapter_dual_jacobian(*a, x.data(), u.data(), false), ref));
    if constexpr (!AnalyticJacobian<M>) {
      EXPECT_TRUE(bitwise_equal(adapter_dual_jacobian(*a, x.data(), u.data(), true), ref));
    }
    EXPECT_TRUE(bitwise_equal(sweeps_of_width<M, 1>(*a, x.data(), u.data()), ref));
    EXPECT_TRUE(bitwise_equal(sweeps_of_width<M, 3>(*a, x.data(), u.data()), ref));
    EXPECT_TRUE(bitwise_equal(sweeps_of_width<M, 8>(*a, x.data(), u.data()), ref));
    EXPECT_TRUE(bitwise_equal(sweeps_of_width<M, 16>(*a, x.data(), u.data()), ref));
  }
  return true;
}

// Parameters that make each model's Jacobian dense enough to exercise several sweeps.
ParamMap params_for(const std::string& type, test::Rng& rng) {
  ParamMap p("model.params");
  if (type == "double_integrator") p.set("dim", 3.0);
  if (type == "chain_of_masses") p.set("masses", 6.0);
  if (type == "linear") {
    std::vector<double> a(7 * 7), b(7 * 3);
    for (double& v : a) v = rng.uniform();
    for (double& v : b) v = rng.uniform();
    p.set("nx", 7.0).set("nu", 3.0).set_matrix("A", 7, 7, a).set_matrix("B", 7, 3, b);
  }
  return p;
}

TEST(MultiTangent, EveryRegistryModelJacobianMatchesSingleDirectionSweepsBitwise) {
  test::Rng rng(73);
  int checked = 0;
  for (const ModelInfo& info : model_types()) {
    SCOPED_TRACE(info.type);
    if (info.type == "manipulator") continue;  // not a template model: analytic RNEA derivatives
    const auto model = make_model(info.type, params_for(info.type, rng));
    const bool found =
        check_if_adapter_of<models::DoubleIntegrator>(*model, rng) ||
        check_if_adapter_of<models::Pendulum>(*model, rng) || check_if_adapter_of<models::Cartpole>(*model, rng) ||
        check_if_adapter_of<models::Acrobot>(*model, rng) || check_if_adapter_of<models::Quadrotor>(*model, rng) ||
        check_if_adapter_of<models::Unicycle>(*model, rng) || check_if_adapter_of<models::Car>(*model, rng) ||
        check_if_adapter_of<models::ChainOfMasses>(*model, rng) || check_if_adapter_of<models::Linear>(*model, rng);
    EXPECT_TRUE(found) << "a registry model this test does not check: add it to the list";
    checked += found;
  }
  EXPECT_EQ(checked, 9);
}

TEST(MultiTangent, JacobianBitwiseCheckRejectsOneUlp) {
  test::Rng rng(74);
  const ModelAdapter<models::Quadrotor> a(models::Quadrotor{});
  const test::Vec x = rng.vector(12), u = rng.vector(4);
  const Columns ref = single_direction_sweeps(a.model(), x.data(), u.data());
  Columns got = adapter_dual_jacobian(a, x.data(), u.data(), true);
  ASSERT_TRUE(bitwise_equal(got, ref));
  // One unit in the last place of one entry, in the last sweep's columns, is caught.
  double& e = got.all[got.all.size() - 2];
  e = std::nextafter(e, std::numeric_limits<double>::infinity());
  EXPECT_FALSE(bitwise_equal(got, ref));
}

}  // namespace
}  // namespace knot::problems

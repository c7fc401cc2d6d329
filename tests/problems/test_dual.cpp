// Dual numbers: every operation's derivative against central finite differences of the plain
// function and against its closed form; values bit-identical to the plain scalar path; comparisons
// on the value; float instantiation.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "knot/problems/dual.hpp"

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

}  // namespace
}  // namespace knot::problems

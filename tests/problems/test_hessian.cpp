// Second derivatives: HyperDual's rules, the integrator step's Hessian lambda' d2F for every
// scalar-templated model and explicit scheme, and the constraint and cost terms' curvature, each
// against central differences of the analytic (dual-number) first derivatives, with bitwise
// symmetry and a negative control.
//
// Tolerance: central differences with h = eps^(1/3) max(1, |w|) ~ 6e-6 have truncation error
// h^2 / 6 |f'''| ~ 6e-12 |f'''| and rounding error ~ eps |f'| / h ~ 4e-11 |f'|; relative to
// max(1, |H|), 1e-6 leaves four to five orders of margin for the size of the third derivatives of
// these models, and still rejects a Hessian of another scheme or with one multiplier dropped
// (the negative controls, off by more than 1e-3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/dual.hpp"
#include "knot/problems/hyperdual.hpp"
#include "knot/problems/integrator.hpp"
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
#include "knot/problems/stage.hpp"
#include "test_models_local.hpp"

namespace {

using namespace knot::problems;
using knot::test::bitwise_symmetric;
using knot::test::Mat;
using knot::test::rel_err;
using knot::test::Rng;
using knot::test::Vec;

constexpr double kTol = 1e-6;

// Central differences of a gradient g(w) (n entries): column j is (g(w + h e_j) - g(w - h e_j)) / 2h.
template <class Grad>
Mat fd_of_gradient(const Grad& grad, const Vec& w) {
  const int n = static_cast<int>(w.size());
  const double scale = std::cbrt(std::numeric_limits<double>::epsilon());
  Mat H(n, n);
  for (int j = 0; j < n; ++j) {
    const double h = scale * std::max(1.0, std::abs(w[j]));
    Vec wp = w, wm = w;
    wp[j] += h;
    wm[j] -= h;
    H.col(j) = (grad(wp) - grad(wm)) / (2 * h);
  }
  return H;
}

// ---- HyperDual --------------------------------------------------------------------------------------

// Every rule of hyperdual.hpp in one function of three variables (atan2 on both of its branches).
template <class S>
S every_rule(const S* w) {
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
  const S a = w[0], b = w[1], c = w[2];
  S r = sin(a) * cos(b) + tan(0.3 * c) - exp(0.5 * a * b) / (2.0 + c * c);
  r += log(3.0 + a * a) * sqrt(2.0 + b * b) + pow(2.5 + c, 1.7) + tanh(a - c);
  r += 1.5 / (2.0 + b * b) + abs(a * c - 0.1) + atan2(b, 2.0 + a) + atan2(3.0 + c, 0.2 * a);
  r -= (a - 2) * (1 - b) / 4;
  return r;
}

TEST(HyperDual, EveryRuleMatchesDifferencesOfTheDualGradient) {
  Rng rng(3);
  using G = Dual<double, Tangent<double, 3>>;
  for (int trial = 0; trial < 5; ++trial) {
    const Vec w = rng.vector(3);
    HyperDual<3> hw[3];
    for (int i = 0; i < 3; ++i) {
      hw[i] = HyperDual<3>(w[i]);
      hw[i].g[i] = 1.0;
    }
    const HyperDual<3> r = every_rule(hw);
    Mat H(3, 3);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j <= i; ++j) H(i, j) = H(j, i) = r.h[HyperDual<3>::pair(i, j)];
    const auto grad = [](const Vec& v) {
      G gw[3];
      for (int i = 0; i < 3; ++i) {
        gw[i] = G(v[i]);
        gw[i].d[i] = 1.0;
      }
      const G g = every_rule(gw);
      return Vec(Vec::Map(g.d.e, 3));
    };
    EXPECT_EQ(r.v, every_rule(w.data()));  // the value is the plain evaluation's, bit for bit
    const Vec g = grad(w);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(r.g[i], g[i], 1e-14 * std::max(1.0, std::abs(g[i])));
    const Mat ref = fd_of_gradient(grad, w);
    EXPECT_LE(rel_err(H, ref), kTol) << "\n" << H << "\n\n" << ref;
    // Negative control: a wrong second-derivative rule (sin'' = +sin) is caught.
    HyperDual<3> wrong = hw[0];
    wrong = hyperdual_detail::chain(wrong * hw[1], std::sin(w[0] * w[1]), std::cos(w[0] * w[1]), std::sin(w[0] * w[1]));
    const auto grad_sin = [](const Vec& v) {
      G a(v[0]), b(v[1]);
      a.d[0] = 1.0;
      b.d[1] = 1.0;
      const G g = sin(a * b);
      return Vec(Vec::Map(g.d.e, 2));
    };
    Mat Hw(2, 2);
    Hw << wrong.h[0], wrong.h[1], wrong.h[1], wrong.h[2];
    EXPECT_GT(rel_err(Hw, fd_of_gradient(grad_sin, w.head(2))), 1e-3);
  }
}

// ---- the integrator step ----------------------------------------------------------------------------

template <class M>
std::shared_ptr<const Model> adapted(typename M::Params p = {}) {
  M m;
  m.params = p;
  return std::make_shared<ModelAdapter<M>>(m);
}

// The Hessian of lambda' F by second-order forward mode, NaN-poisoned first.
Mat step_hessian(Integrator& in, const Model& m, const Vec& w, const Vec& lambda, double dt,
                 SecondOrderStatus expect = SecondOrderStatus::Ok) {
  const int nx = m.nx(), nw = nx + m.nu();
  auto data = m.make_data();
  Mat H = Mat::Constant(nw, nw, knot::test::kNaN);
  EXPECT_EQ(in.step_hessian(*data, w.data(), w.data() + nx, dt, lambda.data(), H.data()), expect);
  return H;
}

// The reference: central differences of the exact gradient [A' lambda; B' lambda].
Mat fd_step_hessian(Integrator& in, const Model& m, const Vec& w, const Vec& lambda, double dt) {
  const int nx = m.nx(), nu = m.nu();
  auto data = m.make_data();
  const auto grad = [&](const Vec& v) {
    Vec y(nx);
    Mat A(nx, nx), B(nx, nu);
    EXPECT_EQ(in.step_jacobian(*data, v.data(), v.data() + nx, dt, y.data(), A.data(), B.data()), IntegratorStatus::Ok);
    Vec g(nx + nu);
    g << A.transpose() * lambda, B.transpose() * lambda;
    return g;
  };
  return fd_of_gradient(grad, w);
}

struct Case {
  std::string name;
  std::shared_ptr<const Model> model;
};

std::vector<Case> templated_models() {
  models::ChainOfMasses::Params chain3;
  chain3.masses = 3;
  models::DoubleIntegrator::Params di2;
  di2.dim = 2;
  return {{"pendulum", adapted<models::Pendulum>()},
          {"cartpole", adapted<models::Cartpole>()},
          {"acrobot", adapted<models::Acrobot>()},
          {"unicycle", adapted<models::Unicycle>()},
          {"car", adapted<models::Car>()},
          {"quadrotor", adapted<models::Quadrotor>()},
          {"chain_of_masses(3)", adapted<models::ChainOfMasses>(chain3)},
          {"chain_of_masses(5)", adapted<models::ChainOfMasses>()},  // nx + nu = 24, the widest
          {"double_integrator(2)", adapted<models::DoubleIntegrator>(di2)}};
}

// A model's compile-time kNw (which picks its one second-order width) is its nx + nu.
TEST(StepHessian, CompileTimeSizesAreTheModels) {
  EXPECT_EQ(models::Pendulum::kNw, models::Pendulum{}.nx() + models::Pendulum{}.nu());
  EXPECT_EQ(models::Cartpole::kNw, models::Cartpole{}.nx() + models::Cartpole{}.nu());
  EXPECT_EQ(models::Acrobot::kNw, models::Acrobot{}.nx() + models::Acrobot{}.nu());
  EXPECT_EQ(models::Unicycle::kNw, models::Unicycle{}.nx() + models::Unicycle{}.nu());
  EXPECT_EQ(models::Car::kNw, models::Car{}.nx() + models::Car{}.nu());
  EXPECT_EQ(models::Quadrotor::kNw, models::Quadrotor{}.nx() + models::Quadrotor{}.nu());
}

TEST(StepHessian, EveryTemplatedModelAndExplicitSchemeMatchesFiniteDifferences) {
  Rng rng(21);
  const double dt = 0.05;
  for (const Case& c : templated_models())
    for (IntegratorType t : {IntegratorType::Euler, IntegratorType::SemiImplicitEuler, IntegratorType::Rk4}) {
      const Model& m = *c.model;
      if (t == IntegratorType::SemiImplicitEuler && m.nq() == 0) continue;
      SCOPED_TRACE(c.name + " " + std::string(to_string(t)));
      Integrator in(m, t);
      for (int trial = 0; trial < 3; ++trial) {
        // Chain-of-masses positions spread so that no spring has zero length.
        Vec w = rng.vector(m.nx() + m.nu());
        if (c.name.starts_with("chain"))
          for (int i = 0; i < m.nx(); ++i) w[i] += 0.5 * i;
        const Vec lambda = 10 * rng.vector(m.nx());
        const Mat H = step_hessian(in, m, w, lambda, dt);
        EXPECT_TRUE(H.allFinite());
        EXPECT_TRUE(bitwise_symmetric(H));
        EXPECT_LE(rel_err(H, fd_step_hessian(in, m, w, lambda, dt)), kTol);
      }
    }
}

// Negative controls: the check rejects the Hessian of another scheme, and one with a multiplier
// dropped.
TEST(StepHessian, CheckRejectsAWrongHessian) {
  Rng rng(5);
  const auto m = adapted<models::Acrobot>();
  const double dt = 0.05;
  Integrator rk4(*m, IntegratorType::Rk4), euler(*m, IntegratorType::Euler);
  const Vec w = rng.vector(5);
  Vec lambda = 10 * rng.vector(4);
  const Mat ref = fd_step_hessian(rk4, *m, w, lambda, dt);
  EXPECT_LE(rel_err(step_hessian(rk4, *m, w, lambda, dt), ref), kTol);
  EXPECT_GT(rel_err(step_hessian(euler, *m, w, lambda, dt), ref), 1e-3);
  lambda[3] = 0;
  EXPECT_GT(rel_err(step_hessian(rk4, *m, w, lambda, dt), ref), 1e-3);
}

// A linear model's step is linear: its second derivatives are exactly zero, continuous or discrete.
TEST(StepHessian, LinearModelsHaveZeroCurvature) {
  Rng rng(8);
  const Mat A = rng.matrix(3, 3), B = rng.matrix(3, 2);
  for (bool discrete : {false, true}) {
    models::Linear::Params p;
    p.nx = 3;
    p.nu = 2;
    p.A = A.data();
    p.B = B.data();
    p.discrete = discrete;
    const auto m = adapted<models::Linear>(p);
    Integrator in(*m, discrete ? IntegratorType::ImplicitEuler : IntegratorType::Rk4);
    const Mat H = step_hessian(in, *m, rng.vector(5), rng.vector(3), 0.1);
    EXPECT_EQ(H, Mat::Zero(5, 5));
  }
}

// Where there is no second-order forward mode the caller is told so (and differences the gradient):
// implicit schemes, models that are not scalar templates, models wider than the widest HyperDual.
TEST(StepHessian, UnsupportedWhereThereIsNoSecondOrderMode) {
  Rng rng(9);
  const auto acrobot = adapted<models::Acrobot>();
  for (IntegratorType t : {IntegratorType::ImplicitEuler, IntegratorType::ImplicitMidpoint}) {
    Integrator in(*acrobot, t);
    const Mat H = step_hessian(in, *acrobot, rng.vector(5), rng.vector(4), 0.05, SecondOrderStatus::Unsupported);
    EXPECT_TRUE(H.array().isNaN().all());  // untouched
  }
  knot::test::Pendulum local;
  Integrator in_local(local, IntegratorType::Rk4);
  step_hessian(in_local, local, rng.vector(3), rng.vector(2), 0.05, SecondOrderStatus::Unsupported);
  models::ChainOfMasses::Params chain6;
  chain6.masses = 6;  // nx + nu = 30
  const auto wide = adapted<models::ChainOfMasses>(chain6);
  Integrator in_wide(*wide, IntegratorType::Rk4);
  step_hessian(in_wide, *wide, rng.vector(30), rng.vector(27), 0.05, SecondOrderStatus::Unsupported);
}

TEST(StepHessian, NonFiniteIsAStatus) {
  const auto m = adapted<models::Pendulum>();
  Integrator in(*m, IntegratorType::Rk4);
  Vec w(3);
  w << 0.1, std::numeric_limits<double>::infinity(), 0.0;
  step_hessian(in, *m, w, Vec::Ones(2), 0.05, SecondOrderStatus::NonFinite);
}

// ---- constraint and cost terms ----------------------------------------------------------------------

StagePoint stage(const Vec& w, int nx, bool control) {
  StagePoint p;
  p.k = 0;
  p.N = 10;
  p.dt = 0.1;
  p.x = w.data();
  p.u = control ? w.data() + nx : nullptr;
  return p;
}

// sum_i mult_i d2g_i from add_curvature against differences of sum_i mult_i grad g_i.
Mat term_curvature(const ConstraintTerm& t, const Vec& w, const Vec& mult, int nx) {
  const int nw = static_cast<int>(w.size());
  Mat H = Mat::Zero(nw, nw);
  EXPECT_TRUE(t.add_curvature(stage(w, nx, t.uses_control()), mult.data(), H.data(), nw));
  return H;
}

Mat fd_term_curvature(const ConstraintTerm& t, const Vec& w, const Vec& mult, int nx) {
  const int nw = static_cast<int>(w.size()), nu = nw - nx, m = t.dim();
  const auto grad = [&](const Vec& v) {
    Mat gx = Mat::Zero(m, nx), gu = Mat::Zero(m, nu);
    Vec g(m);
    t.jacobian(stage(v, nx, t.uses_control()), g.data(), gx.data(), t.uses_control() ? gu.data() : nullptr);
    Vec out(nw);
    out << gx.transpose() * mult, gu.transpose() * mult;
    return out;
  };
  return fd_of_gradient(grad, w);
}

TEST(TermCurvature, ConstraintTermsMatchFiniteDifferences) {
  Rng rng(31);
  const int nx = 3, nu = 2;
  const auto unicycle = adapted<models::Unicycle>();
  const TermInfo info{"t", StageSet::All, false};
  const CircleObstacle circle(info, *unicycle, {0.3, -0.2}, 0.5);
  const StateBox sbox(info, nx, {0, 2}, {-1.0, -2.0}, {1.0, 2.0});
  const ControlBox cbox(info, nu, {-1.0, -1.0}, {1.0, 1.0});
  const StateEquality seq(info, nx, {1}, {0.25});
  for (const ConstraintTerm* t : std::initializer_list<const ConstraintTerm*>{&circle, &sbox, &cbox, &seq}) {
    SCOPED_TRACE(std::string(t->type()));
    const Vec w = rng.vector(nx + nu);
    const Vec mult = rng.vector(t->dim()).cwiseAbs();
    const Mat H = term_curvature(*t, w, mult, nx);
    EXPECT_TRUE(bitwise_symmetric(H));
    EXPECT_LE(rel_err(H, fd_term_curvature(*t, w, mult, nx)), kTol);
  }
  // Negative control: the circle's curvature is not zero, so a term that claimed it was would fail.
  const Vec w = rng.vector(nx + nu), mult = Vec::Ones(1);
  EXPECT_GT(rel_err(Mat::Zero(nx + nu, nx + nu), fd_term_curvature(circle, w, mult, nx)), 0.5);
}

// The quadratic cost terms' Gauss-Newton Hessian is their exact one: they add nothing (and say
// so); a term with a nonlinear residual and no second derivatives declines (the solver then
// differences the gradient).
TEST(TermCurvature, QuadraticCostsAddNothingAndOthersDecline) {
  const int nx = 4, nu = 2;
  const TermInfo info{"t", StageSet::All, false};
  const StateCost state(info, nx, std::vector<double>(16, 0.0), Reference::constant(std::vector<double>(nx, 0.0)));
  const ControlCost control(info, nu, std::vector<double>{1, 0, 0, 1}, Reference::constant({0.0, 0.0}));
  const ControlRateCost rate(info, nu, std::vector<double>{1, 0, 0, 1});
  const auto arm = std::make_shared<knot::test::Arm2>();
  const EndEffectorCost ee(info, arm, 1, {}, std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1},
                           Reference::constant({0.0, 0.0, 0.0}));
  const Vec w = Vec::Ones(nx + nu);
  Vec prev = Vec::Zero(nu);
  StagePoint p = stage(w, nx, true);
  p.k = 1;
  p.u_prev = prev.data();
  const auto arm_data = arm->make_data();
  p.data = arm_data.get();
  Mat Hxx = Mat::Constant(nx, nx, 7.0), Huu = Mat::Constant(nu, nu, 7.0), Hux = Mat::Constant(nu, nx, 7.0);
  CostBlocks b;
  b.Hxx = Hxx.data();
  b.Huu = Huu.data();
  b.Hux = Hux.data();
  for (const CostTerm* c : std::initializer_list<const CostTerm*>{&state, &control, &rate}) {
    SCOPED_TRACE(std::string(c->type()));
    EXPECT_TRUE(c->add_curvature(p, b));
    EXPECT_EQ(Hxx, Mat::Constant(nx, nx, 7.0));
    EXPECT_EQ(Huu, Mat::Constant(nu, nu, 7.0));
    EXPECT_EQ(Hux, Mat::Constant(nu, nx, 7.0));
  }
  EXPECT_FALSE(ee.add_curvature(p, b));
}

}  // namespace

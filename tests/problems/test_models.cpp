// The template models through ModelAdapter: Jacobians against central finite differences for every
// model (with a negative control), dual-derived against analytic Jacobians, float instantiation,
// zero allocation per call, and physical checks per model against independent references
// (Lagrangian mass matrices solved with Eigen, energy balances, symmetries, equilibria).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <new>
#include <numbers>
#include <string>

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
#include "test_util.hpp"

// Heap allocations counted while `g_counting` is set (the solve-never-allocates rule).
namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

// Not inlined: GCC would otherwise pair the malloc/free inside with new/delete at call sites and
// warn of a mismatch (-Wmismatched-new-delete).
[[gnu::noinline]] void* operator new(std::size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace knot::problems {
namespace {

using test::Mat;
using test::rel_err;
using test::Rng;
using test::Vec;
namespace mdl = models;
constexpr double kPi = std::numbers::pi;
constexpr double kTol = 1e-6;

// --- evaluation helpers ------------------------------------------------------------------------------

Vec eval(const Model& model, const Vec& x, const Vec& u) {
  auto data = model.make_data();
  Vec f = Vec::Constant(model.nx(), test::kNaN);
  model.dynamics(*data, x.data(), u.data(), f.data());
  return f;
}

// [fx | fu] from the model, outputs poisoned so an unwritten entry shows as NaN.
Mat jacobian(const Model& model, const Vec& x, const Vec& u, Vec* f_out = nullptr) {
  const int nx = model.nx(), nu = model.nu();
  auto data = model.make_data();
  Mat fx = Mat::Constant(nx, nx, test::kNaN), fu = Mat::Constant(nx, nu, test::kNaN);
  Vec f = Vec::Constant(nx, test::kNaN);
  model.dynamics_jacobian(*data, x.data(), u.data(), f.data(), fx.data(), fu.data());
  if (f_out) *f_out = f;
  Mat j(nx, nx + nu);
  j << fx, fu;
  return j;
}

// Central differences with a step scaled to each coordinate (cube root of eps: truncation and
// rounding errors balance near 1e-11 relative).
Mat fd_jacobian(const Model& model, const Vec& x, const Vec& u) {
  const int nx = model.nx(), nu = model.nu();
  Vec z(nx + nu);
  z << x, u;
  Mat j(nx, nx + nu);
  for (int k = 0; k < nx + nu; ++k) {
    const double h = 6e-6 * std::max(1.0, std::abs(z[k]));
    Vec zp = z, zm = z;
    zp[k] += h;
    zm[k] -= h;
    j.col(k) = (eval(model, zp.head(nx), zp.tail(nu)) - eval(model, zm.head(nx), zm.tail(nu))) / (2 * h);
  }
  return j;
}

// Gradient of a scalar function of x by central differences.
Vec fd_gradient(const std::function<double(const Vec&)>& g, const Vec& x) {
  Vec grad(x.size());
  for (int k = 0; k < x.size(); ++k) {
    const double h = 6e-6 * std::max(1.0, std::abs(x[k]));
    Vec xp = x, xm = x;
    xp[k] += h;
    xm[k] -= h;
    grad[k] = (g(xp) - g(xm)) / (2 * h);
  }
  return grad;
}

template <class M>
std::shared_ptr<ModelAdapter<M>> adapt(typename M::Params p = {}) {
  M m;
  m.params = p;
  return std::make_shared<ModelAdapter<M>>(m);
}

// A linear model with its own storage for A, B, c.
struct LinearFixture {
  Mat A, B;
  Vec c;
  std::shared_ptr<ModelAdapter<mdl::Linear>> model;
  LinearFixture(Rng& rng, int nx, int nu, bool discrete, bool with_c) {
    A = rng.matrix(nx, nx);
    B = rng.matrix(nx, nu);
    c = with_c ? rng.vector(nx) : Vec::Zero(nx);
    mdl::Linear m;
    m.params = {nx, nu, A.data(), B.data(), with_c ? c.data() : nullptr, discrete};
    model = std::make_shared<ModelAdapter<mdl::Linear>>(m);
  }
};

// --- every model: Jacobian vs finite differences -----------------------------------------------------

struct Case {
  std::string name;
  std::shared_ptr<const Model> model;
  std::function<Vec(Rng&)> sample_x;  // a state away from the model's singularities
};

std::vector<Case> all_cases() {
  static Rng rng(7);
  static LinearFixture lin_c(rng, 4, 2, false, true), lin_d(rng, 3, 3, true, false);
  mdl::Pendulum::Params damped;
  damped.damping = 0.3;
  mdl::DoubleIntegrator::Params di3;
  di3.dim = 3;
  mdl::ChainOfMasses::Params chain3;
  chain3.masses = 3;
  auto any = [](int n, double r) { return [n, r](Rng& g) { return Vec(r * g.vector(n)); }; };
  return {
      {"double_integrator_1", adapt<mdl::DoubleIntegrator>(), any(2, 3)},
      {"double_integrator_3", adapt<mdl::DoubleIntegrator>(di3), any(6, 3)},
      {"pendulum", adapt<mdl::Pendulum>(), any(2, 4)},
      {"pendulum_damped", adapt<mdl::Pendulum>(damped), any(2, 4)},
      {"cartpole", adapt<mdl::Cartpole>(), any(4, 4)},
      {"acrobot", adapt<mdl::Acrobot>(), any(4, 4)},
      {"quadrotor", adapt<mdl::Quadrotor>(),
       [](Rng& g) {
         Vec x = 2 * g.vector(12);
         x[4] = g.uniform(-1.2, 1.2);  // pitch away from +-pi/2, where yaw is undefined
         return x;
       }},
      {"unicycle", adapt<mdl::Unicycle>(), any(3, 4)},
      {"car", adapt<mdl::Car>(), any(4, 4)},
      {"chain_of_masses_5", adapt<mdl::ChainOfMasses>(), any(21, 1)},
      {"chain_of_masses_3", adapt<mdl::ChainOfMasses>(chain3), any(9, 1)},
      {"linear_continuous", lin_c.model, any(4, 2)},
      {"linear_discrete", lin_d.model, any(3, 2)},
  };
}

Vec sample_u(Rng& rng, const Case& c) {
  Vec u = 2 * rng.vector(c.model->nu());
  if (c.model->type() == "car") u[1] = rng.uniform(-0.6, 0.6);  // steering well inside +-pi/2
  return u;
}

TEST(Models, JacobianMatchesCentralDifferencesAtRandomPoints) {
  Rng rng(11);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name);
    for (int trial = 0; trial < 5; ++trial) {
      const Vec x = c.sample_x(rng), u = sample_u(rng, c);
      Vec f;
      const Mat j = jacobian(*c.model, x, u, &f);
      EXPECT_LE(rel_err(j, fd_jacobian(*c.model, x, u)), kTol) << "trial " << trial;
      // The f returned with the Jacobian is the f of dynamics().
      EXPECT_LE(rel_err(f, eval(*c.model, x, u)), 1e-15);
    }
  }
}

TEST(Models, JacobianCheckRejectsAPerturbedEntry) {
  Rng rng(12);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name);
    const Vec x = c.sample_x(rng), u = sample_u(rng, c);
    Mat j = jacobian(*c.model, x, u);
    const Mat fd = fd_jacobian(*c.model, x, u);
    ASSERT_LE(rel_err(j, fd), kTol);
    // A wrong entry of 1e-4 relative (a typo-sized slip, far below what a sign error gives) fails.
    j(j.rows() - 1, j.cols() - 1) += 1e-4 * std::max(1.0, fd.cwiseAbs().maxCoeff());
    EXPECT_GT(rel_err(j, fd), kTol);
  }
}

TEST(Models, DualJacobianEqualsAnalyticWhereBothExist) {
  Rng rng(13);
  auto compare = [&](const auto& model, const Vec& x, const Vec& u) {
    const int nx = model.nx(), nu = model.nu();
    auto data = model.make_data();
    Mat fx(nx, nx), fu(nx, nu), gx(nx, nx), gu(nx, nu);
    Vec f(nx), g(nx);
    model.dynamics_jacobian(*data, x.data(), u.data(), f.data(), fx.data(), fu.data());
    model.dual_jacobian(*data, x.data(), u.data(), g.data(), gx.data(), gu.data());
    Mat a(nx, nx + nu), d(nx, nx + nu);
    a << fx, fu;
    d << gx, gu;
    EXPECT_LE(rel_err(d, a), 1e-14);
    EXPECT_LE(rel_err(g, f), 1e-15);
    d(0, 0) += 1e-6;  // negative control at the same tolerance
    EXPECT_GT(rel_err(d, a), 1e-14);
  };
  mdl::DoubleIntegrator::Params di;
  di.dim = 2;
  compare(*adapt<mdl::DoubleIntegrator>(di), rng.vector(4), rng.vector(2));
  compare(*adapt<mdl::Unicycle>(), rng.vector(3), rng.vector(2));
  compare(*adapt<mdl::Car>(), rng.vector(4), rng.vector(2));
  LinearFixture lin(rng, 5, 3, false, true);
  compare(*lin.model, rng.vector(5), rng.vector(3));
}

// dynamics_chain: K = fx S + [0 | fu] for a dense seed S, against the product with the model's own
// Jacobian. Covers one partial sweep (pendulum, nx + nu = 3 < 4), a partial wide sweep (cartpole,
// 5 of 8; chain_of_masses_3, 8 + 4) and several full ones (chain_of_masses_5, 3 x 8). Models with an
// analytic Jacobian decline, leaving the product to the integrator.
TEST(Models, ChainRuleThroughTheModelEqualsJacobianTimesSeed) {
  Rng rng(15);
  int seeded = 0;
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name);
    const Model& model = *c.model;
    const int nx = model.nx(), nu = model.nu();
    auto data = model.make_data();
    for (int trial = 0; trial < 3; ++trial) {
      const Vec x = c.sample_x(rng), u = sample_u(rng, c);
      const Mat S = rng.matrix(nx, nx + nu);
      Mat K = Mat::Constant(nx, nx + nu, test::kNaN);
      Vec f = Vec::Constant(nx, test::kNaN);
      if (!model.dynamics_chain(*data, x.data(), u.data(), S.data(), f.data(), K.data())) break;
      if (trial == 0) ++seeded;
      const Mat j = jacobian(model, x, u);
      Mat ref = j.leftCols(nx) * S;
      ref.rightCols(nu) += j.rightCols(nu);
      EXPECT_LE(rel_err(K, ref), 1e-13) << "trial " << trial;
      EXPECT_EQ(f, eval(model, x, u));
      // The same data then gives the plain Jacobian again (no seed left behind).
      EXPECT_EQ(jacobian(model, x, u), j);
      K(nx - 1, 0) += 1e-9 * std::max(1.0, ref.cwiseAbs().maxCoeff());  // negative control
      EXPECT_GT(rel_err(K, ref), 1e-13);
    }
  }
  EXPECT_EQ(seeded, 7);  // the dual-differentiated ones: 2 pendulums, cartpole, acrobot, quadrotor, 2 chains
}

// --- float, conventions, allocation ------------------------------------------------------------------

// Every model instantiates for S = float (the GPU's single-precision path) and agrees with double
// to single precision; Dual<float> compiles as well.
template <class M>
void check_float(const M& m, const Vec& x, const Vec& u) {
  const int nx = m.nx(), nu = m.nu();
  std::vector<float> xf(x.data(), x.data() + nx), uf(u.data(), u.data() + nu), ff(nx);
  std::vector<double> fd(nx);
  m.template dynamics<float>(xf.data(), uf.data(), ff.data());
  m.template dynamics<double>(x.data(), u.data(), fd.data());
  // Inputs rounded to float: compare with double evaluated at the same rounded inputs.
  Vec xr = x.cast<float>().cast<double>(), ur = u.cast<float>().cast<double>();
  m.template dynamics<double>(xr.data(), ur.data(), fd.data());
  Vec a(nx), b(nx);
  for (int i = 0; i < nx; ++i) {
    a[i] = ff[i];
    b[i] = fd[i];
  }
  EXPECT_LE(rel_err(a, b), 1e-4) << M::kType;
  std::vector<Dual<float>> xd(nx), ud(nu), fdual(nx);
  for (int i = 0; i < nx; ++i) xd[i] = {xf[i], 0.0f};
  for (int i = 0; i < nu; ++i) ud[i] = {uf[i], 0.0f};
  m.template dynamics<Dual<float>>(xd.data(), ud.data(), fdual.data());
  for (int i = 0; i < nx; ++i) EXPECT_EQ(fdual[i].v, ff[i]) << M::kType;
}

TEST(Models, CompileAndAgreeForFloat) {
  Rng rng(14);
  check_float(mdl::DoubleIntegrator{}, rng.vector(2), rng.vector(1));
  check_float(mdl::Pendulum{}, rng.vector(2), rng.vector(1));
  check_float(mdl::Cartpole{}, rng.vector(4), rng.vector(1));
  check_float(mdl::Acrobot{}, rng.vector(4), rng.vector(1));
  check_float(mdl::Quadrotor{}, rng.vector(12), rng.vector(4));
  check_float(mdl::Unicycle{}, rng.vector(3), rng.vector(2));
  check_float(mdl::Car{}, rng.vector(4), rng.vector(2));
  check_float(mdl::ChainOfMasses{}, rng.vector(21), rng.vector(3));
  LinearFixture lin(rng, 3, 2, false, true);
  check_float(lin.model->model(), rng.vector(3), rng.vector(2));
}

TEST(Models, DimensionsNamesAndCapabilities) {
  struct Expect {
    const char* name;
    std::string_view type;
    int nx, nu, nq;
    bool planar;
  };
  const Expect expect[] = {
      {"double_integrator_1", "double_integrator", 2, 1, 1, false},
      {"double_integrator_3", "double_integrator", 6, 3, 3, false},
      {"pendulum", "pendulum", 2, 1, 1, false},
      {"cartpole", "cartpole", 4, 1, 2, false},
      {"acrobot", "acrobot", 4, 1, 2, false},
      {"quadrotor", "quadrotor", 12, 4, 6, false},
      {"unicycle", "unicycle", 3, 2, 0, true},
      {"car", "car", 4, 2, 0, true},
      {"chain_of_masses_5", "chain_of_masses", 21, 3, 0, false},
      {"chain_of_masses_3", "chain_of_masses", 9, 3, 0, false},
      {"linear_continuous", "linear", 4, 2, 0, false},
  };
  const auto cases = all_cases();
  for (const Expect& e : expect) {
    SCOPED_TRACE(e.name);
    const auto it = std::find_if(cases.begin(), cases.end(), [&](const Case& c) { return c.name == e.name; });
    ASSERT_NE(it, cases.end());
    const Model& m = *it->model;
    EXPECT_EQ(m.type(), e.type);
    EXPECT_EQ(m.nx(), e.nx);
    EXPECT_EQ(m.nu(), e.nu);
    EXPECT_EQ(m.nq(), e.nq);
    EXPECT_EQ(int(m.state_names().size()), e.nx);
    EXPECT_EQ(int(m.control_names().size()), e.nu);
    EXPECT_EQ(m.planar_position().has_value(), e.planar);
    if (e.planar) {
      EXPECT_EQ(*m.planar_position(), (std::array<int, 2>{0, 1}));
    }
    EXPECT_FALSE(m.discrete_time());
  }
  EXPECT_EQ(adapt<mdl::Cartpole>()->state_names(), (std::vector<std::string>{"p", "theta", "v", "omega"}));
  EXPECT_EQ(adapt<mdl::ChainOfMasses>()->state_names()[18], "v4_x");
}

TEST(Models, DataFromAnotherModelIsRefused) {
  const auto chain = adapt<mdl::ChainOfMasses>();
  mdl::ChainOfMasses::Params small;
  small.masses = 3;
  const auto other = adapt<mdl::ChainOfMasses>(small);
  auto wrong_size = other->make_data();
  auto wrong_type = adapt<mdl::Pendulum>()->make_data();
  std::vector<double> x(21, 0.5), u(3, 0.0), f(21), fx(21 * 21), fu(21 * 3);
  EXPECT_THROW(chain->dynamics_jacobian(*wrong_size, x.data(), u.data(), f.data(), fx.data(), fu.data()),
               std::logic_error);
  EXPECT_THROW(chain->dynamics_jacobian(*wrong_type, x.data(), u.data(), f.data(), fx.data(), fu.data()),
               std::logic_error);
  auto right = chain->make_data();
  EXPECT_NO_THROW(chain->dynamics_jacobian(*right, x.data(), u.data(), f.data(), fx.data(), fu.data()));
}

TEST(Models, EvaluationAllocatesNothing) {
  Rng rng(15);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name);
    const int nx = c.model->nx(), nu = c.model->nu();
    auto data = c.model->make_data();
    const Vec x = c.sample_x(rng), u = sample_u(rng, c);
    Vec f(nx);
    Mat fx(nx, nx), fu(nx, nu), S = Mat::Identity(nx, nx + nu), K(nx, nx + nu);
    g_allocations = 0;
    g_counting = true;
    c.model->dynamics(*data, x.data(), u.data(), f.data());
    c.model->dynamics_jacobian(*data, x.data(), u.data(), f.data(), fx.data(), fu.data());
    c.model->dynamics_chain(*data, x.data(), u.data(), S.data(), f.data(), K.data());
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0);
  }
  // The counter works: a vector's growth is seen.
  g_allocations = 0;
  g_counting = true;
  std::vector<double> grow(100);
  g_counting = false;
  EXPECT_GT(g_allocations.load(), 0);
}

// --- double integrator, linear -----------------------------------------------------------------------

TEST(DoubleIntegrator, IsPositionVelocityAcceleration) {
  mdl::DoubleIntegrator::Params p;
  p.dim = 2;
  const Vec x = (Vec(4) << 1, 2, 3, 4).finished(), u = (Vec(2) << 5, 6).finished();
  EXPECT_EQ(eval(*adapt<mdl::DoubleIntegrator>(p), x, u), (Vec(4) << 3, 4, 5, 6).finished());
}

TEST(Linear, EqualsAxPlusBuPlusCAndReportsDiscreteTime) {
  Rng rng(16);
  for (bool discrete : {false, true}) {
    LinearFixture lin(rng, 5, 2, discrete, true);
    const Vec x = rng.vector(5), u = rng.vector(2);
    const Vec ref = lin.A * x + lin.B * u + lin.c;
    EXPECT_LE(rel_err(eval(*lin.model, x, u), ref), 1e-15);
    EXPECT_EQ(lin.model->discrete_time(), discrete);
    Mat j = jacobian(*lin.model, x, u);
    EXPECT_EQ(Mat(j.leftCols(5)), lin.A);
    EXPECT_EQ(Mat(j.rightCols(2)), lin.B);
    // Negative control: the same comparison catches a dropped offset.
    EXPECT_GT(rel_err(eval(*lin.model, x, u), Vec(lin.A * x + lin.B * u)), 1e-3);
  }
  LinearFixture no_c(rng, 3, 1, false, false);
  const Vec x = rng.vector(3), u = rng.vector(1);
  EXPECT_LE(rel_err(eval(*no_c.model, x, u), Vec(no_c.A * x + no_c.B * u)), 1e-15);
}

// --- pendulum ------------------------------------------------------------------------------------------

double pendulum_energy(const mdl::Pendulum::Params& p, const Vec& x) {
  return 0.5 * p.mass * p.length * p.length * x[1] * x[1] - p.mass * p.gravity * p.length * std::cos(x[0]);
}

TEST(Pendulum, EquilibriaHangingAndUpright) {
  const auto m = adapt<mdl::Pendulum>();
  const Vec u0 = Vec::Zero(1);
  EXPECT_EQ(eval(*m, Vec::Zero(2), u0), Vec::Zero(2));
  EXPECT_LE(eval(*m, (Vec(2) << kPi, 0).finished(), u0).norm(), 1e-14);
  // Negative control: off the equilibrium gravity pulls back towards theta = 0.
  EXPECT_LT(eval(*m, (Vec(2) << 0.1, 0).finished(), u0)[1], -0.9);
  // Holding the pendulum horizontal takes tau = m g l.
  EXPECT_LE(std::abs(eval(*m, (Vec(2) << kPi / 2, 0).finished(), (Vec(1) << 9.81).finished())[1]), 1e-14);
}

TEST(Pendulum, PowerBalanceDEdtEqualsTorqueMinusDampingTimesRate) {
  Rng rng(17);
  for (double damping : {0.0, 0.4}) {
    mdl::Pendulum::Params p;
    p.mass = 1.3;
    p.length = 0.7;
    p.damping = damping;
    const auto m = adapt<mdl::Pendulum>(p);
    for (int trial = 0; trial < 5; ++trial) {
      const Vec x = 3 * rng.vector(2);
      for (double tau : {0.0, 1.7}) {
        const Vec f = eval(*m, x, (Vec(1) << tau).finished());
        const double dEdt = fd_gradient([&](const Vec& y) { return pendulum_energy(p, y); }, x).dot(f);
        const double expected = x[1] * (tau - damping * x[1]);
        EXPECT_NEAR(dEdt, expected, 1e-8 * (1 + std::abs(f.norm())));
        if (damping > 0 && tau == 0) {
          EXPECT_LT(dEdt, -1e-3 * x[1] * x[1]);  // the check sees dissipation
        }
      }
    }
  }
}

// --- cartpole ------------------------------------------------------------------------------------------

// Reference from the Lagrangian with the bob at (p - l sin(theta), l cos(theta)):
//   [M + m, -m l cos; -m l cos, m l^2] [v'; omega'] = [F - m l sin omega^2; m g l sin].
Vec cartpole_reference(const mdl::Cartpole::Params& p, const Vec& x, double F) {
  const double M = p.cart_mass, m = p.pole_mass, l = p.length, g = p.gravity;
  const double s = std::sin(x[1]), c = std::cos(x[1]);
  Eigen::Matrix2d mass;
  mass << M + m, -m * l * c, -m * l * c, m * l * l;
  const Eigen::Vector2d rhs(F - m * l * s * x[3] * x[3], m * g * l * s);
  const Eigen::Vector2d acc = mass.ldlt().solve(rhs);
  return (Vec(4) << x[2], x[3], acc[0], acc[1]).finished();
}

double cartpole_energy(const mdl::Cartpole::Params& p, const Vec& x) {
  const double M = p.cart_mass, m = p.pole_mass, l = p.length;
  const double c = std::cos(x[1]), v = x[2], w = x[3];
  return 0.5 * (M + m) * v * v - m * l * c * v * w + 0.5 * m * l * l * w * w + m * p.gravity * l * c;
}

TEST(Cartpole, MatchesLagrangianReferenceAndPowerBalance) {
  Rng rng(18);
  mdl::Cartpole::Params p;
  const auto model = adapt<mdl::Cartpole>(p);
  for (int trial = 0; trial < 8; ++trial) {
    const Vec x = 3 * rng.vector(4);
    const double F = 5 * rng.uniform();
    const Vec f = eval(*model, x, (Vec(1) << F).finished());
    EXPECT_LE(rel_err(f, cartpole_reference(p, x, F)), 1e-13);
    // dE/dt = F v: the force is the only power input.
    const double dEdt = fd_gradient([&](const Vec& y) { return cartpole_energy(p, y); }, x).dot(f);
    EXPECT_NEAR(dEdt, F * x[2], 1e-8 * (1 + f.norm()));
  }
  // Negative control: the reference distinguishes the opposite bob side (theta -> -theta).
  const Vec x = (Vec(4) << 0, 0.4, 0, 0).finished();
  const Vec flipped = (Vec(4) << 0, -0.4, 0, 0).finished();
  EXPECT_GT(rel_err(eval(*model, x, Vec::Zero(1)), cartpole_reference(p, flipped, 0)), 1e-2);
}

TEST(Cartpole, UprightAndHangingAreEquilibria) {
  const auto m = adapt<mdl::Cartpole>();
  EXPECT_EQ(eval(*m, (Vec(4) << 0.7, 0, 0, 0).finished(), Vec::Zero(1)), Vec::Zero(4));
  EXPECT_LE(eval(*m, (Vec(4) << -0.3, kPi, 0, 0).finished(), Vec::Zero(1)).norm(), 1e-14);
  // Upright is unstable: a small tilt grows (omega' has the sign of theta).
  EXPECT_GT(eval(*m, (Vec(4) << 0, 0.05, 0, 0).finished(), Vec::Zero(1))[3], 0.5);
}

TEST(Cartpole, MirrorSymmetry) {
  Rng rng(19);
  const auto m = adapt<mdl::Cartpole>();
  for (int trial = 0; trial < 5; ++trial) {
    const Vec x = 3 * rng.vector(4), u = 5 * rng.vector(1);
    // (p, theta, v, omega, F) -> -(...) maps f to -f.
    EXPECT_LE(rel_err(eval(*m, Vec(-x), Vec(-u)), Vec(-eval(*m, x, u))), 1e-15);
    // Negative control: mirroring the state but not the force breaks it.
    EXPECT_GT(rel_err(eval(*m, Vec(-x), u), Vec(-eval(*m, x, u))), 1e-3);
  }
}

// --- acrobot -------------------------------------------------------------------------------------------

// Energy from the links' centre-of-mass velocities (not from the model's mass matrix): link 1's
// centre at lc1 (sin q1, -cos q1), link 2's at l1 (sin q1, -cos q1) + lc2 (sin q12, -cos q12).
double acrobot_energy(const mdl::Acrobot::Params& p, const Vec& x) {
  const double q1 = x[0], q12 = x[0] + x[1], w1 = x[2], w12 = x[2] + x[3];
  const Eigen::Vector2d v1 = p.lc1 * w1 * Eigen::Vector2d(std::cos(q1), std::sin(q1));
  const Eigen::Vector2d v2 = p.l1 * w1 * Eigen::Vector2d(std::cos(q1), std::sin(q1)) +
                             p.lc2 * w12 * Eigen::Vector2d(std::cos(q12), std::sin(q12));
  const double kinetic =
      0.5 * (p.m1 * v1.squaredNorm() + p.Ic1 * w1 * w1 + p.m2 * v2.squaredNorm() + p.Ic2 * w12 * w12);
  const double height1 = -p.lc1 * std::cos(q1), height2 = -p.l1 * std::cos(q1) - p.lc2 * std::cos(q12);
  return kinetic + p.gravity * (p.m1 * height1 + p.m2 * height2);
}

TEST(Acrobot, PowerBalanceWithAndWithoutDamping) {
  Rng rng(20);
  for (double b : {0.0, 0.1}) {
    mdl::Acrobot::Params p;
    p.b1 = b;
    p.b2 = b;
    const auto m = adapt<mdl::Acrobot>(p);
    for (int trial = 0; trial < 6; ++trial) {
      const Vec x = 3 * rng.vector(4);
      for (double tau : {0.0, 2.5}) {
        const Vec f = eval(*m, x, (Vec(1) << tau).finished());
        const double dEdt = fd_gradient([&](const Vec& y) { return acrobot_energy(p, y); }, x).dot(f);
        // Frictionless and unforced, energy is conserved; otherwise dE/dt = tau qd2 - b1 qd1^2 - b2 qd2^2.
        const double expected = tau * x[3] - b * (x[2] * x[2] + x[3] * x[3]);
        EXPECT_NEAR(dEdt, expected, 1e-7 * (1 + f.norm()));
      }
    }
  }
  // Negative control: the balance notices a wrong link inertia.
  mdl::Acrobot::Params p, wrong;
  p.b1 = p.b2 = 0;
  wrong = p;
  wrong.Ic2 *= 1.1;
  const Vec x = (Vec(4) << 0.3, -0.8, 1.5, -2.0).finished();
  const Vec f = eval(*adapt<mdl::Acrobot>(wrong), x, Vec::Zero(1));
  EXPECT_GT(std::abs(fd_gradient([&](const Vec& y) { return acrobot_energy(p, y); }, x).dot(f)), 1e-3);
}

TEST(Acrobot, HangingAndUprightAreEquilibria) {
  const auto m = adapt<mdl::Acrobot>();
  EXPECT_EQ(eval(*m, Vec::Zero(4), Vec::Zero(1)), Vec::Zero(4));
  EXPECT_LE(eval(*m, (Vec(4) << kPi, 0, 0, 0).finished(), Vec::Zero(1)).norm(), 1e-13);
  // Negative control: a bent elbow is not at rest.
  EXPECT_GT(eval(*m, (Vec(4) << 0, 0.3, 0, 0).finished(), Vec::Zero(1)).norm(), 0.1);
}

// --- quadrotor -----------------------------------------------------------------------------------------

Eigen::Matrix3d rotation(double roll, double pitch, double yaw) {
  return (Eigen::AngleAxisd(yaw, Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(pitch, Eigen::Vector3d::UnitY()) *
          Eigen::AngleAxisd(roll, Eigen::Vector3d::UnitX()))
      .toRotationMatrix();
}

Eigen::Matrix3d skew(const Eigen::Vector3d& w) {
  Eigen::Matrix3d s;
  s << 0, -w.z(), w.y(), w.z(), 0, -w.x(), -w.y(), w.x(), 0;
  return s;
}

TEST(Quadrotor, HoverThrustHoldsStill) {
  const mdl::Quadrotor::Params p;
  const auto m = adapt<mdl::Quadrotor>(p);
  Vec x = Vec::Zero(12);
  x.head<3>() << 1, -2, 3;
  x[5] = 0.8;  // any yaw
  const Vec hover = Vec::Constant(4, p.mass * p.gravity / 4);
  EXPECT_LE(eval(*m, x, hover).norm(), 1e-15);
  // Negative control: 1% more thrust climbs at 1% of g.
  const Vec f = eval(*m, x, Vec(1.01 * hover));
  EXPECT_NEAR(f[8], 0.01 * p.gravity, 1e-12);
}

TEST(Quadrotor, TranslationalAccelerationIsRotatedThrust) {
  Rng rng(21);
  const mdl::Quadrotor::Params p;
  const auto m = adapt<mdl::Quadrotor>(p);
  for (int trial = 0; trial < 5; ++trial) {
    const Vec x = rng.vector(12), u = rng.vector(4).cwiseAbs();
    const Eigen::Vector3d ref =
        rotation(x[3], x[4], x[5]) * Eigen::Vector3d(0, 0, u.sum() / p.mass) - Eigen::Vector3d(0, 0, p.gravity);
    EXPECT_LE(rel_err(Vec(eval(*m, x, u).segment<3>(6)), Vec(ref)), 1e-14);
  }
}

TEST(Quadrotor, EulerRatesReproduceBodyRates) {
  // R(euler(t))' = R [omega]x: finite differences of the rotation along euler' give the body rates.
  Rng rng(22);
  const auto m = adapt<mdl::Quadrotor>();
  for (int trial = 0; trial < 5; ++trial) {
    Vec x = rng.vector(12);
    const Vec f = eval(*m, x, Vec::Zero(4));
    const double h = 1e-6;
    const Vec e = x.segment<3>(3), de = f.segment<3>(3);
    const Eigen::Matrix3d dR = (rotation(e[0] + h * de[0], e[1] + h * de[1], e[2] + h * de[2]) -
                                rotation(e[0] - h * de[0], e[1] - h * de[1], e[2] - h * de[2])) /
                               (2 * h);
    const Eigen::Matrix3d ref = rotation(e[0], e[1], e[2]) * skew(x.segment<3>(9));
    EXPECT_LE(rel_err(Mat(dR), Mat(ref)), 1e-8);
    // Negative control: world-frame rates (omega in place of body rates) do not match.
    const Eigen::Matrix3d world = skew(x.segment<3>(9)) * rotation(e[0], e[1], e[2]);
    EXPECT_GT(rel_err(Mat(dR), Mat(world)), 1e-3);
  }
}

TEST(Quadrotor, TorqueFreeSpinKeepsRotationalEnergyAndRotorTorquesHaveTheirSigns) {
  Rng rng(23);
  const mdl::Quadrotor::Params p;
  const auto m = adapt<mdl::Quadrotor>(p);
  const Eigen::Vector3d J(p.inertia[0], p.inertia[1], p.inertia[2]);
  const Vec equal = Vec::Constant(4, 2.0);  // equal thrusts: no torque
  for (int trial = 0; trial < 5; ++trial) {
    Vec x = rng.vector(12);
    const Vec f = eval(*m, x, equal);
    const Eigen::Vector3d w = x.segment<3>(9), dw = f.segment<3>(9);
    // d/dt (1/2 w' J w) = w' J w' = w' tau, since w' (w x J w) = 0: zero without torque.
    EXPECT_NEAR(w.dot(J.asDiagonal() * dw), 0.0, 1e-14 * (J.asDiagonal() * w).norm() * dw.norm() + 1e-15);
    // With 0.5 N more on rotor 1 the torque is [L, 0, -kM] * 0.5 and the energy changes by w' tau
    // (the same balance is nonzero here, so it is not trivially met).
    Vec u = equal;
    u[1] += 0.5;
    const Eigen::Vector3d tau(p.arm_length * 0.5, 0, -p.kM * 0.5);
    ASSERT_GT(std::abs(w.dot(tau)), 1e-4);
    EXPECT_NEAR(w.dot(J.asDiagonal() * eval(*m, x, u).segment<3>(9)), w.dot(tau), 1e-14);
  }
  // Rotor 1 (+y arm) rolls positive, rotor 0 (+x arm) pitches negative, rotors 0 and 2 yaw positive.
  const Vec x0 = Vec::Zero(12);
  auto rate = [&](int rotor) {
    Vec u = Vec::Zero(4);
    u[rotor] = 1.0;
    return Eigen::Vector3d(eval(*m, x0, u).segment<3>(9));
  };
  EXPECT_GT(rate(1)[0], 0);
  EXPECT_LT(rate(3)[0], 0);
  EXPECT_LT(rate(0)[1], 0);
  EXPECT_GT(rate(2)[1], 0);
  EXPECT_GT(rate(0)[2], 0);
  EXPECT_LT(rate(1)[2], 0);
}

// --- unicycle, car -------------------------------------------------------------------------------------

TEST(Unicycle, MovesAlongItsHeading) {
  const auto m = adapt<mdl::Unicycle>();
  const Vec f = eval(*m, (Vec(3) << 1, 2, kPi / 2).finished(), (Vec(2) << 3, -0.5).finished());
  EXPECT_LE(rel_err(f, (Vec(3) << 0, 3, -0.5).finished()), 1e-15);
}

TEST(Car, TurnsOnTheBicycleCircle) {
  // Steady turning: speed / yaw rate is the radius wheelbase / tan(delta) of the rear axle's circle.
  mdl::Car::Params p;
  const auto m = adapt<mdl::Car>(p);
  const double v = 4.0, delta = 0.3;
  const Vec f = eval(*m, (Vec(4) << 0, 0, 0.2, v).finished(), (Vec(2) << 1.5, delta).finished());
  EXPECT_NEAR(v / f[2], p.wheelbase / std::tan(delta), 1e-12);
  EXPECT_NEAR(f.head<2>().norm(), v, 1e-14);
  EXPECT_NEAR(std::atan2(f[1], f[0]), 0.2, 1e-14);
  EXPECT_EQ(f[3], 1.5);
}

// --- chain of masses -----------------------------------------------------------------------------------

TEST(ChainOfMasses, RelaxedSpringsLeaveOnlyGravity) {
  // Masses on a straight line at rest length: no spring force, so each free mass falls at g.
  mdl::ChainOfMasses::Params p;
  const auto m = adapt<mdl::ChainOfMasses>(p);
  Vec x = Vec::Zero(21);
  const Eigen::Vector3d dir = Eigen::Vector3d(1, 2, -2) / 3.0;
  for (int k = 0; k < 4; ++k) x.segment<3>(3 * k) = (k + 1) * p.rest_length * dir;
  x.segment<3>(12) << 0.1, 0.2, 0.3;  // velocities pass through to the positions' derivatives
  const Vec u = (Vec(3) << -1, 0.5, 2).finished();
  const Vec f = eval(*m, x, u);
  EXPECT_LE(rel_err(Vec(f.head(12)), (Vec(12) << x.segment<9>(12), u).finished()), 1e-15);
  for (int k = 0; k < 3; ++k)
    EXPECT_LE(rel_err(Vec(f.segment<3>(12 + 3 * k)), Vec(Eigen::Vector3d(0, 0, -p.gravity))), 1e-12) << k;
  // Negative control: stretching the first spring pulls mass 2 back towards the anchor.
  // Negative control: moving mass 2 along the line stretches spring 2-1 and compresses spring 3-2;
  // both push it back towards the anchor, on top of gravity.
  x.segment<3>(0) = 1.5 * p.rest_length * dir;
  const Vec g = eval(*m, x, u);
  EXPECT_LT((Eigen::Vector3d(g.segment<3>(12)) + Eigen::Vector3d(0, 0, p.gravity)).dot(dir), -0.5);
}

TEST(ChainOfMasses, HangingRestStateIsSymmetricAndStill) {
  // Find the static shape of a 5-mass chain hung between the origin and (0.2, 0, 0) by Newton on the
  // free masses' accelerations (Jacobian from the model), then check physics it did not impose.
  mdl::ChainOfMasses::Params p;
  const auto m = adapt<mdl::ChainOfMasses>(p);
  const int nx = m->nx(), n_free = 3 * (p.masses - 2);
  Vec x = Vec::Zero(nx), u = Vec::Zero(3);
  for (int k = 0; k < p.masses - 1; ++k) {
    const double s = (k + 1.0) / (p.masses - 1);
    x.segment<3>(3 * k) << 0.2 * s, 0, -0.5 * s * (1 - s);
  }
  Vec f;
  for (int it = 0; it < 50; ++it) {
    const Mat j = jacobian(*m, x, u, &f);
    const Vec r = f.tail(n_free);  // accelerations of masses 2..M-1
    if (r.norm() < 1e-12) break;
    const Vec step = j.block(12, 0, n_free, n_free).fullPivLu().solve(-r);
    double t = 1.0;
    for (; t > 1e-4; t /= 2) {
      Vec trial = x;
      trial.head(n_free) += t * step;
      if (eval(*m, trial, u).tail(n_free).norm() < r.norm()) break;
    }
    x.head(n_free) += t * step;
  }
  f = eval(*m, x, u);
  EXPECT_LE(f.norm(), 1e-10);
  // Mirror symmetry about x = 0.1: masses 2 and 4 mirror each other, mass 3 sits in the middle.
  EXPECT_NEAR(x[0] + x[6], 0.2, 1e-9);
  EXPECT_NEAR(x[2], x[8], 1e-9);
  EXPECT_NEAR(x[3], 0.1, 1e-9);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(x[3 * k + 1], 0.0, 1e-12);
  // It hangs: every free mass below the anchors, the middle one lowest.
  EXPECT_LT(x[5], x[2]);
  EXPECT_LT(x[2], 0.0);
  // Vertical balance: the two end springs carry the weight of the three free masses.
  auto spring = [&](const Eigen::Vector3d& d) { return p.stiffness * (1 - p.rest_length / d.norm()) * d; };
  const Eigen::Vector3d first = spring(x.segment<3>(0));
  const Eigen::Vector3d last = spring(x.segment<3>(9) - x.segment<3>(6));
  EXPECT_NEAR(last.z() - first.z(), 3 * p.mass * p.gravity, 1e-10);
  // Negative control: the rest state with a heavier mass is not at rest.
  mdl::ChainOfMasses::Params heavy = p;
  heavy.mass *= 1.1;
  EXPECT_GT(eval(*adapt<mdl::ChainOfMasses>(heavy), x, u).norm(), 0.1);
}

}  // namespace
}  // namespace knot::problems

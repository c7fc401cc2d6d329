// Integrators: names, exact sensitivities against central differences of step(), convergence
// orders, energy behaviour, stiff stability, statuses, discrete-time pass-through, no allocation.
#include "knot/problems/integrator.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "knot/problems/error.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/problems/models/acrobot.hpp"
#include "knot/problems/models/cartpole.hpp"
#include "knot/problems/models/chain_of_masses.hpp"
#include "knot/problems/models/manipulator.hpp"
#include "knot/problems/models/pendulum.hpp"
#include "knot/problems/robot/urdf.hpp"
#include "test_models_local.hpp"
#include "source_tree.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
static std::atomic<long> g_allocations{0};
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace knot::problems;
using knot::test::Arm2;
using knot::test::fd_jacobian;
using knot::test::LinearModel;
using knot::test::Mat;
using knot::test::Nonlinear3;
using knot::test::Pendulum;
using knot::test::rel_err;
using knot::test::Rng;
using knot::test::Vec;

constexpr std::array<IntegratorType, 5> kTypes = {IntegratorType::Euler, IntegratorType::SemiImplicitEuler,
                                                  IntegratorType::Rk4, IntegratorType::ImplicitEuler,
                                                  IntegratorType::ImplicitMidpoint};

struct Step {
  IntegratorStatus status;
  Vec x_next;
  Mat A, B;
};

// One step_jacobian() with NaN-poisoned outputs, so an unwritten entry shows.
Step step_jac(Integrator& in, const Model& m, const Vec& x, const Vec& u, double dt) {
  auto data = m.make_data();
  Step s{IntegratorStatus::Ok, Vec::Constant(m.nx(), knot::test::kNaN), Mat::Constant(m.nx(), m.nx(), knot::test::kNaN),
         Mat::Constant(m.nx(), m.nu(), knot::test::kNaN)};
  s.status = in.step_jacobian(*data, x.data(), u.data(), dt, s.x_next.data(), s.A.data(), s.B.data());
  return s;
}

Vec step(Integrator& in, const Model& m, const Vec& x, const Vec& u, double dt,
         IntegratorStatus expect = IntegratorStatus::Ok) {
  auto data = m.make_data();
  Vec y = Vec::Constant(m.nx(), knot::test::kNaN);
  EXPECT_EQ(in.step(*data, x.data(), u.data(), dt, y.data()), expect);
  return y;
}

// Central differences of step() in x and in u.
std::pair<Mat, Mat> fd_step(Integrator& in, const Model& m, const Vec& x, const Vec& u, double dt) {
  const int n = m.nx();
  const Mat A = fd_jacobian([&](const Vec& xx, Vec& out) { out = step(in, m, xx, u, dt); }, x, n);
  const Mat B = fd_jacobian([&](const Vec& uu, Vec& out) { out = step(in, m, x, uu, dt); }, u, n);
  return {A, B};
}

TEST(IntegratorNames, RoundTripAndUnknown) {
  const auto names = integrator_names();
  ASSERT_EQ(names.size(), kTypes.size());
  for (std::size_t i = 0; i < kTypes.size(); ++i) {
    EXPECT_EQ(to_string(kTypes[i]), names[i]);
    EXPECT_EQ(parse_integrator(names[i]), kTypes[i]);
  }
  EXPECT_EQ(to_string(IntegratorType::ImplicitMidpoint), "implicit_midpoint");
  EXPECT_EQ(parse_integrator("semi_implicit_euler"), IntegratorType::SemiImplicitEuler);
  EXPECT_FALSE(parse_integrator("RK4").has_value());
  EXPECT_FALSE(parse_integrator("rk45").has_value());
  EXPECT_FALSE(parse_integrator("").has_value());
  EXPECT_EQ(to_string(IntegratorStatus::Ok), "ok");
  EXPECT_EQ(to_string(IntegratorStatus::SingularNewtonMatrix), "singular_newton_matrix");
  EXPECT_EQ(to_string(IntegratorStatus::NewtonNotConverged), "newton_not_converged");
  EXPECT_EQ(to_string(IntegratorStatus::NonFinite), "non_finite");
}

TEST(Integrator, SemiImplicitEulerNeedsPositionSplit) {
  Nonlinear3 model;  // nq = 0
  try {
    Integrator in(model, IntegratorType::SemiImplicitEuler);
    FAIL() << "expected ProblemError";
  } catch (const ProblemError& e) {
    EXPECT_EQ(e.key_path(), "horizon.integrator");
    EXPECT_NE(std::string(e.what()).find("local_nonlinear3"), std::string::npos);
  }
  // The schemes that need no split accept the same model.
  for (IntegratorType t : kTypes) {
    if (t != IntegratorType::SemiImplicitEuler) {
      EXPECT_NO_THROW(Integrator(model, t));
    }
  }
}

TEST(Integrator, RejectsInvalidNewtonOptions) {
  Pendulum model;
  EXPECT_THROW(Integrator(model, IntegratorType::ImplicitEuler, IntegratorOptions{.newton_max_iter = -1}), ProblemError);
  EXPECT_THROW(Integrator(model, IntegratorType::ImplicitEuler, IntegratorOptions{.newton_tol = 0}), ProblemError);
  EXPECT_NO_THROW(Integrator(model, IntegratorType::ImplicitEuler, IntegratorOptions{.newton_max_iter = 0}));
}

// The test models' own Jacobians against central differences, so a failure below points at the
// integrator, not at the model.
TEST(Integrator, LocalModelJacobiansMatchFiniteDifferences) {
  Rng rng(11);
  const std::vector<std::shared_ptr<Model>> models = {std::make_shared<Pendulum>(), std::make_shared<Nonlinear3>(),
                                                      std::make_shared<Arm2>()};
  for (const auto& m : models) {
    auto d = m->make_data();
    const Vec x = rng.vector(m->nx()), u = rng.vector(m->nu());
    Vec f(m->nx());
    Mat fx(m->nx(), m->nx()), fu(m->nx(), m->nu());
    m->dynamics_jacobian(*d, x.data(), u.data(), f.data(), fx.data(), fu.data());
    const Mat fdx = fd_jacobian([&](const Vec& xx, Vec& o) { m->dynamics(*d, xx.data(), u.data(), o.data()); }, x,
                                m->nx());
    const Mat fdu = fd_jacobian([&](const Vec& uu, Vec& o) { m->dynamics(*d, x.data(), uu.data(), o.data()); }, u,
                                m->nx());
    EXPECT_LE(rel_err(fx, fdx), 1e-6) << m->type();
    EXPECT_LE(rel_err(fu, fdu), 1e-6) << m->type();
  }
}

// A, B of every scheme against central differences of its own step(), at random points of four
// models (a stiff one included). dt = 0.05 is large enough that the schemes' maps differ visibly.
TEST(Integrator, SensitivitiesMatchFiniteDifferences) {
  Rng rng(12);
  Mat As(2, 2), Bs(2, 1);
  As << -1000, 0, 1, -1;
  Bs << 1, 0.5;
  const std::vector<std::shared_ptr<Model>> models = {std::make_shared<Pendulum>(), std::make_shared<Nonlinear3>(),
                                                      std::make_shared<Arm2>(),
                                                      std::make_shared<LinearModel>(As, Bs)};
  const double dt = 0.05;
  for (IntegratorType t : kTypes)
    for (const auto& m : models) {
      if (t == IntegratorType::SemiImplicitEuler && m->nq() == 0) continue;
      Integrator in(*m, t);
      for (int trial = 0; trial < 4; ++trial) {
        const Vec x = rng.vector(m->nx()), u = rng.vector(m->nu());
        const Step s = step_jac(in, *m, x, u, dt);
        ASSERT_EQ(s.status, IntegratorStatus::Ok) << to_string(t) << " " << m->type();
        EXPECT_EQ(s.x_next, step(in, *m, x, u, dt)) << to_string(t) << " " << m->type();
        const auto [A, B] = fd_step(in, *m, x, u, dt);
        EXPECT_LE(rel_err(s.A, A), 1e-6) << to_string(t) << " " << m->type();
        EXPECT_LE(rel_err(s.B, B), 1e-6) << to_string(t) << " " << m->type();
      }
    }
}

// RK4 through a dual model's dynamics_chain (the stage seeds inside the model evaluation) against
// the same step with the chain rule as products of the model's Jacobians (a wrapper that declines
// dynamics_chain), and both against central differences.
class ProductChain final : public Model {
 public:
  explicit ProductChain(std::shared_ptr<const Model> m) : m_(std::move(m)) {}
  std::string_view type() const override { return m_->type(); }
  int nx() const override { return m_->nx(); }
  int nu() const override { return m_->nu(); }
  std::unique_ptr<ModelData> make_data() const override { return m_->make_data(); }
  void dynamics(ModelData& d, const double* x, const double* u, double* f) const override { m_->dynamics(d, x, u, f); }
  void dynamics_jacobian(ModelData& d, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    m_->dynamics_jacobian(d, x, u, f, fx, fu);
  }

 private:
  std::shared_ptr<const Model> m_;
};

template <class M>
std::shared_ptr<const Model> adapted(typename M::Params p = {}) {
  M m;
  m.params = p;
  return std::make_shared<ModelAdapter<M>>(m);
}

TEST(Integrator, Rk4ChainRuleInsideTheModelEqualsTheProducts) {
  Rng rng(17);
  knot::problems::models::ChainOfMasses::Params chain3;
  chain3.masses = 3;
  const std::vector<std::shared_ptr<const Model>> models = {
      adapted<knot::problems::models::Pendulum>(), adapted<knot::problems::models::Cartpole>(),
      adapted<knot::problems::models::Acrobot>(), adapted<knot::problems::models::ChainOfMasses>(chain3),
      adapted<knot::problems::models::ChainOfMasses>()};
  const double dt = 0.05;
  for (const auto& m : models) {
    SCOPED_TRACE(std::string(m->type()) + " nx " + std::to_string(m->nx()));
    const ProductChain products(m);
    Integrator in(*m, IntegratorType::Rk4), ref(products, IntegratorType::Rk4);
    for (int trial = 0; trial < 3; ++trial) {
      const Vec x = 0.5 * rng.vector(m->nx()), u = rng.vector(m->nu());
      Step s = step_jac(in, *m, x, u, dt);
      const Step r = step_jac(ref, products, x, u, dt);
      ASSERT_EQ(s.status, IntegratorStatus::Ok);
      ASSERT_EQ(r.status, IntegratorStatus::Ok);
      EXPECT_EQ(s.x_next, r.x_next);
      EXPECT_LE(rel_err(s.A, r.A), 1e-13);
      EXPECT_LE(rel_err(s.B, r.B), 1e-13);
      const auto [A, B] = fd_step(in, *m, x, u, dt);
      EXPECT_LE(rel_err(s.A, A), 1e-6);
      EXPECT_LE(rel_err(s.B, B), 1e-6);
      s.A(m->nx() - 1, 0) += 1e-9 * std::max(1.0, r.A.cwiseAbs().maxCoeff());  // negative control
      EXPECT_GT(rel_err(s.A, r.A), 1e-13);
    }
  }
}

// A second-order model (Model::velocity_rows: q' = v) lets semi-implicit Euler skip its second
// evaluation and RK4 its products over the velocity rows; the iiwa14 manipulator, which declares it,
// against the same model behind a wrapper that does not (the general path), and against central
// differences.
class GeneralPath final : public Model {
 public:
  explicit GeneralPath(const Model& m) : m_(m) {}
  std::string_view type() const override { return m_.type(); }
  int nx() const override { return m_.nx(); }
  int nu() const override { return m_.nu(); }
  int nq() const override { return m_.nq(); }
  std::unique_ptr<ModelData> make_data() const override { return m_.make_data(); }
  void dynamics(ModelData& d, const double* x, const double* u, double* f) const override { m_.dynamics(d, x, u, f); }
  void dynamics_jacobian(ModelData& d, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    m_.dynamics_jacobian(d, x, u, f, fx, fu);
  }

 private:
  const Model& m_;
};

TEST(Integrator, VelocityRowsShortcutsEqualTheGeneralPath) {
  const Manipulator arm(robot::load_urdf(std::string(knot::source_tree::configs_dir()) + "/robots/iiwa14_iiwa_grid.urdf"));
  ASSERT_TRUE(arm.velocity_rows());
  const GeneralPath general(arm);
  ASSERT_FALSE(general.velocity_rows());
  Rng rng(23);
  const double dt = 0.01;
  for (IntegratorType t : {IntegratorType::SemiImplicitEuler, IntegratorType::Rk4}) {
    SCOPED_TRACE(std::string(to_string(t)));
    Integrator in(arm, t), ref(general, t);
    for (int trial = 0; trial < 3; ++trial) {
      const Vec x = rng.vector(arm.nx()), u = 5.0 * rng.vector(arm.nu());
      Step s = step_jac(in, arm, x, u, dt);
      const Step r = step_jac(ref, general, x, u, dt);
      ASSERT_EQ(s.status, IntegratorStatus::Ok);
      ASSERT_EQ(r.status, IntegratorStatus::Ok);
      EXPECT_EQ(s.x_next, r.x_next);
      EXPECT_EQ(s.x_next, step(in, arm, x, u, dt));
      // The skipped products are with fx's [0 I] rows: the same numbers, summed from exact zeros.
      EXPECT_LE(rel_err(s.A, r.A), 1e-15);
      EXPECT_LE(rel_err(s.B, r.B), 1e-15);
      const auto [A, B] = fd_step(in, arm, x, u, dt);
      EXPECT_LE(rel_err(s.A, A), 1e-6);
      EXPECT_LE(rel_err(s.B, B), 1e-6);
      s.A(0, arm.nx() - 1) += 1e-9 * std::max(1.0, r.A.cwiseAbs().maxCoeff());  // negative control
      EXPECT_GT(rel_err(s.A, r.A), 1e-15);
    }
  }
}

// Negative controls: the same comparison rejects a Jacobian off by one entry, and the exact
// Jacobian of a neighbouring scheme.
TEST(Integrator, SensitivityCheckRejectsWrongJacobians) {
  Pendulum model;
  const Vec x = (Vec(2) << 0.7, -0.4).finished(), u = (Vec(1) << 0.3).finished();
  const double dt = 0.05;
  Integrator rk4(model, IntegratorType::Rk4), euler(model, IntegratorType::Euler),
      mid(model, IntegratorType::ImplicitMidpoint), ie(model, IntegratorType::ImplicitEuler);
  const auto [A, B] = fd_step(rk4, model, x, u, dt);
  Step s = step_jac(rk4, model, x, u, dt);
  ASSERT_LE(rel_err(s.A, A), 1e-6);
  s.A(1, 0) += 1e-5;
  EXPECT_GT(rel_err(s.A, A), 1e-6);
  s.B(0, 0) += 1e-5;
  EXPECT_GT(rel_err(s.B, B), 1e-6);
  EXPECT_GT(rel_err(step_jac(euler, model, x, u, dt).A, A), 1e-6);
  const auto [Am, Bm] = fd_step(mid, model, x, u, dt);
  EXPECT_GT(rel_err(step_jac(ie, model, x, u, dt).A, Am), 1e-6);
  EXPECT_GT(rel_err(step_jac(ie, model, x, u, dt).B, Bm), 1e-6);
}

// For a linear model the implicit schemes have closed forms: implicit Euler
// x+ = (I - dt A)^-1 (x + dt B u), implicit midpoint x+ = (I - dt/2 A)^-1 ((I + dt/2 A) x + dt B u).
TEST(Integrator, ImplicitSchemesMatchClosedFormOnLinearModel) {
  Rng rng(13);
  const Mat A = rng.matrix(3, 3) * 3, B = rng.matrix(3, 2);
  LinearModel model(A, B);
  const Vec x = rng.vector(3), u = rng.vector(2);
  const double dt = 0.2;
  const Mat I = Mat::Identity(3, 3);
  Integrator ie(model, IntegratorType::ImplicitEuler), mid(model, IntegratorType::ImplicitMidpoint);
  const Step se = step_jac(ie, model, x, u, dt), sm = step_jac(mid, model, x, u, dt);
  const auto lu_e = (I - dt * A).partialPivLu();
  const auto lu_m = (I - dt / 2 * A).partialPivLu();
  EXPECT_LE(rel_err(se.x_next, lu_e.solve(x + dt * B * u)), 1e-12);
  EXPECT_LE(rel_err(se.A, lu_e.inverse()), 1e-12);
  EXPECT_LE(rel_err(se.B, lu_e.solve(dt * B)), 1e-12);
  EXPECT_LE(rel_err(sm.x_next, lu_m.solve((I + dt / 2 * A) * x + dt * B * u)), 1e-12);
  EXPECT_LE(rel_err(sm.A, lu_m.solve(I + dt / 2 * A)), 1e-12);
  EXPECT_LE(rel_err(sm.B, lu_m.solve(dt * B)), 1e-12);
  // Negative control: the midpoint's closed form is not implicit Euler's.
  EXPECT_GT(rel_err(sm.x_next, lu_e.solve(x + dt * B * u)), 1e-6);
}

// Global error at T = 1 against a fine RK4 reference (h = 1/20000, error ~ 1e-17): halving h
// divides it by 2^p. Damped, driven pendulum (smooth, nq = 1 for semi-implicit Euler).
double global_error(IntegratorType t, int steps, const Vec& reference) {
  Pendulum model;
  Integrator in(model, t);
  auto data = model.make_data();
  Vec x = (Vec(2) << 1.0, 0.5).finished();
  const Vec u = (Vec(1) << 0.3).finished();
  for (int k = 0; k < steps; ++k) EXPECT_EQ(in.step(*data, x.data(), u.data(), 1.0 / steps, x.data()), IntegratorStatus::Ok);
  // A plain loop: GCC 12 misreads Eigen's vectorized max over a 2-vector (-Warray-bounds).
  double e = 0;
  for (int i = 0; i < x.size(); ++i) e = std::max(e, std::abs(x(i) - reference(i)));
  return e;
}

TEST(Integrator, ConvergenceOrders) {
  Pendulum model;
  Integrator fine(model, IntegratorType::Rk4);
  auto data = model.make_data();
  Vec ref = (Vec(2) << 1.0, 0.5).finished();
  const Vec u = (Vec(1) << 0.3).finished();
  for (int k = 0; k < 20000; ++k) fine.step(*data, ref.data(), u.data(), 1.0 / 20000, ref.data());

  struct Expect {
    IntegratorType type;
    double order;
    int steps;  // coarsest; then 2x and 4x
  };
  const std::array<Expect, 5> cases = {Expect{IntegratorType::Euler, 1, 200},
                                       Expect{IntegratorType::SemiImplicitEuler, 1, 200},
                                       Expect{IntegratorType::Rk4, 4, 10},
                                       Expect{IntegratorType::ImplicitEuler, 1, 200},
                                       Expect{IntegratorType::ImplicitMidpoint, 2, 50}};
  for (const Expect& c : cases) {
    const double e1 = global_error(c.type, c.steps, ref), e2 = global_error(c.type, 2 * c.steps, ref),
                 e4 = global_error(c.type, 4 * c.steps, ref);
    const double p1 = std::log2(e1 / e2), p2 = std::log2(e2 / e4);
    // Within 0.1 of the order: the next order up or down is a whole unit away.
    EXPECT_NEAR(p1, c.order, 0.1) << to_string(c.type);
    EXPECT_NEAR(p2, c.order, 0.1) << to_string(c.type);
    // Negative control: the observed order is not that of a neighbouring scheme.
    EXPECT_GT(std::abs(p2 - (c.order + 1)), 0.1) << to_string(c.type);
  }
}

// The implicit midpoint rule conserves every quadratic invariant of a linear flow: the energy of
// x'' = -w^2 x stays exact up to rounding; implicit Euler and RK4 change it (negative controls).
TEST(Integrator, ImplicitMidpointConservesOscillatorEnergy) {
  const double w = 2.0;
  Mat A(2, 2), B(2, 1);
  A << 0, 1, -w * w, 0;
  B << 0, 0;
  LinearModel model(A, B, 1);
  const auto energy = [&](const Vec& x) { return 0.5 * x(1) * x(1) + 0.5 * w * w * x(0) * x(0); };
  const Vec x0 = (Vec(2) << 1.0, 0.5).finished(), u = Vec::Zero(1);
  const auto drift = [&](IntegratorType t) {
    Integrator in(model, t);
    auto data = model.make_data();
    Vec x = x0;
    for (int k = 0; k < 1000; ++k) EXPECT_EQ(in.step(*data, x.data(), u.data(), 0.1, x.data()), IntegratorStatus::Ok);
    return std::abs(energy(x) - energy(x0)) / energy(x0);
  };
  EXPECT_LE(drift(IntegratorType::ImplicitMidpoint), 1e-12);
  EXPECT_GT(drift(IntegratorType::ImplicitEuler), 1e-3);
  EXPECT_GT(drift(IntegratorType::Rk4), 1e-6);
}

// Stiff decay (eigenvalues -1000 and -1, dt = 0.01): explicit Euler's amplification 1 - 10 = -9
// makes it blow up; implicit Euler's 1 / (1 + 10) keeps it stable and decaying.
TEST(Integrator, ImplicitEulerStableOnStiffSystem) {
  Mat A(2, 2), B(2, 1);
  A << -1000, 0, 1, -1;
  B << 0, 1;
  LinearModel model(A, B);
  const Vec x0 = (Vec(2) << 1.0, 1.0).finished(), u = Vec::Zero(1);
  const auto run = [&](IntegratorType t) {
    Integrator in(model, t);
    auto data = model.make_data();
    Vec x = x0;
    for (int k = 0; k < 200; ++k) EXPECT_EQ(in.step(*data, x.data(), u.data(), 0.01, x.data()), IntegratorStatus::Ok);
    return x;
  };
  const Vec implicit = run(IntegratorType::ImplicitEuler), explicit_ = run(IntegratorType::Euler);
  EXPECT_LT(implicit.cwiseAbs().maxCoeff(), x0.cwiseAbs().maxCoeff());
  // x2 decays like e^-t (t = 2) once the fast mode is gone; implicit Euler within its O(dt) error.
  EXPECT_NEAR(implicit(1), std::exp(-2.0), 0.02);
  EXPECT_GT(explicit_.cwiseAbs().maxCoeff(), 1e100);
}

// RK4 applied to an oscillator of frequency w damps its amplitude: |R(i w dt)|^2 = 1 - (w dt)^6 / 72
// + O((w dt)^8), so the energy drifts by ~N (w dt)^6 / 72 over N steps (its O(dt^5) local error is
// a phase error, which leaves the energy alone). The pendulum (a = 9.81, theta0 = 1 rad, w ~ 3.1)
// at dt = 1e-3 over N = 1000 steps: ~1.3e-14 relative, plus rounding ~sqrt(N) eps ~ 7e-15 and the
// nonlinearity's factor of order one. The bound 1e-12 leaves a margin of ~30; a third-order
// amplitude error would exceed it, and explicit Euler at the same dt drifts by ~1e-2.
TEST(Integrator, Rk4PendulumEnergyDrift) {
  Pendulum model(9.81, 0.0, 1.0);
  const Vec x0 = (Vec(2) << 1.0, 0.0).finished(), u = Vec::Zero(1);
  const auto drift = [&](IntegratorType t) {
    Integrator in(model, t);
    auto data = model.make_data();
    Vec x = x0;
    for (int k = 0; k < 1000; ++k) in.step(*data, x.data(), u.data(), 1e-3, x.data());
    return std::abs(model.energy(x.data()) - model.energy(x0.data())) / std::abs(model.energy(x0.data()));
  };
  EXPECT_LT(drift(IntegratorType::Rk4), 1e-12);
  EXPECT_GT(drift(IntegratorType::Euler), 1e-4);
}

// dt A = I (implicit Euler) or dt/2 A = I (midpoint) makes the Newton matrix exactly zero: a
// status, not an exception; a regular dt on the same model is fine.
TEST(Integrator, SingularNewtonMatrixIsAStatus) {
  const double dt = 0.5;
  for (IntegratorType t : {IntegratorType::ImplicitEuler, IntegratorType::ImplicitMidpoint}) {
    const double theta = t == IntegratorType::ImplicitEuler ? 1.0 : 0.5;
    LinearModel model(Mat::Identity(2, 2) / (theta * dt), Mat::Ones(2, 1));
    Integrator in(model, t);
    const Vec x = (Vec(2) << 1.0, -2.0).finished(), u = Vec::Ones(1);
    EXPECT_NO_THROW({
      EXPECT_EQ(step_jac(in, model, x, u, dt).status, IntegratorStatus::SingularNewtonMatrix) << to_string(t);
      step(in, model, x, u, dt, IntegratorStatus::SingularNewtonMatrix);
    });
    EXPECT_EQ(step_jac(in, model, x, u, 0.3 * dt).status, IntegratorStatus::Ok) << to_string(t);
  }
}

TEST(Integrator, NewtonIterationLimitIsAStatus) {
  Pendulum model;
  const Vec x = (Vec(2) << 2.0, 3.0).finished(), u = Vec::Ones(1);
  for (IntegratorType t : {IntegratorType::ImplicitEuler, IntegratorType::ImplicitMidpoint}) {
    Integrator one(model, t, IntegratorOptions{.newton_max_iter = 1}), full(model, t);
    EXPECT_EQ(step_jac(one, model, x, u, 0.5).status, IntegratorStatus::NewtonNotConverged) << to_string(t);
    EXPECT_EQ(step_jac(full, model, x, u, 0.5).status, IntegratorStatus::Ok) << to_string(t);
  }
}

TEST(Integrator, NonFiniteIsAStatus) {
  Pendulum model;
  const Vec x = (Vec(2) << 0.2, 0.1).finished(), nan_u = Vec::Constant(1, knot::test::kNaN), u = Vec::Ones(1);
  for (IntegratorType t : kTypes) {
    Integrator in(model, t);
    EXPECT_EQ(step_jac(in, model, x, nan_u, 0.1).status, IntegratorStatus::NonFinite) << to_string(t);
    step(in, model, x, nan_u, 0.1, IntegratorStatus::NonFinite);
    step(in, model, x, u, std::numeric_limits<double>::infinity(), IntegratorStatus::NonFinite);
    step(in, model, x, u, 0.1, IntegratorStatus::Ok);  // negative control
  }
}

// A discrete-time model is its own step: x+ = f, A = fx, B = fu under every scheme (semi-implicit
// Euler included, though the model has no position split).
TEST(Integrator, DiscreteTimeModelsPassThrough) {
  Rng rng(14);
  const Mat A = rng.matrix(3, 3), B = rng.matrix(3, 2);
  LinearModel model(A, B, 0, true);
  const Vec x = rng.vector(3), u = rng.vector(2);
  for (IntegratorType t : kTypes) {
    Integrator in(model, t);
    const Step s = step_jac(in, model, x, u, 0.1);
    ASSERT_EQ(s.status, IntegratorStatus::Ok);
    EXPECT_LE(rel_err(s.x_next, A * x + B * u), 1e-15) << to_string(t);
    EXPECT_EQ(s.A, A) << to_string(t);
    EXPECT_EQ(s.B, B) << to_string(t);
  }
  // Negative control: the same matrices as a continuous model are integrated, not passed through.
  LinearModel continuous(A, B);
  Integrator in(continuous, IntegratorType::Euler);
  EXPECT_GT(rel_err(step_jac(in, continuous, x, u, 0.1).x_next, A * x + B * u), 1e-3);
}

TEST(Integrator, StepAllocatesNothing) {
  Arm2 model;
  auto data = model.make_data();
  const Vec x = (Vec(4) << 0.1, 0.2, 0.3, 0.4).finished(), u = (Vec(2) << 0.5, -0.5).finished();
  Vec y(4);
  Mat A(4, 4), B(4, 2);
  for (IntegratorType t : kTypes) {
    Integrator in(model, t);
    const long before = g_allocations.load();
    const IntegratorStatus s1 = in.step_jacobian(*data, x.data(), u.data(), 0.05, y.data(), A.data(), B.data());
    const IntegratorStatus s2 = in.step(*data, x.data(), u.data(), 0.05, y.data());
    const long during = g_allocations.load() - before;
    EXPECT_EQ(s1, IntegratorStatus::Ok);
    EXPECT_EQ(s2, IntegratorStatus::Ok);
    EXPECT_EQ(during, 0) << to_string(t);
  }
  // Negative control: the counter sees an allocation.
  const long before = g_allocations.load();
  auto extra = model.make_data();
  EXPECT_GT(g_allocations.load(), before);
}

}  // namespace

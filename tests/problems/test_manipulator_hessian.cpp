// The manipulator's second derivatives (models/manipulator.hpp): the integrator step's Hessian
// lambda' d2F for every explicit scheme (robot/step_hessian.hpp) and the end-effector terms'
// curvature, by forward mode over the analytic first derivatives, on the iiwa14 (a 7-joint chain)
// and on a branching tree with a prismatic joint (tests/data/torso_two_arms.urdf), each against
// central differences of the analytic gradient, with bitwise symmetry and negative controls.
//
// Tolerance from the differences' own error model: with h = eps^(1/3) max(1, |w|) their error is
// truncation (h^2 / 6 |g'''|) plus rounding (~ eps |g| / h), both unknown constants times the
// problem's scale. The same differences with step 2h err about four times as much by truncation and
// about half as much by rounding, so e = max |D(h) - D(2h)| bounds the error of D(h) to within a
// small factor; a Hessian passes when it is within 10 e of D(h). That bound is itself required to
// be tiny against the Hessian's scale (so a pass never rests on useless differences), and a copy
// with one entry moved by 1e-6 of the scale must fail it.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/dual.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/models/manipulator.hpp"
#include "knot/problems/robot/dynamics.hpp"
#include "knot/problems/stage.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace {

using namespace knot::problems;
using knot::test::bitwise_symmetric;
using knot::test::Mat;
using knot::test::Rng;
using knot::test::Vec;

const std::string kIiwa = std::string(knot::source_tree::configs_dir()) + "/robots/iiwa14_iiwa_grid.urdf";
const std::string kTree = std::string(knot::source_tree::test_data_dir()) + "/torso_two_arms.urdf";

struct Robot {
  std::string name;
  std::shared_ptr<const Model> model;
};

std::vector<Robot> robots() {
  ParamMap iiwa("model.params");
  iiwa.set("urdf", kIiwa);
  ParamMap tree("model.params");
  tree.set("urdf", kTree);
  tree.set("ee_frame", std::string("sensor"));
  return {{"iiwa14", make_manipulator(iiwa)}, {"torso_two_arms", make_manipulator(tree)}};
}

// Central differences of g(w) with steps scale * eps^(1/3) max(1, |w_j|).
template <class Grad>
Mat differences(const Grad& grad, const Vec& w, double scale) {
  const int n = static_cast<int>(w.size());
  const double base = scale * std::cbrt(std::numeric_limits<double>::epsilon());
  Mat H(n, n);
  for (int j = 0; j < n; ++j) {
    const double h = base * std::max(1.0, std::abs(w[j]));
    Vec wp = w, wm = w;
    wp[j] += h;
    wm[j] -= h;
    H.col(j) = (grad(wp) - grad(wm)) / (2 * h);
  }
  return H;
}

// The reference D(h) and the bound 10 max |D(h) - D(2h)| on its error (see the top).
struct Differenced {
  Mat H;
  double bound;
};

template <class Grad>
Differenced reference(const Grad& grad, const Vec& w) {
  Differenced r;
  r.H = differences(grad, w, 1.0);
  r.bound = 10 * (r.H - differences(grad, w, 2.0)).cwiseAbs().maxCoeff();
  return r;
}

// The check, its sanity (a bound far below the scale) and its negative control.
void expect_matches(const Mat& H, const Differenced& ref) {
  const double scale = std::max(1.0, ref.H.cwiseAbs().maxCoeff());
  ASSERT_TRUE(H.allFinite());
  EXPECT_TRUE(bitwise_symmetric(H));
  EXPECT_LE(ref.bound, 1e-7 * scale) << "the differences are too inaccurate to check against";
  EXPECT_LE((H - ref.H).cwiseAbs().maxCoeff(), ref.bound) << "scale " << scale << "\n" << H << "\n\n" << ref.H;
  Mat wrong = H;
  wrong(H.rows() - 1, 0) += 1e-6 * scale;
  wrong(0, H.rows() - 1) += 1e-6 * scale;
  EXPECT_GT((wrong - ref.H).cwiseAbs().maxCoeff(), ref.bound) << "negative control";
}

// A state inside the joint limits (the prismatic joint's are narrow), moderate velocities, and
// efforts around zero.
Vec random_point(Rng& rng, const Model& m) {
  const ModelLimits lim = m.limits();
  const int n = m.nu();
  Vec w(3 * n);
  for (int i = 0; i < n; ++i) {
    const double lo = std::max(lim.x_lower[i], -2.0), hi = std::min(lim.x_upper[i], 2.0);
    w[i] = rng.uniform(lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo));
    w[n + i] = rng.uniform();
    w[2 * n + i] = 5 * rng.uniform();
  }
  return w;
}

Mat step_hessian(const Integrator& in, const Model& m, const Vec& w, const Vec& lambda, double dt,
                 SecondOrderStatus expect = SecondOrderStatus::Ok) {
  const int nx = m.nx(), nw = nx + m.nu();
  auto data = m.make_data();
  Mat H = Mat::Constant(nw, nw, knot::test::kNaN);
  EXPECT_EQ(in.step_hessian(*data, w.data(), w.data() + nx, dt, lambda.data(), H.data()), expect);
  return H;
}

// The gradient [A' lambda; B' lambda] of lambda' F from the analytic step Jacobian.
auto step_gradient(Integrator& in, const Model& m, ModelData& data, const Vec& lambda, double dt) {
  return [&in, &m, &data, lambda, dt](const Vec& v) {
    const int nx = m.nx(), nu = m.nu();
    Vec y(nx);
    Mat A(nx, nx), B(nx, nu);
    EXPECT_EQ(in.step_jacobian(data, v.data(), v.data() + nx, dt, y.data(), A.data(), B.data()), IntegratorStatus::Ok);
    Vec g(nx + nu);
    g << A.transpose() * lambda, B.transpose() * lambda;
    return g;
  };
}

constexpr IntegratorType kExplicit[] = {IntegratorType::Euler, IntegratorType::SemiImplicitEuler, IntegratorType::Rk4};

TEST(ManipulatorStepHessian, EveryExplicitSchemeMatchesDifferencesOfTheAnalyticGradient) {
  Rng rng(41);
  const double dt = 0.02;
  for (const Robot& r : robots())
    for (IntegratorType t : kExplicit) {
      SCOPED_TRACE(r.name + " " + std::string(to_string(t)));
      const Model& m = *r.model;
      Integrator in(m, t);
      auto data = m.make_data();
      for (int trial = 0; trial < 3; ++trial) {
        const Vec w = random_point(rng, m);
        const Vec lambda = 10 * rng.vector(m.nx());
        expect_matches(step_hessian(in, m, w, lambda, dt), reference(step_gradient(in, m, *data, lambda, dt), w));
      }
    }
}

// Negative controls of another kind: the Hessian of another scheme, or with one multiplier
// dropped, is far outside the bound.
TEST(ManipulatorStepHessian, CheckRejectsAnotherSchemeOrAMissingMultiplier) {
  Rng rng(43);
  const Robot r = robots()[0];
  const Model& m = *r.model;
  const double dt = 0.02;
  Integrator rk4(m, IntegratorType::Rk4), euler(m, IntegratorType::Euler);
  auto data = m.make_data();
  const Vec w = random_point(rng, m);
  Vec lambda = 10 * rng.vector(m.nx());
  const Differenced ref = reference(step_gradient(rk4, m, *data, lambda, dt), w);
  EXPECT_GT((step_hessian(euler, m, w, lambda, dt) - ref.H).cwiseAbs().maxCoeff(), 1e3 * ref.bound);
  lambda[m.nx() - 1] = 0;
  EXPECT_GT((step_hessian(rk4, m, w, lambda, dt) - ref.H).cwiseAbs().maxCoeff(), 1e3 * ref.bound);
}

TEST(ManipulatorStepHessian, ImplicitSchemesAreUnsupportedAndLeaveHUntouched) {
  Rng rng(47);
  const Robot r = robots()[0];
  for (IntegratorType t : {IntegratorType::ImplicitEuler, IntegratorType::ImplicitMidpoint}) {
    Integrator in(*r.model, t);
    const Mat H = step_hessian(in, *r.model, random_point(rng, *r.model), rng.vector(r.model->nx()), 0.02,
                               SecondOrderStatus::Unsupported);
    EXPECT_TRUE(H.array().isNaN().all());
  }
}

TEST(ManipulatorStepHessian, NonFiniteIsAStatus) {
  Rng rng(53);
  const Robot r = robots()[0];
  for (IntegratorType t : kExplicit) {
    SCOPED_TRACE(std::string(to_string(t)));
    Integrator in(*r.model, t);
    Vec w = random_point(rng, *r.model);
    w[1] = std::numeric_limits<double>::infinity();
    step_hessian(in, *r.model, w, Vec::Ones(r.model->nx()), 0.02, SecondOrderStatus::NonFinite);
    w[1] = 0.3;
    w[r.model->nx() + 2] = std::numeric_limits<double>::quiet_NaN();  // an effort
    step_hessian(in, *r.model, w, Vec::Ones(r.model->nx()), 0.02, SecondOrderStatus::NonFinite);
  }
}

// acceleration_gradient (the Euler family's contracted row) against the plain analytic Jacobians:
// g = [dqdd/dq' mu; dqdd/dqd' mu; dqdd/dtau' mu], and a wrong mu is told apart.
TEST(ManipulatorStepHessian, AccelerationGradientIsTheContractedJacobian) {
  Rng rng(57);
  for (const Robot& rb : robots()) {
    SCOPED_TRACE(rb.name);
    const robot::RobotData& r = dynamic_cast<const Manipulator&>(*rb.model).robot().data;
    const int n = r.n;
    const Vec w = random_point(rng, *rb.model);
    const Vec mu = 10 * rng.vector(n);
    auto ws = std::make_unique<robot::Workspace<double>>();
    Vec qdd(n), g(3 * n);
    Mat dq(n, n), dqd(n, n), dtau(n, n);
    ASSERT_EQ(robot::forward_dynamics_derivatives(r, w.data(), w.data() + n, w.data() + 2 * n, qdd.data(), dq.data(),
                                                  dqd.data(), dtau.data(), n, *ws),
              0);
    Vec expect(3 * n);
    expect << dq.transpose() * mu, dqd.transpose() * mu, dtau.transpose() * mu;
    ASSERT_EQ(robot::acceleration_gradient(r, w.data(), w.data() + n, w.data() + 2 * n, mu.data(), g.data(), *ws), 0);
    const double scale = std::max(1.0, expect.cwiseAbs().maxCoeff());
    EXPECT_LE((g - expect).cwiseAbs().maxCoeff(), 1e-12 * scale) << g.transpose() << "\n" << expect.transpose();
    Vec other = mu;
    other[n - 1] += 1e-6;
    Vec h(3 * n);
    ASSERT_EQ(robot::acceleration_gradient(r, w.data(), w.data() + n, w.data() + 2 * n, other.data(), h.data(), *ws),
              0);
    EXPECT_GT((h - expect).cwiseAbs().maxCoeff(), 1e-11 * scale) << "negative control";
  }
}

// The dual path through the dynamics (the templated Cholesky of M instead of linalg's) gives the
// plain path's qdd to rounding and, in its tangents, the analytic dqdd/dq and dqdd/dqd.
TEST(ManipulatorStepHessian, DualForwardDynamicsMatchesThePlainAnalyticOne) {
  using D = Dual<double, Tangent<double, 2>>;
  Rng rng(59);
  for (const Robot& rb : robots()) {
    SCOPED_TRACE(rb.name);
    const robot::RobotData& r = dynamic_cast<const Manipulator&>(*rb.model).robot().data;
    const int n = r.n;
    const Vec w = random_point(rng, *rb.model);
    auto ws = std::make_unique<robot::Workspace<double>>();
    auto wd = std::make_unique<robot::Workspace<D>>();
    Vec qdd(n);
    Mat dq(n, n), dqd(n, n);
    ASSERT_EQ(robot::forward_dynamics_derivatives(r, w.data(), w.data() + n, w.data() + 2 * n, qdd.data(), dq.data(),
                                                  dqd.data(), nullptr, n, *ws),
              0);
    std::vector<D> q(n), v(n), tau(n), out(n);
    const int j = n - 2;  // seed dq_j in tangent 0 and dqd_j in tangent 1
    for (int i = 0; i < n; ++i) {
      q[i] = D(w[i]);
      v[i] = D(w[n + i]);
      tau[i] = D(w[2 * n + i]);
    }
    q[j].d[0] = 1.0;
    v[j].d[1] = 1.0;
    ASSERT_EQ(robot::forward_dynamics(r, q.data(), v.data(), tau.data(), out.data(), *wd), 0);
    const double scale = std::max(1.0, qdd.cwiseAbs().maxCoeff());
    for (int i = 0; i < n; ++i) {
      EXPECT_NEAR(out[i].v, qdd[i], 1e-12 * scale);
      EXPECT_NEAR(out[i].d[0], dq(i, j), 1e-10 * std::max(1.0, dq.cwiseAbs().maxCoeff()));
      EXPECT_NEAR(out[i].d[1], dqd(i, j), 1e-10 * std::max(1.0, dqd.cwiseAbs().maxCoeff()));
    }
  }
}

// ---- end-effector terms -----------------------------------------------------------------------------

StagePoint stage(const Vec& w, int nx, ModelData& data) {
  StagePoint p;
  p.k = 0;
  p.N = 10;
  p.dt = 0.1;
  p.x = w.data();
  p.u = w.data() + nx;
  p.data = &data;
  return p;
}

// The end effector (iiwa_link_7; the tree's sensor, behind the prismatic joint).
int frame_of(const Robot& r) { return r.model->kinematics()->default_frame(); }

TEST(ManipulatorTermCurvature, EndEffectorConstraintsMatchDifferences) {
  Rng rng(61);
  const TermInfo info{"t", StageSet::All, false};
  for (const Robot& r : robots()) {
    SCOPED_TRACE(r.name);
    const Model& m = *r.model;
    const int nx = m.nx(), nw = nx + m.nu();
    const std::array<double, 3> offset = {0.05, -0.03, 0.1};
    const EndEffectorHeight height(info, r.model, frame_of(r), offset, 0.2);
    const EndEffectorBox box(info, r.model, frame_of(r), offset, {-1.0, -INFINITY, 0.1}, {1.0, 0.5, INFINITY});
    for (const ConstraintTerm* t :
         {static_cast<const ConstraintTerm*>(&height), static_cast<const ConstraintTerm*>(&box)}) {
      SCOPED_TRACE(std::string(t->type()));
      auto data = m.make_data();
      const Vec w = random_point(rng, m);
      const Vec mult = rng.vector(t->dim()).cwiseAbs() * 10;
      Mat H = Mat::Zero(nw, nw);
      ASSERT_TRUE(t->add_curvature(stage(w, nx, *data), mult.data(), H.data(), nw));
      const auto grad = [&](const Vec& v) {
        Mat gx = Mat::Zero(t->dim(), nx);
        Vec g(t->dim());
        t->jacobian(stage(v, nx, *data), g.data(), gx.data(), nullptr);
        Vec out = Vec::Zero(nw);
        out.head(nx) = gx.transpose() * mult;
        return out;
      };
      expect_matches(H, reference(grad, w));
    }
  }
}

// The cost's exact Hessian is its Gauss-Newton one (accumulate) plus add_curvature.
TEST(ManipulatorTermCurvature, EndEffectorCostMatchesDifferences) {
  Rng rng(67);
  for (const Robot& r : robots()) {
    SCOPED_TRACE(r.name);
    const Model& m = *r.model;
    const int nx = m.nx();
    const TermInfo info{"t", StageSet::All, true};
    const EndEffectorCost cost(info, r.model, frame_of(r), {0.02, 0.0, 0.08},
                               std::vector<double>{30, 2, 0, 2, 20, 1, 0, 1, 10},
                               Reference::constant({0.4, -0.2, 0.7}));
    auto data = m.make_data();
    const Vec w = random_point(rng, m);
    Mat Hxx = Mat::Zero(nx, nx);
    CostBlocks b;
    b.Hxx = Hxx.data();
    cost.accumulate(stage(w, nx, *data), b);
    ASSERT_TRUE(cost.add_curvature(stage(w, nx, *data), b));
    const auto grad = [&](const Vec& v) {
      Vec gx = Vec::Zero(nx);
      CostBlocks g;
      g.gx = gx.data();
      cost.accumulate(stage(v, nx, *data), g);
      return gx;
    };
    // The solver averages a cost block's mirrored pairs; the curvature alone is symmetric.
    const Mat exact = 0.5 * (Hxx + Hxx.transpose());
    expect_matches(exact, reference(grad, w.head(nx)));
    // Negative control: the Gauss-Newton Hessian alone is caught.
    Mat gn = Mat::Zero(nx, nx);
    CostBlocks only;
    only.Hxx = gn.data();
    cost.accumulate(stage(w, nx, *data), only);
    EXPECT_GT((gn - reference(grad, w.head(nx)).H).cwiseAbs().maxCoeff(), 1e3 * reference(grad, w.head(nx)).bound);
  }
}

}  // namespace

// OcpNlp, the NLP handed to IPOPT: sizes and row layout, the objective and constraints against
// hand-written formulas, the gradient, Jacobian and both Hessians against central differences of
// the NLP's own lower-order callbacks, each with a negative control.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/ipopt.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace knot::test {
namespace {

using problems::Problem;
using solver::OcpNlp;

Problem config(const std::string& name, std::vector<std::string> overrides = {}) {
  return problems::load_problem(std::string(knot::source_tree::configs_dir()) + "/" + name + ".yaml", overrides);
}

// Terms no config uses: control_rate, a one-sided state_box, state_equality, the implicit
// integrator (Newton inside), end_effector_height and end_effector_box.
Problem pendulum_extras() {
  return problems::load_problem_from_string(R"(
name: pendulum_extras
model: {type: pendulum}
horizon: {N: 5, dt: 0.1, integrator: implicit_midpoint}
x0: [0.3, -0.2]
costs:
  - {name: upright, type: state, weights: [[2, 0.5], [0.5, 1]], reference: [3.0, 0]}
  - {name: effort, type: control, weights: [0.3], scale_by_dt: true}
  - {name: smooth, type: control_rate, weights: [0.7], scale_by_dt: true}
constraints:
  - {name: torque, type: control_box, lower: [-2], upper: [2.5]}
  - {name: speed, type: state_box, indices: [1], upper: [4]}
  - {name: arrive, type: state_equality, indices: [0], target: [3.0]}
)");
}

Problem iiwa_extras() {
  return problems::load_problem_from_string(R"(
name: iiwa_extras
model: {type: manipulator, params: {urdf: robots/iiwa14_iiwa_grid.urdf}}
horizon: {N: 2, dt: 0.02, integrator: euler}
x0: [0.1, 0.5, -0.2, -1.2, 0.3, 0.8, 0.1,  0.2, -0.1, 0.3, 0, 0.1, -0.2, 0.1]
costs:
  - {name: reach, type: end_effector, weights: [10, 20, 30], reference: [0.5, 0.3, 0.6]}
  - {name: effort, type: control, weights: 0.01}
  - {name: smooth, type: control_rate, weights: 0.02}
constraints:
  - {name: floor, type: end_effector_height, min: 0.2, offset: [0, 0, 0.05]}
  - {name: workspace, type: end_effector_box, lower: [-0.8, -.inf, 0.1], upper: [0.8, 0.9, .inf]}
)",
                                            "iiwa_extras", knot::source_tree::configs_dir());
}

// Problems that together hold every model kind, cost term, constraint term and several
// integrators; horizons cut short so that dense differences stay cheap.
std::vector<std::pair<std::string, Problem>> problem_set() {
  std::vector<std::pair<std::string, Problem>> set;
  set.emplace_back("cartpole", config("cartpole_swingup", {"horizon.N=4"}));
  set.emplace_back("unicycle", config("unicycle_obstacles", {"horizon.N=4"}));
  set.emplace_back("acrobot", config("acrobot_swingup", {"horizon.N=3"}));
  set.emplace_back("chain", config("chain_of_masses", {"horizon.N=2"}));
  set.emplace_back("iiwa_limits", config("iiwa14_gravity_limits", {"horizon.N=2"}));
  set.emplace_back("pendulum_extras", pendulum_extras());
  set.emplace_back("iiwa_extras", iiwa_extras());
  return set;
}

// The default guess moved by uniform noise of the given size.
std::vector<double> random_point(const OcpNlp& nlp, Rng& rng, double size = 0.5) {
  std::vector<double> z = nlp.default_guess();
  for (double& v : z) v += rng.uniform(-size, size);
  return z;
}

// Central differences, column j of d f / d z, f: z -> R^rows, with the step eps^(1/3) max(1, |z_j|)
// times `widen`.
template <class F>
Mat central_differences(int rows, std::vector<double> z, F&& f, double widen = 1.0) {
  Mat D(rows, static_cast<int>(z.size()));
  Vec fp(rows), fm(rows);
  for (std::size_t j = 0; j < z.size(); ++j) {
    const double zj = z[j], h = widen * std::cbrt(std::numeric_limits<double>::epsilon()) * std::max(1.0, std::abs(zj));
    z[j] = zj + h;
    EXPECT_TRUE(f(z.data(), fp.data()));
    z[j] = zj - h;
    EXPECT_TRUE(f(z.data(), fm.data()));
    z[j] = zj;
    D.col(static_cast<int>(j)) = (fp - fm) / (2 * h);
  }
  return D;
}

Mat dense_jacobian(OcpNlp& nlp, const std::vector<double>& z) {
  const int nnz = nlp.jacobian_nonzeros();
  std::vector<int> r(nnz), c(nnz);
  nlp.jacobian_structure(r.data(), c.data());
  std::vector<double> v = poisoned(static_cast<std::size_t>(nnz));
  EXPECT_TRUE(nlp.jacobian(z.data(), v.data()));
  Mat J = Mat::Zero(nlp.num_constraints(), nlp.num_variables());
  for (int e = 0; e < nnz; ++e) J(r[e], c[e]) += v[e];
  return J;
}

// The symmetric matrix whose lower triangle the values hold.
Mat dense_symmetric(const OcpNlp& nlp, const std::vector<double>& v) {
  const int nnz = nlp.hessian_nonzeros();
  std::vector<int> r(nnz), c(nnz);
  nlp.hessian_structure(r.data(), c.data());
  Mat H = Mat::Zero(nlp.num_variables(), nlp.num_variables());
  for (int e = 0; e < nnz; ++e) {
    H(r[e], c[e]) += v[e];
    if (r[e] != c[e]) H(c[e], r[e]) += v[e];
  }
  return H;
}

Vec gradient_of(OcpNlp& nlp, const std::vector<double>& z) {
  Vec g(nlp.num_variables());
  g.setConstant(kNaN);
  EXPECT_TRUE(nlp.gradient(z.data(), g.data()));
  return g;
}

// sigma grad f + J' lambda from the NLP's first-order callbacks.
Vec lagrangian_gradient(OcpNlp& nlp, const double* z, double sigma, const Vec& lambda) {
  std::vector<double> zv(z, z + nlp.num_variables());
  return sigma * gradient_of(nlp, zv) + dense_jacobian(nlp, zv).transpose() * lambda;
}

constexpr double kTol = 1e-6;

TEST(OcpNlp, SizesAndRowLayoutOfTheUnicycle) {
  const Problem p = config("unicycle_obstacles", {"horizon.N=4"});
  const OcpNlp nlp(p);
  // nx = 3, nu = 2, N = 4: rows x_0 - x0 (3), dynamics (4 x 3), speed box (4 running knots x 4
  // rows), two obstacles (5 knots x 1 row each).
  EXPECT_EQ(nlp.num_variables(), 5 * 3 + 4 * 2);
  EXPECT_EQ(nlp.num_constraints(), 3 + 12 + 16 + 10);
  std::vector<double> lo(41), hi(41);
  nlp.constraint_bounds(lo.data(), hi.data());
  int equalities = 0;
  for (int r = 0; r < 41; ++r) {
    EXPECT_EQ(hi[r], 0.0);
    EXPECT_EQ(nlp.constraint_is_equality(r), lo[r] == 0.0);
    if (lo[r] != 0.0) {
      EXPECT_EQ(lo[r], -std::numeric_limits<double>::infinity());
    }
    equalities += nlp.constraint_is_equality(r);
  }
  EXPECT_EQ(equalities, 15);
  // Knot 0 opens with x_0 - x0, then the speed box (4 rows), the obstacles (2), the dynamics (3).
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(nlp.constraint_is_equality(r));
  for (int r = 3; r < 9; ++r) EXPECT_FALSE(nlp.constraint_is_equality(r));
  for (int r = 9; r < 12; ++r) EXPECT_TRUE(nlp.constraint_is_equality(r));
  // Variables knot by knot.
  EXPECT_EQ(nlp.state_offset(2), 10);
  EXPECT_EQ(nlp.control_offset(2), 13);
  EXPECT_EQ(nlp.state_offset(4), 20);
}

TEST(OcpNlp, StructuresHoldNoDuplicateAndStayInRange) {
  for (auto& [name, p] : problem_set()) {
    SCOPED_TRACE(name);
    const OcpNlp nlp(p);
    const int n = nlp.num_variables(), m = nlp.num_constraints();
    std::vector<int> r(nlp.jacobian_nonzeros()), c(nlp.jacobian_nonzeros());
    nlp.jacobian_structure(r.data(), c.data());
    std::set<std::pair<int, int>> seen;
    for (std::size_t e = 0; e < r.size(); ++e) {
      EXPECT_TRUE(r[e] >= 0 && r[e] < m && c[e] >= 0 && c[e] < n);
      EXPECT_TRUE(seen.insert({r[e], c[e]}).second) << "duplicate Jacobian entry " << r[e] << ", " << c[e];
    }
    r.assign(nlp.hessian_nonzeros(), 0);
    c.assign(nlp.hessian_nonzeros(), 0);
    nlp.hessian_structure(r.data(), c.data());
    seen.clear();
    for (std::size_t e = 0; e < r.size(); ++e) {
      EXPECT_TRUE(c[e] >= 0 && c[e] <= r[e] && r[e] < n) << "not in the lower triangle: " << r[e] << ", " << c[e];
      EXPECT_TRUE(seen.insert({r[e], c[e]}).second) << "duplicate Hessian entry " << r[e] << ", " << c[e];
    }
  }
}

TEST(OcpNlp, PackUnpackAndTheDefaultGuess) {
  const Problem p = config("cartpole_swingup", {"horizon.N=3"});
  const OcpNlp nlp(p);
  Rng rng(3);
  std::vector<double> x(16), u(3), z(static_cast<std::size_t>(nlp.num_variables())), x2(16), u2(3);
  for (double& v : x) v = rng.uniform();
  for (double& v : u) v = rng.uniform();
  nlp.pack(x.data(), u.data(), z.data());
  EXPECT_EQ(z[5], x[4]);  // x_1[0] after x_0 (4 entries) and u_0 (1)
  EXPECT_EQ(z[4], u[0]);
  EXPECT_EQ(z[9], u[1]);
  nlp.unpack(z.data(), x2.data(), u2.data());
  EXPECT_EQ(x, x2);
  EXPECT_EQ(u, u2);
  const std::vector<double> g = nlp.default_guess();
  for (int k = 0; k <= 3; ++k)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(g[nlp.state_offset(k) + i], p.x0[i]);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(g[nlp.control_offset(k)], 0.0);
}

// The LQR config written out by hand: sum_{k<N} 1/2 (x'x + 0.1 u^2) + 1/2 10 x_N'x_N, and
// x+ = [1 0.1; 0 1] x + [0.005; 0.1] u.
TEST(OcpNlp, ObjectiveAndConstraintsMatchTheLqrByHand) {
  const Problem p = config("double_integrator_lqr", {"horizon.N=6"});
  OcpNlp nlp(p);
  Rng rng(5);
  const std::vector<double> z = random_point(nlp, rng, 2.0);
  double expect_f = 0;
  std::vector<double> expect_g;
  expect_g.push_back(z[0] - 1.0);
  expect_g.push_back(z[1] - 0.0);
  for (int k = 0; k <= 6; ++k) {
    const double p0 = z[nlp.state_offset(k)], v0 = z[nlp.state_offset(k) + 1];
    if (k == 6) {
      expect_f += 0.5 * 10 * (p0 * p0 + v0 * v0);
      break;
    }
    const double a = z[nlp.control_offset(k)];
    expect_f += 0.5 * (p0 * p0 + v0 * v0 + 0.1 * a * a);
    const double p1 = z[nlp.state_offset(k + 1)], v1 = z[nlp.state_offset(k + 1) + 1];
    expect_g.push_back(p1 - (p0 + 0.1 * v0 + 0.005 * a));
    expect_g.push_back(v1 - (v0 + 0.1 * a));
  }
  double f = kNaN;
  ASSERT_TRUE(nlp.objective(z.data(), f));
  EXPECT_NEAR(f, expect_f, 1e-13 * std::abs(expect_f));
  std::vector<double> g = poisoned(static_cast<std::size_t>(nlp.num_constraints()));
  ASSERT_TRUE(nlp.constraints(z.data(), g.data()));
  ASSERT_EQ(g.size(), expect_g.size());
  for (std::size_t r = 0; r < g.size(); ++r) EXPECT_NEAR(g[r], expect_g[r], 1e-14) << "row " << r;
}

// A trajectory rolled out by a separate integrator satisfies every equality row exactly.
TEST(OcpNlp, RolloutZeroesTheInitialAndDynamicsRows) {
  const Problem p = config("acrobot_swingup", {"horizon.N=5"});
  OcpNlp nlp(p);
  problems::Integrator integrator(*p.model, p.horizon.integrator);
  auto data = p.model->make_data();
  Rng rng(7);
  std::vector<double> z(static_cast<std::size_t>(nlp.num_variables()));
  std::copy(p.x0.begin(), p.x0.end(), z.begin());
  for (int k = 0; k < 5; ++k) {
    z[nlp.control_offset(k)] = rng.uniform(-5, 5);
    ASSERT_EQ(integrator.step(*data, &z[nlp.state_offset(k)], &z[nlp.control_offset(k)], p.horizon.dt,
                              &z[nlp.state_offset(k + 1)]),
              problems::IntegratorStatus::Ok);
  }
  std::vector<double> g = poisoned(static_cast<std::size_t>(nlp.num_constraints()));
  ASSERT_TRUE(nlp.constraints(z.data(), g.data()));
  int checked = 0;
  for (int r = 0; r < nlp.num_constraints(); ++r)
    if (nlp.constraint_is_equality(r)) {
      EXPECT_EQ(g[r], 0.0) << "row " << r;
      ++checked;
    }
  EXPECT_EQ(checked, 4 + 5 * 4);
  // Moving one state off the rollout shows in the dynamics rows on both sides of it.
  z[nlp.state_offset(2) + 1] += 1e-3;
  ASSERT_TRUE(nlp.constraints(z.data(), g.data()));
  double defect = 0;
  for (int r = 0; r < nlp.num_constraints(); ++r)
    if (nlp.constraint_is_equality(r)) defect = std::max(defect, std::abs(g[r]));
  EXPECT_GE(defect, 1e-3);
}

TEST(OcpNlp, GradientMatchesCentralDifferencesOfTheObjective) {
  Rng rng(11);
  for (auto& [name, p] : problem_set()) {
    SCOPED_TRACE(name);
    OcpNlp nlp(p);
    for (int trial = 0; trial < 2; ++trial) {
      const std::vector<double> z = random_point(nlp, rng);
      const Vec g = gradient_of(nlp, z);
      const Mat fd = central_differences(1, z, [&](const double* zz, double* f) { return nlp.objective(zz, *f); });
      const Vec fdv = fd.row(0).transpose();
      EXPECT_LT(rel_err(g, fdv), kTol);
      // Negative control: one entry off by 1e-4 of the scale fails the same comparison.
      Vec bad = g;
      bad(nlp.control_offset(0)) += 1e-4 * std::max(1.0, fdv.cwiseAbs().maxCoeff());
      EXPECT_GT(rel_err(bad, fdv), kTol);
    }
  }
}

TEST(OcpNlp, JacobianMatchesCentralDifferencesOfTheConstraints) {
  Rng rng(13);
  for (auto& [name, p] : problem_set()) {
    SCOPED_TRACE(name);
    OcpNlp nlp(p);
    for (int trial = 0; trial < 2; ++trial) {
      const std::vector<double> z = random_point(nlp, rng);
      const Mat J = dense_jacobian(nlp, z);
      const Mat fd = central_differences(nlp.num_constraints(), z,
                                         [&](const double* zz, double* g) { return nlp.constraints(zz, g); });
      EXPECT_LT(rel_err(J, fd), kTol);
      // Negative control: one entry off by 1e-4 of the scale.
      Mat bad = J;
      bad(nlp.num_constraints() - 1, nlp.state_offset(nlp.N() - 1)) += 1e-4 * std::max(1.0, fd.cwiseAbs().maxCoeff());
      EXPECT_GT(rel_err(bad, fd), kTol);
    }
  }
}

// With residuals linear in the variables (state, control and rate costs) the Gauss-Newton Hessian
// is the exact Hessian of the objective.
TEST(OcpNlp, GaussNewtonHessianIsExactForLinearResiduals) {
  Rng rng(17);
  for (auto& [name, p] : problem_set()) {
    if (name == "iiwa_limits" || name == "iiwa_extras") continue;  // end-effector residuals
    SCOPED_TRACE(name);
    OcpNlp nlp(p);
    const std::vector<double> z = random_point(nlp, rng);
    std::vector<double> v = poisoned(static_cast<std::size_t>(nlp.hessian_nonzeros()));
    ASSERT_TRUE(nlp.gauss_newton_hessian(z.data(), 0.7, v.data()));
    const Mat H = dense_symmetric(nlp, v);
    const Mat fd = 0.7 * central_differences(nlp.num_variables(), z,
                                             [&](const double* zz, double* g) { return nlp.gradient(zz, g); });
    EXPECT_LT(rel_err(H, fd), kTol);
    Mat bad = H;
    bad(nlp.control_offset(1), nlp.control_offset(0)) += 1e-4 * std::max(1.0, fd.cwiseAbs().maxCoeff());
    EXPECT_GT(rel_err(bad, fd), kTol);
  }
}

// Negative control for the test above: an end-effector residual is not linear, so its
// Gauss-Newton Hessian misses the residual-curvature term and fails the same comparison.
TEST(OcpNlp, GaussNewtonHessianIsNotExactForEndEffectorResiduals) {
  const Problem p = iiwa_extras();
  OcpNlp nlp(p);
  Rng rng(19);
  const std::vector<double> z = random_point(nlp, rng);
  std::vector<double> v(static_cast<std::size_t>(nlp.hessian_nonzeros()));
  ASSERT_TRUE(nlp.gauss_newton_hessian(z.data(), 1.0, v.data()));
  const Mat fd =
      central_differences(nlp.num_variables(), z, [&](const double* zz, double* g) { return nlp.gradient(zz, g); });
  EXPECT_GT(rel_err(dense_symmetric(nlp, v), fd), kTol);
}

TEST(OcpNlp, LagrangianHessianMatchesDifferencesOfTheLagrangianGradient) {
  Rng rng(23);
  for (auto& [name, p] : problem_set()) {
    SCOPED_TRACE(name);
    OcpNlp nlp(p);
    const std::vector<double> z = random_point(nlp, rng);
    Vec lambda(nlp.num_constraints());
    for (int r = 0; r < lambda.size(); ++r) lambda(r) = rng.uniform(-2, 2);
    const double sigma = 0.6;
    std::vector<double> v = poisoned(static_cast<std::size_t>(nlp.hessian_nonzeros()));
    ASSERT_TRUE(nlp.lagrangian_hessian(z.data(), sigma, lambda.data(), v.data()));
    const Mat H = dense_symmetric(nlp, v);
    // A wider step than the NLP's own differences, so their truncation errors do not coincide.
    const Mat fd = central_differences(
        nlp.num_variables(), z,
        [&](const double* zz, double* out) {
          Eigen::Map<Vec>(out, nlp.num_variables()) = lagrangian_gradient(nlp, zz, sigma, lambda);
          return true;
        },
        2.0);
    // fd is not symmetric to the last digit; H is, so compare with fd's symmetric part.
    const Mat fds = 0.5 * (fd + fd.transpose());
    EXPECT_LT(rel_err(H, fds), kTol);
    Mat bad = H;
    bad(nlp.state_offset(1), nlp.state_offset(1)) += 1e-4 * std::max(1.0, fds.cwiseAbs().maxCoeff());
    EXPECT_GT(rel_err(bad, fds), kTol);
  }
}

// The constraint curvature matters: on the unicycle (curved obstacles, nonlinear dynamics) the
// Lagrangian Hessian differs from the objective's Gauss-Newton Hessian once lambda is nonzero.
TEST(OcpNlp, LagrangianHessianCarriesConstraintCurvature) {
  const Problem p = config("unicycle_obstacles", {"horizon.N=4"});
  OcpNlp nlp(p);
  Rng rng(29);
  const std::vector<double> z = random_point(nlp, rng);
  const int nnz = nlp.hessian_nonzeros();
  std::vector<double> gn(nnz), zero_lambda_h(nnz), h(nnz);
  std::vector<double> lambda(static_cast<std::size_t>(nlp.num_constraints()), 0.0);
  ASSERT_TRUE(nlp.gauss_newton_hessian(z.data(), 1.0, gn.data()));
  ASSERT_TRUE(nlp.lagrangian_hessian(z.data(), 1.0, lambda.data(), zero_lambda_h.data()));
  // Linear residuals and lambda = 0: both are the objective's Hessian.
  EXPECT_LT(rel_err(dense_symmetric(nlp, zero_lambda_h), dense_symmetric(nlp, gn)), kTol);
  for (double& l : lambda) l = rng.uniform(0.5, 1.0);
  ASSERT_TRUE(nlp.lagrangian_hessian(z.data(), 1.0, lambda.data(), h.data()));
  EXPECT_GT(rel_err(dense_symmetric(nlp, h), dense_symmetric(nlp, gn)), 1e-3);
}

TEST(OcpNlp, RejectsAnInvalidProblem) {
  Problem p = config("cartpole_swingup");
  p.x0.pop_back();
  EXPECT_THROW(OcpNlp{p}, problems::ProblemError);
}

}  // namespace
}  // namespace knot::test

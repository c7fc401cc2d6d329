// The linearization (sqp_linearize.cpp): exact on linear-quadratic problems, and its exact-Hessian
// option is the Lagrangian's Hessian: Newton's quadratic local convergence, which the Gauss-Newton
// Hessian (no dynamics curvature) does not have.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

using solver::Hessian;
using solver::Solver;
using solver::Status;

// The largest s_{k+1} / s_k^2 over the last two steps of a solve (s the stationarity).
double quadratic_constant(const solver::Stats& stats) {
  const auto rows = stats.history();
  double c = 0;
  for (std::size_t i = rows.size() - 2; i < rows.size(); ++i)
    c = std::max(c, rows[i].stationarity / (rows[i - 1].stationarity * rows[i - 1].stationarity));
  return c;
}

TEST(SqpLinearize, ExactHessianConvergesQuadratically) {
  // The torque-limited swing-up without its limit: a nonlinear, unconstrained problem.
  const problems::Problem p = load_config("pendulum_swingup", {"constraints=[]"});
  solver::SolverOptions o = sqp_options(p);
  o.hessian = Hessian::Exact;
  Solver exact(p, o);
  ASSERT_EQ(exact.solve(), Status::Solved) << exact.solution().message();
  o.hessian = Hessian::GaussNewton;
  Solver gn(p, o);
  ASSERT_EQ(gn.solve(), Status::Solved) << gn.solution().message();
  // Both find the same minimizer.
  EXPECT_NEAR(exact.solution().cost, gn.solution().cost, 1e-8 * gn.solution().cost);
  // Newton: s_{k+1} <= C s_k^2 with a moderate C. Negative control: the Gauss-Newton Hessian leaves
  // out the dynamics' curvature and converges only linearly, so the same constant explodes.
  EXPECT_LT(quadratic_constant(exact.stats()), 100);
  EXPECT_GT(quadratic_constant(gn.stats()), 1e4);
  EXPECT_LT(exact.solution().iterations, gn.solution().iterations);
}

// On a linear-quadratic problem the Lagrangian's Hessian is the cost's: the differenced Hessian
// reproduces the Gauss-Newton iterates (one Newton step for LQR, two for rest-to-rest).
TEST(SqpLinearize, ExactHessianIsGaussNewtonOnLinearQuadraticProblems) {
  for (const char* name : {"double_integrator_lqr", "double_integrator_rest_to_rest"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    solver::SolverOptions o = sqp_options(p);
    Solver gn(p, o);
    ASSERT_EQ(gn.solve(), Status::Solved);
    o.hessian = Hessian::Exact;
    Solver exact(p, o);
    ASSERT_EQ(exact.solve(), Status::Solved);
    EXPECT_EQ(exact.solution().iterations, gn.solution().iterations);
    double dx = 0;
    for (std::size_t i = 0; i < gn.solution().u.size(); ++i)
      dx = std::max(dx, std::abs(exact.solution().u[i] - gn.solution().u[i]));
    EXPECT_LE(dx, 1e-9);
  }
}

// The linearization of a linear-quadratic problem is exact: one step reaches the optimum with
// multipliers that make the next linearization stationary to rounding.
TEST(SqpLinearize, OneStepSolvesAnLqProblem) {
  const problems::Problem p = load_config("double_integrator_lqr");
  Solver s(p, sqp_options(p));
  ASSERT_EQ(s.solve(), Status::Solved);
  ASSERT_EQ(s.solution().iterations, 1);
  const auto rows = s.stats().history();
  EXPECT_LE(rows[1].stationarity, 1e-12);
  EXPECT_LE(rows[1].feasibility, 1e-12);
  EXPECT_GT(rows[0].stationarity, 1);  // the first iterate (zero multipliers) is far from it
}

}  // namespace
}  // namespace knot::test

// The arm on a long horizon: iiwa14_reach at N = 256 (4 s at dt = 1/64), where Gauss-Newton steps
// stall in a region of large defects (docs/solver.md, "Long horizons"), the exact Hessian converges,
// and hessian auto restarts with it. The answer is checked from scratch, not by the
// solver's own residuals: its states against a rollout of its controls (max_violation), and first-order
// optimality of the single-shooting objective J(u) = cost(rollout(u), u) by central differences along
// random directions. The negative control is the same check at an iterate the solver stopped early.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "knot/solver/solver.hpp"
#include "test_sqp_common.hpp"

namespace {

using namespace knot;
using knot::test::load_config;
using knot::test::max_violation;
using knot::test::rollout;
using knot::test::total_cost;

// The largest |dJ/dt| of t -> J(u + t d) at t = 0 over `directions` random unit directions d.
double largest_directional_derivative(const problems::Problem& p, const std::vector<double>& u, int directions) {
  const auto J = [&](const std::vector<double>& v) { return total_cost(p, rollout(p, v), v); };
  std::mt19937_64 rng(20261206);
  std::normal_distribution<double> normal;
  constexpr double h = 1e-5;  // rounding eps J / h ~ 1e-10, truncation h^2 J''' far below
  double worst = 0;
  std::vector<double> d(u.size()), plus(u.size()), minus(u.size());
  for (int r = 0; r < directions; ++r) {
    double norm = 0;
    for (double& v : d) {
      v = normal(rng);
      norm += v * v;
    }
    norm = std::sqrt(norm);
    for (std::size_t i = 0; i < u.size(); ++i) {
      plus[i] = u[i] + h * d[i] / norm;
      minus[i] = u[i] - h * d[i] / norm;
    }
    worst = std::max(worst, std::abs(J(plus) - J(minus)) / (2 * h));
  }
  return worst;
}

problems::Problem long_reach() {
  return load_config("iiwa14_reach", {"horizon.N=256", "horizon.integrator=semi_implicit_euler"});
}

TEST(SqpLongHorizon, ExactHessianSolvesTheArmOverFourSeconds) {
  const problems::Problem p = long_reach();
  solver::SolverOptions o = solver::from_settings(p.solver);
  o.hessian = solver::Hessian::Exact;
  solver::Solver s(p, o);
  ASSERT_EQ(s.solve(), solver::Status::Solved) << s.solution().message();
  EXPECT_LE(s.solution().iterations, 60);  // 43 when written

  const solver::Solution& sol = s.solution();
  EXPECT_LE(max_violation(p, sol.x, sol.u), 1e-8);
  const double cost = total_cost(p, sol.x, sol.u);
  EXPECT_NEAR(cost, sol.cost, 1e-12 * cost);
  const double slope = largest_directional_derivative(p, sol.u, 6);
  EXPECT_LE(slope, 1e-7) << "cost " << cost;

  // Negative control: the same solve stopped after 20 iterations is no minimizer, and the check says so.
  o.max_iter = 20;
  solver::Solver early(p, o);
  EXPECT_EQ(early.solve(), solver::Status::MaxIterations);
  const double early_slope = largest_directional_derivative(p, early.solution().u, 6);
  EXPECT_GT(early_slope, 1e3 * std::max(slope, 1e-9)) << "slope " << slope;
  std::printf("largest directional derivative: %.3g at the solution (%d iterations), %.3g after 20\n", slope,
              sol.iterations, early_slope);
}

// The default, hessian auto: 20 Gauss-Newton steps (4 windows) bring no iterate's KKT error to a
// tenth of the start's (hessian_restart), so the solve starts over from its first iterate with the
// exact Hessian and reaches the exact solve's minimum within the file's 100 iterations. Row 20
// measures the starting point again (its cost bitwise row 0's) and every row from there is an exact
// step. The answer is checked from scratch as above. The negative controls: without the restart the
// solve stalls, and at N = 128 Gauss-Newton makes progress by then (a 24th of the start's error) and
// no restart happens.
TEST(SqpLongHorizon, DefaultRestartsWithTheExactHessianAndSolves) {
  const problems::Problem p = long_reach();
  const solver::SolverOptions o = solver::from_settings(p.solver);
  ASSERT_EQ(o.hessian, solver::Hessian::Auto);
  solver::Solver s(p, o);
  ASSERT_EQ(s.solve(), solver::Status::Solved) << s.solution().message();
  const auto rows = s.stats().history();
  const int restart = 4 * o.hessian_switch_window;
  ASSERT_GT(static_cast<int>(rows.size()), restart + 1);
  EXPECT_EQ(rows[std::size_t(restart)].cost, rows[0].cost);
  for (std::size_t i = std::size_t(restart); i + 1 < rows.size(); ++i) EXPECT_TRUE(rows[i].exact_hessian) << "row " << i;
  EXPECT_LE(s.solution().iterations, o.max_iter);

  const solver::Solution& sol = s.solution();
  EXPECT_LE(max_violation(p, sol.x, sol.u), 1e-8);
  EXPECT_LE(largest_directional_derivative(p, sol.u, 6), 1e-7);
  solver::SolverOptions exact_options = o;
  exact_options.hessian = solver::Hessian::Exact;
  solver::Solver exact(p, exact_options);
  ASSERT_EQ(exact.solve(), solver::Status::Solved);
  EXPECT_NEAR(sol.cost, exact.solution().cost, 1e-9 * exact.solution().cost);
  std::printf("hessian auto: %d iterations (restart at %d), cost %.12g; hessian exact: %d, cost %.12g\n",
              sol.iterations, restart, sol.cost, exact.solution().iterations, exact.solution().cost);

  // Without the restart (hessian_restart 0) the same default stalls: what the restart changes.
  solver::SolverOptions no_restart = o;
  no_restart.hessian_restart = 0;
  solver::Solver stalled(p, no_restart);
  EXPECT_EQ(stalled.solve(), solver::Status::MaxIterations);

  const problems::Problem shorter =
      load_config("iiwa14_reach", {"horizon.N=128", "horizon.integrator=semi_implicit_euler"});
  solver::Solver control(shorter, o);
  ASSERT_EQ(control.solve(), solver::Status::Solved);
  const auto control_rows = control.stats().history();
  ASSERT_GT(static_cast<int>(control_rows.size()), restart + 1);  // it ran past the test
  for (std::size_t i = 1; i < control_rows.size(); ++i) EXPECT_NE(control_rows[i].cost, control_rows[0].cost) << "row " << i;
}

// What a user who keeps the default sees when the limit is reached with Gauss-Newton steps: the
// message names the remedy the test above proves.
TEST(SqpLongHorizon, MaxIterationsUnderGaussNewtonNamesTheExactHessian) {
  const problems::Problem p = long_reach();
  solver::SolverOptions o = solver::from_settings(p.solver);
  o.hessian = solver::Hessian::GaussNewton;
  o.max_iter = 5;
  solver::Solver s(p, o);
  ASSERT_EQ(s.solve(), solver::Status::MaxIterations);
  EXPECT_NE(s.solution().message().find("5 of them Gauss-Newton steps (hessian: exact"), std::string_view::npos)
      << s.solution().message();

  o.hessian = solver::Hessian::Exact;  // exact steps: the message has no such advice
  solver::Solver exact(p, o);
  ASSERT_EQ(exact.solve(), solver::Status::MaxIterations);
  EXPECT_EQ(exact.solution().message().find("Gauss-Newton"), std::string_view::npos) << exact.solution().message();
}

}  // namespace

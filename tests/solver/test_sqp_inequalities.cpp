// The SQP's interior point on inequality rows: inactive bounds cost few iterations (the central cold
// start), an active bound keeps the dual_init start, and a warm start after shift() keeps its barrier.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "test_sqp_common.hpp"

namespace knot {
namespace {

using solver::Solver;
using solver::Status;
using test::load_config;
using test::sqp_options;

double rel(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

// Largest inequality row g (g <= 0 holds the bound) at (x, u), from the problem's own terms.
double largest_row(const problems::Problem& p, const std::vector<double>& x, const std::vector<double>& u) {
  const int N = p.horizon.N;
  auto data = p.model->make_data();
  double worst = -INFINITY;
  std::vector<double> g;
  for (int k = 0; k <= N; ++k) {
    const problems::StagePoint pt = test::stage_point(p, k, x.data(), u.data(), data.get());
    for (const auto& c : p.constraints) {
      if (c->kind() != problems::ConstraintKind::Inequality || !c->active(k, N)) continue;
      g.assign(static_cast<std::size_t>(c->dim()), 0.0);
      c->evaluate(pt, g.data());
      for (double v : g) worst = std::max(worst, v);
    }
  }
  return worst;
}

// iiwa14 under gravity within its joint limits, which are all inactive at the optimum: with them the
// solve takes at most 1.5 times the iterations of the same problem without them, to the same cost.
TEST(SqpInequalities, InactiveJointLimitsCostFewIterations) {
  const problems::Problem p = load_config("iiwa14_gravity_limits");
  problems::Problem free = p;
  free.constraints.clear();
  Solver without(free, sqp_options(free));
  ASSERT_EQ(without.solve(), Status::Solved) << without.solution().message();
  // The reference optimum holds every limit with room to spare: they are inactive.
  EXPECT_LT(largest_row(p, without.solution().x, without.solution().u), -0.1);

  Solver with(p, sqp_options(p));
  ASSERT_EQ(with.solve(), Status::Solved) << with.solution().message();
  EXPECT_LE(rel(with.solution().cost, without.solution().cost), 1e-8);
  EXPECT_LE(test::max_violation(p, with.solution().x, with.solution().u), 1e-8);
  EXPECT_LE(with.solution().iterations, 1.5 * without.solution().iterations)
      << with.solution().iterations << " with the limits, " << without.solution().iterations << " without";

  // Negative control: the duals at dual_init everywhere (central_start off) hold the first steps back
  // past the bound on the iterations, at the same optimum.
  solver::SolverOptions o = sqp_options(p);
  o.central_start = false;
  Solver flat(p, o);
  ASSERT_EQ(flat.solve(), Status::Solved) << flat.solution().message();
  EXPECT_LE(rel(flat.solution().cost, without.solution().cost), 1e-8);
  EXPECT_GT(flat.solution().iterations, 1.5 * without.solution().iterations);
}

// The cart-pole's force limit is active along the swing-up: the probe step runs into it, so every
// dual starts at dual_init and the solve is the one without the central start, step for step.
TEST(SqpInequalities, AnActiveBoundKeepsTheDualInitStart) {
  const problems::Problem p = load_config("cartpole_swingup");
  Solver central(p, sqp_options(p));
  ASSERT_EQ(central.solve(), Status::Solved) << central.solution().message();
  solver::SolverOptions o = sqp_options(p);
  o.central_start = false;
  Solver flat(p, o);
  ASSERT_EQ(flat.solve(), Status::Solved) << flat.solution().message();
  EXPECT_EQ(central.solution().iterations, flat.solution().iterations);
  EXPECT_EQ(central.solution().cost, flat.solution().cost);
  // The bound is active: some row ends at g = 0 (to the tolerance).
  EXPECT_GT(largest_row(p, central.solution().x, central.solution().u), -1e-6);
}

// A solve after set_initial_state + shift() continues the barrier: the slacks and duals are the
// shifted ones (their products stay at the last solve's complementarity) and mu starts there, not
// at mu_init or warm_start_mu.
TEST(SqpInequalities, ShiftKeepsTheBarrier) {
  const problems::Problem p = load_config("iiwa14_gravity_limits");
  Solver s(p, sqp_options(p));
  ASSERT_EQ(s.solve(), Status::Solved) << s.solution().message();
  const double complementarity = s.stats().per_iteration[static_cast<std::size_t>(s.stats().rows - 1)].complementarity;
  ASSERT_GT(complementarity, 0.0);
  const int nx = p.nx();
  std::vector<double> x1(s.solution().x.begin() + nx, s.solution().x.begin() + 2 * nx);
  x1[7] += 0.05;  // a small velocity disturbance
  s.set_initial_state(x1);
  s.shift();
  const std::vector<double> s_shifted = s.solution().s, z_shifted = s.solution().z;
  ASSERT_EQ(s.solve(), Status::Solved) << s.solution().message();
  const solver::IterationStats& first = s.stats().per_iteration[0];
  // The first iterate's complementarity is that of the shifted pairs: nothing was re-initialized.
  double largest = 0;
  for (std::size_t i = 0; i < s_shifted.size(); ++i) largest = std::max(largest, s_shifted[i] * z_shifted[i]);
  EXPECT_EQ(first.complementarity, largest);
  EXPECT_LE(first.complementarity, 10 * complementarity);
  // mu starts at the shifted mean complementarity, far below warm_start_mu (the old restart) and
  // mu_init (a cold start): the negative controls of the same comparison.
  EXPECT_GT(first.mu, 0.0);
  EXPECT_LE(first.mu, 10 * complementarity);
  EXPECT_LT(10 * complementarity, s.options().warm_start_mu);
  for (int r = 0; r < s.stats().rows; ++r)
    EXPECT_LT(s.stats().per_iteration[static_cast<std::size_t>(r)].mu, s.options().warm_start_mu) << "row " << r;
}

// A closed loop on the model itself (the plan's x_1 plus a disturbance at every step): warm solves after shift()
// reach the optimum of every step, which a cold solve from the same guess confirms, in fewer
// iterations in all than the cold solves.
void closed_loop_warm_beats_cold(const char* config, int state, double kick) {
  const problems::Problem p = load_config(config);
  Solver warm(p, sqp_options(p));
  ASSERT_EQ(warm.solve(), Status::Solved) << warm.solution().message();
  const int nx = p.nx(), nu = p.nu(), N = p.horizon.N;
  int warm_iterations = 0, cold_iterations = 0;
  for (int step = 1; step <= 8; ++step) {
    std::vector<double> x1(warm.solution().x.begin() + nx, warm.solution().x.begin() + 2 * nx);
    x1[static_cast<std::size_t>(state)] += kick;
    // The cold solver starts from the same shifted plan, with fresh multipliers, slacks and duals.
    std::vector<double> x(warm.solution().x.begin() + nx, warm.solution().x.end());
    x.insert(x.end(), warm.solution().x.end() - nx, warm.solution().x.end());
    std::vector<double> u(warm.solution().u.begin() + nu, warm.solution().u.end());
    u.insert(u.end(), warm.solution().u.end() - nu, warm.solution().u.end());
    ASSERT_EQ(x.size(), static_cast<std::size_t>(N + 1) * nx);
    warm.set_initial_state(x1);
    warm.shift();
    ASSERT_EQ(warm.solve(), Status::Solved) << config << " step " << step << ": " << warm.solution().message();
    problems::Problem q = p;
    q.x0 = x1;
    Solver cold(q, sqp_options(q));
    cold.set_initial_guess(x, u);
    ASSERT_EQ(cold.solve(), Status::Solved) << config << " step " << step << ": " << cold.solution().message();
    EXPECT_LE(rel(warm.solution().cost, cold.solution().cost), 1e-8) << config << " step " << step;
    warm_iterations += warm.solution().iterations;
    cold_iterations += cold.solution().iterations;
  }
  EXPECT_LT(warm_iterations, cold_iterations) << config;
}

TEST(SqpInequalities, WarmStartedClosedLoopTakesFewerIterationsThanCold) {
  closed_loop_warm_beats_cold("iiwa14_gravity_limits", 7, 0.05);  // limits inactive
  closed_loop_warm_beats_cold("cartpole_swingup", 1, 0.01);        // the force limit active
}

}  // namespace
}  // namespace knot

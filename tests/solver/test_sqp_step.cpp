// The step phases (sqp_step.cpp): regularization of a singular Hessian, the interior point's barrier
// and duals, and the line searches (filter, merit, full steps) reaching the same optimum.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

using solver::Globalization;
using solver::Solver;
using solver::Status;

double rel(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

// The LQR double integrator with a second control that moves nothing and costs nothing: the
// reduced Hessian is singular in that control, the Riccati backend reports it, and the solver
// regularizes. The optimum is the LQR one, and the idle control stays at zero.
TEST(SqpStep, SingularHessianIsRegularized) {
  const std::vector<std::string> idle = {"model.params.B=[[0.005, 0], [0.1, 0]]", "control_names=[a, idle]"};
  std::vector<std::string> free_idle = idle, weighted_idle = idle;
  free_idle.push_back("costs[1].weights=[0.1, 0]");
  weighted_idle.push_back("costs[1].weights=[0.1, 0.1]");

  const problems::Problem p = load_config("double_integrator_lqr", free_idle);
  Solver s(p, sqp_options(p));
  ASSERT_EQ(s.solve(), Status::Solved) << s.solution().message();
  EXPECT_GT(s.stats().regularized, 0);
  EXPECT_GE(s.stats().max_regularization, s.options().reg_init);
  EXPECT_LE(rel(s.solution().cost, 6.658716375255), 1e-9);
  for (int k = 0; k < p.horizon.N; ++k) EXPECT_EQ(s.solution().u_k(k)[1], 0.0);

  // Negative control: a weight on the idle control makes the Hessian definite; no regularization.
  const problems::Problem q = load_config("double_integrator_lqr", weighted_idle);
  Solver t(q, sqp_options(q));
  ASSERT_EQ(t.solve(), Status::Solved);
  EXPECT_EQ(t.stats().regularized, 0);
  EXPECT_EQ(t.stats().max_regularization, 0);
}

// At Solved the duals are positive, vanish on rows that are not active (complementarity against g
// re-evaluated from the terms), and the barrier parameter only decreased during the solve.
TEST(SqpStep, DualsAreComplementaryToTheConstraints) {
  for (const char* name : {"bryson_denham", "cartpole_swingup", "unicycle_obstacles", "pendulum_swingup"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    Solver s(p, sqp_options(p));
    ASSERT_EQ(s.solve(), Status::Solved) << s.solution().message();
    const solver::Solution& sol = s.solution();
    auto data = p.model->make_data();
    std::vector<double> g;
    double worst = 0, active = 0;
    for (int k = 0; k <= p.horizon.N; ++k) {
      const problems::StagePoint pt = stage_point(p, k, sol.x.data(), sol.u.data(), data.get());
      int row = s.inequality_offset(k);
      for (const auto& c : p.constraints) {
        if (!c->active(k, p.horizon.N) || c->kind() != problems::ConstraintKind::Inequality) continue;
        g.assign(static_cast<std::size_t>(c->dim()), 0.0);
        c->evaluate(pt, g.data());
        for (double gi : g) {
          const double z = sol.z[static_cast<std::size_t>(row++)];
          EXPECT_GT(z, 0);
          worst = std::max(worst, z * std::max(-gi, 0.0));
          active = std::max(active, z);
        }
      }
    }
    EXPECT_LE(worst, 1e-7);
    EXPECT_GT(active, 1e-3);  // some row is active: the check has something to see
    double mu = INFINITY;
    for (const solver::IterationStats& it : s.stats().history())
      if (it.mu > 0) {
        EXPECT_LE(it.mu, mu);
        mu = it.mu;
      }
  }
}

// On convex problems every globalization reaches the one optimum.
TEST(SqpStep, LineSearchesAgreeOnConvexProblems) {
  for (const char* name : {"bryson_denham", "double_integrator_rest_to_rest", "chain_of_masses"}) {
    SCOPED_TRACE(name);
    const problems::Problem p = load_config(name);
    double cost[3];
    int i = 0;
    for (Globalization g : {Globalization::Filter, Globalization::Merit, Globalization::None}) {
      solver::SolverOptions o = sqp_options(p);
      o.globalization = g;
      Solver s(p, o);
      ASSERT_EQ(s.solve(), Status::Solved) << solver::to_string(g) << ": " << s.solution().message();
      cost[i++] = s.solution().cost;
    }
    EXPECT_LE(rel(cost[1], cost[0]), 1e-8);
    EXPECT_LE(rel(cost[2], cost[0]), 1e-8);
  }
}

// The line searches shorten steps: on the end-effector tracking task the Gauss-Newton step overshoots
// and both line searches backtrack; step lengths stay within (0, 1].
TEST(SqpStep, LineSearchesShortenSteps) {
  const problems::Problem p = load_config("iiwa14_reach");
  for (Globalization g : {Globalization::Filter, Globalization::Merit}) {
    solver::SolverOptions o = sqp_options(p);
    o.globalization = g;
    o.max_iter = 20;
    Solver s(p, o);
    s.solve();
    int backtracks = 0;
    const auto rows = s.stats().history();
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
      backtracks += rows[i].backtracks;
      EXPECT_GT(rows[i].step, 0);
      EXPECT_LE(rows[i].step, 1);
    }
    EXPECT_GT(backtracks, 0) << solver::to_string(g);
  }
}

}  // namespace
}  // namespace knot::test

// The five systems written as expression models (tests/data/expression/) solve their configs to the
// optimum the built-in models reach, to 1e-9; a heavier pole (--set on the expression's parameter)
// moves that optimum (the negative control).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "test_sqp_common.hpp"
#include "source_tree.hpp"

namespace knot::test {
namespace {

using solver::Solver;
using solver::Status;

struct Result {
  Status status;
  double cost;
  std::vector<double> x, u;
};

// Tight stopping rules: the point (not only the cost, which is second order in it) is then fixed well
// below the 1e-9 the models are compared at, whatever the build's rounding.
Result solve(const problems::Problem& p) {
  solver::SolverOptions o = sqp_options(p);
  o.tol_stationarity = o.tol_feasibility = 1e-12;
  Solver s(p, o);
  const Status st = s.solve();
  return {st, s.solution().cost, s.solution().x, s.solution().u};
}

problems::Problem load_expression(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return problems::load_problem(std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / (name + ".yaml"), overrides);
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 1, d = 0;
  for (double v : b) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return a.size() == b.size() ? d / scale : INFINITY;
}

TEST(ExpressionSolve, SameOptimumAsTheBuiltInModels) {
  for (const char* name :
       {"cartpole_swingup", "pendulum_swingup", "acrobot_swingup", "unicycle_obstacles", "quadrotor_to_point"}) {
    SCOPED_TRACE(name);
    const Result e = solve(load_expression(name)), b = solve(load_config(name));
    ASSERT_EQ(b.status, Status::Solved);
    ASSERT_EQ(e.status, Status::Solved);
    EXPECT_LE(std::abs(e.cost - b.cost), 1e-9 * std::max(1.0, std::abs(b.cost)));
    EXPECT_LE(max_rel_diff(e.x, b.x), 1e-9);
    EXPECT_LE(max_rel_diff(e.u, b.u), 1e-9);
  }
}

TEST(ExpressionSolve, AHeavierPoleMovesTheOptimum) {
  const Result b = solve(load_config("cartpole_swingup"));
  const Result heavy = solve(load_expression("cartpole_swingup", {"model.params.pole_mass=0.11"}));
  ASSERT_EQ(heavy.status, Status::Solved);
  EXPECT_GT(max_rel_diff(heavy.u, b.u), 1e-4);
  const Result heavy_builtin = solve(load_config("cartpole_swingup", {"model.params.pole_mass=0.11"}));
  EXPECT_LE(max_rel_diff(heavy.u, heavy_builtin.u), 1e-9);
}

// The cart-pole's control cost written as a residual and its force limit as an expression
// constraint: the same optimum as the built-in terms.
TEST(ExpressionSolve, ResidualCostAndExpressionConstraintMatchTheBuiltInTerms) {
  const Result b = solve(load_config("cartpole_swingup"));
  const Result e = solve(load_config(
      "cartpole_swingup",
      {"costs[1]={name: force, type: residual, residual: [F], weights: [0.02], stage: running, scale_by_dt: true}",
       "costs[2]={name: terminal, type: residual, residual: [p, theta, v, omega], weights: [2000, 2000, 0.02, 0.02], "
       "stage: terminal}",
       "constraints[0]={name: force_limit, type: expression, expression: F, lower: [-80], upper: [80]}"}));
  ASSERT_EQ(e.status, Status::Solved);
  EXPECT_LE(std::abs(e.cost - b.cost), 1e-9 * std::max(1.0, std::abs(b.cost)));
  EXPECT_LE(max_rel_diff(e.u, b.u), 1e-9);
}

// The planar quadrotor of configs/ (written only as expressions): solved, its obstacle kept, and
// its states the RK4 rollout of its controls through the same equations written here in C++.
TEST(ExpressionSolve, PlanarQuadrotorConfig) {
  const problems::Problem p = load_config("planar_quadrotor");
  const Result r = solve(p);
  ASSERT_EQ(r.status, Status::Solved);
  const int N = p.horizon.N;
  const double dt = p.horizon.dt, mass = 0.5, arm = 0.15, inertia = 0.005, g = 9.81;
  const auto f = [&](const std::array<double, 6>& x, const double* u) {
    const double T = u[0] + u[1];
    return std::array<double, 6>{
        x[3], x[4], x[5], -T * std::sin(x[2]) / mass, T * std::cos(x[2]) / mass - g, arm * (u[1] - u[0]) / inertia};
  };
  std::array<double, 6> x{};
  double worst = 0;
  for (int k = 0; k < N; ++k) {
    const double* u = r.u.data() + 2 * k;
    const auto axpy = [](const std::array<double, 6>& a, double h, const std::array<double, 6>& b) {
      std::array<double, 6> c;
      for (int i = 0; i < 6; ++i) c[i] = a[i] + h * b[i];
      return c;
    };
    const auto k1 = f(x, u), k2 = f(axpy(x, dt / 2, k1), u), k3 = f(axpy(x, dt / 2, k2), u), k4 = f(axpy(x, dt, k3), u);
    for (int i = 0; i < 6; ++i) x[i] += dt / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    for (int i = 0; i < 6; ++i) worst = std::max(worst, std::abs(x[i] - r.x[6 * (k + 1) + i]));
    const double* s = r.x.data() + 6 * (k + 1);
    EXPECT_GE((s[0] - 1) * (s[0] - 1) + (s[1] - 0.6) * (s[1] - 0.6), 0.09 - 1e-7) << "knot " << k + 1;
  }
  EXPECT_LE(worst, 1e-6);
  EXPECT_NEAR(r.x[6 * N], 2, 0.05);
  EXPECT_NEAR(r.x[6 * N + 1], 1, 0.05);
}

}  // namespace
}  // namespace knot::test

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

namespace knot::test {
namespace {

using solver::Solver;
using solver::Status;

struct Result {
  Status status;
  double cost;
  std::vector<double> x, u;
};

Result solve(const problems::Problem& p) {
  Solver s(p, sqp_options(p));
  const Status st = s.solve();
  return {st, s.solution().cost, s.solution().x, s.solution().u};
}

problems::Problem load_expression(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return problems::load_problem(std::filesystem::path(KNOT_TEST_DATA_DIR) / "expression" / (name + ".yaml"),
                                overrides);
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

}  // namespace
}  // namespace knot::test

// The acceptance cross-check: on the nonlinear configs Knot's SQP and IPOPT, both started from the
// same default guess (x_k = x0, u = 0) on the identical discretized NLP, reach the same optimal cost
// to 1e-6 relative, each with KKT residuals <= 1e-6. Skipped when Knot was built without IPOPT.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "knot/problems/loader.hpp"
#include "knot/solver/ipopt.hpp"
#include "knot/solver/solver.hpp"
#include "source_tree.hpp"

namespace {

using namespace knot;

class SqpVsIpopt : public ::testing::TestWithParam<std::string> {};

TEST_P(SqpVsIpopt, SameOptimalCostFromTheSameGuess) {
  if (!solver::ipopt_available()) GTEST_SKIP() << "built without IPOPT";
  const problems::Problem p = problems::load_problem(std::string(knot::source_tree::configs_dir()) + "/" + GetParam() + ".yaml");

  solver::Solver sqp(p);
  ASSERT_EQ(sqp.solve(), solver::Status::Solved) << sqp.solution().message();
  const auto& last = sqp.stats().history().back();
  EXPECT_LE(last.stationarity, 1e-6);
  EXPECT_LE(last.feasibility, 1e-6);
  EXPECT_LE(last.complementarity, 1e-6);

  solver::IpoptOptions io;  // default guess, the SQP's own
  const solver::IpoptResult ip = solver::solve_with_ipopt(p, io);
  ASSERT_EQ(ip.status, solver::IpoptStatus::Solved) << ip.message;
  EXPECT_LE(ip.kkt_stationarity, 1e-6);
  EXPECT_LE(ip.constraint_violation, 1e-6);
  EXPECT_LE(ip.complementarity, 1e-6);

  const double rel = std::abs(sqp.solution().cost - ip.cost) / std::max(1.0, std::abs(ip.cost));
  EXPECT_LE(rel, 1e-6) << "knot " << sqp.solution().cost << " vs ipopt " << ip.cost;
  // Negative control: the comparison resolves a cost change of one part in 1e5.
  EXPECT_GT(std::abs(sqp.solution().cost * (1 + 1e-5) - ip.cost) / std::max(1.0, std::abs(ip.cost)), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Configs, SqpVsIpopt,
                         ::testing::Values("cartpole_swingup", "pendulum_swingup", "acrobot_swingup",
                                           "unicycle_obstacles", "chain_of_masses", "iiwa14_gravity_limits",
                                           "cartpole_swingup_smooth"));

}  // namespace

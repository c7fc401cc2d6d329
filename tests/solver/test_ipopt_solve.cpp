// solve_with_ipopt: the exact optima of the two double-integrator configs, every nonlinear config
// solved to a KKT point that is verified here from the returned x, u and multipliers with the
// NLP's own callbacks (not IPOPT's statistics), warm starts, limits, quiet output and argument
// checks. Without IPOPT only the NotAvailable contract is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/ipopt.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace knot::test {
namespace {

using problems::Problem;
using solver::IpoptHessian;
using solver::IpoptOptions;
using solver::IpoptResult;
using solver::IpoptStatus;
using solver::OcpNlp;

Problem config(const std::string& name) {
  return problems::load_problem(std::string(knot::source_tree::configs_dir()) + "/" + name + ".yaml");
}

IpoptOptions with(IpoptHessian hessian) {
  IpoptOptions o;
  o.hessian = hessian;
  return o;
}

#define SKIP_WITHOUT_IPOPT() \
  if (!solver::ipopt_available()) GTEST_SKIP() << "Knot was built without IPOPT"

TEST(IpoptSolve, AvailabilityMatchesTheBuild) {
#ifdef KNOT_HAS_IPOPT
  EXPECT_TRUE(solver::ipopt_available());
#else
  EXPECT_FALSE(solver::ipopt_available());
  const IpoptResult r = solver::solve_with_ipopt(config("double_integrator_lqr"));
  EXPECT_EQ(r.status, IpoptStatus::NotAvailable);
  EXPECT_NE(r.message.find("not available"), std::string::npos);
#endif
}

// KKT conditions of the NLP at (z, lambda), measured with OcpNlp's callbacks (IPOPT's Lagrangian
// f + lambda' g; inequality rows g <= 0 with lambda >= 0).
struct Kkt {
  double stationarity = 0;     // ||grad f + J' lambda||_inf / max(1, ||grad f||_inf)
  double equality = 0;         // max |g| over equality rows
  double inequality = 0;       // max(0, max g) over inequality rows
  double dual_sign = 0;        // max(0, -lambda) over inequality rows
  double complementarity = 0;  // max |lambda g| over inequality rows
};

Kkt check_kkt(const Problem& p, const IpoptResult& r) {
  OcpNlp nlp(p);
  const int n = nlp.num_variables(), m = nlp.num_constraints();
  std::vector<double> z(static_cast<std::size_t>(n));
  nlp.pack(r.x.data(), r.u.data(), z.data());
  EXPECT_EQ(r.lambda.size(), static_cast<std::size_t>(m));
  Vec grad(n), g(m), jv(nlp.jacobian_nonzeros());
  EXPECT_TRUE(nlp.gradient(z.data(), grad.data()));
  EXPECT_TRUE(nlp.constraints(z.data(), g.data()));
  EXPECT_TRUE(nlp.jacobian(z.data(), jv.data()));
  std::vector<int> rows(jv.size()), cols(jv.size());
  nlp.jacobian_structure(rows.data(), cols.data());
  Vec stat = grad;
  for (int e = 0; e < jv.size(); ++e) stat(cols[e]) += jv(e) * r.lambda[rows[e]];
  Kkt k;
  k.stationarity = stat.cwiseAbs().maxCoeff() / std::max(1.0, grad.cwiseAbs().maxCoeff());
  for (int i = 0; i < m; ++i) {
    if (nlp.constraint_is_equality(i)) {
      k.equality = std::max(k.equality, std::abs(g(i)));
    } else {
      k.inequality = std::max(k.inequality, g(i));
      k.dual_sign = std::max(k.dual_sign, -r.lambda[i]);
      k.complementarity = std::max(k.complementarity, std::abs(r.lambda[i] * g(i)));
    }
  }
  return k;
}

void expect_kkt(const Kkt& k) {
  EXPECT_LT(k.stationarity, 1e-8);
  EXPECT_LT(k.equality, 1e-8);
  EXPECT_LT(k.inequality, 1e-8);
  EXPECT_LT(k.dual_sign, 1e-8);
  EXPECT_LT(k.complementarity, 1e-8);
}

// Reference optima: shared/data/README.md, the exact discrete cases.
constexpr double kLqrCost = 6.658716375255;
constexpr double kRestToRestCost = 0.480192076831;

TEST(IpoptSolve, LqrOptimumWithEveryHessian) {
  SKIP_WITHOUT_IPOPT();
  const Problem p = config("double_integrator_lqr");
  for (IpoptHessian h : {IpoptHessian::FiniteDifference, IpoptHessian::GaussNewton, IpoptHessian::LimitedMemory}) {
    SCOPED_TRACE(static_cast<int>(h));
    const IpoptResult r = solver::solve_with_ipopt(p, with(h));
    EXPECT_TRUE(r.status == IpoptStatus::Solved || r.status == IpoptStatus::SolvedToAcceptableLevel) << r.message;
    EXPECT_NEAR(r.cost, kLqrCost, 1e-8 * kLqrCost);
    ASSERT_EQ(r.x.size(), 51u * 2);
    ASSERT_EQ(r.u.size(), 50u);
    EXPECT_NEAR(r.x[0], 1.0, 1e-10);
    EXPECT_NEAR(r.x[1], 0.0, 1e-10);
    EXPECT_NEAR(r.u[0], -2.58576, 1e-5);
    // The time split: the Hessian callback is part of the callbacks, which are part of the solve;
    // the quasi-Newton variant never calls it.
    EXPECT_GT(r.callback_seconds, 0.0);
    EXPECT_LE(r.callback_seconds, r.seconds);
    EXPECT_LE(r.hessian_seconds, r.callback_seconds);
    if (h == IpoptHessian::LimitedMemory)
      EXPECT_EQ(r.hessian_seconds, 0.0);
    else
      EXPECT_GT(r.hessian_seconds, 0.0);
  }
}

TEST(IpoptSolve, RestToRestOptimum) {
  SKIP_WITHOUT_IPOPT();
  const Problem p = config("double_integrator_rest_to_rest");
  const IpoptResult r = solver::solve_with_ipopt(p);
  EXPECT_EQ(r.status, IpoptStatus::Solved) << r.message;
  EXPECT_NEAR(r.cost, kRestToRestCost, 1e-8 * kRestToRestCost);
  EXPECT_NEAR(r.x[50 * 2], 1.0, 1e-9);
  EXPECT_NEAR(r.x[50 * 2 + 1], 0.0, 1e-9);
  expect_kkt(check_kkt(p, r));
}

// Each nonlinear config solves from the default guess to a verified KKT point. The line printed
// per config (cost, iterations, time, IPOPT's final residuals) is what Knot's SQP is compared with.
TEST(IpoptSolve, NonlinearConfigsReachVerifiedKktPoints) {
  SKIP_WITHOUT_IPOPT();
  for (const char* name : {"cartpole_swingup", "pendulum_swingup", "unicycle_obstacles", "acrobot_swingup",
                           "chain_of_masses", "iiwa14_gravity_limits"}) {
    SCOPED_TRACE(name);
    const Problem p = config(name);
    const IpoptResult r = solver::solve_with_ipopt(p);
    std::printf("%-22s cost %.12g  iterations %d  %.3f s  dual_inf %.1e  constr_viol %.1e  compl %.1e\n", name, r.cost,
                r.iterations, r.seconds, r.kkt_stationarity, r.constraint_violation, r.complementarity);
    EXPECT_EQ(r.status, IpoptStatus::Solved) << r.message;
    EXPECT_LT(r.kkt_stationarity, 1e-8);
    EXPECT_LT(r.constraint_violation, 1e-8);
    EXPECT_LT(r.complementarity, 1e-8);
    expect_kkt(check_kkt(p, r));
    // The reported cost is the objective at the returned trajectory.
    OcpNlp nlp(p);
    std::vector<double> z(static_cast<std::size_t>(nlp.num_variables()));
    nlp.pack(r.x.data(), r.u.data(), z.data());
    double f = kNaN;
    ASSERT_TRUE(nlp.objective(z.data(), f));
    EXPECT_EQ(f, r.cost);
  }
}

// Negative control for the KKT check: the same solution with one control moved, or with the
// multipliers of the dynamics dropped, fails it.
TEST(IpoptSolve, KktCheckRejectsAPerturbedSolution) {
  SKIP_WITHOUT_IPOPT();
  const Problem p = config("pendulum_swingup");
  const IpoptResult r = solver::solve_with_ipopt(p);
  ASSERT_EQ(r.status, IpoptStatus::Solved);
  IpoptResult moved = r;
  moved.u[10] += 1e-4;
  const Kkt a = check_kkt(p, moved);
  EXPECT_TRUE(a.stationarity > 1e-8 || a.equality > 1e-8);
  EXPECT_GT(a.equality, 1e-8);  // the dynamics no longer hold
  IpoptResult no_lambda = r;
  std::fill(no_lambda.lambda.begin(), no_lambda.lambda.end(), 0.0);
  EXPECT_GT(check_kkt(p, no_lambda).stationarity, 1e-8);
}

// The cross-check workflow for nonconvex problems, where two solvers may stop at different local
// minima: start IPOPT at the other solver's answer. Here the Gauss-Newton run's answer is
// confirmed by the Newton (finite-difference Hessian) run, which stays at it.
TEST(IpoptSolve, WarmStartFromASolutionStaysThere) {
  SKIP_WITHOUT_IPOPT();
  const Problem p = config("cartpole_swingup");
  const IpoptResult gn = solver::solve_with_ipopt(p, with(IpoptHessian::GaussNewton));
  ASSERT_EQ(gn.status, IpoptStatus::Solved) << gn.message;
  IpoptOptions o;
  o.mu_init = 1e-6;
  const IpoptResult warm = solver::solve_with_ipopt(p, o, &gn.x, &gn.u);
  EXPECT_EQ(warm.status, IpoptStatus::Solved) << warm.message;
  EXPECT_NEAR(warm.cost, gn.cost, 1e-8 * gn.cost);
  expect_kkt(check_kkt(p, warm));
}

TEST(IpoptSolve, IterationAndTimeLimitsAreStatuses) {
  SKIP_WITHOUT_IPOPT();
  const Problem p = config("acrobot_swingup");
  IpoptOptions o;
  o.max_iter = 2;
  IpoptResult r = solver::solve_with_ipopt(p, o);
  EXPECT_EQ(r.status, IpoptStatus::MaxIterations) << r.message;
  EXPECT_EQ(r.iterations, 2);
  EXPECT_EQ(r.x.size(), 101u * 4);
  o = IpoptOptions{};
  o.time_limit = 1e-9;  // spent before the first iteration ends
  r = solver::solve_with_ipopt(p, o);
  EXPECT_EQ(r.status, IpoptStatus::TimeLimit) << r.message;
}

// The NLP's size is checked before anything is allocated for it: over memory_limit, or over the
// nonzeros IPOPT's int indices count, it is refused with its sizes; just under it, it solves.
TEST(IpoptSolve, RefusesAnNlpOverTheMemoryLimitWithItsSize) {
  SKIP_WITHOUT_IPOPT();
  const Problem p = config("double_integrator_lqr");  // 706 nonzeros, about 22 KiB
  IpoptOptions o;
  o.memory_limit = 1e-6;  // about 1 KiB
  std::string key;
  const std::string msg = error_of([&] { solver::solve_with_ipopt(p, o); }, &key);
  EXPECT_EQ(key, "solver.memory_limit");
  EXPECT_NE(msg.find("double_integrator_lqr.yaml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at least 22.1 KiB (N = 50, nx = 2, nu = 1)"), std::string::npos) << msg;
  o.memory_limit = 1e-4;  // about 105 KiB: the control
  EXPECT_EQ(solver::solve_with_ipopt(p, o).status, IpoptStatus::Solved);

  // nx 2048, nu 1024, N 400: 4.41e9 nonzeros, more than an int counts, whatever the limit.
  std::string x0 = "[0";
  for (int i = 1; i < 2048; ++i) x0 += ", 0";
  const Problem big = problems::load_problem_from_string(R"(
name: wide
model: {type: double_integrator, params: {dim: 1024}}
horizon: {N: 400, dt: 0.1}
x0: )" + x0 + R"(]
costs:
  - {name: effort, type: control, weights: 1, stage: running}
)");
  o.memory_limit = 1e9;
  const std::string too_many = error_of([&] { solver::solve_with_ipopt(big, o); }, &key);
  EXPECT_EQ(key, "solver.memory_limit");
  EXPECT_NE(too_many.find("IPOPT indexes them with int"), std::string::npos) << too_many;
  EXPECT_NE(too_many.find("about 4.41e+09 (N = 400, nx = 2048, nu = 1024)"), std::string::npos) << too_many;
}

TEST(IpoptSolve, QuietByDefault) {
  SKIP_WITHOUT_IPOPT();
  const Problem p = config("double_integrator_rest_to_rest");
  testing::internal::CaptureStdout();
  solver::solve_with_ipopt(p);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  // Control: IPOPT's log reaches the same capture when asked for.
  IpoptOptions loud;
  loud.print_level = 5;
  testing::internal::CaptureStdout();
  solver::solve_with_ipopt(p, loud);
  const std::string log = testing::internal::GetCapturedStdout();
  EXPECT_NE(log.find("EXIT"), std::string::npos);
  EXPECT_EQ(log.find("Ipopt is released as open source"), std::string::npos);  // the banner stays off
}

TEST(IpoptSolve, RejectsBadOptionsAndGuesses) {
  const Problem p = config("double_integrator_lqr");
  IpoptOptions bad;
  bad.tol = 0;
  EXPECT_THROW(solver::solve_with_ipopt(p, bad), std::invalid_argument);
  const std::vector<double> short_x(10, 0.0), short_u(3, 0.0);
  EXPECT_THROW(solver::solve_with_ipopt(p, {}, &short_x), std::invalid_argument);
  EXPECT_THROW(solver::solve_with_ipopt(p, {}, nullptr, &short_u), std::invalid_argument);
  Problem broken = p;
  broken.horizon.N = 0;
  EXPECT_THROW(solver::solve_with_ipopt(broken), problems::ProblemError);
}

}  // namespace
}  // namespace knot::test

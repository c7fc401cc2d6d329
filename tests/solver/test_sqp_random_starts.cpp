// Robust globalization (issue 14): from 100 random cart-pole starts, Knot solves at least as many
// problems as IPOPT does on the identical NLP (the same discretization, started from the same
// default guess x_k = x0, u = 0), and every point Knot calls solved satisfies the constraints. Knot
// runs the config's settings (Gauss-Newton) with IPOPT's iteration budget (one start needs 153
// iterations, above the default max_iter of 100), and with the exact Hessian (IPOPT's own kind) at
// the default budget.
//
// Starts: x0 = (p, theta, v, omega) with p in [-0.5, 0.5] m, theta in [pi - 1, pi + 1] rad (the pole
// hanging, give or take a radian), v in [-1, 1] m/s, omega in [-2, 2] rad/s; uniform, mt19937_64
// seeded 20261201.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <iostream>
#include <vector>

#include "knot/solver/ipopt.hpp"
#include "knot/solver/solver.hpp"
#include "test_sqp_common.hpp"

namespace {

using namespace knot;
using knot::test::load_config;
using knot::test::max_violation;

// Under AddressSanitizer the first 30 starts keep the suite's time (the comparison is the same on them).
constexpr int kStarts = knot::test::kUnderSanitizer ? 30 : 100;

using knot::test::cartpole_starts;

struct Tally {
  int solved = 0;
  int iterations = 0;
};

// Knot with the config's own settings (modified by `edit`) from every start.
template <class Edit>
Tally knot_tally(const problems::Problem& base, const std::vector<std::array<double, 4>>& starts, Edit edit) {
  Tally t;
  for (const auto& x0 : starts) {
    problems::Problem p = base;
    p.x0.assign(x0.begin(), x0.end());
    solver::SolverOptions o = solver::from_settings(p.solver);
    edit(o);
    solver::Solver s(p, o);
    const solver::Status status = s.solve();
    t.iterations += s.solution().iterations;
    if (!solver::is_solved(status)) continue;
    ++t.solved;
    EXPECT_LE(max_violation(p, s.solution().x, s.solution().u), 1e-6) << "start " << x0[0] << ", " << x0[1];
  }
  return t;
}

TEST(SqpRandomStarts, DefaultsSolveAsManyCartPoleStartsAsIpopt) {
  if (!solver::ipopt_available()) GTEST_SKIP() << "built without IPOPT";
  const problems::Problem base = load_config("cartpole_swingup");
  const auto starts = cartpole_starts(kStarts);

  const int budget = solver::IpoptOptions{}.max_iter;
  const Tally knot = knot_tally(base, starts, [&](solver::SolverOptions& o) { o.max_iter = budget; });
  const Tally exact = knot_tally(base, starts, [](solver::SolverOptions& o) { o.hessian = solver::Hessian::Exact; });
  Tally ipopt;
  for (const auto& x0 : starts) {
    problems::Problem p = base;
    p.x0.assign(x0.begin(), x0.end());
    const solver::IpoptResult r = solver::solve_with_ipopt(p, solver::IpoptOptions{});
    ipopt.iterations += r.iterations;
    if (r.status == solver::IpoptStatus::Solved || r.status == solver::IpoptStatus::SolvedToAcceptableLevel)
      ++ipopt.solved;
  }
  std::cout << kStarts << " cart-pole starts: knot solved " << knot.solved << " (" << knot.iterations
            << " iterations), with the exact Hessian " << exact.solved << " (" << exact.iterations << "), ipopt "
            << ipopt.solved << " (" << ipopt.iterations << " iterations)\n";
  EXPECT_GE(knot.solved, ipopt.solved);
  EXPECT_GE(exact.solved, ipopt.solved);

  // Negative control: the count resolves a weaker solver (ten iterations are too few for most starts).
  const Tally short_run = knot_tally(base, starts, [](solver::SolverOptions& o) { o.max_iter = 10; });
  EXPECT_LT(short_run.solved, ipopt.solved);
}

}  // namespace

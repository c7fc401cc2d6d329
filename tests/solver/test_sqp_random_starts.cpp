// Robust globalization (issue 14): from 100 random cart-pole starts, Knot at its defaults (the
// config's settings: hessian auto, max_iter 100) solves at least as many problems as IPOPT does on
// the identical NLP (the same discretization, started from the same default guess x_k = x0, u = 0),
// and every point Knot calls solved satisfies the constraints. Gauss-Newton alone at the same budget
// loses a start (153 iterations in its linear tail): the negative control that the count resolves
// what the switch to the exact Hessian adds. The exact Hessian throughout (IPOPT's own kind) is
// counted as well.
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

// Knot with the config's own settings (modified by `edit`) from every start. Under hessian auto, an
// exact step that needed regularization hands the next one back to Gauss-Newton; `reverts` counts
// those hand-backs and `switches` the iterates that moved to the exact Hessian.
struct Tally {
  int solved = 0;
  int iterations = 0;
  int switches = 0;
  int reverts = 0;
};

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
    const auto rows = s.stats().history();
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
      if (rows[i].exact_hessian && !(i > 0 && rows[i - 1].exact_hessian)) ++t.switches;
      if (o.hessian == solver::Hessian::Auto && rows[i].exact_hessian && rows[i].regularization > 0) {
        ++t.reverts;
        EXPECT_FALSE(rows[i + 1].exact_hessian) << "start " << x0[0] << ", " << x0[1] << ", row " << i;
      }
    }
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

  const Tally knot = knot_tally(base, starts, [](solver::SolverOptions&) {});
  const Tally gauss_newton =
      knot_tally(base, starts, [](solver::SolverOptions& o) { o.hessian = solver::Hessian::GaussNewton; });
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
            << " iterations; " << knot.switches << " switches to the exact Hessian, " << knot.reverts
            << " back), Gauss-Newton alone " << gauss_newton.solved << " (" << gauss_newton.iterations
            << "), the exact Hessian " << exact.solved << " (" << exact.iterations << "), ipopt " << ipopt.solved
            << " (" << ipopt.iterations << " iterations)\n";
  ASSERT_EQ(solver::from_settings(base.solver).hessian, solver::Hessian::Auto);
  EXPECT_GE(knot.solved, ipopt.solved);
  EXPECT_GE(exact.solved, ipopt.solved);
  EXPECT_GT(knot.switches, 0);
  EXPECT_GT(knot.reverts, 0);  // the hand-back check above ran
  EXPECT_EQ(gauss_newton.switches, 0);
  if (kStarts == 100) {
    EXPECT_LT(gauss_newton.solved, ipopt.solved);  // the slow start is the 46th
  }

  // Negative control: the count resolves a weaker solver (ten iterations are too few for most starts).
  const Tally short_run = knot_tally(base, starts, [](solver::SolverOptions& o) { o.max_iter = 10; });
  EXPECT_LT(short_run.solved, ipopt.solved);
}

}  // namespace

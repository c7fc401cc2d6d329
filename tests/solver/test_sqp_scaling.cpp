// Badly scaled but feasible problems (issue 14): bryson_denham and double_integrator_rest_to_rest
// with their cost weights multiplied by 1e12, 1e8, 1e-8 and 1e-12 are solved, never declared
// infeasible, by every LQ backend with every line search, and reach the unscaled problem's optimum
// times the factor. The objective scaling (SolverOptions::objective_scale_*) does it: without it the
// same sweep fails (the negative control). On bdsv and pcg a few steps of the weight x1e12 and x1e8
// problems stall in the Schur refinement and are answered by the Riccati fallback (the second test).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "knot/solver/solver.hpp"
#include "test_sqp_common.hpp"

namespace {

using namespace knot;
using knot::test::load_config;
using solver::Globalization;
using solver::Linsys;

struct Outcome {
  int solved = 0, infeasible = 0, runs = 0;
};

Outcome sweep(bool scaling) {
  Outcome o;
  for (const char* name : {"bryson_denham", "double_integrator_rest_to_rest"}) {
    const problems::Problem unscaled = load_config(name);
    solver::Solver reference(unscaled);
    EXPECT_EQ(reference.solve(), solver::Status::Solved);
    for (const double factor : {1e12, 1e8, 1e-8, 1e-12}) {
      char weights[64];
      std::snprintf(weights, sizeof weights, "costs[0].weights=[%.17g]", factor);
      const problems::Problem p = load_config(name, {weights});
      for (const Linsys linsys : {Linsys::Riccati, Linsys::KktLdlt, Linsys::Bdsv, Linsys::Pcg})
        for (const Globalization g : {Globalization::Filter, Globalization::Merit, Globalization::None}) {
          SCOPED_TRACE(std::string(name) + " x" + weights + " " + solver::to_string(linsys) + " " + solver::to_string(g));
          solver::SolverOptions opt = solver::from_settings(p.solver);
          opt.lq.linsys = linsys;
          opt.globalization = g;
          if (!scaling) {
            opt.objective_scale_min = 1e-300;
            opt.objective_scale_max = 1e300;
          }
          solver::Solver s(p, opt);
          const solver::Status status = s.solve();
          ++o.runs;
          o.infeasible += status == solver::Status::Infeasible;
          if (!solver::is_solved(status)) continue;
          // Solved means the scaled problem's optimum, not the first feasible point.
          if (std::abs(s.solution().cost / factor - reference.solution().cost) <= 1e-6 * reference.solution().cost)
            ++o.solved;
        }
    }
  }
  return o;
}

TEST(SqpScaling, BadlyScaledFeasibleProblemsAreSolvedNotInfeasible) {
  const Outcome with = sweep(true);
  EXPECT_EQ(with.infeasible, 0);
  EXPECT_EQ(with.solved, with.runs);
  // Negative control: unscaled, the same sweep has infeasible verdicts and wrong optima.
  const Outcome without = sweep(false);
  EXPECT_GT(without.infeasible, 0);
  EXPECT_LT(without.solved, without.runs);
}

// bryson_denham with weights x1e12: bdsv and pcg solve it through the Riccati fallback on the steps
// whose Schur refinement stalls. Negative control: without the fallback those steps stall
// (MaxIterations in the history) and the solve ends unsolved (release builds) or goes on from a step
// accepted below the iterate's KKT error (bdsv under the sanitizers' -O1, other rounding).
TEST(SqpScaling, SchurBackendsTakeTheRiccatiFallbackWhereTheirRefinementStalls) {
  const problems::Problem p = load_config("bryson_denham", {"costs[0].weights=[1e12]"});
  for (const Linsys linsys : {Linsys::Bdsv, Linsys::Pcg}) {
    SCOPED_TRACE(solver::to_string(linsys));
    for (const bool fallback : {true, false}) {
      solver::SolverOptions opt = solver::from_settings(p.solver);
      opt.lq.linsys = linsys;
      opt.lq.riccati_fallback = fallback;
      solver::Solver s(p, opt);
      const solver::Status status = s.solve();
      if (fallback) {
        EXPECT_TRUE(solver::is_solved(status)) << s.solution().message();
        EXPECT_GT(s.stats().riccati_fallbacks, 0);
      } else {
        bool stalled = false;
        for (const solver::IterationStats& it : s.stats().history())
          stalled = stalled || it.lq_status == solver::LqStatus::MaxIterations;
        EXPECT_TRUE(stalled);
        EXPECT_EQ(s.stats().riccati_fallbacks, 0);
        if (!knot::test::kUnderSanitizer) {
          EXPECT_FALSE(solver::is_solved(status));
        }
      }
    }
  }
}

}  // namespace

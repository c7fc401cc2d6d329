// time_limit holds inside an SQP iteration: on every LQ backend a solve whose first iteration runs
// far past the limit (hundreds of regularization retries on the direct backends, one long pcg solve,
// thousands of line-search trials)
// returns TimeLimit within the limit plus a margin of 50 ms and one uninterruptible piece of work,
// measured in the same test, at the initial iterate, without allocating. Each case has its negative
// control: the same first iteration without a limit runs past that bound, so a check between
// iterations alone could not have held it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "alloc_counter.hpp"
#include "test_sqp_common.hpp"

namespace knot::test {
namespace {

using solver::Linsys;
using solver::Solver;
using solver::SolverOptions;
using solver::Status;

constexpr double kLimit = 0.005;  // seconds
constexpr double kMargin = 0.05;  // seconds, on top of one uninterruptible step
constexpr double kLong = 0.4;     // seconds the negative control's first iteration is sized to take
constexpr double kConcave = 1.0;  // curvature of ConcaveControl

// -1/2 w u'u on every running knot: the Gauss-Newton Hessian's R_k turns indefinite, so every
// backend reports it not positive definite and the SQP regularization retries until delta passes w.
class ConcaveControl final : public problems::CostTerm {
 public:
  ConcaveControl() : CostTerm(problems::TermInfo{"concave", problems::StageSet::Running, false}) {}
  std::string_view type() const override { return "concave_control"; }
  bool uses_control() const override { return true; }
  double value(const problems::StagePoint& p) const override { return -0.5 * kConcave * p.u[0] * p.u[0]; }
  double accumulate(const problems::StagePoint& p, const problems::CostBlocks& out) const override {
    if (out.gu) out.gu[0] -= kConcave * p.u[0];
    if (out.Huu) out.Huu[0] -= kConcave;
    return value(p);
  }
};

// 1/2 u'u, but NaN beyond |u| > kNanBeyond: the linearization at u = 0 is fine, and the line search
// rejects every trial point until alpha |du| falls below kNanBeyond (each trial a full evaluation).
constexpr double kNanBeyond = 1e-4;
class NanBeyondControl final : public problems::CostTerm {
 public:
  NanBeyondControl() : CostTerm(problems::TermInfo{"nan_beyond", problems::StageSet::Running, false}) {}
  std::string_view type() const override { return "nan_beyond_control"; }
  bool uses_control() const override { return true; }
  double value(const problems::StagePoint& p) const override {
    return std::abs(p.u[0]) > kNanBeyond ? std::nan("") : 0.5 * p.u[0] * p.u[0];
  }
  double accumulate(const problems::StagePoint& p, const problems::CostBlocks& out) const override {
    if (out.gu) out.gu[0] += p.u[0];
    if (out.Huu) out.Huu[0] += 1.0;
    return value(p);
  }
};

// The double integrator LQR (nx 2, nu 1) on a long horizon: one LQ solve is short, the whole
// solve long.
problems::Problem long_lqr(bool concave, int N) {
  problems::Problem p = load_config("double_integrator_lqr", {"horizon.N=" + std::to_string(N)});
  if (concave) p.costs.push_back(std::make_shared<ConcaveControl>());
  return p;
}

struct Timed {
  Status status = Status::NotRun;
  double seconds = 0;  // wall clock around solve()
  long allocations = 0;
};

Timed timed_solve(Solver& s) {
  Timed r;
  r.allocations = allocations_during([&] {
    const auto t0 = std::chrono::steady_clock::now();
    r.status = s.solve();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  return r;
}

// The solve stopped at the initial iterate (default guess x_k = x0, u_k = 0), whole.
void expect_initial_iterate(const Solver& s, const problems::Problem& p) {
  EXPECT_EQ(s.solution().iterations, 0);
  const auto& x = s.solution().x;
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], p.x0[i % p.x0.size()]) << "x[" << i << "]";
  for (double u : s.solution().u) ASSERT_EQ(u, 0.0);
  ASSERT_EQ(s.stats().history().size(), 1u);
  EXPECT_EQ(s.stats().history().back().step, 0.0);  // the cut step left no trace in the last row
}

// One case: options whose first iteration holds a long inner loop of `size` short pieces of work
// (configure sets the size), a calibration whose inner loop is short, and the check that follows.
//   step   the calibration's whole first iteration: the longest piece that cannot be cut (the
//          linearization, a direct LQ solve, a few pcg iterations, the line search)
//   bound  the limit + kMargin + step
// The size doubles until the first iteration without a limit takes more than 2 bound (negative
// control: a check between iterations alone would overrun); then with the limit the solve must
// return TimeLimit within the bound, from inside the inner loop (`phase` in the message), at the
// initial iterate, without allocating. The limit is kLimit, raised above twice the linearization
// time so that it fires inside the step rather than at the first iterate's check.
template <class Configure>
void check_inner_loop(const problems::Problem& p, const SolverOptions& base, const SolverOptions& calibration,
                      int size, Configure configure, const char* phase) {
  Solver calibrate(p, calibration);
  calibrate.solve();
  const double step = calibrate.stats().time.total;
  const double limit = std::max(kLimit, 2 * calibrate.stats().time.linearize);
  const double bound = limit + kMargin + step;

  SolverOptions o = base;
  o.max_iter = 1;
  Timed control;
  for (int doubling = 0; doubling < 12; ++doubling, size *= 2) {
    configure(o, size);
    Solver unlimited(p, o);
    control = timed_solve(unlimited);
    if (control.seconds > 2 * bound) break;
  }
  EXPECT_GT(control.seconds, 2 * bound) << "inner loop size " << size;

  o.time_limit = limit;
  o.max_iter = 100;
  // On a loaded machine a preempted linearization can outlast the limit, and then the first
  // iterate's own check ends the solve (within the bound too, but the inner loop untested): such
  // a run is repeated, up to five times.
  bool inner = false;
  for (int attempt = 0; attempt < 5 && !inner; ++attempt) {
    Solver limited(p, o);
    const Timed r = timed_solve(limited);
    EXPECT_EQ(r.status, Status::TimeLimit) << limited.solution().message();
    EXPECT_LE(r.seconds, bound) << limited.solution().message() << " (size " << size << ", step " << step << " s)";
    EXPECT_EQ(r.allocations, 0);
    expect_initial_iterate(limited, p);
    inner = limited.solution().message().find(phase) != std::string_view::npos;
  }
  EXPECT_TRUE(inner) << "the limit never fired inside the step (" << phase << ")";
}

// Direct backends: the concave term makes every LQ solve fail until the regularization delta passes
// kConcave; reg_growth sets the number of retries on the way, each a short LQ solve.
void check_regularization_retries(Linsys linsys) {
  SCOPED_TRACE(solver::to_string(linsys));
  const problems::Problem p = long_lqr(true, 2000);
  SolverOptions o = sqp_options(p);
  o.lq.linsys = linsys;
  SolverOptions few = o;
  few.max_iter = 1;
  few.reg_growth = 1e4;  // a handful of retries
  {
    Solver s(p, few);
    s.solve();
    ASSERT_GT(s.stats().lq_solves, 2) << "the concave term must make the LQ indefinite";
  }
  const auto retries = [](SolverOptions& opt, int n) { opt.reg_growth = std::pow(kConcave / opt.reg_init, 1.0 / n); };
  check_inner_loop(p, o, few, 50, retries, "(in the regularization retries)");
}

TEST(SqpTimeLimit, HoldsDuringRegularizationRetriesRiccati) { check_regularization_retries(Linsys::Riccati); }
TEST(SqpTimeLimit, HoldsDuringRegularizationRetriesBdsv) { check_regularization_retries(Linsys::Bdsv); }
TEST(SqpTimeLimit, HoldsDuringRegularizationRetriesKktLdlt) { check_regularization_retries(Linsys::KktLdlt); }

// Pcg: one linear solve at a tolerance it never meets (its recursive residual only stops when it
// underflows, thousands of iterations on this horizon); pcg_max_iters sets its length.
TEST(SqpTimeLimit, HoldsDuringOnePcgSolve) {
  const problems::Problem p = long_lqr(false, 8000);
  SolverOptions o = sqp_options(p);
  o.lq.linsys = Linsys::Pcg;
  o.lq.pcg_rel_tol = 1e-300;
  o.lq.pcg_direct_fallback = false;  // with it, pcg hands a solve this slow to the direct one early
  o.lq_forcing = 0;  // an inexact step's tolerance would loosen pcg's rule to one it meets
  SolverOptions few = o;
  few.max_iter = 1;
  few.lq.pcg_max_iters = 20;
  const auto iterations = [](SolverOptions& opt, int n) { opt.lq.pcg_max_iters = n; };
  check_inner_loop(p, o, few, 100, iterations, "(in the LQ solve)");
  // The loop that ran without a limit was pcg's own: it used every iteration it was allowed.
  SolverOptions capped = o;
  capped.max_iter = 1;
  capped.lq.pcg_max_iters = 400;
  Solver s(p, capped);
  s.solve();
  EXPECT_EQ(s.stats().lq_iterations, 400);
}

// Line search: the filter backtracks from alpha = 1 to about kNanBeyond / |du| (10 decades);
// backtrack sets the number of trials on the way.
TEST(SqpTimeLimit, HoldsDuringTheLineSearch) {
  problems::Problem p = long_lqr(false, 2000);
  p.costs.push_back(std::make_shared<NanBeyondControl>());
  SolverOptions o = sqp_options(p);
  o.lq.linsys = Linsys::Riccati;
  SolverOptions few = o;
  few.max_iter = 1;  // backtrack 0.5: about 15 trials
  {
    Solver s(p, few);
    s.solve();
    ASSERT_GT(s.stats().history()[0].backtracks, 5) << s.solution().message();
  }
  const auto trials = [](SolverOptions& opt, int n) { opt.backtrack = std::exp(-10.0 / n); };
  check_inner_loop(p, o, few, 100, trials, "(in the line search)");
}

// The checks only read the clock: a limit too far away to fire (pcg then runs its deadline variant)
// gives bitwise the iterates of no limit at all (which reads no clock and runs the code of before).
TEST(SqpTimeLimit, DistantLimitChangesNothing) {
  for (Linsys linsys : {Linsys::Riccati, Linsys::Pcg}) {
    SCOPED_TRACE(solver::to_string(linsys));
    const problems::Problem p = load_config("cartpole_swingup");
    SolverOptions o = sqp_options(p);
    o.lq.linsys = linsys;
    Solver a(p, o);
    o.time_limit = 1e6;
    Solver b(p, o);
    ASSERT_EQ(a.solve(), Status::Solved) << a.solution().message();
    ASSERT_EQ(b.solve(), Status::Solved) << b.solution().message();
    EXPECT_EQ(a.solution().iterations, b.solution().iterations);
    EXPECT_EQ(a.solution().x, b.solution().x);
    EXPECT_EQ(a.solution().u, b.solution().u);
  }
}

}  // namespace
}  // namespace knot::test

// Schur-complement backends (Bdsv, Pcg) against the dense KKT reference: convex problems of many
// sizes, both preconditioners, the regularization of singular stage costs and its refinement,
// non-convex stages, pcg's iteration limit and warm start.
#include <gtest/gtest.h>

#include "test_lq_common.hpp"

namespace knot::test {
namespace {

constexpr double kSolTol = 1e-9;        // Bdsv: relative error of x, u, lambda against the dense solve
constexpr double kBackwardTol = 1e-13;  // Bdsv: normwise backward error in the dense KKT system
// Pcg at rel_tol 1e-20 on r'z (about 1e-10 on the residual of S lambda = gamma): the error in x, u,
// lambda is that residual times the conditioning of S, below 1e-8 on these problems.
constexpr double kPcgSolTol = 1e-8;
// Regularized singular stage costs, refined to refine_tol = 1e-12 on the KKT residual
// (docs/solver-lq.md; measured below 2e-12 on these problems).
constexpr double kRegSolTol = 1e-10;

LqSolution solve_with(const LqData& d, const LqOptions& o, LqStatus* status = nullptr,
                      solver::LqStats* stats = nullptr) {
  LqSolver s(d.nx, d.nu, d.N, o);
  LqSolution sol = poisoned_solution(d.nx, d.nu, d.N);
  const LqStatus st = s.solve(d, sol);
  if (status != nullptr) *status = st;
  if (stats != nullptr) *stats = s.stats();
  return sol;
}

TEST(LqSchur, BdsvMatchesDenseKktOnRandomConvexProblems) {
  Rng rng(21);
  for (const LqSize& z : kLqSizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const DenseKkt kkt = dense_kkt(d);
    const LqSolution ref = unpack(kkt, dense_solve(kkt));
    LqStatus st;
    solver::LqStats stats;
    const LqSolution sol = solve_with(d, with(Linsys::Bdsv), &st, &stats);
    EXPECT_EQ(st, LqStatus::Solved);
    EXPECT_EQ(stats.linsys, Linsys::Bdsv);
    EXPECT_EQ(stats.regularized_stages, 0);
    EXPECT_LT(solution_error(sol, ref), kSolTol);
    EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
  }
}

TEST(LqSchur, PcgMatchesDenseKktToItsTolerance) {
  Rng rng(22);
  for (const solver::Preconditioner pre : {solver::Preconditioner::BlockJacobi, solver::Preconditioner::Stair}) {
    for (const LqSize& z : kLqSizes) {
      SCOPED_TRACE(testing::Message() << solver::to_string(pre) << " nx " << z.nx << " nu " << z.nu << " N " << z.N);
      const LqData d = random_lq(rng, z.nx, z.nu, z.N);
      const DenseKkt kkt = dense_kkt(d);
      const LqSolution ref = unpack(kkt, dense_solve(kkt));
      LqOptions o = with(Linsys::Pcg);
      o.preconditioner = pre;
      LqStatus st;
      solver::LqStats stats;
      const LqSolution sol = solve_with(d, o, &st, &stats);
      EXPECT_EQ(st, LqStatus::Solved);
      EXPECT_GT(stats.pcg_iterations, 0);
      EXPECT_LT(solution_error(sol, ref), kPcgSolTol);
    }
  }
}

// A looser pcg tolerance gives a visibly less accurate answer when nothing checks it (no refinement):
// the tolerance is what bounds pcg. With the refinement (the default) the KKT check restores the
// accuracy from the same loose pcg.
TEST(LqSchur, PcgToleranceControlsTheErrorAndTheKktCheckRestoresIt) {
  Rng rng(23);
  const LqData d = random_lq(rng, 8, 3, 30);
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  LqOptions loose = with(Linsys::Pcg);
  loose.pcg_rel_tol = 1e-4;
  loose.max_refinement = 0;
  loose.riccati_fallback = false;
  LqStatus st;
  EXPECT_GT(solution_error(solve_with(d, loose, &st), ref), kPcgSolTol);
  EXPECT_EQ(st, LqStatus::MaxIterations);
  loose.max_refinement = 10;
  solver::LqStats stats;
  EXPECT_LT(solution_error(solve_with(d, loose, &st, &stats), ref), kPcgSolTol);
  EXPECT_EQ(st, LqStatus::Solved);
  EXPECT_GT(stats.refinement_steps, 0);
}

// Without the direct fallback, pcg's iteration limit is a status; with it (the default) the same
// budget ends in a block Cholesky of S and an exact answer.
TEST(LqSchur, PcgIterationLimitIsAStatusOrTheDirectFallback) {
  Rng rng(24);
  const LqData d = random_lq(rng, 6, 2, 20);
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  LqOptions o = with(Linsys::Pcg);
  o.pcg_max_iters = 2;
  o.pcg_direct_fallback = false;
  o.riccati_fallback = false;
  LqStatus st;
  solver::LqStats stats;
  solve_with(d, o, &st, &stats);
  EXPECT_EQ(st, LqStatus::MaxIterations);
  EXPECT_EQ(stats.pcg_iterations, 2);
  EXPECT_FALSE(stats.direct_fallback);
  EXPECT_GT(stats.kkt_residual, 1e-6);  // what was achieved, reported
  o.pcg_direct_fallback = true;
  const LqSolution sol = solve_with(d, o, &st, &stats);
  EXPECT_EQ(st, LqStatus::Solved);
  EXPECT_TRUE(stats.direct_fallback);
  EXPECT_EQ(stats.pcg_iterations, 2);
  EXPECT_LT(solution_error(sol, ref), kSolTol);
}

// set_tolerance: the KKT residual is held to it on both Schur backends. The data is scaled like an
// interior point's (a barrier term of 1e10 on a few diagonal entries, velocity-like weights of 1e-3),
// where an unrefined bdsv answer misses 1e-12; refined to rounding it matches the dense solve, and a
// loose tolerance leaves a residual the check reports (negative control: the tolerance is what
// decides the accuracy).
TEST(LqSchur, SetToleranceBoundsTheKktResidual) {
  Rng rng(31);
  LqData d = random_lq(rng, 4, 1, 40);
  // Q_k <- D Q_k D, S_k <- S_k D with D = diag(1, w, 1, w): still convex, weights w^2 = 1e-3.
  const double w[4] = {1, std::sqrt(1e-3), 1, std::sqrt(1e-3)};
  for (int k = 0; k <= d.N; ++k) {
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) d.Q_k(k)[i + j * 4] *= w[i] * w[j];
    if (k < d.N)
      for (int j = 0; j < 4; ++j) d.S_k(k)[j] *= w[j];
    if (k % 7 == 3) d.Q_k(k)[0] += 1e10;
  }
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  for (const Linsys linsys : {Linsys::Bdsv, Linsys::Pcg}) {
    SCOPED_TRACE(solver::to_string(linsys));
    LqSolver s(d.nx, d.nu, d.N, with(linsys));
    LqSolution sol = poisoned_solution(d.nx, d.nu, d.N);
    s.set_tolerance(0);  // rounding level
    ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
    EXPECT_EQ(s.stats().kkt_tolerance, 0.0);
    const solver::LqResidual exact = solver::lq_kkt_residual(d, sol);
    EXPECT_LT(solution_error(sol, ref), kRegSolTol);
    EXPECT_LT(std::max(exact.stationarity, exact.feasibility), 1e-9);
    s.set_tolerance(1e-3);
    LqSolution loose = poisoned_solution(d.nx, d.nu, d.N);
    ASSERT_EQ(s.solve(d, loose), LqStatus::Solved);
    EXPECT_LE(s.stats().kkt_residual, 1e-3);
    EXPECT_EQ(s.stats().kkt_tolerance, 1e-3);
    s.set_tolerance(-1);  // back to the default refine_tol * scale
    ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
    EXPECT_GT(s.stats().kkt_tolerance, 0.0);
    EXPECT_LE(s.stats().kkt_residual, s.stats().kkt_tolerance);
  }
  // Negative control: bdsv with the check switched off (no refinement) at rounding-level tolerance
  // is reported stalled, with the residual it reached (the Riccati fallback off: it would answer).
  LqOptions o = with(Linsys::Bdsv);
  o.max_refinement = 0;
  o.riccati_fallback = false;
  LqSolver s(d.nx, d.nu, d.N, o);
  LqSolution sol(d.nx, d.nu, d.N);
  s.set_tolerance(0);
  const LqStatus st = s.solve(d, sol);
  const solver::LqResidual r = solver::lq_kkt_residual(d, sol);
  if (st == LqStatus::Solved) {
    ADD_FAILURE() << "the unrefined bdsv answer met rounding level; the data no longer exercises the check";
  } else {
    EXPECT_EQ(st, LqStatus::MaxIterations);
    EXPECT_NEAR(s.stats().kkt_residual, std::max(r.stationarity, r.feasibility), 1e-3 * s.stats().kkt_residual);
  }
}

// The state rows of stationarity, lambda_k - q_k - Q_k x_k - S_k'u_k - A_k'lambda_{k+1} (no last
// term at N): the largest |entry| over k, by Eigen from the data (independent of the backend's code).
double state_rows_residual(const LqData& d, const LqSolution& sol) {
  using Eigen::Map;
  using Eigen::MatrixXd;
  using Eigen::VectorXd;
  const int nx = d.nx, nu = d.nu;
  double worst = 0;
  for (int k = 0; k <= d.N; ++k) {
    VectorXd r = Map<const VectorXd>(sol.lambda_k(k), nx) - Map<const VectorXd>(d.q_k(k), nx) -
                 Map<const MatrixXd>(d.Q_k(k), nx, nx) * Map<const VectorXd>(sol.x_k(k), nx);
    if (k < d.N)
      r -= Map<const MatrixXd>(d.S_k(k), nu, nx).transpose() * Map<const VectorXd>(sol.u_k(k), nu) +
           Map<const MatrixXd>(d.A_k(k), nx, nx).transpose() * Map<const VectorXd>(sol.lambda_k(k + 1), nx);
    worst = std::max(worst, r.cwiseAbs().maxCoeff());
  }
  return worst;
}

// An inexact solve (a positive tolerance) reduces the answer to its controls: the states rolled
// forward through the dynamics and the costates backward, so the dynamics rows and the state rows
// hold to rounding and the residual the tolerance admits is in the control rows (a rollout of x
// alone leaves Q_k times the change of x in the state rows). Negative control: without the rollout
// the same loose pcg solve leaves it in the dynamics rows too.
TEST(LqSchur, InexactSolvesKeepTheDynamicsRowsExact) {
  Rng rng(32);
  const LqData d = random_lq(rng, 6, 2, 40);
  for (const bool rollout : {true, false}) {
    SCOPED_TRACE(rollout ? "rollout" : "no rollout");
    LqOptions o = with(Linsys::Pcg);
    o.inexact_rollout = rollout;
    LqSolver s(d.nx, d.nu, d.N, o);
    LqSolution sol = poisoned_solution(d.nx, d.nu, d.N);
    s.set_tolerance(1e-3);
    ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
    const solver::LqResidual r = solver::lq_kkt_residual(d, sol);
    EXPECT_LE(std::max(r.stationarity, r.feasibility), 1e-3);
    if (rollout) {
      EXPECT_LT(r.feasibility, 1e-12);
      EXPECT_LT(state_rows_residual(d, sol), 1e-11);
      EXPECT_GT(r.stationarity, 1e-10);  // what the tolerance admitted, in the control rows
    } else {
      EXPECT_GT(r.feasibility, 1e-10);
    }
  }
}

TEST(LqSchur, PcgWarmStartFromTheSolutionNeedsFewIterations) {
  Rng rng(25);
  const LqData d = random_lq(rng, 7, 3, 25);
  LqOptions o = with(Linsys::Pcg);
  LqSolver cold(7, 3, 25, o);
  LqSolution sol(7, 3, 25);
  ASSERT_EQ(cold.solve(d, sol), LqStatus::Solved);
  const int cold_iters = cold.stats().pcg_iterations;
  o.pcg_warm_start = true;
  LqSolver warm(7, 3, 25, o);
  ASSERT_EQ(warm.solve(d, sol), LqStatus::Solved);  // starts from the converged lambda
  EXPECT_GT(cold_iters, 5);
  EXPECT_LT(warm.stats().pcg_iterations, cold_iters / 2);
}

TEST(LqSchur, SingularStageCostsAreRegularizedAndRefined) {
  Rng rng(26);
  for (const Linsys linsys : {Linsys::Bdsv, Linsys::Pcg}) {
    for (const Cost cost : {Cost::ZeroStateWeights, Cost::TerminalOnly}) {
      for (const LqSize& z : {LqSize{4, 1, 50}, LqSize{7, 3, 20}, LqSize{12, 4, 30}, LqSize{1, 1, 10}}) {
        SCOPED_TRACE(testing::Message() << solver::to_string(linsys) << " cost " << static_cast<int>(cost) << " nx "
                                        << z.nx << " N " << z.N);
        const LqData d = random_lq(rng, z.nx, z.nu, z.N, cost);
        const DenseKkt kkt = dense_kkt(d);
        const LqSolution ref = unpack(kkt, dense_solve(kkt));
        LqStatus st;
        solver::LqStats stats;
        const LqSolution sol = solve_with(d, with(linsys), &st, &stats);
        EXPECT_EQ(st, LqStatus::Solved);
        EXPECT_GT(stats.regularized_stages, 0);
        EXPECT_GT(stats.regularization, 0.0);
        EXPECT_GT(stats.refinement_steps, 0);
        EXPECT_LT(stats.kkt_residual, 1e-10);
        EXPECT_LT(solution_error(sol, ref), kRegSolTol);
      }
    }
  }
}

// Without refinement the regularized answer misses the documented accuracy and says so: the
// refinement is what makes it exact. With the Riccati fallback (the default) the same stalled solve
// is answered by the Riccati recursion, exact to rounding.
TEST(LqSchur, RegularizedAnswerWithoutRefinementIsNotSolved) {
  Rng rng(27);
  const LqData d = random_lq(rng, 6, 2, 20, Cost::TerminalOnly);
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  LqOptions o = with(Linsys::Bdsv);
  o.max_refinement = 0;
  o.riccati_fallback = false;
  LqStatus st;
  solver::LqStats stats;
  LqSolution sol = solve_with(d, o, &st, &stats);
  EXPECT_EQ(st, LqStatus::MaxIterations);
  EXPECT_GT(stats.regularized_stages, 0);
  EXPECT_EQ(stats.refinement_steps, 0);
  EXPECT_FALSE(stats.riccati_fallback);
  EXPECT_GT(solution_error(sol, ref), kRegSolTol);
  o.riccati_fallback = true;
  sol = solve_with(d, o, &st, &stats);
  EXPECT_EQ(st, LqStatus::Solved);
  EXPECT_TRUE(stats.riccati_fallback);
  EXPECT_EQ(stats.linsys, Linsys::Bdsv);
  EXPECT_LT(solution_error(sol, ref), kSolTol);
}

// An indefinite stage block G_k: the Schur complement cannot be formed, but the problem may still be
// convex on the dynamics (Riccati's R_k + B_k'P_{k+1}B_k positive definite). With the Riccati
// fallback both backends return Riccati's status for every curvature -c of R_6 and, where solved,
// the dense KKT solve's answer; the sweep has both verdicts. Without it (the negative control) every
// one of them is NotPositiveDefinite at stage 6.
TEST(LqSchur, IndefiniteStageBlockGetsRiccatisVerdict) {
  Rng rng(28);
  const LqData base = random_lq(rng, 4, 2, 10);
  int solved = 0, not_pd = 0;
  for (const double c : {0.05, 0.3, 1.0, 3.0, 1e3}) {
    LqData d = base;
    put(-c * Mat::Identity(2, 2), d.R_k(6));
    LqStatus ref_status;
    solver::LqStats ref_stats;
    solve_with(d, with(Linsys::Riccati), &ref_status, &ref_stats);
    solved += ref_status == LqStatus::Solved;
    not_pd += ref_status == LqStatus::NotPositiveDefinite;
    for (const Linsys linsys : {Linsys::Bdsv, Linsys::Pcg}) {
      SCOPED_TRACE(testing::Message() << solver::to_string(linsys) << " c " << c);
      LqStatus st;
      solver::LqStats stats;
      const LqSolution sol = solve_with(d, with(linsys), &st, &stats);
      EXPECT_EQ(st, ref_status);
      EXPECT_TRUE(stats.riccati_fallback);
      EXPECT_EQ(stats.failed_stage, ref_stats.failed_stage);
      if (ref_status == LqStatus::Solved) {
        const DenseKkt kkt = dense_kkt(d);
        EXPECT_LT(solution_error(sol, unpack(kkt, dense_solve(kkt))), kSolTol);
      }
      LqOptions off = with(linsys);
      off.riccati_fallback = false;
      solve_with(d, off, &st, &stats);
      EXPECT_EQ(st, LqStatus::NotPositiveDefinite);
      EXPECT_EQ(stats.failed_stage, 6);
      EXPECT_FALSE(stats.riccati_fallback);
    }
  }
  EXPECT_GT(solved, 0);
  EXPECT_GT(not_pd, 0);
}

TEST(LqSchur, NonFiniteDataIsReported) {
  Rng rng(29);
  const LqData clean = random_lq(rng, 5, 2, 8);
  for (const Linsys linsys : {Linsys::Bdsv, Linsys::Pcg}) {
    for (int which = 0; which < 3; ++which) {
      LqData d = clean;
      (which == 0 ? d.Q[3] : which == 1 ? d.c[7] : d.A[11]) = kNaN;
      LqStatus st;
      solve_with(d, with(linsys), &st);
      EXPECT_EQ(st, LqStatus::NonFinite) << solver::to_string(linsys) << " " << which;
    }
    LqStatus st;
    solve_with(clean, with(linsys), &st);
    EXPECT_EQ(st, LqStatus::Solved);
  }
}

// nx beyond the fixed-size instantiations runs the run-time kernels.
TEST(LqSchur, RunTimeSizesMatchDenseKkt) {
  Rng rng(30);
  for (const LqSize& z : {LqSize{17, 9, 3}, LqSize{20, 2, 4}}) {
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const DenseKkt kkt = dense_kkt(d);
    const LqSolution ref = unpack(kkt, dense_solve(kkt));
    LqStatus st;
    const LqSolution sol = solve_with(d, with(Linsys::Bdsv), &st);
    EXPECT_EQ(st, LqStatus::Solved);
    EXPECT_LT(solution_error(sol, ref), kSolTol);
  }
}

}  // namespace
}  // namespace knot::test

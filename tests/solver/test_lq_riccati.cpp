// Riccati backend against the dense KKT reference: random convex problems of many sizes, PSD costs,
// a non-convex stage, non-finite data.
#include <gtest/gtest.h>

#include <utility>

#include "knot/linalg/dense/gemm_tile.hpp"  // KNOT_GEMM_TILE_SIMD: the square-root path needs it
#include "test_lq_common.hpp"

namespace knot::test {
namespace {

constexpr double kSolTol = 1e-9;       // relative error of x, u, lambda against the dense solve
constexpr double kBackwardTol = 1e-13;  // normwise backward error in the dense KKT system

LqSolution solve_riccati(const LqData& d, LqStatus* status = nullptr) {
  LqSolver s(d.nx, d.nu, d.N, with(Linsys::Riccati));
  LqSolution sol = poisoned_solution(d.nx, d.nu, d.N);
  const LqStatus st = s.solve(d, sol);
  if (status != nullptr) *status = st;
  return sol;
}

TEST(LqRiccati, MatchesDenseKktOnRandomConvexProblems) {
  Rng rng(11);
  for (const LqSize& z : kLqSizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const DenseKkt kkt = dense_kkt(d);
    const LqSolution ref = unpack(kkt, dense_solve(kkt));
    LqStatus st;
    const LqSolution sol = solve_riccati(d, &st);
    EXPECT_EQ(st, LqStatus::Solved);
    EXPECT_LT(solution_error(sol, ref), kSolTol);
    EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
  }
}

TEST(LqRiccati, PerturbedSolutionFailsTheSameChecks) {
  Rng rng(12);
  const LqData d = random_lq(rng, 6, 3, 12);
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  LqSolution sol = solve_riccati(d);
  ASSERT_LT(solution_error(sol, ref), kSolTol);
  ASSERT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
  for (double* entry : {&sol.u[4], &sol.x[20], &sol.lambda[30]}) {
    const double saved = *entry;
    *entry += 1e-7 * std::max(1.0, std::abs(saved));
    EXPECT_GT(solution_error(sol, ref), kSolTol);
    EXPECT_GT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
    *entry = saved;
  }
}

TEST(LqRiccati, ExactForPositiveSemidefiniteCosts) {
  Rng rng(13);
  for (const Cost cost : {Cost::ZeroStateWeights, Cost::TerminalOnly}) {
    for (const LqSize& z : {LqSize{4, 1, 50}, LqSize{7, 3, 20}, LqSize{12, 4, 30}, LqSize{1, 1, 10}}) {
      SCOPED_TRACE(testing::Message() << "cost " << static_cast<int>(cost) << " nx " << z.nx << " N " << z.N);
      const LqData d = random_lq(rng, z.nx, z.nu, z.N, cost);
      const DenseKkt kkt = dense_kkt(d);
      const LqSolution ref = unpack(kkt, dense_solve(kkt));
      LqStatus st;
      const LqSolution sol = solve_riccati(d, &st);
      EXPECT_EQ(st, LqStatus::Solved);
      EXPECT_LT(solution_error(sol, ref), kSolTol);
      EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
    }
  }
}

// R_k + B_k' P_{k+1} B_k indefinite at one stage: the recursion stops there with a status.
TEST(LqRiccati, NonConvexStageIsNotPositiveDefinite) {
  Rng rng(14);
  for (const int bad : {0, 5, 9}) {
    LqData d = random_lq(rng, 4, 2, 10, Cost::TerminalOnly);
    put(-50.0 * Mat::Identity(2, 2), d.R_k(bad));
    LqSolver s(4, 2, 10, with(Linsys::Riccati));
    LqSolution sol(4, 2, 10);
    EXPECT_EQ(s.solve(d, sol), LqStatus::NotPositiveDefinite);
    EXPECT_EQ(s.stats().failed_stage, bad);
  }
}

TEST(LqRiccati, NonFiniteDataIsReported) {
  Rng rng(15);
  const LqData clean = random_lq(rng, 5, 2, 8);
  // A NaN in R stops the Cholesky; a NaN in c or x_init only reaches the result.
  for (int which = 0; which < 3; ++which) {
    LqData d = clean;
    (which == 0 ? d.R[3] : which == 1 ? d.c[7] : d.x_init[1]) = kNaN;
    LqSolver s(5, 2, 8, with(Linsys::Riccati));
    LqSolution sol(5, 2, 8);
    EXPECT_EQ(s.solve(d, sol), LqStatus::NonFinite) << which;
  }
  LqSolver s(5, 2, 8, with(Linsys::Riccati));
  LqSolution sol(5, 2, 8);
  EXPECT_EQ(s.solve(clean, sol), LqStatus::Solved);
}

// The solver keeps no state between solves that could leak into the next answer.
TEST(LqRiccati, RepeatedSolvesAreIdentical) {
  Rng rng(16);
  const LqData d1 = random_lq(rng, 9, 4, 15), d2 = random_lq(rng, 9, 4, 15);
  LqSolver s(9, 4, 15, with(Linsys::Riccati));
  LqSolution a(9, 4, 15), b(9, 4, 15), c(9, 4, 15);
  ASSERT_EQ(s.solve(d1, a), LqStatus::Solved);
  ASSERT_EQ(s.solve(d2, b), LqStatus::Solved);
  ASSERT_EQ(s.solve(d1, c), LqStatus::Solved);
  EXPECT_EQ(a.x, c.x);
  EXPECT_EQ(a.u, c.u);
  EXPECT_EQ(a.lambda, c.lambda);
  EXPECT_NE(a.x, b.x);
}

// Sizes beyond the fixed-size instantiations (nx > 16, nu > 8) run the run-time kernels.
TEST(LqRiccati, RunTimeSizesMatchDenseKkt) {
  Rng rng(17);
  for (const LqSize& z : {LqSize{17, 9, 3}, LqSize{20, 2, 4}, LqSize{28, 7, 3}, LqSize{3, 10, 5}}) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const DenseKkt kkt = dense_kkt(d);
    const LqSolution ref = unpack(kkt, dense_solve(kkt));
    LqStatus st;
    const LqSolution sol = solve_riccati(d, &st);
    EXPECT_EQ(st, LqStatus::Solved);
    EXPECT_LT(solution_error(sol, ref), kSolTol);
  }
}

// ---- The square-root recursion and its fallback

// The fixed sizes lq_riccati.cpp's kSqrt serves by the square-root recursion (state and control
// padded to multiples of 4 inside it); SquareRootPathServesItsSizes checks that this copy matches.
// At run-time sizes (nx off the list or nu > 8) lq_riccati.cpp's sqrt_runtime.
bool square_root_served(int nx, int nu) {
  const bool fixed = (nx <= 16 || nx == 20 || nx == 24 || nx == 28 || nx == 32) && nu <= 8;
  if (!KNOT_GEMM_TILE_SIMD) return false;
  if (!fixed) {
    const int w = (nx + nu + 3) / 4 * 4 - nx - nu;  // the run-time layout's padding
    if (nu >= 9) return nx >= 3;
    if (nx >= 32) return true;
    if (nx >= 25) return !(w == 3 && nu <= 3);
    return w == 0 || (w <= 2 && nu >= 5) || nu == 8;
  }
  return nx >= 15 || (nx >= 11 && nu >= 3) || (nx >= 8 && nu == 4) || (nx >= 7 && nu >= 7);
}

// Every size the square-root path serves up to nx = 16 (those with nx % 4 != 0 pad their state), and
// nx = 20..32 with a few nu, against the dense KKT solve, for positive definite costs (square root
// throughout) and semidefinite ones (P singular: the classical restart); resolve() afterwards reuses
// whichever recursion ran. The solutions start poisoned with NaN, so a padded product that read an
// entry of the next stage before it is written (x_{k+1} while x_k is used) would show as NaN.
TEST(LqRiccati, SquareRootPathMatchesDenseKkt) {
  Rng rng(5);
  int sizes = 0;
  for (const int nx : {7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 28, 32})
    for (int nu = 1; nu <= 8; ++nu) {
      if (!square_root_served(nx, nu) || (nx > 16 && nu != 1 && nu != 3 && nu != 7 && nu != 8)) continue;
      ++sizes;
      for (const int N : {1, 3, 9})
        for (const Cost cost : {Cost::PositiveDefinite, Cost::ZeroStateWeights, Cost::TerminalOnly}) {
          SCOPED_TRACE(testing::Message() << "nx " << nx << " nu " << nu << " N " << N << " cost "
                                          << static_cast<int>(cost));
          const LqData d = random_lq(rng, nx, nu, N, cost);
          const DenseKkt kkt = dense_kkt(d);
          LqSolver s(nx, nu, N, with(Linsys::Riccati));
          LqSolution sol = poisoned_solution(nx, nu, N);
          ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
          EXPECT_LT(solution_error(sol, unpack(kkt, dense_solve(kkt))), kSolTol);
          EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
          LqData e = random_lq(rng, nx, nu, N, cost);
          e.A = d.A, e.B = d.B, e.Q = d.Q, e.R = d.R, e.S = d.S;
          const DenseKkt kkt_e = dense_kkt(e);
          LqSolution again = poisoned_solution(nx, nu, N);
          ASSERT_EQ(s.resolve(e, again), LqStatus::Solved);
          EXPECT_LT(solution_error(again, unpack(kkt_e, dense_solve(kkt_e))), kSolTol);
        }
    }
  EXPECT_EQ(sizes, KNOT_GEMM_TILE_SIMD ? 11 + 24 + 16 + 16 : 0);
}

// Which recursion ran, seen from outside (and as LqStats::square_root reports it): the square-root
// one factors Q_N from its lower triangle alone, the classical one multiplies by all of P_N = Q_N.
// So with Q_N's strict upper triangle
// changed (data outside the contract, which asks for Q_N symmetric), a solve still matches the dense
// KKT solve of the symmetric data exactly when the square root ran, and every other size (the
// negative control) misses it. This pins the sizes served and catches a square-root path that no
// longer runs (say, a padding whose unit pivots came out non-positive: the silent classical restart
// would still give right answers to every other test).
TEST(LqRiccati, SquareRootPathServesItsSizes) {
  Rng rng(8);
  int served = 0;
  // From nx = 2: nx = 1 has no upper triangle to change.
  for (const int nx : {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 20, 21, 23, 24, 28, 32, 33})
    for (const int nu : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12}) {
      SCOPED_TRACE(testing::Message() << "nx " << nx << " nu " << nu);
      const int N = 3;
      const LqData d = random_lq(rng, nx, nu, N);
      const DenseKkt kkt = dense_kkt(d);
      const LqSolution ref = unpack(kkt, dense_solve(kkt));
      LqData e = d;
      double* QN = e.Q_k(N);
      for (int j = 1; j < nx; ++j)
        for (int i = 0; i < j; ++i) QN[i + j * nx] += 0.25;
      LqSolver s(nx, nu, N, with(Linsys::Riccati));
      LqSolution sol = poisoned_solution(nx, nu, N);
      const LqStatus st = s.solve(e, sol);
      const bool matches = st == LqStatus::Solved && solution_error(sol, ref) < kSolTol;
      const bool expected = square_root_served(nx, nu);
      EXPECT_EQ(matches, expected);
      EXPECT_EQ(s.stats().square_root, expected);  // what LqStats reports is what ran
      served += expected;
    }
  EXPECT_EQ(served, KNOT_GEMM_TILE_SIMD ? 11 + 24 + 16 + 32 + 66 : 0);  // 66 run-time sizes
}

// A non-convex stage still names its stage (the classical restart reports it), for semidefinite and
// definite costs; NaN gives NonFinite, and the same solver then solves clean data. A padded size
// (nx = 13, 15) and a multiple of 4 each.
TEST(LqRiccati, SquareRootPathStatuses) {
  Rng rng(6);
  for (const auto& [nx, nu] : {std::pair{28, 7}, std::pair{13, 4}}) {
    ASSERT_TRUE(square_root_served(nx, nu) || !KNOT_GEMM_TILE_SIMD);
    for (const int bad : {0, 5, 9}) {
      for (const Cost cost : {Cost::TerminalOnly, Cost::PositiveDefinite}) {
        LqData d = random_lq(rng, nx, nu, 10, cost);
        put(-50.0 * Mat::Identity(nu, nu), d.R_k(bad));
        LqSolver s(nx, nu, 10, with(Linsys::Riccati));
        LqSolution sol(nx, nu, 10);
        EXPECT_EQ(s.solve(d, sol), LqStatus::NotPositiveDefinite) << nx;
        EXPECT_EQ(s.stats().failed_stage, bad) << nx;
      }
    }
  }
  for (const auto& [nx, nu] : {std::pair{24, 3}, std::pair{15, 3}}) {
    ASSERT_TRUE(square_root_served(nx, nu) || !KNOT_GEMM_TILE_SIMD);
    const LqData clean = random_lq(rng, nx, nu, 8);
    LqSolver s(nx, nu, 8, with(Linsys::Riccati));
    for (int which = 0; which < 4; ++which) {
      LqData d = clean;
      (which == 0 ? d.R[4] : which == 1 ? d.c[7] : which == 2 ? d.A[40] : d.x_init[1]) = kNaN;
      LqSolution sol(nx, nu, 8);
      EXPECT_EQ(s.solve(d, sol), LqStatus::NonFinite) << nx << " " << which;
    }
    LqSolution sol(nx, nu, 8);
    ASSERT_EQ(s.solve(clean, sol), LqStatus::Solved);
    const DenseKkt kkt = dense_kkt(clean);
    EXPECT_LT(solution_error(sol, unpack(kkt, dense_solve(kkt))), kSolTol) << nx;
  }
}

// One solver alternating between the two recursions (they share a workspace), each followed by a
// resolve(); nx = 14 pads its state.
TEST(LqRiccati, SquareRootAndClassicalAlternate) {
  Rng rng(9);
  for (const int nx : {14, 20, 28}) {
    const int nu = 5, N = 9;
    LqSolver s(nx, nu, N, with(Linsys::Riccati));
    for (int rep = 0; rep < 6; ++rep) {
      const Cost cost = rep % 2 == 0 ? Cost::ZeroStateWeights : Cost::PositiveDefinite;
      const LqData d = random_lq(rng, nx, nu, N, cost);
      const DenseKkt kkt = dense_kkt(d);
      LqSolution sol = poisoned_solution(nx, nu, N);
      ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
      EXPECT_LT(solution_error(sol, unpack(kkt, dense_solve(kkt))), kSolTol) << rep;
      LqData e = random_lq(rng, nx, nu, N, cost);
      e.A = d.A, e.B = d.B, e.Q = d.Q, e.R = d.R, e.S = d.S;
      const DenseKkt kkt_e = dense_kkt(e);
      LqSolution again = poisoned_solution(nx, nu, N);
      ASSERT_EQ(s.resolve(e, again), LqStatus::Solved);
      EXPECT_LT(solution_error(again, unpack(kkt_e, dense_solve(kkt_e))), kSolTol) << rep;
    }
  }
}

// LqOptions::reuse_dynamics with dynamics_unchanged(): a solve that reuses the stage transposes
// gives the bits of a solver that forms them afresh, also after the square root gave way to the
// classical recursion (whose workspace overlaps the transposes); with B changed behind its back the
// answer differs (the negative control: the transposes are really reused).
TEST(LqRiccati, ReusedDynamicsGiveTheBitsOfAFreshSolve) {
  Rng rng(17);
  struct Size { int nx, nu, N; };
  // Fixed sizes with the square root, run-time sizes with it (21, 3) and (36, 12), and a classical one.
  for (const Size z : {Size{14, 7, 12}, Size{12, 4, 9}, Size{21, 3, 10}, Size{36, 12, 6}, Size{4, 1, 8}}) {
    LqOptions keep = with(Linsys::Riccati);
    keep.reuse_dynamics = true;
    LqSolver reuse(z.nx, z.nu, z.N, keep), fresh(z.nx, z.nu, z.N, with(Linsys::Riccati));
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    LqSolution a(z.nx, z.nu, z.N), b(z.nx, z.nu, z.N);
    ASSERT_EQ(reuse.solve(d, a), LqStatus::Solved);
    for (int rep = 0; rep < 4; ++rep) {
      // Other costs and vectors, the same A and B; rep 1 has zero state weights (classical), so
      // rep 2 follows a solve that left no transposes to reuse.
      LqData e = random_lq(rng, z.nx, z.nu, z.N, rep == 1 ? Cost::ZeroStateWeights : Cost::PositiveDefinite);
      e.A = d.A, e.B = d.B;
      LqSolution x = poisoned_solution(z.nx, z.nu, z.N), y = poisoned_solution(z.nx, z.nu, z.N);
      reuse.dynamics_unchanged();
      ASSERT_EQ(reuse.solve(e, x), LqStatus::Solved) << z.nx << " " << rep;
      ASSERT_EQ(fresh.solve(e, y), LqStatus::Solved);
      EXPECT_EQ(x.x, y.x) << z.nx << " " << rep;
      EXPECT_EQ(x.u, y.u) << z.nx << " " << rep;
      EXPECT_EQ(x.lambda, y.lambda) << z.nx << " " << rep;
      EXPECT_EQ(reuse.stats().square_root, fresh.stats().square_root);
      const DenseKkt kkt = dense_kkt(e);
      EXPECT_LT(solution_error(x, unpack(kkt, dense_solve(kkt))), kSolTol);
    }
    // A changed B announced as unchanged: the reused transposes are the old B's.
    LqData f = random_lq(rng, z.nx, z.nu, z.N);
    f.A = d.A;
    LqSolution x(z.nx, z.nu, z.N), y(z.nx, z.nu, z.N);
    ASSERT_EQ(reuse.solve(d, a), LqStatus::Solved);  // the transposes of d again
    reuse.dynamics_unchanged();
    ASSERT_EQ(reuse.solve(f, x), LqStatus::Solved);
    ASSERT_EQ(fresh.solve(f, y), LqStatus::Solved);
    if (fresh.stats().square_root) {
      EXPECT_NE(x.u, y.u) << z.nx;
    } else {
      EXPECT_EQ(x.u, y.u) << z.nx;  // the classical recursion forms nothing to reuse
    }
    // Without the announcement the next solve forms them again.
    ASSERT_EQ(reuse.solve(f, x), LqStatus::Solved);
    EXPECT_EQ(x.u, y.u) << z.nx;
  }
}

}  // namespace
}  // namespace knot::test

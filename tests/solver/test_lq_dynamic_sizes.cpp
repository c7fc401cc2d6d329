// The Riccati backend at state sizes it does not compile in (outside lq_internal.hpp's RiccatiNx: 17..19,
// 22, 23, 25..27, 29..31 and above 32), where its products run on the run-time-size vector kernels, against
// the dense KKT reference. The sizes cover every row count modulo 16 (the matrix-vector tiles), 8 (the
// matrix-matrix tiles) and 4 (the transposes), and controls both fixed (nu <= 8) and run-time (nu > 8).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "test_lq_common.hpp"

namespace knot::test {
namespace {

constexpr double kSolTol = 1e-9;        // relative error of x, u, lambda against the dense solve
constexpr double kBackwardTol = 1e-13;  // normwise backward error in the dense KKT system

// Off the list, one nx for each residue modulo 16; nu from 1 to 12.
const LqSize kDynamicSizes[] = {
    {17, 9, 3}, {18, 6, 4}, {19, 1, 5},  {22, 3, 4},  {23, 7, 2}, {25, 2, 3}, {26, 12, 2}, {27, 3, 3}, {29, 5, 2},
    {30, 4, 2}, {31, 8, 2}, {34, 11, 1}, {36, 12, 2}, {37, 6, 1}, {40, 8, 2}, {44, 2, 1},  {47, 5, 1}, {48, 4, 1},
};

LqSolution reference(const LqData& d) {
  const DenseKkt kkt = dense_kkt(d);
  return unpack(kkt, dense_solve(kkt));
}

// solve(), then resolve() with new vectors on the same matrices (the vector half of the recursion)
// and solve_primal(); every solution starts as NaN, so an entry left unwritten shows.
TEST(LqDynamicSizes, RiccatiMatchesDenseKkt) {
  Rng rng(61);
  for (const LqSize& z : kDynamicSizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const DenseKkt kkt = dense_kkt(d);
    LqSolver s(z.nx, z.nu, z.N, with(Linsys::Riccati));
    LqSolution sol = poisoned_solution(z.nx, z.nu, z.N);
    ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
    EXPECT_LT(solution_error(sol, unpack(kkt, dense_solve(kkt))), kSolTol);
    EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);

    LqData e = random_lq(rng, z.nx, z.nu, z.N);
    e.A = d.A, e.B = d.B, e.Q = d.Q, e.R = d.R, e.S = d.S;
    const DenseKkt kkt_e = dense_kkt(e);
    LqSolution again = poisoned_solution(z.nx, z.nu, z.N);
    ASSERT_EQ(s.resolve(e, again), LqStatus::Solved);
    EXPECT_LT(solution_error(again, unpack(kkt_e, dense_solve(kkt_e))), kSolTol);
    EXPECT_LT(backward_error(kkt_e, pack(kkt_e, again)), kBackwardTol);

    LqSolution primal = poisoned_solution(z.nx, z.nu, z.N);
    ASSERT_EQ(s.solve_primal(d, primal), LqStatus::Solved);
    primal.lambda = sol.lambda;  // not formed by solve_primal
    EXPECT_LT(solution_error(primal, sol), kSolTol);
  }
}

// Positive semidefinite costs (singular P_k): the classical recursion needs only Huu positive definite.
TEST(LqDynamicSizes, SemidefiniteCosts) {
  Rng rng(62);
  for (const Cost cost : {Cost::ZeroStateWeights, Cost::TerminalOnly}) {
    for (const LqSize& z : {LqSize{18, 6, 6}, LqSize{23, 3, 4}, LqSize{34, 10, 2}}) {
      SCOPED_TRACE(testing::Message() << "cost " << static_cast<int>(cost) << " nx " << z.nx << " nu " << z.nu);
      const LqData d = random_lq(rng, z.nx, z.nu, z.N, cost);
      const DenseKkt kkt = dense_kkt(d);
      LqSolver s(z.nx, z.nu, z.N, with(Linsys::Riccati));
      LqSolution sol = poisoned_solution(z.nx, z.nu, z.N);
      ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
      EXPECT_LT(solution_error(sol, unpack(kkt, dense_solve(kkt))), kSolTol);
      EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
    }
  }
}

// An indefinite R_k + B_k'P_{k+1}B_k names its stage; NaN in the data is NonFinite; the same solver
// then solves clean data.
TEST(LqDynamicSizes, Statuses) {
  Rng rng(63);
  for (const auto& [nx, nu] : {std::pair{22, 3}, std::pair{27, 9}}) {
    SCOPED_TRACE(testing::Message() << "nx " << nx << " nu " << nu);
    for (const int bad : {0, 3, 5}) {
      LqData d = random_lq(rng, nx, nu, 6, Cost::TerminalOnly);
      put(-50.0 * Mat::Identity(nu, nu), d.R_k(bad));
      LqSolver s(nx, nu, 6, with(Linsys::Riccati));
      LqSolution sol(nx, nu, 6);
      EXPECT_EQ(s.solve(d, sol), LqStatus::NotPositiveDefinite);
      EXPECT_EQ(s.stats().failed_stage, bad);
    }
    const LqData clean = random_lq(rng, nx, nu, 4);
    LqSolver s(nx, nu, 4, with(Linsys::Riccati));
    for (int which = 0; which < 3; ++which) {
      LqData d = clean;
      (which == 0 ? d.A[nx * nx + 5] : which == 1 ? d.c[nx + 2] : d.x_init[nx - 1]) = kNaN;
      LqSolution sol(nx, nu, 4);
      EXPECT_EQ(s.solve(d, sol), LqStatus::NonFinite) << which;
    }
    LqSolution sol = poisoned_solution(nx, nu, 4);
    ASSERT_EQ(s.solve(clean, sol), LqStatus::Solved);
    EXPECT_LT(solution_error(sol, reference(clean)), kSolTol);
  }
}

// ---- The run-time-size square-root recursion (lq_riccati.cpp: sqrt_backward_rt, where sqrt_runtime
// picks it; test_lq_riccati's SquareRootPathServesItsSizes pins which sizes run it)

// Sizes sqrt_runtime serves: nu > 8 at listed and unlisted nx, every nx 17..31 with no padding of the
// factor's order nx + nu or with nu large enough, every nu from nx = 32; every padding (order - nx - nu
// = 0..3), nu and nx multiples of 4 (Q_k read in place), nu alone a multiple of 4, and orders up to 56.
// Definite costs run the square root throughout, semidefinite ones restart with the classical
// recursion; resolve() reuses either. The kkt_ldlt backend is a second reference.
const LqSize kSqrtSizes[] = {{36, 12, 4}, {26, 12, 3}, {21, 8, 3}, {17, 9, 3},  {19, 11, 2}, {23, 5, 3}, {27, 6, 2},
                             {33, 1, 2},  {40, 3, 2},  {8, 9, 5},  {12, 10, 4}, {4, 12, 6},  {3, 13, 5}, {16, 16, 3},
                             {24, 9, 2},  {21, 3, 4},  {17, 6, 3}, {25, 1, 3},  {22, 2, 3},  {19, 1, 3}, {3, 9, 4},
                             {45, 9, 2},  {29, 2, 3},  {25, 4, 3}, {17, 8, 3},  {40, 8, 2}};

TEST(LqDynamicSizes, SquareRootMatchesDenseKkt) {
  Rng rng(65);
  for (const LqSize& z : kSqrtSizes)
    for (const Cost cost : {Cost::PositiveDefinite, Cost::ZeroStateWeights, Cost::TerminalOnly}) {
      SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N << " cost "
                                      << static_cast<int>(cost));
      const LqData d = random_lq(rng, z.nx, z.nu, z.N, cost);
      const DenseKkt kkt = dense_kkt(d);
      const LqSolution ref = unpack(kkt, dense_solve(kkt));
      LqSolver s(z.nx, z.nu, z.N, with(Linsys::Riccati));
      LqSolution sol = poisoned_solution(z.nx, z.nu, z.N);
      ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
      EXPECT_LT(solution_error(sol, ref), kSolTol);
      EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
      LqSolver ldlt(z.nx, z.nu, z.N, with(Linsys::KktLdlt));
      LqSolution other = poisoned_solution(z.nx, z.nu, z.N);
      ASSERT_EQ(ldlt.solve(d, other), LqStatus::Solved);
      EXPECT_LT(solution_error(sol, other), kSolTol);

      LqData e = random_lq(rng, z.nx, z.nu, z.N, cost);
      e.A = d.A, e.B = d.B, e.Q = d.Q, e.R = d.R, e.S = d.S;
      const DenseKkt kkt_e = dense_kkt(e);
      LqSolution again = poisoned_solution(z.nx, z.nu, z.N);
      ASSERT_EQ(s.resolve(e, again), LqStatus::Solved);
      EXPECT_LT(solution_error(again, unpack(kkt_e, dense_solve(kkt_e))), kSolTol);
      EXPECT_LT(backward_error(kkt_e, pack(kkt_e, again)), kBackwardTol);

      LqSolution primal = poisoned_solution(z.nx, z.nu, z.N);
      ASSERT_EQ(s.solve_primal(d, primal), LqStatus::Solved);
      primal.lambda = sol.lambda;
      EXPECT_LT(solution_error(primal, sol), kSolTol);
    }
}

// One solver, its workspace first filled by the classical recursion (a semidefinite Q_N fails the
// square root's first pivot), then definite costs on the square-root path. Its Lk starts off the
// Cholesky's 4 x 4 grid wherever nu % 4 != 0, and the products that read Lk as a triangle also read
// the strict upper triangle of its own diagonal blocks, which the factorization leaves as it was
// (lq_riccati.cpp's zero_lk_band clears it): with that clearing removed, this test fails on what the
// classical recursion left there.
TEST(LqDynamicSizes, SquareRootAfterTheClassicalRecursion) {
  Rng rng(68);
  for (const LqSize& z : {LqSize{21, 3, 4}, LqSize{17, 6, 3}, LqSize{25, 1, 3}, LqSize{19, 11, 3}, LqSize{45, 9, 2}}) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu);
    LqSolver s(z.nx, z.nu, z.N, with(Linsys::Riccati));
    LqData semi = random_lq(rng, z.nx, z.nu, z.N, Cost::ZeroStateWeights);
    std::fill(semi.Q_k(z.N), semi.Q_k(z.N) + z.nx * z.nx, 0.0);  // P_N = 0: no Cholesky factor
    LqSolution first = poisoned_solution(z.nx, z.nu, z.N);
    ASSERT_EQ(s.solve(semi, first), LqStatus::Solved);
    EXPECT_LT(solution_error(first, reference(semi)), kSolTol);
    for (int round = 0; round < 2; ++round) {
      const LqData d = random_lq(rng, z.nx, z.nu, z.N);
      LqSolution sol = poisoned_solution(z.nx, z.nu, z.N);
      ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
      EXPECT_LT(solution_error(sol, reference(d)), kSolTol);
    }
  }
}

// Ill-conditioned stages as an interior point makes them: the diagonals of R_k and Q_k scaled by
// barrier-like weights from 1e-4 to 1e6 (condition numbers near 1e10), checked by the normwise
// backward error in the dense KKT system (the forward error of any solver grows with the condition).
TEST(LqDynamicSizes, SquareRootIllConditioned) {
  Rng rng(66);
  for (const LqSize& z : {LqSize{36, 12, 6}, LqSize{23, 5, 5}, LqSize{8, 9, 6}, LqSize{33, 2, 4}, LqSize{21, 3, 5}}) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu);
    LqData d = random_lq(rng, z.nx, z.nu, z.N);
    for (int k = 0; k <= z.N; ++k) {
      for (int i = 0; i < z.nx; ++i) d.Q_k(k)[i + i * z.nx] += std::pow(10.0, -4 + (7 * i + 3 * k) % 11);
      if (k < z.N)
        for (int i = 0; i < z.nu; ++i) d.R_k(k)[i + i * z.nu] += std::pow(10.0, 6 - (5 * i + k) % 11);
    }
    const DenseKkt kkt = dense_kkt(d);
    LqSolver s(z.nx, z.nu, z.N, with(Linsys::Riccati));
    LqSolution sol = poisoned_solution(z.nx, z.nu, z.N);
    ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
    EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
    LqSolver ldlt(z.nx, z.nu, z.N, with(Linsys::KktLdlt));
    LqSolution other = poisoned_solution(z.nx, z.nu, z.N);
    ASSERT_EQ(ldlt.solve(d, other), LqStatus::Solved);
    EXPECT_LT(solution_error(sol, other), 1e-6);
  }
}

// An indefinite Huu at a square-root size still names its stage (the classical restart reports it),
// for definite and semidefinite costs; NaN gives NonFinite; the same solver then solves clean data.
TEST(LqDynamicSizes, SquareRootStatuses) {
  Rng rng(67);
  for (const auto& [nx, nu] : {std::pair{36, 12}, std::pair{23, 5}, std::pair{8, 9}, std::pair{21, 3}}) {
    SCOPED_TRACE(testing::Message() << "nx " << nx << " nu " << nu);
    for (const int bad : {0, 3, 5})
      for (const Cost cost : {Cost::PositiveDefinite, Cost::TerminalOnly}) {
        LqData d = random_lq(rng, nx, nu, 6, cost);
        put(-1e4 * Mat::Identity(nu, nu), d.R_k(bad));  // beyond B'PB with definite costs too
        LqSolver s(nx, nu, 6, with(Linsys::Riccati));
        LqSolution sol(nx, nu, 6);
        EXPECT_EQ(s.solve(d, sol), LqStatus::NotPositiveDefinite);
        EXPECT_EQ(s.stats().failed_stage, bad);
      }
    const LqData clean = random_lq(rng, nx, nu, 4);
    LqSolver s(nx, nu, 4, with(Linsys::Riccati));
    for (int which = 0; which < 4; ++which) {
      LqData d = clean;
      (which == 0 ? d.A[nx * nx + 5] : which == 1 ? d.c[nx + 2] : which == 2 ? d.R[1] : d.x_init[nx - 1]) = kNaN;
      LqSolution sol(nx, nu, 4);
      EXPECT_EQ(s.solve(d, sol), LqStatus::NonFinite) << which;
    }
    LqSolution sol = poisoned_solution(nx, nu, 4);
    ASSERT_EQ(s.solve(clean, sol), LqStatus::Solved);
    EXPECT_LT(solution_error(sol, reference(clean)), kSolTol);
  }
}

// Negative control at a square-root size: the checks reject a solution off by far less than its
// size, in the last rows (the padded tail of the factor).
TEST(LqDynamicSizes, SquareRootPerturbedSolutionFailsTheChecks) {
  Rng rng(68);
  const int nx = 23, nu = 4, N = 3;
  const LqData d = random_lq(rng, nx, nu, N);
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  LqSolver s(nx, nu, N, with(Linsys::Riccati));
  LqSolution sol = poisoned_solution(nx, nu, N);
  ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
  ASSERT_LT(solution_error(sol, ref), kSolTol);
  for (double* entry : {&sol.x[2 * nx - 1], &sol.u[nu - 1], &sol.lambda[3 * nx - 2]}) {
    const double saved = *entry;
    *entry += 1e-7 * std::max(1.0, std::abs(saved));
    EXPECT_GT(solution_error(sol, ref), kSolTol);
    EXPECT_GT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
    *entry = saved;
  }
}

// The checks reject a solution off by far less than its size in x, u or lambda, in the last rows of
// a vector (those the tail tiles form).
TEST(LqDynamicSizes, PerturbedSolutionFailsTheChecks) {
  Rng rng(64);
  const int nx = 27, nu = 3, N = 3;
  const LqData d = random_lq(rng, nx, nu, N);
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  LqSolver s(nx, nu, N, with(Linsys::Riccati));
  LqSolution sol = poisoned_solution(nx, nu, N);
  ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
  ASSERT_LT(solution_error(sol, ref), kSolTol);
  ASSERT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
  for (double* entry : {&sol.x[2 * nx - 1], &sol.u[nu - 1], &sol.lambda[3 * nx - 2]}) {
    const double saved = *entry;
    *entry += 1e-7 * std::max(1.0, std::abs(saved));
    EXPECT_GT(solution_error(sol, ref), kSolTol);
    EXPECT_GT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
    *entry = saved;
  }
}

}  // namespace
}  // namespace knot::test

// LqSolver's public surface: options validation, sizes, the backend choice, statistics, the KKT
// residual function, and agreement of all backends on one answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "test_lq_common.hpp"

namespace knot::test {
namespace {

using solver::lq_auto_linsys;
using solver::lq_kkt_residual;

TEST(LqSolver, OptionsValidateNamesTheBadField) {
  EXPECT_EQ(LqOptions{}.validate(), "");
  const auto message = [](auto mutate) {
    LqOptions o;
    mutate(o);
    return o.validate();
  };
  EXPECT_NE(message([](LqOptions& o) { o.pcg_max_iters = 0; }).find("pcg_max_iters"), std::string::npos);
  EXPECT_NE(message([](LqOptions& o) { o.pcg_rel_tol = 0; }).find("pcg_rel_tol"), std::string::npos);
  EXPECT_NE(message([](LqOptions& o) { o.pcg_rel_tol = kNaN; }).find("pcg_rel_tol"), std::string::npos);
  EXPECT_NE(message([](LqOptions& o) { o.schur_reg = -1; }).find("schur_reg"), std::string::npos);
  EXPECT_NE(message([](LqOptions& o) { o.max_refinement = -1; }).find("max_refinement"), std::string::npos);
  EXPECT_NE(message([](LqOptions& o) { o.refine_tol = 0; }).find("refine_tol"), std::string::npos);
  EXPECT_NE(message([](LqOptions& o) { o.kkt_refinement = -2; }).find("kkt_refinement"), std::string::npos);
  EXPECT_NE(message([](LqOptions& o) { o.pcg_max_iters = -3; }).find("-3"), std::string::npos);
}

TEST(LqSolver, ConstructorRejectsBadSizesAndOptions) {
  EXPECT_THROW(LqSolver(0, 1, 1), std::invalid_argument);
  EXPECT_THROW(LqSolver(1, 0, 1), std::invalid_argument);
  EXPECT_THROW(LqSolver(1, 1, 0), std::invalid_argument);
  LqOptions bad;
  bad.schur_reg = 0;
  EXPECT_THROW(LqSolver(2, 1, 3, bad), std::invalid_argument);
  EXPECT_NO_THROW(LqSolver(2, 1, 3));
}

TEST(LqSolver, SolveRejectsDataOfOtherSizes) {
  Rng rng(41);
  LqSolver s(3, 2, 4, with(Linsys::Riccati));
  LqSolution sol(3, 2, 4);
  EXPECT_THROW(s.solve(random_lq(rng, 3, 2, 5), sol), std::invalid_argument);
  EXPECT_THROW(s.solve(random_lq(rng, 3, 1, 4), sol), std::invalid_argument);
  LqData d = random_lq(rng, 3, 2, 4);
  LqSolution wrong(3, 2, 3);
  EXPECT_THROW(s.solve(d, wrong), std::invalid_argument);
  d.c.pop_back();  // right nx, nu, N but a vector of the wrong length
  EXPECT_THROW(s.solve(d, sol), std::invalid_argument);
}

TEST(LqSolver, AutoResolvesToTheDocumentedBackend) {
  for (const LqSize& z : {LqSize{4, 1, 50}, LqSize{12, 4, 50}, LqSize{14, 7, 64}, LqSize{28, 7, 128}}) {
    LqSolver s(z.nx, z.nu, z.N);
    EXPECT_EQ(s.linsys(), lq_auto_linsys(z.nx, z.nu, z.N));
    EXPECT_NE(s.linsys(), Linsys::Auto);
    EXPECT_EQ(s.options().linsys, Linsys::Auto);
    Rng rng(42);
    LqSolution sol(z.nx, z.nu, z.N);
    EXPECT_EQ(s.solve(random_lq(rng, z.nx, z.nu, z.N), sol), LqStatus::Solved);
    EXPECT_EQ(s.stats().linsys, s.linsys());
  }
}

TEST(LqSolver, ReportsTheWorkspaceItAllocated) {
  for (const Linsys l : {Linsys::Riccati, Linsys::Bdsv, Linsys::Pcg, Linsys::KktLdlt}) {
    const LqSolver small(4, 2, 10, with(l)), large(4, 2, 40, with(l));
    EXPECT_GT(small.bytes_allocated(), 0u) << solver::to_string(l);
    EXPECT_GT(large.bytes_allocated(), small.bytes_allocated()) << solver::to_string(l);
  }
  // pcg keeps the preconditioner and its vectors on top of what bdsv needs.
  EXPECT_GT(LqSolver(6, 2, 20, with(Linsys::Pcg)).bytes_allocated(),
            LqSolver(6, 2, 20, with(Linsys::Bdsv)).bytes_allocated());
}

TEST(LqSolver, NamesAndMessages) {
  EXPECT_STREQ(solver::to_string(Linsys::KktLdlt), "kkt_ldlt");
  EXPECT_STREQ(solver::to_string(Linsys::Riccati), "riccati");
  EXPECT_STREQ(solver::to_string(solver::Preconditioner::Stair), "stair");
  EXPECT_STREQ(solver::to_string(LqStatus::Solved), "solved");
  EXPECT_NE(std::string(solver::to_string(LqStatus::NonFinite)).find("NaN"), std::string::npos);
}

// lq_kkt_residual against the residual of the dense KKT system: at an arbitrary point (not a
// solution) its two norms are the inf-norms of the stationarity and feasibility rows.
TEST(LqSolver, KktResidualMatchesTheDenseSystem) {
  Rng rng(43);
  const LqData d = random_lq(rng, 5, 3, 9);
  const DenseKkt kkt = dense_kkt(d);
  const Vec w = Vec::Random(kkt.size());
  const LqSolution point = unpack(kkt, w);
  const Vec r = kkt.K * w - kkt.rhs;
  const solver::LqResidual res = lq_kkt_residual(d, point);
  EXPECT_NEAR(res.stationarity, r.head(kkt.nz()).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_NEAR(res.feasibility, r.tail(kkt.size() - kkt.nz()).cwiseAbs().maxCoeff(), 1e-12);
  const LqSolution exact = unpack(kkt, dense_solve(kkt));
  const solver::LqResidual zero = lq_kkt_residual(d, exact);
  EXPECT_LT(std::max(zero.stationarity, zero.feasibility), 1e-12);
  EXPECT_GT(res.stationarity, 1e-3);
}

// Every backend gives the same x, u, lambda: the exact ones to 1e-9 relative, pcg to its tolerance.
TEST(LqSolver, AllBackendsAgree) {
  Rng rng(44);
  for (const LqSize& z : kLqSizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    LqSolution ric(z.nx, z.nu, z.N);
    LqSolver s(z.nx, z.nu, z.N, with(Linsys::Riccati));
    ASSERT_EQ(s.solve(d, ric), LqStatus::Solved);
    for (const Linsys l : {Linsys::Bdsv, Linsys::KktLdlt, Linsys::Pcg}) {
      LqSolver other(z.nx, z.nu, z.N, with(l));
      LqSolution sol = poisoned_solution(z.nx, z.nu, z.N);
      ASSERT_EQ(other.solve(d, sol), LqStatus::Solved) << solver::to_string(l);
      EXPECT_LT(solution_error(sol, ric), l == Linsys::Pcg ? 1e-8 : 1e-9) << solver::to_string(l);
      const solver::LqResidual res = lq_kkt_residual(d, sol);
      EXPECT_LT(std::max(res.stationarity, res.feasibility), l == Linsys::Pcg ? 1e-7 : 1e-11) << solver::to_string(l);
    }
  }
}

// resolve() with new vectors equals a full solve of the new problem; with the matrices changed it
// does not (the negative control: it really reuses the old factorization).
TEST(LqSolver, ResolveWithNewVectorsEqualsAFullSolve) {
  Rng rng(46);
  for (const LqSize& z : kLqSizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    LqData e = random_lq(rng, z.nx, z.nu, z.N);
    e.A = d.A, e.B = d.B, e.Q = d.Q, e.R = d.R, e.S = d.S;  // e: d's matrices, other vectors
    for (const Linsys l : {Linsys::Riccati, Linsys::Bdsv, Linsys::KktLdlt}) {
      LqSolver s(z.nx, z.nu, z.N, with(l));
      LqSolution first(z.nx, z.nu, z.N), again = poisoned_solution(z.nx, z.nu, z.N), full(z.nx, z.nu, z.N);
      ASSERT_EQ(s.solve(d, first), LqStatus::Solved);
      ASSERT_EQ(s.resolve(e, again), LqStatus::Solved) << solver::to_string(l);
      LqSolver fresh(z.nx, z.nu, z.N, with(l));
      ASSERT_EQ(fresh.solve(e, full), LqStatus::Solved);
      EXPECT_LT(solution_error(again, full), 1e-11) << solver::to_string(l);
      EXPECT_GT(solution_error(first, full), 1e-3);
    }
  }
  // The factorization is reused: with changed matrices, riccati's resolve solves the old system.
  const LqData d = random_lq(rng, 5, 2, 10);
  const LqData e = random_lq(rng, 5, 2, 10);
  LqSolver s(5, 2, 10, with(Linsys::Riccati)), fresh(5, 2, 10, with(Linsys::Riccati));
  LqSolution a(5, 2, 10), b(5, 2, 10);
  ASSERT_EQ(s.solve(d, a), LqStatus::Solved);
  ASSERT_EQ(s.resolve(e, a), LqStatus::Solved);
  ASSERT_EQ(fresh.solve(e, b), LqStatus::Solved);
  EXPECT_GT(solution_error(a, b), 1e-3);
}

// solve_primal() gives solve()'s x and u bit for bit on every backend (the same arithmetic), and a
// resolve() after it equals one after solve(). Riccati leaves lambda as it was (the costate sweep is
// what it skips: a sentinel survives); the others fill it.
TEST(LqSolver, SolvePrimalGivesTheSameStep) {
  Rng rng(48);
  std::vector<LqSize> sizes = kLqSizes;
  for (const LqSize z : {LqSize{16, 4, 6}, LqSize{28, 7, 5}, LqSize{14, 7, 5}}) sizes.push_back(z);  // square-root path
  for (const LqSize& z : sizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    LqData e = random_lq(rng, z.nx, z.nu, z.N);
    e.A = d.A, e.B = d.B, e.Q = d.Q, e.R = d.R, e.S = d.S;
    for (const Linsys l : {Linsys::Riccati, Linsys::Bdsv, Linsys::KktLdlt, Linsys::Pcg}) {
      LqSolver full(z.nx, z.nu, z.N, with(l)), primal(z.nx, z.nu, z.N, with(l));
      LqSolution a(z.nx, z.nu, z.N), b = poisoned_solution(z.nx, z.nu, z.N);
      std::fill(b.lambda.begin(), b.lambda.end(), 7.0);
      ASSERT_EQ(full.solve(d, a), LqStatus::Solved);
      ASSERT_EQ(primal.solve_primal(d, b), LqStatus::Solved) << solver::to_string(l);
      EXPECT_TRUE(bitwise_equal(a.x, b.x) && bitwise_equal(a.u, b.u)) << solver::to_string(l);
      const bool kept = std::all_of(b.lambda.begin(), b.lambda.end(), [](double v) { return v == 7.0; });
      EXPECT_EQ(kept, l == Linsys::Riccati) << solver::to_string(l);
      LqSolution ra(z.nx, z.nu, z.N), rb(z.nx, z.nu, z.N);
      ASSERT_EQ(full.resolve(e, ra), LqStatus::Solved);
      ASSERT_EQ(primal.resolve(e, rb), LqStatus::Solved);
      EXPECT_TRUE(bitwise_equal(ra.x, rb.x) && bitwise_equal(ra.u, rb.u) && bitwise_equal(ra.lambda, rb.lambda))
          << solver::to_string(l);
    }
  }
}

// The finiteness check on the solution (on the bits: an all-ones exponent) catches +Inf and -Inf as
// well as NaN that only reach the result, entering at four consecutive entries (the check's four
// lanes), with and without the costate; magnitudes near 1e300 pass (the control: a mask that took
// large exponents for Inf would flag them).
TEST(LqSolver, InfinitiesInTheResultAreNonFinite) {
  Rng rng(49);
  const LqData clean = random_lq(rng, 5, 2, 8);
  for (const double bad : {kNaN, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()})
    for (int at = 0; at < 4; ++at)
      for (const bool primal : {false, true}) {
        LqData d = clean;
        d.c[10 + at] = bad;  // reaches x from stage 2 on
        LqSolver s(5, 2, 8, with(Linsys::Riccati));
        LqSolution sol(5, 2, 8);
        EXPECT_EQ(primal ? s.solve_primal(d, sol) : s.solve(d, sol), LqStatus::NonFinite) << bad << " " << at;
      }
  LqData big = clean;
  for (double& v : big.x_init) v *= 1e300;  // x, lambda near 1e300: finite
  LqSolver s(5, 2, 8, with(Linsys::Riccati));
  LqSolution sol(5, 2, 8);
  ASSERT_EQ(s.solve(big, sol), LqStatus::Solved);
  EXPECT_GT(std::max(std::abs(sol.x[0]), std::abs(sol.x[1])), 1e299);
}

TEST(LqSolver, ResolveNeedsASuccessfulSolve) {
  Rng rng(47);
  const LqData d = random_lq(rng, 3, 1, 6);
  LqSolver s(3, 1, 6, with(Linsys::Riccati));
  LqSolution sol(3, 1, 6);
  EXPECT_EQ(s.resolve(d, sol), LqStatus::NonFinite);  // nothing factored yet
  LqData bad = d;
  bad.R[0] = -1e3;  // not positive definite
  EXPECT_EQ(s.solve(bad, sol), LqStatus::NotPositiveDefinite);
  EXPECT_EQ(s.resolve(d, sol), LqStatus::NotPositiveDefinite);
  ASSERT_EQ(s.solve(d, sol), LqStatus::Solved);
  EXPECT_EQ(s.resolve(d, sol), LqStatus::Solved);
}

TEST(LqSolver, IsMovable) {
  Rng rng(45);
  const LqData d = random_lq(rng, 3, 1, 6);
  LqSolver a(3, 1, 6, with(Linsys::Riccati));
  LqSolver b = std::move(a);
  LqSolution sol(3, 1, 6);
  EXPECT_EQ(b.solve(d, sol), LqStatus::Solved);
  EXPECT_EQ(b.nx(), 3);
  EXPECT_EQ(b.nu(), 1);
  EXPECT_EQ(b.N(), 6);
}

}  // namespace
}  // namespace knot::test

// KktLdlt backend against the dense KKT reference: convex problems of many sizes with the inertia of
// a minimizer, non-convex problems with their inertia reported, and the refinement option.
#include <gtest/gtest.h>

#include "test_lq_common.hpp"

namespace knot::test {
namespace {

constexpr double kSolTol = 1e-9;
constexpr double kBackwardTol = 1e-13;

// Inertia of the dense KKT matrix from its eigenvalues (independent of the LDL').
struct Inertia {
  int pos = 0, neg = 0, zero = 0;
};
Inertia dense_inertia(const DenseKkt& kkt) {
  const Vec ev = Eigen::SelfAdjointEigenSolver<Mat>(kkt.K).eigenvalues();
  const double tol = 1e-10 * ev.cwiseAbs().maxCoeff();
  Inertia in;
  for (Eigen::Index i = 0; i < ev.size(); ++i) (ev(i) > tol ? in.pos : ev(i) < -tol ? in.neg : in.zero) += 1;
  return in;
}

TEST(LqKkt, MatchesDenseKktWithTheInertiaOfAMinimizer) {
  Rng rng(31);
  for (const LqSize& z : kLqSizes) {
    SCOPED_TRACE(testing::Message() << "nx " << z.nx << " nu " << z.nu << " N " << z.N);
    const LqData d = random_lq(rng, z.nx, z.nu, z.N);
    const DenseKkt kkt = dense_kkt(d);
    const LqSolution ref = unpack(kkt, dense_solve(kkt));
    LqSolver s(z.nx, z.nu, z.N, with(Linsys::KktLdlt));
    LqSolution sol = poisoned_solution(z.nx, z.nu, z.N);
    EXPECT_EQ(s.solve(d, sol), LqStatus::Solved);
    EXPECT_LT(solution_error(sol, ref), kSolTol);
    EXPECT_LT(backward_error(kkt, pack(kkt, sol)), kBackwardTol);
    EXPECT_EQ(s.stats().inertia_pos, z.N * (z.nx + z.nu) + z.nx);
    EXPECT_EQ(s.stats().inertia_neg, (z.N + 1) * z.nx);
    EXPECT_EQ(s.stats().inertia_zero, 0);
  }
}

TEST(LqKkt, PositiveSemidefiniteCostsAreExact) {
  Rng rng(32);
  for (const Cost cost : {Cost::ZeroStateWeights, Cost::TerminalOnly}) {
    const LqData d = random_lq(rng, 7, 3, 20, cost);
    const DenseKkt kkt = dense_kkt(d);
    const LqSolution ref = unpack(kkt, dense_solve(kkt));
    LqSolver s(7, 3, 20, with(Linsys::KktLdlt));
    LqSolution sol(7, 3, 20);
    EXPECT_EQ(s.solve(d, sol), LqStatus::Solved);
    EXPECT_LT(solution_error(sol, ref), kSolTol);
  }
}

// A non-convex problem: the inertia reported is that of the KKT matrix (checked against its
// eigenvalues), the status says it is no minimizer, and the KKT point is still returned.
TEST(LqKkt, NonConvexProblemReportsItsInertia) {
  Rng rng(33);
  for (const int bad : {0, 4, 9}) {
    SCOPED_TRACE(bad);
    LqData d = random_lq(rng, 4, 2, 10, Cost::TerminalOnly);
    put(-50.0 * Mat::Identity(2, 2), d.R_k(bad));
    const DenseKkt kkt = dense_kkt(d);
    const Inertia in = dense_inertia(kkt);
    ASSERT_EQ(in.zero, 0);
    ASSERT_GT(in.neg, 11 * 4);  // more negative eigenvalues than constraints: not a minimizer
    LqSolver s(4, 2, 10, with(Linsys::KktLdlt));
    LqSolution sol(4, 2, 10);
    EXPECT_EQ(s.solve(d, sol), LqStatus::NotPositiveDefinite);
    EXPECT_EQ(s.stats().inertia_pos, in.pos);
    EXPECT_EQ(s.stats().inertia_neg, in.neg);
    EXPECT_EQ(s.stats().inertia_zero, 0);
    EXPECT_LT(solution_error(sol, unpack(kkt, dense_solve(kkt))), kSolTol);
  }
}

// Singular KKT matrix (a zero row and column: one stage with no cost and no control influence is
// not enough; take R_k = 0 and B_k = 0 so that u_k is undetermined): the zero pivot is reported.
TEST(LqKkt, SingularKktMatrixReportsAZeroPivot) {
  Rng rng(34);
  LqData d = random_lq(rng, 3, 2, 5, Cost::TerminalOnly);
  put(Mat::Zero(2, 2), d.R_k(2));
  put(Mat::Zero(3, 2), d.B_k(2));
  LqSolver s(3, 2, 5, with(Linsys::KktLdlt));
  LqSolution sol(3, 2, 5);
  EXPECT_EQ(s.solve(d, sol), LqStatus::NotPositiveDefinite);
  EXPECT_EQ(s.stats().inertia_zero, 2);
}

TEST(LqKkt, WithoutRefinementStillAccurate) {
  Rng rng(35);
  const LqData d = random_lq(rng, 9, 4, 30);
  const DenseKkt kkt = dense_kkt(d);
  const LqSolution ref = unpack(kkt, dense_solve(kkt));
  LqOptions o = with(Linsys::KktLdlt);
  o.kkt_refinement = 0;
  LqSolver s(9, 4, 30, o);
  LqSolution sol(9, 4, 30);
  EXPECT_EQ(s.solve(d, sol), LqStatus::Solved);
  EXPECT_LT(solution_error(sol, ref), kSolTol);
}

TEST(LqKkt, NonFiniteDataIsReported) {
  Rng rng(36);
  LqData d = random_lq(rng, 5, 2, 8);
  d.q[4] = kNaN;
  LqSolver s(5, 2, 8, with(Linsys::KktLdlt));
  LqSolution sol(5, 2, 8);
  EXPECT_EQ(s.solve(d, sol), LqStatus::NonFinite);
}

}  // namespace
}  // namespace knot::test

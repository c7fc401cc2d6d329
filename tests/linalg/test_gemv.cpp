// gemv against Eigen for both transposes, with NaN-poisoned outputs, a padded leading dimension,
// a group-size sweep, the compile-time-size path, and agreement with gemm.
#include <gtest/gtest.h>

#include "knot/linalg/dense/gemv.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

struct Shape {
  int m, n;
};
const Shape kShapes[] = {{1, 1}, {5, 5}, {14, 14}, {3, 7}, {7, 3}, {1, 9}, {9, 1}, {20, 3}, {33, 17}};
const double kAlphaBeta[][2] = {{1.0, 0.0}, {-0.7, 0.3}, {2.0, 1.0}};

template <Trans TA>
void check_against_eigen(unsigned seed) {
  Rng rng(seed);
  for (const auto& s : kShapes)
    for (const auto& ab : kAlphaBeta) {
      const double alpha = ab[0], beta = ab[1];
      const int ny = TA == Trans::No ? s.m : s.n, nx = TA == Trans::No ? s.n : s.m;
      const Mat a = rng.matrix(s.m, s.n);
      const Vec x = rng.vector(nx), y0 = rng.vector(ny);
      const int lda = s.m + 3;
      const auto A = store(a, lda, kNaN);  // NaN pads: reading one poisons the result
      const auto X = to_vec(x);
      const auto Y = beta == 0 ? poisoned(ny) : to_vec(y0);
      const Vec want = alpha * (TA == Trans::No ? Mat(a) : Mat(a.transpose())) * x + beta * y0;
      auto call = [&](auto& g, double* y) { gemv<TA>(g, s.m, s.n, alpha, A.data(), lda, X.data(), beta, y); };
      const auto ref = run(1, Y, call);
      const std::string where = "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n);
      EXPECT_LT(rel_err(to_mat(ref, ny, 1), want), 4 * kEps * (nx + 2)) << where;
      for (int t : groups_and_serial()) EXPECT_TRUE(bitwise_equal(run(t, Y, call), ref)) << where << " t=" << t;
      // gemv is gemm with one column, bit for bit.
      const auto via_gemm = run(0, Y, [&](auto& g, double* y) {
        gemm<TA, Trans::No>(g, ny, 1, nx, alpha, A.data(), lda, X.data(), nx, beta, y, ny);
      });
      EXPECT_TRUE(bitwise_equal(via_gemm, ref)) << where;
    }
}

template <Trans TA>
void check_fixed_size(unsigned seed) {
  constexpr int M = 6, N = 14;
  Rng rng(seed);
  const int lda = M + 2;
  const auto A = store(rng.matrix(M, N), lda, kNaN);
  const int ny = TA == Trans::No ? M : N;
  const auto X = to_vec(rng.vector(TA == Trans::No ? N : M));
  const auto Y = to_vec(rng.vector(ny));
  for (double beta : {0.0, -1.5}) {
    const auto dyn = run(0, Y, [&](auto& g, double* y) { gemv<TA>(g, M, N, 0.5, A.data(), lda, X.data(), beta, y); });
    for (int t : {0, 1, 3}) {
      const auto fixed =
          run(t, Y, [&](auto& g, double* y) { gemv<TA, M, N>(g, M, N, 0.5, A.data(), lda, X.data(), beta, y); });
      EXPECT_TRUE(bitwise_equal(fixed, dyn)) << "t=" << t;
    }
  }
}

}  // namespace

TEST(Gemv, MatchesEigenForBothTransposesAndEveryGroupSize) {
  check_against_eigen<Trans::No>(201);
  check_against_eigen<Trans::Yes>(202);
}

TEST(Gemv, CompileTimeSizesMatchRuntimeBitwise) {
  check_fixed_size<Trans::No>(211);
  check_fixed_size<Trans::Yes>(212);
}

TEST(Gemv, AlphaZeroReadsNeitherOperandAndEmptyShapesWriteNothing) {
  const std::vector<double> A(12, kNaN), X(4, kNaN), y0 = {1.0, -2.0, 3.0};
  for (int t : groups_and_serial()) {
    auto out = run(t, y0, [&](auto& g, double* y) { gemv<Trans::No>(g, 3, 4, 0.0, A.data(), 3, X.data(), 2.0, y); });
    EXPECT_TRUE(bitwise_equal(out, {2.0, -4.0, 6.0})) << "t=" << t;
    out = run(t, y0, [&](auto& g, double* y) {
      gemv<Trans::No>(g, 0, 4, 1.0, A.data(), 1, X.data(), 0.0, y);
      gemv<Trans::Yes>(g, 4, 0, 1.0, A.data(), 4, X.data(), 0.0, y);
    });
    EXPECT_TRUE(bitwise_equal(out, y0)) << "t=" << t;
    // An empty x: y = beta y.
    out = run(t, y0, [&](auto& g, double* y) { gemv<Trans::No>(g, 3, 0, 1.0, A.data(), 3, X.data(), -1.0, y); });
    EXPECT_TRUE(bitwise_equal(out, {-1.0, 2.0, -3.0})) << "t=" << t;
  }
}

TEST(Gemv, NegativeControlWrongTransposeIsCaught) {
  Rng rng(220);
  const int n = 7;
  const Mat a = rng.matrix(n, n);
  const Vec x = rng.vector(n);
  const auto A = to_vec(a), X = to_vec(x);
  const auto y = run(1, poisoned(n), [&](auto& g, double* out) {
    gemv<Trans::Yes>(g, n, n, 1.0, A.data(), n, X.data(), 0.0, out);
  });
  EXPECT_LT(rel_err(to_mat(y, n, 1), a.transpose() * x), 4 * kEps * (n + 2));
  EXPECT_GT(rel_err(to_mat(y, n, 1), a * x), 1e-3);
}

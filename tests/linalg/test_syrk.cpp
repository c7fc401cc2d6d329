// syrk against Eigen for both triangles and transposes: the other strict triangle is untouched,
// outputs are NaN-poisoned when beta == 0, groups of every size agree bitwise, and the triangle is
// gemm's product bit for bit.
#include <gtest/gtest.h>

#include "knot/linalg/dense/syrk.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kPad = -7.25;

template <Uplo UL>
bool in_triangle(int i, int j) {
  return UL == Uplo::Lower ? i >= j : i <= j;
}

struct Shape {
  int n, k;
};
const Shape kShapes[] = {{1, 1}, {5, 5}, {14, 14}, {3, 7}, {7, 3}, {9, 1}, {1, 6}, {20, 4}, {33, 5}};
const double kAlphaBeta[][2] = {{1.0, 0.0}, {-0.7, 0.3}, {2.0, 1.0}};

template <Uplo UL, Trans TA>
void check_against_eigen(unsigned seed) {
  Rng rng(seed);
  for (const auto& s : kShapes)
    for (const auto& ab : kAlphaBeta) {
      const double alpha = ab[0], beta = ab[1];
      const Mat a = TA == Trans::No ? rng.matrix(s.n, s.k) : rng.matrix(s.k, s.n);
      const Mat c0 = rng.matrix(s.n, s.n);
      const int lda = static_cast<int>(a.rows()) + 2, ldc = s.n + 1;
      const auto A = store(a, lda, kNaN);
      auto C = store(c0, ldc, kPad);
      // The referenced triangle is NaN when beta == 0 (an unwritten entry shows); the other one
      // is NaN always (a read of it poisons the result, a write of it is seen below).
      for (int j = 0; j < s.n; ++j)
        for (int i = 0; i < s.n; ++i)
          if (beta == 0 || !in_triangle<UL>(i, j)) C[i + j * ldc] = kNaN;
      const Mat aa = TA == Trans::No ? Mat(a) : Mat(a.transpose());
      const Mat want = alpha * aa * aa.transpose() + beta * c0;
      auto call = [&](auto& g, double* c) { syrk<UL, TA>(g, s.n, s.k, alpha, A.data(), lda, beta, c, ldc); };
      const auto ref = run(1, C, call);
      const std::string where = "n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) + " beta=" + std::to_string(beta);
      double err = 0;
      for (int j = 0; j < s.n; ++j)
        for (int i = 0; i < s.n; ++i) {
          const std::size_t e = i + static_cast<std::size_t>(j) * ldc;
          if (in_triangle<UL>(i, j)) {
            err = std::max(err, std::isfinite(ref[e]) ? std::abs(ref[e] - want(i, j)) : kNaN);
          } else {
            EXPECT_TRUE(bitwise_equal({ref[e]}, {C[e]})) << where << " (" << i << "," << j << ") touched";
          }
        }
      for (std::size_t e = 0; e < C.size(); ++e) {
        if (static_cast<int>(e % ldc) >= s.n) {
          EXPECT_TRUE(bitwise_equal({ref[e]}, {C[e]})) << where << " pad";
        }
      }
      EXPECT_LT(err / std::max(1.0, want.cwiseAbs().maxCoeff()), 4 * kEps * (s.k + 2)) << where;
      for (int t : groups_and_serial()) EXPECT_TRUE(bitwise_equal(run(t, C, call), ref)) << where << " t=" << t;
      // The triangle equals gemm(a, a') bit for bit.
      const auto full = run(0, C, [&](auto& g, double* c) {
        constexpr Trans TB = TA == Trans::No ? Trans::Yes : Trans::No;
        gemm<TA, TB>(g, s.n, s.n, s.k, alpha, A.data(), lda, A.data(), lda, beta, c, ldc);
      });
      for (int j = 0; j < s.n; ++j)
        for (int i = 0; i < s.n; ++i) {
          if (in_triangle<UL>(i, j)) {
            EXPECT_TRUE(bitwise_equal({full[i + j * ldc]}, {ref[i + j * ldc]})) << where;
          }
        }
    }
}

template <Uplo UL, Trans TA>
void check_fixed_size(unsigned seed) {
  constexpr int N = 7, K = 4;
  Rng rng(seed);
  const int lda = (TA == Trans::No ? N : K) + 1, ldc = N + 2;
  const auto A = store(TA == Trans::No ? rng.matrix(N, K) : rng.matrix(K, N), lda, kNaN);
  const auto C = store(rng.matrix(N, N), ldc, kPad);
  for (double beta : {0.0, 0.25}) {
    const auto dyn = run(0, C, [&](auto& g, double* c) { syrk<UL, TA>(g, N, K, -1.0, A.data(), lda, beta, c, ldc); });
    for (int t : {0, 1, 3}) {
      const auto fixed =
          run(t, C, [&](auto& g, double* c) { syrk<UL, TA, N, K>(g, N, K, -1.0, A.data(), lda, beta, c, ldc); });
      EXPECT_TRUE(bitwise_equal(fixed, dyn)) << "t=" << t;
    }
  }
}

}  // namespace

TEST(Syrk, MatchesEigenOnTheTriangleForEveryCombinationAndGroupSize) {
  check_against_eigen<Uplo::Lower, Trans::No>(301);
  check_against_eigen<Uplo::Lower, Trans::Yes>(302);
  check_against_eigen<Uplo::Upper, Trans::No>(303);
  check_against_eigen<Uplo::Upper, Trans::Yes>(304);
}

TEST(Syrk, CompileTimeSizesMatchRuntimeBitwise) {
  check_fixed_size<Uplo::Lower, Trans::No>(311);
  check_fixed_size<Uplo::Lower, Trans::Yes>(312);
  check_fixed_size<Uplo::Upper, Trans::No>(313);
  check_fixed_size<Uplo::Upper, Trans::Yes>(314);
}

TEST(Syrk, AlphaZeroAndEmptyShapes) {
  const std::vector<double> A(12, kNaN);
  const std::vector<double> c0 = {1.0, 2.0, 3.0, 4.0};
  for (int t : groups_and_serial()) {
    // alpha == 0 reads no A: C = beta C on the lower triangle, the upper entry untouched.
    auto out = run(t, c0, [&](auto& g, double* c) { syrk<Uplo::Lower, Trans::No>(g, 2, 3, 0.0, A.data(), 2, 2.0, c, 2); });
    EXPECT_TRUE(bitwise_equal(out, {2.0, 4.0, 3.0, 8.0})) << "t=" << t;
    out = run(t, c0, [&](auto& g, double* c) { syrk<Uplo::Upper, Trans::Yes>(g, 0, 3, 1.0, A.data(), 3, 0.0, c, 2); });
    EXPECT_TRUE(bitwise_equal(out, c0)) << "t=" << t;
    // k == 0: C = beta C.
    out = run(t, c0, [&](auto& g, double* c) { syrk<Uplo::Upper, Trans::No>(g, 2, 0, 1.0, A.data(), 2, -1.0, c, 2); });
    EXPECT_TRUE(bitwise_equal(out, {-1.0, 2.0, -3.0, -4.0})) << "t=" << t;
  }
}

TEST(Syrk, NegativeControlWrongProductIsCaught) {
  Rng rng(320);
  const int n = 6;
  const Mat a = rng.matrix(n, n);
  const auto A = to_vec(a);
  const Mat want = Mat(a * a.transpose()).triangularView<Eigen::Lower>();
  auto lower_of = [&](const std::vector<double>& v) { return Mat(to_mat(v, n, n).triangularView<Eigen::Lower>()); };
  const auto right = run(1, poisoned(n * n), [&](auto& g, double* c) {
    syrk<Uplo::Lower, Trans::No>(g, n, n, 1.0, A.data(), n, 0.0, c, n);
  });
  EXPECT_LT(rel_err(lower_of(right), want), 4 * kEps * (n + 2));
  // A'A where A A' was wanted, and the right answer with one entry nudged: both rejected.
  const auto transposed = run(1, poisoned(n * n), [&](auto& g, double* c) {
    syrk<Uplo::Lower, Trans::Yes>(g, n, n, 1.0, A.data(), n, 0.0, c, n);
  });
  EXPECT_GT(rel_err(lower_of(transposed), want), 1e-3);
  Mat nudged = lower_of(right);
  nudged(4, 2) += 1e-9;
  EXPECT_GT(rel_err(nudged, want), 4 * kEps * (n + 2));
}

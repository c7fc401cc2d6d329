// gemm against Eigen for every transpose combination, with NaN-poisoned outputs and padded leading
// dimensions, a group-size sweep, and the compile-time-size path.
#include <gtest/gtest.h>

#include "knot/linalg/dense/gemm.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kPad = -7.25;  // pads of an output: must come back bit for bit

bool pads_intact(const std::vector<double>& out, const std::vector<double>& in, int rows, int ld) {
  for (std::size_t e = 0; e < in.size(); ++e)
    if (static_cast<int>(e % ld) >= rows && !bitwise_equal({out[e]}, {in[e]})) return false;
  return true;
}

Mat op(const Mat& x, Trans t) { return t == Trans::No ? x : Mat(x.transpose()); }

struct Shape {
  int m, n, k;
};
// Square, rectangular both ways, a single row or column, and heights past the serial tile (8, 16).
const Shape kShapes[] = {{1, 1, 1}, {5, 5, 5}, {14, 14, 14}, {3, 7, 5}, {7, 3, 1},
                         {1, 9, 4}, {20, 3, 6}, {17, 2, 19}, {33, 4, 2}};
const double kAlphaBeta[][2] = {{1.0, 0.0}, {-0.7, 0.3}, {2.0, 1.0}};

template <Trans TA, Trans TB>
void check_against_eigen(unsigned seed) {
  Rng rng(seed);
  for (const auto& s : kShapes)
    for (const auto& ab : kAlphaBeta) {
      const double alpha = ab[0], beta = ab[1];
      const Mat a = TA == Trans::No ? rng.matrix(s.m, s.k) : rng.matrix(s.k, s.m);
      const Mat b = TB == Trans::No ? rng.matrix(s.k, s.n) : rng.matrix(s.n, s.k);
      const Mat c0 = rng.matrix(s.m, s.n);
      const int lda = static_cast<int>(a.rows()) + 2, ldb = static_cast<int>(b.rows()) + 1, ldc = s.m + 3;
      // Input pads are NaN: reading one would poison the result.
      const auto A = store(a, lda, kNaN), B = store(b, ldb, kNaN);
      auto C = store(c0, ldc, kPad);
      if (beta == 0)
        for (int j = 0; j < s.n; ++j)
          for (int i = 0; i < s.m; ++i) C[i + j * ldc] = kNaN;
      const Mat want = alpha * op(a, TA) * op(b, TB) + beta * c0;
      auto call = [&](auto& g, double* c) {
        gemm<TA, TB>(g, s.m, s.n, s.k, alpha, A.data(), lda, B.data(), ldb, beta, c, ldc);
      };
      const auto ref = run(1, C, call);
      const std::string where = "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                                " k=" + std::to_string(s.k) + " alpha=" + std::to_string(alpha);
      EXPECT_LT(rel_err(load(ref, s.m, s.n, ldc), want), 4 * kEps * (s.k + 2)) << where;
      EXPECT_TRUE(pads_intact(ref, C, s.m, ldc)) << where;
      for (int t : groups_and_serial()) EXPECT_TRUE(bitwise_equal(run(t, C, call), ref)) << where << " t=" << t;
    }
}

template <Trans TA, Trans TB>
void check_fixed_size(unsigned seed) {
  constexpr int M = 5, N = 7, K = 3;
  Rng rng(seed);
  const int lda = (TA == Trans::No ? M : K) + 1, ldb = (TB == Trans::No ? K : N) + 2, ldc = M + 1;
  const auto A = store(TA == Trans::No ? rng.matrix(M, K) : rng.matrix(K, M), lda, kNaN);
  const auto B = store(TB == Trans::No ? rng.matrix(K, N) : rng.matrix(N, K), ldb, kNaN);
  const auto C = store(rng.matrix(M, N), ldc, kPad);
  for (double beta : {0.0, 0.5}) {
    const auto dyn = run(0, C, [&](auto& g, double* c) {
      gemm<TA, TB>(g, M, N, K, 1.5, A.data(), lda, B.data(), ldb, beta, c, ldc);
    });
    for (int t : {0, 1, 3}) {
      const auto fixed = run(t, C, [&](auto& g, double* c) {
        gemm<TA, TB, M, N, K>(g, M, N, K, 1.5, A.data(), lda, B.data(), ldb, beta, c, ldc);
      });
      EXPECT_TRUE(bitwise_equal(fixed, dyn)) << "t=" << t << " beta=" << beta;
    }
  }
}

}  // namespace

TEST(Gemm, MatchesEigenForEveryTransposeAndGroupSize) {
  check_against_eigen<Trans::No, Trans::No>(101);
  check_against_eigen<Trans::No, Trans::Yes>(102);
  check_against_eigen<Trans::Yes, Trans::No>(103);
  check_against_eigen<Trans::Yes, Trans::Yes>(104);
}

TEST(Gemm, CompileTimeSizesMatchRuntimeBitwise) {
  check_fixed_size<Trans::No, Trans::No>(111);
  check_fixed_size<Trans::No, Trans::Yes>(112);
  check_fixed_size<Trans::Yes, Trans::No>(113);
  check_fixed_size<Trans::Yes, Trans::Yes>(114);
}

TEST(Gemm, AlphaZeroReadsNeitherOperand) {
  Rng rng(120);
  const int m = 4, n = 3, k = 5;
  const std::vector<double> A(m * k, kNaN), B(k * n, kNaN);
  const Mat c0 = rng.matrix(m, n);
  for (int t : groups_and_serial()) {
    const auto out = run(t, to_vec(c0), [&](auto& g, double* c) {
      gemm<Trans::No, Trans::No>(g, m, n, k, 0.0, A.data(), m, B.data(), k, 0.5, c, m);
    });
    EXPECT_TRUE(bitwise_equal(out, to_vec(Mat(0.5 * c0)))) << "t=" << t;
  }
}

TEST(Gemm, EmptyShapes) {
  Rng rng(121);
  const Mat c0 = rng.matrix(3, 2);
  const std::vector<double> A(6, 1.0), B(6, 1.0);
  for (int t : groups_and_serial()) {
    // m or n empty: nothing written.
    auto out = run(t, to_vec(c0), [&](auto& g, double* c) {
      gemm<Trans::No, Trans::No>(g, 0, 2, 3, 1.0, A.data(), 1, B.data(), 3, 0.0, c, 3);
      gemm<Trans::No, Trans::No>(g, 3, 0, 3, 1.0, A.data(), 3, B.data(), 3, 0.0, c, 3);
      gemm<Trans::No, Trans::No>(g, -1, 2, 3, 1.0, A.data(), 1, B.data(), 3, 0.0, c, 3);
    });
    EXPECT_TRUE(bitwise_equal(out, to_vec(c0))) << "t=" << t;
    // k empty: C = beta C, operands unread.
    out = run(t, to_vec(c0), [&](auto& g, double* c) {
      gemm<Trans::No, Trans::No>(g, 3, 2, 0, 1.0, A.data(), 3, B.data(), 1, 2.0, c, 3);
    });
    EXPECT_TRUE(bitwise_equal(out, to_vec(Mat(2.0 * c0)))) << "t=" << t;
  }
}

TEST(Gemm, NegativeControlTransposedOperandIsCaught) {
  Rng rng(130);
  const int n = 6;
  const Mat a = rng.matrix(n, n), b = rng.matrix(n, n);
  const auto A = to_vec(a), B = to_vec(b);
  // Ask for A B but check against A' B: the comparison must reject it.
  const auto out = run(1, poisoned(n * n), [&](auto& g, double* c) {
    gemm<Trans::No, Trans::No>(g, n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, c, n);
  });
  EXPECT_LT(rel_err(to_mat(out, n, n), a * b), 4 * kEps * (n + 2));
  EXPECT_GT(rel_err(to_mat(out, n, n), a.transpose() * b), 1e-3);
  // And a one-ulp-scale perturbation of one entry is still far above the tolerance.
  auto wrong = out;
  wrong[7] += 1e-9;
  EXPECT_GT(rel_err(to_mat(wrong, n, n), a * b), 4 * kEps * (n + 2));
}

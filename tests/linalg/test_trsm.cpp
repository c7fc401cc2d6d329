// trsm against Eigen for all eight Side x Uplo x Trans combinations: rectangular shapes, padded
// leading dimensions, the unreferenced triangle NaN, a group-size sweep with bitwise comparison,
// the compile-time-size path, and per-column agreement with trsv.
#include <gtest/gtest.h>

#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/dense/trsv.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kPad = -7.25;

// A well-conditioned triangular matrix (a Cholesky factor of B B' + n I) in the UL triangle, the
// other strict triangle NaN (a read of it poisons the solution). Returns the dense twin in `t`.
std::vector<double> triangular(Rng& rng, Uplo UL, int n, int ld, Mat& t) {
  const Mat l = Mat(rng.spd(n, n).llt().matrixL());
  t = UL == Uplo::Lower ? l : Mat(l.transpose());
  std::vector<double> v(static_cast<std::size_t>(ld) * n, kNaN);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      if (UL == Uplo::Lower ? i >= j : i <= j) v[i + static_cast<std::size_t>(j) * ld] = t(i, j);
  return v;
}

struct Shape {
  int m, n;
};
const Shape kShapes[] = {{1, 1}, {5, 5}, {14, 14}, {5, 3}, {3, 7}, {14, 1}, {1, 14}, {17, 4}, {4, 33}};

// The checks take the variant and sizes at run time and the kernels as pointers to thin templates:
// only the kernels are instantiated per variant, size and group, the checks once.
template <template <class> class F>
struct OnGroups {
  F<SerialGroup> serial;
  F<ThreadedGroup> threaded;
  template <class... A>
  void operator()(SerialGroup& g, A... a) const { serial(g, a...); }
  template <class... A>
  void operator()(ThreadedGroup& g, A... a) const { threaded(g, a...); }
};
template <class G>
using TrsmFn = void (*)(G& g, int m, int n, double alpha, const double* A, int lda, double* B, int ldb);
template <class G>
using TrsvFn = void (*)(G& g, int n, const double* A, int lda, double* x);
using Trsm = OnGroups<TrsmFn>;
using Trsv = OnGroups<TrsvFn>;

template <Side S, Uplo UL, Trans TA, int M, int N, class G>
void trsm_k(G& g, int m, int n, double alpha, const double* A, int lda, double* B, int ldb) {
  trsm<S, UL, TA, M, N>(g, m, n, alpha, A, lda, B, ldb);
}
template <Uplo UL, Trans TA, class G>
void trsv_k(G& g, int n, const double* A, int lda, double* x) {
  trsv<UL, TA>(g, n, A, lda, x);
}
template <Side S, Uplo UL, Trans TA, int M = kDynamic, int N = kDynamic>
Trsm trsm_of() {
  return {trsm_k<S, UL, TA, M, N, SerialGroup>, trsm_k<S, UL, TA, M, N, ThreadedGroup>};
}

void check_against_eigen(unsigned seed, Side S, Uplo UL, Trans TA, const Trsm& solve, const Trsv& solve_v) {
  Rng rng(seed);
  for (const auto& s : kShapes)
    for (double alpha : {1.0, -0.5}) {
      const int na = S == Side::Left ? s.m : s.n;
      const int lda = na + 2, ldb = s.m + 1;
      Mat t;
      const auto A = triangular(rng, UL, na, lda, t);
      const Mat opa = TA == Trans::No ? t : Mat(t.transpose());
      const Mat b = rng.matrix(s.m, s.n);
      const auto B = store(b, ldb, kPad);
      const Mat want = S == Side::Left ? Mat(opa.lu().solve(alpha * b))
                                       : Mat(opa.transpose().lu().solve(alpha * b.transpose()).transpose());
      auto call = [&](auto& g, double* x) { solve(g, s.m, s.n, alpha, A.data(), lda, x, ldb); };
      const auto ref = run(1, B, call);
      const std::string where = "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " alpha=" + std::to_string(alpha);
      const Mat x = load(ref, s.m, s.n, ldb);
      EXPECT_LT(rel_err(x, want), 1e-13 * na) << where;
      // Backward: op(A) X - alpha B (or X op(A) - alpha B) at rounding level.
      const Mat res = S == Side::Left ? Mat(opa * x - alpha * b) : Mat(x * opa - alpha * b);
      EXPECT_LT(res.cwiseAbs().maxCoeff(), 8 * kEps * na * std::max(1.0, x.cwiseAbs().maxCoeff() * opa.cwiseAbs().maxCoeff()))
          << where;
      for (std::size_t e = 0; e < B.size(); ++e) {
        if (static_cast<int>(e % ldb) >= s.m) {
          EXPECT_TRUE(bitwise_equal({ref[e]}, {B[e]})) << where << " pad";
        }
      }
      for (int g : groups_and_serial()) EXPECT_TRUE(bitwise_equal(run(g, B, call), ref)) << where << " t=" << g;
      // Each column of a left solve is trsv's solution, bit for bit (alpha = 1 only: trsv has none).
      if (S == Side::Left && alpha == 1.0)
        for (int j = 0; j < s.n; ++j) {
          std::vector<double> col(B.begin() + j * ldb, B.begin() + j * ldb + s.m);
          for (int gs : {0, 3}) {
            const auto xj = run(gs, col, [&](auto& g, double* v) { solve_v(g, s.m, A.data(), lda, v); });
            EXPECT_TRUE(bitwise_equal(xj, std::vector<double>(ref.begin() + j * ldb, ref.begin() + j * ldb + s.m)))
                << where << " column " << j;
          }
        }
    }
}

template <Side S, Uplo UL, Trans TA>
void check_against_eigen(unsigned seed) {
  check_against_eigen(seed, S, UL, TA, trsm_of<S, UL, TA>(),
                      {trsv_k<UL, TA, SerialGroup>, trsv_k<UL, TA, ThreadedGroup>});
}

// dynamic: trsm<S, UL, TA>; fixed: trsm<S, UL, TA, M, N>.
void check_fixed_size(unsigned seed, Side S, Uplo UL, int M, int N, const Trsm& dynamic, const Trsm& fixed_size) {
  Rng rng(seed);
  const int na = S == Side::Left ? M : N;
  const int lda = na + 1, ldb = M + 2;
  Mat t;
  const auto A = triangular(rng, UL, na, lda, t);
  const auto B = store(rng.matrix(M, N), ldb, kPad);
  for (double alpha : {1.0, 0.75}) {
    const auto dyn = run(0, B, [&](auto& g, double* x) { dynamic(g, M, N, alpha, A.data(), lda, x, ldb); });
    for (int gs : {0, 1, 3}) {
      const auto fixed =
          run(gs, B, [&](auto& g, double* x) { fixed_size(g, M, N, alpha, A.data(), lda, x, ldb); });
      EXPECT_TRUE(bitwise_equal(fixed, dyn)) << "M=" << M << " N=" << N << " t=" << gs;
    }
  }
}

template <Side S, Uplo UL, Trans TA, int M, int N>
void check_fixed_size(unsigned seed) {
  check_fixed_size(seed, S, UL, M, N, trsm_of<S, UL, TA>(), trsm_of<S, UL, TA, M, N>());
}

template <Side S, Uplo UL, Trans TA>
void check_fixed_sizes(unsigned seed) {
  check_fixed_size<S, UL, TA, 1, 1>(seed);
  check_fixed_size<S, UL, TA, 5, 3>(seed + 1);
  check_fixed_size<S, UL, TA, 14, 14>(seed + 2);
  check_fixed_size<S, UL, TA, 33, 2>(seed + 3);  // past the register path (32)
  check_fixed_size<S, UL, TA, 2, 33>(seed + 4);
}

}  // namespace

TEST(Trsm, LeftMatchesEigenForEveryGroupSize) {
  check_against_eigen<Side::Left, Uplo::Lower, Trans::No>(501);
  check_against_eigen<Side::Left, Uplo::Lower, Trans::Yes>(502);
  check_against_eigen<Side::Left, Uplo::Upper, Trans::No>(503);
  check_against_eigen<Side::Left, Uplo::Upper, Trans::Yes>(504);
}

TEST(Trsm, RightMatchesEigenForEveryGroupSize) {
  check_against_eigen<Side::Right, Uplo::Lower, Trans::No>(505);
  check_against_eigen<Side::Right, Uplo::Lower, Trans::Yes>(506);
  check_against_eigen<Side::Right, Uplo::Upper, Trans::No>(507);
  check_against_eigen<Side::Right, Uplo::Upper, Trans::Yes>(508);
}

TEST(Trsm, CompileTimeSizesMatchRuntimeBitwise) {
  check_fixed_sizes<Side::Left, Uplo::Lower, Trans::No>(511);
  check_fixed_sizes<Side::Left, Uplo::Lower, Trans::Yes>(516);
  check_fixed_sizes<Side::Left, Uplo::Upper, Trans::No>(521);
  check_fixed_sizes<Side::Left, Uplo::Upper, Trans::Yes>(526);
  check_fixed_sizes<Side::Right, Uplo::Lower, Trans::No>(531);
  check_fixed_sizes<Side::Right, Uplo::Lower, Trans::Yes>(536);
  check_fixed_sizes<Side::Right, Uplo::Upper, Trans::No>(541);
  check_fixed_sizes<Side::Right, Uplo::Upper, Trans::Yes>(546);
}

TEST(Trsm, AlphaZeroZeroesBWithoutReadingA) {
  const std::vector<double> A(9, kNaN);
  const std::vector<double> b = {1.0, 2.0, kNaN, 4.0, 5.0, 6.0};
  for (int t : groups_and_serial()) {
    auto x = run(t, b, [&](auto& g, double* p) { trsm<Side::Left, Uplo::Lower, Trans::No>(g, 3, 2, 0.0, A.data(), 3, p, 3); });
    EXPECT_TRUE(bitwise_equal(x, std::vector<double>(6, 0.0))) << "t=" << t;
    x = run(t, b, [&](auto& g, double* p) { trsm<Side::Right, Uplo::Upper, Trans::Yes, 2, 3>(g, 2, 3, 0.0, A.data(), 3, p, 2); });
    EXPECT_TRUE(bitwise_equal(x, std::vector<double>(6, 0.0))) << "t=" << t;
  }
}

TEST(Trsm, EmptyShapesWriteNothing) {
  const std::vector<double> A = {2.0}, b = {1.0, 2.0, 3.0};
  for (int t : groups_and_serial()) {
    const auto x = run(t, b, [&](auto& g, double* p) {
      trsm<Side::Left, Uplo::Lower, Trans::No>(g, 0, 3, 1.0, A.data(), 1, p, 1);
      trsm<Side::Left, Uplo::Lower, Trans::No>(g, 1, 0, 1.0, A.data(), 1, p, 1);
      trsm<Side::Right, Uplo::Upper, Trans::No>(g, 3, 0, 1.0, A.data(), 1, p, 3);
      trsm<Side::Right, Uplo::Upper, Trans::No>(g, -1, 1, 1.0, A.data(), 1, p, 1);
    });
    EXPECT_TRUE(bitwise_equal(x, b)) << "t=" << t;
  }
}

TEST(Trsm, NegativeControlWrongSideOrTriangleIsCaught) {
  Rng rng(550);
  const int n = 6;
  Mat t;
  const auto A = triangular(rng, Uplo::Lower, n, n, t);
  const Mat b = rng.matrix(n, n);
  const auto x = run(1, to_vec(b), [&](auto& g, double* p) { trsm<Side::Left, Uplo::Lower, Trans::No>(g, n, n, 1.0, A.data(), n, p, n); });
  const Mat right = t.lu().solve(b);
  EXPECT_LT(rel_err(to_mat(x, n, n), right), 1e-13 * n);
  // The same data solved from the other side, or with the transpose, is rejected.
  EXPECT_GT(rel_err(to_mat(x, n, n), Mat(b * t.inverse())), 1e-3);
  EXPECT_GT(rel_err(to_mat(x, n, n), Mat(t.transpose().lu().solve(b))), 1e-3);
  Mat nudged = to_mat(x, n, n);
  nudged(2, 4) += 1e-9;
  EXPECT_GT(rel_err(nudged, right), 1e-13 * n);
}

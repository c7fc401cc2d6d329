// trsv against Eigen for both triangles and transposes, the unreferenced triangle NaN, a
// group-size sweep with bitwise comparison (the cooperative sweep), and the compile-time-size path.
#include <gtest/gtest.h>

#include "knot/linalg/dense/trsv.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

// A well-conditioned triangular matrix in the UL triangle (leading dimension ld), the rest NaN.
std::vector<double> triangular(Rng& rng, Uplo UL, int n, int ld, Mat& t) {
  const Mat l = Mat(rng.spd(n, n).llt().matrixL());
  t = UL == Uplo::Lower ? l : Mat(l.transpose());
  std::vector<double> v(static_cast<std::size_t>(ld) * n, kNaN);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      if (UL == Uplo::Lower ? i >= j : i <= j) v[i + static_cast<std::size_t>(j) * ld] = t(i, j);
  return v;
}

// The checks take the variant and size at run time and the kernel as a pointer to a thin template:
// only the kernels are instantiated per variant, size and group, the checks once.
template <class G>
using TrsvFn = void (*)(G& g, int n, const double* A, int lda, double* x);
struct Trsv {
  TrsvFn<SerialGroup> serial;
  TrsvFn<ThreadedGroup> threaded;
  void operator()(SerialGroup& g, int n, const double* A, int lda, double* x) const { serial(g, n, A, lda, x); }
  void operator()(ThreadedGroup& g, int n, const double* A, int lda, double* x) const { threaded(g, n, A, lda, x); }
};

template <Uplo UL, Trans TA, int N, class G>
void trsv_k(G& g, int n, const double* A, int lda, double* x) {
  trsv<UL, TA, N>(g, n, A, lda, x);
}
template <Uplo UL, Trans TA, int N = kDynamic>
Trsv trsv_of() {
  return {trsv_k<UL, TA, N, SerialGroup>, trsv_k<UL, TA, N, ThreadedGroup>};
}

void check_against_eigen(unsigned seed, Uplo UL, Trans TA, const Trsv& solve) {
  Rng rng(seed);
  for (int n : {1, 2, 5, 14, 17, 33, 40}) {
    const int lda = n + 3;
    Mat t;
    const auto A = triangular(rng, UL, n, lda, t);
    const Mat opa = TA == Trans::No ? t : Mat(t.transpose());
    const Vec b = rng.vector(n);
    const Vec want = opa.lu().solve(b);
    auto call = [&](auto& g, double* x) { solve(g, n, A.data(), lda, x); };
    const auto ref = run(1, to_vec(b), call);
    const Vec x = to_mat(ref, n, 1);
    EXPECT_LT(rel_err(x, want), 1e-13 * n) << "n=" << n;
    EXPECT_LT((opa * x - b).cwiseAbs().maxCoeff(),
              8 * kEps * n * std::max(1.0, x.cwiseAbs().maxCoeff() * opa.cwiseAbs().maxCoeff()))
        << "n=" << n;
    for (int g : groups_and_serial()) EXPECT_TRUE(bitwise_equal(run(g, to_vec(b), call), ref)) << "n=" << n << " t=" << g;
  }
}

template <Uplo UL, Trans TA>
void check_against_eigen(unsigned seed) {
  check_against_eigen(seed, UL, TA, trsv_of<UL, TA>());
}

// dynamic: trsv<UL, TA>; fixed_size: trsv<UL, TA, N>.
void check_fixed_size(unsigned seed, Uplo UL, int N, const Trsv& dynamic, const Trsv& fixed_size) {
  Rng rng(seed);
  Mat t;
  const auto A = triangular(rng, UL, N, N + 1, t);
  const auto b = to_vec(rng.vector(N));
  const auto dyn = run(3, b, [&](auto& g, double* x) { dynamic(g, N, A.data(), N + 1, x); });
  for (int gs : {0, 1, 3}) {
    const auto fixed = run(gs, b, [&](auto& g, double* x) { fixed_size(g, N, A.data(), N + 1, x); });
    EXPECT_TRUE(bitwise_equal(fixed, dyn)) << "N=" << N << " t=" << gs;
  }
}

template <Uplo UL, Trans TA, int N>
void check_fixed_size(unsigned seed) {
  check_fixed_size(seed, UL, N, trsv_of<UL, TA>(), trsv_of<UL, TA, N>());
}

template <Uplo UL, Trans TA>
void check_fixed_sizes(unsigned seed) {
  check_fixed_size<UL, TA, 1>(seed);
  check_fixed_size<UL, TA, 7>(seed + 1);
  check_fixed_size<UL, TA, 14>(seed + 2);
  check_fixed_size<UL, TA, 32>(seed + 3);
  check_fixed_size<UL, TA, 33>(seed + 4);  // past the register path
}

}  // namespace

TEST(Trsv, MatchesEigenForEveryCombinationAndGroupSize) {
  check_against_eigen<Uplo::Lower, Trans::No>(601);
  check_against_eigen<Uplo::Lower, Trans::Yes>(602);
  check_against_eigen<Uplo::Upper, Trans::No>(603);
  check_against_eigen<Uplo::Upper, Trans::Yes>(604);
}

TEST(Trsv, CompileTimeSizeMatchesRuntimeBitwise) {
  check_fixed_sizes<Uplo::Lower, Trans::No>(611);
  check_fixed_sizes<Uplo::Lower, Trans::Yes>(616);
  check_fixed_sizes<Uplo::Upper, Trans::No>(621);
  check_fixed_sizes<Uplo::Upper, Trans::Yes>(626);
}

TEST(Trsv, EmptyWritesNothing) {
  const std::vector<double> A = {2.0}, b = {1.0, 2.0};
  for (int t : groups_and_serial()) {
    const auto x = run(t, b, [&](auto& g, double* p) {
      trsv<Uplo::Lower, Trans::No>(g, 0, A.data(), 1, p);
      trsv<Uplo::Upper, Trans::Yes>(g, -3, A.data(), 1, p);
    });
    EXPECT_TRUE(bitwise_equal(x, b)) << "t=" << t;
  }
}

TEST(Trsv, NegativeControlWrongTriangleIsCaught) {
  Rng rng(650);
  const int n = 7;
  Mat t;
  const auto A = triangular(rng, Uplo::Lower, n, n, t);
  const Vec b = rng.vector(n);
  const auto x = run(2, to_vec(b), [&](auto& g, double* p) { trsv<Uplo::Lower, Trans::No>(g, n, A.data(), n, p); });
  const Vec right = t.lu().solve(b);
  EXPECT_LT(rel_err(to_mat(x, n, 1), right), 1e-13 * n);
  EXPECT_GT(rel_err(to_mat(x, n, 1), Vec(t.transpose().lu().solve(b))), 1e-3);
  Vec nudged = to_mat(x, n, 1);
  nudged(3) += 1e-9;
  EXPECT_GT(rel_err(nudged, right), 1e-13 * n);
}

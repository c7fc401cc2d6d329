// potrf against Eigen's LLT: residual and factor, the strict upper triangle untouched, a
// group-size sweep with bitwise comparison, the compile-time-size path, exact failure reporting
// for planted non-positive minors and non-finite input, and the strided core's storage orders.
#include <gtest/gtest.h>

#include "knot/linalg/dense/potrf.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

Mat lower_of(const std::vector<double>& v, int n, int ld) {
  Mat l = Mat::Zero(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) l(i, j) = v[i + static_cast<std::size_t>(j) * ld];
  return l;
}

// Every entry outside the lower triangle (strict upper and pads) is bitwise as it came in.
bool outside_lower_intact(const std::vector<double>& out, const std::vector<double>& in, int n, int ld) {
  for (std::size_t e = 0; e < in.size(); ++e) {
    const int i = static_cast<int>(e % ld), j = static_cast<int>(e / ld);
    if ((i >= n || i < j) && !bitwise_equal({out[e]}, {in[e]})) return false;
  }
  return true;
}

struct Result {
  std::vector<double> a;
  std::vector<int> ret;  // what each member returned
  int info = -99;        // what *info was set to
};

// fn(group, A, &info) -> int, on a copy of `a`: t == 0 on a SerialGroup, else on t threads.
template <class Fn>
Result run_potrf(int t, std::vector<double> a, Fn fn) {
  Result r;
  if (t == 0) {
    SerialGroup g;
    r.ret = {fn(g, a.data(), &r.info)};
  } else {
    r.ret.assign(t, -99);
    run_threaded(t, [&](ThreadedGroup& g) { r.ret[g.rank()] = fn(g, a.data(), &r.info); });
  }
  r.a = std::move(a);
  return r;
}

double residual(const Mat& l, const Mat& a) { return (l * l.transpose() - a).cwiseAbs().maxCoeff() / a.cwiseAbs().maxCoeff(); }

// The check takes N at run time and potrf<N> as pointers to a thin template: only the kernel is
// instantiated per size and group, the check once.
template <class G>
using PotrfFn = int (*)(G& g, int n, double* A, int lda, int* info);
struct FixedPotrf {
  PotrfFn<SerialGroup> serial;
  PotrfFn<ThreadedGroup> threaded;
  int operator()(SerialGroup& g, int n, double* A, int lda, int* info) const { return serial(g, n, A, lda, info); }
  int operator()(ThreadedGroup& g, int n, double* A, int lda, int* info) const { return threaded(g, n, A, lda, info); }
};
template <int N, class G>
int potrf_n(G& g, int n, double* A, int lda, int* info) {
  return potrf<N>(g, n, A, lda, info);
}

void check_fixed_size(Rng& rng, int N, const FixedPotrf& fixed_potrf) {
  const Mat a = rng.spd(N, 1.0);
  const int ld = N + 1;
  const auto A = store_lower(a, ld);
  const auto dyn = run_potrf(0, A, [&](auto& g, double* p, int* info) { return potrf(g, N, p, ld, info); });
  EXPECT_TRUE(all_equal(dyn.ret, 0));
  for (int t : {0, 1, 3}) {
    const auto fixed = run_potrf(t, A, [&](auto& g, double* p, int* info) { return fixed_potrf(g, N, p, ld, info); });
    EXPECT_TRUE(bitwise_equal(fixed.a, dyn.a)) << "N=" << N << " t=" << t;
    EXPECT_TRUE(all_equal(fixed.ret, 0));
    EXPECT_EQ(fixed.info, 0);
  }
  // A failing pivot stops the fixed path exactly where it stops the cooperative one.
  const int k = (N + 1) / 2;
  const auto B = store_lower(planted(rng, N, k, -0.25), ld);
  const auto dyn_bad = run_potrf(2, B, [&](auto& g, double* p, int* info) { return potrf(g, N, p, ld, info); });
  const auto fixed_bad = run_potrf(0, B, [&](auto& g, double* p, int* info) { return fixed_potrf(g, N, p, ld, info); });
  EXPECT_TRUE(all_equal(dyn_bad.ret, k));
  EXPECT_TRUE(all_equal(fixed_bad.ret, k));
  EXPECT_TRUE(bitwise_equal(fixed_bad.a, dyn_bad.a)) << "N=" << N;
}

template <int N>
void check_fixed_size(Rng& rng) {
  check_fixed_size(rng, N, {potrf_n<N, SerialGroup>, potrf_n<N, ThreadedGroup>});
}

}  // namespace

TEST(Potrf, MatchesEigenAndIsBitwiseInvariant) {
  Rng rng(401);
  for (int n : {1, 2, 5, 7, 14, 16, 17, 33}) {
    const Mat a = rng.spd(n, 1.0);
    const int ld = n + 3;
    const auto A = store_lower(a, ld);
    auto call = [&](auto& g, double* p, int* info) { return potrf(g, n, p, ld, info); };
    const auto ref = run_potrf(1, A, call);
    ASSERT_TRUE(all_equal(ref.ret, 0)) << "n=" << n;
    EXPECT_EQ(ref.info, 0);
    const Mat l = lower_of(ref.a, n, ld);
    EXPECT_LT(residual(l, a), 4 * kEps * (n + 1)) << "n=" << n;
    const Mat eigen_l = a.llt().matrixL();
    EXPECT_LT(rel_err(l, eigen_l), 1e-12) << "n=" << n;
    EXPECT_TRUE(outside_lower_intact(ref.a, A, n, ld)) << "n=" << n;
    for (int t : groups_and_serial()) {
      const auto r = run_potrf(t, A, call);
      EXPECT_TRUE(bitwise_equal(r.a, ref.a)) << "n=" << n << " t=" << t;
      EXPECT_TRUE(all_equal(r.ret, 0)) << "n=" << n << " t=" << t;
      EXPECT_EQ(r.info, 0);
    }
  }
}

TEST(Potrf, CompileTimeSizeMatchesRuntimeBitwise) {
  Rng rng(402);
  check_fixed_size<1>(rng);
  check_fixed_size<4>(rng);
  check_fixed_size<7>(rng);
  check_fixed_size<14>(rng);
  check_fixed_size<16>(rng);
  check_fixed_size<17>(rng);  // past the register path: the cooperative loop with a fixed n
}

TEST(Potrf, PlantedNonPositiveMinorReportsItsOrderExactly) {
  Rng rng(403);
  for (int n : {1, 5, 14, 33})
    for (int k = 1; k <= n; k += (n > 5 ? 3 : 1))
      for (double pivot : {-0.5, 0.0}) {
        Mat a = planted(rng, n, k, pivot);
        if (pivot == 0.0) {
          // An exactly zero pivot needs exact arithmetic: a diagonal matrix with a zero at k-1.
          a = Mat::Identity(n, n) * 2.0;
          a(k - 1, k - 1) = 0.0;
        }
        const int ld = n + 2;
        const auto A = store_lower(a, ld);
        auto call = [&](auto& g, double* p, int* info) { return potrf(g, n, p, ld, info); };
        const auto ref = run_potrf(1, A, call);
        const std::string where = "n=" + std::to_string(n) + " k=" + std::to_string(k) + " pivot=" + std::to_string(pivot);
        EXPECT_EQ(ref.info, k) << where;
        for (int t : groups_and_serial()) {
          const auto r = run_potrf(t, A, call);
          EXPECT_TRUE(all_equal(r.ret, k)) << where << " t=" << t;
          EXPECT_EQ(r.info, k) << where << " t=" << t;
          EXPECT_TRUE(bitwise_equal(r.a, ref.a)) << where << " t=" << t;
        }
        // Columns k-1 onwards come back as they went in; earlier ones hold the factor so far,
        // finite; nothing outside the lower triangle is touched.
        for (int j = 0; j < n; ++j)
          for (int i = j; i < n; ++i) {
            const std::size_t e = i + static_cast<std::size_t>(j) * ld;
            if (j >= k - 1) {
              EXPECT_TRUE(bitwise_equal({ref.a[e]}, {A[e]})) << where;
            } else {
              EXPECT_TRUE(std::isfinite(ref.a[e])) << where;
            }
          }
        EXPECT_TRUE(outside_lower_intact(ref.a, A, n, ld)) << where;
        if (k > 1) {
          // The factor so far is the true leading factor.
          const Mat l = lower_of(ref.a, n, ld).topLeftCorner(k - 1, k - 1);
          EXPECT_LT(residual(l, a.topLeftCorner(k - 1, k - 1)), 4 * kEps * n) << where;
        }
      }
}

TEST(Potrf, NonFiniteInputGivesNonzeroInfoWithoutCrashing) {
  Rng rng(404);
  const int n = 9, ld = n;
  const Mat a = rng.spd(n, 1.0);
  struct Poison {
    int i, j;
    double value;
    int info;  // the first pivot that sees it
  };
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (const Poison& p : {Poison{0, 0, kNaN, 1}, Poison{4, 4, kNaN, 5}, Poison{6, 2, kNaN, 7},
                          Poison{3, 3, inf, 4}, Poison{8, 1, inf, 9}, Poison{5, 5, -inf, 6}}) {
    auto A = store_lower(a, ld);
    A[p.i + p.j * ld] = p.value;
    for (int t : groups_and_serial()) {
      const auto r = run_potrf(t, A, [&](auto& g, double* x, int* info) { return potrf(g, n, x, ld, info); });
      EXPECT_TRUE(all_equal(r.ret, p.info)) << "(" << p.i << "," << p.j << ") t=" << t;
      EXPECT_EQ(r.info, p.info);
    }
    // The fixed-size register path agrees.
    const auto f = run_potrf(0, A, [&](auto& g, double* x, int* info) { return potrf<n>(g, n, x, ld, info); });
    EXPECT_EQ(f.info, p.info);
  }
}

TEST(Potrf, StridedCoreServesFourStorageOrders) {
  Rng rng(405);
  const int n = 11, ld = n + 2;
  const Mat a = rng.spd(n, 1.0);
  const auto A = store_lower(a, ld);
  const auto ref = run_potrf(1, A, [&](auto& g, double* p, int* info) { return potrf(g, n, p, ld, info); });
  // Column-major lower through the strided core: the very same bits.
  for (int t : {0, 1, 3, 32}) {
    const auto r = run_potrf(t, A, [&](auto& g, double* p, int* info) { return potrf_strided(g, n, p, 1, ld, info); });
    EXPECT_TRUE(bitwise_equal(r.a, ref.a)) << "t=" << t;
  }
  // Column-major upper (A = U'U): the upper triangle of the same matrix, rs = ld, cs = 1. U is L'
  // bit for bit, and the lower triangle (NaN here) is neither read nor written.
  std::vector<double> U(A.size(), kNaN);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i <= j; ++i) U[i + j * ld] = a(j, i);  // a's lower triangle, mirrored
  for (int t : {0, 1, 3, 32}) {
    const auto r = run_potrf(t, U, [&](auto& g, double* p, int* info) { return potrf_strided(g, n, p, ld, 1, info); });
    EXPECT_TRUE(all_equal(r.ret, 0));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const double got = r.a[i + j * ld];
        EXPECT_TRUE(bitwise_equal({got}, {i <= j ? ref.a[j + i * ld] : kNaN})) << i << "," << j << " t=" << t;
      }
  }
  // Row-major lower (rs = ld, cs = 1) is the same bytes as column-major upper, and row-major upper
  // (rs = 1, cs = ld) the same bytes as column-major lower: the two cases above cover them.
  // A fixed n through the strided core matches too.
  const auto fixed = run_potrf(0, U, [&](auto& g, double* p, int* info) { return potrf_strided<n>(g, n, p, ld, 1, info); });
  const auto dyn = run_potrf(0, U, [&](auto& g, double* p, int* info) { return potrf_strided(g, n, p, ld, 1, info); });
  EXPECT_TRUE(bitwise_equal(fixed.a, dyn.a));
}

TEST(Potrf, EmptyMatrixSucceedsAndWritesNothing) {
  const std::vector<double> A = {3.0, -1.0};
  for (int t : groups_and_serial())
    for (int n : {0, -2}) {
      const auto r = run_potrf(t, A, [&](auto& g, double* p, int* info) { return potrf(g, n, p, 1, info); });
      EXPECT_TRUE(all_equal(r.ret, 0));
      EXPECT_EQ(r.info, 0);
      EXPECT_TRUE(bitwise_equal(r.a, A));
    }
  // info may be omitted.
  std::vector<double> one = {4.0};
  SerialGroup g;
  EXPECT_EQ(potrf(g, 1, one.data(), 1), 0);
  EXPECT_EQ(one[0], 2.0);
}

TEST(Potrf, NegativeControlChecksRejectWrongFactors) {
  Rng rng(406);
  const int n = 8;
  const Mat a = rng.spd(n, 1.0);
  const auto r = run_potrf(1, store_lower(a, n), [&](auto& g, double* p, int* info) { return potrf(g, n, p, n, info); });
  Mat l = lower_of(r.a, n, n);
  ASSERT_LT(residual(l, a), 4 * kEps * (n + 1));
  l(5, 2) *= 1.0 + 1e-9;  // one entry a few million ulps off
  EXPECT_GT(residual(l, a), 4 * kEps * (n + 1));
  // An entry left unwritten (still NaN) fails every comparison.
  Mat unwritten = lower_of(r.a, n, n);
  unwritten(6, 6) = kNaN;
  EXPECT_FALSE(rel_err(unwritten, Mat(a.llt().matrixL())) < 1e-12);
}

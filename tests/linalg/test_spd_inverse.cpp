// spd_inverse: A Ainv = I at rounding level, exact symmetry, agreement with Eigen, a group-size
// sweep with bitwise comparison, the compile-time-size path, and failure leaving Ainv untouched.
#include <gtest/gtest.h>

#include "knot/linalg/dense/spd_inverse.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kPad = -7.25;

// The symmetric matrix whose lower triangle is a's.
Mat symmetric_from_lower(const Mat& a) {
  Mat s = a.triangularView<Eigen::Lower>();
  s.triangularView<Eigen::StrictlyUpper>() = a.triangularView<Eigen::StrictlyLower>().transpose();
  return s;
}

struct Result {
  std::vector<double> inv, scratch;
  std::vector<int> ret;
  int info = -99;
};

// Inverse of the stored A on t threads (0: SerialGroup) into a NaN-poisoned Ainv (pads kPad).
template <class Fn>
Result run(int t, int n, std::vector<double> inv, Fn fn) {
  Result r;
  r.scratch = poisoned(std::max(spd_inverse_scratch_size(n), 1));
  if (t == 0) {
    SerialGroup g;
    r.ret = {fn(g, inv.data(), r.scratch.data(), &r.info)};
  } else {
    r.ret.assign(t, -99);
    run_threaded(t, [&](ThreadedGroup& g) { r.ret[g.rank()] = fn(g, inv.data(), r.scratch.data(), &r.info); });
  }
  r.inv = std::move(inv);
  return r;
}

std::vector<double> poisoned_output(int n, int ldi) {
  std::vector<double> v(static_cast<std::size_t>(ldi) * std::max(n, 1), kPad);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) v[i + static_cast<std::size_t>(j) * ldi] = kNaN;
  return v;
}

Mat load(const std::vector<double>& v, int n, int ld) {
  Mat m(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) m(i, j) = v[i + static_cast<std::size_t>(j) * ld];
  return m;
}

bool exactly_symmetric(const Mat& m) {
  for (int j = 0; j < m.cols(); ++j)
    for (int i = 0; i < j; ++i)
      if (!bitwise_equal({m(i, j)}, {m(j, i)})) return false;
  return true;
}

template <int N>
void check_fixed_size(unsigned seed) {
  Rng rng(seed);
  const Mat a = rng.spd(N, 1.0);
  const int lda = N + 1, ldi = N + 2;
  const auto A = store_lower(a, lda);
  const auto out = poisoned_output(N, ldi);
  const auto dyn = run(0, N, out, [&](auto& g, double* inv, double* s, int* info) {
    return spd_inverse(g, N, A.data(), lda, inv, ldi, s, info);
  });
  for (int t : {0, 1, 3}) {
    const auto fixed = run(t, N, out, [&](auto& g, double* inv, double* s, int* info) {
      return spd_inverse<N>(g, N, A.data(), lda, inv, ldi, s, info);
    });
    EXPECT_TRUE(bitwise_equal(fixed.inv, dyn.inv)) << "N=" << N << " t=" << t;
    EXPECT_TRUE(all_equal(fixed.ret, 0));
  }
}

}  // namespace

TEST(SpdInverse, InvertsExactlySymmetricallyForEveryGroupSize) {
  Rng rng(701);
  for (int n : {1, 2, 5, 7, 14, 17, 33}) {
    const Mat a = symmetric_from_lower(rng.spd(n, 1.0));
    const int lda = n + 1, ldi = n + 3;
    const auto A = store_lower(a, lda);
    const auto out = poisoned_output(n, ldi);
    auto call = [&](auto& g, double* inv, double* s, int* info) { return spd_inverse(g, n, A.data(), lda, inv, ldi, s, info); };
    const auto ref = run(1, n, out, call);
    ASSERT_TRUE(all_equal(ref.ret, 0)) << "n=" << n;
    EXPECT_EQ(ref.info, 0);
    const Mat inv = load(ref.inv, n, ldi);
    const double cond = a.norm() * a.inverse().norm();
    EXPECT_LT((a * inv - Mat::Identity(n, n)).cwiseAbs().maxCoeff(), 4 * kEps * n * cond) << "n=" << n;
    EXPECT_LT(rel_err(inv, Mat(a.inverse())), 4 * kEps * n * cond) << "n=" << n;
    EXPECT_TRUE(exactly_symmetric(inv)) << "n=" << n;
    for (std::size_t e = 0; e < out.size(); ++e) {
      if (static_cast<int>(e % ldi) >= n) {
        EXPECT_TRUE(bitwise_equal({ref.inv[e]}, {kPad})) << "n=" << n << " pad";
      }
    }
    for (int t : groups_and_serial()) {
      const auto r = run(t, n, out, call);
      EXPECT_TRUE(bitwise_equal(r.inv, ref.inv)) << "n=" << n << " t=" << t;
      EXPECT_TRUE(all_equal(r.ret, 0)) << "n=" << n << " t=" << t;
    }
  }
}

TEST(SpdInverse, CompileTimeSizeMatchesRuntimeBitwise) {
  check_fixed_size<1>(711);
  check_fixed_size<4>(712);
  check_fixed_size<7>(713);
  check_fixed_size<14>(714);
  check_fixed_size<20>(715);
}

TEST(SpdInverse, FailureReportsPotrfInfoAndLeavesAinvUntouched) {
  Rng rng(720);
  const int n = 8, ld = n;
  for (int k : {1, 4, 8}) {
    Mat a = rng.spd(n, 1.0);
    a(k - 1, k - 1) = -1.0;  // pivot k-1 is then below -1: the first failure is at order k
    const auto A = store_lower(a, ld);
    std::vector<double> l = A;
    SerialGroup sg;
    const int want = potrf(sg, n, l.data(), ld);
    ASSERT_EQ(want, k);
    const std::vector<double> out(n * n, 42.0);
    for (int t : groups_and_serial()) {
      const auto r = run(t, n, out, [&](auto& g, double* inv, double* s, int* info) {
        return spd_inverse(g, n, A.data(), ld, inv, ld, s, info);
      });
      EXPECT_TRUE(all_equal(r.ret, want)) << "k=" << k << " t=" << t;
      EXPECT_EQ(r.info, want);
      EXPECT_TRUE(bitwise_equal(r.inv, out)) << "k=" << k << " t=" << t;
    }
  }
}

TEST(SpdInverse, EmptyMatrix) {
  EXPECT_EQ(spd_inverse_scratch_size(0), 0);
  EXPECT_EQ(spd_inverse_scratch_size(-1), 0);
  EXPECT_EQ(spd_inverse_scratch_size(5), 25);
  const std::vector<double> A = {1.0}, out = {42.0};
  for (int t : groups_and_serial()) {
    const auto r = run(t, 0, out, [&](auto& g, double* inv, double* s, int* info) {
      return spd_inverse(g, 0, A.data(), 1, inv, 1, s, info);
    });
    EXPECT_TRUE(all_equal(r.ret, 0));
    EXPECT_EQ(r.info, 0);
    EXPECT_TRUE(bitwise_equal(r.inv, out));
  }
}

TEST(SpdInverse, NegativeControlWrongInverseIsCaught) {
  Rng rng(730);
  const int n = 6;
  const Mat a = symmetric_from_lower(rng.spd(n, 1.0));
  const auto A = store_lower(a, n);
  const auto r = run(1, n, poisoned_output(n, n), [&](auto& g, double* inv, double* s, int* info) {
    return spd_inverse(g, n, A.data(), n, inv, n, s, info);
  });
  const double cond = a.norm() * a.inverse().norm();
  Mat inv = load(r.inv, n, n);
  ASSERT_LT((a * inv - Mat::Identity(n, n)).cwiseAbs().maxCoeff(), 4 * kEps * n * cond);
  inv(1, 3) += 1e-9;  // and an asymmetric result is seen too
  EXPECT_GT((a * inv - Mat::Identity(n, n)).cwiseAbs().maxCoeff(), 4 * kEps * n * cond);
  EXPECT_FALSE(exactly_symmetric(inv));
}

// cholesky (potrf/potrs/posv with cuSolverDx semantics) against Eigen's LLT: every fill mode and
// arrangement, the exact order of a planted non-positive-definite leading minor, solves with one and
// several right-hand sides, group-size sweeps with bitwise comparison, several systems per group
// (sub-groups) against one system at a time, the barrier counts the sub-groups rely on, NaN
// isolation between systems, and negative controls.
#include <gtest/gtest.h>

#include <string>

#include "knot/linalg/cholesky.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

template <Arrangement AR>
std::size_t at(int i, int j, int ld) {
  return AR == Arrangement::ColMajor ? i + static_cast<std::size_t>(j) * ld : static_cast<std::size_t>(i) * ld + j;
}

bool in_triangle(Uplo ul, int i, int j) { return ul == Uplo::Lower ? i >= j : i <= j; }

// The UL triangle of symmetric a in arrangement AR, leading dimension ld; all else NaN.
template <Uplo UL, Arrangement AR>
std::vector<double> store(const Mat& a, int ld) {
  const int n = static_cast<int>(a.rows());
  std::vector<double> v(static_cast<std::size_t>(ld) * std::max(n, 1), kNaN);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      if (in_triangle(UL, i, j)) v[at<AR>(i, j, ld)] = a(i, j);
  return v;
}

// L (lower) from the factor: L itself (Lower) or U' (Upper).
template <Uplo UL, Arrangement AR>
Mat lower_factor(const std::vector<double>& v, int n, int ld) {
  Mat l = Mat::Zero(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) l(i, j) = UL == Uplo::Lower ? v[at<AR>(i, j, ld)] : v[at<AR>(j, i, ld)];
  return l;
}

// Everything outside the UL triangle (and the pads) is bitwise as it came in.
template <Uplo UL, Arrangement AR>
bool outside_intact(const std::vector<double>& out, const std::vector<double>& in, int n, int ld) {
  for (int j = 0; j < std::max(n, 1); ++j)
    for (int i = 0; i < ld; ++i) {
      const std::size_t e = AR == Arrangement::ColMajor ? i + static_cast<std::size_t>(j) * ld : static_cast<std::size_t>(j) * ld + i;
      const int row = AR == Arrangement::ColMajor ? i : j, col = AR == Arrangement::ColMajor ? j : i;
      if ((row >= n || col >= n || !in_triangle(UL, row, col)) && !bitwise_equal({out[e]}, {in[e]})) return false;
    }
  return true;
}

// B (n x nrhs) in arrangement AR with leading dimension ldb, pads NaN.
template <Arrangement AR>
std::vector<double> store_rhs(const Mat& b, int ldb) {
  const int n = static_cast<int>(b.rows()), m = static_cast<int>(b.cols());
  const std::size_t size = AR == Arrangement::ColMajor ? static_cast<std::size_t>(ldb) * m : static_cast<std::size_t>(ldb) * n;
  std::vector<double> v(size, kNaN);
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i) v[at<AR>(i, j, ldb)] = b(i, j);
  return v;
}

template <Arrangement AR>
Mat load_rhs(const std::vector<double>& v, int n, int m, int ldb) {
  Mat b(n, m);
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i) b(i, j) = v[at<AR>(i, j, ldb)];
  return b;
}

struct Result {
  std::vector<double> a, b;
  std::vector<int> ret;
  int info = -99;
};

// fn(group, A, B, &info) -> int on t threads (t == 0: SerialGroup).
template <class Fn>
Result run_ab(int t, std::vector<double> a, std::vector<double> b, Fn fn) {
  Result r;
  if (t == 0) {
    SerialGroup g;
    r.ret = {fn(g, a.data(), b.data(), &r.info)};
  } else {
    r.ret.assign(t, -99);
    run_threaded(t, [&](ThreadedGroup& g) { r.ret[g.rank()] = fn(g, a.data(), b.data(), &r.info); });
  }
  r.a = std::move(a);
  r.b = std::move(b);
  return r;
}

template <Uplo UL, Arrangement AR>
std::string name() {
  return std::string(UL == Uplo::Lower ? "lower" : "upper") + (AR == Arrangement::ColMajor ? " col-major" : " row-major");
}

// Calls f.template operator()<UL, AR>() for the four combinations.
template <class F>
void for_each_storage(F&& f) {
  f.template operator()<Uplo::Lower, Arrangement::ColMajor>();
  f.template operator()<Uplo::Upper, Arrangement::ColMajor>();
  f.template operator()<Uplo::Lower, Arrangement::RowMajor>();
  f.template operator()<Uplo::Upper, Arrangement::RowMajor>();
}

// A group that counts its barriers (one member; not the SerialGroup, so the cooperative paths run).
struct CountingGroup {
  int* count;
  int rank() const { return 0; }
  int size() const { return 1; }
  void sync() const { ++*count; }
};

}  // namespace

TEST(Cholesky, MatchesEigenInEveryStorageOrderAndIsBitwiseInvariant) {
  Rng rng(701);
  for (int n : {1, 2, 5, 14, 16, 17, 33}) {
    // Exactly symmetric (Eigen's B B' need not be), so both triangles hold the same bits.
    const Mat s = rng.spd(n, 1.0);
    const Mat a = (s + s.transpose()) * 0.5;
    const Mat eigen_l = a.llt().matrixL();
    const int ld = n + 3;
    Mat first;
    for_each_storage([&]<Uplo UL, Arrangement AR>() {
      const std::string where = name<UL, AR>() + " n=" + std::to_string(n);
      const auto A = store<UL, AR>(a, ld);
      auto call = [&](auto& g, double* p, double*, int* info) { return cholesky_factor<UL, AR>(g, n, p, ld, info); };
      const auto ref = run_ab(1, A, {}, call);
      EXPECT_TRUE(all_equal(ref.ret, 0)) << where;
      EXPECT_EQ(ref.info, 0) << where;
      const Mat l = lower_factor<UL, AR>(ref.a, n, ld);
      EXPECT_LT(rel_err(l, eigen_l), 1e-12) << where;
      EXPECT_LT((l * l.transpose() - a).cwiseAbs().maxCoeff() / a.cwiseAbs().maxCoeff(), 4 * kEps * (n + 1)) << where;
      EXPECT_TRUE((outside_intact<UL, AR>(ref.a, A, n, ld))) << where;
      // One core: the four storage orders give the very same factor.
      if (first.size() == 0) first = l;
      EXPECT_TRUE(bitwise_equal(to_vec(l), to_vec(first))) << where;
      for (int t : groups_and_serial()) {
        const auto r = run_ab(t, A, {}, call);
        EXPECT_TRUE(bitwise_equal(r.a, ref.a)) << where << " t=" << t;
        EXPECT_TRUE(all_equal(r.ret, 0)) << where << " t=" << t;
      }
    });
  }
}

TEST(Cholesky, PlantedNonPositiveMinorGivesItsOrderInEveryStorageOrder) {
  Rng rng(702);
  for (int n : {1, 4, 9, 20})
    for (int k = 1; k <= n; k += (n > 9 ? 4 : 1))
      for (double pivot : {-0.5, 0.0, kNaN}) {
        Mat a = planted(rng, n, k, pivot == 0.0 ? -1e-3 : pivot);
        if (pivot == 0.0) {  // an exactly zero pivot needs exact arithmetic: a diagonal matrix
          a = 3.0 * Mat::Identity(n, n);
          a(k - 1, k - 1) = 0.0;
        }
        if (std::isnan(pivot)) {  // a NaN in row k-1 spoils the pivot of column k-1
          a = rng.spd(n, 1.0);
          a(k - 1, 0) = a(0, k - 1) = kNaN;
        }
        for_each_storage([&]<Uplo UL, Arrangement AR>() {
          const std::string where = name<UL, AR>() + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                                    " pivot=" + std::to_string(pivot);
          const int ld = n + 1;
          const auto A = store<UL, AR>(a, ld);
          // The whole sweep for one size and kind of pivot; the serial group and one threaded size else.
          const std::vector<int> sizes = pivot == -0.5 && n == 9 ? groups_and_serial() : std::vector<int>{0, 3};
          for (int t : sizes) {
            const auto r = run_ab(t, A, {}, [&](auto& g, double* p, double*, int* info) {
              return cholesky_factor<UL, AR>(g, n, p, ld, info);
            });
            EXPECT_TRUE(all_equal(r.ret, k)) << where << " t=" << t;
            EXPECT_EQ(r.info, k) << where << " t=" << t;
            EXPECT_TRUE((outside_intact<UL, AR>(r.a, A, n, ld))) << where;
          }
          // posv reports the same status and leaves B alone.
          const Mat b = rng.matrix(n, 2);
          const int ldb = AR == Arrangement::ColMajor ? n + 1 : 3;
          const auto B = store_rhs<AR>(b, ldb);
          const auto r = run_ab(3, A, B, [&](auto& g, double* p, double* q, int* info) {
            return cholesky_posv<UL, AR>(g, n, 2, p, ld, q, ldb, info);
          });
          EXPECT_EQ(r.info, k) << where;
          EXPECT_TRUE(bitwise_equal(r.b, B)) << where;
        });
      }
}

TEST(Cholesky, SolvesMatchEigenWithOneAndSeveralRightHandSides) {
  Rng rng(703);
  for (int n : {1, 3, 8, 16, 25})
    for (int nrhs : {1, 3}) {
      const Mat a = rng.spd(n, 0.5);
      const Mat b = rng.matrix(n, nrhs);
      const Mat x_ref = a.llt().solve(b);
      const int ld = n + 2;
      for_each_storage([&]<Uplo UL, Arrangement AR>() {
        // Row-major with one rhs: ldb = 1 is a contiguous vector, ldb = 2 a strided one.
        for (int ldb : {AR == Arrangement::ColMajor ? n + 1 : nrhs, AR == Arrangement::ColMajor ? n : nrhs + 1}) {
          const std::string where = name<UL, AR>() + " n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs) +
                                    " ldb=" + std::to_string(ldb);
          const auto A = store<UL, AR>(a, ld);
          const auto B = store_rhs<AR>(b, ldb);
          auto posv = [&](auto& g, double* p, double* q, int* info) { return cholesky_posv<UL, AR>(g, n, nrhs, p, ld, q, ldb, info); };
          const auto ref = run_ab(1, A, B, posv);
          ASSERT_EQ(ref.info, 0) << where;
          const Mat x = load_rhs<AR>(ref.b, n, nrhs, ldb);
          EXPECT_LT(rel_err(x, x_ref), 1e-12) << where;
          EXPECT_LT((a * x - b).cwiseAbs().maxCoeff() / (a.cwiseAbs().maxCoeff() * x.cwiseAbs().maxCoeff()), 8 * kEps * n) << where;
          // The pads of B are untouched.
          for (std::size_t e = 0; e < B.size(); ++e) {
            if (std::isnan(B[e])) {
              EXPECT_TRUE(std::isnan(ref.b[e])) << where;
            }
          }
          // potrs after a separate factor gives the same bits; so does every group size.
          const std::vector<int> sizes = n == 8 || n == 25 ? groups_and_serial() : std::vector<int>{0, 2};
          for (int t : sizes) {
            const auto r = run_ab(t, A, B, posv);
            EXPECT_TRUE(bitwise_equal(r.b, ref.b)) << where << " t=" << t;
            const auto f = run_ab(t, A, {}, [&](auto& g, double* p, double*, int* info) { return cholesky_factor<UL, AR>(g, n, p, ld, info); });
            const auto s = run_ab(t, f.a, B, [&](auto& g, double* p, double* q, int*) {
              cholesky_solve<UL, AR>(g, n, nrhs, p, ld, q, ldb);
              return 0;
            });
            EXPECT_TRUE(bitwise_equal(s.b, ref.b)) << where << " t=" << t;
          }
        }
      });
    }
}

TEST(Cholesky, CompileTimeSizesMatchRuntimeBitwise) {
  Rng rng(704);
  auto check = [&](auto n_const) {
    constexpr int N = decltype(n_const)::value;
    const Mat a = rng.spd(N, 1.0);
    const Mat b = rng.matrix(N, 2);
    for_each_storage([&]<Uplo UL, Arrangement AR>() {
      const auto A = store<UL, AR>(a, N);
      const auto B = store_rhs<AR>(b, AR == Arrangement::ColMajor ? N : 2);
      const int ldb = AR == Arrangement::ColMajor ? N : 2;
      const auto dyn = run_ab(1, A, B, [&](auto& g, double* p, double* q, int* info) { return cholesky_posv<UL, AR>(g, N, 2, p, N, q, ldb, info); });
      for (int t : {0, 2}) {
        const auto fixed = run_ab(t, A, B, [&](auto& g, double* p, double* q, int* info) {
          return cholesky_posv<UL, AR, N, 2>(g, N, 2, p, N, q, ldb, info);
        });
        EXPECT_TRUE(bitwise_equal(fixed.a, dyn.a)) << name<UL, AR>() << " N=" << N;
        EXPECT_TRUE(bitwise_equal(fixed.b, dyn.b)) << name<UL, AR>() << " N=" << N;
      }
    });
  };
  check(std::integral_constant<int, 4>{});
  check(std::integral_constant<int, 8>{});
  check(std::integral_constant<int, 14>{});
  check(std::integral_constant<int, 16>{});
  check(std::integral_constant<int, 32>{});
  // One contiguous right-hand side: the serial fixed-size solve (shared reciprocals) against the
  // cooperative vector sweeps.
  auto check_vector = [&](auto n_const) {
    constexpr int N = decltype(n_const)::value;
    const Mat a = rng.spd(N, 1.0);
    const Mat b = rng.matrix(N, 1);
    for_each_storage([&]<Uplo UL, Arrangement AR>() {
      const int ldb = AR == Arrangement::ColMajor ? N : 1;
      const auto A = store<UL, AR>(a, N);
      const auto B = store_rhs<AR>(b, ldb);
      const auto coop = run_ab(3, A, B, [&](auto& g, double* p, double* q, int* info) { return cholesky_posv<UL, AR>(g, N, 1, p, N, q, ldb, info); });
      const auto fixed = run_ab(0, A, B, [&](auto& g, double* p, double* q, int* info) {
        return cholesky_posv<UL, AR, N, 1>(g, N, 1, p, N, q, ldb, info);
      });
      EXPECT_TRUE(bitwise_equal(fixed.b, coop.b)) << name<UL, AR>() << " N=" << N;
      EXPECT_LT(rel_err(load_rhs<AR>(fixed.b, N, 1, ldb), a.llt().solve(b)), 1e-12);
    });
  };
  check_vector(std::integral_constant<int, 1>{});
  check_vector(std::integral_constant<int, 5>{});
  check_vector(std::integral_constant<int, 16>{});
  check_vector(std::integral_constant<int, 32>{});
}

TEST(Cholesky, BarrierCountsAreTheDocumentedOnes) {
  Rng rng(705);
  for (int n : {0, 1, 6}) {
    const Mat a = rng.spd(std::max(n, 1), 1.0).topLeftCorner(n, n);
    for_each_storage([&]<Uplo UL, Arrangement AR>() {
      for (int nrhs : {1, 2})
        for (int ldb : {1, n + 2}) {
          if (AR == Arrangement::RowMajor ? ldb < nrhs : ldb < n) continue;
          auto A = store<UL, AR>(a, std::max(n, 1));
          auto B = store_rhs<AR>(Mat::Ones(n, nrhs), ldb);
          B.resize(B.size() + 8, 0.0);
          int count = 0;
          CountingGroup g{&count};
          EXPECT_EQ((cholesky_factor<UL, AR>(g, n, A.data(), std::max(n, 1))), 0);
          EXPECT_EQ(count, cholesky_factor_barriers(n));
          count = 0;
          cholesky_solve<UL, AR>(g, n, nrhs, A.data(), std::max(n, 1), B.data(), ldb);
          EXPECT_EQ(count, cholesky_solve_barriers<AR>(n, nrhs, ldb)) << name<UL, AR>() << " n=" << n << " nrhs=" << nrhs << " ldb=" << ldb;
          // posv passes the same barriers on failure as on success.
          for (bool fail : {false, true}) {
            auto A2 = store<UL, AR>(a, std::max(n, 1));
            if (fail && n > 0) A2[0] = -1.0;
            count = 0;
            cholesky_posv<UL, AR>(g, n, nrhs, A2.data(), std::max(n, 1), B.data(), ldb);
            EXPECT_EQ(count, cholesky_posv_barriers<AR>(n, nrhs, ldb)) << name<UL, AR>() << " fail=" << fail;
          }
        }
    });
  }
}

TEST(Cholesky, SeveralSystemsPerGroupMatchOneAtATimeBitwise) {
  Rng rng(706);
  const int n = 6, batch = 11, nrhs = 2, ld = n + 1;
  for_each_storage([&]<Uplo UL, Arrangement AR>() {
    const int ldb = AR == Arrangement::ColMajor ? n : nrhs;
    const std::ptrdiff_t sa = static_cast<std::ptrdiff_t>(ld) * n, sb = static_cast<std::ptrdiff_t>(n) * nrhs;
    std::vector<double> A, B;
    std::vector<int> expect_info(batch, 0);
    for (int s = 0; s < batch; ++s) {
      Mat a = rng.spd(n, 1.0);
      if (s == 3) a = planted(rng, n, 2, -1.0);
      if (s == 7) a = planted(rng, n, 5, 0.0 - 1e-2);
      if (s == 9) a(4, 2) = a(2, 4) = kNaN;  // must not leak into the other systems
      expect_info[s] = s == 3 ? 2 : s == 7 ? 5 : s == 9 ? 5 : 0;
      const auto v = store<UL, AR>(a, ld);
      A.insert(A.end(), v.begin(), v.end());
      const auto w = store_rhs<AR>(rng.matrix(n, nrhs), ldb);
      B.insert(B.end(), w.begin(), w.end());
    }
    // One system at a time on the serial group: the reference.
    std::vector<double> A_ref = A, B_ref = B;
    std::vector<int> info_ref(batch, -1);
    SerialGroup sg;
    for (int s = 0; s < batch; ++s)
      cholesky_posv<UL, AR>(sg, n, nrhs, A_ref.data() + s * sa, ld, B_ref.data() + s * sb, ldb, &info_ref[s]);
    EXPECT_EQ(info_ref, expect_info) << name<UL, AR>();
    for (int s = 0; s < batch; ++s) {
      if (expect_info[s] != 0) continue;
      for (std::ptrdiff_t e = 0; e < sb; ++e) EXPECT_TRUE(std::isfinite(B_ref[s * sb + e])) << s;
    }
    for (int t : {1, 2, 3, 7, 32, 33})
      for (int w : {1, 2, 3, 5}) {  // w > t: clamped to t
        std::vector<double> A2 = A, B2 = B;
        std::vector<int> info(batch, -1);
        run_threaded(t, [&](ThreadedGroup& g) {
          cholesky_posv_batched<UL, AR>(g, w, batch, n, nrhs, A2.data(), ld, sa, B2.data(), ldb, sb, info.data());
        });
        const std::string where = name<UL, AR>() + " t=" + std::to_string(t) + " w=" + std::to_string(w);
        EXPECT_EQ(info, expect_info) << where;
        EXPECT_TRUE(bitwise_equal(A2, A_ref)) << where;
        EXPECT_TRUE(bitwise_equal(B2, B_ref)) << where;
        // factor_batched then solve_batched: the same bits.
        std::vector<double> A3 = A, B3 = B;
        std::vector<int> info3(batch, -1);
        run_threaded(t, [&](ThreadedGroup& g) {
          cholesky_factor_batched<UL, AR>(g, w, batch, n, A3.data(), ld, sa, info3.data());
        });
        EXPECT_EQ(info3, expect_info) << where;
        EXPECT_TRUE(bitwise_equal(A3, A_ref)) << where;
        std::vector<double> A4, B4;
        for (int s = 0; s < batch; ++s) {  // solve only the systems that factored
          if (expect_info[s] != 0) continue;
          A4.insert(A4.end(), A3.begin() + s * sa, A3.begin() + (s + 1) * sa);
          B4.insert(B4.end(), B3.begin() + s * sb, B3.begin() + (s + 1) * sb);
        }
        const int good = static_cast<int>(A4.size() / sa);
        run_threaded(t, [&](ThreadedGroup& g) {
          cholesky_solve_batched<UL, AR>(g, w, good, n, nrhs, A4.data(), ld, sa, B4.data(), ldb, sb);
        });
        for (int s = 0, j = 0; s < batch; ++s) {
          if (expect_info[s] != 0) continue;
          EXPECT_TRUE(bitwise_equal(std::vector<double>(B4.begin() + j * sb, B4.begin() + (j + 1) * sb),
                                    std::vector<double>(B_ref.begin() + s * sb, B_ref.begin() + (s + 1) * sb)))
              << where << " system " << s;
          ++j;
        }
      }
    // A serial parent loops over the systems.
    std::vector<double> A5 = A, B5 = B;
    std::vector<int> info5(batch, -1);
    cholesky_posv_batched<UL, AR>(sg, 1, batch, n, nrhs, A5.data(), ld, sa, B5.data(), ldb, sb, info5.data());
    EXPECT_EQ(info5, expect_info);
    EXPECT_TRUE(bitwise_equal(B5, B_ref));
  });
}

TEST(Cholesky, SubGroupViewsPartitionTheParent) {
  std::vector<int> seen(12, -1);
  run_threaded(11, [&](ThreadedGroup& g) {
    SubGroup<ThreadedGroup> s(g, 4);
    EXPECT_EQ(s.size(), 4);
    EXPECT_EQ(s.count(), 2);
    EXPECT_EQ(s.rank(), g.rank() % 4);
    EXPECT_EQ(s.active(), g.rank() < 8);
    seen[g.rank()] = s.index() * 4 + s.rank();
    s.sync();  // the parent's barrier: all 11 pass it
  });
  for (int r = 0; r < 11; ++r) EXPECT_EQ(seen[r], r);
}

TEST(Cholesky, NegativeControlChecksRejectWrongAnswers) {
  Rng rng(707);
  const int n = 7;
  const Mat a = rng.spd(n, 1.0), b = rng.matrix(n, 2);
  const auto r = run_ab(1, store<Uplo::Upper, Arrangement::RowMajor>(a, n), store_rhs<Arrangement::RowMajor>(b, 2),
                     [&](auto& g, double* p, double* q, int* info) {
                       return cholesky_posv<Uplo::Upper, Arrangement::RowMajor>(g, n, 2, p, n, q, 2, info);
                     });
  Mat x = load_rhs<Arrangement::RowMajor>(r.b, n, 2, 2);
  ASSERT_LT(rel_err(x, a.llt().solve(b)), 1e-12);
  x(3, 1) *= 1.0 + 1e-9;
  EXPECT_GT(rel_err(x, a.llt().solve(b)), 1e-12);
  // Reading the factor with the wrong fill mode is caught by the comparison with Eigen.
  const Mat wrong = lower_factor<Uplo::Lower, Arrangement::RowMajor>(r.a, n, n);
  EXPECT_FALSE(rel_err(wrong, Mat(a.llt().matrixL())) < 1e-12);
  // A planted minor one order off is told apart.
  const Mat p = planted(rng, n, 4, -0.5);
  const auto f = run_ab(1, store<Uplo::Lower, Arrangement::ColMajor>(p, n), {}, [&](auto& g, double* q, double*, int* info) {
    return cholesky_factor<Uplo::Lower, Arrangement::ColMajor>(g, n, q, n, info);
  });
  EXPECT_EQ(f.info, 4);
  EXPECT_NE(f.info, 3);
  EXPECT_NE(f.info, 5);
}

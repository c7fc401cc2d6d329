// cholesky (potrf/potrs/posv with cuSolverDx semantics) against Eigen's LLT: every fill mode and
// arrangement, the exact order of a planted non-positive-definite leading minor, solves with one and
// several right-hand sides, group-size sweeps with bitwise comparison, several systems per group
// (sub-groups) against one system at a time, the barrier counts the sub-groups rely on, NaN
// isolation between systems, and negative controls.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "knot/linalg/cholesky.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

std::size_t at(Arrangement ar, int i, int j, int ld) {
  return ar == Arrangement::ColMajor ? i + static_cast<std::size_t>(j) * ld : static_cast<std::size_t>(i) * ld + j;
}

bool in_triangle(Uplo ul, int i, int j) { return ul == Uplo::Lower ? i >= j : i <= j; }

// The ul triangle of symmetric a in arrangement ar, leading dimension ld; all else NaN.
std::vector<double> store(Uplo ul, Arrangement ar, const Mat& a, int ld) {
  const int n = static_cast<int>(a.rows());
  std::vector<double> v(static_cast<std::size_t>(ld) * std::max(n, 1), kNaN);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      if (in_triangle(ul, i, j)) v[at(ar, i, j, ld)] = a(i, j);
  return v;
}

// L (lower) from the factor: L itself (Lower) or U' (Upper).
Mat lower_factor(Uplo ul, Arrangement ar, const std::vector<double>& v, int n, int ld) {
  Mat l = Mat::Zero(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) l(i, j) = ul == Uplo::Lower ? v[at(ar, i, j, ld)] : v[at(ar, j, i, ld)];
  return l;
}

// Everything outside the ul triangle (and the pads) is bitwise as it came in.
bool outside_intact(Uplo ul, Arrangement ar, const std::vector<double>& out, const std::vector<double>& in, int n,
                    int ld) {
  for (int j = 0; j < std::max(n, 1); ++j)
    for (int i = 0; i < ld; ++i) {
      const std::size_t e = ar == Arrangement::ColMajor ? i + static_cast<std::size_t>(j) * ld : static_cast<std::size_t>(j) * ld + i;
      const int row = ar == Arrangement::ColMajor ? i : j, col = ar == Arrangement::ColMajor ? j : i;
      if ((row >= n || col >= n || !in_triangle(ul, row, col)) && !bitwise_equal({out[e]}, {in[e]})) return false;
    }
  return true;
}

// B (n x nrhs) in arrangement ar with leading dimension ldb, pads NaN.
std::vector<double> store_rhs(Arrangement ar, const Mat& b, int ldb) {
  const int n = static_cast<int>(b.rows()), m = static_cast<int>(b.cols());
  const std::size_t size = ar == Arrangement::ColMajor ? static_cast<std::size_t>(ldb) * m : static_cast<std::size_t>(ldb) * n;
  std::vector<double> v(size, kNaN);
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i) v[at(ar, i, j, ldb)] = b(i, j);
  return v;
}

Mat load_rhs(Arrangement ar, const std::vector<double>& v, int n, int m, int ldb) {
  Mat b(n, m);
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < n; ++i) b(i, j) = v[at(ar, i, j, ldb)];
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

std::string name(Uplo ul, Arrangement ar) {
  return std::string(ul == Uplo::Lower ? "lower" : "upper") + (ar == Arrangement::ColMajor ? " col-major" : " row-major");
}

// A group that counts its barriers (one member; not the SerialGroup, so the cooperative paths run).
struct CountingGroup {
  int* count;
  int rank() const { return 0; }
  int size() const { return 1; }
  void sync() const { ++*count; }
};

// The tests take the storage order at run time and the kernels as pointers to thin templates: only
// the kernels are instantiated per fill mode, arrangement, size and group, the checks once.
template <class G>
using FactorFn = int (*)(G& g, int n, double* A, int lda, int* info);
template <class G>
using SolveFn = void (*)(G& g, int n, int nrhs, const double* A, int lda, double* B, int ldb);
template <class G>
using PosvFn = int (*)(G& g, int n, int nrhs, double* A, int lda, double* B, int ldb, int* info);
template <class G>
using FactorBatchedFn = void (*)(G& g, int width, int batch, int n, double* A, int lda, std::ptrdiff_t sa, int* info);
template <class G>
using SolveBatchedFn = void (*)(G& g, int width, int batch, int n, int nrhs, const double* A, int lda,
                                std::ptrdiff_t sa, double* B, int ldb, std::ptrdiff_t sb);
template <class G>
using PosvBatchedFn = void (*)(G& g, int width, int batch, int n, int nrhs, double* A, int lda, std::ptrdiff_t sa,
                               double* B, int ldb, std::ptrdiff_t sb, int* info);

template <Uplo UL, Arrangement AR, class G>
int factor_k(G& g, int n, double* A, int lda, int* info) {
  return cholesky_factor<UL, AR>(g, n, A, lda, info);
}
template <Uplo UL, Arrangement AR, class G>
void solve_k(G& g, int n, int nrhs, const double* A, int lda, double* B, int ldb) {
  cholesky_solve<UL, AR>(g, n, nrhs, A, lda, B, ldb);
}
template <Uplo UL, Arrangement AR, int N, int NRHS, class G>
int posv_k(G& g, int n, int nrhs, double* A, int lda, double* B, int ldb, int* info) {
  return cholesky_posv<UL, AR, N, NRHS>(g, n, nrhs, A, lda, B, ldb, info);
}
template <Uplo UL, Arrangement AR, class G>
void factor_batched_k(G& g, int width, int batch, int n, double* A, int lda, std::ptrdiff_t sa, int* info) {
  cholesky_factor_batched<UL, AR>(g, width, batch, n, A, lda, sa, info);
}
template <Uplo UL, Arrangement AR, class G>
void solve_batched_k(G& g, int width, int batch, int n, int nrhs, const double* A, int lda, std::ptrdiff_t sa,
                     double* B, int ldb, std::ptrdiff_t sb) {
  cholesky_solve_batched<UL, AR>(g, width, batch, n, nrhs, A, lda, sa, B, ldb, sb);
}
template <Uplo UL, Arrangement AR, class G>
void posv_batched_k(G& g, int width, int batch, int n, int nrhs, double* A, int lda, std::ptrdiff_t sa, double* B,
                    int ldb, std::ptrdiff_t sb, int* info) {
  cholesky_posv_batched<UL, AR>(g, width, batch, n, nrhs, A, lda, sa, B, ldb, sb, info);
}

// One entry point on the serial and threaded groups (and, where the barrier counts use it, the
// counting one).
template <template <class> class F>
struct OnGroups {
  F<SerialGroup> serial;
  F<ThreadedGroup> threaded;
  F<CountingGroup> counting = nullptr;
  template <class... A>
  auto operator()(SerialGroup& g, A... a) const { return serial(g, a...); }
  template <class... A>
  auto operator()(ThreadedGroup& g, A... a) const { return threaded(g, a...); }
  template <class... A>
  auto operator()(CountingGroup& g, A... a) const { return counting(g, a...); }
};

// The kernels of one storage order.
struct Kernels {
  Uplo ul;
  Arrangement ar;
  OnGroups<FactorFn> factor;
  OnGroups<SolveFn> solve;
  OnGroups<PosvFn> posv;
  FactorBatchedFn<ThreadedGroup> factor_batched;
  SolveBatchedFn<ThreadedGroup> solve_batched;
  OnGroups<PosvBatchedFn> posv_batched;
};

template <Uplo UL, Arrangement AR>
constexpr Kernels kernels_of() {
  return {UL,
          AR,
          {factor_k<UL, AR, SerialGroup>, factor_k<UL, AR, ThreadedGroup>, factor_k<UL, AR, CountingGroup>},
          {solve_k<UL, AR, SerialGroup>, solve_k<UL, AR, ThreadedGroup>, solve_k<UL, AR, CountingGroup>},
          {posv_k<UL, AR, kDynamic, kDynamic, SerialGroup>, posv_k<UL, AR, kDynamic, kDynamic, ThreadedGroup>,
           posv_k<UL, AR, kDynamic, kDynamic, CountingGroup>},
          factor_batched_k<UL, AR, ThreadedGroup>,
          solve_batched_k<UL, AR, ThreadedGroup>,
          {posv_batched_k<UL, AR, SerialGroup>, posv_batched_k<UL, AR, ThreadedGroup>}};
}

// The documented barrier counts of arrangement ar.
int solve_barriers(Arrangement ar, int n, int nrhs, int ldb) {
  return ar == Arrangement::ColMajor ? cholesky_solve_barriers<Arrangement::ColMajor>(n, nrhs, ldb)
                                     : cholesky_solve_barriers<Arrangement::RowMajor>(n, nrhs, ldb);
}
int posv_barriers(Arrangement ar, int n, int nrhs, int ldb) {
  return ar == Arrangement::ColMajor ? cholesky_posv_barriers<Arrangement::ColMajor>(n, nrhs, ldb)
                                     : cholesky_posv_barriers<Arrangement::RowMajor>(n, nrhs, ldb);
}

// The four combinations, in this order.
constexpr Kernels kStorages[4] = {kernels_of<Uplo::Lower, Arrangement::ColMajor>(),
                                  kernels_of<Uplo::Upper, Arrangement::ColMajor>(),
                                  kernels_of<Uplo::Lower, Arrangement::RowMajor>(),
                                  kernels_of<Uplo::Upper, Arrangement::RowMajor>()};

// Calls f(kernels) for the four combinations.
template <class F>
void for_each_storage(F&& f) {
  for (const Kernels& k : kStorages) f(k);
}

// cholesky_posv<UL, AR, N, NRHS> of the four storage orders, as kStorages.
using FixedPosv = OnGroups<PosvFn>;
template <int N, int NRHS>
std::array<FixedPosv, 4> fixed_posv() {
  auto of = []<Uplo UL, Arrangement AR>() {
    return FixedPosv{posv_k<UL, AR, N, NRHS, SerialGroup>, posv_k<UL, AR, N, NRHS, ThreadedGroup>};
  };
  return {of.template operator()<Uplo::Lower, Arrangement::ColMajor>(),
          of.template operator()<Uplo::Upper, Arrangement::ColMajor>(),
          of.template operator()<Uplo::Lower, Arrangement::RowMajor>(),
          of.template operator()<Uplo::Upper, Arrangement::RowMajor>()};
}

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
    for_each_storage([&](const Kernels& k) {
      const std::string where = name(k.ul, k.ar) + " n=" + std::to_string(n);
      const auto A = store(k.ul, k.ar, a, ld);
      auto call = [&](auto& g, double* p, double*, int* info) { return k.factor(g, n, p, ld, info); };
      const auto ref = run_ab(1, A, {}, call);
      EXPECT_TRUE(all_equal(ref.ret, 0)) << where;
      EXPECT_EQ(ref.info, 0) << where;
      const Mat l = lower_factor(k.ul, k.ar, ref.a, n, ld);
      EXPECT_LT(rel_err(l, eigen_l), 1e-12) << where;
      EXPECT_LT((l * l.transpose() - a).cwiseAbs().maxCoeff() / a.cwiseAbs().maxCoeff(), 4 * kEps * (n + 1)) << where;
      EXPECT_TRUE((outside_intact(k.ul, k.ar, ref.a, A, n, ld))) << where;
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
        for_each_storage([&](const Kernels& ks) {
          const std::string where = name(ks.ul, ks.ar) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                                    " pivot=" + std::to_string(pivot);
          const int ld = n + 1;
          const auto A = store(ks.ul, ks.ar, a, ld);
          // The whole sweep for one size and kind of pivot; the serial group and one threaded size else.
          const std::vector<int> sizes = pivot == -0.5 && n == 9 ? groups_and_serial() : std::vector<int>{0, 3};
          for (int t : sizes) {
            const auto r = run_ab(t, A, {}, [&](auto& g, double* p, double*, int* info) {
              return ks.factor(g, n, p, ld, info);
            });
            EXPECT_TRUE(all_equal(r.ret, k)) << where << " t=" << t;
            EXPECT_EQ(r.info, k) << where << " t=" << t;
            EXPECT_TRUE((outside_intact(ks.ul, ks.ar, r.a, A, n, ld))) << where;
          }
          // posv reports the same status and leaves B alone.
          const Mat b = rng.matrix(n, 2);
          const int ldb = ks.ar == Arrangement::ColMajor ? n + 1 : 3;
          const auto B = store_rhs(ks.ar, b, ldb);
          const auto r = run_ab(3, A, B, [&](auto& g, double* p, double* q, int* info) {
            return ks.posv(g, n, 2, p, ld, q, ldb, info);
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
      for_each_storage([&](const Kernels& k) {
        // Row-major with one rhs: ldb = 1 is a contiguous vector, ldb = 2 a strided one.
        for (int ldb : {k.ar == Arrangement::ColMajor ? n + 1 : nrhs, k.ar == Arrangement::ColMajor ? n : nrhs + 1}) {
          const std::string where = name(k.ul, k.ar) + " n=" + std::to_string(n) + " nrhs=" + std::to_string(nrhs) +
                                    " ldb=" + std::to_string(ldb);
          const auto A = store(k.ul, k.ar, a, ld);
          const auto B = store_rhs(k.ar, b, ldb);
          auto posv = [&](auto& g, double* p, double* q, int* info) { return k.posv(g, n, nrhs, p, ld, q, ldb, info); };
          const auto ref = run_ab(1, A, B, posv);
          ASSERT_EQ(ref.info, 0) << where;
          const Mat x = load_rhs(k.ar, ref.b, n, nrhs, ldb);
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
            const auto f = run_ab(t, A, {}, [&](auto& g, double* p, double*, int* info) { return k.factor(g, n, p, ld, info); });
            const auto s = run_ab(t, f.a, B, [&](auto& g, double* p, double* q, int*) {
              k.solve(g, n, nrhs, p, ld, q, ldb);
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
  // fixed[i]: cholesky_posv<UL, AR, N, 2> of kStorages[i].
  auto check = [&](int N, const std::array<FixedPosv, 4>& fixed_of) {
    const Mat a = rng.spd(N, 1.0);
    const Mat b = rng.matrix(N, 2);
    int i = 0;
    for_each_storage([&](const Kernels& k) {
      const FixedPosv& fixed_posv = fixed_of[i++];
      const auto A = store(k.ul, k.ar, a, N);
      const auto B = store_rhs(k.ar, b, k.ar == Arrangement::ColMajor ? N : 2);
      const int ldb = k.ar == Arrangement::ColMajor ? N : 2;
      const auto dyn = run_ab(1, A, B, [&](auto& g, double* p, double* q, int* info) { return k.posv(g, N, 2, p, N, q, ldb, info); });
      for (int t : {0, 2}) {
        const auto fixed = run_ab(t, A, B, [&](auto& g, double* p, double* q, int* info) {
          return fixed_posv(g, N, 2, p, N, q, ldb, info);
        });
        EXPECT_TRUE(bitwise_equal(fixed.a, dyn.a)) << name(k.ul, k.ar) << " N=" << N;
        EXPECT_TRUE(bitwise_equal(fixed.b, dyn.b)) << name(k.ul, k.ar) << " N=" << N;
      }
    });
  };
  check(4, fixed_posv<4, 2>());
  check(8, fixed_posv<8, 2>());
  check(14, fixed_posv<14, 2>());
  check(16, fixed_posv<16, 2>());
  check(32, fixed_posv<32, 2>());
  // One contiguous right-hand side: the serial fixed-size solve (shared reciprocals) against the
  // cooperative vector sweeps. fixed_of as above, cholesky_posv<UL, AR, N, 1>.
  auto check_vector = [&](int N, const std::array<FixedPosv, 4>& fixed_of) {
    const Mat a = rng.spd(N, 1.0);
    const Mat b = rng.matrix(N, 1);
    int i = 0;
    for_each_storage([&](const Kernels& k) {
      const FixedPosv& fixed_posv = fixed_of[i++];
      const int ldb = k.ar == Arrangement::ColMajor ? N : 1;
      const auto A = store(k.ul, k.ar, a, N);
      const auto B = store_rhs(k.ar, b, ldb);
      const auto coop = run_ab(3, A, B, [&](auto& g, double* p, double* q, int* info) { return k.posv(g, N, 1, p, N, q, ldb, info); });
      const auto fixed = run_ab(0, A, B, [&](auto& g, double* p, double* q, int* info) {
        return fixed_posv(g, N, 1, p, N, q, ldb, info);
      });
      EXPECT_TRUE(bitwise_equal(fixed.b, coop.b)) << name(k.ul, k.ar) << " N=" << N;
      EXPECT_LT(rel_err(load_rhs(k.ar, fixed.b, N, 1, ldb), a.llt().solve(b)), 1e-12);
    });
  };
  check_vector(1, fixed_posv<1, 1>());
  check_vector(5, fixed_posv<5, 1>());
  check_vector(16, fixed_posv<16, 1>());
  check_vector(32, fixed_posv<32, 1>());
}

TEST(Cholesky, BarrierCountsAreTheDocumentedOnes) {
  Rng rng(705);
  for (int n : {0, 1, 6}) {
    const Mat a = rng.spd(std::max(n, 1), 1.0).topLeftCorner(n, n);
    for_each_storage([&](const Kernels& k) {
      for (int nrhs : {1, 2})
        for (int ldb : {1, n + 2}) {
          if (k.ar == Arrangement::RowMajor ? ldb < nrhs : ldb < n) continue;
          auto A = store(k.ul, k.ar, a, std::max(n, 1));
          auto B = store_rhs(k.ar, Mat::Ones(n, nrhs), ldb);
          B.resize(B.size() + 8, 0.0);
          int count = 0;
          CountingGroup g{&count};
          EXPECT_EQ((k.factor(g, n, A.data(), std::max(n, 1), nullptr)), 0);
          EXPECT_EQ(count, cholesky_factor_barriers(n));
          count = 0;
          k.solve(g, n, nrhs, A.data(), std::max(n, 1), B.data(), ldb);
          EXPECT_EQ(count, solve_barriers(k.ar, n, nrhs, ldb)) << name(k.ul, k.ar) << " n=" << n << " nrhs=" << nrhs << " ldb=" << ldb;
          // posv passes the same barriers on failure as on success.
          for (bool fail : {false, true}) {
            auto A2 = store(k.ul, k.ar, a, std::max(n, 1));
            if (fail && n > 0) A2[0] = -1.0;
            count = 0;
            k.posv(g, n, nrhs, A2.data(), std::max(n, 1), B.data(), ldb, nullptr);
            EXPECT_EQ(count, posv_barriers(k.ar, n, nrhs, ldb)) << name(k.ul, k.ar) << " fail=" << fail;
          }
        }
    });
  }
}

TEST(Cholesky, SeveralSystemsPerGroupMatchOneAtATimeBitwise) {
  Rng rng(706);
  const int n = 6, batch = 11, nrhs = 2, ld = n + 1;
  for_each_storage([&](const Kernels& k) {
    const int ldb = k.ar == Arrangement::ColMajor ? n : nrhs;
    const std::ptrdiff_t sa = static_cast<std::ptrdiff_t>(ld) * n, sb = static_cast<std::ptrdiff_t>(n) * nrhs;
    std::vector<double> A, B;
    std::vector<int> expect_info(batch, 0);
    for (int s = 0; s < batch; ++s) {
      Mat a = rng.spd(n, 1.0);
      if (s == 3) a = planted(rng, n, 2, -1.0);
      if (s == 7) a = planted(rng, n, 5, 0.0 - 1e-2);
      if (s == 9) a(4, 2) = a(2, 4) = kNaN;  // must not leak into the other systems
      expect_info[s] = s == 3 ? 2 : s == 7 ? 5 : s == 9 ? 5 : 0;
      const auto v = store(k.ul, k.ar, a, ld);
      A.insert(A.end(), v.begin(), v.end());
      const auto w = store_rhs(k.ar, rng.matrix(n, nrhs), ldb);
      B.insert(B.end(), w.begin(), w.end());
    }
    // One system at a time on the serial group: the reference.
    std::vector<double> A_ref = A, B_ref = B;
    std::vector<int> info_ref(batch, -1);
    SerialGroup sg;
    for (int s = 0; s < batch; ++s)
      k.posv(sg, n, nrhs, A_ref.data() + s * sa, ld, B_ref.data() + s * sb, ldb, &info_ref[s]);
    EXPECT_EQ(info_ref, expect_info) << name(k.ul, k.ar);
    for (int s = 0; s < batch; ++s) {
      if (expect_info[s] != 0) continue;
      for (std::ptrdiff_t e = 0; e < sb; ++e) EXPECT_TRUE(std::isfinite(B_ref[s * sb + e])) << s;
    }
    for (int t : {1, 2, 3, 7, 32, 33})
      for (int w : {1, 2, 3, 5}) {  // w > t: clamped to t
        std::vector<double> A2 = A, B2 = B;
        std::vector<int> info(batch, -1);
        run_threaded(t, [&](ThreadedGroup& g) {
          k.posv_batched(g, w, batch, n, nrhs, A2.data(), ld, sa, B2.data(), ldb, sb, info.data());
        });
        const std::string where = name(k.ul, k.ar) + " t=" + std::to_string(t) + " w=" + std::to_string(w);
        EXPECT_EQ(info, expect_info) << where;
        EXPECT_TRUE(bitwise_equal(A2, A_ref)) << where;
        EXPECT_TRUE(bitwise_equal(B2, B_ref)) << where;
        // factor_batched then solve_batched: the same bits.
        std::vector<double> A3 = A, B3 = B;
        std::vector<int> info3(batch, -1);
        run_threaded(t, [&](ThreadedGroup& g) {
          k.factor_batched(g, w, batch, n, A3.data(), ld, sa, info3.data());
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
          k.solve_batched(g, w, good, n, nrhs, A4.data(), ld, sa, B4.data(), ldb, sb);
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
    k.posv_batched(sg, 1, batch, n, nrhs, A5.data(), ld, sa, B5.data(), ldb, sb, info5.data());
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
  const auto r = run_ab(1, store(Uplo::Upper, Arrangement::RowMajor, a, n), store_rhs(Arrangement::RowMajor, b, 2),
                     [&](auto& g, double* p, double* q, int* info) {
                       return cholesky_posv<Uplo::Upper, Arrangement::RowMajor>(g, n, 2, p, n, q, 2, info);
                     });
  Mat x = load_rhs(Arrangement::RowMajor, r.b, n, 2, 2);
  ASSERT_LT(rel_err(x, a.llt().solve(b)), 1e-12);
  x(3, 1) *= 1.0 + 1e-9;
  EXPECT_GT(rel_err(x, a.llt().solve(b)), 1e-12);
  // Reading the factor with the wrong fill mode is caught by the comparison with Eigen.
  const Mat wrong = lower_factor(Uplo::Lower, Arrangement::RowMajor, r.a, n, n);
  EXPECT_FALSE(rel_err(wrong, Mat(a.llt().matrixL())) < 1e-12);
  // A planted minor one order off is told apart.
  const Mat p = planted(rng, n, 4, -0.5);
  const auto f = run_ab(1, store(Uplo::Lower, Arrangement::ColMajor, p, n), {}, [&](auto& g, double* q, double*, int* info) {
    return cholesky_factor<Uplo::Lower, Arrangement::ColMajor>(g, n, q, n, info);
  });
  EXPECT_EQ(f.info, 4);
  EXPECT_NE(f.info, 3);
  EXPECT_NE(f.info, 5);
}

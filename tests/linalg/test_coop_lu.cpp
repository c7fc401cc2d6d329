// Cooperative LU: backward error against an independent long-double oracle, bitwise invariance
// over rows_per_thread on real threads, logical vs physical interchanges, static vs dynamic, both
// layouts, every residency, AoS/SoA/AoSoA batches, singular systems and a fixed barrier sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>
#include <utility>

#include "knot/linalg/coop_lu.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

// Heap allocations made by this process, to prove the solver makes none. (GCC cannot see that the
// replaced operator delete frees what the replaced operator new mallocs.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
static std::atomic<long> g_allocations{0};
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

constexpr CoopLuConfig kRowLogical{};
constexpr CoopLuConfig kRowPhysical{.interchange = LuInterchange::kPhysical};
constexpr CoopLuConfig kColLogical{.layout = LuLayout::kColMajor};
constexpr CoopLuConfig kColPhysical{.layout = LuLayout::kColMajor, .interchange = LuInterchange::kPhysical};

// ---------------------------------------------------------------------------------------------
// Independent oracle: textbook Gaussian elimination with partial pivoting (first largest |.|), in
// long double, on the column-major matrix M. perm[k] = original row at position k.
struct Oracle {
  std::vector<int> perm;
  Vec x;
  bool singular = false;
};

Oracle oracle(const Mat& M, const Vec& b) {
  const int n = static_cast<int>(M.rows());
  std::vector<std::vector<long double>> a(n, std::vector<long double>(n + 1));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) a[i][j] = M(i, j);
    a[i][n] = b(i);
  }
  Oracle o;
  o.perm.resize(n);
  for (int i = 0; i < n; ++i) o.perm[i] = i;
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (std::fabs(a[i][k]) > std::fabs(a[p][k])) p = i;
    std::swap(a[k], a[p]);
    std::swap(o.perm[k], o.perm[p]);
    if (a[k][k] == 0) {
      o.singular = true;
      continue;
    }
    for (int i = k + 1; i < n; ++i) {
      const long double l = a[i][k] / a[k][k];
      for (int j = k; j <= n; ++j) a[i][j] -= l * a[k][j];
    }
  }
  o.x = Vec::Zero(n);
  for (int i = n - 1; i >= 0; --i) {
    long double s = a[i][n];
    for (int j = i + 1; j < n; ++j) s -= a[i][j] * static_cast<long double>(o.x(j));
    o.x(i) = static_cast<double>(s / a[i][i]);
  }
  return o;
}

// ||A x - b||_inf / (max|a_ij| ||x||_inf + ||b||_inf), accumulated in long double.
double backward_error(const Mat& A, const Vec& x, const Vec& b) {
  if (!x.allFinite()) return kNaN;
  long double rmax = 0;
  for (int i = 0; i < A.rows(); ++i) {
    long double s = -static_cast<long double>(b(i));
    for (int j = 0; j < A.cols(); ++j) s += static_cast<long double>(A(i, j)) * x(j);
    rmax = std::max(rmax, std::fabs(s));
  }
  const double den = A.cwiseAbs().maxCoeff() * x.cwiseAbs().maxCoeff() + b.cwiseAbs().maxCoeff();
  return static_cast<double>(rmax) / den;
}

// ---------------------------------------------------------------------------------------------
// Test matrices.
Mat orthogonal(Rng& rng, int n) { return Eigen::HouseholderQR<Mat>(rng.matrix(n, n)).householderQ(); }

Mat random_matrix(Rng& rng, int n) { return rng.matrix(n, n); }

// Rows graded over 16 decades, columns over 8.
Mat graded_matrix(Rng& rng, int n) {
  Mat a = rng.matrix(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double ti = n > 1 ? double(i) / (n - 1) : 0.0, tj = n > 1 ? double(j) / (n - 1) : 0.0;
      a(i, j) *= std::pow(10.0, -8.0 + 16.0 * ti) * std::pow(10.0, 4.0 - 8.0 * tj);
    }
  return a;
}

// Singular values from 1 down to 1e-14.
Mat ill_conditioned_matrix(Rng& rng, int n) {
  Vec s(n);
  for (int i = 0; i < n; ++i) s(i) = std::pow(10.0, n > 1 ? -14.0 * i / (n - 1) : 0.0);
  return orthogonal(rng, n) * s.asDiagonal() * orthogonal(rng, n).transpose();
}

// The stored array of A under a layout: row-major A(r,c) at r n + c, column-major at c n + r.
std::vector<double> stored(const Mat& A, LuLayout layout) {
  return layout == LuLayout::kRowMajor ? to_vec(Mat(A.transpose())) : to_vec(A);
}
// S, the stored array read column-major.
Mat s_of(const Mat& A, LuLayout layout) { return layout == LuLayout::kRowMajor ? Mat(A.transpose()) : A; }

// ---------------------------------------------------------------------------------------------
// Runner: one system, every member with its own internal slices, results gathered back.
enum class Entry { kSolve, kInplace, kFactorSubstitute };
enum class Groups { kSerial, kThreaded, kWide, kWorkspaceBarrier };

struct Out {
  std::vector<double> S;  // stored array after the call
  std::vector<int> piv;
  std::vector<double> x;
  int info = -1;
};

::testing::AssertionResult same(const Out& a, const Out& b) {
  if (a.info != b.info) return ::testing::AssertionFailure() << "info " << a.info << " vs " << b.info;
  if (a.piv != b.piv) return ::testing::AssertionFailure() << "pivots differ";
  if (!bitwise_equal(a.S, b.S)) return ::testing::AssertionFailure() << "factors differ";
  if (!bitwise_equal(a.x, b.x)) return ::testing::AssertionFailure() << "solutions differ";
  return ::testing::AssertionSuccess();
}

// Runs fn(group) on t members: a SerialGroup, real threads sharing a std::barrier, a wider threaded
// group (3 idle members), or raw std::threads sharing the workspace barrier.
template <class Fn>
void on_group(Groups kind, int t, double* work, Fn&& fn) {
  switch (kind) {
    case Groups::kSerial: {
      SerialGroup g;
      fn(g);
      break;
    }
    case Groups::kThreaded:
      run_threaded(t, fn);
      break;
    case Groups::kWide:
      run_threaded(t + 3, fn);
      break;
    case Groups::kWorkspaceBarrier: {
      std::vector<std::thread> pool;
      for (int r = 1; r < t; ++r)
        pool.emplace_back([&, r] {
          WorkspaceBarrierGroup<double> g(r, t, work);
          fn(g);
        });
      WorkspaceBarrierGroup<double> g(0, t, work);
      fn(g);
      for (auto& th : pool) th.join();
      break;
    }
  }
}

// The runner and the checks below are plain functions: they take the kernel as pointers to thin
// templates (call_lu, run_dynamic, ...), so only the kernels are instantiated per solver type,
// residency and group, and the scaffolding once (it dominated this file's compile time).
template <class St>
struct LuCalls {
  template <class G>
  using Fn = int (*)(const void* lu, Entry entry, G& g, double* A, St sa, int* P, St sp, const double* B, double* X,
                     St sx, double* work);
  const void* lu;
  Fn<SerialGroup> serial;
  Fn<ThreadedGroup> threaded;
  Fn<WorkspaceBarrierGroup<double>> barrier;
  int operator()(SerialGroup& g, Entry e, double* A, St sa, int* P, St sp, const double* B, double* X, St sx,
                 double* w) const {
    return serial(lu, e, g, A, sa, P, sp, B, X, sx, w);
  }
  int operator()(ThreadedGroup& g, Entry e, double* A, St sa, int* P, St sp, const double* B, double* X, St sx,
                 double* w) const {
    return threaded(lu, e, g, A, sa, P, sp, B, X, sx, w);
  }
  int operator()(WorkspaceBarrierGroup<double>& g, Entry e, double* A, St sa, int* P, St sp, const double* B,
                 double* X, St sx, double* w) const {
    return barrier(lu, e, g, A, sa, P, sp, B, X, sx, w);
  }
};

// One entry of the solver Lu under residency Res on group G. The runner passes literal unit strides
// (St = int), the batches their int64 ones.
template <class Lu, CoopLuResidency Res, class G, class St>
int call_lu(const void* p, Entry entry, G& g, double* A, St sa, int* P, St sp, const double* B, double* X, St sx,
            double* work) {
  const Lu& lu = *static_cast<const Lu*>(p);
  switch (entry) {
    case Entry::kSolve:
      return lu.template solve<Res>(g, A, sa, P, sp, B, X, sx, work);
    case Entry::kInplace:
      return lu.template solve_inplace<Res>(g, A, sa, P, sp, X, sx, work);
    case Entry::kFactorSubstitute: {
      const int res = lu.template factorize<Res>(g, A, sa, P, sp, work);
      lu.template substitute<Res>(g, A, sa, P, sp, B, X, sx, work);
      return res;
    }
  }
  return -1;
}

template <CoopLuResidency Res, class St, class Lu>
LuCalls<St> calls_of(const Lu& lu) {
  return {&lu, call_lu<Lu, Res, SerialGroup, St>, call_lu<Lu, Res, ThreadedGroup, St>,
          call_lu<Lu, Res, WorkspaceBarrierGroup<double>, St>};
}

Out run_lu(const LuCalls<int>& lu, CoopLuResidency Res, int n, int r, Entry entry, const std::vector<double>& S,
           const std::vector<double>& b, Groups kind) {
  const int t = coop_lu_threads_per_system(n, r);
  if (kind == Groups::kSerial && t != 1) kind = Groups::kThreaded;
  Out o;
  o.S = S;
  o.piv.assign(n, -1);
  o.x = entry == Entry::kInplace ? b : poisoned(n);
  std::vector<double> work = poisoned(coop_lu_workspace_size(n, r));
  work[0] = work[1] = 0.0;
  std::vector<int> info(kind == Groups::kWide ? t + 3 : t, -1);
  on_group(kind, t, work.data(), [&](auto& g) {
    const int tx = g.rank();
    std::vector<double> As(static_cast<std::size_t>(n) * r, kNaN), bs(r, kNaN), xs(r, kNaN);
    std::vector<int> ps(r, -1);
    for (int K = 0; K < r && tx < t; ++K) {
      const int v = tx + K * t;
      if (v >= n) continue;
      for (int c = 0; c < n; ++c) As[c * r + K] = S[c * n + v];
      bs[K] = b[v];
      xs[K] = o.x[v];
    }
    double* A = Res.matrix ? As.data() : o.S.data();
    int* P = Res.pivots ? ps.data() : o.piv.data();
    const double* B = Res.rhs ? bs.data() : b.data();
    double* X = Res.rhs ? xs.data() : o.x.data();
    info[tx] = lu(g, entry, A, 1, P, 1, B, X, 1, work.data());
    for (int K = 0; K < r && tx < t; ++K) {
      const int v = tx + K * t;
      if (v >= n) continue;
      if (Res.matrix)
        for (int c = 0; c < n; ++c) o.S[c * n + v] = As[c * r + K];
      if (Res.pivots) o.piv[v] = ps[K];
      if (Res.rhs) o.x[v] = xs[K];
    }
  });
  for (int i : info) EXPECT_EQ(i, info[0]) << "every member returns the same verdict";
  o.info = info[0];
  return o;
}

template <CoopLuResidency Res = CoopLuResidency{}, class Lu>
Out run_lu(const Lu& lu, int n, int r, Entry entry, const std::vector<double>& S, const std::vector<double>& b,
           Groups kind = Groups::kThreaded) {
  return run_lu(calls_of<Res, int>(lu), Res, n, r, entry, S, b, kind);
}

// A run of one solver configuration: run_dynamic<C, Res> or run_static<N, C>.
using RunFn = Out (*)(int n, int r, Entry entry, const std::vector<double>& S, const std::vector<double>& b,
                      Groups kind);

template <CoopLuConfig C, CoopLuResidency Res = CoopLuResidency{}>
Out run_dynamic(int n, int r, Entry entry, const std::vector<double>& S, const std::vector<double>& b,
                Groups kind = Groups::kThreaded) {
  return run_lu<Res>(CoopLuDynamic<double, C>(n, r), n, r, entry, S, b, kind);
}

// Solution of A x = b through the serial dynamic solver.
Out solve_serial(RunFn run, LuLayout layout, const Mat& A, const Vec& b) {
  const int n = static_cast<int>(A.rows());
  return run(n, std::max(n, 1), Entry::kSolve, stored(A, layout), to_vec(b), Groups::kSerial);
}
template <CoopLuConfig C>
Out solve_serial(const Mat& A, const Vec& b) {
  return solve_serial(run_dynamic<C>, C.layout, A, b);
}

Vec as_vec(const std::vector<double>& v) {
  return Eigen::Map<const Vec>(v.data(), static_cast<Eigen::Index>(v.size()));
}

// ---------------------------------------------------------------------------------------------
// Accuracy.

void check_accuracy(RunFn run, const CoopLuConfig& C) {
  Rng rng(1000 + static_cast<unsigned>(C.layout) * 10 + static_cast<unsigned>(C.interchange));
  for (int n = 1; n <= 40; ++n) {
    for (int kind = 0; kind < 3; ++kind) {
      const Mat A = kind == 0   ? random_matrix(rng, n)
                    : kind == 1 ? graded_matrix(rng, n)
                                : ill_conditioned_matrix(rng, n);
      const Vec b = rng.vector(n);
      const Out o = solve_serial(run, C.layout, A, b);
      ASSERT_EQ(o.info, 0) << "n=" << n << " kind=" << kind;
      const Vec x = as_vec(o.x);
      EXPECT_LE(backward_error(A, x, b), 1e-12) << "n=" << n << " kind=" << kind;
      const Oracle ref = oracle(A, b);
      if (kind == 0) {
        EXPECT_LE((x - ref.x).cwiseAbs().maxCoeff() / ref.x.cwiseAbs().maxCoeff(), 1e-9) << "n=" << n;
      }
      if (kind < 2) {
        // The pivots are LAPACK's: the oracle's elimination of S picks the same rows.
        const Oracle piv_ref = oracle(s_of(A, C.layout), Vec::Zero(n));
        for (int k = 0; k < n; ++k) {
          if (C.interchange == LuInterchange::kLogical) {
            EXPECT_EQ(o.piv[piv_ref.perm[k]], k) << "n=" << n << " kind=" << kind << " k=" << k;
          } else {
            EXPECT_EQ(o.piv[k], piv_ref.perm[k]) << "n=" << n << " kind=" << kind << " k=" << k;
          }
        }
      }
    }
  }
}

TEST(CoopLu, BackwardErrorRowMajorLogical) { check_accuracy(run_dynamic<kRowLogical>, kRowLogical); }
TEST(CoopLu, BackwardErrorRowMajorPhysical) { check_accuracy(run_dynamic<kRowPhysical>, kRowPhysical); }
TEST(CoopLu, BackwardErrorColMajorLogical) { check_accuracy(run_dynamic<kColLogical>, kColLogical); }
TEST(CoopLu, BackwardErrorColMajorPhysical) { check_accuracy(run_dynamic<kColPhysical>, kColPhysical); }

TEST(CoopLu, NegativeControlPerturbedSolutionFails) {
  Rng rng(7);
  for (int n : {1, 5, 17, 40}) {
    const Mat A = random_matrix(rng, n);
    const Vec b = rng.vector(n);
    Vec x = as_vec(solve_serial<kRowLogical>(A, b).x);
    ASSERT_LE(backward_error(A, x, b), 1e-12);
    x(n / 2) *= 1.0 + 1e-8;
    EXPECT_GT(backward_error(A, x, b), 1e-12) << "the check must reject a slightly wrong x, n=" << n;
  }
}

TEST(CoopLu, FloatSolves) {
  Rng rng(8);
  const int n = 12;
  const Mat A = random_matrix(rng, n);
  const Vec b = rng.vector(n);
  std::vector<float> S(n * n), x(n), work(coop_lu_workspace_size(n, n));
  std::vector<int> piv(n);
  for (int c = 0; c < n; ++c)
    for (int r = 0; r < n; ++r) S[c * n + r] = static_cast<float>(A(r, c));
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(b(i));
  SerialGroup g;
  EXPECT_EQ((CoopLuStatic<float, n, CoopLuConfig{.rows_per_thread = n, .layout = LuLayout::kColMajor}>::solve_inplace(
                g, S.data(), 1, piv.data(), 1, x.data(), 1, work.data())),
            0);
  Vec xd(n);
  for (int i = 0; i < n; ++i) xd(i) = x[i];
  EXPECT_LE(backward_error(A, xd, b), 1e-5);
}

// ---------------------------------------------------------------------------------------------
// Bitwise invariance.

// Every rows_per_thread from 1 to N + 2, on real threads, against the serial solve.
void check_thread_sweep(RunFn run, LuLayout layout, const std::vector<int>& sizes, const std::vector<Entry>& entries) {
  Rng rng(2000);
  for (int n : sizes) {
    const Mat A = random_matrix(rng, n);
    const std::vector<double> S = stored(A, layout), b = to_vec(rng.vector(n));
    for (Entry e : entries) {
      const Out ref = run(n, n, e, S, b, Groups::kSerial);
      ASSERT_EQ(ref.info, 0);
      for (int r = 1; r <= n + 2; ++r) {
        EXPECT_TRUE(same(run(n, r, e, S, b, Groups::kThreaded), ref)) << "n=" << n << " r=" << r << " entry=" << int(e);
        // One thread per system: the serial loop nest above, the cooperative one in a wider group.
        if (r >= n) {
          EXPECT_TRUE(same(run(n, r, e, S, b, Groups::kWide), ref)) << "n=" << n << " r=" << r;
        }
      }
    }
  }
}

TEST(CoopLu, EveryRowsPerThreadIsBitwiseIdentical) {
  check_thread_sweep(run_dynamic<kRowLogical>, kRowLogical.layout, {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 24, 31, 33, 40}, {Entry::kSolve});
}

TEST(CoopLu, EveryRowsPerThreadIsBitwiseIdenticalAllConfigsAndEntries) {
  const std::vector<int> sizes = {1, 2, 6, 11};
  const std::vector<Entry> all = {Entry::kSolve, Entry::kInplace, Entry::kFactorSubstitute};
  check_thread_sweep(run_dynamic<kRowLogical>, kRowLogical.layout, sizes, all);
  check_thread_sweep(run_dynamic<kRowPhysical>, kRowPhysical.layout, sizes, all);
  check_thread_sweep(run_dynamic<kColLogical>, kColLogical.layout, sizes, all);
  check_thread_sweep(run_dynamic<kColPhysical>, kColPhysical.layout, sizes, all);
}

TEST(CoopLu, FactorizeThenSubstituteEqualsSolve) {
  Rng rng(3000);
  auto check = [&](RunFn run, LuLayout layout) {
    for (int n : {1, 2, 5, 16, 23}) {
      const Mat A = random_matrix(rng, n);
      const std::vector<double> S = stored(A, layout), b = to_vec(rng.vector(n));
      for (int r : {1, 3, n}) {
        const Out solve = run(n, r, Entry::kSolve, S, b, Groups::kThreaded);
        EXPECT_TRUE(same(run(n, r, Entry::kFactorSubstitute, S, b, Groups::kThreaded), solve)) << "n=" << n << " r=" << r;
        EXPECT_TRUE(same(run(n, r, Entry::kInplace, S, b, Groups::kThreaded), solve)) << "n=" << n << " r=" << r;
      }
    }
  };
  check(run_dynamic<kRowLogical>, kRowLogical.layout);
  check(run_dynamic<kRowPhysical>, kRowPhysical.layout);
  check(run_dynamic<kColLogical>, kColLogical.layout);
  check(run_dynamic<kColPhysical>, kColPhysical.layout);
}

// Logical and physical interchanges: same x, same rows of the factors at different places, and
// inverse pivot arrays.
TEST(CoopLu, LogicalAndPhysicalInterchangesAgree) {
  Rng rng(4000);
  for (int n : {1, 2, 3, 8, 15, 32}) {
    for (LuLayout layout : {LuLayout::kRowMajor, LuLayout::kColMajor}) {
      const Mat A = random_matrix(rng, n);
      const std::vector<double> S = stored(A, layout), b = to_vec(rng.vector(n));
      for (int r : {1, 2, n}) {
        for (Entry e : {Entry::kSolve, Entry::kFactorSubstitute}) {
          const Out lg = layout == LuLayout::kRowMajor ? run_dynamic<kRowLogical>(n, r, e, S, b)
                                                       : run_dynamic<kColLogical>(n, r, e, S, b);
          const Out ph = layout == LuLayout::kRowMajor ? run_dynamic<kRowPhysical>(n, r, e, S, b)
                                                       : run_dynamic<kColPhysical>(n, r, e, S, b);
          EXPECT_EQ(lg.info, ph.info);
          EXPECT_TRUE(bitwise_equal(lg.x, ph.x)) << "n=" << n << " r=" << r;
          for (int v = 0; v < n; ++v) {
            const int k = lg.piv[v];
            ASSERT_GE(k, 0);
            ASSERT_LT(k, n);
            EXPECT_EQ(ph.piv[k], v);
            for (int c = 0; c < n; ++c)
              EXPECT_TRUE(bitwise_equal({lg.S[c * n + v]}, {ph.S[c * n + k]})) << "row " << v << " col " << c;
          }
        }
      }
    }
  }
}

// Ties of magnitude (small integers), NaN, infinities and zeros: every thread count and both
// schemes still agree bitwise, verdict included; the serial loop nest (r >= n) breaks ties by its
// own route, the first row in pivoted order, against the cooperative candidates.
TEST(CoopLu, TiesAndSpecialValuesAreBitwiseInvariant) {
  Rng rng(4500);
  std::mt19937 gen(4501);
  std::uniform_int_distribution<int> small(-2, 2);
  for (int n : {2, 5, 12}) {
    for (int kind = 0; kind < 4; ++kind) {
      Mat A(n, n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) A(i, j) = small(gen);
      if (kind == 1) A(n / 2, n / 3) = kNaN;
      if (kind == 2) A(n - 1, 0) = std::numeric_limits<double>::infinity();
      if (kind == 3) A.col(n / 2).setZero();
      for (LuLayout layout : {LuLayout::kRowMajor, LuLayout::kColMajor}) {
        const std::vector<double> S = stored(A, layout), b = to_vec(rng.vector(n));
        for (Entry e : {Entry::kSolve, Entry::kFactorSubstitute}) {
          const Out ref = layout == LuLayout::kRowMajor ? run_dynamic<kRowLogical>(n, n, e, S, b, Groups::kSerial)
                                                        : run_dynamic<kColLogical>(n, n, e, S, b, Groups::kSerial);
          for (int r : {1, 2, 3, n / 2 + 1, n + 1}) {
            const Out lg = layout == LuLayout::kRowMajor ? run_dynamic<kRowLogical>(n, r, e, S, b)
                                                         : run_dynamic<kColLogical>(n, r, e, S, b);
            const Out ph = layout == LuLayout::kRowMajor ? run_dynamic<kRowPhysical>(n, r, e, S, b)
                                                         : run_dynamic<kColPhysical>(n, r, e, S, b);
            EXPECT_TRUE(same(lg, ref)) << "n=" << n << " kind=" << kind << " r=" << r;
            EXPECT_EQ(ph.info, ref.info);
            EXPECT_TRUE(bitwise_equal(ph.x, ref.x)) << "n=" << n << " kind=" << kind << " r=" << r;
          }
          if (kind == 0 && !oracle(s_of(A, layout), Vec::Zero(n)).singular) {
            // Exact integer first column: the first pivot is LAPACK's first largest.
            const Oracle o = oracle(s_of(A, layout), Vec::Zero(n));
            EXPECT_EQ(ref.piv[o.perm[0]], 0) << "n=" << n;
          }
          if (kind == 3) {
            EXPECT_GT(ref.info, 0);
          }
        }
      }
    }
  }
}

// Static vs dynamic, over a compile-time sweep of rows_per_thread.
constexpr CoopLuConfig with_rows(CoopLuConfig C, int R) {
  return {.rows_per_thread = R,
          .layout = C.layout,
          .interchange = C.interchange,
          .relative_pivot_threshold = C.relative_pivot_threshold,
          .singular_floor = C.singular_floor};
}

template <int N, CoopLuConfig CR>
Out run_static(int n, int r, Entry entry, const std::vector<double>& S, const std::vector<double>& b, Groups kind) {
  using Lu = CoopLuStatic<double, N, CR>;
  static_assert(Lu::threads_per_system == (N + CR.rows_per_thread - 1) / CR.rows_per_thread);
  static_assert(Lu::workspace_size == coop_lu_workspace_size(N, CR.rows_per_thread));
  return run_lu(Lu{}, n, r, entry, S, b, kind);
}

// statics: (R, run_static<N, C with rows_per_thread R>) for each R of the sweep.
void check_static(int N, LuLayout layout, RunFn dynamic, const std::vector<std::pair<int, RunFn>>& statics) {
  Rng rng(5000 + N);
  const Mat A = random_matrix(rng, N);
  const std::vector<double> S = stored(A, layout), b = to_vec(rng.vector(N));
  for (const auto& [R, run_st] : statics) {
    for (Entry e : {Entry::kSolve, Entry::kFactorSubstitute}) {
      const Out st = run_st(N, R, e, S, b, Groups::kThreaded);
      const Out dy = dynamic(N, R, e, S, b, Groups::kThreaded);
      EXPECT_TRUE(same(st, dy)) << "N=" << N << " R=" << R;
      EXPECT_TRUE(same(st, dynamic(N, N, e, S, b, Groups::kSerial))) << "N=" << N << " R=" << R;
    }
  }
}

template <int N, CoopLuConfig C, int... Rs>
void check_static(std::integer_sequence<int, Rs...>) {
  check_static(N, C.layout, run_dynamic<C>, {{Rs + 1, run_static<N, with_rows(C, Rs + 1)>}...});
}

TEST(CoopLu, StaticEqualsDynamic) {
  check_static<7, kRowLogical>(std::make_integer_sequence<int, 9>{});
  check_static<7, kColPhysical>(std::make_integer_sequence<int, 9>{});
  check_static<12, kRowPhysical>(std::integer_sequence<int, 0, 3, 5, 11, 13>{});
  check_static<12, kColLogical>(std::integer_sequence<int, 0, 1, 4, 12>{});
}

// Both layouts read the same memory as A (row-major) or A' (column-major): the factors are the same,
// and each solve answers its own system.
TEST(CoopLu, LayoutsSolveTheirOwnSystems) {
  Rng rng(6000);
  for (int n : {1, 4, 9, 20}) {
    const Mat M = random_matrix(rng, n);  // the memory, read column-major
    const std::vector<double> mem = to_vec(M), b = to_vec(rng.vector(n));
    const Out row = run_dynamic<kRowLogical>(n, 2, Entry::kSolve, mem, b);
    const Out col = run_dynamic<kColLogical>(n, 2, Entry::kSolve, mem, b);
    EXPECT_TRUE(bitwise_equal(row.S, col.S));
    EXPECT_EQ(row.piv, col.piv);
    // Row-major: A(r, c) = mem[r n + c] = M(c, r), so A = M'. Column-major: A = M.
    EXPECT_LE(backward_error(M.transpose(), as_vec(row.x), as_vec(b)), 1e-12);
    EXPECT_LE(backward_error(M, as_vec(col.x), as_vec(b)), 1e-12);
    if (n > 1) {
      EXPECT_GT(backward_error(M, as_vec(row.x), as_vec(b)), 1e-8) << "the layouts must differ";
    }
  }
}

// Every residency of the matrix, the pivots and the right-hand side gives bitwise the same results.
// runs[i]: run_dynamic<C, kResidencies[i]>.
constexpr CoopLuResidency kResidencies[7] = {{true, false, false}, {false, true, false}, {false, false, true},
                                             {true, true, false},  {true, false, true},  {false, true, true},
                                             {true, true, true}};

void check_residencies(LuLayout layout, RunFn global, const RunFn (&runs)[7]) {
  Rng rng(7000);
  for (int n : {1, 6, 13}) {
    const Mat A = random_matrix(rng, n);
    const std::vector<double> S = stored(A, layout), b = to_vec(rng.vector(n));
    for (int r : {1, 4, n + 1}) {
      for (Entry e : {Entry::kSolve, Entry::kInplace, Entry::kFactorSubstitute}) {
        const Out ref = global(n, r, e, S, b, Groups::kThreaded);
        for (int i = 0; i < 7; ++i) {
          const CoopLuResidency Res = kResidencies[i];
          EXPECT_TRUE(same(runs[i](n, r, e, S, b, Groups::kThreaded), ref))
              << "n=" << n << " r=" << r << " entry=" << int(e) << " residency=" << Res.matrix << Res.pivots << Res.rhs;
        }
      }
    }
  }
}

template <CoopLuConfig C, int... I>
void check_residencies(std::integer_sequence<int, I...>) {
  check_residencies(C.layout, run_dynamic<C>, {run_dynamic<C, kResidencies[I]>...});
}

template <CoopLuConfig C>
void check_residencies() {
  check_residencies<C>(std::make_integer_sequence<int, 7>{});
}

TEST(CoopLu, EveryResidencyIsBitwiseIdentical) {
  check_residencies<kRowLogical>();
  check_residencies<kRowPhysical>();
  check_residencies<kColLogical>();
  check_residencies<kColPhysical>();
}

// A group wider than threads_per_system (idle members) and the workspace barrier on raw threads.
TEST(CoopLu, WiderGroupsAndWorkspaceBarrier) {
  Rng rng(8000);
  for (int n : {1, 3, 10, 21}) {
    const Mat A = random_matrix(rng, n);
    for (LuLayout layout : {LuLayout::kRowMajor, LuLayout::kColMajor}) {
      const std::vector<double> S = stored(A, layout), b = to_vec(rng.vector(n));
      for (int r : {1, 4}) {
        for (Entry e : {Entry::kSolve, Entry::kFactorSubstitute}) {
          if (layout == LuLayout::kRowMajor) {
            const Out ref = run_dynamic<kRowLogical>(n, r, e, S, b);
            EXPECT_TRUE(same(run_dynamic<kRowLogical>(n, r, e, S, b, Groups::kWide), ref));
            EXPECT_TRUE(same(run_dynamic<kRowLogical>(n, r, e, S, b, Groups::kWorkspaceBarrier), ref));
          } else {
            const Out ref = run_dynamic<kColPhysical>(n, r, e, S, b);
            EXPECT_TRUE(same(run_dynamic<kColPhysical>(n, r, e, S, b, Groups::kWide), ref));
            EXPECT_TRUE(same(run_dynamic<kColPhysical>(n, r, e, S, b, Groups::kWorkspaceBarrier), ref));
          }
        }
      }
    }
  }
}

TEST(CoopLu, RejectsAGroupTooSmall) {
  SerialGroup g;
  std::vector<double> S(9, 1.0), x(3, 1.0), work(coop_lu_workspace_size(3, 1));
  std::vector<int> piv(3);
  EXPECT_THROW((CoopLuDynamic<double>(3, 1).solve_inplace(g, S.data(), 1, piv.data(), 1, x.data(), 1, work.data())),
               std::invalid_argument);
  EXPECT_THROW((CoopLuDynamic<double>(3, 0).factorize(g, S.data(), 1, piv.data(), 1, work.data())),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Batches: AoS, SoA and AoSoA strides give bitwise the per-system results.

enum class Batch { kAoS, kSoA, kAoSoA };
constexpr int kW = 4;

// Offset of system s and the stride, for an operand of len elements per system in a batch of nb.
std::pair<std::int64_t, std::int64_t> batch_place(Batch layout, int s, int len, int nb) {
  switch (layout) {
    case Batch::kAoS:
      return {static_cast<std::int64_t>(s) * len, 1};
    case Batch::kSoA:
      return {s, nb};
    case Batch::kAoSoA:
    default:
      return {static_cast<std::int64_t>(s / kW) * kW * len + s % kW, kW};
  }
}
std::size_t batch_size(Batch layout, int len, int nb) {
  return layout == Batch::kAoSoA ? static_cast<std::size_t>((nb + kW - 1) / kW) * kW * len
                                 : static_cast<std::size_t>(nb) * len;
}

struct BatchOut {
  std::vector<Out> systems;
};

// Solves every system of the batch (one group after another, one shared workspace poisoned with NaN
// at the start), then unpacks the results per system.
BatchOut run_batch(const LuCalls<std::int64_t>& lu, Batch layout, int n, int r, Entry entry,
                   const std::vector<std::vector<double>>& S, const std::vector<std::vector<double>>& b) {
  const int nb = static_cast<int>(S.size());
  const int t = coop_lu_threads_per_system(n, r);
  std::vector<double> A(batch_size(layout, n * n, nb), kNaN), B(batch_size(layout, n, nb), kNaN),
      X(batch_size(layout, n, nb), kNaN);
  std::vector<int> P(batch_size(layout, n, nb), -1);
  for (int s = 0; s < nb; ++s) {
    const auto [oa, sa] = batch_place(layout, s, n * n, nb);
    const auto [ob, sb] = batch_place(layout, s, n, nb);
    for (int e = 0; e < n * n; ++e) A[oa + e * sa] = S[s][e];
    for (int e = 0; e < n; ++e) B[ob + e * sb] = b[s][e];
    if (entry == Entry::kInplace)
      for (int e = 0; e < n; ++e) X[ob + e * sb] = b[s][e];
  }
  std::vector<double> work = poisoned(coop_lu_workspace_size(n, r));
  BatchOut out;
  for (int s = 0; s < nb; ++s) {
    const auto [oa, sa] = batch_place(layout, s, n * n, nb);
    const auto [ob, sb] = batch_place(layout, s, n, nb);
    std::vector<int> info(t, -1);
    auto body = [&](auto& g) {
      double* a = A.data() + oa;
      int* p = P.data() + ob;
      double* x = X.data() + ob;
      const double* bb = B.data() + ob;
      info[g.rank()] = lu(g, entry, a, sa, p, sb, bb, x, sb, work.data());
    };
    if (t == 1) {
      SerialGroup g;
      body(g);
    } else {
      run_threaded(t, body);
    }
    Out o;
    o.info = info[0];
    o.S.resize(n * n);
    o.piv.resize(n);
    o.x.resize(n);
    for (int e = 0; e < n * n; ++e) o.S[e] = A[oa + e * sa];
    for (int e = 0; e < n; ++e) {
      o.piv[e] = P[ob + e * sb];
      o.x[e] = X[ob + e * sb];
    }
    out.systems.push_back(o);
  }
  return out;
}

using BatchFn = BatchOut (*)(Batch layout, int n, int r, Entry entry, const std::vector<std::vector<double>>& S,
                             const std::vector<std::vector<double>>& b);

// The batches run on serial and threaded groups only.
template <CoopLuConfig C>
BatchOut run_batch(Batch layout, int n, int r, Entry entry, const std::vector<std::vector<double>>& S,
                   const std::vector<std::vector<double>>& b) {
  using Lu = CoopLuDynamic<double, C>;
  const Lu lu(n, r);
  const LuCalls<std::int64_t> calls{&lu, call_lu<Lu, CoopLuResidency{}, SerialGroup, std::int64_t>,
                                    call_lu<Lu, CoopLuResidency{}, ThreadedGroup, std::int64_t>, nullptr};
  return run_batch(calls, layout, n, r, entry, S, b);
}

TEST(CoopLu, AosSoaAndAosoaBatchesAreBitwiseIdentical) {
  Rng rng(9000);
  const int nb = 7;  // not a multiple of W: the last AoSoA block is partial
  for (int n : {1, 3, 8}) {
    std::vector<std::vector<double>> S, b;
    for (int s = 0; s < nb; ++s) {
      S.push_back(to_vec(random_matrix(rng, n)));
      b.push_back(to_vec(rng.vector(n)));
    }
    for (int r : {2, n}) {
      for (Entry e : {Entry::kSolve, Entry::kInplace, Entry::kFactorSubstitute}) {
        auto check = [&](BatchFn batch, RunFn run) {
          for (Batch layout : {Batch::kAoS, Batch::kSoA, Batch::kAoSoA}) {
            const BatchOut out = batch(layout, n, r, e, S, b);
            for (int s = 0; s < nb; ++s)
              EXPECT_TRUE(same(out.systems[s], run(n, r, e, S[s], b[s], Groups::kThreaded)))
                  << "layout=" << int(layout) << " n=" << n << " r=" << r << " system " << s;
          }
        };
        check(run_batch<kRowLogical>, run_dynamic<kRowLogical>);
        check(run_batch<kColPhysical>, run_dynamic<kColPhysical>);
      }
    }
  }
}

TEST(CoopLu, FixedStrideMatchesRuntimeStride) {
  Rng rng(9100);
  const int n = 6;
  using Lu = CoopLuStatic<double, n, CoopLuConfig{.rows_per_thread = n}>;
  const std::vector<double> S0 = to_vec(random_matrix(rng, n)), b = to_vec(rng.vector(n));
  std::vector<double> S1 = S0, S2 = S0, x1(n), x2(n), w(Lu::workspace_size);
  std::vector<int> p1(n), p2(n);
  SerialGroup g;
  Lu::solve(g, S1.data(), 1, p1.data(), 1, b.data(), x1.data(), 1, w.data());
  Lu::solve(g, S2.data(), kUnitStride, p2.data(), FixedStride<1>{}, b.data(), x2.data(), kUnitStride, w.data());
  EXPECT_TRUE(bitwise_equal(S1, S2));
  EXPECT_TRUE(bitwise_equal(x1, x2));
  EXPECT_EQ(p1, p2);
}

// ---------------------------------------------------------------------------------------------
// Singular and nearly singular systems.

TEST(CoopLu, ExactlySingularVerdicts) {
  Rng rng(10000);
  for (int n : {1, 2, 5, 12}) {
    for (int k = 0; k < n; ++k) {
      Mat S = random_matrix(rng, n);
      S.col(k).setZero();  // column k of S stays zero through the elimination: step k is singular
      const std::vector<double> mem = to_vec(S), b = to_vec(rng.vector(n));
      for (int r : {1, 2, n}) {
        const Out lg = run_dynamic<kColLogical>(n, r, Entry::kSolve, mem, b);
        EXPECT_EQ(lg.info, k + 1) << "n=" << n << " k=" << k;
        EXPECT_TRUE(same(run_dynamic<kColLogical>(n, r, Entry::kFactorSubstitute, mem, b), lg));
        EXPECT_EQ(run_dynamic<kRowPhysical>(n, r, Entry::kFactorSubstitute, mem, b).info, k + 1);
        const Out ph = run_dynamic<kColPhysical>(n, r, Entry::kSolve, mem, b);
        EXPECT_EQ(ph.info, k + 1);
        EXPECT_TRUE(bitwise_equal(lg.x, ph.x)) << "the schemes agree on singular systems too";
      }
    }
    const std::vector<double> zero(n * n, 0.0), b = to_vec(rng.vector(n));
    EXPECT_EQ(run_dynamic<kRowLogical>(n, 1, Entry::kSolve, zero, b).info, 1);
  }
}

TEST(CoopLu, SingularFloor) {
  const int n = 4;
  auto diag = [&](double d) {
    Mat S = Mat::Identity(n, n);
    S(2, 2) = d;
    return to_vec(S);
  };
  const std::vector<double> b(n, 1.0);
  // Default floor: the smallest normal number. Subnormal pivots are singular, tiny normal ones not.
  EXPECT_EQ(run_dynamic<kColLogical>(n, 2, Entry::kSolve, diag(1e-310), b).info, 3);
  EXPECT_EQ(run_dynamic<kColLogical>(n, 2, Entry::kSolve, diag(1e-300), b).info, 0);
  EXPECT_EQ(run_dynamic<kColLogical>(n, 2, Entry::kSolve, diag(-0.0), b).info, 3);
  constexpr CoopLuConfig kFloor{.layout = LuLayout::kColMajor, .singular_floor = 1e-3};
  EXPECT_EQ(run_dynamic<kFloor>(n, 2, Entry::kSolve, diag(1e-4), b).info, 3);
  EXPECT_EQ(run_dynamic<kFloor>(n, 2, Entry::kSolve, diag(-1e-2), b).info, 0);
  constexpr CoopLuConfig kZeroFloor{.layout = LuLayout::kColMajor, .singular_floor = 0.0};
  EXPECT_EQ(run_dynamic<kZeroFloor>(n, 2, Entry::kSolve, diag(1e-310), b).info, 0);
  EXPECT_EQ(run_dynamic<kZeroFloor>(n, 2, Entry::kSolve, diag(0.0), b).info, 3);
}

TEST(CoopLu, NearlySingularStillBackwardStable) {
  Rng rng(11000);
  for (int n : {3, 10, 25}) {
    Mat A = random_matrix(rng, n);
    A.row(n - 1) = A.row(0) + 1e-15 * rng.matrix(1, n);  // numerically rank n - 1
    const Vec b = rng.vector(n);
    const Out o = solve_serial<kRowLogical>(A, b);
    EXPECT_EQ(o.info, 0);
    EXPECT_LE(backward_error(A, as_vec(o.x), b), 1e-12) << "n=" << n;
  }
}

// One singular system in a batch: its verdict is right, every other system is finite and bitwise the
// same as when solved alone, though the workspace is shared and the singular one ran before them.
TEST(CoopLu, SingularSystemDoesNotLeakIntoTheBatch) {
  Rng rng(12000);
  const int nb = 6, n = 9, bad = 2;
  std::vector<std::vector<double>> S, b;
  for (int s = 0; s < nb; ++s) {
    Mat m = random_matrix(rng, n);
    if (s == bad) m.col(4).setZero();
    S.push_back(to_vec(m));
    b.push_back(to_vec(rng.vector(n)));
  }
  for (int r : {2, n}) {
    for (Entry e : {Entry::kSolve, Entry::kFactorSubstitute}) {
      for (Batch layout : {Batch::kSoA, Batch::kAoSoA}) {
        const BatchOut out = run_batch<kColLogical>(layout, n, r, e, S, b);
        const BatchOut out_row = run_batch<kRowPhysical>(layout, n, r, e, S, b);
        for (int s = 0; s < nb; ++s) {
          if (s == bad) {
            EXPECT_EQ(out.systems[s].info, 5);
            EXPECT_GT(out_row.systems[s].info, 0) << "A' has a zero row: singular too";
            continue;
          }
          EXPECT_EQ(out.systems[s].info, 0);
          EXPECT_TRUE(as_vec(out.systems[s].x).allFinite());
          EXPECT_TRUE(same(out.systems[s], run_dynamic<kColLogical>(n, r, e, S[s], b[s])));
          EXPECT_TRUE(same(out_row.systems[s], run_dynamic<kRowPhysical>(n, r, e, S[s], b[s])));
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Pivot threshold.

TEST(CoopLu, RelativeThresholdKeepsTheRowInPlace) {
  // S column 0 = (0.6, 1): LAPACK swaps; tau = 0.5 keeps row 0 (0.6 >= 0.5 * 1).
  Mat S(2, 2);
  S << 0.6, 2.0, 1.0, 0.5;
  const std::vector<double> mem = to_vec(S), b = {1.0, 2.0};
  const Out lapack = run_dynamic<kColLogical>(2, 1, Entry::kSolve, mem, b);
  EXPECT_EQ(lapack.piv, (std::vector<int>{1, 0}));
  constexpr CoopLuConfig kHalf{.layout = LuLayout::kColMajor, .relative_pivot_threshold = 0.5};
  const Out half = run_dynamic<kHalf>(2, 1, Entry::kSolve, mem, b);
  EXPECT_EQ(half.piv, (std::vector<int>{0, 1}));
  EXPECT_LE(backward_error(S, as_vec(half.x), as_vec(b)), 1e-15);
  constexpr CoopLuConfig kHalfPhysical{
      .layout = LuLayout::kColMajor, .interchange = LuInterchange::kPhysical, .relative_pivot_threshold = 0.5};
  EXPECT_TRUE(bitwise_equal(run_dynamic<kHalfPhysical>(2, 2, Entry::kSolve, mem, b).x, half.x));
  // Random matrices: still bitwise invariant over rows_per_thread, still backward stable.
  Rng rng(13000);
  for (int n : {5, 16}) {
    const Mat A = random_matrix(rng, n);
    const std::vector<double> m = stored(A, LuLayout::kColMajor), bb = to_vec(rng.vector(n));
    const Out ref = run_dynamic<kHalf>(n, n, Entry::kSolve, m, bb, Groups::kSerial);
    EXPECT_LE(backward_error(A, as_vec(ref.x), as_vec(bb)), 1e-12);
    for (int r : {1, 3}) {
      EXPECT_TRUE(same(run_dynamic<kHalf>(n, r, Entry::kSolve, m, bb), ref));
      EXPECT_TRUE(bitwise_equal(run_dynamic<kHalfPhysical>(n, r, Entry::kFactorSubstitute, m, bb).x, ref.x));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Barrier sequence and allocations.

// A group of `size` members seen from rank 0 alone, counting its barriers: size 1 takes the serial
// path, size 2 the cooperative one (rank 1 would only take part in the barriers).
struct CountingGroup {
  int* count;
  int members;
  int rank() const { return 0; }
  int size() const { return members; }
  void sync() const { ++*count; }
};

// The barriers counted in factorize, substitute and solve_inplace (S2) of CoopLuDynamic<double, C>.
template <CoopLuConfig C>
std::array<int, 3> count_barriers(int n, int members, double* S, double* S2, int* piv, double* x, double* work) {
  const CoopLuDynamic<double, C> lu(n, std::max(n, 1));
  std::array<int, 3> counts{};
  CountingGroup g{&counts[0], members};
  lu.factorize(g, S, 1, piv, 1, work);
  g.count = &counts[1];
  lu.substitute(g, S, 1, piv, 1, x, x, 1, work);
  g.count = &counts[2];
  lu.solve_inplace(g, S2, 1, piv, 1, x, 1, work);
  return counts;
}
using CountFn = std::array<int, 3> (*)(int, int, double*, double*, int*, double*, double*);

void check_barrier_count(const CoopLuConfig& C, CountFn count_of, const std::vector<int>& sizes) {
  const bool phys = C.interchange == LuInterchange::kPhysical;
  const bool row = C.layout == LuLayout::kRowMajor;
  Rng rng(14000);
  for (int n : sizes) {
    for (bool singular : {false, true}) {
      for (int members : {1, 2}) {
        Mat A = n ? random_matrix(rng, n) : Mat(0, 0);
        if (singular && n) A.setZero();
        std::vector<double> S = to_vec(A), S2 = S, x(n, 1.0), work(coop_lu_workspace_size(n, n) + 1);
        std::vector<int> piv(n);
        const bool one = members == 1 || n == 0;
        const std::array<int, 3> count = count_of(n, members, S.data(), S2.data(), piv.data(), x.data(), work.data());
        EXPECT_EQ(count[0], one ? 1 : 2 * n + 1);
        EXPECT_EQ(count[1], one ? 1 : 2 * n + 2 + (phys ? 1 : 0));
        EXPECT_EQ(count[2], one ? 1 : 3 * n + 2 + (phys && row ? 1 : 0));
      }
    }
  }
}

TEST(CoopLu, FixedBarrierSequence) {
  const std::vector<int> sizes = {0, 1, 2, 7};
  check_barrier_count(kRowLogical, count_barriers<kRowLogical>, sizes);
  check_barrier_count(kRowPhysical, count_barriers<kRowPhysical>, sizes);
  check_barrier_count(kColLogical, count_barriers<kColLogical>, sizes);
  check_barrier_count(kColPhysical, count_barriers<kColPhysical>, sizes);
}

TEST(CoopLu, NeverAllocates) {
  constexpr int n = 16;
  Rng rng(15000);
  std::vector<double> S = to_vec(random_matrix(rng, n)), S2 = S, x = to_vec(rng.vector(n)), y = x,
                      work(coop_lu_workspace_size(n, n));
  std::vector<int> piv(n);
  SerialGroup g;
  const long before = g_allocations.load();
  CoopLuStatic<double, n, CoopLuConfig{.rows_per_thread = n}>::solve_inplace(g, S.data(), 1, piv.data(), 1, x.data(), 1,
                                                                             work.data());
  CoopLuDynamic<double, kColPhysical>(n, n).solve_inplace(g, S2.data(), 1, piv.data(), 1, y.data(), 1, work.data());
  EXPECT_EQ(g_allocations.load(), before);
}

}  // namespace

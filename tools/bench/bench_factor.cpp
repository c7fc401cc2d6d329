// Batched small symmetric factorizations on the CPU, one thread: factor + solve A x = b for a batch
// of 10^4 systems, n in {4, 8, 14, 16, 32}. Reported: per_system, the CPU time per system.
//
//   Cholesky (SPD batch, B B' + n I):
//     Knot     cholesky_posv<Lower, ColMajor, n, 1> on the serial group, on a local copy of the
//              system (n = 8..16: potrf's SIMD kernel with the forward sweep fused in)
//     Eigen    LLT<Matrix<double, n, n>> (fixed size) then solve()
//     LAPACKE  dpotrf + dpotrs (Debian: OpenBLAS behind liblapack.so.3), _work forms (no NaN scan)
//   LDL' (symmetric indefinite batch, entries uniform in [-1, 1]):
//     Knot     ldlt_factor<n> + ldlt_solve<n> (Bunch-Kaufman, with inertia)
//     Eigen    LDLT<Matrix<double, n, n>> (fixed size; diagonal pivoting, no 2x2 blocks) + solve()
//     LAPACKE  dsytrf + dsytrs (Bunch-Kaufman), _work forms, workspace allocated once
//   The *_factor variants time the factorization alone.
// Every contender copies the matrix of each system before factoring it in place (Eigen's
// constructor does the copy itself), so the input batch is reused across iterations.
//
// And the banded KKT LDL' (kkt_ldlt_factor: assembly + factorization) of an OCP with nx = 14,
// nu = 7 for horizons N = 16..256: per_stage shows the linear growth.
//
//   OPENBLAS_NUM_THREADS=1 build/.../tools/bench/knot_bench_factor --benchmark_min_time=0.1 \
//       --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
//       --benchmark_report_aggregates_only=true
// (the command of docs/BENCHMARKS.md; ratios are only meaningful between entries of one run).
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "knot/linalg/cholesky.hpp"
#include "knot/linalg/kkt_ldlt.hpp"
#include "knot/linalg/ldlt.hpp"

#if defined(KNOT_BENCH_HAVE_LAPACKE)
#include <lapacke.h>
#endif

namespace {

using namespace knot::linalg;

constexpr int kBatch = 10000;

struct Batch {
  int n = 0;
  std::vector<double> A, b;  // AoS, each matrix column-major, full symmetric storage
};

// kind 0: SPD (B B' + n I), kind 1: symmetric indefinite, uniform in [-1, 1].
template <int N, int Kind>
const Batch& batch() {
  static const Batch data = [] {
    Batch d;
    d.n = N;
    std::mt19937_64 gen(100 * N + Kind);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    d.A.resize(static_cast<std::size_t>(kBatch) * N * N);
    d.b.resize(static_cast<std::size_t>(kBatch) * N);
    for (double& v : d.b) v = u(gen);
    using M = Eigen::Matrix<double, N, N>;
    for (int s = 0; s < kBatch; ++s) {
      M m;
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < N; ++i) m(i, j) = u(gen);
      M a = Kind == 0 ? M(m * m.transpose() + N * M::Identity()) : M((m + m.transpose()) * 0.5);
      Eigen::Map<M>(d.A.data() + static_cast<std::size_t>(s) * N * N) = a;
    }
    return d;
  }();
  return data;
}

double backward_error(const Batch& d, int s, const double* x) {
  const int n = d.n;
  const double* A = d.A.data() + static_cast<std::size_t>(s) * n * n;
  const double* b = d.b.data() + static_cast<std::size_t>(s) * n;
  double r = 0, amax = 0, xmax = 0, bmax = 0;
  for (int i = 0; i < n; ++i) {
    double acc = -b[i];
    for (int j = 0; j < n; ++j) {
      acc += A[j * n + i] * x[j];
      amax = std::max(amax, std::fabs(A[j * n + i]));
    }
    r = std::max(r, std::fabs(acc));
    xmax = std::max(xmax, std::fabs(x[i]));
    bmax = std::max(bmax, std::fabs(b[i]));
  }
  return r / (amax * xmax + bmax);
}

// tol < 0: no check (factor-only runs).
void finish(benchmark::State& st, const Batch& d, const std::vector<double>& x, double tol) {
  if (tol > 0)
    for (int s : {0, kBatch / 2, kBatch - 1})
      if (!(backward_error(d, s, x.data() + static_cast<std::size_t>(s) * d.n) <= tol)) st.SkipWithError("wrong solution");
  st.counters["per_system"] =
      benchmark::Counter(kBatch, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// ---- Cholesky ----

template <int N, bool kSolve>
void BM_KnotCholesky(benchmark::State& st) {
  const Batch& d = batch<N, 0>();
  std::vector<double> x(d.b.size());
  SerialGroup g;
  int bad = 0;
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      alignas(64) double a[N * N];
      double y[N];
      std::memcpy(a, d.A.data() + static_cast<std::size_t>(s) * N * N, sizeof a);
      if constexpr (kSolve) {
        std::memcpy(y, d.b.data() + static_cast<std::size_t>(s) * N, sizeof y);
        bad |= cholesky_posv<Uplo::Lower, Arrangement::ColMajor, N, 1>(g, N, 1, a, N, y, N);
        std::memcpy(x.data() + static_cast<std::size_t>(s) * N, y, sizeof y);
      } else {
        bad |= cholesky_factor<Uplo::Lower, Arrangement::ColMajor, N>(g, N, a, N);
        benchmark::DoNotOptimize(a);
      }
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  if (bad) st.SkipWithError("not positive definite");
  finish(st, d, x, kSolve ? 1e-13 : -1);
}

template <int N, bool kSolve>
void BM_EigenLlt(benchmark::State& st) {
  using M = Eigen::Matrix<double, N, N>;
  using V = Eigen::Matrix<double, N, 1>;
  const Batch& d = batch<N, 0>();
  std::vector<double> x(d.b.size());
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      const Eigen::LLT<M> llt(Eigen::Map<const M>(d.A.data() + static_cast<std::size_t>(s) * N * N));
      if constexpr (kSolve) {
        Eigen::Map<V>(x.data() + static_cast<std::size_t>(s) * N) =
            llt.solve(Eigen::Map<const V>(d.b.data() + static_cast<std::size_t>(s) * N));
      } else {
        benchmark::DoNotOptimize(llt.matrixLLT().data());
      }
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  finish(st, d, x, kSolve ? 1e-13 : -1);
}

#if defined(KNOT_BENCH_HAVE_LAPACKE)
template <int N, bool kSolve>
void BM_LapackePotrf(benchmark::State& st) {
  const Batch& d = batch<N, 0>();
  std::vector<double> x(d.b.size());
  int bad = 0;
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      double a[N * N];
      std::memcpy(a, d.A.data() + static_cast<std::size_t>(s) * N * N, sizeof a);
      bad |= LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', N, a, N);
      if constexpr (kSolve) {
        double* y = x.data() + static_cast<std::size_t>(s) * N;
        std::memcpy(y, d.b.data() + static_cast<std::size_t>(s) * N, N * sizeof(double));
        bad |= LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', N, 1, a, N, y, N);
      } else {
        benchmark::DoNotOptimize(a);
      }
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  if (bad) st.SkipWithError("LAPACKE reported an error");
  finish(st, d, x, kSolve ? 1e-13 : -1);
}
#endif

// ---- LDL' ----

template <int N, bool kSolve>
void BM_KnotLdlt(benchmark::State& st) {
  const Batch& d = batch<N, 1>();
  std::vector<double> x(d.b.size());
  SerialGroup g;
  int zero = 0;
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      alignas(64) double a[N * N];
      alignas(64) double y[N], scratch[ldlt_scratch_size(N)];
      int piv[N];
      std::memcpy(a, d.A.data() + static_cast<std::size_t>(s) * N * N, sizeof a);
      zero |= ldlt_factor<N>(g, N, a, N, piv, scratch).nzero;
      if constexpr (kSolve) {
        std::memcpy(y, d.b.data() + static_cast<std::size_t>(s) * N, sizeof y);
        ldlt_solve<N>(g, N, 1, a, N, piv, y, N);
        std::memcpy(x.data() + static_cast<std::size_t>(s) * N, y, sizeof y);
      } else {
        benchmark::DoNotOptimize(a);
      }
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  if (zero) st.SkipWithError("singular");
  finish(st, d, x, kSolve ? 1e-12 : -1);
}

template <int N, bool kSolve>
void BM_EigenLdlt(benchmark::State& st) {
  using M = Eigen::Matrix<double, N, N>;
  using V = Eigen::Matrix<double, N, 1>;
  const Batch& d = batch<N, 1>();
  std::vector<double> x(d.b.size());
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      const Eigen::LDLT<M> ldlt(Eigen::Map<const M>(d.A.data() + static_cast<std::size_t>(s) * N * N));
      if constexpr (kSolve) {
        Eigen::Map<V>(x.data() + static_cast<std::size_t>(s) * N) =
            ldlt.solve(Eigen::Map<const V>(d.b.data() + static_cast<std::size_t>(s) * N));
      } else {
        benchmark::DoNotOptimize(ldlt.matrixLDLT().data());
      }
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  // Eigen's LDLT is not backward stable on indefinite matrices: checked loosely.
  finish(st, d, x, kSolve ? 1e-6 : -1);
}

#if defined(KNOT_BENCH_HAVE_LAPACKE)
template <int N, bool kSolve>
void BM_LapackeSytrf(benchmark::State& st) {
  const Batch& d = batch<N, 1>();
  std::vector<double> x(d.b.size());
  int bad = 0;
  // The blocked dsytrf asks for n * nb; 64 per row is more than any block size LAPACK picks here.
  std::vector<double> work(static_cast<std::size_t>(64) * N);
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      double a[N * N];
      lapack_int ipiv[N];
      std::memcpy(a, d.A.data() + static_cast<std::size_t>(s) * N * N, sizeof a);
      bad |= LAPACKE_dsytrf_work(LAPACK_COL_MAJOR, 'L', N, a, N, ipiv, work.data(), static_cast<lapack_int>(work.size()));
      if constexpr (kSolve) {
        double* y = x.data() + static_cast<std::size_t>(s) * N;
        std::memcpy(y, d.b.data() + static_cast<std::size_t>(s) * N, N * sizeof(double));
        bad |= LAPACKE_dsytrs_work(LAPACK_COL_MAJOR, 'L', N, 1, a, N, ipiv, y, N);
      } else {
        benchmark::DoNotOptimize(a);
      }
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  if (bad) st.SkipWithError("LAPACKE reported an error");
  finish(st, d, x, kSolve ? 1e-12 : -1);
}
#endif

#define KNOT_BENCH_FACTOR(N)                                                        \
  BENCHMARK(BM_KnotCholesky<N, true>)->Name("Cholesky_Knot/" #N);                   \
  BENCHMARK(BM_EigenLlt<N, true>)->Name("Cholesky_Eigen_LLT_fixed/" #N);            \
  KNOT_BENCH_LAPACKE_CHOL(N)                                                        \
  BENCHMARK(BM_KnotCholesky<N, false>)->Name("Cholesky_factor_Knot/" #N);           \
  BENCHMARK(BM_EigenLlt<N, false>)->Name("Cholesky_factor_Eigen_LLT_fixed/" #N);    \
  KNOT_BENCH_LAPACKE_CHOL_FACTOR(N)                                                 \
  BENCHMARK(BM_KnotLdlt<N, true>)->Name("Ldlt_Knot/" #N);                           \
  BENCHMARK(BM_EigenLdlt<N, true>)->Name("Ldlt_Eigen_LDLT_fixed/" #N);              \
  KNOT_BENCH_LAPACKE_LDLT(N)                                                        \
  BENCHMARK(BM_KnotLdlt<N, false>)->Name("Ldlt_factor_Knot/" #N);                   \
  BENCHMARK(BM_EigenLdlt<N, false>)->Name("Ldlt_factor_Eigen_LDLT_fixed/" #N);      \
  KNOT_BENCH_LAPACKE_LDLT_FACTOR(N)

#if defined(KNOT_BENCH_HAVE_LAPACKE)
#define KNOT_BENCH_LAPACKE_CHOL(N) BENCHMARK(BM_LapackePotrf<N, true>)->Name("Cholesky_LAPACKE_dpotrf_dpotrs/" #N);
#define KNOT_BENCH_LAPACKE_CHOL_FACTOR(N) BENCHMARK(BM_LapackePotrf<N, false>)->Name("Cholesky_factor_LAPACKE_dpotrf/" #N);
#define KNOT_BENCH_LAPACKE_LDLT(N) BENCHMARK(BM_LapackeSytrf<N, true>)->Name("Ldlt_LAPACKE_dsytrf_dsytrs/" #N);
#define KNOT_BENCH_LAPACKE_LDLT_FACTOR(N) BENCHMARK(BM_LapackeSytrf<N, false>)->Name("Ldlt_factor_LAPACKE_dsytrf/" #N);
#else
#define KNOT_BENCH_LAPACKE_CHOL(N)
#define KNOT_BENCH_LAPACKE_CHOL_FACTOR(N)
#define KNOT_BENCH_LAPACKE_LDLT(N)
#define KNOT_BENCH_LAPACKE_LDLT_FACTOR(N)
#endif

KNOT_BENCH_FACTOR(4)
KNOT_BENCH_FACTOR(8)
KNOT_BENCH_FACTOR(14)
KNOT_BENCH_FACTOR(16)
KNOT_BENCH_FACTOR(32)

// ---- Banded KKT LDL' ----

struct KktProblem {
  std::vector<double> Q, R, S, A, B;
  OcpKkt<double> d;
};

KktProblem kkt_problem(int N, int nx, int nu) {
  KktProblem p;
  std::mt19937_64 gen(N);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  using Mat = Eigen::MatrixXd;
  auto random = [&](int r, int c) {
    Mat m(r, c);
    for (int j = 0; j < c; ++j)
      for (int i = 0; i < r; ++i) m(i, j) = u(gen);
    return m;
  };
  auto append = [](std::vector<double>& v, const Mat& m) { v.insert(v.end(), m.data(), m.data() + m.size()); };
  for (int k = 0; k <= N; ++k) {
    const Mat g = random(nx + nu, nx + nu);
    const Mat h = g * g.transpose() + 0.1 * Mat::Identity(nx + nu, nx + nu);
    append(p.Q, h.topLeftCorner(nx, nx));
    if (k == N) break;
    append(p.R, h.bottomRightCorner(nu, nu));
    append(p.S, h.bottomLeftCorner(nu, nx));
    append(p.A, Mat::Identity(nx, nx) + 0.1 * random(nx, nx));
    append(p.B, random(nx, nu));
  }
  p.d.N = N;
  p.d.nx = nx;
  p.d.nu = nu;
  p.d.Q = p.Q.data();
  p.d.R = p.R.data();
  p.d.S = p.S.data();
  p.d.A = p.A.data();
  p.d.B = p.B.data();
  return p;
}

void BM_KktLdlt(benchmark::State& st) {
  const int N = static_cast<int>(st.range(0)), nx = 14, nu = 7;
  const KktProblem p = kkt_problem(N, nx, nu);
  const int ldab = kkt_ldab(p.d), n = p.d.size();
  std::vector<double> ab(kkt_band_size(p.d, ldab)), scratch(kkt_ldlt_scratch_size(p.d, ldab));
  std::vector<int> piv(n);
  SerialGroup g;
  LdltStats s;
  for (auto _ : st) {
    s = kkt_ldlt_factor(g, p.d, ab.data(), ldab, piv.data(), scratch.data());
    benchmark::DoNotOptimize(ab.data());
    benchmark::ClobberMemory();
  }
  if (s.npos != p.d.n_primal() || s.nneg != p.d.n_dual()) st.SkipWithError("wrong inertia");
  st.counters["per_stage"] = benchmark::Counter(N, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.counters["n2x2"] = s.n2x2;
}

void BM_KktLdltSolve(benchmark::State& st) {
  const int N = static_cast<int>(st.range(0)), nx = 14, nu = 7;
  const KktProblem p = kkt_problem(N, nx, nu);
  const int ldab = kkt_ldab(p.d), n = p.d.size();
  std::vector<double> ab(kkt_band_size(p.d, ldab)), scratch(kkt_ldlt_scratch_size(p.d, ldab)), x(n, 1.0);
  std::vector<int> piv(n);
  SerialGroup g;
  kkt_ldlt_factor(g, p.d, ab.data(), ldab, piv.data(), scratch.data());
  for (auto _ : st) {
    kkt_ldlt_solve(g, p.d, ab.data(), ldab, piv.data(), x.data());
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  st.counters["per_stage"] = benchmark::Counter(N, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_KktLdlt)->Name("KktLdlt_factor_nx14_nu7")->RangeMultiplier(2)->Range(16, 256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KktLdltSolve)->Name("KktLdlt_solve_nx14_nu7")->RangeMultiplier(2)->Range(16, 256)->Unit(benchmark::kMicrosecond);

}  // namespace

// Batched small LU solves on the CPU: factorize + solve A x = b for a batch of 10^4 systems, n in
// {4, 8, 14, 16, 32}, one thread. Reported: per_system, the CPU time per system.
//
//   Knot     CoopLuStatic<double, n>, one thread per system (SerialGroup, rows_per_thread = n),
//            the system copied into local arrays (internal residency), solve_inplace. Both
//            interchange schemes; column-major, as the others.
//   Eigen    PartialPivLU<Matrix<double, n, n>> (fixed size) then solve().
//   LAPACKE  dgetrf + dgetrs (Debian: OpenBLAS behind liblapack.so.3), on a copy of the system;
//            the _work forms skip LAPACKE's NaN scan of the inputs.
// Every contender copies the matrix of each system before factoring it in place (Eigen's
// constructor does the copy itself), so the input batch is reused across iterations.
//
//   build/.../tools/bench/knot_bench_lu --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "knot/linalg/coop_lu.hpp"

#if defined(KNOT_BENCH_HAVE_LAPACKE)
#include <lapacke.h>
#endif

namespace {

using namespace knot::linalg;

constexpr int kBatch = 10000;

struct Batch {
  int n = 0;
  std::vector<double> A, b, x;  // AoS, each matrix column-major
};

template <int N>
const Batch& batch() {
  static const Batch data = [] {
    Batch d;
    d.n = N;
    std::mt19937_64 gen(N);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    d.A.resize(static_cast<std::size_t>(kBatch) * N * N);
    d.b.resize(static_cast<std::size_t>(kBatch) * N);
    d.x.assign(static_cast<std::size_t>(kBatch) * N, 0.0);
    for (double& v : d.A) v = u(gen);
    for (double& v : d.b) v = u(gen);
    return d;
  }();
  return data;
}

// Normwise backward error of system s of the batch with solution x.
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

void finish(benchmark::State& st, const Batch& d, const std::vector<double>& x) {
  for (int s : {0, kBatch / 2, kBatch - 1})
    if (!(backward_error(d, s, x.data() + static_cast<std::size_t>(s) * d.n) <= 1e-12))
      st.SkipWithError("wrong solution");
  // CPU time per system, printed as a time (e.g. 85.3ns).
  st.counters["per_system"] =
      benchmark::Counter(kBatch, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

template <int N, LuInterchange I>
void BM_Knot(benchmark::State& st) {
  constexpr CoopLuConfig kConfig{.rows_per_thread = N, .layout = LuLayout::kColMajor, .interchange = I};
  using Lu = CoopLuStatic<double, N, kConfig>;
  constexpr CoopLuResidency kLocal{.matrix = true, .pivots = true, .rhs = true};
  const Batch& d = batch<N>();
  std::vector<double> x(d.x.size());
  SerialGroup g;
  int bad = 0;
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      alignas(64) double a[N * N];
      double y[N], work[Lu::workspace_size];
      int piv[N];
      std::memcpy(a, d.A.data() + static_cast<std::size_t>(s) * N * N, sizeof a);
      std::memcpy(y, d.b.data() + static_cast<std::size_t>(s) * N, sizeof y);
      bad |= Lu::template solve_inplace<kLocal>(g, a, 0, piv, 0, y, 0, work);
      std::memcpy(x.data() + static_cast<std::size_t>(s) * N, y, sizeof y);
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  if (bad) st.SkipWithError("singular verdict");
  finish(st, d, x);
}

template <int N>
void BM_Eigen(benchmark::State& st) {
  using M = Eigen::Matrix<double, N, N>;
  using V = Eigen::Matrix<double, N, 1>;
  const Batch& d = batch<N>();
  std::vector<double> x(d.x.size());
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      const Eigen::PartialPivLU<M> lu(Eigen::Map<const M>(d.A.data() + static_cast<std::size_t>(s) * N * N));
      Eigen::Map<V>(x.data() + static_cast<std::size_t>(s) * N) =
          lu.solve(Eigen::Map<const V>(d.b.data() + static_cast<std::size_t>(s) * N));
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  finish(st, d, x);
}

#if defined(KNOT_BENCH_HAVE_LAPACKE)
template <int N, bool kWork>
void BM_Lapacke(benchmark::State& st) {
  const Batch& d = batch<N>();
  std::vector<double> x(d.x.size());
  int bad = 0;
  for (auto _ : st) {
    for (int s = 0; s < kBatch; ++s) {
      double a[N * N];
      lapack_int ipiv[N];
      double* y = x.data() + static_cast<std::size_t>(s) * N;
      std::memcpy(a, d.A.data() + static_cast<std::size_t>(s) * N * N, sizeof a);
      std::memcpy(y, d.b.data() + static_cast<std::size_t>(s) * N, N * sizeof(double));
      if constexpr (kWork) {
        bad |= LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, N, N, a, N, ipiv);
        bad |= LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, 'N', N, 1, a, N, ipiv, y, N);
      } else {
        bad |= LAPACKE_dgetrf(LAPACK_COL_MAJOR, N, N, a, N, ipiv);
        bad |= LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', N, 1, a, N, ipiv, y, N);
      }
    }
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  if (bad) st.SkipWithError("LAPACKE reported an error");
  finish(st, d, x);
}
#endif

#define KNOT_BENCH_LU(N)                                                      \
  BENCHMARK(BM_Knot<N, LuInterchange::kLogical>)->Name("Knot_logical/" #N);   \
  BENCHMARK(BM_Knot<N, LuInterchange::kPhysical>)->Name("Knot_physical/" #N); \
  BENCHMARK(BM_Eigen<N>)->Name("Eigen_PartialPivLU_fixed/" #N);               \
  KNOT_BENCH_LU_LAPACKE(N)

#if defined(KNOT_BENCH_HAVE_LAPACKE)
#define KNOT_BENCH_LU_LAPACKE(N)                                      \
  BENCHMARK(BM_Lapacke<N, false>)->Name("LAPACKE_dgetrf_dgetrs/" #N); \
  BENCHMARK(BM_Lapacke<N, true>)->Name("LAPACKE_work_dgetrf_dgetrs/" #N);
#else
#define KNOT_BENCH_LU_LAPACKE(N)
#endif

KNOT_BENCH_LU(4)
KNOT_BENCH_LU(8)
KNOT_BENCH_LU(14)
KNOT_BENCH_LU(16)
KNOT_BENCH_LU(32)

}  // namespace

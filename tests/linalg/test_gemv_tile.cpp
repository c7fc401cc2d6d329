// gemv_tile_t and gemv_tile_n against a naive double loop: M from 1 to 36 (every tail length) with
// several N, full and triangular A, beta 0 and 1, add and subtract. A's padding rows and, for a
// triangular A, the entries it must not read are NaN; y is NaN where beta == 0 and past its end, so
// a read of either shows.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "knot/linalg/dense/gemv_tile.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

// A M x N with lda = M + 3; Tri: rows below j / 4 * 4 of column j read as zero, the rows above that
// vector boundary NaN (never read), the ones inside it above the diagonal zero (the contract).
std::vector<double> make_a(Rng& rng, int m, int n, bool tri, int lda) {
  std::vector<double> A(static_cast<std::size_t>(lda) * n, kNaN);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      if (!tri || i >= j) {
        A[i + j * lda] = rng.uniform();
      } else if (i >= j / 4 * 4) {
        A[i + j * lda] = 0.0;
      }
    }
  return A;
}

double entry(const std::vector<double>& A, int lda, int i, int j, bool tri) {
  return tri && i < j ? 0.0 : A[i + j * lda];
}

// Largest error relative to the bound (len + 2) eps (|A| |x| + |y0|); NaN for a non-finite result or
// an entry past the end that changed.
double ratio(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& mag,
             int len) {
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (static_cast<int>(i) >= len) {
      if (!std::isnan(got[i])) return kNaN;  // the guard entries stay NaN
      continue;
    }
    if (!std::isfinite(got[i])) return kNaN;
    worst = std::max(worst, std::abs(got[i] - want[i]) / ((len + 2) * kEps * mag[i] + 1e-300));
  }
  return worst;
}

// The checks take M, N at run time and the kernel as a pointer: only the kernels are instantiated
// per size (the checks once), which keeps this file's compile time to the kernels' own.
using KernelT = void (*)(const double*, int, const double*, double, double*);
using KernelN = void (*)(const double*, int, const double*, double*);

template <int M, int N, bool Tri>
void call_t(const double* A, int lda, const double* x, double beta, double* y) {
  gemv_tile_t<M, N, Tri>(A, lda, x, beta, y);
}

template <int M, int N, bool Tri, bool Sub>
void call_n(const double* A, int lda, const double* x, double* y) {
  gemv_tile_n<M, N, Tri, Sub>(A, lda, x, y);
}

void check_t(Rng& rng, int M, int N, bool Tri, double beta, KernelT kernel) {
  const int lda = M + 3;
  const std::vector<double> A = make_a(rng, M, N, Tri, lda);
  std::vector<double> x(M), y(N + 2, kNaN), want(N), mag(N);
  for (double& v : x) v = rng.uniform();
  for (int j = 0; j < N; ++j) y[j] = beta == 0.0 ? kNaN : rng.uniform();
  for (int j = 0; j < N; ++j) {
    double acc = 0.0, m = 0.0;
    for (int i = 0; i < M; ++i) {
      acc += entry(A, lda, i, j, Tri) * x[i];
      m += std::abs(entry(A, lda, i, j, Tri) * x[i]);
    }
    want[j] = beta == 0.0 ? acc : y[j] + acc;
    mag[j] = beta == 0.0 ? m : m + std::abs(y[j]);
  }
  kernel(A.data(), lda, x.data(), beta, y.data());
  EXPECT_LT(ratio(y, want, mag, N), 1.0) << "t m=" << M << " n=" << N << " tri=" << Tri << " beta=" << beta;
}

void check_n(Rng& rng, int M, int N, bool Tri, bool Sub, KernelN kernel) {
  const int lda = M + 3;
  const std::vector<double> A = make_a(rng, M, N, Tri, lda);
  std::vector<double> x(N), y(M + 2, kNaN), want(M), mag(M);
  for (double& v : x) v = rng.uniform();
  for (int i = 0; i < M; ++i) y[i] = rng.uniform();
  for (int i = 0; i < M; ++i) {
    double acc = 0.0, m = 0.0;
    for (int j = 0; j < N; ++j) {
      acc += entry(A, lda, i, j, Tri) * x[j];
      m += std::abs(entry(A, lda, i, j, Tri) * x[j]);
    }
    want[i] = Sub ? y[i] - acc : y[i] + acc;
    mag[i] = m + std::abs(y[i]);
  }
  kernel(A.data(), lda, x.data(), y.data());
  EXPECT_LT(ratio(y, want, mag, M), 1.0) << "n m=" << M << " n=" << N << " tri=" << Tri << " sub=" << Sub;
}

template <int M, int N>
void check_both(Rng& rng) {
  check_t(rng, M, N, false, 0.0, call_t<M, N, false>);
  check_t(rng, M, N, false, 1.0, call_t<M, N, false>);
  check_n(rng, M, N, false, false, call_n<M, N, false, false>);
  check_n(rng, M, N, false, true, call_n<M, N, false, true>);
  if constexpr (M >= N) {
    check_t(rng, M, N, true, 0.0, call_t<M, N, true>);
    check_t(rng, M, N, true, 1.0, call_t<M, N, true>);
    check_n(rng, M, N, true, false, call_n<M, N, true, false>);
    check_n(rng, M, N, true, true, call_n<M, N, true, true>);
  }
}

template <int... Ms>
void check_rows(Rng& rng, std::integer_sequence<int, Ms...>) {
  (check_both<Ms + 1, 1>(rng), ...);
  (check_both<Ms + 1, 3>(rng), ...);
  (check_both<Ms + 1, 7>(rng), ...);
  (check_both<Ms + 1, Ms + 1>(rng), ...);
}

TEST(GemvTile, EveryRowCount1To36) {
  Rng rng(31);
  check_rows(rng, std::make_integer_sequence<int, 36>{});
}

// The check rejects a result off in one entry by far less than the operands' size, a changed guard
// entry past the end, and the transposed product in place of the plain one.
TEST(GemvTile, CheckCatchesWrongResults) {
  Rng rng(32);
  constexpr int M = 14, N = 6, lda = M + 3;
  const std::vector<double> A = make_a(rng, M, N, false, lda);
  std::vector<double> x(N), y(M + 2, kNaN), want(M), mag(M);
  for (double& v : x) v = rng.uniform();
  for (int i = 0; i < M; ++i) y[i] = 0.0;
  for (int i = 0; i < M; ++i) {
    want[i] = 0.0;
    mag[i] = 0.0;
    for (int j = 0; j < N; ++j) {
      want[i] += A[i + j * lda] * x[j];
      mag[i] += std::abs(A[i + j * lda] * x[j]);
    }
  }
  std::vector<double> got = y;
  gemv_tile_n<M, N>(A.data(), lda, x.data(), got.data());
  ASSERT_LT(ratio(got, want, mag, M), 1.0);
  std::vector<double> off = got;
  off[M - 1] += 1e-12 * mag[M - 1];
  EXPECT_FALSE(ratio(off, want, mag, M) < 1.0);
  std::vector<double> spill = got;
  spill[M] = 0.0;
  EXPECT_FALSE(ratio(spill, want, mag, M) < 1.0);
  std::vector<double> tr(N + 2, kNaN), xt(M);
  for (int i = 0; i < M; ++i) xt[i] = i < N ? x[i] : 0.0;
  gemv_tile_t<M, N>(A.data(), lda, xt.data(), 0.0, tr.data());
  tr.resize(M + 2, kNaN);
  for (int i = N; i < M; ++i) tr[i] = 0.0;
  EXPECT_FALSE(ratio(tr, want, mag, M) < 1.0);
}

}  // namespace

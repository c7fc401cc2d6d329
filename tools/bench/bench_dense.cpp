// Dense small-block primitives on the serial group with compile-time sizes, against Eigen's
// fixed-size equivalents on the same data:
//   potrf<N>                              vs  Eigen::LLT<Matrix<double,N,N>>::compute
//   trsm<Left, Lower, No, N, NRHS>        vs  llt.matrixL().solveInPlace  (NRHS = 1 and N)
// Every iteration first restores the input from a pristine copy, on both sides alike (for compute,
// Eigen's own copy of its argument into the factor is that restore), so each call starts on the
// same data.
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <array>
#include <random>

#include "knot/linalg/dense/gemm.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/trsm.hpp"

namespace {

using knot::linalg::SerialGroup;
using knot::linalg::Side;
using knot::linalg::Trans;
using knot::linalg::Uplo;

template <int N>
using MatN = Eigen::Matrix<double, N, N>;

// A well-conditioned SPD matrix: B B' + N I with B uniform in [-1, 1].
template <int N>
MatN<N> spd() {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-1, 1);
  MatN<N> b;
  for (int j = 0; j < N; ++j)
    for (int i = 0; i < N; ++i) b(i, j) = u(gen);
  return b * b.transpose() + N * MatN<N>::Identity();
}

template <int R, int C>
Eigen::Matrix<double, R, C> rhs() {
  std::mt19937_64 gen(8);
  std::uniform_real_distribution<double> u(-1, 1);
  Eigen::Matrix<double, R, C> b;
  for (int j = 0; j < C; ++j)
    for (int i = 0; i < R; ++i) b(i, j) = u(gen);
  return b;
}

template <int N>
void BM_KnotPotrf(benchmark::State& state) {
  const MatN<N> a = spd<N>();
  MatN<N> work;
  SerialGroup g;
  for (auto _ : state) {
    work = a;
    benchmark::DoNotOptimize(work.data());
    const int info = knot::linalg::potrf<N>(g, N, work.data(), N);
    benchmark::DoNotOptimize(info);
    benchmark::ClobberMemory();
  }
}

template <int N>
void BM_EigenLltCompute(benchmark::State& state) {
  const MatN<N> a = spd<N>();
  Eigen::LLT<MatN<N>> llt;
  for (auto _ : state) {
    benchmark::DoNotOptimize(a.data());
    llt.compute(a);
    benchmark::DoNotOptimize(llt.matrixLLT().data());
    benchmark::ClobberMemory();
  }
}

// Eigen's in-place LLT on a restored copy: the same memory traffic as the Knot loop.
template <int N>
void BM_EigenLltInPlace(benchmark::State& state) {
  const MatN<N> a = spd<N>();
  MatN<N> work;
  for (auto _ : state) {
    work = a;
    benchmark::DoNotOptimize(work.data());
    Eigen::LLT<Eigen::Ref<MatN<N>>> llt(work);
    benchmark::DoNotOptimize(llt.info());
    benchmark::ClobberMemory();
  }
}

template <int N, int NRHS>
void BM_KnotTrsm(benchmark::State& state) {
  const MatN<N> l = Eigen::LLT<MatN<N>>(spd<N>()).matrixL();
  const Eigen::Matrix<double, N, NRHS> b = rhs<N, NRHS>();
  Eigen::Matrix<double, N, NRHS> work;
  SerialGroup g;
  for (auto _ : state) {
    work = b;
    benchmark::DoNotOptimize(work.data());
    knot::linalg::trsm<Side::Left, Uplo::Lower, Trans::No, N, NRHS>(g, N, NRHS, 1.0, l.data(), N,
                                                                    work.data(), N);
    benchmark::ClobberMemory();
  }
}

template <int N, int NRHS>
void BM_EigenTrsm(benchmark::State& state) {
  const Eigen::LLT<MatN<N>> llt(spd<N>());
  const Eigen::Matrix<double, N, NRHS> b = rhs<N, NRHS>();
  Eigen::Matrix<double, N, NRHS> work;
  for (auto _ : state) {
    work = b;
    benchmark::DoNotOptimize(work.data());
    llt.matrixL().solveInPlace(work);
    benchmark::ClobberMemory();
  }
}

template <int N>
void BM_KnotGemm(benchmark::State& state) {
  const MatN<N> a = rhs<N, N>(), b = spd<N>();
  MatN<N> c;
  SerialGroup g;
  for (auto _ : state) {
    benchmark::DoNotOptimize(a.data());
    knot::linalg::gemm<Trans::No, Trans::No, N, N, N>(g, N, N, N, 1.0, a.data(), N, b.data(), N, 0.0,
                                                      c.data(), N);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
}

template <int N>
void BM_EigenGemm(benchmark::State& state) {
  const MatN<N> a = rhs<N, N>(), b = spd<N>();
  MatN<N> c;
  for (auto _ : state) {
    benchmark::DoNotOptimize(a.data());
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
}

}  // namespace

BENCHMARK(BM_KnotPotrf<4>);
BENCHMARK(BM_EigenLltCompute<4>);
BENCHMARK(BM_EigenLltInPlace<4>);
BENCHMARK(BM_KnotPotrf<7>);
BENCHMARK(BM_EigenLltCompute<7>);
BENCHMARK(BM_EigenLltInPlace<7>);
BENCHMARK(BM_KnotPotrf<14>);
BENCHMARK(BM_EigenLltCompute<14>);
BENCHMARK(BM_EigenLltInPlace<14>);

BENCHMARK(BM_KnotTrsm<4, 1>);
BENCHMARK(BM_EigenTrsm<4, 1>);
BENCHMARK(BM_KnotTrsm<7, 1>);
BENCHMARK(BM_EigenTrsm<7, 1>);
BENCHMARK(BM_KnotTrsm<14, 1>);
BENCHMARK(BM_EigenTrsm<14, 1>);
BENCHMARK(BM_KnotTrsm<4, 4>);
BENCHMARK(BM_EigenTrsm<4, 4>);
BENCHMARK(BM_KnotTrsm<7, 7>);
BENCHMARK(BM_EigenTrsm<7, 7>);
BENCHMARK(BM_KnotTrsm<14, 14>);
BENCHMARK(BM_EigenTrsm<14, 14>);

BENCHMARK(BM_KnotGemm<4>);
BENCHMARK(BM_EigenGemm<4>);
BENCHMARK(BM_KnotGemm<7>);
BENCHMARK(BM_EigenGemm<7>);
BENCHMARK(BM_KnotGemm<14>);
BENCHMARK(BM_EigenGemm<14>);

// bdsv and pcg on SPD block-tridiagonal matrices against Eigen's SimplicialLLT and dense LLT.
//   build/release/tools/bench/knot_bench_blocktri --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <Eigen/SparseCholesky>

#include "blocktri_problem.hpp"
#include "knot/linalg/bdsv.hpp"
#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"

using namespace knot::linalg;

namespace {

void sizes(benchmark::internal::Benchmark* b) {
  for (int bs : {4, 7, 14, 28})
    for (int nb : {32, 64, 128}) b->Args({bs, nb});
}

// Factor + solve on a fresh copy of the strips (the copy is outside the timed region).
void BM_KnotBdsv(benchmark::State& st) {
  const auto p = knot::bench::make_blocktri(st.range(1), st.range(0));
  std::vector<double> strips = p.strips, v = p.rhs;
  SerialGroup g;
  for (auto _ : st) {
    st.PauseTiming();
    strips = p.strips;
    v = p.rhs;
    st.ResumeTiming();
    bdsv(g, p.nb, p.bs, strips.data(), v.data());
    benchmark::DoNotOptimize(v.data());
  }
}

// The same with the block size fixed at compile time (the dense kernels unroll).
template <int BS>
void BM_KnotBdsvFixed(benchmark::State& st) {
  const auto p = knot::bench::make_blocktri(st.range(0), BS);
  std::vector<double> strips = p.strips, v = p.rhs;
  SerialGroup g;
  for (auto _ : st) {
    st.PauseTiming();
    strips = p.strips;
    v = p.rhs;
    st.ResumeTiming();
    bdsv<false, BS>(g, p.nb, BS, strips.data(), v.data());
    benchmark::DoNotOptimize(v.data());
  }
}

// Numeric factorization + solve, with the symbolic analysis done once outside the loop.
void BM_EigenSimplicialLLT_Factorize(benchmark::State& st) {
  const auto p = knot::bench::make_blocktri(st.range(1), st.range(0));
  Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> llt;
  llt.analyzePattern(p.sparse);
  Eigen::VectorXd x;
  for (auto _ : st) {
    llt.factorize(p.sparse);
    x = llt.solve(p.b);
    benchmark::DoNotOptimize(x.data());
  }
}

// compute() = analyze + factorize, what a one-shot user of SimplicialLLT pays.
void BM_EigenSimplicialLLT_Compute(benchmark::State& st) {
  const auto p = knot::bench::make_blocktri(st.range(1), st.range(0));
  Eigen::VectorXd x;
  for (auto _ : st) {
    Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> llt(p.sparse);
    x = llt.solve(p.b);
    benchmark::DoNotOptimize(x.data());
  }
}

void BM_EigenDenseLLT(benchmark::State& st) {
  const auto p = knot::bench::make_blocktri(st.range(1), st.range(0));
  Eigen::LLT<Eigen::MatrixXd> llt(p.dense.rows());
  Eigen::VectorXd x;
  for (auto _ : st) {
    llt.compute(p.dense);
    x = llt.solve(p.b);
    benchmark::DoNotOptimize(x.data());
  }
}

// pcg solve from x = 0 to eta = r'z below 1e-20 of its start (GLASS rule; about 1e-10 in the residual), on a matrix whose
// block scales span two decades; preconditioner built outside the loop. Counter: iterations.
template <int Pre>
void BM_KnotPcg(benchmark::State& st) {
  const auto p = knot::bench::make_blocktri(st.range(1), st.range(0), 7, 2.0);
  std::vector<double> pinv(p.strips.size()), pscr(precond_scratch_size(p.bs)), scratch(pcg_scratch_size(p.nb, p.bs));
  std::vector<double> x(p.rhs.size(), 0.0);
  SerialGroup g;
  if (Pre == 1) precond_block_jacobi(g, p.nb, p.bs, p.strips.data(), pinv.data(), pscr.data());
  if (Pre == 2) precond_stair(g, p.nb, p.bs, p.strips.data(), pinv.data(), pscr.data());
  PcgOptions<double> opt;
  opt.rel_tol = 1e-20;
  opt.max_iters = Pre == 0 ? 1000 : 2000;
  PcgResult r;
  for (auto _ : st) {
    std::fill(x.begin(), x.end(), 0.0);
    r = pcg(g, p.nb, p.bs, p.strips.data(), Pre == 0 ? nullptr : pinv.data(), p.rhs.data(), x.data(), scratch.data(), opt);
    benchmark::DoNotOptimize(x.data());
  }
  st.counters["iters"] = r.iterations;
  st.counters["converged"] = r.converged;
}

}  // namespace

BENCHMARK(BM_KnotBdsv)->Apply(sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_KnotBdsvFixed, 4)->Arg(32)->Arg(64)->Arg(128)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_KnotBdsvFixed, 7)->Arg(32)->Arg(64)->Arg(128)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_KnotBdsvFixed, 14)->Arg(32)->Arg(64)->Arg(128)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_KnotBdsvFixed, 28)->Arg(32)->Arg(64)->Arg(128)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EigenSimplicialLLT_Factorize)->Apply(sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EigenSimplicialLLT_Compute)->Apply(sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EigenDenseLLT)->Args({4, 32})->Args({7, 32})->Args({14, 32})->Args({14, 64})->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_KnotPcg, 0)->Apply(sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_KnotPcg, 1)->Apply(sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_KnotPcg, 2)->Apply(sizes)->Unit(benchmark::kMicrosecond);

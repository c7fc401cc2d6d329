// LQ subproblem solves: every backend of knot::solver::LqSolver on random convex LQ OCPs of the sizes
// HPIPM's unconstrained Riccati is usually quoted at. Counters: the workspace LqSolver allocated at
// creation (bytes) and, for pcg, its iterations.
#include <benchmark/benchmark.h>

#include <vector>

#include "knot/solver/lq.hpp"
#include "lq_problem.hpp"

namespace {

using knot::solver::Linsys;
using knot::solver::LqData;
using knot::solver::LqOptions;
using knot::solver::LqSolution;
using knot::solver::LqSolver;
using knot::solver::LqStatus;
using knot::bench::random_lq;

void BM_Lq(benchmark::State& state, Linsys linsys) {
  const int nx = static_cast<int>(state.range(0)), nu = static_cast<int>(state.range(1)),
            N = static_cast<int>(state.range(2));
  const LqData data = random_lq(nx, nu, N);
  LqOptions opt;
  opt.linsys = linsys;
  LqSolver solver(nx, nu, N, opt);
  LqSolution sol(nx, nu, N);
  LqStatus status = LqStatus::Solved;
  for (auto _ : state) {
    status = solver.solve(data, sol);
    benchmark::DoNotOptimize(sol.lambda.data());
    benchmark::ClobberMemory();
  }
  if (status != LqStatus::Solved) state.SkipWithError(knot::solver::to_string(status));
  state.counters["bytes"] = static_cast<double>(solver.bytes_allocated());
  if (linsys == Linsys::Pcg) state.counters["pcg_iters"] = solver.stats().pcg_iterations;
}

void sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nx", "nu", "N"});
  b->Args({4, 1, 50})->Args({12, 4, 50})->Args({14, 7, 64})->Args({28, 7, 128});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_Lq, riccati, Linsys::Riccati)->Apply(sizes);
// State sizes the Riccati backend has not compiled in (run-time-size kernels), N = 50.
BENCHMARK_CAPTURE(BM_Lq, riccati_runtime_nx, Linsys::Riccati)
    ->ArgNames({"nx", "nu", "N"})
    ->Args({18, 6, 50})
    ->Args({22, 3, 50})
    ->Args({27, 3, 50})
    ->Args({36, 12, 50})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Lq, bdsv, Linsys::Bdsv)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Lq, pcg, Linsys::Pcg)->Apply(sizes);
BENCHMARK_CAPTURE(BM_Lq, kkt_ldlt, Linsys::KktLdlt)->Apply(sizes);

}  // namespace

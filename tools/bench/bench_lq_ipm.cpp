// Box-constrained LQ solves by interior point (knot::solver::LqIpmSolver) on the random LQ OCPs of
// bench_lq.cpp with |u_i| <= 0.5, at the sizes HPIPM's IPM is usually quoted at. Counters: Newton
// iterations, bytes allocated at creation, and the bounds active at the optimum (|u_i| within 1e-6
// of 0.5), which shows the constraints bind.
#include <benchmark/benchmark.h>

#include <cmath>

#include "knot/solver/lq_ipm.hpp"
#include "lq_problem.hpp"

namespace {

using knot::bench::random_lq;
using knot::solver::Linsys;
using knot::solver::LqBounds;
using knot::solver::LqData;
using knot::solver::LqIpmOptions;
using knot::solver::LqIpmSolution;
using knot::solver::LqIpmSolver;
using knot::solver::LqIpmStatus;

// tol_stationarity: 1e-8 (Knot's default) or 1e-6 (HPIPM's SPEED mode, res_g_max; both stop at 1e-8
// on dynamics and bounds; Knot on the average complementarity product, as HPIPM's SPEED_ABS).
void BM_LqIpm(benchmark::State& state, Linsys linsys, double tol_stationarity) {
  const int nx = static_cast<int>(state.range(0)), nu = static_cast<int>(state.range(1)),
            N = static_cast<int>(state.range(2));
  const LqData data = random_lq(nx, nu, N);
  LqBounds bounds(nx, nu, N);
  for (double& v : bounds.lbu) v = -0.5;
  for (double& v : bounds.ubu) v = 0.5;
  LqIpmOptions opt;
  opt.lq.linsys = linsys;
  opt.tol_stationarity = tol_stationarity;
  LqIpmSolver solver(nx, nu, N, opt);
  LqIpmSolution sol(nx, nu, N);
  LqIpmStatus status = LqIpmStatus::Solved;
  for (auto _ : state) {
    status = solver.solve(data, bounds, sol);
    benchmark::DoNotOptimize(sol.u.data());
    benchmark::ClobberMemory();
  }
  if (status != LqIpmStatus::Solved) state.SkipWithError(knot::solver::to_string(status));
  int active = 0;
  for (const double u : sol.u) active += std::abs(u) >= 0.5 - 1e-6 ? 1 : 0;
  state.counters["iters"] = solver.stats().iterations;
  state.counters["bytes"] = static_cast<double>(solver.bytes_allocated());
  state.counters["active"] = active;
}

void sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nx", "nu", "N"});
  b->Args({4, 1, 50})->Args({12, 4, 50})->Args({14, 7, 64})->Args({28, 7, 128});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_LqIpm, riccati, Linsys::Riccati, 1e-8)->Apply(sizes);
BENCHMARK_CAPTURE(BM_LqIpm, riccati_hpipm_speed_tol, Linsys::Riccati, 1e-6)->Apply(sizes);
BENCHMARK_CAPTURE(BM_LqIpm, bdsv, Linsys::Bdsv, 1e-8)->Apply(sizes);

}  // namespace

// The device path's LQ steps (knot/solver/device/riccati.hpp, schur.hpp: bdsv and pcg) run on the
// CPU by a SerialGroup, side by side with LqSolver's backends of the same names on the same random
// LQs, one core. Only informative: the device steps are written for GPU blocks (run-time sizes,
// linalg's generic loops, knot-parallel stage work), the host backends for one CPU core (fixed-size
// register kernels, the square-root recursion). On one core the work counts, not the parallelism.
#include <benchmark/benchmark.h>

#include <vector>

#include "knot/solver/device/riccati.hpp"
#include "knot/solver/device/schur.hpp"
#include "knot/solver/lq.hpp"
#include "lq_problem.hpp"

namespace {

using knot::solver::device::DeviceLqResult;
using knot::solver::device::DeviceLqStatus;
using knot::solver::device::LqView;
using knot::solver::device::StepView;

void BM_LqSolver(benchmark::State& state, knot::solver::Linsys linsys) {
  const int nx = static_cast<int>(state.range(0)), nu = static_cast<int>(state.range(1)),
            N = static_cast<int>(state.range(2));
  const knot::solver::LqData data = knot::bench::random_lq(nx, nu, N);
  knot::solver::LqOptions opt;
  opt.linsys = linsys;
  knot::solver::LqSolver solver(nx, nu, N, opt);
  knot::solver::LqSolution sol(nx, nu, N);
  knot::solver::LqStatus status = knot::solver::LqStatus::Solved;
  for (auto _ : state) {
    status = solver.solve(data, sol);
    benchmark::DoNotOptimize(sol.lambda.data());
    benchmark::ClobberMemory();
  }
  if (status != knot::solver::LqStatus::Solved) state.SkipWithError(knot::solver::to_string(status));
}

LqView<double> view_of(knot::solver::LqData& data, int nx, int nu, int N) {
  return {nx,           nu,           N,           data.A.data(), data.B.data(), data.c.data(),
          data.Q.data(), data.R.data(), data.S.data(), data.q.data(), data.r.data(), data.x_init.data()};
}

// LqOptions' defaults for the Schur backends, as DeviceSqp maps them; an exact solve (tolerance < 0).
void BM_DeviceSchurSerial(benchmark::State& state, bool pcg) {
  const int nx = static_cast<int>(state.range(0)), nu = static_cast<int>(state.range(1)),
            N = static_cast<int>(state.range(2));
  knot::solver::LqData data = knot::bench::random_lq(nx, nu, N);
  const LqView<double> lq = view_of(data, nx, nu, N);
  knot::solver::device::SchurOptions o;
  o.pcg = pcg;
  std::vector<double> step(StepView<double>::size(nx, nu, N)),
      scratch(knot::solver::device::schur_scratch_size<double>(nx, nu, N, o));
  const StepView<double> out = StepView<double>::carve(nx, nu, N, step.data());
  knot::linalg::SerialGroup g;
  DeviceLqResult r;
  knot::solver::device::SchurStats stats;
  for (auto _ : state) {
    r = knot::solver::device::schur_solve(g, lq, out, scratch.data(), o, -1.0, stats);
    benchmark::DoNotOptimize(step.data());
    benchmark::ClobberMemory();
  }
  if (r.status != DeviceLqStatus::Solved) state.SkipWithError("schur_solve did not solve");
  state.counters["pcg_iters"] = stats.pcg_iterations;
}

void BM_DeviceRiccatiSerial(benchmark::State& state) {
  const int nx = static_cast<int>(state.range(0)), nu = static_cast<int>(state.range(1)),
            N = static_cast<int>(state.range(2));
  knot::solver::LqData data = knot::bench::random_lq(nx, nu, N);
  const LqView<double> lq = view_of(data, nx, nu, N);
  std::vector<double> step(StepView<double>::size(nx, nu, N)),
      scratch(knot::solver::device::riccati_scratch_size<double>(nx, nu, N));
  const StepView<double> out = StepView<double>::carve(nx, nu, N, step.data());
  knot::linalg::SerialGroup g;
  DeviceLqResult r;
  for (auto _ : state) {
    r = knot::solver::device::riccati_solve(g, lq, out, scratch.data());
    benchmark::DoNotOptimize(step.data());
    benchmark::ClobberMemory();
  }
  if (r.status != DeviceLqStatus::Solved) state.SkipWithError("riccati_solve did not solve");
}

void sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nx", "nu", "N"});
  b->Args({14, 7, 64})->Args({4, 1, 50});
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_LqSolver, riccati, knot::solver::Linsys::Riccati)->Apply(sizes);
BENCHMARK(BM_DeviceRiccatiSerial)->Apply(sizes);
BENCHMARK_CAPTURE(BM_LqSolver, bdsv, knot::solver::Linsys::Bdsv)->Apply(sizes);
BENCHMARK_CAPTURE(BM_DeviceSchurSerial, bdsv, false)->Apply(sizes);
BENCHMARK_CAPTURE(BM_LqSolver, pcg, knot::solver::Linsys::Pcg)->Apply(sizes);
BENCHMARK_CAPTURE(BM_DeviceSchurSerial, pcg, true)->Apply(sizes);

}  // namespace

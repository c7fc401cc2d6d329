// The device path's Riccati step (knot/solver/device/riccati.hpp) run on the CPU by a SerialGroup,
// side by side with LqSolver(Riccati) on the same random LQs, one core. Only informative: the
// device step is written for GPU blocks (run-time sizes, linalg's generic loops), the host backend
// for one CPU core (fixed-size register kernels, the square-root recursion).
#include <benchmark/benchmark.h>

#include <vector>

#include "knot/solver/device/riccati.hpp"
#include "knot/solver/lq.hpp"
#include "lq_problem.hpp"

namespace {

using knot::solver::device::DeviceLqResult;
using knot::solver::device::DeviceLqStatus;
using knot::solver::device::LqView;
using knot::solver::device::StepView;

void BM_LqSolverRiccati(benchmark::State& state) {
  const int nx = static_cast<int>(state.range(0)), nu = static_cast<int>(state.range(1)),
            N = static_cast<int>(state.range(2));
  const knot::solver::LqData data = knot::bench::random_lq(nx, nu, N);
  knot::solver::LqOptions opt;
  opt.linsys = knot::solver::Linsys::Riccati;
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

void BM_DeviceRiccatiSerial(benchmark::State& state) {
  const int nx = static_cast<int>(state.range(0)), nu = static_cast<int>(state.range(1)),
            N = static_cast<int>(state.range(2));
  knot::solver::LqData data = knot::bench::random_lq(nx, nu, N);
  LqView<double> lq{nx,
                    nu,
                    N,
                    data.A.data(),
                    data.B.data(),
                    data.c.data(),
                    data.Q.data(),
                    data.R.data(),
                    data.S.data(),
                    data.q.data(),
                    data.r.data(),
                    data.x_init.data()};
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

BENCHMARK(BM_LqSolverRiccati)->Apply(sizes);
BENCHMARK(BM_DeviceRiccatiSerial)->Apply(sizes);

}  // namespace

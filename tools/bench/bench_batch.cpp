// The CPU batch (issue 13): BatchSolver's thread pool against the same B problems solved one after
// the other by B separate Solvers on one thread, for B in {1, 16, 128} on cartpole_swingup and
// iiwa14_gravity_limits.
//
// Each timed call solves B problems from a cold start (the default guess) whose initial states are
// the file's x0 plus 0.01 N(0, 1) (the perturbation of `knot solve --vary x0=0.01`, problem 0 the
// file's own). Wall-clock time (UseRealTime: the pool's work is on other threads too); the counter
// problems_per_s is the throughput, solved the problems that ended solved per call. The pool uses
// every core (BatchOptions::threads = 0), reported as the counter threads.
//
// BatchPool (the solvers path: B Solvers on the pool) and SeparateSolvers run the problem file's
// options (hessian auto). DevicePoolAuto is the batch on the device path (device/sqp.hpp: the
// per-knot phases the GPU runs too) with those same options, the exact Hessian included. DevicePool
// is the device path with Gauss-Newton steps and the Riccati LQ (what the CUDA backend runs);
// SeparateSolversGaussNewton is its like-for-like reference, B Solvers with those options.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "knot/problems/loader.hpp"
#include "knot/solver/batch.hpp"
#include "knot/solver/device/device_sqp.hpp"
#include "knot/solver/solver.hpp"
#include "source_tree.hpp"

namespace {

using namespace knot;

const char* const kConfigs[] = {"cartpole_swingup", "iiwa14_gravity_limits"};

problems::Problem load_config(const std::string& name) {
  return problems::load_problem(std::filesystem::path(knot::source_tree::configs_dir()) / (name + ".yaml"));
}

std::vector<std::vector<double>> starts(const problems::Problem& p, int B) {
  std::mt19937_64 rng(20261201);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<std::vector<double>> x0(static_cast<std::size_t>(B), p.x0);
  for (int i = 1; i < B; ++i)
    for (double& v : x0[static_cast<std::size_t>(i)]) v += 0.01 * n(rng);
  return x0;
}

// The default guess of each problem: x_k = its x0, u_k = 0.
std::vector<std::vector<double>> guesses(const problems::Problem& p, const std::vector<std::vector<double>>& x0) {
  std::vector<std::vector<double>> gx;
  for (const auto& start : x0) {
    std::vector<double> x;
    for (int k = 0; k <= p.horizon.N; ++k) x.insert(x.end(), start.begin(), start.end());
    gx.push_back(std::move(x));
  }
  return gx;
}

// The device path's options: the file's, with Gauss-Newton steps and the Riccati LQ.
solver::SolverOptions gauss_newton(const problems::Problem& p) {
  return solver::device::device_path_options(solver::from_settings(p.solver));
}

enum class Pool { Solvers, Device, DeviceAuto };

void pool(benchmark::State& state, Pool kind) {
  const problems::Problem p = load_config(kConfigs[state.range(0)]);
  const int B = static_cast<int>(state.range(1));
  const auto x0 = starts(p, B);
  const auto gx = guesses(p, x0);
  const std::vector<double> gu(static_cast<std::size_t>(p.horizon.N) * p.nu(), 0.0);
  solver::BatchOptions o;
  o.path = kind == Pool::Solvers ? solver::BatchPath::Solvers : solver::BatchPath::Device;
  if (kind == Pool::Device) o.solver = gauss_newton(p);
  solver::BatchSolver batch(p, B, o);
  int solved = 0;
  for (auto _ : state) {
    for (int i = 0; i < B; ++i) {
      batch.set_initial_state(i, x0[static_cast<std::size_t>(i)]);
      batch.set_initial_guess(i, gx[static_cast<std::size_t>(i)], gu);
    }
    solved = batch.solve();
  }
  state.SetLabel(kConfigs[state.range(0)]);
  state.counters["problems_per_s"] =
      benchmark::Counter(static_cast<double>(B) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["solved"] = solved;
  state.counters["threads"] = batch.threads();
}

void separate(benchmark::State& state, bool gn) {
  const problems::Problem p = load_config(kConfigs[state.range(0)]);
  const int B = static_cast<int>(state.range(1));
  const auto x0 = starts(p, B);
  const auto gx = guesses(p, x0);
  const std::vector<double> gu(static_cast<std::size_t>(p.horizon.N) * p.nu(), 0.0);
  std::vector<std::unique_ptr<solver::Solver>> solvers;
  for (int i = 0; i < B; ++i)
    solvers.push_back(gn ? std::make_unique<solver::Solver>(p, gauss_newton(p)) : std::make_unique<solver::Solver>(p));
  int solved = 0;
  for (auto _ : state) {
    solved = 0;
    for (int i = 0; i < B; ++i) {
      solver::Solver& s = *solvers[static_cast<std::size_t>(i)];
      s.set_initial_state(x0[static_cast<std::size_t>(i)]);
      s.set_initial_guess(gx[static_cast<std::size_t>(i)], gu);
      solved += solver::is_solved(s.solve()) ? 1 : 0;
    }
  }
  state.SetLabel(kConfigs[state.range(0)]);
  state.counters["problems_per_s"] =
      benchmark::Counter(static_cast<double>(B) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["solved"] = solved;
  state.counters["threads"] = 1;
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int config = 0; config < 2; ++config)
    for (int B : {1, 16, 128}) b->Args({config, B});
  b->ArgNames({"config", "B"})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
}

void BatchPool(benchmark::State& state) { pool(state, Pool::Solvers); }
void SeparateSolvers(benchmark::State& state) { separate(state, false); }
void DevicePoolAuto(benchmark::State& state) { pool(state, Pool::DeviceAuto); }
void DevicePool(benchmark::State& state) { pool(state, Pool::Device); }
void SeparateSolversGaussNewton(benchmark::State& state) { separate(state, true); }

BENCHMARK(BatchPool)->Apply(Sizes);
BENCHMARK(SeparateSolvers)->Apply(Sizes);
BENCHMARK(DevicePoolAuto)->Apply(Sizes);
BENCHMARK(DevicePool)->Apply(Sizes);
BENCHMARK(SeparateSolversGaussNewton)->Apply(Sizes);

}  // namespace

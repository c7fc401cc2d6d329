// Expression models (issue 18) against the built-in C++ model of the same system, the cart-pole of
// tests/data/expression/cartpole_swingup.yaml:
//   Dynamics/<model>   f(x, u) through Model::dynamics
//   Jacobian/<model>   f, fx, fu through Model::dynamics_jacobian (dual sweeps over the tape, or
//                      over the template for the built-in)
//   StepHessian/<model> the rk4 step's lambda' d2F/dw2 (second-order duals)
//   Solve/<model>      a full solve of configs/cartpole_swingup.yaml from the default guess
// Each expression entry reports `ratio`, its process CPU time over the built-in's (CPU time, so that
// other load on the machine does not enter; the built-in entries run first, being registered
// first), the goal being <= 1.5.
#include <benchmark/benchmark.h>

#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "knot/problems/integrator.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/solver.hpp"
#include "source_tree.hpp"

namespace {

using namespace knot;

problems::Problem load(bool expression) {
  if (expression)
    return problems::load_problem(std::filesystem::path(knot::source_tree::test_data_dir()) / "expression" / "cartpole_swingup.yaml");
  return problems::load_problem(std::filesystem::path(knot::source_tree::configs_dir()) / "cartpole_swingup.yaml");
}

// Seconds per iteration of each built-in entry, for the expression entry's ratio.
std::map<std::string, double>& builtin_times() {
  static std::map<std::string, double> t;
  return t;
}

void report(benchmark::State& state, const std::string& kind, bool expression, double seconds) {
  const double per = seconds / double(state.iterations());
  if (!expression) {
    builtin_times()[kind] = per;
  } else if (const auto it = builtin_times().find(kind); it != builtin_times().end()) {
    state.counters["ratio"] = per / it->second;
  }
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

const double kX[4] = {0.3, 2.9, -0.4, 1.1}, kU[1] = {4.0}, kLambda[4] = {0.5, -1, 0.25, 2};

void Dynamics(benchmark::State& state, bool expression) {
  const problems::Problem p = load(expression);
  auto data = p.model->make_data();
  double f[4];
  const double start = cpu_seconds();
  for (auto _ : state) {
    p.model->dynamics(*data, kX, kU, f);
    benchmark::DoNotOptimize(f);
  }
  report(state, "dynamics", expression, cpu_seconds() - start);
}

void Jacobian(benchmark::State& state, bool expression) {
  const problems::Problem p = load(expression);
  auto data = p.model->make_data();
  double f[4], fx[16], fu[4];
  const double start = cpu_seconds();
  for (auto _ : state) {
    p.model->dynamics_jacobian(*data, kX, kU, f, fx, fu);
    benchmark::DoNotOptimize(fx);
  }
  report(state, "jacobian", expression, cpu_seconds() - start);
}

void StepHessian(benchmark::State& state, bool expression) {
  const problems::Problem p = load(expression);
  auto data = p.model->make_data();
  double H[25];
  const double start = cpu_seconds();
  for (auto _ : state) {
    p.model->step_hessian(*data, problems::IntegratorType::Rk4, kX, kU, 0.05, kLambda, H);
    benchmark::DoNotOptimize(H);
  }
  report(state, "hessian", expression, cpu_seconds() - start);
}

void Solve(benchmark::State& state, bool expression) {
  const problems::Problem p = load(expression);
  solver::Solver s(p);
  std::vector<double> x0, u0;
  solver::default_initial_guess(p, x0, u0);
  int iterations = 0;
  double seconds = 0;
  for (auto _ : state) {
    s.set_initial_guess(x0, u0);
    const double start = cpu_seconds();
    s.solve();
    seconds += cpu_seconds() - start;
    iterations = s.solution().iterations;
  }
  state.counters["iterations"] = iterations;
  report(state, "solve", expression, seconds);
}

BENCHMARK_CAPTURE(Dynamics, builtin, false);
BENCHMARK_CAPTURE(Dynamics, expression, true);
BENCHMARK_CAPTURE(Jacobian, builtin, false);
BENCHMARK_CAPTURE(Jacobian, expression, true);
BENCHMARK_CAPTURE(StepHessian, builtin, false);
BENCHMARK_CAPTURE(StepHessian, expression, true);
BENCHMARK_CAPTURE(Solve, builtin, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Solve, expression, true)->Unit(benchmark::kMicrosecond);

}  // namespace

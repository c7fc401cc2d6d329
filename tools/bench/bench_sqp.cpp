// SQP solves (issue 5), three families:
//   Sqp / Ipopt   Knot's Solver and IPOPT on the six acceptance configs, both cold-started from the
//                 default guess (x_k = x0, u = 0) on the same discretized NLP. Counters: iterations,
//                 final cost; the IPOPT entry also reports its cost's relative distance from Knot's.
//                 IpoptGaussNewton: IPOPT with the Gauss-Newton Hessian, on the configs where Knot
//                 uses it.
//   Iiwa14Step    one SQP iteration (Solver::step(1)) on the iiwa14 configs as the horizon N grows,
//                 with the time of each phase and the time per knot.
//   ToOptimum     iterations and time to the optimum (issue 14) for every config in configs/ and
//                 for the iiwa14 variants the convergence work is judged on: gravity_limits
//                 without its joint limits, reach with semi-implicit Euler. The label is the
//                 status; counters: iterations, solved (1 for solved or solved_acceptable), cost.
//   KnotThreads   whole solves of iiwa14 from the default guess with SolverOptions::threads 1, 2, ...
//                 (args N, threads): the knots' evaluation on the solver's pool; every thread count
//                 takes the same iterations to the same bits (counters iterations, cost).
//   BoxLq         box-constrained random LQ problems at the sizes HPIPM's interior point is quoted
//                 at (and at twice the horizon): Solver::bytes_allocated() and the time of a full
//                 solve() from a cold start.
// Knot's entries also report Stats' wall-clock time per phase (linearize_us, lq_us, search_us, ...)
// per timed call.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "knot/problems/loader.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/problems/models/linear.hpp"
#include "knot/solver/ipopt.hpp"
#include "knot/solver/solver.hpp"
#include "lq_problem.hpp"
#include "source_tree.hpp"

namespace {

using namespace knot;
using solver::Solver;
using solver::Status;

problems::Problem load_config(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return problems::load_problem(std::filesystem::path(knot::source_tree::configs_dir()) / (name + ".yaml"), overrides);
}

double relative_difference(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

// Stats' wall-clock time per phase, summed over the timed calls and reported per call in microseconds.
struct PhaseSum {
  solver::PhaseTimes t;

  void add(const solver::PhaseTimes& p) {
    t.linearize += p.linearize;
    t.barrier += p.barrier;
    t.lq += p.lq;
    t.step += p.step;
    t.line_search += p.line_search;
    t.convergence += p.convergence;
    t.total += p.total;
  }

  void report(benchmark::State& state) const {
    const auto per_call_us = [](double seconds) {
      return benchmark::Counter(1e6 * seconds, benchmark::Counter::kAvgIterations);
    };
    state.counters["linearize_us"] = per_call_us(t.linearize);
    state.counters["barrier_us"] = per_call_us(t.barrier);
    state.counters["lq_us"] = per_call_us(t.lq);
    state.counters["step_us"] = per_call_us(t.step);
    state.counters["search_us"] = per_call_us(t.line_search);
    state.counters["kkt_us"] = per_call_us(t.convergence);
  }
};

// ---- Knot against IPOPT on the acceptance configs

// The timed loop of a cold-started solve: reset to the default guess, solve; false (and the entry
// marked as an error) unless the last solve ended Solved.
bool timed_cold_solves(benchmark::State& state, const problems::Problem& p, Solver& s, PhaseSum& phases) {
  std::vector<double> x, u;
  solver::default_initial_guess(p, x, u);
  Status status = Status::NotRun;
  for (auto _ : state) {
    s.set_initial_guess(x, u);
    status = s.solve();
    phases.add(s.stats().time);
    benchmark::DoNotOptimize(s.solution().x.data());
  }
  if (status != Status::Solved) state.SkipWithError(s.solution().message().data());
  return status == Status::Solved;
}

// The solver is built once; each timed solve first resets it to the default guess, so every solve
// is a cold start (multipliers, slacks and barrier parameter re-initialized) from IPOPT's point.
void BM_Sqp(benchmark::State& state, const char* config) {
  const problems::Problem p = load_config(config);
  Solver s(p);
  PhaseSum phases;
  if (!timed_cold_solves(state, p, s, phases)) return;
  state.counters["iterations"] = s.solution().iterations;
  state.counters["cost"] = s.solution().cost;
  phases.report(state);
}

// solve_with_ipopt from the default guess with the cross-check's default options (tol 1e-10, the
// finite-difference Lagrangian Hessian). Its setup (OcpNlp, IPOPT's application and options) lies
// inside the timed region; `ipopt_s` is IPOPT's own solve time, without that setup, and `callbacks`
// and `hessian` the shares of it spent evaluating the NLP and its Hessian. cost_vs_knot is
// |Knot's cost - cost| / max(1, |cost|) (test_sqp_vs_ipopt's measure), Knot's cost from one solve
// outside the timed region.
void run_ipopt(benchmark::State& state, const char* config, solver::IpoptHessian hessian) {
  if (!solver::ipopt_available()) {
    state.SkipWithError("built without IPOPT");
    return;
  }
  const problems::Problem p = load_config(config);
  solver::IpoptOptions options;
  options.hessian = hessian;
  solver::IpoptResult r;
  double ipopt_seconds = 0, callback_seconds = 0, hessian_seconds = 0;
  for (auto _ : state) {
    r = solver::solve_with_ipopt(p, options);
    ipopt_seconds += r.seconds;
    callback_seconds += r.callback_seconds;
    hessian_seconds += r.hessian_seconds;
    benchmark::DoNotOptimize(r.x.data());
  }
  if (r.status != solver::IpoptStatus::Solved) {
    state.SkipWithError(r.message.c_str());
    return;
  }
  Solver s(p);
  const Status knot_status = s.solve();
  state.counters["iterations"] = r.iterations;
  state.counters["cost"] = r.cost;
  state.counters["ipopt_s"] = benchmark::Counter(ipopt_seconds, benchmark::Counter::kAvgIterations);
  // Shares of IPOPT's solve time spent in our callbacks, and in the Hessian callback alone.
  state.counters["callbacks"] = callback_seconds / ipopt_seconds;
  state.counters["hessian"] = hessian_seconds / ipopt_seconds;
  state.counters["cost_vs_knot"] =
      knot_status == Status::Solved ? relative_difference(s.solution().cost, r.cost) : std::nan("");
}

void BM_Ipopt(benchmark::State& state, const char* config) {
  run_ipopt(state, config, solver::IpoptHessian::FiniteDifference);
}

// IPOPT given the Gauss-Newton Hessian Knot uses on these configs (its constraint curvature left
// out), instead of the exact one: cheaper iterations, usually more of them.
void BM_IpoptGaussNewton(benchmark::State& state, const char* config) {
  run_ipopt(state, config, solver::IpoptHessian::GaussNewton);
}

// Every family is timed by wall clock (UseRealTime), the measure that counts IPOPT's BLAS threads
// too; run with OPENBLAS_NUM_THREADS=1 for a one-thread comparison.
#define KNOT_CONFIG_PAIR(config)                                                           \
  BENCHMARK_CAPTURE(BM_Sqp, config, #config)->Unit(benchmark::kMillisecond)->UseRealTime(); \
  BENCHMARK_CAPTURE(BM_Ipopt, config, #config)->Unit(benchmark::kMillisecond)->UseRealTime()

KNOT_CONFIG_PAIR(cartpole_swingup);
KNOT_CONFIG_PAIR(pendulum_swingup);
KNOT_CONFIG_PAIR(acrobot_swingup);
KNOT_CONFIG_PAIR(unicycle_obstacles);
KNOT_CONFIG_PAIR(chain_of_masses);
KNOT_CONFIG_PAIR(iiwa14_gravity_limits);
#define KNOT_CONFIG_GN(config) \
  BENCHMARK_CAPTURE(BM_IpoptGaussNewton, config, #config)->Unit(benchmark::kMillisecond)->UseRealTime()
KNOT_CONFIG_GN(cartpole_swingup);
KNOT_CONFIG_GN(pendulum_swingup);
KNOT_CONFIG_GN(chain_of_masses);
KNOT_CONFIG_GN(iiwa14_gravity_limits);

// ---- One SQP iteration on iiwa14 as N grows

// The iterate is the default guess, restored by set_initial_guess before every step (a copy into
// the solver's own storage, no allocation), so every timed call does the same work: one cold-start
// linearization, barrier set-up, LQ solve, step recovery and line search, plus the cost of the new
// iterate (step() does not linearize it). Phase counters are microseconds per iteration from Stats;
// us_per_knot is the whole step() divided by N, flat when the iteration is linear in N.
void BM_Iiwa14Step(benchmark::State& state, const char* config) {
  const int N = static_cast<int>(state.range(0));
  const problems::Problem p = load_config(config, {"horizon.N=" + std::to_string(N)});
  Solver s(p);
  std::vector<double> x, u;
  solver::default_initial_guess(p, x, u);
  Status status = Status::NotRun;
  PhaseSum phases;
  for (auto _ : state) {
    s.set_initial_guess(x, u);
    status = s.step(1);
    phases.add(s.stats().time);
    benchmark::DoNotOptimize(s.solution().x.data());
  }
  if (status != Status::MaxIterations || s.solution().iterations != 1) {
    state.SkipWithError(s.solution().message().data());
    return;
  }
  phases.report(state);
  state.counters["us_per_knot"] = benchmark::Counter(1e6 * phases.t.total / N, benchmark::Counter::kAvgIterations);
  state.counters["backtracks"] = s.stats().history()[0].backtracks;
}

void horizons(benchmark::internal::Benchmark* b) {
  b->ArgName("N");
  for (int N : {16, 32, 64, 128, 256, 512}) b->Arg(N);
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// iiwa14_reach: the MPCGPU task (gravity 0, Euler, no constraints; knots past the fixture path's
// last row track its last point). iiwa14_gravity_limits: RK4 under gravity with the joint limits as
// interior-point rows.
BENCHMARK_CAPTURE(BM_Iiwa14Step, reach, "iiwa14_reach")->Apply(horizons);
BENCHMARK_CAPTURE(BM_Iiwa14Step, gravity_limits, "iiwa14_gravity_limits")->Apply(horizons);

// ---- Whole solves with the knots evaluated by several threads

// The timed loop of whole solves: each call restores the default guess and solves cold.
PhaseSum cold_solves(benchmark::State& state, Solver& s, const problems::Problem& p) {
  std::vector<double> x, u;
  solver::default_initial_guess(p, x, u);
  PhaseSum phases;
  for (auto _ : state) {
    s.set_initial_guess(x, u);
    s.solve();
    phases.add(s.stats().time);
    benchmark::DoNotOptimize(s.solution().x.data());
  }
  return phases;
}

// One Solver per thread count, made outside the timed loop (its pool's threads start there); every
// timed call restores the default guess and solves cold, as `knot solve` does.
void BM_KnotThreads(benchmark::State& state, const char* config, const char* hessian) {
  const int N = static_cast<int>(state.range(0));
  const problems::Problem p =
      load_config(config, {"horizon.N=" + std::to_string(N), std::string("solver.hessian=") + hessian});
  solver::SolverOptions o = solver::from_settings(p.solver);
  o.threads = static_cast<int>(state.range(1));
  Solver s(p, o);
  const PhaseSum phases = cold_solves(state, s, p);
  if (s.solution().status == Status::NumericalError) {
    state.SkipWithError(s.solution().message().data());
    return;
  }
  phases.report(state);
  state.counters["iterations"] = s.solution().iterations;
  state.counters["cost"] = s.solution().cost;
}

void thread_counts(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "threads"});
  for (int N : {32, 64, 128})
    for (int threads : {1, 2}) b->Args({N, threads});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_KnotThreads, reach_auto, "iiwa14_reach", "auto")->Apply(thread_counts);
BENCHMARK_CAPTURE(BM_KnotThreads, reach_exact, "iiwa14_reach", "exact")->Apply(thread_counts);
BENCHMARK_CAPTURE(BM_KnotThreads, reach_gauss_newton, "iiwa14_reach", "gauss_newton")->Apply(thread_counts);
BENCHMARK_CAPTURE(BM_KnotThreads, gravity_limits_auto, "iiwa14_gravity_limits", "auto")->Apply(thread_counts);

// ---- Box-constrained LQ problems: memory and solve time

using bench::spd;

// x+ = A x + B u with A = I/2 + uniform / (2 sqrt(nx)) (stable), B uniform in [-1, 1];
// 1/2 x'Qx at every knot and 1/2 u'Ru at running knots, Q and R random SPD; |u_i| <= 0.5; x0 uniform
// in [-20, 20], far enough from the origin that the box is active at the first knots at every size
// (the stable dynamics let the state decay on its own after that). Deterministic for given sizes.
problems::Problem box_lq(int nx, int nu, int N) {
  constexpr double kX0Scale = 20;
  std::mt19937_64 gen(4321 + 17 * nx + 5 * nu + N);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  auto storage = std::make_shared<std::vector<double>>(static_cast<std::size_t>(nx) * (nx + nu));
  double* A = storage->data();
  double* B = A + static_cast<std::size_t>(nx) * nx;
  for (int j = 0; j < nx; ++j)
    for (int i = 0; i < nx; ++i) A[i + j * nx] = (i == j ? 0.5 : 0.0) + uni(gen) / (2.0 * std::sqrt(nx));
  for (int i = 0; i < nx * nu; ++i) B[i] = uni(gen);
  problems::models::Linear model;
  model.params = {nx, nu, A, B, nullptr, true};

  problems::Problem p;
  p.name = "box_lq";
  p.model = std::make_shared<problems::ModelAdapter<problems::models::Linear>>(model, storage);
  p.horizon = {N, 1.0, problems::IntegratorType::Rk4};  // discrete: the integrator applies x+ as given
  p.x0.resize(static_cast<std::size_t>(nx));
  for (double& v : p.x0) v = kX0Scale * uni(gen);
  p.costs.push_back(std::make_shared<problems::StateCost>(problems::TermInfo{"state", problems::StageSet::All, false},
                                                          nx, spd(gen, nx, 0.5),
                                                          problems::Reference::constant(std::vector<double>(nx, 0.0))));
  p.costs.push_back(std::make_shared<problems::ControlCost>(
      problems::TermInfo{"control", problems::StageSet::Running, false}, nu, spd(gen, nu, 0.5),
      problems::Reference::constant(std::vector<double>(nu, 0.0))));
  p.constraints.push_back(std::make_shared<problems::ControlBox>(
      problems::TermInfo{"box", problems::StageSet::Running, false}, nu, std::vector<double>(nu, -0.5),
      std::vector<double>(nu, 0.5)));
  return p;
}

// HPIPM's interior-point workspace at the quoted sizes (kB and MB read as 10^3 and 10^6 bytes);
// 0 where none is quoted.
double hpipm_bytes(int nx, int nu, int N) {
  if (nx == 4 && nu == 1 && N == 50) return 141e3;
  if (nx == 12 && nu == 4 && N == 50) return 396e3;
  if (nx == 14 && nu == 7 && N == 64) return 754e3;
  if (nx == 28 && nu == 7 && N == 128) return 3.1e6;
  return 0;
}

// Every timed solve starts cold from the default guess. Counters: bytes_allocated() (and per knot,
// and against HPIPM where quoted), SQP iterations, and the controls at a bound in the solution.
void BM_BoxLq(benchmark::State& state) {
  const int nx = static_cast<int>(state.range(0)), nu = static_cast<int>(state.range(1)),
            N = static_cast<int>(state.range(2));
  const problems::Problem p = box_lq(nx, nu, N);
  Solver s(p);
  PhaseSum phases;
  if (!timed_cold_solves(state, p, s, phases)) return;
  int at_bound = 0;
  for (double v : s.solution().u) at_bound += std::abs(std::abs(v) - 0.5) < 1e-6;
  const double bytes = static_cast<double>(s.bytes_allocated());
  state.counters["bytes"] = bytes;
  state.counters["bytes_per_knot"] = bytes / N;
  if (const double h = hpipm_bytes(nx, nu, N); h > 0) state.counters["vs_hpipm"] = bytes / h;
  state.counters["iterations"] = s.solution().iterations;
  state.counters["at_bound"] = at_bound;
  phases.report(state);
}

void box_sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nx", "nu", "N"});
  for (const auto& [nx, nu, N] : {std::array{4, 1, 50}, std::array{12, 4, 50}, std::array{14, 7, 64},
                                  std::array{28, 7, 128}}) {
    b->Args({nx, nu, N});
    b->Args({nx, nu, 2 * N});
  }
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK(BM_BoxLq)->Apply(box_sizes);

// ---- Iterations and time to the optimum

// `make` builds the problem when the entry runs: the loader's own tables are not yet initialized
// while entries are registered (static initialization).
void BM_ToOptimum(benchmark::State& state, problems::Problem (*make)(const std::string&), const std::string& arg) {
  const problems::Problem p = make(arg);
  Solver s(p);
  const PhaseSum phases = cold_solves(state, s, p);
  state.SetLabel(solver::to_string(s.solution().status));
  state.counters["iterations"] = s.solution().iterations;
  state.counters["solved"] = solver::is_solved(s.solution().status) ? 1 : 0;
  state.counters["cost"] = s.solution().cost;
  phases.report(state);
}

// Registered at start-up from the configs directory, so a new config is benchmarked without an edit.
const bool kToOptimumRegistered = [] {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(knot::source_tree::configs_dir()))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  using Make = problems::Problem (*)(const std::string&);
  const auto add = [](const std::string& name, Make make, const std::string& arg) {
    benchmark::RegisterBenchmark(("BM_ToOptimum/" + name).c_str(),
                                 [make, arg](benchmark::State& st) { BM_ToOptimum(st, make, arg); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  };
  const Make config = [](const std::string& name) { return load_config(name); };
  for (const auto& f : files) add(f.stem().string(), config, f.stem().string());
  add("iiwa14_gravity_limits_without_limits",
      [](const std::string&) {
        problems::Problem p = load_config("iiwa14_gravity_limits");
        p.constraints.clear();
        return p;
      },
      "");
  add("iiwa14_reach_semi_implicit_euler",
      [](const std::string&) { return load_config("iiwa14_reach", {"horizon.integrator=semi_implicit_euler"}); }, "");
  return true;
}();

}  // namespace

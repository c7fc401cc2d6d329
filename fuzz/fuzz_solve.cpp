// libFuzzer target for the SQP solver: every problem the loader accepts (fuzz_loader's input and
// files) built into a Solver with its file's settings and solved, then shifted and solved warm, then
// one real-time step. A Solver may refuse a problem with ProblemError at construction; after that,
// trouble is a Status. Anything else escaping, a crash, a sanitizer report, a leak, a hang, a
// message-less status, or a plan reported solved that is not what solved means is a finding: its
// cost, states and controls must be finite, and its x_0, its defects (recomputed here by an
// integrator of its own) and its constraint rows (evaluated here from the terms) within the
// feasibility tolerance of the status (tol_feasibility for Solved, the acceptable level for
// SolvedAcceptable).
//
// Each input's work is bounded so that the fuzzer keeps its pace: problems of more than kMaxValues
// states and controls over the horizon are skipped, and a solve takes at most kMaxIter iterations on
// one thread within kTimeLimit seconds (the file's limits where they are tighter).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "input.hpp"
#include "knot/problems/constraint.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/stage.hpp"
#include "knot/solver/options.hpp"
#include "knot/solver/solver.hpp"

namespace {

const std::filesystem::path kFiles = KNOT_FUZZ_FILES;
constexpr long kMaxValues = 4000;
constexpr int kMaxIter = 12;
constexpr double kTimeLimit = 2;

bool finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double a) { return std::isfinite(a); });
}

// The dynamics the plan must satisfy, evaluated apart from the solver.
struct Dynamics {
  explicit Dynamics(const knot::problems::Problem& p)
      : data(p.model->make_data()), integrator(*p.model, p.horizon.integrator), next(p.nx()) {
    std::size_t rows = 0;
    for (const auto& c : p.constraints) rows = std::max(rows, static_cast<std::size_t>(c->max_dim()));
    g.resize(rows);
  }
  std::unique_ptr<knot::problems::ModelData> data;
  knot::problems::Integrator integrator;
  std::vector<double> next;
  std::vector<double> g;  // one term's rows
};

// |a - b| within tol, and a rounding's worth of |b| beyond it.
bool near(double a, double b, double tol) { return std::abs(a - b) <= tol + 1e-12 * (1 + std::abs(b)); }

void check(const knot::solver::Solver& solver, knot::solver::Status status, Dynamics& dyn) {
  const knot::solver::Solution& s = solver.solution();
  if (status != s.status || s.message().empty()) std::abort();
  if (!knot::solver::is_solved(status)) return;
  if (!(std::isfinite(s.cost) && finite(s.x) && finite(s.u))) std::abort();
  const knot::problems::Problem& p = solver.problem();
  const knot::solver::SolverOptions& o = solver.options();
  const double tol =
      status == knot::solver::Status::Solved ? o.tol_feasibility : std::max(o.tol_feasibility, o.acceptable_tol);
  for (int i = 0; i < p.nx(); ++i)
    if (!near(s.x_k(0)[i], p.x0[i], tol)) std::abort();
  for (int k = 0; k < p.horizon.N; ++k) {
    if (dyn.integrator.step(*dyn.data, s.x_k(k), s.u_k(k), p.horizon.dt, dyn.next.data()) !=
        knot::problems::IntegratorStatus::Ok)
      std::abort();
    for (int i = 0; i < p.nx(); ++i)
      if (!near(s.x_k(k + 1)[i], dyn.next[i], tol)) std::abort();
  }
  const int N = p.horizon.N;
  for (int k = 0; k <= N; ++k) {
    const knot::problems::StagePoint at{k, N, p.horizon.dt, s.x_k(k), k < N ? s.u_k(k) : nullptr, nullptr, dyn.data.get()};
    for (const auto& c : p.constraints) {
      if (!c->active(k, N)) continue;
      c->evaluate(at, dyn.g.data());
      const bool equality = c->kind() == knot::problems::ConstraintKind::Equality;
      for (int i = 0; i < c->dim(); ++i)
        if (!(equality ? near(dyn.g[i], 0, tol) : dyn.g[i] <= tol + 1e-12)) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const knot::fuzz::ProblemInput in = knot::fuzz::split_input(data, size);
  std::optional<knot::solver::Solver> solver;
  try {
    knot::problems::Problem problem = knot::problems::load_problem_from_string(in.text, "<fuzz>", kFiles, in.overrides);
    if (static_cast<long>(problem.horizon.N + 1) * (problem.nx() + problem.nu()) > kMaxValues) return 0;
    knot::solver::SolverOptions options = knot::solver::from_settings(problem.solver);
    options.max_iter = std::min(options.max_iter, kMaxIter);
    options.threads = 1;
    options.time_limit = options.time_limit > 0 ? std::min(options.time_limit, kTimeLimit) : kTimeLimit;
    solver.emplace(std::move(problem), options);
  } catch (const knot::problems::ProblemError&) {
    return 0;
  }
  Dynamics dyn(solver->problem());
  check(*solver, solver->solve(), dyn);
  solver->shift();
  check(*solver, solver->solve(), dyn);
  solver->shift();
  check(*solver, solver->step(1), dyn);
  return 0;
}

// solve_with_ipopt: OcpNlp behind IPOPT's TNLP interface. Compiled only when IPOPT is found
// (solver/CMakeLists.txt); ipopt_unavailable.cpp stands in otherwise.
#include <IpIpoptApplication.hpp>
#include <IpSolveStatistics.hpp>
#include <IpTNLP.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

#include "knot/problems/error.hpp"
#include "knot/solver/ipopt.hpp"
#include "size_text.hpp"

namespace knot::solver {
namespace {

using Ipopt::Index;
using Ipopt::Number;
using Clock = std::chrono::steady_clock;

// IPOPT reads bounds beyond +-1e19 (nlp_lower/upper_bound_inf) as absent.
constexpr double kNoBound = 1e20;

class OcpTnlp final : public Ipopt::TNLP {
 public:
  OcpTnlp(OcpNlp& nlp, std::vector<double> z0, IpoptHessian hessian, double time_limit)
      : nlp_(nlp), z_(std::move(z0)), hessian_(hessian), time_limit_(time_limit) {}

  void start_clock() { start_ = Clock::now(); }
  const std::vector<double>& solution() const { return z_; }
  const std::vector<double>& multipliers() const { return lambda_; }
  bool stopped_for_time() const { return stopped_for_time_; }
  bool evaluation_failed() const { return evaluation_failed_; }
  int last_iteration() const { return last_iter_; }
  double callback_seconds() const { return callback_seconds_; }
  double hessian_seconds() const { return hessian_seconds_; }

  bool get_nlp_info(Index& n, Index& m, Index& nnz_jac_g, Index& nnz_h_lag, IndexStyleEnum& index_style) override {
    n = nlp_.num_variables();
    m = nlp_.num_constraints();
    nnz_jac_g = nlp_.jacobian_nonzeros();
    nnz_h_lag = hessian_ == IpoptHessian::LimitedMemory ? 0 : nlp_.hessian_nonzeros();
    index_style = C_STYLE;
    return true;
  }

  bool get_bounds_info(Index n, Number* x_l, Number* x_u, Index m, Number* g_l, Number* g_u) override {
    for (Index i = 0; i < n; ++i) {
      x_l[i] = -kNoBound;
      x_u[i] = kNoBound;
    }
    nlp_.constraint_bounds(g_l, g_u);
    for (Index r = 0; r < m; ++r)
      if (!std::isfinite(g_l[r])) g_l[r] = -kNoBound;
    return true;
  }

  bool get_starting_point(Index n, bool init_x, Number* x, bool init_z, Number*, Number*, Index, bool init_lambda,
                          Number*) override {
    if (init_z || init_lambda || !init_x) return false;  // only a primal start is offered
    std::copy_n(z_.data(), n, x);
    return true;
  }

  bool eval_f(Index, const Number* x, bool, Number& obj_value) override {
    const Timer t(callback_seconds_);
    return check(nlp_.objective(x, obj_value));
  }
  bool eval_grad_f(Index, const Number* x, bool, Number* grad_f) override {
    const Timer t(callback_seconds_);
    return check(nlp_.gradient(x, grad_f));
  }
  bool eval_g(Index, const Number* x, bool, Index, Number* g) override {
    const Timer t(callback_seconds_);
    return check(nlp_.constraints(x, g));
  }

  bool eval_jac_g(Index, const Number* x, bool, Index, Index, Index* iRow, Index* jCol, Number* values) override {
    if (values == nullptr) {
      nlp_.jacobian_structure(iRow, jCol);
      return true;
    }
    const Timer t(callback_seconds_);
    return check(nlp_.jacobian(x, values));
  }

  bool eval_h(Index, const Number* x, bool, Number obj_factor, Index, const Number* lambda, bool, Index, Index* iRow,
              Index* jCol, Number* values) override {
    if (hessian_ == IpoptHessian::LimitedMemory) return false;
    if (values == nullptr) {
      nlp_.hessian_structure(iRow, jCol);
      return true;
    }
    const Timer t(callback_seconds_), th(hessian_seconds_);
    // Gauss-Newton: the constraints contribute no curvature, so the multipliers are not read.
    return check(hessian_ == IpoptHessian::GaussNewton ? nlp_.gauss_newton_hessian(x, obj_factor, values)
                                                       : nlp_.lagrangian_hessian(x, obj_factor, lambda, values));
  }

  bool intermediate_callback(Ipopt::AlgorithmMode, Index iter, Number, Number, Number, Number, Number, Number, Number,
                             Number, Index, const Ipopt::IpoptData*, Ipopt::IpoptCalculatedQuantities*) override {
    last_iter_ = iter;
    if (time_limit_ > 0 && std::chrono::duration<double>(Clock::now() - start_).count() > time_limit_) {
      stopped_for_time_ = true;
      return false;
    }
    return true;
  }

  void finalize_solution(Ipopt::SolverReturn, Index n, const Number* x, const Number*, const Number*, Index m,
                         const Number*, const Number* lambda, Number, const Ipopt::IpoptData*,
                         Ipopt::IpoptCalculatedQuantities*) override {
    std::copy_n(x, n, z_.data());
    lambda_.assign(lambda, lambda + m);
  }

 private:
  bool check(bool ok) {
    evaluation_failed_ = evaluation_failed_ || !ok;
    return ok;
  }

  // Adds the wall time of its scope to a total (where IPOPT's time goes: our callbacks or itself).
  struct Timer {
    double& total;
    Clock::time_point start = Clock::now();
    explicit Timer(double& t) : total(t) {}
    ~Timer() { total += std::chrono::duration<double>(Clock::now() - start).count(); }
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
  };

  OcpNlp& nlp_;
  std::vector<double> z_;  // the starting point, then IPOPT's final iterate
  std::vector<double> lambda_;
  IpoptHessian hessian_;
  double time_limit_;
  Clock::time_point start_{};
  bool stopped_for_time_ = false;
  bool evaluation_failed_ = false;
  int last_iter_ = 0;
  double callback_seconds_ = 0, hessian_seconds_ = 0;
};

IpoptStatus map_status(Ipopt::ApplicationReturnStatus s, const OcpTnlp& tnlp) {
  switch (s) {
    case Ipopt::Solve_Succeeded:
      return IpoptStatus::Solved;
    case Ipopt::Solved_To_Acceptable_Level:
      return IpoptStatus::SolvedToAcceptableLevel;
    case Ipopt::Infeasible_Problem_Detected:
      return IpoptStatus::Infeasible;
    case Ipopt::Search_Direction_Becomes_Too_Small:
      return IpoptStatus::SearchDirectionTooSmall;
    case Ipopt::Diverging_Iterates:
      return IpoptStatus::Diverging;
    case Ipopt::User_Requested_Stop:
      return tnlp.stopped_for_time() ? IpoptStatus::TimeLimit : IpoptStatus::InternalError;
    case Ipopt::Maximum_Iterations_Exceeded:
      return IpoptStatus::MaxIterations;
    case Ipopt::Maximum_CpuTime_Exceeded:
      return IpoptStatus::TimeLimit;
    case Ipopt::Restoration_Failed:
      return IpoptStatus::RestorationFailed;
    case Ipopt::Error_In_Step_Computation:
      return IpoptStatus::StepComputationFailed;
    case Ipopt::Invalid_Number_Detected:
      return IpoptStatus::EvaluationError;
    case Ipopt::Not_Enough_Degrees_Of_Freedom:
    case Ipopt::Invalid_Problem_Definition:
    case Ipopt::Invalid_Option:
      return IpoptStatus::InvalidProblem;
    default:
      return tnlp.evaluation_failed() ? IpoptStatus::EvaluationError : IpoptStatus::InternalError;
  }
}

void check_guess(const std::vector<double>* v, std::size_t expected, const char* name) {
  if (v != nullptr && v->size() != expected)
    throw std::invalid_argument(std::string("solve_with_ipopt: ") + name + ": expected " + std::to_string(expected) +
                                " values, found " + std::to_string(v->size()));
}

// Refuses, with its size, a problem whose NLP IPOPT could not index or that would not fit in
// options.memory_limit. Counted in doubles before OcpNlp allocates (a hostile size overflows an
// int): per knot a dense Lagrangian Hessian triangle of (nx + nu), per interval the dynamics rows
// [A B -I]; each nonzero kept as a value and a (row, column) pair by OcpNlp and again by IPOPT. A
// lower bound: path constraints and MUMPS' fill come on top.
void check_nlp_size(const problems::Problem& p, const IpoptOptions& options) {
  const double N = p.horizon.N, nx = p.nx(), nu = p.nu(), nz = nx + nu;
  const double nnz = (N + 1) * nz * (nz + 1) / 2 + N * nx * (nz + 1);
  const double bytes = 2 * nnz * (sizeof(double) + 2 * sizeof(Index));
  const problems::SourceLocation where{p.source, 0, 0};
  if (nnz > static_cast<double>(std::numeric_limits<Index>::max())) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3g", nnz);
    throw problems::ProblemError(where, "solver.memory_limit",
                                 "an NLP with at most " + std::to_string(std::numeric_limits<Index>::max()) +
                                     " nonzeros (IPOPT indexes them with int)",
                                 std::string("one with about ") + count + " (" + detail::sizes_text(p) + ")");
  }
  if (bytes > options.memory_limit * detail::kGiB)
    throw problems::ProblemError(where, "solver.memory_limit",
                                 "an NLP within the limit of " + detail::bytes_text(options.memory_limit * detail::kGiB) +
                                     " for IPOPT",
                                 "one that needs at least " + detail::bytes_text(bytes) + " (" + detail::sizes_text(p) + ")",
                                 "raise solver.memory_limit, or shorten the horizon or the state");
}

IpoptResult solve_checked(const problems::Problem& problem, const IpoptOptions& options,
                          const std::vector<double>* x_guess, const std::vector<double>* u_guess);

}  // namespace

bool ipopt_available() { return true; }

IpoptResult solve_with_ipopt(const problems::Problem& problem, const IpoptOptions& options,
                             const std::vector<double>* x_guess, const std::vector<double>* u_guess) {
  if (const std::string bad = options.validate(); !bad.empty()) throw std::invalid_argument("IpoptOptions: " + bad);
  check_nlp_size(problem, options);
  try {
    return solve_checked(problem, options, x_guess, u_guess);
  } catch (const std::bad_alloc&) {
    throw problems::ProblemError(problems::SourceLocation{problem.source, 0, 0}, "solver.memory_limit",
                                 "memory for IPOPT's NLP (" + detail::sizes_text(problem) + ")",
                                 "an allocation that failed (std::bad_alloc)");
  }
}

namespace {

IpoptResult solve_checked(const problems::Problem& problem, const IpoptOptions& options,
                          const std::vector<double>* x_guess, const std::vector<double>* u_guess) {
  OcpNlp nlp(problem);
  const int N = nlp.N(), nx = nlp.nx(), nu = nlp.nu();
  const std::size_t xs = static_cast<std::size_t>(N + 1) * nx, us = static_cast<std::size_t>(N) * nu;
  check_guess(x_guess, xs, "x_guess");
  check_guess(u_guess, us, "u_guess");

  std::vector<double> z0 = nlp.default_guess();
  if (x_guess != nullptr || u_guess != nullptr) {
    std::vector<double> x(xs), u(us);
    nlp.unpack(z0.data(), x.data(), u.data());
    if (x_guess != nullptr) x = *x_guess;
    if (u_guess != nullptr) u = *u_guess;
    nlp.pack(x.data(), u.data(), z0.data());
  }

  const bool quasi_newton = options.hessian == IpoptHessian::LimitedMemory;
  Ipopt::SmartPtr<OcpTnlp> tnlp = new OcpTnlp(nlp, std::move(z0), options.hessian, options.time_limit);
  Ipopt::SmartPtr<Ipopt::IpoptApplication> app = new Ipopt::IpoptApplication();
  Ipopt::OptionsList& o = *app->Options();
  // IPOPT's defaults otherwise (MUMPS, the monotone barrier update, gradient-based NLP scaling).
  const bool ok = o.SetStringValue("sb", "yes") && o.SetIntegerValue("print_level", options.print_level) &&
                  o.SetNumericValue("tol", options.tol) &&
                  o.SetNumericValue("constr_viol_tol", options.constr_viol_tol) &&
                  o.SetIntegerValue("max_iter", options.max_iter) && o.SetNumericValue("mu_init", options.mu_init) &&
                  o.SetNumericValue("bound_relax_factor", options.bound_relax_factor) &&
                  o.SetStringValue("hessian_approximation", quasi_newton ? "limited-memory" : "exact") &&
                  o.SetIntegerValue("limited_memory_max_history", options.limited_memory_history);

  IpoptResult result;
  Ipopt::ApplicationReturnStatus rc = Ipopt::Invalid_Option;
  if (ok) rc = app->Initialize(std::string());  // "": read no ipopt.opt from the working directory
  const Clock::time_point start = Clock::now();
  if (ok && rc == Ipopt::Solve_Succeeded) {
    tnlp->start_clock();
    rc = app->OptimizeTNLP(Ipopt::SmartPtr<Ipopt::TNLP>(GetRawPtr(tnlp)));
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.callback_seconds = tnlp->callback_seconds();
  result.hessian_seconds = tnlp->hessian_seconds();
  result.ipopt_return_code = static_cast<int>(rc);
  result.status = map_status(rc, *tnlp);
  result.message = std::string(to_string(result.status)) + " (IPOPT return code " + std::to_string(rc) + ")";

  const std::vector<double>& z = tnlp->solution();
  result.x.resize(xs);
  result.u.resize(us);
  nlp.unpack(z.data(), result.x.data(), result.u.data());
  result.lambda = tnlp->multipliers();
  double cost = 0;
  result.cost = nlp.objective(z.data(), cost) ? cost : std::numeric_limits<double>::quiet_NaN();

  result.iterations = tnlp->last_iteration();
  if (Ipopt::SmartPtr<Ipopt::SolveStatistics> stats = app->Statistics(); Ipopt::IsValid(stats)) {
    result.iterations = stats->IterationCount();
    double kkt_error = 0;
    stats->Infeasibilities(result.kkt_stationarity, result.constraint_violation, result.complementarity, kkt_error);
  }
  return result;
}

}  // namespace

}  // namespace knot::solver

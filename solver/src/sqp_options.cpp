// SolverOptions: validation and the mapping from a problem file's solver settings; Status names.
#include <algorithm>
#include <cmath>
#include <string>

#include "knot/problems/error.hpp"
#include "knot/solver/options.hpp"
#include "knot/solver/status.hpp"

namespace knot::solver {

const char* to_string(Status status) {
  switch (status) {
    case Status::NotRun: return "not_run";
    case Status::Solved: return "solved";
    case Status::SolvedAcceptable: return "solved_acceptable";
    case Status::MaxIterations: return "max_iterations";
    case Status::TimeLimit: return "time_limit";
    case Status::Infeasible: return "infeasible";
    case Status::NumericalError: return "numerical_error";
    case Status::LineSearchFailed: return "line_search_failed";
    case Status::Interrupted: return "interrupted";
  }
  return "unknown";
}

const char* describe(Status status) {
  switch (status) {
    case Status::NotRun: return "solve() has not run";
    case Status::Solved: return "solved: stationarity, feasibility and complementarity within tolerance";
    case Status::SolvedAcceptable: return "solved to the acceptable level";
    case Status::MaxIterations: return "the iteration limit was reached before convergence";
    case Status::TimeLimit: return "the time limit ran out before convergence";
    case Status::Infeasible: return "the constraints could not be satisfied";
    case Status::NumericalError: return "numerical error";
    case Status::LineSearchFailed: return "the line search found no step that decreases the merit function";
    case Status::Interrupted: return "stopped by the iteration callback";
  }
  return "unknown status";
}

const char* to_string(Globalization globalization) {
  switch (globalization) {
    case Globalization::Merit: return "merit";
    case Globalization::Filter: return "filter";
    case Globalization::None: return "none";
  }
  return "unknown";
}

const char* to_string(Hessian hessian) {
  switch (hessian) {
    case Hessian::GaussNewton: return "gauss_newton";
    case Hessian::Exact: return "exact";
    case Hessian::Auto: return "auto";
  }
  return "unknown";
}

std::string SolverOptions::validate() const {
  const auto bad = [](const char* what, double found) {
    std::string text = std::to_string(found);
    if (std::isnan(found)) text = "nan";
    return std::string(what) + ", found " + text;
  };
  const auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (max_iter < 1) return bad("max_iter must be >= 1", max_iter);
  if (!(std::isfinite(time_limit) && time_limit >= 0)) return bad("time_limit must be >= 0", time_limit);
  if (!positive(tol_stationarity)) return bad("tol_stationarity must be > 0", tol_stationarity);
  if (!positive(tol_feasibility)) return bad("tol_feasibility must be > 0", tol_feasibility);
  if (!positive(tol_complementarity)) return bad("tol_complementarity must be > 0", tol_complementarity);
  if (!positive(tol_duality_gap)) return bad("tol_duality_gap must be > 0", tol_duality_gap);
  if (!(std::isfinite(scale_max) && scale_max >= 1)) return bad("scale_max must be >= 1", scale_max);
  if (!positive(objective_scale_min)) return bad("objective_scale_min must be > 0", objective_scale_min);
  if (!(std::isfinite(objective_scale_max) && objective_scale_max >= objective_scale_min))
    return bad("objective_scale_max must be >= objective_scale_min", objective_scale_max);
  if (!(objective_scale_target >= objective_scale_min && objective_scale_target <= objective_scale_max))
    return bad("objective_scale_target must be in [objective_scale_min, objective_scale_max]", objective_scale_target);
  if (!positive(acceptable_tol)) return bad("acceptable_tol must be > 0", acceptable_tol);
  if (acceptable_iter < 1) return bad("acceptable_iter must be >= 1", acceptable_iter);
  if (const std::string why = lq.validate(); !why.empty()) return "lq." + why;
  if (!(hessian_switch_ratio > 0 && hessian_switch_ratio < 1))
    return bad("hessian_switch_ratio must be in (0, 1)", hessian_switch_ratio);
  if (hessian_switch_window < 1) return bad("hessian_switch_window must be >= 1", hessian_switch_window);
  if (!(hessian_restart >= 0 && hessian_restart < 1)) return bad("hessian_restart must be in [0, 1)", hessian_restart);
  if (!(lq_forcing >= 0 && lq_forcing < 1)) return bad("lq_forcing must be in [0, 1)", lq_forcing);
  if (!positive(reg_init)) return bad("reg_init must be > 0", reg_init);
  if (!(std::isfinite(reg_growth) && reg_growth > 1)) return bad("reg_growth must be > 1", reg_growth);
  if (!(std::isfinite(reg_max) && reg_max >= reg_init)) return bad("reg_max must be >= reg_init", reg_max);
  if (!positive(mu_init)) return bad("mu_init must be > 0", mu_init);
  if (!(positive(mu_min) && mu_min <= mu_init)) return bad("mu_min must be in (0, mu_init]", mu_min);
  if (!(mu_linear > 0 && mu_linear < 1)) return bad("mu_linear must be in (0, 1)", mu_linear);
  if (!(mu_superlinear > 1 && mu_superlinear < 2)) return bad("mu_superlinear must be in (1, 2)", mu_superlinear);
  if (!positive(barrier_tol)) return bad("barrier_tol must be > 0", barrier_tol);
  if (!(tau_min > 0 && tau_min < 1)) return bad("tau_min must be in (0, 1)", tau_min);
  if (!positive(slack_push)) return bad("slack_push must be > 0", slack_push);
  if (!positive(dual_init)) return bad("dual_init must be > 0", dual_init);
  if (!positive(warm_start_mu)) return bad("warm_start_mu must be > 0", warm_start_mu);
  if (!positive(equality_reg)) return bad("equality_reg must be > 0", equality_reg);
  if (!(armijo > 0 && armijo < 0.5)) return bad("armijo must be in (0, 0.5)", armijo);
  if (!(backtrack > 0 && backtrack < 1)) return bad("backtrack must be in (0, 1)", backtrack);
  if (!(min_step > 0 && min_step < 1)) return bad("min_step must be in (0, 1)", min_step);
  if (!(std::isfinite(penalty_margin) && penalty_margin >= 0)) return bad("penalty_margin must be >= 0", penalty_margin);
  if (!positive(penalty_max)) return bad("penalty_max must be > 0", penalty_max);
  if (!positive(memory_limit)) return bad("memory_limit must be > 0 (GiB)", memory_limit);
  if (threads < 0) return bad("threads must be >= 0 (0: every core)", threads);
  return {};
}

SolverOptions from_settings(const problems::SolverSettings& s) {
  const auto reject = [](const std::string& field, const std::string& expected, const std::string& found) {
    throw problems::ProblemError(problems::SourceLocation{}, field.empty() ? "solver" : "solver." + field, expected,
                                 found);
  };
  SolverOptions o;
  o.max_iter = s.max_iter;
  o.time_limit = s.time_limit;
  o.tol_stationarity = s.tol_stationarity;
  o.tol_feasibility = s.tol_feasibility;
  o.tol_complementarity = s.tol_complementarity;
  o.mu_min = std::min(s.tol_complementarity / 10, s.mu_init);
  o.mu_init = s.mu_init;
  o.reg_init = s.regularization > 0 ? s.regularization : o.reg_init;
  o.verbose = s.verbose;
  o.memory_limit = s.memory_limit;
  o.threads = s.threads;

  if (s.linsys == "auto") o.lq.linsys = Linsys::Auto;
  else if (s.linsys == "riccati") o.lq.linsys = Linsys::Riccati;
  else if (s.linsys == "bdsv") o.lq.linsys = Linsys::Bdsv;
  else if (s.linsys == "pcg") o.lq.linsys = Linsys::Pcg;
  else if (s.linsys == "kkt_ldlt") o.lq.linsys = Linsys::KktLdlt;
  else reject("linsys", "one of auto, riccati, bdsv, pcg or kkt_ldlt", s.linsys);
  // LqOptions measures PCG convergence on the squared preconditioned residual.
  o.lq.pcg_rel_tol = s.pcg_tol * s.pcg_tol;
  o.lq.pcg_max_iters = s.pcg_max_iter;
  o.lq_forcing = s.lq_forcing;

  if (s.hessian == "gauss_newton") o.hessian = Hessian::GaussNewton;
  else if (s.hessian == "exact") o.hessian = Hessian::Exact;
  else if (s.hessian == "auto") o.hessian = Hessian::Auto;
  else reject("hessian", "gauss_newton, exact or auto", s.hessian);
  if (s.globalization == "merit") o.globalization = Globalization::Merit;
  else if (s.globalization == "filter") o.globalization = Globalization::Filter;
  else if (s.globalization == "none") o.globalization = Globalization::None;
  else reject("globalization", "merit, filter or none", s.globalization);
  if (const std::string why = o.validate(); !why.empty()) reject("", "valid solver settings", why);
  return o;
}

}  // namespace knot::solver

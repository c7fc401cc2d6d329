// SolverOptions (sqp_options.cpp): validation names the bad field, from_settings maps a problem
// file's solver section, and statuses have names and explanations.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "knot/problems/error.hpp"
#include "knot/solver/options.hpp"
#include "knot/solver/status.hpp"

namespace knot::solver {
namespace {

TEST(SqpOptions, DefaultsAreValid) { EXPECT_EQ(SolverOptions{}.validate(), ""); }

// Each bad value is named in the message; the unchanged defaults pass (the negative control above).
TEST(SqpOptions, ValidateNamesTheBadField) {
  const std::pair<const char*, std::function<void(SolverOptions&)>> cases[] = {
      {"max_iter", [](SolverOptions& o) { o.max_iter = 0; }},
      {"time_limit", [](SolverOptions& o) { o.time_limit = -1; }},
      {"tol_stationarity", [](SolverOptions& o) { o.tol_stationarity = 0; }},
      {"tol_feasibility", [](SolverOptions& o) { o.tol_feasibility = NAN; }},
      {"tol_complementarity", [](SolverOptions& o) { o.tol_complementarity = -1e-8; }},
      {"lq.pcg_max_iters", [](SolverOptions& o) { o.lq.pcg_max_iters = 0; }},
      {"hessian_switch_ratio", [](SolverOptions& o) { o.hessian_switch_ratio = 1; }},
      {"hessian_switch_ratio", [](SolverOptions& o) { o.hessian_switch_ratio = 0; }},
      {"hessian_switch_window", [](SolverOptions& o) { o.hessian_switch_window = 0; }},
      {"hessian_restart", [](SolverOptions& o) { o.hessian_restart = 1; }},
      {"hessian_restart", [](SolverOptions& o) { o.hessian_restart = -0.1; }},
      {"reg_growth", [](SolverOptions& o) { o.reg_growth = 1; }},
      {"reg_max", [](SolverOptions& o) { o.reg_max = 1e-9; }},
      {"mu_min", [](SolverOptions& o) { o.mu_min = 1; }},
      {"mu_linear", [](SolverOptions& o) { o.mu_linear = 1; }},
      {"mu_superlinear", [](SolverOptions& o) { o.mu_superlinear = 2; }},
      {"tau_min", [](SolverOptions& o) { o.tau_min = 1; }},
      {"equality_reg", [](SolverOptions& o) { o.equality_reg = 0; }},
      {"armijo", [](SolverOptions& o) { o.armijo = 0.5; }},
      {"backtrack", [](SolverOptions& o) { o.backtrack = 1; }},
      {"min_step", [](SolverOptions& o) { o.min_step = 0; }},
      {"penalty_max", [](SolverOptions& o) { o.penalty_max = INFINITY; }},
      {"memory_limit", [](SolverOptions& o) { o.memory_limit = 0; }},
  };
  for (const auto& [field, spoil] : cases) {
    SolverOptions o;
    spoil(o);
    const std::string why = o.validate();
    EXPECT_EQ(why.rfind(field, 0), 0u) << field << ": " << why;
    EXPECT_NE(why.find("found"), std::string::npos) << why;
  }
}

TEST(SqpOptions, FromSettingsMapsEveryField) {
  problems::SolverSettings s;
  s.max_iter = 7;
  s.time_limit = 0.5;
  s.tol_stationarity = 1e-6;
  s.tol_feasibility = 1e-7;
  s.tol_complementarity = 1e-5;
  s.linsys = "bdsv";
  s.hessian = "exact";
  s.globalization = "none";
  s.pcg_tol = 1e-9;
  s.pcg_max_iter = 50;
  s.regularization = 1e-6;
  s.mu_init = 0.5;
  s.verbose = true;
  s.memory_limit = 0.5;
  const SolverOptions o = from_settings(s);
  EXPECT_EQ(o.max_iter, 7);
  EXPECT_EQ(o.time_limit, 0.5);
  EXPECT_EQ(o.tol_stationarity, 1e-6);
  EXPECT_EQ(o.tol_feasibility, 1e-7);
  EXPECT_EQ(o.tol_complementarity, 1e-5);
  EXPECT_EQ(o.lq.linsys, Linsys::Bdsv);
  EXPECT_EQ(o.hessian, Hessian::Exact);
  EXPECT_EQ(o.globalization, Globalization::None);
  EXPECT_DOUBLE_EQ(o.lq.pcg_rel_tol, 1e-18);  // LqOptions measures the squared residual
  EXPECT_EQ(o.lq.pcg_max_iters, 50);
  EXPECT_EQ(o.reg_init, 1e-6);
  EXPECT_EQ(o.mu_init, 0.5);
  EXPECT_DOUBLE_EQ(o.mu_min, 1e-6);  // tol_complementarity / 10
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.memory_limit, 0.5);
  EXPECT_EQ(o.validate(), "");

  for (const char* name : {"auto", "riccati", "pcg", "kkt_ldlt"}) {
    s.linsys = name;
    EXPECT_STREQ(to_string(from_settings(s).lq.linsys), name);
  }
  for (const char* name : {"auto", "gauss_newton", "exact"}) {
    s.hessian = name;
    EXPECT_STREQ(to_string(from_settings(s).hessian), name);
  }
  EXPECT_EQ(from_settings(problems::SolverSettings{}).hessian, Hessian::Auto);  // the default
  EXPECT_EQ(SolverOptions{}.hessian, Hessian::Auto);
  for (const char* name : {"merit", "filter", "none"}) {
    s.globalization = name;
    EXPECT_STREQ(to_string(from_settings(s).globalization), name);
  }
}

TEST(SqpOptions, FromSettingsRejectsWhatTheSolverDoesNotOffer) {
  problems::SolverSettings s;
  s.linsys = "cholesky";
  try {
    from_settings(s);
    FAIL() << "expected ProblemError";
  } catch (const problems::ProblemError& e) {
    EXPECT_EQ(e.key_path(), "solver.linsys");
    EXPECT_EQ(e.found(), "cholesky");
  }
  s = {};
  s.hessian = "bfgs";
  EXPECT_THROW(from_settings(s), problems::ProblemError);
  s = {};
  s.globalization = "trust_region";
  EXPECT_THROW(from_settings(s), problems::ProblemError);
  s = {};
  EXPECT_NO_THROW(from_settings(s));
}

TEST(SqpOptions, EveryStatusHasANameAndAnExplanation) {
  for (Status st : {Status::NotRun, Status::Solved, Status::MaxIterations, Status::TimeLimit, Status::Infeasible,
                    Status::NumericalError, Status::LineSearchFailed, Status::Interrupted}) {
    EXPECT_STRNE(to_string(st), "unknown");
    EXPECT_STRNE(describe(st), "unknown status");
  }
  EXPECT_STREQ(to_string(Status::Solved), "solved");
  EXPECT_STREQ(to_string(Status::LineSearchFailed), "line_search_failed");
  EXPECT_STREQ(to_string(Status::Interrupted), "interrupted");
}

}  // namespace
}  // namespace knot::solver

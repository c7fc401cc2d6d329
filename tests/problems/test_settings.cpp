// SolverSettings::validate and MpcSettings::validate: the defaults are valid, each invalid field
// is named with its value, and values on the boundary of the valid range are accepted.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "knot/problems/settings.hpp"

namespace {

using knot::problems::Disturbance;
using knot::problems::MpcSettings;
using knot::problems::SolverSettings;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Settings, DefaultsAreValid) {
  EXPECT_EQ(SolverSettings{}.validate(), "");
  EXPECT_EQ(MpcSettings{}.validate(), "");
}

TEST(Settings, SolverNamesTheFirstInvalidField) {
  const std::vector<std::pair<std::function<void(SolverSettings&)>, std::string>> cases = {
      {[](SolverSettings& s) { s.max_iter = 0; }, "max_iter must be an integer >= 1, found 0"},
      {[](SolverSettings& s) { s.time_limit = -1; }, "time_limit must be a finite number >= 0, found -1"},
      {[](SolverSettings& s) { s.tol_stationarity = 0; }, "tol_stationarity must be a finite number > 0, found 0"},
      {[](SolverSettings& s) { s.tol_feasibility = kNaN; }, "tol_feasibility must be a finite number > 0, found nan"},
      {[](SolverSettings& s) { s.tol_complementarity = kInf; },
       "tol_complementarity must be a finite number > 0, found inf"},
      {[](SolverSettings& s) { s.linsys = "lu"; },
       "linsys must be one of auto, pcg, bdsv, riccati or kkt_ldlt, found 'lu'"},
      {[](SolverSettings& s) { s.hessian = "bfgs"; }, "hessian must be one of gauss_newton, exact or auto, found 'bfgs'"},
      {[](SolverSettings& s) { s.globalization = "linesearch"; },
       "globalization must be one of filter, merit or none, found 'linesearch'"},
      {[](SolverSettings& s) { s.pcg_tol = -1e-12; }, "pcg_tol must be a finite number > 0, found -1e-12"},
      {[](SolverSettings& s) { s.pcg_max_iter = -3; }, "pcg_max_iter must be an integer >= 1, found -3"},
      {[](SolverSettings& s) { s.lq_forcing = 1; }, "lq_forcing must be a number in [0, 1), found 1"},
      {[](SolverSettings& s) { s.regularization = -1e-8; },
       "regularization must be a finite number >= 0, found -1e-08"},
      {[](SolverSettings& s) { s.mu_init = 0; }, "mu_init must be a finite number > 0, found 0"},
      {[](SolverSettings& s) { s.memory_limit = -1; }, "memory_limit must be a finite number > 0, found -1"},
      // Two invalid fields: the first in declaration order is named.
      {[](SolverSettings& s) { s.mu_init = 0, s.max_iter = 0; }, "max_iter must be an integer >= 1, found 0"},
  };
  for (const auto& [mutate, message] : cases) {
    SolverSettings s;
    mutate(s);
    EXPECT_EQ(s.validate(), message);
  }
}

TEST(Settings, SolverBoundaryValuesAreValid) {
  SolverSettings s;
  s.max_iter = 1;
  s.time_limit = 0;
  s.regularization = 0;
  s.pcg_max_iter = 1;
  s.verbose = true;
  for (const char* l : {"auto", "pcg", "bdsv", "riccati", "kkt_ldlt"}) {
    s.linsys = l;
    EXPECT_EQ(s.validate(), "") << l;
  }
}

TEST(Settings, MpcNamesTheFirstInvalidField) {
  const std::vector<std::pair<std::function<void(MpcSettings&)>, std::string>> cases = {
      {[](MpcSettings& s) { s.mode = "nmpc"; }, "mode must be one of rti or sqp, found 'nmpc'"},
      {[](MpcSettings& s) { s.iterations_per_step = 0; }, "iterations_per_step must be an integer >= 1, found 0"},
      {[](MpcSettings& s) { s.time_limit = -1; }, "time_limit must be a finite number >= 0, found -1"},
      {[](MpcSettings& s) { s.control_rate = -50; }, "control_rate must be a finite number >= 0, found -50"},
      {[](MpcSettings& s) { s.duration = 0; }, "duration must be a finite number > 0, found 0"},
      {[](MpcSettings& s) { s.steps = -2; }, "steps must be an integer >= 1, found -2"},
      {[](MpcSettings& s) { s.warm_start = "keep"; }, "warm_start must be one of shift or hold, found 'keep'"},
      {[](MpcSettings& s) { s.plant_substeps = 0; }, "plant.substeps must be an integer >= 1, found 0"},
      {[](MpcSettings& s) {
         s.process_noise = {0.1, -0.1};
       },
       "process_noise[1] must be a finite number >= 0, found -0.1"},
      {[](MpcSettings& s) {
         s.measurement_noise = {kNaN};
       },
       "measurement_noise[0] must be a finite number >= 0, found nan"},
      {[](MpcSettings& s) {
         s.disturbances = {Disturbance{1, {0, 1}}, Disturbance{-1, {0, 1}}};
       },
       "disturbances[1].time must be a finite number >= 0, found -1"},
      {[](MpcSettings& s) {
         s.disturbances = {Disturbance{1, {}}};
       },
       "disturbances[0].state_kick must be a non-empty list of numbers, found an empty list"},
      {[](MpcSettings& s) {
         s.disturbances = {Disturbance{1, {0, kNaN}}};
       },
       "disturbances[0].state_kick[1] must be a finite number, found nan"},
      {[](MpcSettings& s) {
         s.references = {knot::problems::MpcReference{"track", "f.csv", 2, {0, 0.1}, {1, 2, 3, 4, 5, 6}}};
       },
       "reference.time_column must be one time per row (3), found 2"},
      {[](MpcSettings& s) {
         s.references = {knot::problems::MpcReference{"track", "f.csv", 1, {0, 0.2, 0.1}, {1, 2, 3}}};
       },
       "reference.time_column must be increasing times, found 0.1 after 0.2"},
  };
  for (const auto& [mutate, message] : cases) {
    MpcSettings s;
    mutate(s);
    EXPECT_EQ(s.validate(), message);
  }
}

TEST(Settings, MpcBoundaryValuesAreValid) {
  MpcSettings s;
  s.control_rate = 0;
  s.iterations_per_step = 1;
  s.steps = 1;
  s.time_limit = 0;
  s.plant_substeps = 1;
  s.process_noise = {0, 1e-9};
  s.mode = "sqp";
  s.warm_start = "hold";
  s.disturbances = {Disturbance{0, {0.1}}};
  EXPECT_EQ(s.validate(), "");
}

}  // namespace

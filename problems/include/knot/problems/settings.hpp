// The `solver` and `mpc` sections of a problem file: plain structs with documented defaults.
// The solver reads SolverSettings into its own options; each struct has one validation function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace knot::problems {

struct SolverSettings {
  int max_iter = 100;              // SQP iterations
  double time_limit = 0;           // seconds of wall clock per solve; 0 = none
  double tol_stationarity = 1e-8;  // ||grad L||_inf
  double tol_feasibility = 1e-8;   // dynamics defects and constraint violation, inf-norm
  double tol_complementarity = 1e-8;
  std::string linsys = "auto";     // pcg | bdsv | riccati | kkt_ldlt | auto
  std::string hessian = "gauss_newton";  // gauss_newton | exact
  std::string globalization = "filter";  // filter (Waechter-Biegler) | merit (l1, Armijo) | none
  double pcg_tol = 1e-12;
  int pcg_max_iter = 1000;
  double regularization = 1e-8;    // initial Hessian regularization when it is needed
  double mu_init = 1e-1;           // initial barrier parameter (interior point)
  bool verbose = false;
  // GiB the solver may allocate at construction (its estimate of the LQ data and workspaces); a
  // larger problem is refused with its size before anything is allocated.
  double memory_limit = 8;

  // Names the first invalid field and its value ("max_iter must be >= 1, found 0"); empty if valid.
  std::string validate() const;
};

struct Disturbance {
  double time = 0;               // seconds from the start
  std::vector<double> state_kick;  // added to the plant state (nx)
};

struct MpcSettings {
  double control_rate = 0;       // Hz; 0 = 1/dt
  double duration = 5;           // seconds of closed loop
  int iterations_per_step = 1;   // SQP iterations per control step (1 = real-time iteration)
  std::vector<double> plant_params_scale;  // plant mismatch: multiplies the model's parameters (empty = none)
  std::vector<Disturbance> disturbances;
  double noise_std = 0;          // Gaussian state-measurement noise
  std::uint64_t seed = 1;

  std::string validate() const;
};

}  // namespace knot::problems

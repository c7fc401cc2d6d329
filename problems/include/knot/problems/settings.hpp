// The `solver` and `mpc` sections of a problem file: plain structs with documented defaults.
// The solver reads SolverSettings into its own options; each struct has one validation function.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "knot/problems/integrator.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems {

struct SolverSettings {
  int max_iter = 100;              // SQP iterations
  double time_limit = 0;           // seconds of wall clock per solve; 0 = none
  double tol_stationarity = 1e-8;  // ||grad L||_inf
  double tol_feasibility = 1e-8;   // dynamics defects and constraint violation, inf-norm
  double tol_complementarity = 1e-8;
  std::string linsys = "auto";     // pcg | bdsv | riccati | kkt_ldlt | auto
  std::string hessian = "auto";   // auto | gauss_newton | exact
  std::string globalization = "filter";  // filter (Waechter-Biegler) | merit (l1, Armijo) | none
  double pcg_tol = 1e-12;
  int pcg_max_iter = 1000;
  // Inexact-Newton forcing of the Schur backends' steps (bdsv, pcg): each LQ step is solved to a KKT
  // residual of E min(lq_forcing, E), E the iterate's KKT error; 0 = rounding level (docs/solver.md).
  double lq_forcing = 1e-4;
  double regularization = 1e-8;    // initial Hessian regularization when it is needed
  double mu_init = 1e-1;           // initial barrier parameter (interior point)
  bool verbose = false;
  // GiB the solver may allocate at construction (its estimate of the LQ data and workspaces); a
  // larger problem is refused with its size before anything is allocated.
  double memory_limit = 8;
  int threads = 1;  // threads that evaluate the knots; 0 = every core (SolverOptions::threads)

  // Names the first invalid field and its value ("max_iter must be >= 1, found 0"); empty if valid.
  std::string validate() const;
};

struct Disturbance {
  double time = 0;               // seconds from the start
  std::vector<double> state_kick;  // added to the plant state (nx)
};

// A model parameter the plant overrides: its value in the problem's model and in the plant.
struct PlantParam {
  std::string name;
  std::vector<double> model_value, plant_value;  // one number, or the list the parameter is
};

// A reference that moves with simulated time, for one cost term: row r of `values` (dim each)
// holds at times[r] seconds, or at r * horizon.dt when `times` is empty; linear in between,
// the last row held after the end.
struct MpcReference {
  std::string cost;   // the cost term it drives
  std::string source; // the file it came from, for printing
  int dim = 0;
  std::vector<double> times;
  std::vector<double> values;
  int rows() const { return dim == 0 ? 0 : static_cast<int>(values.size()) / dim; }
};

// The closed loop (solver/closed_loop.hpp runs it). A control period T = 1/control_rate (or dt);
// per step: measure, solve (rti or sqp), apply u0 for T to the plant.
struct MpcSettings {
  std::string mode = "rti";      // rti: iterations_per_step SQP steps | sqp: to convergence or time_limit
  int iterations_per_step = 1;   // rti
  double time_limit = 0;         // sqp: seconds per step; 0 = the control period
  double control_rate = 0;       // Hz; 0 = 1/dt
  double duration = 5;           // seconds of closed loop (when steps is 0)
  int steps = 0;                 // control steps; 0 = duration / T (rounded)
  std::string warm_start = "shift";  // shift | hold

  // The plant: the model, or `plant_model` when parameters differ, integrated by `plant_integrator`
  // with `plant_substeps` steps per control period.
  IntegratorType plant_integrator = IntegratorType::Rk4;
  int plant_substeps = 10;
  std::shared_ptr<const Model> plant_model;  // null = the problem's model
  std::vector<PlantParam> plant_params;      // the overridden parameters, for printing

  std::vector<double> process_noise;      // sigma per state (nx), or empty = none
  std::vector<double> measurement_noise;  // sigma per state (nx), or empty = none
  std::vector<Disturbance> disturbances;
  std::uint64_t seed = 1;
  // Empty: every cost whose reference has one row per knot moves with time (row r at r dt).
  std::vector<MpcReference> references;

  std::string validate() const;
};

// Control steps of the closed loop: `steps`, else duration / T rounded to the nearest integer (>= 1).
int mpc_steps(const MpcSettings& s, double dt);
// The control period T in seconds.
double mpc_period(const MpcSettings& s, double dt);

}  // namespace knot::problems

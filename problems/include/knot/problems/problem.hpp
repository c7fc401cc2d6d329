// A discretized optimal control problem:
//   min  sum_{k=0}^{N} sum_terms l_k(x_k, u_k)
//   s.t. x_0 = x0,  x_{k+1} = F(x_k, u_k; dt)  (the integrator),  constraint terms per knot.
// Built by the YAML loader (loader.hpp) or directly in C++.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/initial_guess.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/model.hpp"
#include "knot/problems/settings.hpp"

namespace knot::problems {

struct Horizon {
  int N = 0;         // number of intervals; knots 0..N
  double dt = 0;     // seconds per interval
  IntegratorType integrator = IntegratorType::Rk4;
};

struct Problem {
  std::string name;
  std::string description;
  std::string source;  // the problem file, or empty when built in C++
  std::shared_ptr<const Model> model;
  Horizon horizon;
  std::vector<double> x0;
  std::vector<std::string> state_names, control_names;  // nx and nu entries
  std::vector<std::shared_ptr<CostTerm>> costs;
  std::vector<std::shared_ptr<ConstraintTerm>> constraints;
  SolverSettings solver;
  MpcSettings mpc;
  InitialGuess initial_guess;  // the `initial_guess:` file; empty = the default guess

  int nx() const { return model ? model->nx() : 0; }
  int nu() const { return model ? model->nu() : 0; }
  // Checks the dimensions and values a C++ caller could get wrong; throws ProblemError.
  void validate() const;
};

// Why `model` cannot take the place of p.model in an already laid-out problem, or empty: another
// type, nx, nu, nq or time kind; a term that holds the model (end-effector terms keep their own
// pointer to its kinematics); or expression terms on an expression model (they read its
// parameters as constants compiled into their tapes).
std::string model_swap_refusal(const Problem& p, const Model& model);

}  // namespace knot::problems

// Discretization x+ = F(x, u; dt) of a model, with exact sensitivities A = dF/dx, B = dF/du.
//
//   euler               x+ = x + dt f(x, u)
//   semi_implicit_euler v+ = v + dt f_v(q, v, u),  q+ = q + dt f_q(q, v+, u)   (x = [q; v], Model::nq)
//   rk4                 classic four-stage Runge-Kutta; A, B propagated through the stages
//   implicit_euler      x+ = x + dt f(x+, u)
//   implicit_midpoint   x+ = x + dt f((x + x+)/2, u)
// The implicit schemes solve their stage equation by Newton's method with the cooperative LU, and
// take A, B from the implicit function theorem at the converged point. Discrete-time models pass
// through unchanged. An Integrator owns its workspace (sized at construction): step() allocates
// nothing and one instance is not shared between threads.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "knot/problems/model.hpp"

namespace knot::problems {

enum class IntegratorType { Euler, SemiImplicitEuler, Rk4, ImplicitEuler, ImplicitMidpoint };

std::string_view to_string(IntegratorType type);
std::optional<IntegratorType> parse_integrator(std::string_view name);  // "rk4", "implicit_euler", ...
std::vector<std::string_view> integrator_names();

enum class IntegratorStatus { Ok, NewtonNotConverged, SingularNewtonMatrix, NonFinite };
std::string_view to_string(IntegratorStatus status);

struct IntegratorOptions {
  int newton_max_iter = 20;
  double newton_tol = 1e-13;  // on ||residual||_inf relative to 1 + ||x||_inf
};

class Integrator {
 public:
  // Throws ProblemError when the scheme does not apply (semi_implicit_euler without Model::nq).
  Integrator(const Model& model, IntegratorType type, IntegratorOptions options = {});

  IntegratorType type() const { return type_; }
  IntegratorStatus step(ModelData& data, const double* x, const double* u, double dt, double* x_next);
  // x_next and A (nx x nx), B (nx x nu), column-major; B may be null, and A null forms x_next only.
  // x_next may alias x. Unless the status is Ok, x_next, A and B are unspecified.
  IntegratorStatus step_jacobian(ModelData& data, const double* x, const double* u, double dt, double* x_next,
                                 double* A, double* B);

 private:
  const Model* model_;
  IntegratorType type_;
  IntegratorOptions options_;
  std::vector<double> work_;  // sized at construction
  std::vector<int> piv_;      // LU pivots of the Newton matrix (implicit schemes)
};

}  // namespace knot::problems

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
  // H = sum_i lambda_i d2x_next_i / dw2 in w = (x, u) (nw x nw, column-major, symmetric bit for
  // bit) by the model's second-order forward mode (Model::step_hessian); Unsupported for implicit
  // schemes and models without one.
  SecondOrderStatus step_hessian(ModelData& data, const double* x, const double* u, double dt, const double* lambda,
                                 double* H) const;

 private:
  const Model* model_;
  IntegratorType type_;
  IntegratorOptions options_;
  std::vector<double> work_;  // sized at construction
  std::vector<int> piv_;      // LU pivots of the Newton matrix (implicit schemes)
};

// One step of an explicit scheme (or a discrete-time model's map) on any scalar S, the same
// formulas as Integrator::step, for models templated on the scalar (model_adapter.hpp runs it with
// HyperDual). f(x, u, out) evaluates the model; work holds 2 n scalars; y (n) receives x_next and
// may not alias x. Implicit schemes are not handled here (false).
template <class S, class Dyn>
bool explicit_step(IntegratorType type, bool discrete, int n, int nq, const Dyn& f, const S* x, const S* u, double dt,
                   S* y, S* work) {
  S* fv = work;
  S* acc = work + n;
  if (discrete) {
    f(x, u, y);
    return true;
  }
  switch (type) {
    case IntegratorType::Euler:
      f(x, u, fv);
      for (int i = 0; i < n; ++i) y[i] = x[i] + dt * fv[i];
      return true;
    case IntegratorType::SemiImplicitEuler:
      f(x, u, fv);
      for (int i = 0; i < n; ++i) y[i] = i < nq ? x[i] : x[i] + dt * fv[i];
      f(y, u, fv);
      for (int i = 0; i < nq; ++i) y[i] += dt * fv[i];
      return true;
    case IntegratorType::Rk4: {
      constexpr double weight[4] = {1, 2, 2, 1};
      const double advance[3] = {dt / 2, dt / 2, dt};
      for (int i = 0; i < n; ++i) {
        acc[i] = S(0.0);
        y[i] = x[i];
      }
      for (int s = 0; s < 4; ++s) {
        f(y, u, fv);
        for (int i = 0; i < n; ++i) acc[i] += weight[s] * fv[i];
        if (s < 3)
          for (int i = 0; i < n; ++i) y[i] = x[i] + advance[s] * fv[i];
      }
      for (int i = 0; i < n; ++i) y[i] = x[i] + dt / 6 * acc[i];
      return true;
    }
    case IntegratorType::ImplicitEuler:
    case IntegratorType::ImplicitMidpoint:
      return false;
  }
  return false;
}

}  // namespace knot::problems

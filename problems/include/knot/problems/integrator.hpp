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

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/hyperdual.hpp"
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
KNOT_HD bool explicit_step(IntegratorType type, bool discrete, int n, int nq, const Dyn& f, const S* x, const S* u, double dt,
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

// H = sum_r lambda_r d2 x_next_r / dw2 over w = (x, u) (nw = n + m <= W; nw x nw, column-major,
// symmetric bit for bit) by one explicit_step on HyperDual<W> seeded with the nw unit directions.
// f evaluates the model on HyperDual<W>; xd, ud, yd (n, m, n) and work (2 n) are scratch.
// Unsupported for an implicit scheme or nw > W; NonFinite when a value or derivative is not finite.
template <int W, class Dyn>
KNOT_HD SecondOrderStatus explicit_step_hessian(IntegratorType type, bool discrete, int n, int m, int nq, const Dyn& f,
                                                const double* x, const double* u, double dt, const double* lambda,
                                                double* H, HyperDual<W>* xd, HyperDual<W>* ud, HyperDual<W>* yd,
                                                HyperDual<W>* work) {
  const int nw = n + m;
  if (nw > W) return SecondOrderStatus::Unsupported;
  // Direction j seeds input j of w = (x, u); the bounds tell the compiler that j < W.
  for (int i = 0; i < n; ++i) {
    xd[i] = HyperDual<W>(x[i]);
    if (i < W) xd[i].g[i] = 1.0;
  }
  for (int i = 0; i < m; ++i) {
    ud[i] = HyperDual<W>(u[i]);
    if (n + i < W) ud[i].g[n + i] = 1.0;
  }
  if (!explicit_step(type, discrete, n, nq, f, xd, ud, dt, yd, work)) return SecondOrderStatus::Unsupported;
  bool finite = true;  // v - v == 0 is false for inf and NaN (no <cmath> overload set on the device)
  for (int i = 0, p = 0; i < nw; ++i)
    for (int j = 0; j <= i; ++j, ++p) {
      double acc = 0;
      for (int r = 0; r < n; ++r) acc += lambda[r] * yd[r].h[p];
      finite = finite && acc - acc == 0.0;
      H[i + std::size_t(j) * nw] = acc;
      H[j + std::size_t(i) * nw] = acc;
    }
  for (int r = 0; r < n; ++r) finite = finite && yd[r].v - yd[r].v == 0.0;
  return finite ? SecondOrderStatus::Ok : SecondOrderStatus::NonFinite;
}

// Scratch of explicit_step_jacobian, in scalars: f, acc (n each), fx, Sx, Kx (n x n each) and fu,
// Su, Ku (n x m each).
KNOT_HD constexpr std::size_t explicit_step_jacobian_work(int n, int m) {
  return 2 * std::size_t(n) + 3 * (std::size_t(n) * n + std::size_t(n) * m);
}

// A stage's K = fx [Sx | Su] + [0 | fu] (n x n and n x m, column-major) for a stage point whose
// derivatives along (x, u) are [Sx | Su]. With r0 = nq (velocity_rows), rows i < nq of f are
// x[nq + i] (q' = v): their rows of K are S's velocity rows, copied (the product with [0 I | 0]
// gives the same).
template <class S>
KNOT_HD void stage_chain(int n, int m, int nq, int r0, const S* fx, const S* fu, const S* sx, const S* su, S* Kx,
                         S* Ku) {
  for (int j = 0; j < n + m; ++j) {
    const S* sj = j < n ? sx + std::size_t(j) * n : su + std::size_t(j - n) * n;
    S* kj = j < n ? Kx + std::size_t(j) * n : Ku + std::size_t(j - n) * n;
    for (int i = 0; i < r0; ++i) kj[i] = sj[nq + i];
    for (int i = r0; i < n; ++i) kj[i] = j < n ? S(0.0) : fu[i + std::size_t(j - n) * n];
    for (int l = 0; l < n; ++l) {
      const S b = sj[l];
      const S* fl = fx + std::size_t(l) * n;
      for (int i = r0; i < n; ++i) kj[i] += fl[i] * b;
    }
  }
}

// The step's Jacobians A = dF/dx (n x n) and B = dF/du (n x m, column-major) with y = F(x, u) on
// any scalar S, by the chain rule through the stages as Integrator::step_jacobian forms them (the
// same schemes as explicit_step; without the dynamics_chain shortcut). Run on dual numbers it
// differentiates the Jacobians themselves: a model with analytic first derivatives gets its second
// derivatives by forward mode over them (models/manipulator.hpp). jac(x, u, f, fx, fu) evaluates
// the model and its Jacobians on S; work holds explicit_step_jacobian_work(n, m) scalars; y, A, B
// may not alias x, u or work. velocity_rows states that f's first nq rows are x[nq..2 nq) (q' = v,
// nx = 2 nq), so that their products are skipped. Implicit schemes are not handled here (false).
template <class S, class Jac>
KNOT_HD bool explicit_step_jacobian(IntegratorType type, bool discrete, int n, int m, int nq, bool velocity_rows,
                            const Jac& jac, const S* x, const S* u, double dt, S* y, S* A, S* B, S* work) {
  const std::size_t nn = std::size_t(n) * n, nm = std::size_t(n) * m;
  S* f = work;
  S* acc = f + n;
  S* fx = acc + n;
  S* Sx = fx + nn;
  S* Kx = Sx + nn;
  S* fu = Kx + nn;
  S* Su = fu + nm;
  S* Ku = Su + nm;
  const int r0 = velocity_rows ? nq : 0;
  const auto chain = [&](const S* sx, const S* su) { stage_chain(n, m, nq, r0, fx, fu, sx, su, Kx, Ku); };
  if (discrete) {
    jac(x, u, y, A, B);
    return true;
  }
  switch (type) {
    case IntegratorType::Euler:
      jac(x, u, f, fx, fu);
      for (int i = 0; i < n; ++i) y[i] = x[i] + dt * f[i];
      for (std::size_t e = 0; e < nn; ++e) A[e] = dt * fx[e];
      for (int i = 0; i < n; ++i) A[i + std::size_t(i) * n] += 1.0;
      for (std::size_t e = 0; e < nm; ++e) B[e] = dt * fu[e];
      return true;
    case IntegratorType::SemiImplicitEuler: {
      // y = [q; v+], v+ = v + dt f_v(x, u), S = dy/d(x, u); then q+ = q + dt f_q(y, u).
      jac(x, u, f, fx, fu);
      for (int i = 0; i < n; ++i) y[i] = i < nq ? x[i] : x[i] + dt * f[i];
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          const std::size_t e = i + std::size_t(j) * n;
          A[e] = i < nq ? S(i == j ? 1.0 : 0.0) : (i == j ? 1.0 : 0.0) + dt * fx[e];
        }
      for (std::size_t e = 0; e < nm; ++e) B[e] = e % std::size_t(n) < std::size_t(nq) ? S(0.0) : dt * fu[e];
      if (velocity_rows) {
        // f_q(y, u) = v+: q+ = q + dt v+, and the q rows of A and B take dt times their v+ rows. The
        // same numbers as the general form below (whose K rows i < nq are these copies), without
        // the model's second evaluation (the step Jacobian's cost halves).
        for (int i = 0; i < nq; ++i) y[i] += dt * y[nq + i];
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < nq; ++i) A[i + std::size_t(j) * n] += dt * A[nq + i + std::size_t(j) * n];
        for (int j = 0; j < m; ++j)
          for (int i = 0; i < nq; ++i) B[i + std::size_t(j) * n] += dt * B[nq + i + std::size_t(j) * n];
        return true;
      }
      jac(y, u, f, fx, fu);
      for (int i = 0; i < nq; ++i) y[i] += dt * f[i];
      chain(A, B);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < nq; ++i) A[i + std::size_t(j) * n] += dt * Kx[i + std::size_t(j) * n];
      for (int j = 0; j < m; ++j)
        for (int i = 0; i < nq; ++i) B[i + std::size_t(j) * n] += dt * Ku[i + std::size_t(j) * n];
      return true;
    }
    case IntegratorType::Rk4: {
      constexpr double weight[4] = {1, 2, 2, 1};
      const double advance[3] = {dt / 2, dt / 2, dt};
      for (int i = 0; i < n; ++i) {
        acc[i] = S(0.0);
        y[i] = x[i];
      }
      for (int s = 0; s < 4; ++s) {
        jac(y, u, f, fx, fu);
        // The first stage point is x itself: its K is [fx | fu].
        const S* kx = fx;
        const S* ku = fu;
        if (s > 0) {
          chain(Sx, Su);
          kx = Kx;
          ku = Ku;
        }
        for (int i = 0; i < n; ++i) acc[i] += weight[s] * f[i];
        for (std::size_t e = 0; e < nn; ++e) A[e] = s == 0 ? weight[s] * kx[e] : A[e] + weight[s] * kx[e];
        for (std::size_t e = 0; e < nm; ++e) B[e] = s == 0 ? weight[s] * ku[e] : B[e] + weight[s] * ku[e];
        if (s < 3) {
          const double c = advance[s];
          for (int i = 0; i < n; ++i) y[i] = x[i] + c * f[i];
          for (std::size_t e = 0; e < nn; ++e) Sx[e] = c * kx[e];
          for (int i = 0; i < n; ++i) Sx[i + std::size_t(i) * n] += 1.0;
          for (std::size_t e = 0; e < nm; ++e) Su[e] = c * ku[e];
        }
      }
      for (int i = 0; i < n; ++i) y[i] = x[i] + dt / 6 * acc[i];
      for (std::size_t e = 0; e < nn; ++e) A[e] = dt / 6 * A[e];
      for (int i = 0; i < n; ++i) A[i + std::size_t(i) * n] += 1.0;
      for (std::size_t e = 0; e < nm; ++e) B[e] = dt / 6 * B[e];
      return true;
    }
    case IntegratorType::ImplicitEuler:
    case IntegratorType::ImplicitMidpoint:
      return false;
  }
  return false;
}

}  // namespace knot::problems

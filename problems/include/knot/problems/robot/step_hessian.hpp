// The manipulator's step Hessian lambda' d2F, exact to rounding, by forward mode over the analytic
// first derivatives on dual numbers carrying W unit directions of w = (x, u) per sweep. One source
// for the host (Manipulator::step_hessian) and the device (solver/device/hessian.hpp), so both give
// the same bits.
//
// Euler: F = [q + dt qd; qd + dt qdd], semi-implicit Euler: F = [q + dt (qd + dt qdd); qd + dt qdd].
// Only qdd(q, qd, u) is nonlinear, so
//   lambda' d2F = dt d2(mu' qdd),   mu = lambda_qd (+ dt lambda_q for semi-implicit Euler),
// and d2(mu' qdd) is the Jacobian of acceleration_gradient's g (dynamics.hpp): one solve with mu per
// sweep, no M^-1 and no n x n products on duals. Only the nx state directions are seeded: g is
// affine in u with d(g_u)/du = 0, and the u rows of the seeded columns give the mixed blocks.
// RK4's stage points move with u and with every stage's qdd, so it differentiates the whole step
// Jacobian (explicit_step_jacobian, integrator.hpp) over all nx + nu directions: d/dw_j of
// [A' lambda; B' lambda] is column j of lambda' d2F. The mirrored pairs are then averaged.
#pragma once

#include <cstddef>

#include "knot/linalg/config.hpp"
#include "knot/problems/dual.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/model.hpp"
#include "knot/problems/robot/dynamics.hpp"

namespace knot::problems::robot {

namespace detail {

// H from the raw columns G (nw x nd, nd <= nw seeded directions first): each mirrored pair of the
// seeded block set to its mean (so H is symmetric bit for bit), the unseeded rows copied to their
// columns, and the unseeded block zero.
KNOT_HD void symmetrize_seeded(int nw, int nd, const double* G, double* H) {
  for (int j = 0; j < nd; ++j) {
    H[j + std::size_t(j) * nw] = G[j + std::size_t(j) * nw];
    for (int i = j + 1; i < nw; ++i) {
      const double g = G[i + std::size_t(j) * nw];
      const double v = i < nd ? 0.5 * (g + G[j + std::size_t(i) * nw]) : g;
      H[i + std::size_t(j) * nw] = v;
      H[j + std::size_t(i) * nw] = v;
    }
  }
  for (int j = nd; j < nw; ++j)
    for (int i = nd; i < nw; ++i) H[i + std::size_t(j) * nw] = 0.0;
}

KNOT_HD bool finite(double v) { return v - v == 0.0; }  // false for inf and NaN

}  // namespace detail

// Dual scratch of step_hessian, in duals: RK4's seeded x and u, its step y, A, B and
// explicit_step_jacobian's work (the Euler family takes 6 n of it).
KNOT_HD constexpr std::size_t step_hessian_duals(int n) {
  const std::size_t nx = 2 * std::size_t(n), nu = std::size_t(n);
  return nx + nu + nx + nx * nx + nx * nu + explicit_step_jacobian_work(int(nx), n);
}

// The Euler family's H (3n x 3n) for the step from x = (q, qd) under u; G (3n x 2n doubles) holds
// the raw columns, scratch 6 n duals. False when the dynamics or a derivative is not finite (H is
// then written but meaningless).
template <int W>
KNOT_HD bool euler_step_hessian(const RobotData& r, bool semi_implicit, const double* x, const double* u, double dt,
                                const double* lambda, double* H, double* G,
                                Workspace<Dual<double, Tangent<double, W>>>& w,
                                Dual<double, Tangent<double, W>>* scratch) {
  using D = Dual<double, Tangent<double, W>>;
  const int n = r.n, nx = 2 * n, nw = 3 * n;
  D* xs = scratch;
  D* us = xs + nx;
  D* g = us + n;
  double mu[kMaxJoints];
  for (int i = 0; i < n; ++i) mu[i] = semi_implicit ? lambda[n + i] + dt * lambda[i] : lambda[n + i];
  // Euler's lambda_q does not enter (q+ is linear); a non-finite one is still a non-finite Hessian.
  bool ok = true;
  for (int i = 0; i < nx; ++i) ok = ok && detail::finite(lambda[i]);
  for (int j0 = 0; j0 < nx; j0 += W) {
    const int width = nx - j0 < W ? nx - j0 : W;
    for (int i = 0; i < nx; ++i) xs[i] = D(x[i]);
    for (int i = 0; i < n; ++i) us[i] = D(u[i]);
    for (int k = 0; k < width; ++k) xs[j0 + k].d[k] = 1.0;
    if (acceleration_gradient(r, xs, xs + n, us, mu, g, w) != 0) ok = false;
    for (int i = 0; i < nw; ++i) {
      ok = ok && detail::finite(g[i].v);
      for (int k = 0; k < width; ++k) G[i + std::size_t(j0 + k) * nw] = dt * g[i].d[k];
    }
  }
  for (std::size_t e = 0; e < std::size_t(nw) * nx; ++e) ok = ok && detail::finite(G[e]);
  detail::symmetrize_seeded(nw, nx, G, H);
  return ok;
}

// lambda' d2F of the step under `type` (3n x 3n, column-major, symmetric bit for bit); G holds
// 3n x 3n doubles, scratch step_hessian_duals(n) duals. Unsupported (H untouched) for the implicit
// schemes, NonFinite when the dynamics or a derivative is not finite.
template <int W>
KNOT_HD SecondOrderStatus step_hessian(const RobotData& r, IntegratorType type, const double* x, const double* u,
                                       double dt, const double* lambda, double* H, double* G,
                                       Workspace<Dual<double, Tangent<double, W>>>& w,
                                       Dual<double, Tangent<double, W>>* scratch) {
  using D = Dual<double, Tangent<double, W>>;
  if (type == IntegratorType::Euler || type == IntegratorType::SemiImplicitEuler)
    return euler_step_hessian<W>(r, type == IntegratorType::SemiImplicitEuler, x, u, dt, lambda, H, G, w, scratch)
               ? SecondOrderStatus::Ok
               : SecondOrderStatus::NonFinite;
  const int n = r.n, nx = 2 * n, nw = 3 * n;
  D* xs = scratch;
  D* us = xs + nx;
  D* y = us + n;
  D* A = y + nx;
  D* B = A + std::size_t(nx) * nx;
  D* work = B + std::size_t(nx) * n;
  const auto jac = [&](const D* xa, const D* ua, D* f, D* fx, D* fu) { state_jacobian(r, xa, ua, f, fx, fu, w); };
  bool ok = true;
  for (int j0 = 0; j0 < nw; j0 += W) {
    const int width = nw - j0 < W ? nw - j0 : W;
    for (int i = 0; i < nx; ++i) xs[i] = D(x[i]);
    for (int i = 0; i < n; ++i) us[i] = D(u[i]);
    for (int k = 0; k < width; ++k) {
      const int j = j0 + k;
      (j < nx ? xs[j] : us[j - nx]).d[k] = 1.0;
    }
    if (!explicit_step_jacobian(type, false, nx, n, n, true, jac, xs, us, dt, y, A, B, work))
      return SecondOrderStatus::Unsupported;
    for (int i = 0; i < nw; ++i) {
      const D* col = i < nx ? A + std::size_t(i) * nx : B + std::size_t(i - nx) * nx;
      for (int k = 0; k < width; ++k) {
        double acc = 0.0;
        for (int q = 0; q < nx; ++q) acc += lambda[q] * col[q].d[k];
        G[i + std::size_t(j0 + k) * nw] = acc;
      }
    }
    for (int i = 0; i < nx; ++i) ok = ok && detail::finite(y[i].v);
  }
  for (std::size_t e = 0; e < std::size_t(nw) * nw; ++e) ok = ok && detail::finite(G[e]);
  detail::symmetrize_seeded(nw, nw, G, H);
  return ok ? SecondOrderStatus::Ok : SecondOrderStatus::NonFinite;
}

}  // namespace knot::problems::robot

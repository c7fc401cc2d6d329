// The manipulator's step Hessian lambda' d2F, exact to rounding, by forward mode over the analytic
// first derivatives on dual numbers carrying W unit directions per sweep. One source for the host
// (Manipulator::step_hessian) and the device (solver/device/hessian.hpp), so both give the same bits.
//
// The step's only nonlinear piece is qdd(q, qd, u), and the Hessian of mu' qdd for a constant mu is
// the Jacobian of acceleration_gradient's g (dynamics.hpp): one solve with mu per sweep, no M^-1
// and no n x n products on duals. Only the 2n state directions are seeded (acceleration_hessian): g
// is affine in u with d(g_u)/du = 0, and the u rows of the seeded columns give the mixed blocks.
//
// Euler: F = [q + dt qd; qd + dt qdd], semi-implicit Euler: F = [q + dt (qd + dt qdd); qd + dt qdd],
// so lambda' d2F = dt d2(mu' qdd) with mu = lambda_qd (+ dt lambda_q for semi-implicit Euler).
//
// RK4: F = x + sum_s c_s k_s with k_s = f(y_s, u), y_0 = x, y_(s+1) = x + a_(s+1) k_s. By the
// second-order chain rule over that graph (only the four f are nonlinear, and only through qdd),
//   lambda' d2F = sum_s P_s' d2(mu_s' qdd)(y_s, u) P_s,   P_s = d(y_s, u)/dw,
// with mu_s the qd half of k_s's adjoint kbar_s = c_s lambda + a_(s+1) f_y(s+1)' kbar_(s+1). The
// stage Jacobians, P_s and the adjoints are plain doubles from the first-order derivatives; the
// duals carry 2n directions at four points instead of all 3n through the whole step (on the
// iiwa14 the Jacobian chain before it cost about 2x this, a forward-over-reverse sweep of the
// step's adjoint 1.5x). Every H is then symmetrized: each mirrored pair set to its mean.
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

// Scratch of step_hessian: duals (acceleration_hessian's seeded x and u and its g) and doubles
// (RK4's stage points, Jacobians and adjoints, P_s, products and one stage's raw columns).
KNOT_HD constexpr std::size_t step_hessian_duals(int n) { return 6 * std::size_t(n); }
KNOT_HD constexpr std::size_t step_hessian_doubles(int n) {
  const std::size_t nx = 2 * std::size_t(n), nw = 3 * std::size_t(n);
  return 4 * nx + nx + 4 * (nx * nx + nx * n) + 4 * std::size_t(n) + 2 * nx + nx * nw + nw * nw + nw * nx;
}

// G (3n x 2n, ld 3n) = scale d2(mu' qdd) over (q, qd, u) at (q, qd, u), raw: column j is the
// derivative along state direction j (the u rows give the mixed block; the u block is zero).
// scratch: 6 n duals. False when the dynamics or a derivative is not finite.
template <int W>
KNOT_HD bool acceleration_hessian(const RobotData& r, const double* x, const double* u, const double* mu, double scale,
                                  double* G, Workspace<Dual<double, Tangent<double, W>>>& w,
                                  Dual<double, Tangent<double, W>>* scratch) {
  using D = Dual<double, Tangent<double, W>>;
  const int n = r.n, nx = 2 * n, nw = 3 * n;
  D* xs = scratch;
  D* us = xs + nx;
  D* g = us + n;
  bool ok = true;
  for (int j0 = 0; j0 < nx; j0 += W) {
    const int width = nx - j0 < W ? nx - j0 : W;
    for (int i = 0; i < nx; ++i) xs[i] = D(x[i]);
    for (int i = 0; i < n; ++i) us[i] = D(u[i]);
    for (int k = 0; k < width; ++k) xs[j0 + k].d[k] = 1.0;
    if (acceleration_gradient(r, xs, xs + n, us, mu, g, w) != 0) ok = false;
    for (int i = 0; i < nw; ++i) {
      ok = ok && detail::finite(g[i].v);
      for (int k = 0; k < width; ++k) G[i + std::size_t(j0 + k) * nw] = scale * g[i].d[k];
    }
  }
  for (std::size_t e = 0; e < std::size_t(nw) * nx; ++e) ok = ok && detail::finite(G[e]);
  return ok;
}

// The Euler family's H (3n x 3n) for the step from x = (q, qd) under u; G (3n x 2n doubles) holds
// the raw columns, scratch 6 n duals. False when the dynamics or a derivative is not finite (H is
// then written but meaningless).
template <int W>
KNOT_HD bool euler_step_hessian(const RobotData& r, bool semi_implicit, const double* x, const double* u, double dt,
                                const double* lambda, double* H, double* G,
                                Workspace<Dual<double, Tangent<double, W>>>& w,
                                Dual<double, Tangent<double, W>>* scratch) {
  const int n = r.n, nx = 2 * n;
  double mu[kMaxJoints];
  for (int i = 0; i < n; ++i) mu[i] = semi_implicit ? lambda[n + i] + dt * lambda[i] : lambda[n + i];
  // Euler's lambda_q does not enter (q+ is linear); a non-finite one is still a non-finite Hessian.
  bool ok = true;
  for (int i = 0; i < nx; ++i) ok = ok && detail::finite(lambda[i]);
  ok = acceleration_hessian<W>(r, x, u, mu, dt, G, w, scratch) && ok;
  detail::symmetrize_seeded(3 * n, nx, G, H);
  return ok;
}

// RK4's H (3n x 3n; see the top). G (3n x 3n doubles) accumulates the raw sum, H holds each
// stage's symmetrized d2(mu_s' qdd) on the way; wd is a double workspace, work
// step_hessian_doubles(n) doubles.
template <int W>
KNOT_HD bool rk4_step_hessian(const RobotData& r, const double* x, const double* u, double dt, const double* lambda,
                              double* H, double* G, Workspace<Dual<double, Tangent<double, W>>>& w,
                              Dual<double, Tangent<double, W>>* scratch, Workspace<double>& wd, double* work) {
  const int n = r.n, nx = 2 * n, nw = 3 * n;
  const std::size_t nn = std::size_t(nx) * nx, nm = std::size_t(nx) * n;
  const double c[4] = {dt / 6, dt / 3, dt / 3, dt / 6};
  const double a[4] = {0.0, dt / 2, dt / 2, dt};
  double* ys = work;            // y_s, nx each
  double* f = ys + 4 * nx;      // f(y_s, u)
  double* Fx = f + nx;          // f_y at y_s, nx x nx each
  double* Fu = Fx + 4 * nn;     // f_u at y_s, nx x n each
  double* mu = Fu + 4 * nm;     // mu_s, n each
  double* kbar = mu + 4 * n;    // k_s's adjoint
  double* ybar = kbar + nx;     // y_s's adjoint
  double* Pm = ybar + nx;       // dy_s/dw, nx x nw
  double* T = Pm + std::size_t(nx) * nw;  // d2(mu_s' qdd) P_s, 3n x nw; also the stage chain K
  double* Gs = T + std::size_t(nw) * nw;  // one stage's raw columns, 3n x 2n
  bool ok = true;
  for (int i = 0; i < nx; ++i) ok = ok && detail::finite(lambda[i]);
  // The stage points and their first derivatives.
  for (int i = 0; i < nx; ++i) ys[i] = x[i];
  for (int s = 0; s < 4; ++s) {
    const double* y = ys + s * nx;
    if (state_jacobian(r, y, u, f, Fx + s * nn, Fu + s * nm, wd) != 0) ok = false;
    if (s < 3)
      for (int i = 0; i < nx; ++i) ys[(s + 1) * nx + i] = x[i] + a[s + 1] * f[i];
  }
  // The adjoints, last stage first: kbar_s = c_s lambda + a_(s+1) ybar_(s+1), ybar_s = f_y' kbar_s.
  for (int s = 3; s >= 0; --s) {
    for (int i = 0; i < nx; ++i) kbar[i] = s == 3 ? c[s] * lambda[i] : c[s] * lambda[i] + a[s + 1] * ybar[i];
    for (int i = 0; i < n; ++i) mu[s * n + i] = kbar[n + i];
    if (s == 0) break;
    const double* A = Fx + s * nn;
    for (int j = 0; j < nx; ++j) {
      double acc = 0.0;
      for (int i = 0; i < nx; ++i) acc += A[i + std::size_t(j) * nx] * kbar[i];
      ybar[j] = acc;
    }
  }
  // sum_s P_s' Q_s P_s, Q_s = d2(mu_s' qdd)(y_s, u) over (q, qd, u), P_s = [dy_s/dw; 0 I].
  for (std::size_t e = 0; e < std::size_t(nw) * nw; ++e) G[e] = 0.0;
  for (int j = 0; j < nw; ++j)
    for (int i = 0; i < nx; ++i) Pm[i + std::size_t(j) * nx] = i == j ? 1.0 : 0.0;
  for (int s = 0; s < 4; ++s) {
    if (!acceleration_hessian<W>(r, ys + s * nx, u, mu + s * n, 1.0, Gs, w, scratch)) ok = false;
    detail::symmetrize_seeded(nw, nx, Gs, H);  // Q_s
    if (s == 0) {  // P_0 = I
      for (std::size_t e = 0; e < std::size_t(nw) * nw; ++e) G[e] += H[e];
    } else {
      // T = Q_s P_s: Q's state columns times dy_s/dw, plus its u columns on the u columns.
      for (int j = 0; j < nw; ++j)
        for (int i = 0; i < nw; ++i) {
          double acc = j < nx ? 0.0 : H[i + std::size_t(j) * nw];
          for (int k = 0; k < nx; ++k) acc += H[i + std::size_t(k) * nw] * Pm[k + std::size_t(j) * nx];
          T[i + std::size_t(j) * nw] = acc;
        }
      // G += P_s' T: dy_s/dw' times T's state rows, plus T's u rows on the u rows.
      for (int j = 0; j < nw; ++j)
        for (int i = 0; i < nw; ++i) {
          double acc = i < nx ? 0.0 : T[nx + (i - nx) + std::size_t(j) * nw];
          for (int k = 0; k < nx; ++k) acc += Pm[k + std::size_t(i) * nx] * T[k + std::size_t(j) * nw];
          G[i + std::size_t(j) * nw] += acc;
        }
    }
    if (s < 3) {
      // dy_(s+1)/dw = [I 0] + a_(s+1) K, K = f_y P_s + [0 f_u] the integrator's stage chain.
      stage_chain(nx, n, n, n, Fx + s * nn, Fu + s * nm, Pm, Pm + nn, T, T + nn);
      for (int j = 0; j < nw; ++j)
        for (int i = 0; i < nx; ++i)
          Pm[i + std::size_t(j) * nx] = (i == j ? 1.0 : 0.0) + a[s + 1] * T[i + std::size_t(j) * nx];
    }
  }
  for (std::size_t e = 0; e < std::size_t(nw) * nw; ++e) ok = ok && detail::finite(G[e]);
  detail::symmetrize_seeded(nw, nw, G, H);
  return ok;
}

// lambda' d2F of the step under `type` (3n x 3n, column-major, symmetric bit for bit); G holds
// 3n x 3n doubles, scratch step_hessian_duals(n) duals, work step_hessian_doubles(n) doubles (RK4's,
// with the double workspace wd). Unsupported (H untouched) for the implicit schemes, NonFinite when
// the dynamics or a derivative is not finite.
template <int W>
KNOT_HD SecondOrderStatus step_hessian(const RobotData& r, IntegratorType type, const double* x, const double* u,
                                       double dt, const double* lambda, double* H, double* G,
                                       Workspace<Dual<double, Tangent<double, W>>>& w,
                                       Dual<double, Tangent<double, W>>* scratch, Workspace<double>& wd,
                                       double* work) {
  bool ok;
  if (type == IntegratorType::Euler || type == IntegratorType::SemiImplicitEuler)
    ok = euler_step_hessian<W>(r, type == IntegratorType::SemiImplicitEuler, x, u, dt, lambda, H, G, w, scratch);
  else if (type == IntegratorType::Rk4)
    ok = rk4_step_hessian<W>(r, x, u, dt, lambda, H, G, w, scratch, wd, work);
  else
    return SecondOrderStatus::Unsupported;
  return ok ? SecondOrderStatus::Ok : SecondOrderStatus::NonFinite;
}

}  // namespace knot::problems::robot

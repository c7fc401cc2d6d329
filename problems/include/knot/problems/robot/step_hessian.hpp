// The manipulator's step Hessian lambda' d2F for the Euler family, on the host (Manipulator::
// step_hessian) and the device (solver/device/hessian.hpp) alike, so both give the same bits.
//
// Euler: F = [q + dt qd; qd + dt qdd], semi-implicit Euler: F = [q + dt (qd + dt qdd); qd + dt qdd].
// Only qdd(q, qd, u) is nonlinear, so
//   lambda' d2F = dt d2(mu' qdd),   mu = lambda_qd (+ dt lambda_q for semi-implicit Euler),
// and d2(mu' qdd) is the Jacobian of acceleration_gradient's g (dynamics.hpp), taken by forward mode:
// W of the nx state directions per sweep on dual numbers. The u directions need no seed: g is affine
// in u with d(g_u)/du = 0, and the u rows of the seeded columns give the mixed blocks. This contracts
// with mu before the mass matrix's inverse is applied (one solve per sweep, no M^-1 and no n x n
// products on duals), about half the work of forward mode over the whole step Jacobian, which RK4
// still takes (its stage points move with u and with every stage's qdd).
#pragma once

#include <cstddef>

#include "knot/linalg/config.hpp"
#include "knot/problems/dual.hpp"
#include "knot/problems/robot/dynamics.hpp"

namespace knot::problems::robot {

// Dual scratch of euler_step_hessian, in duals: the seeded x and u, and g.
KNOT_HD constexpr std::size_t euler_step_hessian_duals(int n) { return 6 * std::size_t(n); }

// H (3n x 3n, column-major, symmetric bit for bit: each mirrored pair of G set to its mean) for the
// step from x = (q, qd) under u; G (3n x 2n doubles) holds the raw columns. scratch holds
// euler_step_hessian_duals(n) duals. False when the dynamics or a derivative is not finite (H is
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
  for (int i = 0; i < nx; ++i) ok = ok && lambda[i] - lambda[i] == 0.0;
  for (int j0 = 0; j0 < nx; j0 += W) {
    const int width = nx - j0 < W ? nx - j0 : W;
    for (int i = 0; i < nx; ++i) xs[i] = D(x[i]);
    for (int i = 0; i < n; ++i) us[i] = D(u[i]);
    for (int k = 0; k < width; ++k) xs[j0 + k].d[k] = 1.0;
    if (acceleration_gradient(r, xs, xs + n, us, mu, g, w) != 0) ok = false;
    for (int i = 0; i < nw; ++i) {
      ok = ok && g[i].v - g[i].v == 0.0;  // false for inf and NaN
      for (int k = 0; k < width; ++k) G[i + std::size_t(j0 + k) * nw] = dt * g[i].d[k];
    }
  }
  for (std::size_t e = 0; e < std::size_t(nw) * nx; ++e) ok = ok && G[e] - G[e] == 0.0;
  // The seeded block (x, x) averaged with its mirror; the u rows copied to their columns.
  for (int j = 0; j < nx; ++j) {
    H[j + std::size_t(j) * nw] = G[j + std::size_t(j) * nw];
    for (int i = j + 1; i < nw; ++i) {
      const double gij = G[i + std::size_t(j) * nw];
      const double v = i < nx ? 0.5 * (gij + G[j + std::size_t(i) * nw]) : gij;
      H[i + std::size_t(j) * nw] = v;
      H[j + std::size_t(i) * nw] = v;
    }
  }
  for (int j = nx; j < nw; ++j)
    for (int i = nx; i < nw; ++i) H[i + std::size_t(j) * nw] = 0.0;
  return ok;
}

}  // namespace knot::problems::robot

// Rigid-body dynamics of a fixed-base kinematic tree (RobotData; a serial chain is the tree with
// parent(i) = i - 1): kinematics, point Jacobians, inverse dynamics, mass matrix, forward dynamics and
// their exact first derivatives. Templates on the scalar, callable on the host and in device code
// (KNOT_HD); all scratch lives in a caller-owned Workspace<T>, and nothing allocates. On a dual
// scalar they give the derivatives of those derivatives (Manipulator::step_hessian).
//
// Equations (n joints, parents numbered before children; p = parent(i); j <= i means "j is i or an
// ancestor of i", j < i a strict ancestor; sub(i) is i and its descendants):
//   inverse dynamics   tau = M(q) qdd + c(q, qd)      (c holds Coriolis, centrifugal and gravity)
//   forward dynamics   qdd = M(q)^-1 (tau - c(q, qd))
//   derivatives        dqdd/dq = -M^-1 dtau/dq,  dqdd/dqd = -M^-1 dtau/dqd,  dqdd/dtau = M^-1
//
// Spatial vectors are 6-vectors [angular; linear], expressed in the world frame at the world origin
// (motion: v = [omega; velocity of the body point at the origin]; force: [moment about the origin;
// force]). x is the motion cross product, x* the force one. S_i is joint i's motion subspace,
// [a; p x a] for a revolute joint with world axis a through p, [0; a] for a prismatic one.
//
// Recursive Newton-Euler (RNEA) with gravity as a base acceleration a_{-1} = [0; -g]:
//   v_i = v_p + S_i qd_i,   a_i = a_p + S_i qdd_i + (v_i x S_i) qd_i
//   f_i = I_i a_i + v_i x* I_i v_i,   F_i = sum_{m in sub(i)} f_m,   tau_i = S_i' F_i
// Mass matrix (composite rigid body): IC_i = sum_{m in sub(i)} I_m; M_ij = S_i' IC_i S_j for j <= i,
// its transpose for i < j, and 0 when neither is an ancestor of the other (separate branches).
// The subtree sums F, IC (and BC below) are accumulated from the children, leaves first. (That
// world-frame M is forward_dynamics'; mass_matrix alone runs the same algorithm in joint-local frames,
// detail::crba_local, which needs no world inertias.)
//
// Derivatives, in the spirit of Carpentier and Mansard, "Analytical derivatives of rigid body
// dynamics algorithms" (RSS 2018), as a world-frame recursion of our own derivation. Moving q_j
// displaces the bodies of sub(j) rigidly by the twist S_j; the parent's motion (v_p, a_p, p =
// parent(j)) does not move, which leaves per joint
//   u_j = S_j x v_p,   e_j = -S_j x a_p + u_j x v_p
// and per body the (non-symmetric) 6 x 6 operator
//   B_m y = I_m (v_m x y) - y x* (I_m v_m) - v_m x* (I_m y),   BC_i = sum_{m in sub(i)} B_m.
// With I_m = [[J, [h]x], [-[h]x, m 1]] (h = m c, the first moment) and I_m v_m = [k; l], B_m's right
// half vanishes and its left half is [T_m; 2 [l]x], where, with v = [w; vl] and [.]x the cross matrix,
//   T_m = J [w]x - [w]x J + vl h' + h vl' - 2 (h'vl) 1 + [k]x,
// so BC_i is held as the sum of the T_m (3 x 3) and of the l (3).
// Then for j <= i, dF_i/dq_j = S_j x* F_i + IC_i e_j + BC_i u_j and dF_i/dqd_j = -BC_i S_j - 2 IC_i u_j;
// for i < j, F_i changes as F_j does; otherwise F_i does not depend on joint j. dS_i/dq_j = S_j x S_i
// (j <= i) cancels against S_j x* F_i:
//   dtau_i/dq_j  = (IC_i S_i)' e_j + (BC_i' S_i)' u_j           j <= i
//                = S_i' (S_j x* F_j + IC_j e_j + BC_j u_j)        i <  j
//   dtau_i/dqd_j = -(BC_i' S_i)' S_j - 2 (IC_i S_i)' u_j        j <= i
//                = S_i' (-BC_j S_j - 2 IC_j u_j)                  i <  j
// and both are 0 for joints on separate branches. One forward and one backward sweep, O(n^2) for
// the matrices.
//
// Matrices are column-major with a leading dimension (so a caller can write straight into a block of
// a larger Jacobian). Rotations are 3 x 3 column-major.
#pragma once

#include <cmath>
#include <type_traits>

#include "knot/linalg/config.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/trsv.hpp"
#include "knot/linalg/group.hpp"
#include "knot/problems/dual.hpp"
#include "knot/problems/robot/robot_data.hpp"

namespace knot::problems::robot {

// A spatial inertia about the world origin by its ten numbers: mass m, first moment h = m c (c the
// centre of mass) and the rotational inertia about the origin J = Ic + m (c'c 1 - c c'), symmetric
// and stored xx yy zz xy xz yz. As a 6 x 6 matrix: [[J, [h]x], [-[h]x, m 1]].
template <class T>
struct Inertia {
  T m;
  T h[3];
  T J[6];
};

// Scratch for every routine below; one per thread. Reusable across calls and robots.
template <class T>
struct Workspace {
  // Filled by forward_kinematics: world pose of each body and each joint's motion subspace.
  T R[kMaxJoints][9];
  T p[kMaxJoints][3];
  T S[kMaxJoints][6];
  // Sweeps.
  T v[kMaxJoints][6], a[kMaxJoints][6];
  T u[kMaxJoints][6], e[kMaxJoints][6];          // per-joint derivative terms (see top)
  T alpha[kMaxJoints][6], beta[kMaxJoints][3];   // IC_i S_i, the angular half of BC_i' S_i (the rest is 0)
  T gamma[kMaxJoints][6], delta[kMaxJoints][6];  // dF_i/dq_i and dF_i/dqd_i
  Inertia<T> I[kMaxJoints];                      // body inertias, at the pose of the last kinematics
  bool inertia_current = false;                  // I is that pose's (forward_kinematics clears it)
  T F[kMaxJoints][6];                            // subtree force sums
  Inertia<T> IC[kMaxJoints];                     // subtree inertia sums
  T BT[kMaxJoints][9], Bl[kMaxJoints][3];        // subtree sums of B's T (3 x 3) and l (see top)
  T L[kMaxJoints * kMaxJoints];                  // M, then its Cholesky factor (n x n, ld n)
  T Minv[kMaxJoints * kMaxJoints];               // M^-1 (n x n, ld n), forward_dynamics_derivatives
  T c[kMaxJoints];                               // bias forces c(q, qd)
  T dq[kMaxJoints * kMaxJoints], dqd[kMaxJoints * kMaxJoints];  // dtau/dq, dtau/dqd (ld n)
};

namespace detail {

// Keeps an argument out of template deduction, so optional outputs may be passed as nullptr.
template <class T>
struct NoDeduce {
  using type = T;
};
template <class T>
using Opt = typename NoDeduce<T>::type*;

// The type of a constant of the robot's data in arithmetic on T: T itself for a floating-point T,
// double for a T that carries derivatives, whose product with a double costs a third of one with a
// constant T (and gives the same number).
template <class T>
using Const = std::conditional_t<std::is_floating_point_v<T>, T, double>;

template <class T>
KNOT_HD void cross3(const T* a, const T* b, T* out) {
  const T x = a[1] * b[2] - a[2] * b[1];
  const T y = a[2] * b[0] - a[0] * b[2];
  const T z = a[0] * b[1] - a[1] * b[0];
  out[0] = x;
  out[1] = y;
  out[2] = z;
}

#if KNOT_TANGENT_HOST_LANES
// The same on W-direction duals on the host, on whole lanes (tangent.hpp): the generic one above
// builds each product as a Dual temporary, whose W + 1 doubles the compiler shuffled through the
// stack (a third of the arm's Hessian sweep). The same operations in the same order, so the same
// bits; out may alias a or b (each lane is read before it is written, the values last).
template <class L, int W>
KNOT_DUAL_INLINE inline void cross3_lane(const Dual<double, Tangent<double, W>>* a,
                                         const Dual<double, Tangent<double, W>>* b, const double* v, int o,
                                         Dual<double, Tangent<double, W>>* out) {
  using tangent_detail::load;
  const L a0 = load<L>(a[0].d.e + o), a1 = load<L>(a[1].d.e + o), a2 = load<L>(a[2].d.e + o);
  const L b0 = load<L>(b[0].d.e + o), b1 = load<L>(b[1].d.e + o), b2 = load<L>(b[2].d.e + o);
  const L x = (a1 * v[5] + v[1] * b2) - (a2 * v[4] + v[2] * b1);
  const L y = (a2 * v[3] + v[2] * b0) - (a0 * v[5] + v[0] * b2);
  const L z = (a0 * v[4] + v[0] * b1) - (a1 * v[3] + v[1] * b0);
  tangent_detail::store(out[0].d.e + o, x);
  tangent_detail::store(out[1].d.e + o, y);
  tangent_detail::store(out[2].d.e + o, z);
}
template <int W>
inline void cross3(const Dual<double, Tangent<double, W>>* a, const Dual<double, Tangent<double, W>>* b,
                   Dual<double, Tangent<double, W>>* out) {
  const double v[6] = {a[0].v, a[1].v, a[2].v, b[0].v, b[1].v, b[2].v};
  KNOT_TANGENT_LANES(double, W, k0, (cross3_lane<tangent_detail::Lane, W>(a, b, v, o, out)))
  for (int k = k0; k < W; ++k) cross3_lane<double, W>(a, b, v, k, out);
  out[0].v = v[1] * v[5] - v[2] * v[4];
  out[1].v = v[2] * v[3] - v[0] * v[5];
  out[2].v = v[0] * v[4] - v[1] * v[3];
}
#endif

// out = v x m (motion), v = [w; vl]: [w x mw; w x ml + vl x mw].
template <class T>
KNOT_HD void crm(const T* v, const T* m, T* out) {
  T t0[3], t1[3], t2[3];
  cross3(v, m, t0);
  cross3(v, m + 3, t1);
  cross3(v + 3, m, t2);
  for (int k = 0; k < 3; ++k) {
    out[k] = t0[k];
    out[3 + k] = t1[k] + t2[k];
  }
}

// out = v x* f (force), f = [n; fl]: [w x n + vl x fl; w x fl].
template <class T>
KNOT_HD void crf(const T* v, const T* f, T* out) {
  T t0[3], t1[3], t2[3];
  cross3(v, f, t0);
  cross3(v + 3, f + 3, t1);
  cross3(v, f + 3, t2);
  for (int k = 0; k < 3; ++k) {
    out[k] = t0[k] + t1[k];
    out[3 + k] = t2[k];
  }
}

template <class T>
KNOT_HD T dot3(const T* a, const T* b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

template <class T>
KNOT_HD T dot6(const T* a, const T* b) {
  T s = a[0] * b[0];
  for (int k = 1; k < 6; ++k) s += a[k] * b[k];
  return s;
}

// out = J x for a symmetric 3 x 3 J stored xx yy zz xy xz yz; out must not alias x.
template <class T>
KNOT_HD void sym3_mul(const T* J, const T* x, T* out) {
  out[0] = J[0] * x[0] + J[3] * x[1] + J[4] * x[2];
  out[1] = J[3] * x[0] + J[1] * x[1] + J[5] * x[2];
  out[2] = J[4] * x[0] + J[5] * x[1] + J[2] * x[2];
}

// out = I x = [J xa + h x xl; m xl - h x xa]; out must not alias x.
template <class T>
KNOT_HD void inertia_mul(const Inertia<T>& I, const T* x, T* out) {
  T hxl[3], hxa[3];
  sym3_mul(I.J, x, out);
  cross3(I.h, x + 3, hxl);
  cross3(I.h, x, hxa);
  for (int k = 0; k < 3; ++k) {
    out[k] += hxl[k];
    out[3 + k] = I.m * x[3 + k] - hxa[k];
  }
}

template <class T>
KNOT_HD void inertia_add(Inertia<T>& to, const Inertia<T>& from) {
  to.m += from.m;
  for (int k = 0; k < 3; ++k) to.h[k] += from.h[k];
  for (int k = 0; k < 6; ++k) to.J[k] += from.J[k];
}

// World spatial inertia of body i about the world origin, from its mass m, COM c and rotational
// inertia Ic about the COM (all world): J = Ic + m (c'c 1 - c c'), h = m c.
template <class T>
KNOT_HD void body_inertia(const RobotData& r, int i, const Workspace<T>& w, Inertia<T>& I) {
  using C = Const<T>;
  const T* R = w.R[i];
  const C m = C(r.mass[i]);
  const C com[3] = {C(r.com[i][0]), C(r.com[i][1]), C(r.com[i][2])};
  T c[3];
  for (int k = 0; k < 3; ++k) c[k] = w.p[i][k] + R[k] * com[0] + R[k + 3] * com[1] + R[k + 6] * com[2];
  const double* Jb = r.inertia[i];
  const C Ib[9] = {C(Jb[0]), C(Jb[3]), C(Jb[4]), C(Jb[3]), C(Jb[1]), C(Jb[5]), C(Jb[4]), C(Jb[5]), C(Jb[2])};
  // Ic = R Ib R', its six distinct entries.
  T RI[9];
  for (int col = 0; col < 3; ++col)
    for (int row = 0; row < 3; ++row) {
      T s = T(0);
      for (int k = 0; k < 3; ++k) s += R[row + 3 * k] * Ib[k + 3 * col];
      RI[row + 3 * col] = s;
    }
  constexpr int rows[6] = {0, 1, 2, 0, 0, 1}, cols[6] = {0, 1, 2, 1, 2, 2};
  I.m = T(m);
  for (int k = 0; k < 3; ++k) I.h[k] = m * c[k];
  const T cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
  for (int e = 0; e < 6; ++e) {
    const int row = rows[e], col = cols[e];
    T s = T(0);
    for (int k = 0; k < 3; ++k) s += RI[row + 3 * k] * R[col + 3 * k];
    I.J[e] = s + (e < 3 ? m * cc : T(0)) - I.h[row] * c[col];
  }
}

// B's 3 x 3 block T (column-major; see top) for a body of inertia I moving with v, whose momentum
// I v = [k; l] is given.
template <class T>
KNOT_HD void b_block(const Inertia<T>& I, const T* v, const T* k, T* Tm) {
  const T* w = v;
  const T* vl = v + 3;
  const T* J = I.J;
  // Columns of J (symmetric): J(:, 0) = (J0, J3, J4), J(:, 1) = (J3, J1, J5), J(:, 2) = (J4, J5, J2).
  const T J0[3] = {J[0], J[3], J[4]}, J1[3] = {J[3], J[1], J[5]}, J2[3] = {J[4], J[5], J[2]};
  // P = J [w]x, column c = J (w x e_c); J [w]x - [w]x J = P + P' since [w]x J = -(J [w]x)'.
  T P[9];
  for (int r = 0; r < 3; ++r) {
    P[r] = w[2] * J1[r] - w[1] * J2[r];
    P[r + 3] = w[0] * J2[r] - w[2] * J0[r];
    P[r + 6] = w[1] * J0[r] - w[0] * J1[r];
  }
  const T hv = T(2) * dot3(I.h, vl);
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < 3; ++r) Tm[r + 3 * c] = P[r + 3 * c] + P[c + 3 * r] + vl[r] * I.h[c] + I.h[r] * vl[c];
  for (int d = 0; d < 3; ++d) Tm[d + 3 * d] -= hv;
  // + [k]x
  Tm[1] += k[2];
  Tm[2] -= k[1];
  Tm[3] -= k[2];
  Tm[5] += k[0];
  Tm[6] += k[1];
  Tm[7] -= k[0];
}

// out = [Tm y; 2 l x y] for a 3-vector y: B times [y; 0] (B's right half is zero).
template <class T>
KNOT_HD void b_mul(const T* Tm, const T* l, const T* y, T* out) {
  T lxy[3];
  cross3(l, y, lxy);
  for (int r = 0; r < 3; ++r) {
    out[r] = Tm[r] * y[0] + Tm[r + 3] * y[1] + Tm[r + 6] * y[2];
    out[3 + r] = T(2) * lxy[r];
  }
}

// True when body j is i or an ancestor of i.
KNOT_HD bool above(const RobotData& r, int j, int i) { return ((r.ancestors[i] >> j) & 1u) != 0; }

// The body inertias at the pose of the last forward_kinematics, computed once per pose.
template <class T>
KNOT_HD void update_inertias(const RobotData& r, Workspace<T>& w) {
  if (w.inertia_current) return;
  for (int i = 0; i < r.n; ++i) body_inertia(r, i, w, w.I[i]);
  w.inertia_current = true;
}

// The sweeps shared by every routine; forward_kinematics must have run. qdd may be null (zero).
// Writes tau (if non-null), M (if non-null) and, when kDerivatives, dtau/dq and dtau/dqd. M alone
// (tau null, no derivatives) needs no velocities or forces: the composite rigid body algorithm.
template <bool kDerivatives, class T>
KNOT_HD void rnea_sweeps(const RobotData& r, const T* qd, const T* qdd, T* tau, T* M, int ldm, T* dq, T* dqd,
                         int ldd, Workspace<T>& w) {
  const int n = r.n;
  const bool forces = kDerivatives || tau != nullptr;
  update_inertias(r, w);
  const T a0[6] = {T(0), T(0), T(0), -T(r.gravity[0]), -T(r.gravity[1]), -T(r.gravity[2])};
  const T zero6[6] = {T(0), T(0), T(0), T(0), T(0), T(0)};
  if (forces) {
    for (int i = 0; i < n; ++i) {
      const int p = r.parent[i];
      const T* vp = p < 0 ? zero6 : w.v[p];
      const T* ap = p < 0 ? a0 : w.a[p];
      const T* S = w.S[i];
      const T qdd_i = qdd != nullptr ? qdd[i] : T(0);
      for (int k = 0; k < 6; ++k) w.v[i][k] = vp[k] + S[k] * qd[i];
      T vxS[6];
      crm(w.v[i], S, vxS);
      for (int k = 0; k < 6; ++k) w.a[i][k] = ap[k] + S[k] * qdd_i + vxS[k] * qd[i];
      if constexpr (kDerivatives) {
        crm(S, vp, w.u[i]);
        T t0[6], t1[6];
        crm(S, ap, t0);
        crm(w.u[i], vp, t1);
        for (int k = 0; k < 6; ++k) w.e[i][k] = t1[k] - t0[k];
      }
    }
  }

  for (int i = n - 1; i >= 0; --i) {
    const Inertia<T>& I = w.I[i];
    const T* S = w.S[i];
    T* F = w.F[i];
    Inertia<T>& IC = w.IC[i];
    IC = I;
    if (forces) {
      T h[6], Ia[6], vxh[6];
      inertia_mul(I, w.v[i], h);
      inertia_mul(I, w.a[i], Ia);
      crf(w.v[i], h, vxh);
      for (int k = 0; k < 6; ++k) F[k] = Ia[k] + vxh[k];
      if constexpr (kDerivatives) {
        b_block(I, w.v[i], h, w.BT[i]);
        for (int k = 0; k < 3; ++k) w.Bl[i][k] = h[3 + k];
      }
    }
    // The children's subtrees (numbered after i, so already summed).
    for (int c = i + 1; c < n; ++c) {
      if (r.parent[c] != i) continue;
      inertia_add(IC, w.IC[c]);
      if (forces)
        for (int k = 0; k < 6; ++k) F[k] += w.F[c][k];
      if constexpr (kDerivatives) {
        for (int k = 0; k < 9; ++k) w.BT[i][k] += w.BT[c][k];
        for (int k = 0; k < 3; ++k) w.Bl[i][k] += w.Bl[c][k];
      }
    }
    if (tau != nullptr) tau[i] = dot6(S, F);
    inertia_mul(IC, S, w.alpha[i]);
    if constexpr (kDerivatives) {
      // beta = BC' S = [T' Sa + 2 Sl x l; 0].
      const T* BT = w.BT[i];
      const T* l = w.Bl[i];
      T Sxl[3];
      cross3(S + 3, l, Sxl);
      for (int c = 0; c < 3; ++c) w.beta[i][c] = dot3(BT + 3 * c, S) + T(2) * Sxl[c];
      T SF[6], ICe[6], BCu[6], BCS[6], ICu[6];
      crf(S, F, SF);
      inertia_mul(IC, w.e[i], ICe);
      b_mul(BT, l, w.u[i], BCu);
      b_mul(BT, l, S, BCS);
      inertia_mul(IC, w.u[i], ICu);
      for (int k = 0; k < 6; ++k) {
        w.gamma[i][k] = SF[k] + ICe[k] + BCu[k];
        w.delta[i][k] = -BCS[k] - T(2) * ICu[k];
      }
    }
  }

  if (M != nullptr) {
    // M_ij = M_ji = S_j' IC_i S_i for j <= i, along the path to the base; 0 across branches.
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) M[i + j * ldm] = T(0);
    for (int i = 0; i < n; ++i)
      for (int j = i; j >= 0; j = r.parent[j]) {
        const T mij = dot6(w.alpha[i], w.S[j]);
        M[i + j * ldm] = mij;
        M[j + i * ldm] = mij;
      }
  }
  if constexpr (kDerivatives)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const bool j_above = above(r, j, i), j_below = !j_above && above(r, i, j);
        if (j_above) {
          dq[i + j * ldd] = dot6(w.alpha[i], w.e[j]) + dot3(w.beta[i], w.u[j]);
          dqd[i + j * ldd] = -dot3(w.beta[i], w.S[j]) - T(2) * dot6(w.alpha[i], w.u[j]);
        } else if (j_below) {
          dq[i + j * ldd] = dot6(w.S[i], w.gamma[j]);
          dqd[i + j * ldd] = dot6(w.S[i], w.delta[j]);
        } else {
          dq[i + j * ldd] = T(0);
          dqd[i + j * ldd] = T(0);
        }
      }
}

// Plain floating-point scalars take linalg's kernels; any other scalar (a dual number carrying
// derivatives: the manipulator's second order) takes the textbook loops below, which need only
// +, -, *, /, sqrt and comparisons on the value.
template <class T>
inline constexpr bool kLinalgScalar = std::is_floating_point_v<T>;

// Factors M, held in w.L, in place; 0 on success, else the failing pivot + 1.
template <class T>
KNOT_HD int factor_mass(int n, Workspace<T>& w) {
  if constexpr (kLinalgScalar<T>) {
    linalg::SerialGroup g;
    return linalg::potrf(g, n, w.L, n);
  } else {
    // Lower Cholesky by columns, L(i, j) at i + j n; the upper triangle is not read.
    using std::sqrt;
    T* L = w.L;
    for (int j = 0; j < n; ++j) {
      T d = L[j + j * n];
      for (int k = 0; k < j; ++k) d -= L[j + k * n] * L[j + k * n];
      if (!(d > T(0))) return j + 1;  // also catches NaN
      const T s = sqrt(d);
      L[j + j * n] = s;
      for (int i = j + 1; i < n; ++i) {
        T t = L[i + j * n];
        for (int k = 0; k < j; ++k) t -= L[i + k * n] * L[j + k * n];
        L[i + j * n] = t / s;
      }
    }
    return 0;
  }
}

// x <- M^-1 x with the factor in w.L.
template <class T>
KNOT_HD void solve_mass(int n, Workspace<T>& w, T* x) {
  if constexpr (kLinalgScalar<T>) {
    linalg::SerialGroup g;
    linalg::trsv<linalg::Uplo::Lower, linalg::Trans::No>(g, n, w.L, n, x);
    linalg::trsv<linalg::Uplo::Lower, linalg::Trans::Yes>(g, n, w.L, n, x);
  } else {
    const T* L = w.L;
    for (int i = 0; i < n; ++i) {  // L y = x
      T t = x[i];
      for (int k = 0; k < i; ++k) t -= L[i + k * n] * x[k];
      x[i] = t / L[i + i * n];
    }
    for (int i = n - 1; i >= 0; --i) {  // L' x = y
      T t = x[i];
      for (int k = i + 1; k < n; ++k) t -= L[k + i * n] * x[k];
      x[i] = t / L[i + i * n];
    }
  }
}

// w.Minv = M^-1 = L^-T L^-1 from the factor in w.L, in place: L^-1 in the lower triangle, then the
// upper triangle, then the diagonal, then the mirror; M^-1(i, j) and M^-1(j, i) are one number.
template <class T>
KNOT_HD void invert_mass(int n, Workspace<T>& w) {
  const T* L = w.L;
  T* X = w.Minv;  // X = L^-1 in the lower triangle (ld n) first
  for (int j = 0; j < n; ++j) {
    X[j + j * n] = T(1) / L[j + j * n];
    for (int i = j + 1; i < n; ++i) {
      T s = T(0);
      for (int k = j; k < i; ++k) s += L[i + k * n] * X[k + j * n];
      X[i + j * n] = -s / L[i + i * n];
    }
  }
  // M^-1(j, i) = sum_{k >= i} X(k, j) X(k, i) for i > j reads only X's lower triangle; the diagonal
  // entry i reads column i alone, so each is written after its last use.
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i) {
      T s = T(0);
      for (int k = i; k < n; ++k) s += X[k + i * n] * X[k + j * n];
      X[j + i * n] = s;
    }
  for (int i = 0; i < n; ++i) {
    T s = T(0);
    for (int k = i; k < n; ++k) s += X[k + i * n] * X[k + i * n];
    X[i + i * n] = s;
  }
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i) X[i + j * n] = X[j + i * n];
}

// out = -M^-1 D (n x n; D ld n, out ld ldo) with w.Minv; column by column, so the inner loop runs
// down contiguous columns of M^-1.
template <class T>
KNOT_HD void neg_mass_product(int n, const Workspace<T>& w, const T* D, T* out, int ldo) {
  const T* Mi = w.Minv;
  for (int j = 0; j < n; ++j) {
    T col[kMaxJoints];
    const T* d = D + j * n;
    for (int i = 0; i < n; ++i) col[i] = -Mi[i] * d[0];
    for (int k = 1; k < n; ++k)
      for (int i = 0; i < n; ++i) col[i] -= Mi[i + k * n] * d[k];
    for (int i = 0; i < n; ++i) out[i + j * ldo] = col[i];
  }
}

// neg_mass_product for two matrices at once, each column as that function forms it (the same bits):
// one product's sum runs n dependent steps down a column, two side by side give the core two chains.
template <class T>
KNOT_HD void neg_mass_products(int n, const Workspace<T>& w, const T* D1, const T* D2, T* out1, T* out2, int ldo) {
  const T* Mi = w.Minv;
  for (int j = 0; j < n; ++j) {
    T c1[kMaxJoints], c2[kMaxJoints];
    const T* d1 = D1 + j * n;
    const T* d2 = D2 + j * n;
    for (int i = 0; i < n; ++i) {
      c1[i] = -Mi[i] * d1[0];
      c2[i] = -Mi[i] * d2[0];
    }
    for (int k = 1; k < n; ++k)
      for (int i = 0; i < n; ++i) {
        const T m = Mi[i + k * n];
        c1[i] -= m * d1[k];
        c2[i] -= m * d2[k];
      }
    for (int i = 0; i < n; ++i) {
      out1[i + j * ldo] = c1[i];
      out2[i + j * ldo] = c2[i];
    }
  }
}

// --- The mass matrix in joint-local frames (composite rigid body, Featherstone's CRBA) ---
// Body i's frame in its parent's: x_parent = E_i x_i + o_i, with
//   revolute   E_i = joint_R Rot(axis, q_i),  o_i = joint_p
//   prismatic  E_i = joint_R,                 o_i = joint_p + joint_R axis q_i
// and, in body i's own frame, S_i = [axis; 0] (revolute: Rot(axis, q) axis = axis) or [0; axis].
// Composite inertias are summed leaves first, each moved one joint into its parent's frame
// (IC_p += X_i' IC_i X_i); F = IC_i S_i is walked up the path to the base one joint at a time,
// f <- X_j^* f = [E_j n + o_j x E_j fl; E_j fl], and M_ij = S_j' f in frame j. No world pose is
// formed, and for a z axis S_i' picks one entry and IC_i S_i is a column of IC_i.

// E_i (column-major) and o_i, from q_i.
template <class T>
KNOT_HD void joint_transform(const RobotData& r, int i, const T& qi, T* E, T* o) {
  using std::cos;
  using std::sin;
  using C = Const<T>;
  const double* JR = r.joint_R[i];
  const double* a = r.axis[i];
  if (r.type[i] == JointType::Prismatic) {
    for (int k = 0; k < 9; ++k) E[k] = T(C(JR[k]));
    for (int k = 0; k < 3; ++k)
      o[k] = C(r.joint_p[i][k]) + (C(JR[k]) * C(a[0]) + C(JR[k + 3]) * C(a[1]) + C(JR[k + 6]) * C(a[2])) * qi;
    return;
  }
  for (int k = 0; k < 3; ++k) o[k] = T(C(r.joint_p[i][k]));
  const T s = sin(qi), c = cos(qi);
  if (a[0] == 0.0 && a[1] == 0.0 && a[2] == 1.0) {
    // Rot_z(q) = [[c, -s, 0], [s, c, 0], [0, 0, 1]]: two columns of joint_R turned, the third kept.
    for (int k = 0; k < 3; ++k) {
      const C x = C(JR[k]), y = C(JR[k + 3]);
      E[k] = c * x + s * y;
      E[k + 3] = c * y - s * x;
      E[k + 6] = T(C(JR[k + 6]));
    }
    return;
  }
  // Rodrigues on the right, as in forward_kinematics: joint_R Rot = c joint_R + s [aw]x joint_R +
  // (1 - c) aw a', aw = joint_R a.
  const C ax[3] = {C(a[0]), C(a[1]), C(a[2])};
  C aw[3];
  for (int k = 0; k < 3; ++k) aw[k] = C(JR[k]) * ax[0] + C(JR[k + 3]) * ax[1] + C(JR[k + 6]) * ax[2];
  const T c1 = T(1) - c;
  for (int col = 0; col < 3; ++col) {
    const C Rc[3] = {C(JR[3 * col]), C(JR[3 * col + 1]), C(JR[3 * col + 2])};
    C x[3];
    cross3(aw, Rc, x);
    for (int row = 0; row < 3; ++row) E[row + 3 * col] = c * Rc[row] + s * x[row] + c1 * aw[row] * ax[col];
  }
}

// Body i's own spatial inertia about its frame's origin, in its frame: h = m c and
// J = Ib + m (c'c 1 - c c') (Ib about the COM). Constant in q.
template <class T>
KNOT_HD void local_inertia(const RobotData& r, int i, Inertia<T>& I) {
  using C = Const<T>;
  const C m = C(r.mass[i]);
  const C c[3] = {C(r.com[i][0]), C(r.com[i][1]), C(r.com[i][2])};
  const C h[3] = {m * c[0], m * c[1], m * c[2]};
  const C mcc = h[0] * c[0] + h[1] * c[1] + h[2] * c[2];
  const double* Ib = r.inertia[i];
  I.m = T(m);
  for (int k = 0; k < 3; ++k) I.h[k] = T(h[k]);
  I.J[0] = T(C(Ib[0]) + mcc - h[0] * c[0]);
  I.J[1] = T(C(Ib[1]) + mcc - h[1] * c[1]);
  I.J[2] = T(C(Ib[2]) + mcc - h[2] * c[2]);
  I.J[3] = T(C(Ib[3]) - h[0] * c[1]);
  I.J[4] = T(C(Ib[4]) - h[0] * c[2]);
  I.J[5] = T(C(Ib[5]) - h[1] * c[2]);
}

// to += X' from X: `from` (in the child's frame) moved into the parent's frame by (E, o) and added.
// h' = E h + m o; J' = E J E' + 2 (o's) 1 - (o s' + s o') with s = E h + (m / 2) o (the parallel-axis
// shift of the rotated inertia to the parent's origin).
template <class T>
KNOT_HD void inertia_to_parent(const T* E, const T* o, const Inertia<T>& from, Inertia<T>& to) {
  const T* J = from.J;
  const T half_m = T(0.5) * from.m;
  T mo[3], s[3];
  for (int k = 0; k < 3; ++k) {
    mo[k] = half_m * o[k];
    s[k] = E[k] * from.h[0] + E[k + 3] * from.h[1] + E[k + 6] * from.h[2] + mo[k];
  }
  const T os2 = T(2) * dot3(o, s);
  // E J E': rows 0 and 1 of P = E J (P[row + 3 k] = P(row, k)), five entries of P E', and the last
  // diagonal entry from the trace, which the rotation keeps (33 products instead of 45).
  T P[6];
  for (int row = 0; row < 2; ++row) {
    P[row] = E[row] * J[0] + E[row + 3] * J[3] + E[row + 6] * J[4];
    P[row + 2] = E[row] * J[3] + E[row + 3] * J[1] + E[row + 6] * J[5];
    P[row + 4] = E[row] * J[4] + E[row + 3] * J[5] + E[row + 6] * J[2];
  }
  T rot[6];  // xx yy zz xy xz yz
  rot[0] = P[0] * E[0] + P[2] * E[3] + P[4] * E[6];
  rot[1] = P[1] * E[1] + P[3] * E[4] + P[5] * E[7];
  rot[2] = (J[0] + J[1] + J[2]) - rot[0] - rot[1];
  rot[3] = P[0] * E[1] + P[2] * E[4] + P[4] * E[7];
  rot[4] = P[0] * E[2] + P[2] * E[5] + P[4] * E[8];
  rot[5] = P[1] * E[2] + P[3] * E[5] + P[5] * E[8];
  constexpr int rows[6] = {0, 1, 2, 0, 0, 1}, cols[6] = {0, 1, 2, 1, 2, 2};
  for (int e = 0; e < 6; ++e) {
    const int row = rows[e], col = cols[e];
    to.J[e] += rot[e] - (o[row] * s[col] + s[row] * o[col]) + (e < 3 ? os2 : T(0));
  }
  to.m += from.m;
  for (int k = 0; k < 3; ++k) to.h[k] += s[k] + mo[k];
}

// f <- X^* f for the joint (E, o): the force f = [n; fl] in the child's frame, about its origin, in
// the parent's frame about the parent's origin: [E n + o x E fl; E fl].
template <class T>
KNOT_HD void force_to_parent(const T* E, const T* o, T* f) {
  T fl[3], n[3], oxf[3];
  for (int k = 0; k < 3; ++k) {
    fl[k] = E[k] * f[3] + E[k + 3] * f[4] + E[k + 6] * f[5];
    n[k] = E[k] * f[0] + E[k + 3] * f[1] + E[k + 6] * f[2];
  }
  cross3(o, fl, oxf);
  for (int k = 0; k < 3; ++k) {
    f[k] = n[k] + oxf[k];
    f[3 + k] = fl[k];
  }
}

// S_j' f for joint j's local S_j.
template <class T>
KNOT_HD T local_s_dot(const RobotData& r, int j, const T* f) {
  using C = Const<T>;
  const double* a = r.axis[j];
  const T* part = r.type[j] == JointType::Revolute ? f : f + 3;
  if (a[0] == 0.0 && a[1] == 0.0 && a[2] == 1.0) return part[2];
  return part[0] * C(a[0]) + part[1] * C(a[1]) + part[2] * C(a[2]);
}

// S_p' X^* f for the joint (E, o) into body p, without the rest of X^* f (the walk's last step).
template <class T>
KNOT_HD T local_s_dot_to_parent(const RobotData& r, int p, const T* E, const T* o, const T* f) {
  const double* a = r.axis[p];
  if (r.type[p] == JointType::Revolute && a[0] == 0.0 && a[1] == 0.0 && a[2] == 1.0) {
    // (E n + o x E fl)[2] needs rows 0 and 1 of E fl and row 2 of E n.
    const T fl0 = E[0] * f[3] + E[3] * f[4] + E[6] * f[5];
    const T fl1 = E[1] * f[3] + E[4] * f[4] + E[7] * f[5];
    return E[2] * f[0] + E[5] * f[1] + E[8] * f[2] + (o[0] * fl1 - o[1] * fl0);
  }
  T g[6];
  for (int k = 0; k < 6; ++k) g[k] = f[k];
  force_to_parent(E, o, g);
  return local_s_dot(r, p, g);
}

// f = IC S_i for joint i's local S_i: [J a; -h x a] (revolute), [h x a; m a] (prismatic).
template <class T>
KNOT_HD void local_inertia_s(const RobotData& r, int i, const Inertia<T>& IC, T* f) {
  using C = Const<T>;
  const double* a = r.axis[i];
  const bool z = a[0] == 0.0 && a[1] == 0.0 && a[2] == 1.0;
  if (r.type[i] == JointType::Revolute && z) {  // column 2 of IC
    f[0] = IC.J[4];
    f[1] = IC.J[5];
    f[2] = IC.J[2];
    f[3] = -IC.h[1];
    f[4] = IC.h[0];
    f[5] = T(0);
    return;
  }
  const T at[3] = {T(C(a[0])), T(C(a[1])), T(C(a[2]))};
  T hxa[3];
  cross3(IC.h, at, hxa);
  if (r.type[i] == JointType::Revolute) {
    sym3_mul(IC.J, at, f);
    for (int k = 0; k < 3; ++k) f[3 + k] = -hxa[k];
  } else {
    for (int k = 0; k < 3; ++k) {
      f[k] = hxa[k];
      f[3 + k] = IC.m * at[k];
    }
  }
}

}  // namespace detail

// World pose of every body (w.R, w.p) and every joint's motion subspace (w.S) at q.
template <class T>
KNOT_HD void forward_kinematics(const RobotData& r, const T* q, Workspace<T>& w) {
  using std::cos;
  using std::sin;
  w.inertia_current = false;
  for (int i = 0; i < r.n; ++i) {
    const int p = r.parent[i];
    // Joint frame in the world: (Rj, pj) = parent pose * (joint_R, joint_p).
    T Rj[9], pj[3];
    for (int col = 0; col < 3; ++col)
      for (int row = 0; row < 3; ++row) {
        T s = T(0);
        for (int k = 0; k < 3; ++k) {
          const T Rp = p < 0 ? T(row == k ? 1 : 0) : w.R[p][row + 3 * k];
          s += Rp * detail::Const<T>(r.joint_R[i][k + 3 * col]);
        }
        Rj[row + 3 * col] = s;
      }
    for (int row = 0; row < 3; ++row) {
      T s = p < 0 ? T(0) : w.p[p][row];
      for (int k = 0; k < 3; ++k) {
        const T Rp = p < 0 ? T(row == k ? 1 : 0) : w.R[p][row + 3 * k];
        s += Rp * detail::Const<T>(r.joint_p[i][k]);
      }
      pj[row] = s;
    }
    using C = detail::Const<T>;
    const C ax[3] = {C(r.axis[i][0]), C(r.axis[i][1]), C(r.axis[i][2])};
    T aw[3];  // world axis
    for (int row = 0; row < 3; ++row) aw[row] = Rj[row] * ax[0] + Rj[row + 3] * ax[1] + Rj[row + 6] * ax[2];
    T* S = w.S[i];
    if (r.type[i] == JointType::Revolute) {
      // Rodrigues, Rot(a, q) = cos q 1 + sin q [a]x + (1 - cos q) a a' for the unit axis a, applied
      // on the right: Rj [a]x = [aw]x Rj and Rj a = aw, so Rj Rot = cos q Rj + sin q [aw]x Rj +
      // (1 - cos q) aw a', without forming Rot.
      const T s = sin(q[i]), c = cos(q[i]), c1 = T(1) - c;
      for (int col = 0; col < 3; ++col) {
        const T* Rc = Rj + 3 * col;
        T x[3];
        detail::cross3(aw, Rc, x);
        for (int row = 0; row < 3; ++row) w.R[i][row + 3 * col] = c * Rc[row] + s * x[row] + c1 * aw[row] * ax[col];
      }
      for (int k = 0; k < 3; ++k) w.p[i][k] = pj[k];
      for (int k = 0; k < 3; ++k) S[k] = aw[k];
      detail::cross3(pj, aw, S + 3);
    } else {
      for (int k = 0; k < 9; ++k) w.R[i][k] = Rj[k];
      for (int k = 0; k < 3; ++k) w.p[i][k] = pj[k] + aw[k] * q[i];
      for (int k = 0; k < 3; ++k) {
        S[k] = T(0);
        S[3 + k] = aw[k];
      }
    }
  }
}

// World position of the point `offset` (body-frame coordinates) on body `body` (-1: the base, whose
// frame is the world). After forward_kinematics.
template <class T>
KNOT_HD void point_position(const Workspace<T>& w, int body, const T* offset, T* out) {
  if (body < 0) {
    for (int k = 0; k < 3; ++k) out[k] = offset[k];
    return;
  }
  const T* R = w.R[body];
  for (int k = 0; k < 3; ++k) out[k] = w.p[body][k] + R[k] * offset[0] + R[k + 3] * offset[1] + R[k + 6] * offset[2];
}

// Positional Jacobian d(point)/dq (3 x n, column-major, ld ldj) of the world point x fixed on body
// `body` (-1: the base): column j is omega_j x x + v_j for j <= body (j is the body or one of its
// ancestors; S_j = [omega_j; v_j]), zero otherwise. After forward_kinematics.
template <class T>
KNOT_HD void point_jacobian(const RobotData& r, const Workspace<T>& w, int body, const T* x, T* J, int ldj) {
  for (int j = 0; j < r.n; ++j) {
    T* col = J + j * ldj;
    if (body < 0 || !detail::above(r, j, body)) {
      col[0] = col[1] = col[2] = T(0);
      continue;
    }
    detail::cross3(w.S[j], x, col);
    for (int k = 0; k < 3; ++k) col[k] += w.S[j][3 + k];
  }
}

// tau = M(q) qdd + c(q, qd) (n); qdd may be null for zero (tau = c then).
template <class T>
KNOT_HD void rnea(const RobotData& r, const T* q, const T* qd, detail::Opt<const T> qdd, T* tau, Workspace<T>& w) {
  forward_kinematics(r, q, w);
  detail::rnea_sweeps<false>(r, qd, qdd, tau, static_cast<T*>(nullptr), 0, static_cast<T*>(nullptr),
                             static_cast<T*>(nullptr), 0, w);
}

namespace detail {

// The composite rigid body algorithm in joint-local frames (see joint_transform). With world_walk,
// the pairs of a body and a strict ancestor are not walked joint by joint but taken in the base
// frame, M_ij = S_j' F_i with both moved there once per body (a pose product and a force transform
// per body against a force transform per pair; mass_matrix picks the cheaper). Scratch: w.R, w.p
// (local transforms), w.IC (local composites); with world_walk also w.BT, w.Bl (base-frame poses),
// w.S (base-frame S) and w.alpha (base-frame F).
template <class T>
KNOT_HD void crba_local(const RobotData& r, const T* q, T* M, int ldm, Workspace<T>& w, bool world_walk) {
  const int n = r.n;
  w.inertia_current = false;
  for (int i = 0; i < n; ++i) {
    joint_transform(r, i, q[i], w.R[i], w.p[i]);
    local_inertia(r, i, w.IC[i]);
  }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) M[i + j * ldm] = T(0);
  if (world_walk) {
    using C = Const<T>;
    for (int i = 0; i < n; ++i) {  // base-frame pose (Rw, pw) = parent's * (E, o), and S
      const int p = r.parent[i];
      const T* E = w.R[i];
      const T* o = w.p[i];
      T* Rw = w.BT[i];
      T* pw = w.Bl[i];
      if (p < 0) {
        for (int k = 0; k < 9; ++k) Rw[k] = E[k];
        for (int k = 0; k < 3; ++k) pw[k] = o[k];
      } else {
        const T* Rp = w.BT[p];
        for (int col = 0; col < 3; ++col)
          for (int row = 0; row < 3; ++row)
            Rw[row + 3 * col] = Rp[row] * E[3 * col] + Rp[row + 3] * E[3 * col + 1] + Rp[row + 6] * E[3 * col + 2];
        for (int row = 0; row < 3; ++row)
          pw[row] = w.Bl[p][row] + Rp[row] * o[0] + Rp[row + 3] * o[1] + Rp[row + 6] * o[2];
      }
      const double* a = r.axis[i];
      T aw[3];
      for (int k = 0; k < 3; ++k) aw[k] = Rw[k] * C(a[0]) + Rw[k + 3] * C(a[1]) + Rw[k + 6] * C(a[2]);
      T* S = w.S[i];
      if (r.type[i] == JointType::Revolute) {
        for (int k = 0; k < 3; ++k) S[k] = aw[k];
        cross3(pw, aw, S + 3);
      } else {
        for (int k = 0; k < 3; ++k) {
          S[k] = T(0);
          S[3 + k] = aw[k];
        }
      }
    }
  }
  // Leaves first: IC_i is complete once its children (numbered after i) have added into it.
  for (int i = n - 1; i >= 0; --i) {
    T f[6];
    local_inertia_s(r, i, w.IC[i], f);
    M[i + i * ldm] = local_s_dot(r, i, f);
    const int p = r.parent[i];
    if (world_walk && p >= 0) {
      const T* Rw = w.BT[i];
      T* F = w.alpha[i];  // [Rw n + pw x Rw fl; Rw fl]
      for (int k = 0; k < 3; ++k) {
        F[3 + k] = Rw[k] * f[3] + Rw[k + 3] * f[4] + Rw[k + 6] * f[5];
        F[k] = Rw[k] * f[0] + Rw[k + 3] * f[1] + Rw[k + 6] * f[2];
      }
      T pxf[3];
      cross3(w.Bl[i], F + 3, pxf);
      for (int k = 0; k < 3; ++k) F[k] += pxf[k];
      for (int j = p; j >= 0; j = r.parent[j]) {
        const T mij = dot6(F, w.S[j]);
        M[i + j * ldm] = mij;
        M[j + i * ldm] = mij;
      }
    } else {
      for (int j = i; r.parent[j] >= 0; j = r.parent[j]) {
        const int pj = r.parent[j];
        T mij;
        if (r.parent[pj] >= 0) {
          force_to_parent(w.R[j], w.p[j], f);
          mij = local_s_dot(r, pj, f);
        } else {  // pj is the root: only S' X^* f is needed
          mij = local_s_dot_to_parent(r, pj, w.R[j], w.p[j], f);
        }
        M[i + pj * ldm] = mij;
        M[pj + i * ldm] = mij;
      }
    }
    if (p >= 0) inertia_to_parent(w.R[i], w.p[i], w.IC[i], w.IC[p]);
  }
}

// Whether crba_local's base-frame pairs cost less than the joint-by-joint walk: a walk step is about
// 18 products more than a base-frame pair, a body's pose and force transform about 27 + 36 more.
KNOT_HD bool crba_world_walk_pays(const RobotData& r) {
  int depth[kMaxJoints];
  int steps = 0, poses = 0;
  for (int i = 0; i < r.n; ++i) {
    const int p = r.parent[i];
    depth[i] = p < 0 ? 0 : depth[p] + 1;
    if (depth[i] > 1) steps += depth[i] - 1;  // full walk steps (the last one is a projection)
    if (p >= 0) ++poses;
  }
  return 18 * steps > 36 * poses + 27 * r.n;
}

}  // namespace detail

// M(q) (n x n, column-major, ld ldm; both triangles written), by the composite rigid body algorithm
// in joint-local frames (detail::crba_local). It uses scratch of w that forward_kinematics fills,
// so w holds no world kinematics afterwards: run forward_kinematics before point_position or
// point_jacobian.
template <class T>
KNOT_HD void mass_matrix(const RobotData& r, const T* q, T* M, int ldm, Workspace<T>& w) {
  detail::crba_local(r, q, M, ldm, w, detail::crba_world_walk_pays(r));
}

// tau at (q, qd, qdd) together with dtau/dq and dtau/dqd (n x n each, column-major, ld ldd).
// tau may be null. (dtau/dqdd is M.)
template <class T>
KNOT_HD void rnea_derivatives(const RobotData& r, const T* q, const T* qd, const T* qdd, detail::Opt<T> tau,
                              T* dtau_dq, T* dtau_dqd, int ldd, Workspace<T>& w) {
  forward_kinematics(r, q, w);
  detail::rnea_sweeps<true>(r, qd, qdd, tau, static_cast<T*>(nullptr), 0, dtau_dq, dtau_dqd, ldd, w);
}

// qdd = M(q)^-1 (tau - c(q, qd)). Returns 0, or j + 1 when the Cholesky factorization of M fails at
// column j (M singular or not finite); qdd is then all NaN. Leaves M's factor in w.L and c in w.c.
template <class T>
KNOT_HD int forward_dynamics(const RobotData& r, const T* q, const T* qd, const T* tau, T* qdd, Workspace<T>& w) {
  const int n = r.n;
  forward_kinematics(r, q, w);
  detail::rnea_sweeps<false>(r, qd, static_cast<const T*>(nullptr), w.c, w.L, n, static_cast<T*>(nullptr),
                             static_cast<T*>(nullptr), 0, w);
  const int fail = detail::factor_mass(n, w);
  if (fail != 0) {
    for (int i = 0; i < n; ++i) qdd[i] = T(NAN);
    return fail;
  }
  for (int i = 0; i < n; ++i) qdd[i] = tau[i] - w.c[i];
  detail::solve_mass(n, w, qdd);
  return 0;
}

// Forward dynamics and its derivatives: qdd, dqdd/dq = -M^-1 dtau/dq, dqdd/dqd = -M^-1 dtau/dqd and
// dqdd/dtau = M^-1 (n x n each, column-major, ld ldd; dtau/dq and dtau/dqd taken at the computed
// qdd). Any matrix pointer may be null. Returns forward_dynamics' status; on failure every output
// is NaN.
template <class T>
KNOT_HD int forward_dynamics_derivatives(const RobotData& r, const T* q, const T* qd, const T* tau, T* qdd,
                                         detail::Opt<T> dqdd_dq, detail::Opt<T> dqdd_dqd, detail::Opt<T> dqdd_dtau,
                                         int ldd, Workspace<T>& w) {
  const int n = r.n;
  const int fail = forward_dynamics(r, q, qd, tau, qdd, w);
  if (fail != 0) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        if (dqdd_dq != nullptr) dqdd_dq[i + j * ldd] = T(NAN);
        if (dqdd_dqd != nullptr) dqdd_dqd[i + j * ldd] = T(NAN);
        if (dqdd_dtau != nullptr) dqdd_dtau[i + j * ldd] = T(NAN);
      }
    return fail;
  }
  // One M^-1 and two products, in place of a pair of triangular solves per column.
  if (dqdd_dq != nullptr || dqdd_dqd != nullptr || dqdd_dtau != nullptr) detail::invert_mass(n, w);
  if (dqdd_dq != nullptr || dqdd_dqd != nullptr) {
    // These sweeps write no mass matrix, so the factor in w.L survives them.
    detail::rnea_sweeps<true>(r, qd, qdd, static_cast<T*>(nullptr), static_cast<T*>(nullptr), 0, w.dq, w.dqd, n,
                              w);
    if (dqdd_dq != nullptr && dqdd_dqd != nullptr) {
      detail::neg_mass_products(n, w, w.dq, w.dqd, dqdd_dq, dqdd_dqd, ldd);
    } else {
      if (dqdd_dq != nullptr) detail::neg_mass_product(n, w, w.dq, dqdd_dq, ldd);
      if (dqdd_dqd != nullptr) detail::neg_mass_product(n, w, w.dqd, dqdd_dqd, ldd);
    }
  }
  if (dqdd_dtau != nullptr)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) dqdd_dtau[i + j * ldd] = w.Minv[i + j * n];
  return 0;
}

// The state-space form x = [q; qd], f = [qd; qdd] and its Jacobians (fx nx x nx, fu nx x n,
// column-major, nx = 2n): Manipulator::dynamics_jacobian and the device path's model_jac on any
// scalar. Returns forward_dynamics_derivatives' status.
template <class T>
KNOT_HD int state_jacobian(const RobotData& r, const T* x, const T* u, T* f, T* fx, T* fu, Workspace<T>& w) {
  const int n = r.n, nx = 2 * n;
  for (int i = 0; i < n; ++i) f[i] = x[n + i];
  for (int k = 0; k < nx * nx; ++k) fx[k] = T(0.0);
  for (int k = 0; k < nx * n; ++k) fu[k] = T(0.0);
  for (int i = 0; i < n; ++i) fx[i + (n + i) * nx] = T(1.0);
  // The lower blocks in place: dqdd/dq at rows n.., columns 0..; dqdd/dqd at columns n...
  return forward_dynamics_derivatives(r, x, x + n, u, f + n, fx + n, fx + n + n * nx, fu + n, nx, w);
}

// g = the gradient of mu' qdd(q, qd, tau) over (q, qd, tau) (3n; mu a constant n-vector):
//   g = [-(dtau/dq)' nu; -(dtau/dqd)' nu; nu],   nu = M^-1 mu,   dtau/d. taken at qdd,
// because dqdd/d(q, qd) = -M^-1 dtau/d(q, qd) and dqdd/dtau = M^-1. One solve with mu in place of
// forward_dynamics_derivatives' M^-1 and its two n x n products: on dual numbers this is the
// contracted row lambda' d[A | B] a step Hessian needs, at a fraction of the full Jacobian's work.
// Returns forward_dynamics' status; on failure g is NaN.
template <class T>
KNOT_HD int acceleration_gradient(const RobotData& r, const T* q, const T* qd, const T* tau, const double* mu, T* g,
                                  Workspace<T>& w) {
  const int n = r.n;
  T qdd[kMaxJoints];
  const int fail = forward_dynamics(r, q, qd, tau, qdd, w);
  if (fail != 0) {
    for (int i = 0; i < 3 * n; ++i) g[i] = T(NAN);
    return fail;
  }
  T* nu = g + 2 * n;
  for (int i = 0; i < n; ++i) nu[i] = T(mu[i]);
  detail::solve_mass(n, w, nu);
  detail::rnea_sweeps<true>(r, qd, qdd, static_cast<T*>(nullptr), static_cast<T*>(nullptr), 0, w.dq, w.dqd, n, w);
  for (int j = 0; j < n; ++j) {
    T sq = -w.dq[j * n] * nu[0], sqd = -w.dqd[j * n] * nu[0];
    for (int i = 1; i < n; ++i) {
      sq -= w.dq[i + j * n] * nu[i];
      sqd -= w.dqd[i + j * n] * nu[i];
    }
    g[j] = sq;
    g[n + j] = sqd;
  }
  return 0;
}

}  // namespace knot::problems::robot

// --- linearize: the SQP's LQ subproblem at the iterate (x, u), per knot, on an execution group ---
//
// For every knot k (the group's strided loop; knot k written by member k mod g.size() alone):
//   Q_k, q_k (and R_k, S_k, r_k for k < N)  = 0, then each cost term's gradient and Gauss-Newton
//                                             Hessian (knot_cost); knot_costs[k] = the knot's cost
//   A_k, B_k, c_k = F(x_k, u_k) - x_{k+1}     (step_jacobian; k < N)
//   the inequality and equality rows of knot k and their Jacobian rows (knot_rows), at rows
//   offset[k].. of ineq_value / ineq_jac (row-major, width nx + nu) and eq_value / eq_jac
//   x_init = x0 - x_0                         (with knot 0)
// as Solver::Impl::linearize (sqp_linearize.cpp) writes them before it scales the objective: no
// objective scaling here, the driver scales. Ends on a barrier.
//
// Returns true when every value written is finite; every member returns the same answer (the
// members read the N + 1 knot costs after the barrier, and a knot whose outputs are not all finite
// stores NaN as its cost).
//
// With `hessian` (the exact Hessian; null: Gauss-Newton) each knot's Q_k, R_k, S_k then take the
// Lagrangian's curvature at the given multipliers (knot_hessian, hessian.hpp), as Solver's linearize
// does under hessian exact.
//
// Operands (LqView's layout, lq.hpp): x (N+1) x nx, u N x nu, both knot after knot; ineq_value
// P.n_ineq, ineq_jac P.n_ineq x (nx + nu), eq_value P.n_eq, eq_jac P.n_eq x (nx + nu) (the slice's
// row_offsets place the problem's rows at their front); knot_costs
// N + 1. work: min(g.size(), N + 1) * linearize_work_size(P, exact) scalars, member r using the
// part at r * linearize_work_size(P, exact), exact = (hessian != null).
#pragma once

#include <cmath>
#include <cstddef>

#include "knot/linalg/config.hpp"
#include "knot/solver/device/hessian.hpp"
#include "knot/solver/device/problem.hpp"
#include "knot/solver/device/views.hpp"

namespace knot::solver::device {

// Whether linearize (and sqp_solve) carry the exact Hessian's code: always on the host; on the GPU
// per kernel instantiation (batch_sqp_kernel's Exact), so the Gauss-Newton kernel compiles none of
// it. Without it a `hessian` argument is ignored: the caller refuses the option first.
#if defined(__CUDACC__)
inline constexpr bool kExactHessianByDefault = false;
#else
inline constexpr bool kExactHessianByDefault = true;
#endif

// The multipliers the exact Hessian weighs the curvature with (the iterate's, each times `scale`).
template <class T>
struct HessianInputs {
  const T *lambda, *z, *y;
  T scale;
};

// Scalars T of one member's scratch (with the exact Hessian's when `exact`).
template <class T = double>
KNOT_HD constexpr std::size_t linearize_work_size(const BatchProblem& P, bool exact = false) {
  const std::size_t a = step_work_size<T>(P), b = knot_work_size<T>(P), c = exact ? hessian_work_size<T>(P) : 0;
  const std::size_t ab = a > b ? a : b;
  return std::size_t(P.nx) + (ab > c ? ab : c);
}

template <bool kExact = kExactHessianByDefault, class G, class T>
KNOT_HD_NOINLINE bool linearize(G& g, const BatchProblem& P, const unsigned char* arena, const double* slice, const T* x,
                       const T* u, LqView<T> lq, T* ineq_value, T* ineq_jac, T* eq_value, T* eq_jac, T* knot_costs,
                       T* work, const HessianInputs<T>* hessian = nullptr) {
  const int nx = P.nx, nu = P.nu, N = P.N, nw = nx + nu;
  const std::size_t nn = std::size_t(nx) * nx, uu = std::size_t(nu) * nu, ux = std::size_t(nu) * nx;
  T* x_next = work + std::size_t(g.rank()) * linearize_work_size<T>(P, hessian != nullptr);
  T* scratch = x_next + nx;
  const RowOffsets ioff = row_offsets(P, slice, ConstraintSet::Inequality);
  const RowOffsets eoff = row_offsets(P, slice, ConstraintSet::Equality);
  for (int k = g.rank(); k <= N; k += g.size()) {
    const bool running = k < N;
    const T* xk = x + std::size_t(k) * nx;
    const T* uk = running ? u + std::size_t(k) * nu : nullptr;
    T* Q = lq.Q_k(k);
    T* q = lq.q_k(k);
    for (std::size_t e = 0; e < nn; ++e) Q[e] = T(0.0);
    for (int i = 0; i < nx; ++i) q[i] = T(0.0);
    T *R = nullptr, *S = nullptr, *r = nullptr;
    if (running) {
      R = lq.R_k(k);
      S = lq.S_k(k);
      r = lq.r_k(k);
      for (std::size_t e = 0; e < uu; ++e) R[e] = T(0.0);
      for (std::size_t e = 0; e < ux; ++e) S[e] = T(0.0);
      for (int i = 0; i < nu; ++i) r[i] = T(0.0);
    }
    const T cost = knot_cost(P, arena, slice, k, xk, uk, q, r, Q, R, S, scratch);
    bool ok = detail::finite(cost);
    for (std::size_t e = 0; e < nn; ++e) ok = ok && detail::finite(Q[e]);
    for (int i = 0; i < nx; ++i) ok = ok && detail::finite(q[i]);
    if (running) {
      for (std::size_t e = 0; e < uu; ++e) ok = ok && detail::finite(R[e]);
      for (std::size_t e = 0; e < ux; ++e) ok = ok && detail::finite(S[e]);
      for (int i = 0; i < nu; ++i) ok = ok && detail::finite(r[i]);
      // step_jacobian reports non-finite results itself.
      ok = step_jacobian(P, arena, xk, uk, x_next, lq.A_k(k), lq.B_k(k), scratch) && ok;
      const T* xn = xk + nx;
      T* c = lq.c_k(k);
      for (int i = 0; i < nx; ++i) {
        c[i] = x_next[i] - xn[i];
        ok = ok && detail::finite(c[i]);
      }
    }
    const int i0 = ioff[k], i1 = ioff[k + 1], e0 = eoff[k], e1 = eoff[k + 1];
    knot_rows(P, arena, slice, ConstraintSet::Inequality, k, xk, uk, ineq_value + i0, ineq_jac + std::size_t(i0) * nw,
              scratch);
    knot_rows(P, arena, slice, ConstraintSet::Equality, k, xk, uk, eq_value + e0, eq_jac + std::size_t(e0) * nw,
              scratch);
    for (int i = i0; i < i1; ++i) ok = ok && detail::finite(ineq_value[i]);
    for (std::size_t e = std::size_t(i0) * nw; e < std::size_t(i1) * nw; ++e) ok = ok && detail::finite(ineq_jac[e]);
    for (int i = e0; i < e1; ++i) ok = ok && detail::finite(eq_value[i]);
    for (std::size_t e = std::size_t(e0) * nw; e < std::size_t(e1) * nw; ++e) ok = ok && detail::finite(eq_jac[e]);
    if constexpr (kExact) {
      if (hessian != nullptr && ok)
        ok = knot_hessian(P, arena, slice, k, xk, uk, running ? hessian->lambda + std::size_t(k + 1) * nx : nullptr,
                          hessian->z + i0, hessian->y + e0, hessian->scale, Q, R, S, scratch);
    }
    if (k == 0)
      for (int i = 0; i < nx; ++i) {
        lq.x_init[i] = T(slice[P.x0 + i]) - x[i];
        ok = ok && detail::finite(lq.x_init[i]);
      }
    knot_costs[k] = ok ? cost : T(NAN);
  }
  g.sync();
  bool all = true;
  for (int k = 0; k <= N; ++k) all = all && detail::finite(knot_costs[k]);
  return all;
}

}  // namespace knot::solver::device

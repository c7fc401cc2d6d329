// --- LDL' of an optimal control problem's full KKT matrix in stage order (banded Bunch-Kaufman) ---
//
//   K z = rhs,   K = [ H  C' ]    H = blkdiag over stages of [Q_k S_k'; S_k R_k] (+ reg_primal I),
//                    [ C  -reg_dual I ]
//
// The QP behind it: minimize sum_k 1/2 [x_k; u_k]' [Q_k S_k'; S_k R_k] [x_k; u_k] + 1/2 x_N' Q_N x_N
// (+ linear terms, which live in the right-hand side) subject to
//   x_0 = x_init                                (row block lambda_0, optional)
//   x_{k+1} = A_k x_k + B_k u_k + c_k           (row block lambda_{k+1}: -A_k x_k - B_k u_k + x_{k+1})
//
// Variable order (stage order; the KKT rows and every vector use it):
//   [lambda_0,] x_0, u_0, lambda_1, x_1, u_1, ..., lambda_{N-1}, x_{N-1}, u_{N-1}, lambda_N, x_N
// With initial_constraint, x_0 is a variable fixed by its own constraint row, +I, with multiplier
// lambda_0 placed before x_0 (so every stage k reads lambda_k, x_k, u_k; a stage is 2nx + nu
// rows). Without it the order starts x_0, u_0, lambda_1, ... and x_0 is free: the caller
// eliminates it or pins it through Q_0. OcpKkt::x(k), u(k), lambda(k) give offsets.
//
// Input (OcpKkt, caller-owned, all column-major, blocks contiguous one after another):
//   Q: N+1 blocks nx x nx, Q_k at Q + k*nx*nx, symmetric, lower triangle read
//   R: N blocks nu x nu,  R_k at R + k*nu*nu, symmetric, lower triangle read
//   S: N blocks nu x nx,  S_k at S + k*nu*nx (the cost term u_k' S_k x_k); null means zero
//   A: N blocks nx x nx,  A_k at A + k*nx*nx;   B: N blocks nx x nu, B_k at B + k*nx*nu
//   reg_primal added to every x/u diagonal entry, -reg_dual on every lambda diagonal entry
//   (the regularizations an inertia-correcting SQP adjusts).
//
// Band: in this order K has half-bandwidth 2nx + nu - 1 (row lambda_{k+1} reaches back to the
// first column of x_k; every other coupling is nearer). kkt_ldlt_factor assembles K in LAPACK
// lower band storage (ldab >= kkt_min_ldab, recommended kkt_ldab = twice the half-bandwidth + 1)
// and runs ldlt.hpp's band core: Bunch-Kaufman with 1x1/2x2 pivots chosen over the whole window,
// an interchange admitted only when it keeps every nonzero inside the window (so the
// factorization stays exact; the fill it causes is held in the window), updates restricted to
// the nonzero rows of the pivot column. The factors are in LAPACK's dsytrf form (ldlt.hpp: the
// band form), which kkt_ldlt_solve applies. Work O(N (2nx + nu) ldab^2) = O(N (nx + nu)^3),
// storage O(N (2nx + nu) ldab): linear in the horizon.
//
// The window is what makes pivoting safe here. The multipliers' diagonal is zero (or -reg_dual),
// so Bunch-Kaufman pairs lambda rows with the x rows they constrain (2x2 pivots, or 1x1 pivots
// after an interchange): an interchange with a row up to one bandwidth ahead brings in a column
// whose nonzeros reach one bandwidth further, hence the default window of twice that. With it,
// on every OCP of the tests (convex and not, 1 <= N <= 64), no choice was restricted and the band
// core took exactly the dense core's pivots. With the least window (kkt_min_ldab) the x_0 rows
// cannot be brought next to lambda_0, Bunch-Kaufman is left with lambda_0's zero diagonal, and
// nzero > 0 (or, with a perturbation, nperturbed > 0) says so.
//
// Why not a block elimination with a dense LDL' per stage block: pivoting confined to a fixed
// block needs every block's Schur complement to be nonsingular, which the KKT matrix does not
// promise (lambda_0's block is zero; with an indefinite Q_k, [M I; I Q_k] can be singular while K
// is not), and fill from a 2x2 pivot that pairs rows of two stages is lost. The banded core
// pivots across stage boundaries, handles the fill exactly inside its window, and counts (in
// LdltStats::nrestricted) the steps where the window, not the data, limited the choice.
//
// Statistics as ldlt.hpp: inertia (npos, nneg, nzero) after perturbation, nperturbed, n2x2. For a
// strict local minimizer with independent constraints, npos == n_primal() and nneg == n_dual().
// Tiny pivots are perturbed (when opts.delta > 0) with + on x/u rows and - on lambda rows
// (opts.row_sign and opts.n_primal are ignored: the structure decides).
//
// Group execution, barriers and bitwise invariance as ldlt.hpp. kkt_assemble_*: one member per
// column, one closing barrier. kkt_ldlt_factor: 1 + 3n barriers (n = d.size()). kkt_ldlt_solve:
// 3n + 1. kkt_multiply: one. Scratch: kkt_ldlt_scratch_size(d, ldab) for the factor, d.size()
// for kkt_ldlt_refine. Bad sizes (N < 0, nx < 1, nu < 0, missing blocks, ldab < kkt_min_ldab)
// throw std::invalid_argument on the host and trap on the device.
#pragma once

#include "knot/linalg/ldlt.hpp"

namespace knot::linalg {

template <class T>
struct OcpKkt {
  int N = 0;                        // horizon: stages 0..N-1 with controls, terminal state x_N
  int nx = 0, nu = 0;               // state and control dimensions (nx >= 1)
  bool initial_constraint = true;   // a lambda_0 row x_0 = x_init (placed before x_0)
  const T* Q = nullptr;             // N+1 blocks nx x nx
  const T* R = nullptr;             // N blocks nu x nu
  const T* S = nullptr;             // N blocks nu x nx, or null
  const T* A = nullptr;             // N blocks nx x nx
  const T* B = nullptr;             // N blocks nx x nu
  T reg_primal = T(0);
  T reg_dual = T(0);

  KNOT_HD constexpr int stage() const { return 2 * nx + nu; }
  KNOT_HD constexpr int lead() const { return initial_constraint ? nx : 0; }
  KNOT_HD constexpr int size() const { return N * stage() + nx + lead(); }
  KNOT_HD constexpr int x(int k) const { return k * stage() + lead(); }
  KNOT_HD constexpr int u(int k) const { return x(k) + nx; }
  KNOT_HD constexpr int lambda(int k) const { return x(k) - nx; }  // k >= 1, or k == 0 with initial_constraint
  KNOT_HD constexpr int n_dual() const { return N * nx + lead(); }
  KNOT_HD constexpr int n_primal() const { return size() - n_dual(); }
  KNOT_HD constexpr bool is_dual(int i) const { return (i + nx - lead()) % stage() < nx; }
  KNOT_HD constexpr int half_bandwidth() const { return 2 * nx + nu - 1; }
};

// The least band storage that holds K, and the recommended one (room for interchanges).
template <class T>
KNOT_HD constexpr int kkt_min_ldab(const OcpKkt<T>& d) {
  return d.half_bandwidth() + 1;
}
template <class T>
KNOT_HD constexpr int kkt_ldab(const OcpKkt<T>& d) {
  return 2 * d.half_bandwidth() + 1;
}
template <class T>
KNOT_HD constexpr int kkt_band_size(const OcpKkt<T>& d, int ldab) {
  return d.size() * ldab;
}
template <class T>
KNOT_HD constexpr int kkt_ldlt_scratch_size(const OcpKkt<T>& d, int ldab) {
  return ldlt_band_scratch_size(d.size(), ldab);
}

namespace detail {

// Sizes that make sense and storage that holds K (a broken precondition: throws / traps).
template <class T>
KNOT_HD void kkt_check(const OcpKkt<T>& d, int ldab) {
  if (d.N < 0 || d.nx < 1 || d.nu < 0) ldlt_fail("kkt_ldlt: needs N >= 0, nx >= 1, nu >= 0");
  if (d.Q == nullptr || (d.N > 0 && (d.A == nullptr || (d.nu > 0 && (d.R == nullptr || d.B == nullptr)))))
    ldlt_fail("kkt_ldlt: missing Q, R, A or B");
  if (ldab < kkt_min_ldab(d)) ldlt_fail("kkt_ldlt: ldab < kkt_min_ldab (the band does not hold K)");
}

template <class T>
KNOT_HD T kkt_sym(const T* M, int m, int a, int b) {  // symmetric M(a,b) from its lower triangle
  return a >= b ? M[a + b * m] : M[b + a * m];
}

// Column j of K below the diagonal: p[i - j] = K(i,j) for j <= i < j + len; zeros elsewhere.
template <class T>
KNOT_HD void kkt_column(const OcpKkt<T>& d, int j, T* p, int len) {
  for (int t = 0; t < len; ++t) p[t] = T(0);
  const int nx = d.nx, nu = d.nu, ns = d.stage();
  const int jj = j + nx - d.lead();  // index in the pattern that starts with lambda_0
  const int k = jj / ns, off = jj - k * ns;
  auto put = [&](int i, T v) {
    if (i - j < len) p[i - j] = v;
  };
  if (off < nx) {  // lambda_k
    put(j, -d.reg_dual);
    put(d.x(k) + off, T(1));
  } else if (off < 2 * nx) {  // x_k
    const int a = off - nx;
    const T* Q = d.Q + static_cast<std::ptrdiff_t>(k) * nx * nx;
    for (int b = a; b < nx; ++b) put(d.x(k) + b, Q[b + a * nx] + (b == a ? d.reg_primal : T(0)));
    if (k < d.N) {
      if (d.S != nullptr) {
        const T* S = d.S + static_cast<std::ptrdiff_t>(k) * nu * nx;
        for (int b = 0; b < nu; ++b) put(d.u(k) + b, S[b + a * nu]);
      }
      const T* A = d.A + static_cast<std::ptrdiff_t>(k) * nx * nx;
      for (int b = 0; b < nx; ++b) put(d.lambda(k + 1) + b, -A[b + a * nx]);
    }
  } else {  // u_k
    const int a = off - 2 * nx;
    const T* R = d.R + static_cast<std::ptrdiff_t>(k) * nu * nu;
    for (int b = a; b < nu; ++b) put(d.u(k) + b, R[b + a * nu] + (b == a ? d.reg_primal : T(0)));
    const T* B = d.B + static_cast<std::ptrdiff_t>(k) * nx * nu;
    for (int b = 0; b < nx; ++b) put(d.lambda(k + 1) + b, -B[b + a * nx]);
  }
}

}  // namespace detail

// K's lower triangle into a dense column-major n x n array (leading dimension ldk); the strict
// upper triangle is not written.
template <class G, class T>
KNOT_HD void kkt_assemble_dense(G& g, const OcpKkt<T>& d, T* K, int ldk) {
  const int n = d.size();
  detail::kkt_check(d, kkt_min_ldab(d));
  if (ldk < n) detail::ldlt_fail("kkt_assemble_dense: ldk < n");
  for (int j = g.rank(); j < n; j += g.size()) detail::kkt_column(d, j, K + j + static_cast<std::ptrdiff_t>(j) * ldk, n - j);
  g.sync();
}

// K into lower band storage: AB[(i-j) + j*ldab] = K(i,j), ldab >= kkt_min_ldab(d).
template <class G, class T>
KNOT_HD void kkt_assemble_band(G& g, const OcpKkt<T>& d, T* AB, int ldab) {
  const int n = d.size();
  detail::kkt_check(d, ldab);
  for (int j = g.rank(); j < n; j += g.size()) {
    const int len = n - j < ldab ? n - j : ldab;
    T* col = AB + static_cast<std::ptrdiff_t>(j) * ldab;
    detail::kkt_column(d, j, col, len);
    for (int t = len; t < ldab; ++t) col[t] = T(0);  // past the last row: defined, never used
  }
  g.sync();
}

// Assembles K into AB (kkt_band_size(d, ldab) entries) and factors it; piv: d.size() ints;
// scratch: kkt_ldlt_scratch_size(d, ldab). Returns the statistics on every member.
template <class G, class T>
KNOT_HD LdltStats kkt_ldlt_factor(G& g, const OcpKkt<T>& d, T* AB, int ldab, int* piv, T* scratch,
                                  const LdltOptions<T>& opts = LdltOptions<T>{}) {
  const int n = d.size();
  detail::kkt_check(d, ldab);
  T* sgn = scratch;
  for (int i = g.rank(); i < n; i += g.size()) sgn[i] = d.is_dual(i) ? T(-1) : T(1);
  kkt_assemble_band(g, d, AB, ldab);
  return detail::ldlt_factor_core<true>(g, n, AB, ldab - 1, ldab, piv, sgn, scratch + n, scratch + n + ldab, opts);
}

// b (d.size() entries, stage order) <- K^-1 b.
template <class G, class T>
KNOT_HD void kkt_ldlt_solve(G& g, const OcpKkt<T>& d, const T* AB, int ldab, const int* piv, T* b) {
  ldlt_band_solve(g, d.size(), 1, AB, ldab, piv, b, d.size() > 0 ? d.size() : 1);
}

// y = K z from the OCP data (no matrix); one member per row, ends on a barrier. y must not alias z.
template <class G, class T>
KNOT_HD void kkt_multiply(G& g, const OcpKkt<T>& d, const T* z, T* y) {
  const int n = d.size(), nx = d.nx, nu = d.nu, ns = d.stage();
  for (int i = g.rank(); i < n; i += g.size()) {
    const int ii = i + nx - d.lead();
    const int k = ii / ns, off = ii - k * ns;
    T acc = T(0);
    if (off < nx) {  // lambda_k row a: -reg lambda + x_k - A_{k-1} x_{k-1} - B_{k-1} u_{k-1}
      const int a = off;
      acc = -d.reg_dual * z[i] + z[d.x(k) + a];
      if (k >= 1) {
        const T* A = d.A + static_cast<std::ptrdiff_t>(k - 1) * nx * nx;
        const T* B = d.B + static_cast<std::ptrdiff_t>(k - 1) * nx * nu;
        for (int b = 0; b < nx; ++b) acc -= A[a + b * nx] * z[d.x(k - 1) + b];
        for (int b = 0; b < nu; ++b) acc -= B[a + b * nx] * z[d.u(k - 1) + b];
      }
    } else if (off < 2 * nx) {  // x_k row a: lambda_k + Q_k x_k + S_k' u_k - A_k' lambda_{k+1}
      const int a = off - nx;
      if (k >= 1 || d.initial_constraint) acc = z[d.lambda(k) + a];
      const T* Q = d.Q + static_cast<std::ptrdiff_t>(k) * nx * nx;
      for (int b = 0; b < nx; ++b) acc += detail::kkt_sym(Q, nx, a, b) * z[d.x(k) + b];
      acc += d.reg_primal * z[i];
      if (k < d.N) {
        if (d.S != nullptr) {
          const T* S = d.S + static_cast<std::ptrdiff_t>(k) * nu * nx;
          for (int b = 0; b < nu; ++b) acc += S[b + a * nu] * z[d.u(k) + b];
        }
        const T* A = d.A + static_cast<std::ptrdiff_t>(k) * nx * nx;
        for (int b = 0; b < nx; ++b) acc -= A[b + a * nx] * z[d.lambda(k + 1) + b];
      }
    } else {  // u_k row a: S_k x_k + R_k u_k - B_k' lambda_{k+1}
      const int a = off - 2 * nx;
      if (d.S != nullptr) {
        const T* S = d.S + static_cast<std::ptrdiff_t>(k) * nu * nx;
        for (int b = 0; b < nx; ++b) acc += S[a + b * nu] * z[d.x(k) + b];
      }
      const T* R = d.R + static_cast<std::ptrdiff_t>(k) * nu * nu;
      for (int b = 0; b < nu; ++b) acc += detail::kkt_sym(R, nu, a, b) * z[d.u(k) + b];
      acc += d.reg_primal * z[i];
      const T* B = d.B + static_cast<std::ptrdiff_t>(k) * nx * nu;
      for (int b = 0; b < nx; ++b) acc -= B[b + a * nx] * z[d.lambda(k + 1) + b];
    }
    y[i] = acc;
  }
  g.sync();
}

// Iterative refinement of x for K x = b with the factors of kkt_ldlt_factor: x <- x + K_f^-1
// (b - K x), iters times, the residual formed from the OCP data (no copy of K needed). Scratch:
// d.size() entries.
template <class G, class T>
KNOT_HD void kkt_ldlt_refine(G& g, const OcpKkt<T>& d, const T* AB, int ldab, const int* piv, const T* b, T* x,
                             int iters, T* scratch) {
  const int n = d.size();
  for (int it = 0; it < iters; ++it) {
    kkt_multiply(g, d, x, scratch);
    for (int i = g.rank(); i < n; i += g.size()) scratch[i] = b[i] - scratch[i];
    g.sync();
    kkt_ldlt_solve(g, d, AB, ldab, piv, scratch);
    for (int i = g.rank(); i < n; i += g.size()) x[i] += scratch[i];
    g.sync();
  }
}

}  // namespace knot::linalg

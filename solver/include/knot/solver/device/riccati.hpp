// --- The LQ step on an execution group: Riccati recursion with the S_k cross terms ---
//
// The device path's LQ solve (docs/batch.md, "The LQ step on the device"): the classical recursion
// of LqSolver's Riccati backend (solver/src/lq_riccati.cpp) on the views of views.hpp, written once
// against a group (SerialGroup, ThreadedGroup, a CUDA BlockGroup). The knots run one after the other;
// the work of each knot is spread over the group by linalg's dense primitives.
//
// Backward, from P_N = Q_N, p_N = q_N (P = P_{k+1}, p = p_{k+1}):
//   T   = A'P,        W  = P B,        pc = P c + p
//   Hxx = Q + T A,    Hxu = S' + T B,  Huu = R + B'W,   hx = q + A' pc,   hu = r + B' pc
//   Huu = L L'                         (Cholesky; a failing pivot at stage k is NotPositiveDefinite)
//   Y   = Hxu L^-T,   kt = L^-1 hu
//   P_k = Hxx - Y Y'  (the lower triangle, mirrored: P_k exactly symmetric),   p_k = hx - Y kt
// Forward, from x_0 = x_init:
//   u_k = -L^-T (Y' x_k + kt),   x_{k+1} = A x_k + B u_k + c,   lambda_k = P_k x_k + p_k
// lq.hpp has the problem and the multiplier convention; lq_riccati.cpp why u_k and lambda_k are these.
//
// Operands: `lq` and `out` are one problem's LqView and StepView (their sizes equal); `scratch` holds
// riccati_scratch_size<T>(nx, nu, N) scalars and belongs to one problem: riccati_solve leaves the
// factorization (P_k, L_k, Y_k) there for riccati_resolve. Neither allocates.
//
// Group contract (group.hpp): every member calls with the same arguments; each output element has
// one writer, computed in an order that does not depend on the group size, so x, u and lambda are
// bitwise the same for every group (SerialGroup included). Both functions end on a barrier. Every
// decision (a failed pivot, non-finite values) is taken by every member from shared data, so all
// members return the same result and pass the same barriers. Per knot the backward recursion
// passes 4 barriers plus potrf's nu + 1, the forward rollout 3.
//
// Status, as LqSolver(Riccati): NotPositiveDefinite at the first stage k (counting down from N-1)
// whose Huu is not positive definite when the data are finite (`out` is then left as it was),
// NonFinite when they are not, or when x, u or lambda came out non-finite; else Solved.
#pragma once

#include <cstddef>
#include <type_traits>

#include "knot/linalg/dense/gemm.hpp"
#include "knot/linalg/dense/gemv.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/solver/device/views.hpp"

// Profiling builds (KNOT_DEVICE_PROFILE, nvcc): clock cycles of the Riccati step's parts, summed by
// thread 0 of block 0 into riccati_profile_cycles (the SQP kernel reports them in DeviceResult).
#if defined(KNOT_DEVICE_PROFILE) && defined(__CUDACC__)
namespace knot::solver::device::riccati_detail {
static __device__ long long riccati_profile_cycles[16];
struct ProfileClock {
  long long t = 0;
  __device__ ProfileClock() { t = clock64(); }
  __device__ void lap(int i) {
    const long long n = clock64();
    if (threadIdx.x == 0 && blockIdx.x == 0) riccati_profile_cycles[i] += n - t;
    t = n;
  }
};
}  // namespace knot::solver::device::riccati_detail
#endif
#if defined(KNOT_DEVICE_PROFILE) && defined(__CUDA_ARCH__)
#define KNOT_RICCATI_CLOCK ::knot::solver::device::riccati_detail::ProfileClock knot_riccati_clock_
#define KNOT_RICCATI_LAP(i) knot_riccati_clock_.lap(i)
#else
#define KNOT_RICCATI_CLOCK
#define KNOT_RICCATI_LAP(i)
#endif

namespace knot::solver::device {

namespace riccati_detail {

// The scratch, in this order (scalars):
//   P      N+1 blocks nx x nx   the cost-to-go Hessians (both triangles)
//   p      N+1 vectors nx       their gradients
//   L      N blocks nu x nu     Cholesky factors of Huu (lower)
//   Y      N blocks nx x nu     Hxu L^-T
//   kt     N vectors nu         L^-1 hu
//   T      nx x nx, W nx x nu, pc nx     one knot's temporaries
//   flag   N+1                  per-knot finiteness sums (0 when finite, NaN otherwise)
//   state  2                    the last riccati_solve's status and failed stage (riccati_resolve reads them)
template <class T>
struct Work {
  T *P, *p, *L, *Y, *kt, *T_, *W, *pc, *flag, *state;

  KNOT_HD static constexpr std::size_t size(int nx, int nu, int N) {
    const std::size_t n = std::size_t(N), x = std::size_t(nx), u = std::size_t(nu);
    return (n + 1) * x * x + (n + 1) * x + n * u * u + n * x * u + n * u + x * x + x * u + x + (n + 1) + 2;
  }
  KNOT_HD static Work carve(int nx, int nu, int N, T* base) {
    const std::size_t n = std::size_t(N), x = std::size_t(nx), u = std::size_t(nu);
    Work w;
    w.P = base;
    w.p = w.P + (n + 1) * x * x;
    w.L = w.p + (n + 1) * x;
    w.Y = w.L + n * u * u;
    w.kt = w.Y + n * x * u;
    w.T_ = w.kt + n * u;
    w.W = w.T_ + x * x;
    w.pc = w.W + x * u;
    w.flag = w.pc + x;
    w.state = w.flag + (n + 1);
    return w;
  }
  KNOT_HD T* P_k(int k, int nx) const { return P + std::size_t(k) * nx * nx; }
  KNOT_HD T* p_k(int k, int nx) const { return p + std::size_t(k) * nx; }
  KNOT_HD T* L_k(int k, int nu) const { return L + std::size_t(k) * nu * nu; }
  KNOT_HD T* Y_k(int k, int nx, int nu) const { return Y + std::size_t(k) * nx * nu; }
  KNOT_HD T* kt_k(int k, int nu) const { return kt + std::size_t(k) * nu; }
};

// The group with sync() a no-op: several primitives whose only barrier is their closing one
// (gemm, gemv, trsm), on disjoint outputs and on inputs none of them writes, then one real barrier.
// A SerialGroup stays itself (its sync is already empty, and its fast loop order is kept).
template <class G>
struct Unsynced {
  G* g;
  KNOT_HD int rank() const { return g->rank(); }
  KNOT_HD int size() const { return g->size(); }
  KNOT_HD void sync() const {}
};

template <class G>
KNOT_HD auto unsynced(G& g) {
  if constexpr (linalg::detail::kSerial<G>) {
    return linalg::SerialGroup{};
  } else {
    return Unsynced<G>{&g};
  }
}

// y = y0 + A x (A m x n, column-major, lda m), one member per y_i; the sum in gemv's order (from
// zero, left to right), then y0 added as gemv's beta = 1 would. No barrier; y may not alias y0.
template <class G, class T>
KNOT_HD void mv_plus(G& g, int m, int n, const T* A, const T* x, const T* y0, T* y) {
  for (int i = g.rank(); i < m; i += g.size()) {
    T acc = T(0);
    for (int j = 0; j < n; ++j) acc += A[i + std::size_t(j) * m] * x[j];
    y[i] = acc + y0[i];
  }
}

// dst = src, n scalars, strided. No barrier.
template <class G, class T>
KNOT_HD void copy(G& g, std::size_t n, const T* src, T* dst) {
  for (std::size_t i = std::size_t(g.rank()); i < n; i += std::size_t(g.size())) dst[i] = src[i];
}

// Sum of v - v over n scalars: 0 when all are finite, NaN otherwise (in any order: positive_finite's
// reasoning in dense/types.hpp).
template <class T>
KNOT_HD T nonfinite_sum(const T* v, std::size_t n) {
  T s = T(0);
  for (std::size_t i = 0; i < n; ++i) s += v[i] - v[i];
  return s;
}

// After flag[0..N] were written (by whichever members) and a barrier: every member reads them all
// in the same order, so all agree. Ends on a barrier (the flags may be rewritten afterwards).
template <class G, class T>
KNOT_HD bool flags_finite(G& g, int N, const T* flag) {
  bool ok = true;
  for (int j = 0; j <= N; ++j) ok = ok && flag[j] == T(0);
  g.sync();
  return ok;
}

// Whether every scalar of the LQ data is finite (the failing-pivot path: NotPositiveDefinite needs
// finite data). Knot j's arrays are summed by one member. Ends on a barrier.
template <class G, class T>
KNOT_HD bool data_finite(G& g, const LqView<T>& d, const Work<T>& w) {
  const int nx = d.nx, nu = d.nu, N = d.N;
  const std::size_t xx = std::size_t(nx) * nx, xu = std::size_t(nx) * nu, uu = std::size_t(nu) * nu;
  for (int j = g.rank(); j <= N; j += g.size()) {
    T s = nonfinite_sum(d.Q_k(j), xx) + nonfinite_sum(d.q_k(j), std::size_t(nx));
    if (j < N) {
      s += nonfinite_sum(d.A_k(j), xx) + nonfinite_sum(d.B_k(j), xu) + nonfinite_sum(d.c_k(j), std::size_t(nx)) +
           nonfinite_sum(d.R_k(j), uu) + nonfinite_sum(d.S_k(j), xu) + nonfinite_sum(d.r_k(j), std::size_t(nu));
    } else {
      s += nonfinite_sum(d.x_init, std::size_t(nx));
    }
    w.flag[j] = s;
  }
  g.sync();
  return flags_finite(g, N, w.flag);
}

// Whether x, u and lambda are all finite. Ends on a barrier.
template <class G, class T>
KNOT_HD bool step_finite(G& g, const StepView<T>& s, const Work<T>& w) {
  const int nx = s.nx, nu = s.nu, N = s.N;
  for (int j = g.rank(); j <= N; j += g.size()) {
    T f = nonfinite_sum(s.x_k(j), std::size_t(nx)) + nonfinite_sum(s.lambda_k(j), std::size_t(nx));
    if (j < N) f += nonfinite_sum(s.u_k(j), std::size_t(nu));
    w.flag[j] = f;
  }
  g.sync();
  return flags_finite(g, N, w.flag);
}

// The vector half of knot k's backward step, with the factorization in w: pc = P c + p, p_k and kt_k
// as in the header. Stages and barriers as in riccati_solve's recursion (so the same bits).
template <class G, class T>
KNOT_HD void backward_vectors(G& g, const LqView<T>& d, const Work<T>& w, int k) {
  using linalg::Side, linalg::Trans, linalg::Uplo;
  const int nx = d.nx, nu = d.nu;
  auto u = unsynced(g);
  T* pk = w.p_k(k, nx);
  T* kt = w.kt_k(k, nu);
  mv_plus(u, nx, nx, w.P_k(k + 1, nx), d.c_k(k), w.p_k(k + 1, nx), w.pc);
  copy(u, std::size_t(nx), d.q_k(k), pk);
  copy(u, std::size_t(nu), d.r_k(k), kt);
  g.sync();
  linalg::gemv<Trans::Yes>(u, nx, nx, T(1), d.A_k(k), nx, w.pc, T(1), pk);  // hx
  linalg::gemv<Trans::Yes>(u, nx, nu, T(1), d.B_k(k), nx, w.pc, T(1), kt);  // hu
  g.sync();
  linalg::trsm<Side::Left, Uplo::Lower, Trans::No>(g, nu, 1, T(1), w.L_k(k, nu), nu, kt, nu);
  linalg::gemv<Trans::No>(g, nx, nu, T(-1), w.Y_k(k, nx, nu), nx, kt, T(1), pk);
}

// Knot k's whole backward step (matrices and vectors). Returns potrf's verdict, the same on every
// member: 0, or nonzero when Huu is not positive definite (the knot's later stages are then skipped
// by every member alike). Ends on a barrier.
template <class G, class T>
KNOT_HD int backward_step(G& g, const LqView<T>& d, const Work<T>& w, int k) {
  using linalg::Side, linalg::Trans, linalg::Uplo;
  const int nx = d.nx, nu = d.nu;
  KNOT_RICCATI_CLOCK;
  auto u = unsynced(g);
  const T* A = d.A_k(k);
  const T* B = d.B_k(k);
  const T* P1 = w.P_k(k + 1, nx);
  T* Pk = w.P_k(k, nx);
  T* pk = w.p_k(k, nx);
  T* L = w.L_k(k, nu);
  T* Y = w.Y_k(k, nx, nu);
  T* kt = w.kt_k(k, nu);

  // 1. Products of P_{k+1}; the blocks the next stage accumulates into start as the stage data.
  linalg::gemm<Trans::Yes, Trans::No>(u, nx, nx, nx, T(1), A, nx, P1, nx, T(0), w.T_, nx);  // T = A'P
  linalg::gemm<Trans::No, Trans::No>(u, nx, nu, nx, T(1), P1, nx, B, nx, T(0), w.W, nx);    // W = P B
  mv_plus(u, nx, nx, P1, d.c_k(k), w.p_k(k + 1, nx), w.pc);                                 // pc
  copy(u, std::size_t(nx) * nx, d.Q_k(k), Pk);
  copy(u, std::size_t(nu) * nu, d.R_k(k), L);
  copy(u, std::size_t(nx), d.q_k(k), pk);
  copy(u, std::size_t(nu), d.r_k(k), kt);
  const T* S = d.S_k(k);
  for (int e = u.rank(); e < nx * nu; e += u.size()) {  // Y = S' (nx x nu)
    const int i = e % nx, j = e / nx;
    Y[e] = S[j + std::size_t(i) * nu];
  }
  g.sync();
  KNOT_RICCATI_LAP(1);

  // 2. Hxx, Hxu, Huu, hx, hu.
  linalg::gemm<Trans::No, Trans::No>(u, nx, nx, nx, T(1), w.T_, nx, A, nx, T(1), Pk, nx);
  linalg::gemm<Trans::No, Trans::No>(u, nx, nu, nx, T(1), w.T_, nx, B, nx, T(1), Y, nx);
  linalg::gemm<Trans::Yes, Trans::No>(u, nu, nu, nx, T(1), B, nx, w.W, nx, T(1), L, nu);
  linalg::gemv<Trans::Yes>(u, nx, nx, T(1), A, nx, w.pc, T(1), pk);
  linalg::gemv<Trans::Yes>(u, nx, nu, T(1), B, nx, w.pc, T(1), kt);
  g.sync();
  KNOT_RICCATI_LAP(2);

  // 3. Huu = L L' (every member gets potrf's verdict).
  if (linalg::potrf(g, nu, L, nu) != 0) return 1;
  KNOT_RICCATI_LAP(3);

  // 4. Y = Hxu L^-T, kt = L^-1 hu (one column: one member, no inner barrier).
  linalg::trsm<Side::Right, Uplo::Lower, Trans::Yes>(u, nx, nu, T(1), L, nu, Y, nx);
  linalg::trsm<Side::Left, Uplo::Lower, Trans::No>(u, nu, 1, T(1), L, nu, kt, nu);
  g.sync();
  KNOT_RICCATI_LAP(4);

  // 5. P_k = Hxx - Y Y' on the lower triangle, each entry also written to its mirror (syrk's sum,
  //    one member per pair), and p_k = hx - Y kt.
  for (int e = u.rank(); e < nx * (nx + 1) / 2; e += u.size()) {
    int i, j;
    linalg::detail::lower_triangle_index(e, nx, i, j);
    T acc = T(0);
    for (int q = 0; q < nu; ++q) acc += Y[i + std::size_t(q) * nx] * Y[j + std::size_t(q) * nx];
    const T v = Pk[i + std::size_t(j) * nx] - acc;
    Pk[i + std::size_t(j) * nx] = v;
    Pk[j + std::size_t(i) * nx] = v;
  }
  linalg::gemv<Trans::No>(u, nx, nu, T(-1), Y, nx, kt, T(1), pk);
  g.sync();
  KNOT_RICCATI_LAP(5);
  return 0;
}

// The rollout and the costates from the factorization in w, then the finiteness check of the step.
template <class G, class T>
KNOT_HD DeviceLqResult forward(G& g, const LqView<T>& d, const StepView<T>& s, const Work<T>& w) {
  using linalg::Side, linalg::Trans, linalg::Uplo;
  const int nx = d.nx, nu = d.nu, N = d.N;
  auto u = unsynced(g);
  // Every accumulation starts from its constant term: x_0 = x_init, x_{k+1} = c_k, u_k = kt_k,
  // lambda_k = p_k.
  copy(u, std::size_t(nx), d.x_init, s.x);
  copy(u, std::size_t(N) * nx, d.c, s.x + nx);
  copy(u, std::size_t(N) * nu, w.kt, s.u);
  copy(u, (std::size_t(N) + 1) * nx, w.p, s.lambda);
  g.sync();
  for (int k = 0; k < N; ++k) {
    KNOT_RICCATI_CLOCK;
    const T* x = s.x_k(k);
    T* uk = s.u_k(k);
    T* xn = s.x_k(k + 1);
    linalg::gemv<Trans::Yes>(u, nx, nu, T(1), w.Y_k(k, nx, nu), nx, x, T(1), uk);  // kt + Y'x
    linalg::gemv<Trans::No>(u, nx, nx, T(1), d.A_k(k), nx, x, T(1), xn);           // c + A x
    linalg::gemv<Trans::No>(u, nx, nx, T(1), w.P_k(k, nx), nx, x, T(1), s.lambda_k(k));
    g.sync();
    KNOT_RICCATI_LAP(8);
    // u = -L^-T (kt + Y'x): alpha = -1 negates exactly, as negating afterwards would.
    linalg::trsm<Side::Left, Uplo::Lower, Trans::Yes>(g, nu, 1, T(-1), w.L_k(k, nu), nu, uk, nu);
    KNOT_RICCATI_LAP(9);
    linalg::gemv<Trans::No>(g, nx, nu, T(1), d.B_k(k), nx, uk, T(1), xn);  // + B u
    KNOT_RICCATI_LAP(10);
  }
  linalg::gemv<Trans::No>(g, nx, nx, T(1), w.P_k(N, nx), nx, s.x_k(N), T(1), s.lambda_k(N));
  DeviceLqResult r;
  if (!step_finite(g, s, w)) r.status = DeviceLqStatus::NonFinite;
  return r;
}

}  // namespace riccati_detail

// Scalars of riccati_solve's scratch for one problem of these sizes.
template <class T>
KNOT_HD constexpr std::size_t riccati_scratch_size(int nx, int nu, int N) {
  return riccati_detail::Work<T>::size(nx, nu, N);
}

// Factors and solves the LQ of `lq` into `out` (x, u, lambda). Every member calls it with the same
// arguments; ends on a barrier. Returns Solved, NotPositiveDefinite (failed_stage = the stage k), or
// NonFinite. Allocates nothing; scratch holds riccati_scratch_size<T>(nx, nu, N) scalars.
template <class G, class T>
KNOT_HD_NOINLINE DeviceLqResult riccati_solve(G& g, const LqView<T>& lq, const StepView<T>& out, T* scratch) {
  const int nx = lq.nx, N = lq.N;
  const auto w = riccati_detail::Work<T>::carve(nx, lq.nu, N, scratch);
  {
    auto u = riccati_detail::unsynced(g);
    riccati_detail::copy(u, std::size_t(nx) * nx, lq.Q_k(N), w.P_k(N, nx));
    riccati_detail::copy(u, std::size_t(nx), lq.q_k(N), w.p_k(N, nx));
  }
  g.sync();
  DeviceLqResult r;
  for (int k = N - 1; k >= 0; --k) {
    if (riccati_detail::backward_step(g, lq, w, k) != 0) {
      r.failed_stage = k;
      break;
    }
  }
  if (r.failed_stage >= 0) {
    r.status = riccati_detail::data_finite(g, lq, w) ? DeviceLqStatus::NotPositiveDefinite : DeviceLqStatus::NonFinite;
  } else {
    r = riccati_detail::forward(g, lq, out, w);
  }
  // What riccati_resolve answers without solving when this solve did not succeed.
  if (g.rank() == 0) {
    w.state[0] = T(static_cast<int>(r.status));
    w.state[1] = T(r.failed_stage);
  }
  g.sync();
  return r;
}

// Same matrices (A, B, Q, R, S) as the last riccati_solve on this scratch, new vectors (c, q, r,
// x_init) from `lq`: two vector sweeps on the stored factorization, as LqSolver::resolve. Gives the
// bits a fresh riccati_solve would (the same operations on the same operands). When that last
// solve was not Solved, returns its result without solving (`out` untouched). Ends on a barrier.
template <class G, class T>
KNOT_HD_NOINLINE DeviceLqResult riccati_resolve(G& g, const LqView<T>& lq, const StepView<T>& out, T* scratch) {
  const int nx = lq.nx, N = lq.N;
  const auto w = riccati_detail::Work<T>::carve(nx, lq.nu, N, scratch);
  DeviceLqResult last;
  last.status = static_cast<DeviceLqStatus>(static_cast<int>(w.state[0]));
  last.failed_stage = static_cast<int>(w.state[1]);
  if (last.status != DeviceLqStatus::Solved) {
    g.sync();
    return last;
  }
  {
    auto u = riccati_detail::unsynced(g);
    riccati_detail::copy(u, std::size_t(nx), lq.q_k(N), w.p_k(N, nx));
  }
  g.sync();
  for (int k = N - 1; k >= 0; --k) riccati_detail::backward_vectors(g, lq, w, k);
  return riccati_detail::forward(g, lq, out, w);
}

}  // namespace knot::solver::device

// The CUDA block's Riccati on one warp (riccati_warp.cuh), where the stage fits.
#if defined(__CUDACC__)
#include "knot/solver/device/riccati_warp.cuh"
#endif

namespace knot::solver::device {

// The device path's Riccati step: riccati_solve on every group, except a CUDA block with `warp` set
// and a stage that fits one warp, which takes riccati_warp_solve (the same contract and statuses;
// the same result to rounding).
template <class G, class T>
KNOT_HD DeviceLqResult riccati_step(G& g, const LqView<T>& lq, const StepView<T>& out, T* scratch, bool warp) {
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<G, linalg::BlockGroup>) {
    if (warp && riccati_warp_fits(lq.nx, lq.nu, g.size())) return riccati_warp_solve(g, lq, out, scratch);
  }
#endif
  (void)warp;
  return riccati_solve(g, lq, out, scratch);
}

}  // namespace knot::solver::device

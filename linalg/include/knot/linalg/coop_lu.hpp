// --- Cooperative LU with partial pivoting  P S = L U, one small N x N system per group ---
//
// Math. S is the stored array read column-major: S = A under LuLayout::kColMajor, S = A' under
// kRowMajor (the default). The factorization is right-looking, column by column: choose the pivot,
// form the multipliers l_v = s_vi * (1 / u_ii) (s_vi / u_ii for a subnormal u_ii, as LAPACK), update
// s_vj -= l_v u_ij (j > i).
//   kColMajor  P A = L U:          L y = P b forward, then U x = y backward.
//   kRowMajor  P A' = L U, A = U' L' P:  U' z = b forward, L' w = z backward (unit diagonal),
//              x = P' w. Pivoting interchanges columns of A: partial pivoting of A', as stable.
// solve folds the forward substitution into the factorization; factorize then substitute performs
// the same operations in the same order, so both give bitwise the same x.
//
// Pivoting. At step i, m = the largest non-NaN |s_ki| over positions k >= i. The row in place is
// kept when it is regular and |s_ii| >= tau m (tau = relative_pivot_threshold in (0, 1]); otherwise
// the first position holding m wins (tau = 1: the LAPACK choice). A pivot p is regular when |p| > 0
// and |p| >= singular_floor (default: the smallest normal number). A step whose pivot is not
// regular is singular: it forms no multipliers and updates nothing. The verdict, info = 1 + the
// first singular step (0: regular), is returned by every member at the end, never by an early
// exit. The x of a singular system is unspecified (it may hold inf or NaN); nothing leaks out of it.
//
// Threads. T = threads_per_system = ceil(N / R), R = rows_per_thread. The member of rank tx holds
// rows tx, tx + T, tx + 2T, ... of S (slot K: row tx + K T); slots at N or beyond are phantom and
// skipped. Members of rank >= T (a wider group, e.g. a power-of-two warp tile) hold no row and only
// take part in the barriers. Each element has one writer and an order of operations set by N alone,
// so every R gives bitwise the same results, and so do both interchange schemes (under the same
// floating-point contraction: a compiler that fuses a*b+c in one instantiation and not in another
// breaks the equality).
//
// Operands. Every member passes the same arguments (its own slices aside); the caller pre-offsets
// each pointer to its system. Offsets are 64-bit: element e of an external operand is base[e * stride]
// (AoS: 1, SoA: the batch size, AoSoA: the block width W; FixedStride<S> fixes it at compile time).
//   matrix  external: S(v, c) at e = c N + v, i.e. A(r, c) at (r N + c) row-major, (c N + r)
//           column-major. Internal: the caller's slice, S(tx + K T, c) at A[c R + K].
//   pivots  logical interchanges (default): piv(v) = position of physical row v in the pivoted
//           order; physical ones: piv(k) = original index of the row at position k. External: entry
//           v at e = v; internal: entry tx + K T at piv[K].
//   b, x    external: entry v at e = v; internal: entry tx + K T at b[K]. b may equal x.
// On entry each member reads only its own rows of S and entries of b, so a caller that fills them
// in that member needs no barrier before the call.
// Factored format: logical: physical row v of S holds its multipliers left of column piv(v) and its
// row of U from there on; physical: rows in pivoted order, as LAPACK. The diagonal holds the pivots.
// Only substitute() of the same layout and interchange scheme reads it.
//
// Workspace: coop_lu_workspace_size(N, R) elements of T per system (coop_lu_config.hpp), shared by
// the group; the first two are left to WorkspaceBarrierGroup. Within a call nothing is read from it
// before it is written, and it is free again on return.
// Barriers: a fixed sequence set by N, the configuration and the entry point, never by the data:
//   factorize 2N + 1, solve 3N + 2, substitute 2N + 2, plus one for physical interchanges in solve
//   (row-major) and substitute (both layouts); N = 0 takes one. Between two barriers no workspace
//   element is written by one member and accessed by another. Every entry point ends on a barrier:
//   all outputs are then visible to every member. Never allocates.
// One member (threads_per_system = 1 and a group of size 1, e.g. SerialGroup: the CPU path): a
// loop nest ordered for one core (whole columns, vectorized) runs instead, with the same arithmetic
// and results, and a single closing barrier.
#pragma once

#include <cstdint>
#include <utility>

#include "knot/linalg/coop_lu_config.hpp"
#include "knot/linalg/group.hpp"

#if !KNOT_ON_DEVICE
#include <stdexcept>
#endif

#if defined(__CUDACC__) || defined(__GNUC__) || defined(__clang__)
#define KNOT_LU_RESTRICT __restrict__
#else
#define KNOT_LU_RESTRICT
#endif

namespace knot::linalg {

namespace detail {

template <class T>
KNOT_HD constexpr T lu_abs(T v) {
  return v < T(0) ? -v : v;
}

KNOT_HD void coop_lu_fail([[maybe_unused]] const char* what) {
#if KNOT_ON_DEVICE
  __trap();
#else
  throw std::invalid_argument(what);
#endif
}

template <class G>
KNOT_HD void coop_lu_check(G& g, int n, int r, int t) {
  if (n < 0 || r < 1) coop_lu_fail("coop_lu: n must be >= 0 and rows_per_thread >= 1");
  if (g.size() < t || g.rank() < 0 || g.rank() >= g.size())
    coop_lu_fail("coop_lu: the group needs at least threads_per_system members");
}

// One member's view of one system: its rank, the operands and the workspace. N, R: compile-time
// extents or kDynamic.
template <class T, int N, int R, CoopLuConfig C, CoopLuResidency Res, class SA, class SP, class SB>
struct CoopLu {
  static constexpr bool kPhysical = C.interchange == LuInterchange::kPhysical;
  static constexpr bool kRowMajor = C.layout == LuLayout::kRowMajor;
  // Largest compile-time N whose serial steps are unrolled.
  static constexpr int kUnrolledSteps = 8;

  int n_rt, r_rt, t_rt, tx;
  T* A;
  SA sa;
  int* piv;
  SP sp;
  T* x;
  SB sb;
  T* w;

  // ---- extents and addressing ----
  KNOT_HD int n() const { return extent<N>(n_rt); }
  KNOT_HD int r() const { return extent<R>(r_rt); }
  KNOT_HD int t() const {
    if constexpr (N != kDynamic && R != kDynamic) {
      return coop_lu_threads_per_system(N, R);
    } else {
      return t_rt;
    }
  }
  KNOT_HD CoopLuWorkspace ws() const { return CoopLuWorkspace{n(), t()}; }
  KNOT_HD T floor() const { return C.singular_floor < 0 ? smallest_normal<T>() : static_cast<T>(C.singular_floor); }
  KNOT_HD bool regular(T mag) const { return mag > T(0) && mag >= floor(); }

  KNOT_HD int row(int K) const { return tx + K * t(); }
  // Real slots of this member: rows tx + K T < N for K < slots().
  KNOT_HD int slots() const {
    if (tx >= t() || tx >= n()) return 0;
    const int s = (n() - tx + t() - 1) / t();
    return s < r() ? s : r();
  }
  // First slot whose row exceeds k.
  KNOT_HD int first_after(int k) const { return k < tx ? 0 : (k - tx) / t() + 1; }
  // Slot holding row k (natural index; under physical interchanges also position k), or -1.
  KNOT_HD int slot_of(int k) const { return (tx < t() && k % t() == tx) ? k / t() : -1; }

  KNOT_HD T& a(int K, int c) const {
    if constexpr (Res.matrix) {
      return A[c * r() + K];
    } else {
      return A[(static_cast<std::int64_t>(c) * n() + row(K)) * static_cast<std::int64_t>(sa)];
    }
  }
  KNOT_HD int& p(int K) const {
    if constexpr (Res.pivots) {
      return piv[K];
    } else {
      return piv[static_cast<std::int64_t>(row(K)) * static_cast<std::int64_t>(sp)];
    }
  }
  template <class P>
  KNOT_HD P& rhs_at(P* base, int K) const {
    if constexpr (Res.rhs) {
      return base[K];
    } else {
      return base[static_cast<std::int64_t>(row(K)) * static_cast<std::int64_t>(sb)];
    }
  }
  KNOT_HD T& b(int K) const { return rhs_at(x, K); }
  // Position of the row in slot K.
  KNOT_HD int pos(int K) const {
    if constexpr (kPhysical) {
      return row(K);
    } else {
      return p(K);
    }
  }
  // Slot holding position k, or -1.
  KNOT_HD int slot_at(int k) const {
    if constexpr (kPhysical) {
      return slot_of(k);
    } else {
      const int ns = slots();
      for (int K = 0; K < ns; ++K)
        if (p(K) == k) return K;
      return -1;
    }
  }

  KNOT_HD void copy_in(const T* b_in) const {
    if (b_in == x) return;
    const int ns = slots();
    for (int K = 0; K < ns; ++K) b(K) = rhs_at(b_in, K);
  }

  // ---- factorization ----

  // Candidate of this member for the pivot of column c: its largest non-NaN |s_vc| over positions
  // >= c, ties to the smaller position; the member holding position c also publishes |s_cc|.
  KNOT_HD void candidates(int c) const {
    if (tx >= t()) return;
    const CoopLuWorkspace m = ws();
    const int ns = slots();
    T best = T(-1);
    int best_pos = n();
    for (int K = kPhysical ? first_after(c - 1) : 0; K < ns; ++K) {
      const int q = pos(K);
      if (q < c) continue;
      const T mag = lu_abs(a(K, c));
      if (mag > best || (mag == best && q < best_pos)) {
        best = mag;
        best_pos = q;
      }
      if (q == c) w[m.diag()] = mag;
    }
    w[m.cand_val() + tx] = best;
    w[m.cand_pos() + tx] = static_cast<T>(best_pos);
  }

  // The pivot position of step i, from the published candidates (every member computes the same).
  KNOT_HD int choose_pivot(int i) const {
    const CoopLuWorkspace m = ws();
    T best = T(-1);
    int best_pos = n();
    for (int s = 0; s < t(); ++s) {
      const T v = w[m.cand_val() + s];
      const int q = static_cast<int>(w[m.cand_pos() + s]);
      if (v > best || (v == best && q < best_pos)) {
        best = v;
        best_pos = q;
      }
    }
    const T d = w[m.diag()];
    const T tau = static_cast<T>(C.relative_pivot_threshold);
    return (best_pos == n() || (regular(d) && d >= tau * best)) ? i : best_pos;
  }

  // Interval A of step i: publish the pivot row (and, physically, the row leaving position i).
  template <bool kFold>
  KNOT_HD void publish(int i, int pv) const {
    const CoopLuWorkspace m = ws();
    const int nn = n();
    T* const u = w + m.enter();
    if constexpr (kPhysical) {
      const int kp = slot_of(pv);
      if (kp >= 0) {
        for (int j = pv == i ? i : 0; j < nn; ++j) u[j] = a(kp, j);
        if constexpr (kFold && !kRowMajor) u[nn] = b(kp);
        u[nn + 1] = static_cast<T>(p(kp));
      }
      const int ki = pv != i ? slot_of(i) : -1;
      if (ki >= 0) {
        T* const lv = w + m.leave();
        for (int j = 0; j < nn; ++j) lv[j] = a(ki, j);
        if constexpr (kFold && !kRowMajor) lv[nn] = b(ki);
        lv[nn + 1] = static_cast<T>(p(ki));
      }
    } else {
      const int ns = slots();
      for (int K = 0; K < ns; ++K) {
        const int q = p(K);
        if (q == pv) {
          for (int j = i; j < nn; ++j) u[j] = a(K, j);
          if constexpr (kFold && !kRowMajor) u[nn] = b(K);
          p(K) = i;
        } else if (q == i) {
          p(K) = pv;
        }
      }
    }
  }

  // Interval B of step i, physical interchanges: the rows at positions i and pv trade slots.
  template <bool kFold>
  KNOT_HD void move_rows(int i, int pv) const {
    const CoopLuWorkspace m = ws();
    const int ki = slot_of(i), kp = slot_of(pv);
    if (ki >= 0) take_row<kFold>(ki, w + m.enter());
    if (kp >= 0) take_row<kFold>(kp, w + m.leave());
  }
  template <bool kFold>
  KNOT_HD void take_row(int K, const T* rec) const {
    const int nn = n();
    for (int j = 0; j < nn; ++j) a(K, j) = rec[j];
    if constexpr (kFold && !kRowMajor) b(K) = rec[nn];
    p(K) = static_cast<int>(rec[nn + 1]);
  }

  // Interval B of step i, regular pivot u[i]: multipliers and trailing update of the rows below.
  template <bool kFold>
  KNOT_HD void eliminate(int i, const T* u) const {
    const int nn = n(), ns = slots();
    // Multipliers: s_vi * (1 / u_ii), or s_vi / u_ii when 1 / u_ii would overflow (a subnormal
    // pivot, regular only under a floor below the smallest normal number), as LAPACK's dgetf2.
    const T piv_ii = u[i];
    const bool recip = lu_abs(piv_ii) >= smallest_normal<T>();
    const T rinv = T(1) / piv_ii;
    if constexpr (kPhysical) {
      const int k0 = first_after(i);
      if (recip) {
        for (int K = k0; K < ns; ++K) a(K, i) = a(K, i) * rinv;
      } else {
        for (int K = k0; K < ns; ++K) a(K, i) = a(K, i) / piv_ii;
      }
      for (int j = i + 1; j < nn; ++j) {
        const T uj = u[j];
        for (int K = k0; K < ns; ++K) a(K, j) = a(K, j) - a(K, i) * uj;
      }
      if constexpr (kFold && !kRowMajor) {
        const T y = u[nn];
        for (int K = k0; K < ns; ++K) b(K) = b(K) - a(K, i) * y;
      }
    } else {
      // Every slot runs the same arithmetic and keeps it only below the pivot: a select, so the
      // slot loop vectorizes.
      if (recip) {
        for (int K = 0; K < ns; ++K) {
          T& e = a(K, i);
          const T l = e * rinv;
          e = p(K) > i ? l : e;
        }
      } else {
        for (int K = 0; K < ns; ++K) {
          T& e = a(K, i);
          const T l = e / piv_ii;
          e = p(K) > i ? l : e;
        }
      }
      for (int j = i + 1; j < nn; ++j) {
        const T uj = u[j];
        for (int K = 0; K < ns; ++K) {
          T& e = a(K, j);
          const T s = e - a(K, i) * uj;
          e = p(K) > i ? s : e;
        }
      }
      if constexpr (kFold && !kRowMajor) {
        const T y = u[nn];
        for (int K = 0; K < ns; ++K) {
          T& e = b(K);
          const T s = e - a(K, i) * y;
          e = p(K) > i ? s : e;
        }
      }
    }
  }

  // Row-major solve, step i of U' z = b: z_i = b_i / u_ii, b_k -= u_ik z_i (k > i).
  KNOT_HD void forward_row_step(int i, const T* u, T b_i, bool regular_step) const {
    const int ns = slots();
    const T z = b_i / u[i];
    if (regular_step)
      for (int K = first_after(i); K < ns; ++K) b(K) = b(K) - u[row(K)] * z;
    const int ki = slot_of(i);
    if (ki >= 0) b(ki) = z;
  }

  // kFold: carry the right-hand side in x along (solve).
  template <bool kFold, class G>
  KNOT_HD int factor(G& g) const {
    const CoopLuWorkspace m = ws();
    const int nn = n(), ns = slots();
    for (int K = 0; K < ns; ++K) p(K) = row(K);
    if constexpr (kFold && kRowMajor) {
      const int k0 = slot_of(0);
      if (k0 >= 0) w[m.fold_rhs()] = b(k0);
    }
    candidates(0);
    g.sync();
    int info = 0;
    for (int i = 0; i < nn; ++i) {
      const int pv = choose_pivot(i);
      publish<kFold>(i, pv);
      g.sync();
      const T* const u = w + m.enter();
      if constexpr (kPhysical) {
        if (pv != i) move_rows<kFold>(i, pv);
      }
      const bool ok = regular(lu_abs(u[i]));
      if (!ok && info == 0) info = i + 1;
      if (ok) eliminate<kFold>(i, u);
      if constexpr (kFold && kRowMajor) {
        forward_row_step(i, u, w[m.fold_rhs() + (i & 1)], ok);
        const int k1 = i + 1 < nn ? slot_of(i + 1) : -1;
        if (k1 >= 0) w[m.fold_rhs() + ((i + 1) & 1)] = b(k1);
      }
      if (i + 1 < nn) candidates(i + 1);
      g.sync();
    }
    return info;
  }

  // ---- substitutions ----

  // Column-major forward L y = P b, in place in x (rows carry their entries).
  template <class G>
  KNOT_HD void forward_col(G& g) const {
    const CoopLuWorkspace m = ws();
    const int nn = n(), ns = slots();
    if constexpr (kPhysical) {
      T* const gt = w + m.gather();
      for (int K = 0; K < ns; ++K) gt[row(K)] = b(K);
      g.sync();
      for (int K = 0; K < ns; ++K) b(K) = gt[p(K)];
    }
    T* const fb = w + m.step_buf();
    {
      const int k = slot_at(0);
      if (k >= 0) {
        fb[0] = b(k);
        fb[1] = a(k, 0);
      }
    }
    g.sync();
    for (int i = 0; i < nn; ++i) {
      const T y = fb[2 * (i & 1)];
      if (regular(lu_abs(fb[2 * (i & 1) + 1]))) {
        if constexpr (kPhysical) {
          for (int K = first_after(i); K < ns; ++K) b(K) = b(K) - a(K, i) * y;
        } else {
          for (int K = 0; K < ns; ++K) {
            T& e = b(K);
            const T s = e - a(K, i) * y;
            e = p(K) > i ? s : e;
          }
        }
      }
      const int k = i + 1 < nn ? slot_at(i + 1) : -1;
      if (k >= 0) {
        fb[2 * ((i + 1) & 1)] = b(k);
        fb[2 * ((i + 1) & 1) + 1] = a(k, i + 1);
      }
      g.sync();
    }
  }

  // Column-major backward U x = y; rows hold y, x lands by natural index.
  template <class G>
  KNOT_HD void backward_col(G& g) const {
    const CoopLuWorkspace m = ws();
    const int nn = n(), ns = slots();
    T* const xs = w + m.xs();
    {
      const int k = slot_at(nn - 1);
      if (k >= 0) xs[nn - 1] = b(k) / a(k, nn - 1);
    }
    g.sync();
    for (int i = nn - 1; i >= 1; --i) {
      const T xi = xs[i];
      if constexpr (kPhysical) {
        const int kend = first_after(i - 1) < ns ? first_after(i - 1) : ns;
        for (int K = 0; K < kend; ++K) b(K) = b(K) - a(K, i) * xi;
      } else {
        for (int K = 0; K < ns; ++K) {
          T& e = b(K);
          const T s = e - a(K, i) * xi;
          e = p(K) < i ? s : e;
        }
      }
      const int k = slot_at(i - 1);
      if (k >= 0) xs[i - 1] = b(k) / a(k, i - 1);
      g.sync();
    }
    for (int K = 0; K < ns; ++K) b(K) = xs[row(K)];
    g.sync();
  }

  // Row-major forward U' z = b, in place in x (entries by natural index).
  template <class G>
  KNOT_HD void forward_row(G& g) const {
    const CoopLuWorkspace m = ws();
    const int nn = n();
    T* const rb = w + m.row_buf();
    T* const fb = w + m.step_buf();
    {
      const int k = slot_at(0);
      if (k >= 0)
        for (int c = 0; c < nn; ++c) rb[c] = a(k, c);
      const int k0 = slot_of(0);
      if (k0 >= 0) fb[0] = b(k0);
    }
    g.sync();
    for (int i = 0; i < nn; ++i) {
      const T* const u = rb + (i & 1) * nn;
      forward_row_step(i, u, fb[i & 1], regular(lu_abs(u[i])));
      if (i + 1 < nn) {
        const int k = slot_at(i + 1);
        if (k >= 0)
          for (int c = i + 1; c < nn; ++c) rb[((i + 1) & 1) * nn + c] = a(k, c);
        const int k1 = slot_of(i + 1);
        if (k1 >= 0) fb[(i + 1) & 1] = b(k1);
      }
      g.sync();
    }
  }

  // Row-major backward L' w = z, then x = P' w.
  template <class G>
  KNOT_HD void backward_row(G& g) const {
    const CoopLuWorkspace m = ws();
    const int nn = n(), ns = slots();
    T* const xs = w + m.xs();
    T* const rb = w + m.row_buf();
    {
      const int k = slot_of(nn - 1);
      if (k >= 0) xs[nn - 1] = b(k);
      const int kl = slot_at(nn - 1);
      if (kl >= 0)
        for (int c = 0; c < nn - 1; ++c) rb[((nn - 1) & 1) * nn + c] = a(kl, c);
    }
    g.sync();
    for (int j = nn - 1; j >= 1; --j) {
      const T wj = xs[j];
      const T* const l = rb + (j & 1) * nn;
      const int kend = first_after(j - 1) < ns ? first_after(j - 1) : ns;
      for (int K = 0; K < kend; ++K) b(K) = b(K) - l[row(K)] * wj;
      const int k = slot_of(j - 1);
      if (k >= 0) xs[j - 1] = b(k);
      const int kl = j - 1 >= 1 ? slot_at(j - 1) : -1;
      if (kl >= 0)
        for (int c = 0; c < j - 1; ++c) rb[((j - 1) & 1) * nn + c] = a(kl, c);
      g.sync();
    }
    if constexpr (kPhysical) {
      T* const gt = w + m.gather();
      for (int K = 0; K < ns; ++K) gt[p(K)] = xs[row(K)];
      g.sync();
      for (int K = 0; K < ns; ++K) b(K) = gt[row(K)];
    } else {
      for (int K = 0; K < ns; ++K) b(K) = xs[p(K)];
    }
    g.sync();
  }

  // ---- serial path: a one-member group holding every row (threads_per_system = 1) ----
  // The same operations on the same elements in the same order as the cooperative path, in loop
  // nests ordered for one CPU core. The factorization always keeps the rows in pivoted order
  // (LAPACK's scheme: whole columns below the diagonal are contiguous, so the updates vectorize);
  // under logical interchanges the rows then go back to their original slots, bitwise the same
  // values. The substitutions of a logical factorization reach row k of the pivoted order through
  // a map held in the workspace.

  KNOT_HD T* col(int c) const {
    if constexpr (Res.matrix) {
      return A + c * r();
    } else {
      return A + static_cast<std::int64_t>(c) * n() * static_cast<std::int64_t>(sa);
    }
  }
  // Element strides between consecutive rows of a column of S, and of the right-hand side.
  KNOT_HD auto ms() const {
    if constexpr (Res.matrix) {
      return FixedStride<1>{};
    } else {
      return sa;
    }
  }
  KNOT_HD auto rs() const {
    if constexpr (Res.rhs) {
      return FixedStride<1>{};
    } else {
      return sb;
    }
  }
  KNOT_HD T& at(const T* c, int K) const { return const_cast<T*>(c)[K * static_cast<std::int64_t>(ms())]; }

  // y_K -= x_K alpha for K in [k0, k1).
  template <class YS, class XS>
  KNOT_HD static void axpy_minus(T* KNOT_LU_RESTRICT y, YS ys, const T* KNOT_LU_RESTRICT xv, XS xs, T alpha, int k0,
                                 int k1) {
    for (int K = k0; K < k1; ++K) {
      const std::int64_t iy = K * static_cast<std::int64_t>(ys), ix = K * static_cast<std::int64_t>(xs);
      y[iy] = y[iy] - xv[ix] * alpha;
    }
  }

  // The first row in [i, n) of largest non-NaN |s|, and that magnitude; -1 if all are NaN: the
  // choice of choose_pivot(). Branch-free: the comparisons are data-dependent and would mispredict.
  KNOT_HD int first_largest(const T* c, int i, int nn, T& best) const {
    best = T(-1);
    int row_best = -1;
    for (int K = i; K < nn; ++K) {
      const T mag = lu_abs(at(c, K));
      const bool better = mag > best;
      best = better ? mag : best;
      row_best = better ? K : row_best;
    }
    return row_best;
  }

  KNOT_HD static void swap_values(T& u, T& v) {
    const T tmp = u;
    u = v;
    v = tmp;
  }

  // Calls f(i) for the steps i = 0 .. n-1 (kDown: n-1 .. 0). A small compile-time n unrolls them
  // all, so every inner loop has constant bounds (fully unrolled, no remainder loops).
  template <bool kDown = false, class F>
  KNOT_HD void for_steps(F&& f) const {
    if constexpr (N != kDynamic && N <= kUnrolledSteps) {
      const auto unrolled = [&]<int... I>(std::integer_sequence<int, I...>) { (f(kDown ? N - 1 - I : I), ...); };
      unrolled(std::make_integer_sequence<int, N>{});
    } else {
      for (int s = 0; s < n(); ++s) f(kDown ? n() - 1 - s : s);
    }
  }

  // Rows in pivoted order, piv(k) = original index of the row at position k (physical format).
  template <bool kFold>
  KNOT_HD int factor_serial() const {
    const int nn = n();
    const T tau = static_cast<T>(C.relative_pivot_threshold);
    for (int K = 0; K < nn; ++K) p(K) = K;
    int info = 0;
    for_steps([&](const int i) {
      T* const ci = col(i);
      T best;
      const int best_row = first_largest(ci, i, nn, best);
      const T d = lu_abs(at(ci, i));
      const int pv = (best_row < 0 || (regular(d) && d >= tau * best)) ? i : best_row;
      if (pv != i) {
        for (int c = 0; c < nn; ++c) swap_values(a(i, c), a(pv, c));
        if constexpr (kFold && !kRowMajor) swap_values(b(i), b(pv));
        const int orig = p(i);
        p(i) = p(pv);
        p(pv) = orig;
      }
      const T u_ii = at(ci, i);
      const bool ok = regular(lu_abs(u_ii));
      if (!ok && info == 0) info = i + 1;
      if (ok) {
        if (lu_abs(u_ii) >= smallest_normal<T>()) {
          const T rinv = T(1) / u_ii;
          for (int K = i + 1; K < nn; ++K) at(ci, K) = at(ci, K) * rinv;
        } else {
          for (int K = i + 1; K < nn; ++K) at(ci, K) = at(ci, K) / u_ii;
        }
        for (int j = i + 1; j < nn; ++j) {
          T* const cj = col(j);
          axpy_minus(cj, ms(), ci, ms(), at(cj, i), i + 1, nn);
        }
        if constexpr (kFold && !kRowMajor) axpy_minus(x, rs(), ci, ms(), b(i), i + 1, nn);
      }
      if constexpr (kFold && kRowMajor) {
        const T z = b(i) / u_ii;
        if (ok)
          for (int K = i + 1; K < nn; ++K) b(K) = b(K) - a(i, K) * z;
        b(i) = z;
      }
    });
    return info;
  }

  // Logical interchanges: each row back to its original slot, piv(v) = its position; one column
  // at a time through a spare column.
  KNOT_HD void unpermute_serial() const {
    if constexpr (!kPhysical) {
      const int nn = n();
      T* const spare = w + ws().xs();
      for (int k = 0; k < nn; ++k) spare[p(k)] = static_cast<T>(k);
      for (int v = 0; v < nn; ++v) p(v) = static_cast<int>(spare[v]);
      for (int c = 0; c < nn; ++c) {
        T* const cc = col(c);
        for (int v = 0; v < nn; ++v) spare[v] = at(cc, p(v));
        for (int v = 0; v < nn; ++v) at(cc, v) = spare[v];
      }
    }
  }

  // Row of S at position k: k when the rows are in pivoted order, else through the map built by
  // row_map_serial() from the logical pivots.
  template <bool kInOrder>
  KNOT_HD int row_at(int k) const {
    if constexpr (kInOrder) {
      return k;
    } else {
      return static_cast<int>(w[ws().row_buf() + k]);
    }
  }
  KNOT_HD void row_map_serial() const {
    if constexpr (!kPhysical) {
      for (int v = 0; v < n(); ++v) w[ws().row_buf() + p(v)] = static_cast<T>(v);
    }
  }

  // Column-major: L y = P b forward, U x = y backward, x by natural index into b. Rows in pivoted
  // order (kInOrder, b carried along by the factorization): in place; otherwise by position in
  // the workspace.
  template <bool kInOrder, bool kForward>
  KNOT_HD void solve_col_serial() const {
    const int nn = n();
    T* const xs = w + ws().xs();
    T* const v = w + ws().gather();
    for (int k = 0; k < nn; ++k) v[k] = kInOrder && !kForward ? b(k) : b(kInOrder ? p(k) : row_at<kInOrder>(k));
    if constexpr (kForward) {
      for_steps([&](const int i) {
        const int ri = row_at<kInOrder>(i);
        if (!regular(lu_abs(a(ri, i)))) return;
        const T y = v[i];
        if constexpr (kInOrder) {
          axpy_minus(v, FixedStride<1>{}, col(i), ms(), y, i + 1, nn);
        } else {
          for (int k = i + 1; k < nn; ++k) v[k] = v[k] - a(row_at<kInOrder>(k), i) * y;
        }
      });
    }
    for_steps<true>([&](const int i) {
      const T xi = v[i] / a(row_at<kInOrder>(i), i);
      xs[i] = xi;
      if constexpr (kInOrder) {
        axpy_minus(v, FixedStride<1>{}, col(i), ms(), xi, 0, i);
      } else {
        for (int k = 0; k < i; ++k) v[k] = v[k] - a(row_at<kInOrder>(k), i) * xi;
      }
    });
    for (int K = 0; K < nn; ++K) b(K) = xs[K];
  }

  // Row-major: U' z = b forward (kForward), L' w = z backward, x = P' w, all by natural index in b.
  // kInOrder: piv holds original indices (physical format), else positions (logical).
  template <bool kInOrder, bool kForward>
  KNOT_HD void solve_row_serial() const {
    const int nn = n();
    if constexpr (kForward) {
      for_steps([&](const int i) {
        const int ri = row_at<kInOrder>(i);
        const T u_ii = a(ri, i);
        const T z = b(i) / u_ii;
        if (regular(lu_abs(u_ii)))
          for (int K = i + 1; K < nn; ++K) b(K) = b(K) - a(ri, K) * z;
        b(i) = z;
      });
    }
    for_steps<true>([&](const int j) {
      const int rj = row_at<kInOrder>(j);
      const T wj = b(j);
      for (int K = 0; K < j; ++K) b(K) = b(K) - a(rj, K) * wj;
    });
    T* const xs = w + ws().xs();
    if constexpr (kInOrder) {
      for (int K = 0; K < nn; ++K) xs[p(K)] = b(K);
      for (int K = 0; K < nn; ++K) b(K) = xs[K];
    } else {
      for (int K = 0; K < nn; ++K) xs[K] = b(K);
      for (int K = 0; K < nn; ++K) b(K) = xs[p(K)];
    }
  }

  // ---- entry points ----
  template <class G>
  KNOT_HD bool serial(G& g) const {
    return t() == 1 && g.size() == 1;
  }
  template <class G>
  KNOT_HD int factorize(G& g) const {
    if (n() == 0) return g.sync(), 0;
    if (serial(g)) {
      const int info = factor_serial<false>();
      unpermute_serial();
      g.sync();
      return info;
    }
    return factor<false>(g);
  }
  template <class G>
  KNOT_HD int solve(G& g, const T* b_in) const {
    if (n() == 0) return g.sync(), 0;
    copy_in(b_in);
    if (serial(g)) {
      const int info = factor_serial<true>();
      if constexpr (kRowMajor) {
        solve_row_serial<true, false>();
      } else {
        solve_col_serial<true, false>();
      }
      unpermute_serial();
      g.sync();
      return info;
    }
    const int info = factor<true>(g);
    if constexpr (kRowMajor) {
      backward_row(g);
    } else {
      backward_col(g);
    }
    return info;
  }
  template <class G>
  KNOT_HD void substitute(G& g, const T* b_in) const {
    if (n() == 0) return g.sync();
    copy_in(b_in);
    if (serial(g)) {
      row_map_serial();
      if constexpr (kRowMajor) {
        solve_row_serial<kPhysical, true>();
      } else {
        solve_col_serial<kPhysical, true>();
      }
      return g.sync();
    }
    if constexpr (kRowMajor) {
      forward_row(g);
      backward_row(g);
    } else {
      forward_col(g);
      backward_col(g);
    }
  }
};

}  // namespace detail

// Compile-time dimension and configuration. All members static; every member of the group calls
// the same entry point with the same arguments (internal operands: its own slice).
template <class T, int N, CoopLuConfig C = CoopLuConfig{}>
struct CoopLuStatic {
  static_assert(N >= 1, "CoopLuStatic: N must be >= 1");
  static_assert(C.rows_per_thread >= 1, "CoopLuStatic: rows_per_thread must be >= 1");
  static_assert(C.relative_pivot_threshold > 0.0 && C.relative_pivot_threshold <= 1.0,
                "CoopLuStatic: relative_pivot_threshold must lie in (0, 1]");

  static constexpr int n = N;
  static constexpr int rows_per_thread = C.rows_per_thread;
  static constexpr int threads_per_system = coop_lu_threads_per_system(N, C.rows_per_thread);
  static constexpr int workspace_size = coop_lu_workspace_size(N, C.rows_per_thread);
  static constexpr CoopLuConfig config = C;

  // P S = L U in place in A; pivots to piv. Returns info (0: regular, else 1 + first singular step).
  template <CoopLuResidency Res = CoopLuResidency{}, class G, class SA, class SP>
  KNOT_HD static int factorize(G& g, T* A, SA a_stride, int* piv, SP piv_stride, T* work) {
    return kernel<Res>(g, A, a_stride, piv, piv_stride, static_cast<T*>(nullptr), std::int64_t{0}, work).factorize(g);
  }

  // x = A^-1 b from a factorization of factorize(). b may equal x.
  template <CoopLuResidency Res = CoopLuResidency{}, class G, class SA, class SP, class SB>
  KNOT_HD static void substitute(G& g, const T* A, SA a_stride, const int* piv, SP piv_stride, const T* b, T* x,
                                 SB rhs_stride, T* work) {
    kernel<Res>(g, const_cast<T*>(A), a_stride, const_cast<int*>(piv), piv_stride, x, rhs_stride, work)
        .substitute(g, b);
  }

  // Factorizes A in place and solves A x = b. b may equal x. Returns info as factorize().
  template <CoopLuResidency Res = CoopLuResidency{}, class G, class SA, class SP, class SB>
  KNOT_HD static int solve(G& g, T* A, SA a_stride, int* piv, SP piv_stride, const T* b, T* x, SB rhs_stride, T* work) {
    return kernel<Res>(g, A, a_stride, piv, piv_stride, x, rhs_stride, work).solve(g, b);
  }

  // solve() with the solution overwriting the right-hand side y.
  template <CoopLuResidency Res = CoopLuResidency{}, class G, class SA, class SP, class SB>
  KNOT_HD static int solve_inplace(G& g, T* A, SA a_stride, int* piv, SP piv_stride, T* y, SB rhs_stride, T* work) {
    return kernel<Res>(g, A, a_stride, piv, piv_stride, y, rhs_stride, work).solve(g, y);
  }

 private:
  template <CoopLuResidency Res, class G, class SA, class SP, class SB>
  KNOT_HD static detail::CoopLu<T, N, C.rows_per_thread, C, Res, SA, SP, SB> kernel(G& g, T* A, SA sa, int* piv, SP sp,
                                                                                    T* x, SB sb, T* work) {
    detail::coop_lu_check(g, N, C.rows_per_thread, threads_per_system);
    return {N, C.rows_per_thread, threads_per_system, g.rank(), A, sa, piv, sp, x, sb, work};
  }
};

// Run-time dimension n and rows_per_thread (default: C.rows_per_thread); C.rows_per_thread is
// otherwise unused. Same semantics, operands and arithmetic as CoopLuStatic<T, n, C>: the two give
// bitwise the same results.
template <class T, CoopLuConfig C = CoopLuConfig{}>
class CoopLuDynamic {
  static_assert(C.relative_pivot_threshold > 0.0 && C.relative_pivot_threshold <= 1.0,
                "CoopLuDynamic: relative_pivot_threshold must lie in (0, 1]");

 public:
  KNOT_HD constexpr explicit CoopLuDynamic(int n, int rows_per_thread = C.rows_per_thread)
      : n_(n), r_(rows_per_thread) {}

  KNOT_HD constexpr int n() const { return n_; }
  KNOT_HD constexpr int rows_per_thread() const { return r_; }
  KNOT_HD constexpr int threads_per_system() const { return coop_lu_threads_per_system(n_, r_); }
  KNOT_HD constexpr int workspace_size() const { return coop_lu_workspace_size(n_, r_); }

  template <CoopLuResidency Res = CoopLuResidency{}, class G, class SA, class SP>
  KNOT_HD int factorize(G& g, T* A, SA a_stride, int* piv, SP piv_stride, T* work) const {
    return kernel<Res>(g, A, a_stride, piv, piv_stride, static_cast<T*>(nullptr), std::int64_t{0}, work).factorize(g);
  }

  template <CoopLuResidency Res = CoopLuResidency{}, class G, class SA, class SP, class SB>
  KNOT_HD void substitute(G& g, const T* A, SA a_stride, const int* piv, SP piv_stride, const T* b, T* x, SB rhs_stride,
                          T* work) const {
    kernel<Res>(g, const_cast<T*>(A), a_stride, const_cast<int*>(piv), piv_stride, x, rhs_stride, work)
        .substitute(g, b);
  }

  template <CoopLuResidency Res = CoopLuResidency{}, class G, class SA, class SP, class SB>
  KNOT_HD int solve(G& g, T* A, SA a_stride, int* piv, SP piv_stride, const T* b, T* x, SB rhs_stride, T* work) const {
    return kernel<Res>(g, A, a_stride, piv, piv_stride, x, rhs_stride, work).solve(g, b);
  }

  template <CoopLuResidency Res = CoopLuResidency{}, class G, class SA, class SP, class SB>
  KNOT_HD int solve_inplace(G& g, T* A, SA a_stride, int* piv, SP piv_stride, T* y, SB rhs_stride, T* work) const {
    return kernel<Res>(g, A, a_stride, piv, piv_stride, y, rhs_stride, work).solve(g, y);
  }

 private:
  template <CoopLuResidency Res, class G, class SA, class SP, class SB>
  KNOT_HD detail::CoopLu<T, kDynamic, kDynamic, C, Res, SA, SP, SB> kernel(G& g, T* A, SA sa, int* piv, SP sp, T* x,
                                                                           SB sb, T* work) const {
    detail::coop_lu_check(g, n_, r_, threads_per_system());
    return {n_, r_, threads_per_system(), g.rank(), A, sa, piv, sp, x, sb, work};
  }

  int n_;
  int r_;
};

}  // namespace knot::linalg

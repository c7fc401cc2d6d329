// --- Symmetric indefinite factorization  P A P' = L D L'  (Bunch-Kaufman), with inertia ---
//
// L unit lower triangular, D block diagonal with 1x1 and 2x2 blocks, P a permutation. Step k
// takes a 1x1 pivot (column k) or a 2x2 pivot (columns k, k+1) after the symmetric interchange of
// rows and columns q and r (q = k for 1x1, k+1 for 2x2; r >= q; none when r == q). By Sylvester's
// law of inertia A and D have the same numbers of positive, negative and zero eigenvalues; the
// statistics count them from D.
//
// Pivot choice at step k (Bunch-Kaufman, with the threshold u of LdltOptions, default
// alpha = (1 + sqrt 17)/8): with lambda = max_{i>k} |A(i,k)| attained first at row r, and
// sigma = max_{j != r} |A(r,j)| over the trailing matrix,
//   max(|A(k,k)|, lambda) <= tiny              1x1 at k (the column is negligible)
//   |A(k,k)| >= u lambda                       1x1 at k
//   |A(k,k)| sigma >= u lambda^2               1x1 at k
//   |A(r,r)| >= u sigma                        1x1 at r (interchange k <-> r)
//   otherwise                                  2x2 on (k, r) (interchange k+1 <-> r)
// u = 0 accepts every diagonal pivot (no interchanges: static pivoting). For u in (0, 1) a 2x2
// block has det = A(k,k) A(r,r) - A(r,k)^2 < (u^2 - 1) lambda^2 < 0: never singular.
//
// Static perturbation: a 1x1 pivot with |d| <= tiny is replaced by sign * delta when delta > 0,
// where sign is + for a primal row and - for a dual row of the ORIGINAL matrix (the row that the
// interchanges brought to the pivot position). Rows are primal/dual by LdltOptions::row_sign (> 0
// primal) or, when that is null, by n_primal (rows < n_primal primal; n_primal < 0: all primal).
// The factorization is then exact for A + E, E diagonal with nperturbed nonzeros, and the inertia
// reported is that of A + E. With delta == 0 tiny pivots are kept; an exactly zero pivot is
// counted in nzero, its column of L is set to zero, and the solves divide by it (inf/NaN): a
// solve is meaningful only when nzero == 0.
//
// Storage: the lower triangle of A, column-major, A(i,j) = A[i + j*lda], holds on exit
//   A(k,k)            d (1x1, after perturbation) or the (1,1) entry of a 2x2 block
//   A(k+1,k)          the off-diagonal entry of a 2x2 block starting at k (L(k+1,k) is 0 there)
//   A(k+1,k+1)        the (2,2) entry of that block
//   A(i,k), i > k+s-1 column k of L (unit diagonal not stored)
// The strict upper triangle is neither read nor written. piv (n ints): piv[k] = r for a 1x1 step
// at k; piv[k] = piv[k+1] = -(r + 1) for a 2x2 step at k (LAPACK's encoding, 0-based);
// ldlt_is_2x2 / ldlt_interchange decode it. P is the product of the interchanges in step order:
// row i of P A P' is row perm[i] of A, perm being the identity with the interchanges applied.
//
// Band variants (ldlt_band_*): the same pivoting on a symmetric band matrix in LAPACK's lower
// band storage, AB(i-j, j) = AB[(i-j) + j*ldab] for 0 <= i-j < ldab (ldab = W, the window). That
// is column-major storage with leading dimension W-1 in which only entries with i-j < W exist, so
// one core serves both (the dense case is W = n). Two differences:
//  * The band factor does not apply later interchanges to earlier columns of L (their rows may lie
//    outside the window): it is LAPACK's dsytrf form A = M D M', M = P_0 L_0 P_1 L_1 ..., with
//    L_k the elementary unit lower factor of step k. The band solve applies the interchanges as it
//    goes; the dense factor applies them to all of L, so its solve is gather, two triangular
//    sweeps, scatter.
//  * Interchanges spread nonzeros: a symmetric interchange k <-> r moves column r, whose entries
//    reach row r + W - 1, to position k. The band core admits row r as an interchange partner only
//    if the entries of column r that would leave the window, A(j,r) for j >= k + W, are exactly
//    zero (a value test, not a structural one: dropping exact zeros keeps the factorization exact).
//    When the row of the column maximum is not admissible the choice is made among admissible rows
//    (the largest admissible entry plays lambda's role) and nrestricted is incremented: the
//    factorization is still exact, but Bunch-Kaufman's growth bound then holds relative to that
//    entry only (and with nothing admissible a zero diagonal may become a zero pivot). Updates are
//    restricted to the rows where the pivot column is nonzero, so a window wider than the fill
//    costs little. ldab >= 1 + (half-bandwidth); a wider window gives pivoting more room.
//
// Group execution: every member decides each pivot itself from the same data (so all agree with
// no exchange); the interchange and the scaling of the pivot column are split over rows, the
// trailing update over elements. Each element is computed by one member in an order fixed by the
// data alone (A(i,j) -= L(i,k) w_j, then - L(i,k+1) w2_j), so results are bitwise the same for
// every group size; the serial group with a compile-time n (2..kLdltFixedMax) runs the same steps
// on a local copy. Barriers (any group but SerialGroup, whatever the data): factor 1 + 3n (sign
// set-up, then per column: choose | interchange and scale | update; the second column of a 2x2
// block passes its three barriers idle); dense solve 2n + 3 (gather, n forward steps, D, n
// backward steps, scatter); band solve 3n + 1. Every routine ends on a barrier. None allocates.
//
// Scratch (T): ldlt_scratch_size(n) = 3n for the dense factor, ldlt_band_scratch_size(n, ldab) =
// n + 2 ldab for the band one (row signs, then the two unscaled pivot columns); it must not alias
// A. The solves need none; ldlt_refine needs ldlt_refine_scratch_size(n) = n.
//
// Iterative refinement (ldlt_refine): x <- x + solve(b - A0 x), `iters` times. It needs the
// ORIGINAL matrix A0 (the factor overwrote A), so the caller keeps a copy. It is how a perturbed
// factorization (of A + E) recovers the solution of A x = b, and it mends the last digits lost to
// pivot growth.
//
// N fixes n at compile time for the dense routines (the run-time value is then ignored).
#pragma once

#include <cstring>
#include <type_traits>

#include "knot/linalg/dense/types.hpp"

#if !KNOT_ON_DEVICE
#include <stdexcept>
#endif

namespace knot::linalg {

// (1 + sqrt 17) / 8: minimizes Bunch-Kaufman's bound on element growth.
inline constexpr double kBunchKaufmanAlpha = 0.64038820320220756872767623199676;

template <class T>
struct LdltOptions {
  T threshold = T(kBunchKaufmanAlpha);  // u in [0, 1): larger pivots more stable, 0 = no pivoting
  T tiny = T(0);                        // a 1x1 pivot with |d| <= tiny is tiny
  T delta = T(0);                       // > 0: tiny pivots become sign * delta
  int n_primal = -1;                    // rows < n_primal primal (+), others dual (-); < 0: all +
  const int* row_sign = nullptr;        // if set, overrides n_primal: row_sign[i] > 0 primal
};

// Inertia of D (after perturbation), and what the pivoting did.
struct LdltStats {
  int npos = 0;         // positive eigenvalues of D
  int nneg = 0;         // negative
  int nzero = 0;        // zero (the matrix, perturbed, is singular)
  int nperturbed = 0;   // tiny 1x1 pivots replaced by +-delta
  int n2x2 = 0;         // 2x2 pivot blocks
  int nrestricted = 0;  // band only: steps where the window excluded the best interchange row
};

// Largest compile-time n that the serial group factors on a local copy (ldlt_factor_fixed).
inline constexpr int kLdltFixedMax = 8;

KNOT_HD constexpr bool ldlt_is_2x2(int p) { return p < 0; }
// The row interchanged at the step that wrote p (q = k for 1x1, k+1 for 2x2).
KNOT_HD constexpr int ldlt_interchange(int p) { return p < 0 ? -p - 1 : p; }

// Scratch entries ldlt_factor needs. On the CPU give it a 64-byte-aligned block: the serial path
// stores a pivot column into it with vector stores and reads it back one entry at a time, and when
// those stores straddle cache lines the reads wait for them (store forwarding fails), which cost
// 10-15% at n = 32 in knot_bench_factor (docs/BENCHMARKS.md).
KNOT_HD constexpr int ldlt_scratch_size(int n) { return n > 0 ? 3 * n : 1; }
KNOT_HD constexpr int ldlt_band_scratch_size(int n, int ldab) { return (n > 0 ? n : 0) + 2 * (ldab > 1 ? ldab : 1); }
KNOT_HD constexpr int ldlt_refine_scratch_size(int n) { return n > 0 ? n : 1; }

namespace detail {

// A caller's broken precondition (a leading dimension too small for the matrix): throws on the
// host, traps on the device. Never raised by the data.
KNOT_HD void ldlt_fail([[maybe_unused]] const char* what) {
#if KNOT_ON_DEVICE
  __trap();
#else
  throw std::invalid_argument(what);
#endif
}

template <class T>
KNOT_HD constexpr T ldlt_abs(T x) {
  return x < T(0) ? -x : x;
}

// The pivot block chosen at one step, as every member computes it.
template <class T>
struct LdltStep {
  int s = 1;  // block size
  int r = 0;  // row interchanged with q = k + s - 1
  bool perturbed = false, restricted = false;
  T d = T(0), b = T(0), c = T(0);     // block (after the interchange): [d] or [d b; b c]
  T f1 = T(0), f2 = T(0), f3 = T(0);  // 1x1: f1 = 1/d (0 when d == 0); 2x2: D^-1 = f3 [f1 -1; -1 f2]
};

// Whether interchanging r into position k keeps every nonzero inside the window (see the top).
template <bool Banded, class T>
KNOT_HD bool ldlt_admissible(const T* A, int lda, int n, int W, int k, int r) {
  if constexpr (Banded) {
    const int end = min_int(n, r + W);
    for (int j = k + W; j < end; ++j)
      if (A[j + r * lda] != T(0)) return false;
  }
  return true;
}

// D^-1 of a 2x2 block [a b; b c] (b != 0) in the scaled form f3 [f1 -1; -1 f2], f1 = c/b,
// f2 = a/b, f3 = 1 / (b (f1 f2 - 1)): no overflow where a c - b^2 would.
template <class T>
KNOT_HD void ldlt_inverse_2x2(T a, T b, T c, T& f1, T& f2, T& f3) {
  f1 = c / b;
  f2 = a / b;
  f3 = (T(1) / (f1 * f2 - T(1))) / b;
}

// max |x[i * stride]| over lo <= i < hi (NaN entries ignored; 0 when there are none). Four
// independent running maxima, so the scan is not one long dependency chain; a maximum is exact,
// so the grouping does not change the result.
template <class T>
KNOT_HD T ldlt_absmax(const T* x, int stride, int lo, int hi) {
  T m0 = T(0), m1 = T(0), m2 = T(0), m3 = T(0);
  int i = lo;
  for (; i + 4 <= hi; i += 4) {
    const T v0 = ldlt_abs(x[i * stride]), v1 = ldlt_abs(x[(i + 1) * stride]);
    const T v2 = ldlt_abs(x[(i + 2) * stride]), v3 = ldlt_abs(x[(i + 3) * stride]);
    m0 = v0 > m0 ? v0 : m0;
    m1 = v1 > m1 ? v1 : m1;
    m2 = v2 > m2 ? v2 : m2;
    m3 = v3 > m3 ? v3 : m3;
  }
  for (; i < hi; ++i) {
    const T v = ldlt_abs(x[i * stride]);
    m0 = v > m0 ? v : m0;
  }
  m0 = m1 > m0 ? m1 : m0;
  m2 = m3 > m2 ? m3 : m2;
  return m2 > m0 ? m2 : m0;
}

template <bool Banded, class T>
KNOT_HD LdltStep<T> ldlt_choose(const T* A, int lda, int n, int W, int k, const T* sgn, const LdltOptions<T>& o) {
  using detail::ldlt_abs;
  LdltStep<T> p;
  const int hi = min_int(n, k + W);
  const T* ak = A + k * lda;
  const T akk = ldlt_abs(ak[k]);
  // lambda and the first row that attains it (k when the column below the diagonal is zero),
  // found by a backward sweep without data-dependent branches.
  const T colmax = ldlt_absmax(ak, 1, k + 1, hi);
  int imax = k;
  if (colmax > T(0)) {
    for (int i = hi - 1; i > k; --i) imax = ldlt_abs(ak[i]) == colmax ? i : imax;
  }
  int r = k, s = 1;
  if (!(akk <= o.tiny && colmax <= o.tiny) && !(akk >= o.threshold * colmax)) {
    T lambda = colmax;
    r = imax;
    if (!ldlt_admissible<Banded>(A, lda, n, W, k, r)) {
      p.restricted = true;
      lambda = T(0);
      r = k;
      for (int i = k + 1; i < hi; ++i) {
        const T v = ldlt_abs(A[i + k * lda]);
        if (v > lambda && ldlt_admissible<Banded>(A, lda, n, W, k, i)) {
          lambda = v;
          r = i;
        }
      }
    }
    if (r != k) {
      const T row = ldlt_absmax(A + r, lda, k, r);                        // A(r, k..r-1)
      const T col = ldlt_absmax(A + r * lda, 1, r + 1, min_int(n, r + W));  // A(r+1.., r)
      const T sigma = col > row ? col : row;
      if (akk * sigma >= o.threshold * lambda * lambda) {
        r = k;
      } else if (!(ldlt_abs(A[r + r * lda]) >= o.threshold * sigma)) {
        s = 2;
      }
    }
  }
  p.s = s;
  p.r = r;
  if (s == 1) {
    T d = A[r + r * lda];
    if (o.delta > T(0) && ldlt_abs(d) <= o.tiny) {
      d = sgn[r] * o.delta;
      p.perturbed = true;
    }
    p.d = d;
    p.f1 = d != T(0) ? T(1) / d : T(0);
  } else {
    p.d = A[k + k * lda];
    p.b = A[r + k * lda];
    p.c = A[r + r * lda];
    ldlt_inverse_2x2(p.d, p.b, p.c, p.f1, p.f2, p.f3);
  }
  return p;
}

// Adds the step's pivot block to the statistics (arithmetic rather than branches: the signs of
// the pivots of an indefinite matrix are not predictable).
template <class T>
KNOT_HD void ldlt_count(LdltStats& st, const LdltStep<T>& p) {
  if (p.s == 1) {
    const int pos = p.d > T(0), neg = p.d < T(0);
    st.npos += pos;
    st.nneg += neg;
    st.nzero += 1 - pos - neg;
  } else {
    ++st.n2x2;
    const T det = p.d * p.c - p.b * p.b, tr = p.d + p.c;
    // det < 0: one of each sign; det > 0: two of the sign of the trace; det == 0: a zero and the
    // sign of the trace.
    const int dneg = det < T(0), dpos = det > T(0), dzero = 1 - dneg - dpos;
    const int tpos = tr > T(0), tneg = tr < T(0), tzero = 1 - tpos - tneg;
    st.npos += dneg + (2 * dpos + dzero) * tpos;
    st.nneg += dneg + (2 * dpos + dzero) * tneg;
    st.nzero += dzero + (2 * dpos + dzero) * tzero;
  }
  st.nperturbed += p.perturbed ? 1 : 0;
  st.nrestricted += p.restricted ? 1 : 0;
}

// The interchange, D and column(s) k (k+1) of L. Row i > k+s-1 of the window is one unit of work,
// done by one member: it reads the entries the interchange moves into row i of the pivot columns,
// writes their partners, keeps the unscaled values w in scratch (w1[i-k], w2[i-k]) and stores
// L(i,k) = w1_i / d, or [L(i,k) L(i,k+1)] = [w1_i w2_i] D^-1. Member 0 also moves the diagonal
// entries, the row signs and writes piv. No two units touch the same entry.
template <bool Banded, class G, class T>
KNOT_HD void ldlt_apply(G& g, T* A, int lda, int n, int W, int k, const LdltStep<T>& p, T* sgn, int* piv, T* w1,
                        T* w2) {
  const int hi = min_int(n, k + W), s = p.s, r = p.r;
  if constexpr (!Banded) {
    // Dense: the interchange also applies to the rows of L computed so far (P A P' = L D L').
    const int q = k + s - 1;
    if (r != q) {
      for (int j = g.rank(); j < k; j += g.size()) {
        const T t = A[q + j * lda];
        A[q + j * lda] = A[r + j * lda];
        A[r + j * lda] = t;
      }
    }
  }
  if (g.rank() == 0) {
    const int q = k + s - 1;
    if (r != q) {
      const T t = A[q + q * lda];
      A[q + q * lda] = A[r + r * lda];
      A[r + r * lda] = t;
      const T u = sgn[q];
      sgn[q] = sgn[r];
      sgn[r] = u;
    }
    if (s == 1) {
      A[k + k * lda] = p.d;  // perturbed, perhaps
      piv[k] = r;
    } else {
      piv[k] = -(r + 1);
      piv[k + 1] = -(r + 1);
      // Band: column k+1 reaches one row past column k's window. Admissibility made the entry
      // that moves into (k+W, k+1) zero; the one it trades with moves to (k+W, r).
      if (r != q && k + W < n) {
        A[k + W + r * lda] = A[k + W + q * lda];
        A[k + W + q * lda] = T(0);
      }
    }
  }
  if (s == 1) {
    if constexpr (kSerial<G>) {
      // The same units, in ranges instead of per-row branches: rows between k and r trade with
      // row r (a stride-lda walk), rows past r with column r.
      T* KNOT_RESTRICT ak = A + k * lda;
      T* KNOT_RESTRICT wk = w1;  // wk[i - k]: the unscaled column
      if (r == k) {
        for (int i = k + 1; i < hi; ++i) {
          wk[i - k] = ak[i];
          ak[i] = ak[i] * p.f1;
        }
      } else {
        for (int i = k + 1; i < r; ++i) {
          const T w = A[r + i * lda];
          A[r + i * lda] = ak[i];
          wk[i - k] = w;
          ak[i] = w * p.f1;
        }
        wk[r - k] = ak[r];
        ak[r] = ak[r] * p.f1;
        T* KNOT_RESTRICT ar = A + r * lda;
        for (int i = r + 1; i < hi; ++i) {
          const T w = ar[i];
          ar[i] = ak[i];
          wk[i - k] = w;
          ak[i] = w * p.f1;
        }
      }
    } else {
      for (int i = k + 1 + g.rank(); i < hi; i += g.size()) {
        T* aik = A + i + k * lda;
        T w;
        if (r == k || i == r) {
          w = *aik;
        } else {
          T* partner = i < r ? A + r + i * lda : A + i + r * lda;  // old (i, r)
          w = *partner;
          *partner = *aik;
        }
        w1[i - k] = w;
        *aik = w * p.f1;
      }
    }
  } else {
    for (int i = k + 2 + g.rank(); i < hi; i += g.size()) {
      T* aik = A + i + k * lda;
      T* aik1 = aik + lda;
      T x1, x2;
      if (i == r) {  // r > k+1: row r of column k trades places with the block's off-diagonal
        x1 = A[k + 1 + k * lda];
        A[k + 1 + k * lda] = *aik;
        x2 = *aik1;
      } else {
        x1 = *aik;
        if (r == k + 1) {
          x2 = *aik1;
        } else {
          T* partner = i < r ? A + r + i * lda : A + i + r * lda;
          x2 = *partner;
          *partner = *aik1;
        }
      }
      w1[i - k] = x1;
      w2[i - k] = x2;
      *aik = p.f3 * (p.f1 * x1 - x2);
      *aik1 = p.f3 * (p.f2 * x2 - x1);
    }
  }
}

// Trailing update A(i,j) -= L(i,k) w1_j (- L(i,k+1) w2_j) for k+s <= j <= i < end.
template <bool Banded, class G, class T>
KNOT_HD void ldlt_update(G& g, T* A, int lda, int n, int W, int k, int s, const T* w1, const T* w2) {
  const int lo = k + s;
  int end = min_int(n, k + W);
  if constexpr (Banded) {
    // Rows past the last nonzero of the pivot columns have zero multipliers: nothing to do.
    while (end > lo && w1[end - 1 - k] == T(0) && (s == 1 || w2[end - 1 - k] == T(0))) --end;
  }
  const int m = end - lo;
  if (m <= 0) return;
  const T* l1 = A + k * lda;
  const T* l2 = A + (k + 1) * lda;
  if constexpr (kSerial<G>) {
    const T* KNOT_RESTRICT c1 = l1;
    const T* KNOT_RESTRICT c2 = l2;
    for (int j = lo; j < end; ++j) {
      T* KNOT_RESTRICT aj = A + j * lda;
      const T v1 = w1[j - k];
      if (s == 1) {
        for (int i = j; i < end; ++i) aj[i] -= c1[i] * v1;
      } else {
        const T v2 = w2[j - k];
        for (int i = j; i < end; ++i) aj[i] = aj[i] - c1[i] * v1 - c2[i] * v2;
      }
    }
  } else {
    const int count = m * (m + 1) / 2;
    for (int e = g.rank(); e < count; e += g.size()) {
      int i, j;
      lower_triangle_index(e, m, i, j);
      i += lo;
      j += lo;
      T& a = A[i + j * lda];
      if (s == 1) {
        a -= l1[i] * w1[j - k];
      } else {
        a = a - l1[i] * w1[j - k] - l2[i] * w2[j - k];
      }
    }
  }
}

// sgn[i] = +1 for a primal row, -1 for a dual one (see LdltOptions).
template <class G, class T>
KNOT_HD void ldlt_signs(G& g, int n, const LdltOptions<T>& o, T* sgn) {
  for (int i = g.rank(); i < n; i += g.size()) {
    const bool primal = o.row_sign != nullptr ? o.row_sign[i] > 0 : (o.n_primal < 0 || i < o.n_primal);
    sgn[i] = primal ? T(1) : T(-1);
  }
}

// The factorization proper, on A(i,j) = A[i + j*lda] for 0 <= i-j < W; sgn (n) holds the row
// signs on entry (visible to every member), w1 and w2 hold W entries each.
template <bool Banded, class G, class T>
KNOT_HD LdltStats ldlt_factor_core(G& g, int n, T* A, int lda, int W, int* piv, T* sgn, T* w1, T* w2,
                                   const LdltOptions<T>& o) {
  LdltStats st;
  bool second = false;  // this column is the second of a 2x2 block
  for (int k = 0; k < n; ++k) {
    LdltStep<T> p;
    if (!second) {
      p = ldlt_choose<Banded>(A, lda, n, W, k, sgn, o);
      ldlt_count(st, p);
    }
    g.sync();
    if (!second) ldlt_apply<Banded>(g, A, lda, n, W, k, p, sgn, piv, w1, w2);
    g.sync();
    if (!second) ldlt_update<Banded>(g, A, lda, n, W, k, p.s, w1, w2);
    g.sync();
    second = !second && p.s == 2;
  }
  return st;
}

// sum_{lo <= i < hi} x_i y_i as four interleaved partial sums (i - lo mod 4, each left to right),
// added as (s0 + s1) + (s2 + s3): a fixed order (so every member gets the same bits) whose four
// chains run in parallel.
template <class T>
KNOT_HD T ldlt_dot(int lo, int hi, const T* x, const T* y) {
  T s0 = T(0), s1 = T(0), s2 = T(0), s3 = T(0);
  int i = lo;
  for (; i + 4 <= hi; i += 4) {
    s0 += x[i] * y[i];
    s1 += x[i + 1] * y[i + 1];
    s2 += x[i + 2] * y[i + 2];
    s3 += x[i + 3] * y[i + 3];
  }
  if (i < hi) s0 += x[i] * y[i];
  if (i + 1 < hi) s1 += x[i + 1] * y[i + 1];
  if (i + 2 < hi) s2 += x[i + 2] * y[i + 2];
  return (s0 + s1) + (s2 + s3);
}

// The serial group with a fixed small n: the same steps on a local copy with a compile-time
// leading dimension, the column loop unrolled, so every loop but the interchange's has a constant
// trip count.
template <int N, class T>
KNOT_HD LdltStats ldlt_factor_fixed(T* A, int lda, int* piv, const LdltOptions<T>& o) {
  SerialGroup g;
  T a[N * N], sgn[N], w1[N], w2[N];
  KNOT_UNROLL for (int j = 0; j < N; ++j) {
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i >= j) a[i + j * N] = A[i + j * lda];
    }
  }
  ldlt_signs(g, N, o, sgn);
  LdltStats st;
  bool second = false;
  KNOT_UNROLL for (int k = 0; k < N; ++k) {
    if (second) {
      second = false;
    } else {
      const LdltStep<T> p = ldlt_choose<false>(a, N, N, N, k, sgn, o);
      ldlt_count(st, p);
      ldlt_apply<false>(g, a, N, N, N, k, p, sgn, piv, w1, w2);
      ldlt_update<false>(g, a, N, N, N, k, p.s, w1, w2);
      second = p.s == 2;
    }
  }
  KNOT_UNROLL for (int j = 0; j < N; ++j) {
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i >= j) A[i + j * lda] = a[i + j * N];
    }
  }
  return st;
}

// Band form: B <- M^-T D^-1 M^-1 B, B: n x nrhs, column-major, leading dimension ldb.
template <class G, class T>
KNOT_HD void ldlt_band_solve_core(G& g, int n, const T* A, int lda, int W, const int* piv, int nrhs, T* B, int ldb) {
  // Forward: B <- L_k^-1 P_k B for k = 0, 1, ...
  bool second = false;
  for (int k = 0; k < n; ++k) {
    const bool act = !second;
    const int s = ldlt_is_2x2(piv[k]) ? 2 : 1, q = k + s - 1, r = ldlt_interchange(piv[k]);
    if (act && r != q) {
      for (int c = g.rank(); c < nrhs; c += g.size()) {
        T* b = B + c * ldb;
        const T t = b[q];
        b[q] = b[r];
        b[r] = t;
      }
    }
    g.sync();
    if (act) {
      const int lo = k + s, hi = min_int(n, k + W), m = hi - lo;
      const T* l1 = A + k * lda;
      const T* l2 = A + (k + 1) * lda;
      if constexpr (kSerial<G>) {
        for (int c = 0; c < nrhs; ++c) {
          T* KNOT_RESTRICT b = B + c * ldb;
          const T b1 = b[k];
          // The first row (the next step's pivot) apart, as a scalar: a scalar load right after a
          // vector store of the same entry would stall store-to-load forwarding.
          if (s == 1) {
            if (lo < hi) b[lo] -= l1[lo] * b1;
            for (int i = lo + 1; i < hi; ++i) b[i] -= l1[i] * b1;
          } else {
            const T b2 = b[k + 1];
            if (lo < hi) b[lo] = b[lo] - l1[lo] * b1 - l2[lo] * b2;
            if (lo + 1 < hi) b[lo + 1] = b[lo + 1] - l1[lo + 1] * b1 - l2[lo + 1] * b2;
            for (int i = lo + 2; i < hi; ++i) b[i] = b[i] - l1[i] * b1 - l2[i] * b2;
          }
        }
      } else if (m > 0) {
        for (int e = g.rank(); e < m * nrhs; e += g.size()) {
          const int c = e / m, i = lo + (e - c * m);
          T* b = B + c * ldb;
          if (s == 1) {
            b[i] -= l1[i] * b[k];
          } else {
            b[i] = b[i] - l1[i] * b[k] - l2[i] * b[k + 1];
          }
        }
      }
    }
    g.sync();
    second = act && s == 2;
  }
  // D^-1, one member per block (blocks dealt by their first column).
  second = false;
  for (int k = 0; k < n; ++k) {
    const bool act = !second;
    const int s = ldlt_is_2x2(piv[k]) ? 2 : 1;
    if (act && k % g.size() == g.rank()) {
      if (s == 1) {
        const T d = A[k + k * lda];
        for (int c = 0; c < nrhs; ++c) B[k + c * ldb] /= d;
      } else {
        T f1, f2, f3;
        ldlt_inverse_2x2(A[k + k * lda], A[k + 1 + k * lda], A[k + 1 + (k + 1) * lda], f1, f2, f3);
        for (int c = 0; c < nrhs; ++c) {
          T* b = B + c * ldb;
          const T y1 = b[k], y2 = b[k + 1];
          b[k] = f3 * (f1 * y1 - y2);
          b[k + 1] = f3 * (f2 * y2 - y1);
        }
      }
    }
    second = act && s == 2;
  }
  g.sync();
  // Backward: B <- P_k L_k^-T B for k = last block, ..., 0. A 2x2 block is met at its second
  // column (piv < 0 there), its first then passes idle. One member per right-hand side.
  bool skip = false;
  for (int k = n - 1; k >= 0; --k) {
    if (!skip) {
      const int s = ldlt_is_2x2(piv[k]) ? 2 : 1, kb = k - s + 1, q = k, r = ldlt_interchange(piv[k]);
      const int hi = min_int(n, kb + W);
      const T* l1 = A + kb * lda;
      const T* l2 = A + (kb + 1) * lda;
      for (int c = g.rank(); c < nrhs; c += g.size()) {
        T* b = B + c * ldb;
        b[kb] -= ldlt_dot(k + 1, hi, l1, b);
        if (s == 2) b[k] -= ldlt_dot(k + 1, hi, l2, b);
        if (r != q) {
          const T t = b[q];
          b[q] = b[r];
          b[r] = t;
        }
      }
      skip = s == 2;
    } else {
      skip = false;
    }
    g.sync();
  }
}

// x <- D^-1 x for the block starting at k (s = 1 or 2).
template <class T>
KNOT_HD void ldlt_block_solve(const T* A, int lda, int k, int s, T* x) {
  if (s == 1) {
    x[k] /= A[k + k * lda];
  } else {
    T f1, f2, f3;
    ldlt_inverse_2x2(A[k + k * lda], A[k + 1 + k * lda], A[k + 1 + (k + 1) * lda], f1, f2, f3);
    const T y1 = x[k], y2 = x[k + 1];
    x[k] = f3 * (f1 * y1 - y2);
    x[k + 1] = f3 * (f2 * y2 - y1);
  }
}

// b <- P b (forward: the interchanges in order) or P' b (their reverse).
template <bool Forward, class T>
KNOT_HD void ldlt_permute(int n, const int* piv, T* b) {
  if constexpr (Forward) {
    for (int k = 0; k < n;) {
      const int s = ldlt_is_2x2(piv[k]) ? 2 : 1, q = k + s - 1, r = ldlt_interchange(piv[k]);
      const T t = b[q];
      b[q] = b[r];
      b[r] = t;
      k += s;
    }
  } else {
    for (int k = n - 1; k >= 0;) {  // a block's last column has piv < 0 iff the block is 2x2
      const int s = ldlt_is_2x2(piv[k]) ? 2 : 1, r = ldlt_interchange(piv[k]);
      const T t = b[k];
      b[k] = b[r];
      b[r] = t;
      k -= s;
    }
  }
}

// +0 where drop is set, else x (bitwise: the +0 the sweeps multiply by inside a 2x2 block).
// On the host a mask on the bits, which compilers do not turn back into a branch.
template <class T>
KNOT_HD T ldlt_zero_if(bool drop, T x) {
#if !KNOT_ON_DEVICE
  if constexpr (sizeof(T) == 8 || sizeof(T) == 4) {
    using U = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned>;
    U u;
    std::memcpy(&u, &x, sizeof u);
    u &= drop ? U(0) : ~U(0);
    std::memcpy(&x, &u, sizeof u);
    return x;
  }
#endif
  return drop ? T(0) : x;
}

// Index of the lowest set bit of m != 0.
KNOT_HD int ldlt_lowest_bit(unsigned long long m) {
#if KNOT_ON_DEVICE
  return __ffsll(static_cast<long long>(m)) - 1;
#elif defined(__GNUC__) || defined(__clang__)
  return __builtin_ctzll(m);
#else
  int k = 0;
  while (!(m & 1ULL)) {
    m >>= 1;
    ++k;
  }
  return k;
#endif
}

// One right-hand side on one thread, the vector in registers (N fixed, <= 32): the same
// operations, in the same order, as the cooperative sweeps below. The block structure is read
// from piv into flags first and used through selects and masks, not branches: whether a step is
// 1x1 or 2x2 follows the data, so branches on it would be mispredicted at random. Only D's 2x2
// blocks take a loop, over the set bits of a mask (every quotient b_k / d_k is formed first,
// those of 2x2 blocks then replaced).
template <int N, class T>
KNOT_HD void ldlt_dense_solve_fixed(const T* A, int lda, const int* piv, T* b) {
  static_assert(N >= 1 && N <= 64, "one bit per column");
  // first[k]: a 2x2 block starts at k (ascending scan, as the forward sweep and P b see it);
  // last[k]: a 2x2 block ends at k (descending scan, as the backward sweep and P' b see it).
  bool first[N], last[N + 1];
  {
    bool second = false;
    KNOT_UNROLL for (int k = 0; k < N; ++k) {
      first[k] = !second & ldlt_is_2x2(piv[k]);
      second = first[k];
    }
    bool consumed = false;
    KNOT_UNROLL for (int k = N - 1; k >= 0; --k) {
      last[k] = !consumed & ldlt_is_2x2(piv[k]);
      consumed = last[k];
    }
    last[N] = false;
  }
  // P b: the interchange of each block at its last column (ldlt_permute<true>).
  KNOT_UNROLL for (int q = 0; q < N; ++q) {
    const int m = -static_cast<int>(first[q]), r = ldlt_interchange(piv[q]);
    const int t = (q & m) | (r & ~m);
    const T v = b[q];
    b[q] = b[t];
    b[t] = v;
  }
  T x[N];
  KNOT_UNROLL for (int i = 0; i < N; ++i) x[i] = b[i];
  KNOT_UNROLL for (int k = 0; k < N; ++k) {
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i > k) {
        const T l = A[i + k * lda];
        x[i] -= (i == k + 1 ? ldlt_zero_if(first[k], l) : l) * x[k];
      }
    }
  }
  T y[N];
  unsigned long long blocks = 0;
  KNOT_UNROLL for (int k = 0; k < N; ++k) {
    y[k] = x[k] / A[k + k * lda];
    blocks |= static_cast<unsigned long long>(first[k] && k + 1 < N) << k;
  }
  while (blocks != 0) {
    const int k = ldlt_lowest_bit(blocks), k1 = k + 1 < N ? k + 1 : k;  // k + 1 < N by the mask
    blocks &= blocks - 1;
    T f1, f2, f3;
    ldlt_inverse_2x2(A[k + k * lda], A[k1 + k * lda], A[k1 + k1 * lda], f1, f2, f3);
    y[k] = f3 * (f1 * x[k] - x[k1]);
    y[k1] = f3 * (f2 * x[k1] - x[k]);
  }
  KNOT_UNROLL for (int k = N - 1; k >= 0; --k) {
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i < k) {
        const T l = A[k + i * lda];
        y[i] -= (i == k - 1 ? ldlt_zero_if(last[k], l) : l) * y[k];
      }
    }
  }
  KNOT_UNROLL for (int i = 0; i < N; ++i) b[i] = y[i];
  // P' b: descending, the interchange of each block at its last column (ldlt_permute<false>).
  KNOT_UNROLL for (int k = N - 1; k >= 0; --k) {
    const int m = -static_cast<int>(last[k + 1]), r = ldlt_interchange(piv[k]);
    const int t = (k & m) | (r & ~m);
    const T v = b[k];
    b[k] = b[t];
    b[t] = v;
  }
}

// Dense form, P A P' = L D L': B <- P' L^-T D^-1 L^-1 P B. The unit lower L has a zero at
// (k+1, k) of every 2x2 block (that entry holds D's off-diagonal; the sweeps multiply by 0 there
// rather than branch). Forward sweep: step k subtracts L(i,k) x_k from rows i > k; backward: step
// k (descending) subtracts L(k,i) x_k from rows i < k. Each entry thus takes its updates in a
// fixed order.
template <int N, class G, class T>
KNOT_HD void ldlt_dense_solve_core(G& g, int n, const T* A, int lda, const int* piv, int nrhs, T* B, int ldb) {
  if constexpr (kSerial<G> && N != kDynamic && N >= 1 && N <= 32) {
    for (int c = 0; c < nrhs; ++c) ldlt_dense_solve_fixed<N>(A, lda, piv, B + c * ldb);
    g.sync();
  } else {
    for (int c = g.rank(); c < nrhs; c += g.size()) ldlt_permute<true>(n, piv, B + c * ldb);
    g.sync();
    bool second = false;
    for (int k = 0; k < n; ++k) {
      const bool first2 = !second && ldlt_is_2x2(piv[k]);
      const int lo = k + 1, m = n - lo;
      const T* l = A + k * lda;
      const T l1 = lo < n && !first2 ? l[lo] : T(0);  // L(k+1, k), zero inside a 2x2 block
      if constexpr (kSerial<G>) {
        for (int c = 0; c < nrhs; ++c) {
          T* KNOT_RESTRICT b = B + c * ldb;
          const T bk = b[k];
          if (lo < n) b[lo] -= l1 * bk;
          for (int i = lo + 1; i < n; ++i) b[i] -= l[i] * bk;
        }
      } else if (m > 0) {
        for (int e = g.rank(); e < m * nrhs; e += g.size()) {
          const int c = e / m, i = lo + (e - c * m);
          T* b = B + c * ldb;
          b[i] -= (i == lo ? l1 : l[i]) * b[k];
        }
      }
      g.sync();
      second = first2;
    }
    second = false;
    for (int k = 0; k < n; ++k) {
      const bool first = !second, two = first && ldlt_is_2x2(piv[k]);
      if (first)
        for (int c = 0; c < nrhs; ++c)
          if ((k + c * n) % g.size() == g.rank()) ldlt_block_solve(A, lda, k, two ? 2 : 1, B + c * ldb);
      second = two;
    }
    g.sync();
    bool consumed = false;
    for (int k = n - 1; k >= 0; --k) {
      const bool end2 = !consumed && ldlt_is_2x2(piv[k]);
      const int m = k;  // rows 0..k-1
      const T l1 = k >= 1 && !end2 ? A[k + (k - 1) * lda] : T(0);  // L(k, k-1), zero in a 2x2 block
      if constexpr (kSerial<G>) {
        for (int c = 0; c < nrhs; ++c) {
          T* KNOT_RESTRICT b = B + c * ldb;
          const T bk = b[k];
          for (int i = 0; i + 1 < m; ++i) b[i] -= A[k + i * lda] * bk;
          if (m >= 1) b[m - 1] -= l1 * bk;
        }
      } else if (m > 0) {
        for (int e = g.rank(); e < m * nrhs; e += g.size()) {
          const int c = e / m, i = e - c * m;
          T* b = B + c * ldb;
          b[i] -= (i == m - 1 ? l1 : A[k + i * lda]) * b[k];
        }
      }
      g.sync();
      consumed = end2;
    }
    for (int c = g.rank(); c < nrhs; c += g.size()) ldlt_permute<false>(n, piv, B + c * ldb);
    g.sync();
  }
}

// x <- x + solve(b - A0 x), iters times. A0 symmetric, lower part in the window storage of the
// factor (dense: W = n). r: n entries of scratch.
template <bool Banded, int N, class G, class T>
KNOT_HD void ldlt_refine_core(G& g, int n, const T* A0, int lda0, const T* F, int ldf, int W, const int* piv,
                              const T* b, T* x, int iters, T* r) {
  for (int it = 0; it < iters; ++it) {
    for (int i = g.rank(); i < n; i += g.size()) {
      T acc = b[i];
      const int j0 = i - W + 1 > 0 ? i - W + 1 : 0, j1 = min_int(n, i + W);
      for (int j = j0; j < i; ++j) acc -= A0[i + j * lda0] * x[j];
      for (int j = i; j < j1; ++j) acc -= A0[j + i * lda0] * x[j];
      r[i] = acc;
    }
    g.sync();
    if constexpr (Banded) {
      ldlt_band_solve_core(g, n, F, ldf, W, piv, 1, r, n > 0 ? n : 1);
    } else {
      ldlt_dense_solve_core<N>(g, n, F, ldf, piv, 1, r, n > 0 ? n : 1);
    }
    for (int i = g.rank(); i < n; i += g.size()) x[i] += r[i];
    g.sync();
  }
}

}  // namespace detail

// Factors the n x n symmetric A (lower triangle, column-major, leading dimension lda) in place.
// Returns the statistics on every member.
template <int N = kDynamic, class G, class T>
KNOT_HD LdltStats ldlt_factor(G& g, int n_rt, T* A, int lda, int* piv, T* scratch,
                              const LdltOptions<T>& opts = LdltOptions<T>{}) {
  const int n = extent<N>(n_rt) > 0 ? extent<N>(n_rt) : 0;
  if (lda < n) detail::ldlt_fail("ldlt_factor: lda < n");
  if constexpr (detail::kSerial<G> && N >= 2 && N <= kLdltFixedMax) {
    return detail::ldlt_factor_fixed<N>(A, lda, piv, opts);
  } else {
    T* sgn = scratch;
    detail::ldlt_signs(g, n, opts, sgn);
    g.sync();
    return detail::ldlt_factor_core<false>(g, n, A, lda, n, piv, sgn, scratch + n, scratch + 2 * n, opts);
  }
}

// Solves A X = B with the factors of ldlt_factor; B: n x nrhs, column-major, leading dimension
// ldb, overwritten by X. No scratch.
template <int N = kDynamic, class G, class T>
KNOT_HD void ldlt_solve(G& g, int n_rt, int nrhs, const T* A, int lda, const int* piv, T* B, int ldb) {
  const int n = extent<N>(n_rt) > 0 ? extent<N>(n_rt) : 0;
  if (lda < n || (nrhs > 0 && ldb < n)) detail::ldlt_fail("ldlt_solve: lda or ldb < n");
  detail::ldlt_dense_solve_core<N>(g, n, A, lda, piv, nrhs, B, ldb);
}

// Iterative refinement of x (n entries; on entry a solution from ldlt_solve) for A0 x = b, A0 the
// original matrix (lower triangle, leading dimension lda0), F/piv its factors (ldf).
template <int N = kDynamic, class G, class T>
KNOT_HD void ldlt_refine(G& g, int n_rt, const T* A0, int lda0, const T* F, int ldf, const int* piv, const T* b,
                         T* x, int iters, T* scratch) {
  const int n = extent<N>(n_rt) > 0 ? extent<N>(n_rt) : 0;
  if (lda0 < n || ldf < n) detail::ldlt_fail("ldlt_refine: lda0 or ldf < n");
  detail::ldlt_refine_core<false, N>(g, n, A0, lda0, F, ldf, n, piv, b, x, iters, scratch);
}

// The band forms: AB in lower band storage with ldab = W >= 1 + half-bandwidth (see the top).
template <class G, class T>
KNOT_HD LdltStats ldlt_band_factor(G& g, int n, T* AB, int ldab, int* piv, T* scratch,
                                   const LdltOptions<T>& opts = LdltOptions<T>{}) {
  if (n < 0) n = 0;
  if (ldab < 1) detail::ldlt_fail("ldlt_band_factor: ldab < 1");
  T* sgn = scratch;
  detail::ldlt_signs(g, n, opts, sgn);
  g.sync();
  return detail::ldlt_factor_core<true>(g, n, AB, ldab - 1, ldab, piv, sgn, scratch + n, scratch + n + ldab, opts);
}

template <class G, class T>
KNOT_HD void ldlt_band_solve(G& g, int n, int nrhs, const T* AB, int ldab, const int* piv, T* B, int ldb) {
  if (ldab < 1 || (nrhs > 0 && ldb < n)) detail::ldlt_fail("ldlt_band_solve: ldab < 1 or ldb < n");
  detail::ldlt_band_solve_core(g, n > 0 ? n : 0, AB, ldab - 1, ldab, piv, nrhs, B, ldb);
}

// AB0: the original band matrix (same ldab as the factor).
template <class G, class T>
KNOT_HD void ldlt_band_refine(G& g, int n, const T* AB0, const T* F, int ldab, const int* piv, const T* b, T* x,
                              int iters, T* scratch) {
  if (ldab < 1) detail::ldlt_fail("ldlt_band_refine: ldab < 1");
  detail::ldlt_refine_core<true, kDynamic>(g, n > 0 ? n : 0, AB0, ldab - 1, F, ldab - 1, ldab, piv, b, x, iters, scratch);
}

}  // namespace knot::linalg

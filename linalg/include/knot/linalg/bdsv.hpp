// Direct solve of a symmetric positive definite block-tridiagonal system: block Cholesky
// (block Thomas) on GLASS strips, factored in place.
//
// A has nb block-rows [L_k | D_k | R_k] of bs x 3bs row-major strips (band.hpp); symmetric, so
// R_k = L_{k+1}' and the R slots are never read. Factor:
//   F_0 = chol(D_0);   for k > 0:  E_k = L_k F_{k-1}^-T,   F_k = chol(D_k - E_k E_k')
// On return block-row k's MAIN slot holds F_k in its lower triangle (the strict upper triangle keeps
// the entries of D_k) and its LEFT slot holds E_k. The strips no longer hold A.
// Solve, in place on the padded vector v ((nb + 2)*bs, b in the interior blocks):
//   forward  y_k = F_k^-1 (b_k - E_k y_{k-1}),   backward  x_k = F_k^-T (y_k - E_{k+1}' x_{k+1})
//
// The sweep over k is serial (an inherent dependency chain); each knot's potrf/trsm/syrk/gemv/trsv
// runs cooperatively on the group. Scratch: bdsv_scratch_size(bs) elements (two dense column-major
// bs x bs staging blocks); bdsv_solve reads the strips in place and does not use its scratch, which
// it takes so that factor, solve and the fused call share one signature shape (GLASS's).
// CHECK: a pivot that is not positive, or not finite, in any knot sets *fail = 1 (else *fail is left
// untouched); the sweep still runs to the end with the same barrier sequence, and the factor is then
// invalid. Thread-count invariant; ends on a barrier.
#pragma once

#include "knot/linalg/band.hpp"
#include "knot/linalg/dense/gemv.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/syrk.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/dense/trsv.hpp"

namespace knot::linalg {

KNOT_HD constexpr int bdsv_scratch_size(int bs) { return bs > 0 ? 2 * bs * bs : 1; }

template <bool CHECK = false, int BS = kDynamic, class G, class T>
KNOT_HD void bdsv_factor(G& g, int nb, int bs_rt, T* strips, T* scratch, int* fail = nullptr) {
  const int bs = extent<BS>(bs_rt);
  if (nb <= 0 || bs <= 0) {
    g.sync();
    return;
  }
  T* f_prev = scratch;         // F_{k-1}, then D_k -> F_k: carried from one knot to the next
  T* e = scratch + bs * bs;    // L_k -> E_k
  for (int k = 0; k < nb; ++k) {
    T* strip = strips + strip_offset(k, bs);
    if (k > 0) {
      load_block<true, BS>(g, bs, e, strip, BandSlot::LEFT);
      trsm<Side::Right, Uplo::Lower, Trans::Yes, BS, BS>(g, bs, bs, T(1), f_prev, bs, e, bs);
      store_block<true, BS>(g, bs, strip, BandSlot::LEFT, e);
    }
    load_block<true, BS>(g, bs, f_prev, strip, BandSlot::MAIN);
    if (k > 0) syrk<Uplo::Lower, Trans::No, BS, BS>(g, bs, bs, T(-1), e, bs, T(1), f_prev, bs);
    const int info = potrf<BS>(g, bs, f_prev, bs);
    if constexpr (CHECK) {
      if (info != 0 && fail != nullptr && g.rank() == 0) *fail = 1;
    }
    store_block<true, BS>(g, bs, strip, BandSlot::MAIN, f_prev);
  }
}

template <int BS = kDynamic, class G, class T>
KNOT_HD void bdsv_solve(G& g, int nb, int bs_rt, const T* strips, T* v, T* /*scratch*/) {
  const int bs = extent<BS>(bs_rt);
  const int ld = 3 * bs;
  // Read column-major with leading dimension 3bs, a row-major strip block is its transpose:
  // the MAIN view is U = F_k' (upper) and the LEFT view is E_k'.
  auto f_view = [&](int k) { return strips + strip_offset(k, bs) + bs; };
  auto e_view = [&](int k) { return strips + strip_offset(k, bs); };
  auto vb = [&](int k) { return v + static_cast<long>(k + 1) * bs; };
  for (int k = 0; k < nb; ++k) {
    if (k > 0) gemv<Trans::Yes, BS, BS>(g, bs, bs, T(-1), e_view(k), ld, vb(k - 1), T(1), vb(k));
    trsv<Uplo::Upper, Trans::Yes, BS>(g, bs, f_view(k), ld, vb(k));
  }
  for (int k = nb - 1; k >= 0; --k) {
    if (k + 1 < nb) gemv<Trans::No, BS, BS>(g, bs, bs, T(-1), e_view(k + 1), ld, vb(k + 1), T(1), vb(k));
    trsv<Uplo::Upper, Trans::No, BS>(g, bs, f_view(k), ld, vb(k));
  }
  g.sync();
}

template <bool CHECK = false, int BS = kDynamic, class G, class T>
KNOT_HD void bdsv(G& g, int nb, int bs, T* strips, T* v, T* scratch, int* fail = nullptr) {
  bdsv_factor<CHECK, BS>(g, nb, bs, strips, scratch, fail);
  bdsv_solve<BS>(g, nb, bs, strips, v, scratch);
}

}  // namespace knot::linalg

// Preconditioners for pcg, built from the SPD block-tridiagonal S = D + O (D block diagonal,
// O the off-diagonal blocks) and stored as strips, so that bdmv applies them.
//
//   block-Jacobi:     P^-1 = D^-1                       (MAIN_k = D_k^-1, LEFT = RIGHT = 0)
//   symmetric stair:  P^-1 = D^-1 - D^-1 O D^-1          (MPCGPU, Bu et al., ICRA 2024)
//                     MAIN_k = D_k^-1,  RIGHT_k = -D_k^-1 R_k D_{k+1}^-1,  LEFT_{k+1} = RIGHT_k'
// D^-1 O D^-1 is already block-tridiagonal, so "restricted to the band" drops nothing. The stair
// form is the second term of the Neumann series of (D + O)^-1; it is SPD when the spectral radius of
// D^-1/2 O D^-1/2 is below 1, which holds for the Schur complements of MPC problems the paper
// studies but is not guaranteed in general. LEFT_{k+1} is written as the exact transpose of RIGHT_k,
// so P^-1 is exactly symmetric.
//
// Operands: S and Pinv are nb strips of bs x 3bs (must not alias); S's L_k are read as R_{k-1}'
// (S symmetric), its R_k slots are read by the stair form. Scratch: precond_scratch_size(bs).
// Returns 0, or k + 1 for the first diagonal block D_k that is not SPD (then Pinv is invalid), or -1
// for a negative dimension or a null operand (then nothing is written). nb == 0 or bs == 0: returns 0.
// Thread-count invariant; ends on a barrier; every member returns the same value.
#pragma once

#include "knot/linalg/band.hpp"
#include "knot/linalg/dense/gemm.hpp"
#include "knot/linalg/dense/spd_inverse.hpp"

namespace knot::linalg {

KNOT_HD constexpr long precond_scratch_size(int bs) { return bs > 0 ? 3L * bs * bs + spd_inverse_scratch_size(bs) : 1; }

namespace detail {
// 1 when the arguments describe a non-empty system to build; else ends on the barrier and gives the
// return value: 0 for an empty system, -1 for bad arguments.
template <class G, class T>
KNOT_HD int precond_check_args(G& g, int nb, int bs, const T* S, const T* Pinv, const T* scratch) {
  if (nb > 0 && bs > 0 && S != nullptr && Pinv != nullptr && scratch != nullptr) return 1;
  g.sync();
  return (nb == 0 || bs == 0) && nb >= 0 && bs >= 0 ? 0 : -1;
}

// MAIN_k = D_k^-1 for every k, LEFT and RIGHT zeroed.
template <int BS, class G, class T>
KNOT_HD int precond_diagonal(G& g, int nb, int bs, const T* S, T* Pinv, T* scratch) {
  T* dk = scratch;
  T* inv = scratch + bs * bs;
  T* inv_scratch = scratch + 3 * bs * bs;
  int first_fail = 0;
  for (int k = 0; k < nb; ++k) {
    load_block<true, BS>(g, bs, dk, S + strip_offset(k, bs), BandSlot::MAIN);
    const int info = spd_inverse<BS>(g, bs, dk, bs, inv, bs, inv_scratch);
    if (info != 0 && first_fail == 0) first_fail = k + 1;
    T* p = Pinv + strip_offset(k, bs);
    store_block<true, BS>(g, bs, p, BandSlot::MAIN, inv);
    for (int e = g.rank(); e < bs * bs; e += g.size()) {
      const int y = e / bs, x = e % bs;
      p[y * 3 * bs + x] = T(0);
      p[y * 3 * bs + 2 * bs + x] = T(0);
    }
  }
  g.sync();
  return first_fail;
}
}  // namespace detail

template <int BS = kDynamic, class G, class T>
KNOT_HD int precond_block_jacobi(G& g, int nb, int bs_rt, const T* S, T* Pinv, T* scratch) {
  const int bs = extent<BS>(bs_rt);
  if (const int early = detail::precond_check_args(g, nb, bs, S, Pinv, scratch); early != 1) return early;
  return detail::precond_diagonal<BS>(g, nb, bs, S, Pinv, scratch);
}

template <int BS = kDynamic, class G, class T>
KNOT_HD int precond_stair(G& g, int nb, int bs_rt, const T* S, T* Pinv, T* scratch) {
  const int bs = extent<BS>(bs_rt);
  if (const int early = detail::precond_check_args(g, nb, bs, S, Pinv, scratch); early != 1) return early;
  const int fail = detail::precond_diagonal<BS>(g, nb, bs, S, Pinv, scratch);
  const int ld = 3 * bs;
  T* t1 = scratch;
  T* t2 = scratch + bs * bs;
  for (int k = 0; k + 1 < nb; ++k) {
    // Column-major views with leading dimension 3bs: the RIGHT view of S is R_k', and the MAIN view
    // of Pinv is D^-1 itself (symmetric).
    const T* r_view = S + strip_offset(k, bs) + 2 * bs;
    const T* dinv_k = Pinv + strip_offset(k, bs) + bs;
    const T* dinv_k1 = Pinv + strip_offset(k + 1, bs) + bs;
    gemm<Trans::Yes, Trans::No, BS, BS, BS>(g, bs, bs, bs, T(1), r_view, ld, dinv_k1, ld, T(0), t1, bs);
    gemm<Trans::No, Trans::No, BS, BS, BS>(g, bs, bs, bs, T(-1), dinv_k, ld, t1, bs, T(0), t2, bs);
    store_block<true, BS>(g, bs, Pinv + strip_offset(k, bs), BandSlot::RIGHT, t2);
    store_block<false, BS>(g, bs, Pinv + strip_offset(k + 1, bs), BandSlot::LEFT, t2);
  }
  g.sync();
  return fail;
}

}  // namespace knot::linalg

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
// The sweep over k is serial (an inherent dependency chain); each knot's trsm/syrk/potrf and
// gemv/trsv runs cooperatively on the group, in place on the strips: read column-major with leading
// dimension 3bs, a row-major strip block is its transpose, so the MAIN view of knot k is F_k' (upper)
// and its LEFT view is E_k'. Working in place needs no staging copies; at bs = 14 it factors 2.3x
// faster than staging each block into dense scratch (the seed's scheme) on the CPU.
// Scratch: none. bdsv_scratch_size(bs) returns 0 and the scratch arguments, kept so the signatures
// match GLASS's, are not read (nullptr is fine).
// CHECK: a pivot that is not positive, or not finite, in any knot sets *fail = 1 (else *fail is left
// untouched), and so do a negative dimension and a null strips pointer, which leave everything
// untouched; nb == 0 or bs == 0 is an empty system and does nothing. After a failing pivot the
// sweep still runs to the end with the same barrier sequence, and the factor is then invalid.
// Thread-count invariant; ends on a barrier.
#pragma once

#include <type_traits>
#include <utility>

#include "knot/linalg/band.hpp"
#include "knot/linalg/dense/gemv.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/syrk.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/dense/trsv.hpp"

namespace knot::linalg {

KNOT_HD constexpr int bdsv_scratch_size(int /*bs*/) { return 0; }

namespace detail {
// One CPU thread with a run-time block size in [1, 16] runs the compile-time-size code, whose dense
// kernels unroll and keep blocks in registers (about 2-3x faster at bs = 14; the arithmetic, and so
// the result, is the same bits). Calls fn(integral_constant<int, N>) and returns true when it did.
template <int BS, class G, class Fn>
KNOT_HD bool dispatch_fixed_block_size(int bs, Fn&& fn) {
  if constexpr (BS == kDynamic && kSerial<G>) {
    return [&]<int... Ns>(std::integer_sequence<int, Ns...>) {
      return ((bs == Ns + 1 ? (fn(std::integral_constant<int, Ns + 1>{}), true) : false) || ...);
    }(std::make_integer_sequence<int, 16>{});
  } else {
    return false;
  }
}
}  // namespace detail

template <bool CHECK = false, int BS = kDynamic, class G, class T>
KNOT_HD void bdsv_factor(G& g, int nb, int bs_rt, T* strips, std::type_identity_t<T>* /*scratch*/ = nullptr,
                         int* fail = nullptr) {
  if (detail::dispatch_fixed_block_size<BS, G>(
          bs_rt, [&](auto n) { bdsv_factor<CHECK, decltype(n)::value>(g, nb, bs_rt, strips, nullptr, fail); }))
    return;
  const int bs = extent<BS>(bs_rt);
  if (nb <= 0 || bs <= 0 || strips == nullptr) {
    // An empty system is factored; a negative dimension or missing strips are a failure.
    const bool bad = nb < 0 || bs < 0 || (nb > 0 && bs > 0);
    if (CHECK && bad && fail != nullptr && g.rank() == 0) *fail = 1;
    g.sync();
    return;
  }
  const int ld = 3 * bs;
  for (int k = 0; k < nb; ++k) {
    T* strip = strips + strip_offset(k, bs);
    if (k > 0) {
      // LEFT view L_k' <- F_{k-1}^-1 L_k' = E_k';  MAIN view D_k <- D_k - E_k E_k' (upper = row-major lower).
      const T* f_prev_view = strips + strip_offset(k - 1, bs) + bs;
      trsm<Side::Left, Uplo::Upper, Trans::Yes, BS, BS>(g, bs, bs, T(1), f_prev_view, ld, strip, ld);
      syrk<Uplo::Upper, Trans::Yes, BS, BS>(g, bs, bs, T(-1), strip, ld, T(1), strip + bs, ld);
    }
    // Row-major lower Cholesky of the MAIN block: element (i, j) at strip[bs + i*ld + j].
    const int info = potrf_strided<BS>(g, bs, strip + bs, ld, 1);
    if constexpr (CHECK) {
      if (info != 0 && fail != nullptr && g.rank() == 0) *fail = 1;
    }
  }
}

template <int BS = kDynamic, class G, class T>
KNOT_HD void bdsv_solve(G& g, int nb, int bs_rt, const T* strips, T* v,
                        std::type_identity_t<T>* /*scratch*/ = nullptr) {
  if (detail::dispatch_fixed_block_size<BS, G>(
          bs_rt, [&](auto n) { bdsv_solve<decltype(n)::value>(g, nb, bs_rt, strips, v); }))
    return;
  const int bs = extent<BS>(bs_rt);
  const int ld = 3 * bs;
  if (nb <= 0 || bs <= 0 || strips == nullptr || v == nullptr) {
    g.sync();
    return;
  }
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
KNOT_HD void bdsv(G& g, int nb, int bs, T* strips, T* v, std::type_identity_t<T>* scratch = nullptr,
                  int* fail = nullptr) {
  if (v == nullptr) {
    // Report through the factor's argument check and solve nothing.
    bdsv_factor<CHECK, BS>(g, nb, bs, static_cast<T*>(nullptr), scratch, fail);
    return;
  }
  bdsv_factor<CHECK, BS>(g, nb, bs, strips, scratch, fail);
  bdsv_solve<BS>(g, nb, bs, strips, v, scratch);
}

}  // namespace knot::linalg

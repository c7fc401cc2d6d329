// Block-tridiagonal matrix-vector product  out = A v.
//
// A: nb block-rows of bs x 3bs row-major strips [L_br | D_br | R_br] (band.hpp), block-row br at
//    A + br*3*bs*bs. L_0 and R_{nb-1} multiply the zero pads and must be finite (zero, normally).
// v: padded, (nb + 2)*bs; block-row br reads v[br*bs, br*bs + 3bs) = (v_{br-1}, v_br, v_{br+1}).
//    The caller zeroes the first and last pad blocks.
// out: padded, (nb + 2)*bs; row r of block-row br goes to out[(br + 1)*bs + r]. The pads of out
//    are not written. out must not alias v.
//
//   out_br = L_br v_{br-1} + D_br v_br + R_br v_{br+1}
//
// Each output row is one member's dot product of length 3bs in a fixed order, so the result is
// bitwise the same for every group size. The dual form writes the same values to two outputs in
// one pass (PCG's z = p = P^-1 r). No scratch. Ends on a barrier.
#pragma once

#include "knot/linalg/group.hpp"

namespace knot::linalg {

namespace detail {
template <int BS, class G, class T, class Store>
KNOT_HD void bdmv_rows(G& g, int nb, int bs_rt, const T* A, const T* v, Store store) {
  const int bs = extent<BS>(bs_rt);
  const int w = 3 * bs;
  for (int i = g.rank(); i < nb * bs; i += g.size()) {
    const int br = i / bs;
    const T* row = A + static_cast<long>(br) * w * bs + static_cast<long>(i - br * bs) * w;
    const T* win = v + static_cast<long>(br) * bs;
    T acc = T(0);
    for (int c = 0; c < w; ++c) acc += row[c] * win[c];
    store(bs + i, acc);
  }
  g.sync();
}
}  // namespace detail

template <int BS = kDynamic, class G, class T>
KNOT_HD void bdmv(G& g, int nb, int bs, T* out, const T* A, const T* v) {
  detail::bdmv_rows<BS>(g, nb, bs, A, v, [out](int k, T value) { out[k] = value; });
}

template <int BS = kDynamic, class G, class T>
KNOT_HD void bdmv(G& g, int nb, int bs, T* out1, T* out2, const T* A, const T* v) {
  detail::bdmv_rows<BS>(g, nb, bs, A, v, [out1, out2](int k, T value) {
    out1[k] = value;
    out2[k] = value;
  });
}

// Length of a padded block vector.
KNOT_HD constexpr long padded_size(int nb, int bs) { return static_cast<long>(nb + 2) * bs; }
// Number of elements of nb strips.
KNOT_HD constexpr long strips_size(int nb, int bs) { return static_cast<long>(nb) * 3 * bs * bs; }

}  // namespace knot::linalg

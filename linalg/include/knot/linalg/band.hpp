// Strip movers between a dense d x d block and a block-tridiagonal [L|D|R] strip.
//
// Layout (GLASS): block-row br of a block-tridiagonal matrix is a d x band_width row-major tile,
// band_width = 3d by default, holding [L | D | R]. Element (y, x) of the block in slot s lives at
//   strip[y * band_width + s * d + x],     s = LEFT 0, MAIN 1, RIGHT 2.
//
//   store_block:  strip[y*band_width + s*d + x] = scale * src[TRANSPOSE ? x*d + y : y*d + x]
//   load_block:   dst[TRANSPOSE ? x*d + y : y*d + x] = scale * strip[y*band_width + s*d + x]
//
// So TRANSPOSE = false moves a row-major dense block as laid out, and TRANSPOSE = true moves a
// column-major one (Knot's dense convention) as laid out -- or, read the other way, the transpose
// of a row-major one. With equal TRANSPOSE and scale = 1, load_block after store_block is the
// identity. Each element is written by exactly one member; ends on a barrier.
//
// The warp forms of the seed are these functions called with a 32-lane TileGroup (cuda/group.cuh).
#pragma once

#include "knot/linalg/group.hpp"

namespace knot::linalg {

enum class BandSlot : int { LEFT = 0, MAIN = 1, RIGHT = 2 };

template <bool TRANSPOSE = false, int D = kDynamic, class G, class T>
KNOT_HD void store_block(G& g, int d_rt, int band_width, T* dst_strip, BandSlot slot, const T* src,
                         T scale = T(1)) {
  const int d = extent<D>(d_rt);
  const int off = static_cast<int>(slot) * d;
  for (int e = g.rank(); e < d * d; e += g.size()) {
    const int y = e / d, x = e % d;
    dst_strip[y * band_width + off + x] = scale * src[TRANSPOSE ? x * d + y : y * d + x];
  }
  g.sync();
}

template <bool TRANSPOSE = false, int D = kDynamic, class G, class T>
KNOT_HD void store_block(G& g, int d, T* dst_strip, BandSlot slot, const T* src, T scale = T(1)) {
  store_block<TRANSPOSE, D>(g, d, 3 * extent<D>(d), dst_strip, slot, src, scale);
}

template <bool TRANSPOSE = false, int D = kDynamic, class G, class T>
KNOT_HD void load_block(G& g, int d_rt, int band_width, T* dst, const T* src_strip, BandSlot slot,
                        T scale = T(1)) {
  const int d = extent<D>(d_rt);
  const int off = static_cast<int>(slot) * d;
  for (int e = g.rank(); e < d * d; e += g.size()) {
    const int y = e / d, x = e % d;
    dst[TRANSPOSE ? x * d + y : y * d + x] = scale * src_strip[y * band_width + off + x];
  }
  g.sync();
}

template <bool TRANSPOSE = false, int D = kDynamic, class G, class T>
KNOT_HD void load_block(G& g, int d, T* dst, const T* src_strip, BandSlot slot, T scale = T(1)) {
  load_block<TRANSPOSE, D>(g, d, 3 * extent<D>(d), dst, src_strip, slot, scale);
}

// Offset of block-row br's strip in a matrix of d x 3d strips.
KNOT_HD constexpr long strip_offset(int br, int d) { return static_cast<long>(br) * 3 * d * d; }

}  // namespace knot::linalg

// CUDA execution groups: a whole thread block, or a tile of W lanes of one warp.
//
// Both satisfy the group contract of group.hpp (rank(), size(), sync()), so every linalg
// primitive runs unchanged inside a kernel:
//
//   BlockGroup    rank = flattened threadIdx (x fastest), size = blockDim.x*y*z,
//                 sync = __syncthreads(). Every thread of the block must call each primitive
//                 (no thread may leave early), as __syncthreads() requires.
//   TileGroup<W>  a warp cut into 32/W tiles of W consecutive lanes; rank = lane % W, size = W,
//                 sync = __syncwarp(mask of the tile's lanes), which also orders the tile's memory
//                 accesses. W is a power of two in 1..32, so the tiles cover the warp exactly. The
//                 block's thread count must be a multiple of W, so no tile reaches past the end of
//                 a partial last warp. A tile may leave a kernel early as a whole; the other tiles
//                 of its warp are unaffected.
//
// The warp namespace holds the seed's warp forms of store_block / load_block: the group forms of
// band.hpp run by one full 32-lane warp (which must be converged at the call).
//
// Device code only: the whole file is empty for a host compiler.
#pragma once

#include "knot/linalg/band.hpp"
#include "knot/linalg/group.hpp"

#if defined(__CUDACC__)

namespace knot::linalg {

// Linear index of the calling thread in its block; warps are cut from this index.
__device__ __forceinline__ int flat_thread_index() {
  return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

__device__ __forceinline__ int flat_block_size() { return static_cast<int>(blockDim.x * blockDim.y * blockDim.z); }

struct BlockGroup {
  __device__ int rank() const { return flat_thread_index(); }
  __device__ int size() const { return flat_block_size(); }
  __device__ void sync() const { __syncthreads(); }
};

template <int W>
struct TileGroup {
  static_assert(W >= 1 && W <= 32 && (W & (W - 1)) == 0, "TileGroup: W must be a power of two in 1..32");

  __device__ static int lane() { return flat_thread_index() & 31; }
  __device__ static constexpr int size() { return W; }
  __device__ int rank() const { return lane() & (W - 1); }
  // Bits of the lanes of the caller's tile.
  __device__ static unsigned mask() {
    if constexpr (W == 32) {
      return 0xffffffffu;
    } else {
      return ((1u << W) - 1u) << (lane() & ~(W - 1));
    }
  }
  __device__ void sync() const { __syncwarp(mask()); }

  // Which tile of the block the caller belongs to, and how many tiles the block holds.
  __device__ static int tile_index() { return flat_thread_index() / W; }
  __device__ static int tiles_per_block() { return flat_block_size() / W; }
};

using WarpGroup = TileGroup<32>;

// TileGroup with its width chosen at run time: `width` consecutive lanes of a warp (a power of two
// in 1..32; the block's thread count a multiple of 32). As TileGroup<W>: a tile may leave early as a
// whole, and sync() orders the tile's memory accesses.
struct LaneTile {
  int width;
  unsigned bits;
  __device__ explicit LaneTile(int w)
      : width(w), bits(w == 32 ? 0xffffffffu : ((1u << w) - 1u) << ((flat_thread_index() & 31) & ~(w - 1))) {}
  __device__ int rank() const { return flat_thread_index() & (width - 1); }
  __device__ int size() const { return width; }
  __device__ void sync() const { __syncwarp(bits); }
};

// Warp forms of the strip movers (seed: glass::warp::store_block / load_block): one full warp
// strides the d x d block; each element is written by one lane; ends on __syncwarp().
namespace warp {

template <bool TRANSPOSE = false, int D = kDynamic, class T>
__device__ void store_block(int d, int band_width, T* dst_strip, BandSlot slot, const T* src, T scale = T(1)) {
  WarpGroup g;
  ::knot::linalg::store_block<TRANSPOSE, D>(g, d, band_width, dst_strip, slot, src, scale);
}

template <bool TRANSPOSE = false, int D = kDynamic, class T>
__device__ void store_block(int d, T* dst_strip, BandSlot slot, const T* src, T scale = T(1)) {
  WarpGroup g;
  ::knot::linalg::store_block<TRANSPOSE, D>(g, d, dst_strip, slot, src, scale);
}

template <bool TRANSPOSE = false, int D = kDynamic, class T>
__device__ void load_block(int d, int band_width, T* dst, const T* src_strip, BandSlot slot, T scale = T(1)) {
  WarpGroup g;
  ::knot::linalg::load_block<TRANSPOSE, D>(g, d, band_width, dst, src_strip, slot, scale);
}

template <bool TRANSPOSE = false, int D = kDynamic, class T>
__device__ void load_block(int d, T* dst, const T* src_strip, BandSlot slot, T scale = T(1)) {
  WarpGroup g;
  ::knot::linalg::load_block<TRANSPOSE, D>(g, d, dst, src_strip, slot, scale);
}

}  // namespace warp

}  // namespace knot::linalg

#endif  // __CUDACC__

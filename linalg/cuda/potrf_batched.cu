// Batched dense Cholesky (dense/potrf.hpp): one problem per thread block, or one per W-lane tile
// of a warp. A problem is copied to shared memory (leading dimension n), factored there and copied
// back when the block's problems fit; otherwise it is factored in place in global memory.
#include "knot/linalg/cuda/group.cuh"
#include "knot/linalg/dense/potrf.hpp"
#include "launch.cuh"

namespace knot::linalg::cuda {

namespace {

// Factors the n x n column-major `a` (leading dimension lda) with group g, through `stage` (n*n
// elements of shared memory) when it is not null. Returns potrf's info on every member.
template <class G, class T>
__device__ int factor(G& g, int n, T* a, int lda, T* stage) {
  if (stage == nullptr) return potrf(g, n, a, lda);
  for (int e = g.rank(); e < n * n; e += g.size()) stage[e] = a[static_cast<long long>(e / n) * lda + e % n];
  g.sync();
  const int info = potrf(g, n, stage, n);
  for (int e = g.rank(); e < n * n; e += g.size()) a[static_cast<long long>(e / n) * lda + e % n] = stage[e];
  g.sync();
  return info;
}

template <class T>
__global__ void potrf_block_kernel(int n, T* A, int lda, int* info, bool staged) {
  const int p = blockIdx.x;
  BlockGroup g;
  T* stage = staged ? reinterpret_cast<T*>(detail::dynamic_shared()) : nullptr;
  const int r = factor(g, n, detail::problem(A, p, static_cast<long long>(lda) * n), lda, stage);
  if (info != nullptr && g.rank() == 0) info[p] = r;
}

// A tile whose problem index is past the batch leaves as a whole; the other tiles of its warp
// synchronize on their own lanes only.
template <class T, int W>
__global__ void potrf_tile_kernel(int batch, int n, T* A, int lda, int* info, bool staged) {
  using Tile = TileGroup<W>;
  const int p = blockIdx.x * Tile::tiles_per_block() + Tile::tile_index();
  if (p >= batch) return;
  Tile g;
  T* stage = staged ? reinterpret_cast<T*>(detail::dynamic_shared()) + static_cast<long long>(Tile::tile_index()) * n * n
                    : nullptr;
  const int r = factor(g, n, detail::problem(A, p, static_cast<long long>(lda) * n), lda, stage);
  if (info != nullptr && g.rank() == 0) info[p] = r;
}

bool valid_tile(int tile) { return tile == 0 || tile == 1 || tile == 2 || tile == 4 || tile == 8 || tile == 16 || tile == 32; }

int potrf_default_threads(int n, int tile) {
  if (tile > 0) return 128;
  return detail::clamp_threads(detail::round_up(n * n / 2, 32));
}

// The checks that need no device.
Status check_args(int batch, int n, int tile, const Launch& launch, int* threads) {
  if (batch < 0 || n < 0) return detail::invalid("potrf_batched: need batch >= 0, n >= 0");
  if (!valid_tile(tile)) return detail::invalid("potrf_batched: tile must be 0, 1, 2, 4, 8, 16 or 32");
  *threads = launch.threads ? launch.threads : potrf_default_threads(n, tile);
  KNOT_STATUS_TRY(detail::check_threads(*threads));
  if (tile > 0 && *threads % 32 != 0)
    return detail::invalid("potrf_batched: with tiles, Launch::threads must be a multiple of 32");
  return {};
}

template <class T>
using TileKernel = void (*)(int, int, T*, int, int*, bool);

template <class T>
TileKernel<T> tile_kernel(int tile) {
  switch (tile) {
    case 1: return potrf_tile_kernel<T, 1>;
    case 2: return potrf_tile_kernel<T, 2>;
    case 4: return potrf_tile_kernel<T, 4>;
    case 8: return potrf_tile_kernel<T, 8>;
    case 16: return potrf_tile_kernel<T, 16>;
    default: return potrf_tile_kernel<T, 32>;
  }
}

}  // namespace

template <class T>
Status potrf_batched_size(int batch, int n, int tile, const Launch& launch, LaunchSize* size) {
  int threads = 0;
  KNOT_STATUS_TRY(check_args(batch, n, tile, launch, &threads));
  if (size == nullptr) return detail::invalid("potrf_batched_size: null LaunchSize");
  const int per_block = tile > 0 ? threads / tile : 1;
  const int grid = (batch + per_block - 1) / per_block;
  KNOT_STATUS_TRY(detail::plan_scratch(threads, grid, sizeof(T) * static_cast<std::size_t>(n) * n * per_block, size));
  // Staging is an optimization, not scratch: without room in shared memory the launch factors in place.
  size->workspace_bytes = 0;
  return {};
}

template <class T>
Status potrf_batched(int batch, int n, T* A, int lda, int* info, int tile, const Launch& launch) {
  int threads = 0;
  KNOT_STATUS_TRY(check_args(batch, n, tile, launch, &threads));
  if (lda < (n > 1 ? n : 1)) return detail::invalid("potrf_batched: lda must be >= max(1, n)");
  if (batch == 0) return {};
  if (A == nullptr) return detail::invalid("potrf_batched: null A");
  LaunchSize size;
  KNOT_STATUS_TRY(potrf_batched_size<T>(batch, n, tile, launch, &size));
  const bool staged = size.fits_shared && n > 0;
  const std::size_t shared = staged ? size.shared_bytes : 0;
  if (tile == 0)
    return detail::launch_kernel(potrf_block_kernel<T>, size.grid, size.threads, shared, launch.stream,
                                 "potrf_batched kernel", n, A, lda, info, staged);
  return detail::launch_kernel(tile_kernel<T>(tile), size.grid, size.threads, shared, launch.stream,
                               "potrf_batched tile kernel", batch, n, A, lda, info, staged);
}

template Status potrf_batched_size<float>(int, int, int, const Launch&, LaunchSize*);
template Status potrf_batched_size<double>(int, int, int, const Launch&, LaunchSize*);
template Status potrf_batched<float>(int, int, float*, int, int*, int, const Launch&);
template Status potrf_batched<double>(int, int, double*, int, int*, int, const Launch&);

}  // namespace knot::linalg::cuda

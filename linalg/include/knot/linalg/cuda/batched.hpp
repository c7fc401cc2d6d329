// Batched GPU launchers of the linalg primitives: one problem per thread block (or per tile of a
// warp, for potrf), every operand in global memory, scratch in shared memory where it fits.
//
// Plain C++: a host compiler includes this header and calls the launchers with pointers to device
// memory (cudaMalloc'd by the caller); only the library itself is compiled by nvcc. Each operation
// comes as the trio of STYLE.md item 9: a __global__ kernel (private, linalg/cuda/*.cu), the
// launcher below that owns the grid and the shared-memory size, and a `*_size` query.
//
// Conventions shared by every launcher:
//  * Problems of a batch lie back to back, each with the layout of its CPU primitive:
//      strips          problem p at p * strips_size(nb, bs)   (nb strips of bs x 3bs, band.hpp)
//      padded vectors  problem p at p * padded_size(nb, bs)   ((nb + 2)*bs, zero pads)
//      dense n x n     problem p at p * lda * n               (column-major)
//  * Launchers are asynchronous on `Launch::stream`; the returned Status covers the argument checks,
//    the CUDA calls and the launch itself. An error inside a running kernel surfaces at the caller's
//    next synchronizing call. Numerical trouble (a non-SPD pivot) is reported per problem through an
//    int array, never through the Status.
//  * Launch::threads is the thread-block size (0: the launcher's default; above a kernel's limit the
//    launcher returns InvalidArgument). Results are bitwise the same for every thread count (the
//    group contract of group.hpp).
//  * Scratch: when `Launch::workspace` is null it lives in dynamic shared memory, and a problem whose
//    scratch exceeds the device's per-block limit returns NeedsWorkspace; with a workspace (global
//    memory, at least `LaunchSize::workspace_bytes` as reported by the size query) scratch always
//    lives there. Launchers never allocate.
//  * Explicitly instantiated for T = float and T = double.
#pragma once

#include <cstddef>

#include "knot/linalg/cuda/status.hpp"
#include "knot/linalg/pcg.hpp"

// The CUDA runtime's stream handle is `cudaStream_t = CUstream_st*`; naming the struct keeps this
// header free of CUDA includes while staying the very same type.
struct CUstream_st;

namespace knot::linalg::cuda {

using Stream = CUstream_st*;

// How to launch; every field has a usable default.
struct Launch {
  int threads = 0;                   // thread-block size, 1..1024; 0 = the launcher's default
  void* workspace = nullptr;         // optional global-memory scratch (see the header comment)
  std::size_t workspace_bytes = 0;   // its size in bytes
  Stream stream = nullptr;           // nullptr = the legacy default stream
  // bdsv and pcg in double: use the kernel compiled for bs when bs is 8, 16, 32 or 64. `false`
  // forces the run-time-size kernel (for comparisons); the two agree to rounding, not bitwise,
  // since nvcc may fuse multiply-adds differently in unrolled code.
  bool fixed_block_size = true;
};

// What a launch will use: filled by the `*_size` queries.
struct LaunchSize {
  int threads = 0;                 // the thread-block size the launch will use
  int grid = 0;                    // thread blocks
  std::size_t shared_bytes = 0;    // dynamic shared memory per block without a workspace (0: none or too big)
  std::size_t workspace_bytes = 0; // global workspace for the whole batch if scratch goes there
  bool fits_shared = false;        // scratch fits in shared memory: a null workspace is fine
};

// ---- strip movers --------------------------------------------------------------------------------
// blocks: batch * nb * 3 dense bs x bs blocks, block (p, br, slot) at ((p*nb + br)*3 + slot)*bs*bs,
// row-major (transpose = false) or column-major (transpose = true); see band.hpp.
//   store:  strips of problem p, block-row br, slot s  =  scale * blocks(p, br, s)
//   load:   blocks(p, br, s)  =  scale * strips of problem p, block-row br, slot s
// Each warp of the block moves whole blocks with the warp forms (group.cuh), so threads must be a
// multiple of 32 (default 128). No scratch.
template <class T>
Status store_strips_batched(int batch, int nb, int bs, const T* blocks, T* strips, bool transpose, T scale,
                            const Launch& launch = {});
template <class T>
Status load_strips_batched(int batch, int nb, int bs, const T* strips, T* blocks, bool transpose, T scale,
                           const Launch& launch = {});

// ---- bdmv: out = A v per problem (bdmv.hpp). out's pads are not written. No scratch. -------------
template <class T>
Status bdmv_batched(int batch, int nb, int bs, const T* A, const T* v, T* out, const Launch& launch = {});

// ---- bdsv: factor and solve A x = b in place per problem (bdsv.hpp). ------------------------------
// strips: in A, out the factor. v: padded, in b, out x. fail (optional, batch ints): 0, or 1 when a
// pivot was not positive or not finite (that problem's x is then invalid).
template <class T>
Status bdsv_batched_size(int batch, int nb, int bs, const Launch& launch, LaunchSize* size);
template <class T>
Status bdsv_batched(int batch, int nb, int bs, T* strips, T* v, int* fail, const Launch& launch = {});

// ---- pcg: S x = gamma per problem (pcg.hpp), preconditioner built in the same kernel ------------
enum class Precond : int {
  None = 0,     // P^-1 = I; Pinv is not touched and may be null
  BlockJacobi,  // precond_block_jacobi (precond.hpp)
  Stair,        // precond_stair
};

// Per-problem outcome written to `outcome`.
enum class PcgOutcome : int {
  Converged = 0,
  NotConverged = 1,          // max_iters reached, or a breakdown (non-finite or non-positive p'Sp)
  PreconditionerFailed = 2,  // a diagonal block of S is not SPD; pcg was not run and x is unchanged
};

// Launch::threads at most 256 (the kernel is register-bounded for two blocks per SM).
// S: strips (read only). Pinv: strips written with the preconditioner (output; unused for None).
// gamma: padded right-hand sides. x: padded, warm start in (zero pads), solution out.
// iterations, outcome: optional, batch ints each (outcome holds PcgOutcome values).
template <class T>
Status pcg_batched_size(int batch, int nb, int bs, Precond precond, const Launch& launch, LaunchSize* size);
template <class T>
Status pcg_batched(int batch, int nb, int bs, const T* S, T* Pinv, const T* gamma, T* x, Precond precond,
                   const PcgOptions<T>& options, int* iterations, int* outcome, const Launch& launch = {});

// ---- potrf: dense Cholesky A = L L' per problem (dense/potrf.hpp) ---------------------------------
// A: batch column-major n x n matrices, problem p at p*lda*n; the lower triangle is overwritten by
// L, the strict upper triangle is left as it was. info (optional, batch ints): 0, or j + 1 for the
// first non-positive pivot. tile = 0: one problem per thread block; tile = W in {1,2,4,8,16,32}:
// one problem per W-lane tile of a warp, threads / W problems per block (threads a multiple of 32).
// The block's problems are staged in shared memory when they fit, else factored in place in global
// memory; either way the results are the same bits. potrf needs no scratch: Launch::workspace is
// ignored and LaunchSize::workspace_bytes is 0.
template <class T>
Status potrf_batched_size(int batch, int n, int tile, const Launch& launch, LaunchSize* size);
template <class T>
Status potrf_batched(int batch, int n, T* A, int lda, int* info, int tile = 0, const Launch& launch = {});

}  // namespace knot::linalg::cuda

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
#include "knot/linalg/dense/types.hpp"
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

// ---- lu: A = P' L U per problem, and solves A x = b (coop_lu.hpp) ---------------------------------
// The cooperative LU in its column-major layout with logical row interchanges (LuLayout::kColMajor,
// LuInterchange::kLogical, default threshold and singular floor). One system per tile of W lanes of
// a warp, W the smallest power of two >= threads_per_system = ceil(n / rows_per_thread); threads / W
// systems per block (threads a multiple of 32, default 64: on an H200 64-thread blocks ran the n = 32
// factorization 18% faster than 128 and n = 8, 16 within 2%; docs/BENCHMARKS.md, GPU).
//   A     batch column-major n x n matrices, problem p at p*n*n (leading dimension n). factor and
//         solve overwrite it with the factors in coop_lu's logical format: row v holds its
//         multipliers left of column piv[v] and its row of U from there on.
//   piv   batch * n ints, problem p at p*n: piv[v] = the position of row v in the pivoted order.
//   b, x  batch vectors of n, problem p at p*n; b may equal x.
//   info  optional, batch ints: 0, or 1 + the first singular step; that problem's x is then
//         unspecified (it may hold inf or NaN) and nothing leaks into the other problems.
// rows_per_thread: 0 = the default; at least ceil(n / 32). With the default and 1 <= n <= 32 the
// register kernel runs (register_factor.cuh: one system per 8-, 16- or 32-lane tile, lane v holding
// row v in registers throughout; default 64 threads, the fastest of 64, 128, 256 on an H200); it
// needs no workspace (LaunchSize::workspace_bytes 0), and Launch::fixed_block_size = false skips it.
// Otherwise the cooperative kernel runs, ceil(n / 8) rows per thread up to n = 16 and ceil(n / 16)
// above by default (in double, n = 8, 16 and 32 run kernels compiled for that n unless
// fixed_block_size is false; the two agree to rounding); its scratch is
// coop_lu_workspace_size(n, rows_per_thread) elements of T per system, in shared memory or in
// Launch::workspace (LaunchSize::workspace_bytes: batch systems), and the matrix, right-hand side
// and pivots are staged in shared memory when the block's systems fit there, else used in place.
// Results are bitwise the same for every kernel, rows_per_thread, thread count and staging
// (tests/cuda/test_gpu_factor.cpp compares the register kernel with the cooperative one for every
// n <= 32).
template <class T>
Status lu_batched_size(int batch, int n, int rows_per_thread, const Launch& launch, LaunchSize* size);
// P A = L U in place; pivots to piv.
template <class T>
Status lu_factor_batched(int batch, int n, T* A, int* piv, int* info, int rows_per_thread = 0,
                         const Launch& launch = {});
// Factors A in place and solves A x = b (bitwise lu_factor_batched, then lu_substitute_batched).
template <class T>
Status lu_solve_batched(int batch, int n, T* A, int* piv, const T* b, T* x, int* info, int rows_per_thread = 0,
                        const Launch& launch = {});
// x = A^-1 b from the factors and pivots of lu_factor_batched (or lu_solve_batched).
template <class T>
Status lu_substitute_batched(int batch, int n, const T* A, const int* piv, const T* b, T* x, int rows_per_thread = 0,
                             const Launch& launch = {});

// ---- cholesky: A = L L' (Uplo::Lower) or U'U (Uplo::Upper) per problem, and solves (cholesky.hpp) --
// A: batch column-major n x n matrices, problem p at p*n*n (leading dimension n); only the triangle
// `uplo` is read, factor and posv overwrite it with L (or U) and never touch the other strict
// triangle. b: batch vectors of n, problem p at p*n, overwritten by x (one right-hand side).
// info (optional, batch ints): 0, or the order k of the smallest leading minor that is not positive
// definite; columns from k - 1 on are then left as they came in, and posv leaves that b unchanged.
// tile = 0 and 1 <= n <= 32: the register kernel (register_factor.cuh: one system per 8-, 16- or
// 32-lane tile, lane v holding row v of L in registers; posv runs the forward sweep inside the
// factorization; default 64 threads, the fastest of 64, 128, 256 on an H200; Launch::
// fixed_block_size = false skips it). Otherwise the cooperative kernel: tile = 0, a power of two
// about n / 2 lanes per system (at most 32); tile = W in {1,2,4,8,16,32}: one system per W-lane
// tile; threads / W systems per block (threads a multiple of 32, default 128); in double, n = 8, 16
// and 32 run kernels compiled for that n (see Launch::fixed_block_size); a block's systems are
// staged in shared memory when they fit, else used in place. Results are bitwise the same for every
// kernel, tile and thread count. No scratch (Launch::workspace is ignored,
// LaunchSize::workspace_bytes is 0).
template <class T>
Status cholesky_batched_size(int batch, int n, int tile, const Launch& launch, LaunchSize* size);
template <class T>
Status cholesky_factor_batched(int batch, int n, T* A, Uplo uplo, int* info, int tile = 0, const Launch& launch = {});
// x = A^-1 b from the factor of cholesky_factor_batched (same uplo).
template <class T>
Status cholesky_solve_batched(int batch, int n, const T* A, Uplo uplo, T* b, int tile = 0, const Launch& launch = {});
// Factor, then solve where the factor succeeded.
template <class T>
Status cholesky_posv_batched(int batch, int n, T* A, Uplo uplo, T* b, int* info, int tile = 0,
                             const Launch& launch = {});

}  // namespace knot::linalg::cuda

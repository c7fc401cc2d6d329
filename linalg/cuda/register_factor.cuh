// Register-resident batched LU and Cholesky for 1 <= n <= 32 (the launchers' default there): one
// system per tile of W = 8, 16 or 32 lanes of a warp, lane v holding row v of its matrix in
// registers from the load to the store (the small-size scheme of MAGMA's batched factorizations).
// The cooperative kernels keep the matrix in shared or global memory and pass two barriers of the
// tile per column; here a column step is the pivot search (three integer reductions on a whole warp,
// shuffles on narrower tiles), one lane's row (or every lane's entry of the column of L) written to
// shared memory, one __syncwarp and the lane's own update in registers. posv runs the forward sweep
// inside the factorization.
//
// The arithmetic is the cooperative primitives', operation for operation: coop_lu.hpp's
// column-major factorization with logical interchanges (default threshold 1 and singular floor, so
// the first position holding the largest non-NaN magnitude wins and every regular pivot is
// inverted once), potrf.hpp's sums taken k = 0, 1, ... and divided by sqrt(d), trsv.hpp's sweeps
// multiplying by 1 / l_kk. The updates are written as explicit fused multiply-adds, which is how
// nvcc contracts the cooperative code's a - b * c; tests/cuda/test_gpu_factor.cpp compares the two.
//
// Sizes are padded to NP = 8, 16 or 32 (compile time, so the rows stay in registers); rows and
// columns from n to NP are zero and never stored. Every lane of a warp runs every step (n is the
// same for the whole launch), so the full-warp __syncwarp and shuffles are safe in tiles without a
// system. Internal to linalg/cuda.
#pragma once

#include <climits>
#include <type_traits>

#include "knot/linalg/cholesky.hpp"
#include "knot/linalg/coop_lu.hpp"
#include "knot/linalg/cuda/group.cuh"
#include "launch.cuh"

namespace knot::linalg::cuda::detail {

// Padded order of the register kernels for n, or 0 when they do not serve n.
inline int register_order(int n) { return n < 1 ? 0 : n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : 0; }

enum class RegLuOp : int { Factor, Solve, Substitute };
enum class RegCholOp : int { Factor, Solve, Posv };

// Shared memory of one tile, in scalars (the launchers size their launches with these). LU: the
// pivot row twice (step parity) plus the folded right-hand side (NP + 2 keeps each copy 16-byte
// aligned), and the solution. Cholesky: column j twice (step parity); the solves also keep L,
// row-major.
__host__ __device__ constexpr int register_lu_row(int np) { return np + 2; }
__host__ __device__ constexpr int register_lu_shared(int np) { return 2 * register_lu_row(np) + np; }
__host__ __device__ constexpr int register_cholesky_shared(int np, bool solves) {
  return 2 * np + (solves ? np * np : 0);
}

// coop_lu's regular() under the default floor: |u| > 0 and |u| >= the smallest normal number.
template <class T>
__device__ __forceinline__ bool reg_regular(T u) {
  return linalg::detail::lu_abs(u) >= smallest_normal<T>();
}

// Two consecutive scalars, moved by one 8- or 16-byte shared-memory access.
template <class T>
using Pair = std::conditional_t<sizeof(T) == 8, double2, float2>;

// Scalars j and j + 1 (j even) of a 16-byte aligned row, in one shared-memory access.
template <class T>
__device__ __forceinline__ Pair<T> pair_at(const T* row, int j) {
  return reinterpret_cast<const Pair<T>*>(row)[j / 2];
}

// The pivot position among the tile's candidates (cand: a non-NaN |s_vi| = mag at position pos):
// the largest magnitude, ties to the smaller position; INT_MAX when there is none. Every lane of
// the tile gets it. Non-negative floating-point numbers order as their bit patterns, so three
// integer reductions replace log2(W) rounds of shuffles (mag must not be -0: fabs, not lu_abs).
template <class T, int W>
__device__ __forceinline__ int tile_argmax(bool cand, T mag, int pos) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // Whole warps only: with several tiles in a warp the reductions of different masks ran one after
  // the other (LU factor at n = 8 twice as slow on an H200), where shuffles with a width do not.
  if constexpr (W == 32) {
    constexpr unsigned mask = 0xffffffffu;
    if constexpr (sizeof(T) == 8) {
    // +1: an empty candidate (0) stays below a magnitude of +0.
      const unsigned hi = cand ? static_cast<unsigned>(__double2hiint(mag)) + 1u : 0u;
      const unsigned top_hi = __reduce_max_sync(mask, hi);
      const unsigned lo = cand && hi == top_hi ? static_cast<unsigned>(__double2loint(mag)) : 0u;
      const unsigned top_lo = __reduce_max_sync(mask, lo);
      return __reduce_min_sync(mask, cand && hi == top_hi && lo == top_lo ? pos : INT_MAX);
    } else {
      const unsigned key = cand ? __float_as_uint(mag) + 1u : 0u;
      const unsigned top = __reduce_max_sync(mask, key);
      return __reduce_min_sync(mask, cand && key == top ? pos : INT_MAX);
    }
  }
#endif
  T best = cand ? mag : T(-1);
  int q = cand ? pos : INT_MAX;
#pragma unroll
  for (int m = W / 2; m >= 1; m /= 2) {
    const T ob = __shfl_xor_sync(0xffffffffu, best, m, W);
    const int oq = __shfl_xor_sync(0xffffffffu, q, m, W);
    if (ob > best || (ob == best && oq < q)) {
      best = ob;
      q = oq;
    }
  }
  return q;
}

template <class T, int NP, RegLuOp OP>
__global__ void lu_register_kernel(int batch, int n, T* A, int* piv, const T* b, T* x, int* info) {
  constexpr int W = NP;  // lanes per system
  const int t = flat_thread_index();
  const int v = t & (W - 1);
  const int tile = t / W;
  const long long p = static_cast<long long>(blockIdx.x) * (flat_block_size() / W) + tile;
  const bool live = p < batch;
  const bool mine = live && v < n;  // this lane holds a row of a system
  T* const sh = reinterpret_cast<T*>(dynamic_shared()) + static_cast<long long>(tile) * register_lu_shared(NP);
  T* const xs = sh + 2 * register_lu_row(NP);
  const long long nn = static_cast<long long>(n) * n;
  T* const a = A + p * nn;

  T r[NP];
  T bv = T(0);
  int pos = v;
#pragma unroll
  for (int j = 0; j < NP; ++j) r[j] = (mine && j < n) ? a[v + static_cast<long long>(j) * n] : T(0);
  if constexpr (OP != RegLuOp::Factor)
    if (mine) bv = b[p * n + v];
  if constexpr (OP == RegLuOp::Substitute)
    if (mine) pos = piv[p * n + v];

  int fail = 0;
  if constexpr (OP != RegLuOp::Substitute) {
    // Pivot of column i: the largest non-NaN |s_vi| over positions >= i, ties to the smaller position.
#pragma unroll
    for (int i = 0; i < NP; ++i) {
      if (i < n) {
        const T mag = fabs(r[i]);
        const int q = tile_argmax<T, W>(mine && pos >= i && mag == mag, mag, pos);
        const int pv = q == INT_MAX ? i : q;
        T* const u = sh + (i & 1) * register_lu_row(NP);
        if (mine && pos == pv) {
#pragma unroll
          for (int j = 0; j < NP; j += 2)
            if (j + 1 >= i) reinterpret_cast<Pair<T>*>(u)[j / 2] = Pair<T>{r[j], r[j + 1]};
          if constexpr (OP == RegLuOp::Solve) u[NP] = bv;
        }
        if (mine) pos = pos == pv ? i : (pos == i ? pv : pos);
        __syncwarp();
        const T uii = u[i];
        const bool ok = reg_regular(uii);
        if (!ok && fail == 0) fail = i + 1;
        if (ok && mine && pos > i) {
          const T l = r[i] * (T(1) / uii);
          r[i] = l;
#pragma unroll
          for (int j = 0; j < NP; j += 2) {
            if (j + 1 <= i) continue;
            const Pair<T> w = pair_at(u, j);
            if (j > i) r[j] = fma(-l, w.x, r[j]);
            r[j + 1] = fma(-l, w.y, r[j + 1]);
          }
          if constexpr (OP == RegLuOp::Solve) bv = fma(-l, u[NP], bv);
        }
      }
    }
  } else {
    // L y = P b, the row at position i carrying y_i.
#pragma unroll
    for (int i = 0; i < NP; ++i) {
      if (i < n) {
        T* const f = sh + (i & 1) * register_lu_row(NP);
        if (mine && pos == i) {
          f[0] = bv;
          f[1] = r[i];
        }
        __syncwarp();
        const T y = f[0];
        if (reg_regular(f[1]) && mine && pos > i) bv = fma(-r[i], y, bv);
      }
    }
  }

  if constexpr (OP != RegLuOp::Factor) {
    // U x = y, backward; x lands by natural index.
#pragma unroll
    for (int i = NP - 1; i >= 0; --i) {
      if (i < n) {
        if (i + 1 < n) {
          const T xi = xs[i + 1];
          if (mine && pos < i + 1) bv = fma(-r[i + 1], xi, bv);
        }
        if (mine && pos == i) xs[i] = bv / r[i];
        __syncwarp();
      }
    }
  }

  if (mine) {
    if constexpr (OP != RegLuOp::Substitute) {
#pragma unroll
      for (int j = 0; j < NP; ++j)
        if (j < n) a[v + static_cast<long long>(j) * n] = r[j];
      piv[p * n + v] = pos;
    }
    if constexpr (OP != RegLuOp::Factor) x[p * n + v] = xs[v];
  }
  if constexpr (OP != RegLuOp::Substitute)
    if (live && v == 0 && info != nullptr) info[p] = fail;
}

// Lane v holds row v of L (entries k <= v): A(v, k) at v + k n (Lower) or k + v n (Upper, U = L').
template <Uplo UL>
__device__ __forceinline__ long long reg_chol_at(int v, int k, int n) {
  return UL == Uplo::Lower ? v + static_cast<long long>(k) * n : k + static_cast<long long>(v) * n;
}

template <class T, int NP, Uplo UL, RegCholOp OP>
__global__ void cholesky_register_kernel(int batch, int n, T* A, T* b, int* info) {
  constexpr int W = NP;  // lanes per system
  constexpr unsigned kAll = 0xffffffffu;
  constexpr bool kSolves = OP != RegCholOp::Factor;
  const int t = flat_thread_index();
  const int v = t & (W - 1);
  const int tile = t / W;
  const long long p = static_cast<long long>(blockIdx.x) * (flat_block_size() / W) + tile;
  const bool live = p < batch;
  const bool mine = live && v < n;
  T* const sh = reinterpret_cast<T*>(dynamic_shared()) + static_cast<long long>(tile) * register_cholesky_shared(NP, kSolves);
  T* const sl = sh + 2 * NP;  // the solves' copy of L, row-major: L(k, i) at k NP + i
  const long long nn = static_cast<long long>(n) * n;
  T* const a = A + p * nn;

  T l[NP];
#pragma unroll
  for (int k = 0; k < NP; ++k) l[k] = (mine && k <= v) ? a[reg_chol_at<UL>(v, k, n)] : T(0);
  T bv = T(0);
  if constexpr (kSolves)
    if (mine) bv = b[p * n + v];

  int fail = 0;
  T inv = T(0);  // 1 / L(v, v), for the solves
  if constexpr (OP != RegCholOp::Solve) {
    // Right-looking: after step j every entry (v, k > j) holds A(v, k) - sum_{i <= j} L(v, i) L(k, i),
    // the sum in the order potrf's left-looking loop takes it. posv runs the forward sweep L y = b
    // alongside: y_j = b_j (1 / L(j, j)) goes round in slot j of the column, then b_v -= L(v, j) y_j,
    // trsv's operations in trsv's order.
#pragma unroll
    for (int j = 0; j < NP; ++j) {
      if (j < n) {
        const T d = __shfl_sync(kAll, l[j], j, W);
        const bool go = fail == 0 && linalg::detail::positive_finite(d);
        if (fail == 0 && !go) fail = j + 1;
        T* const c = sh + (j & 1) * NP;
        if (go) {
          const T root = sqrt(d);
          if (mine && v == j) {
            l[j] = root;
            if constexpr (OP == RegCholOp::Posv) {
              inv = T(1) / root;
              bv = bv * inv;
              c[j] = bv;
            }
          }
          if (mine && v > j) {
            l[j] = l[j] / root;
            c[v] = l[j];
          }
        }
        __syncwarp();
        if (go && mine && v > j) {
#pragma unroll
          for (int k = 0; k < NP; k += 2) {
            if (k + 1 <= j) continue;
            const Pair<T> w = pair_at(c, k);
            if (k > j && k <= v) l[k] = fma(-l[j], w.x, l[k]);
            if (k + 1 <= v) l[k + 1] = fma(-l[j], w.y, l[k + 1]);
          }
          if constexpr (OP == RegCholOp::Posv) bv = fma(-l[j], c[j], bv);
        }
      }
    }
  }

  if constexpr (kSolves) {
    // posv leaves a failed system's b as it came in. Every lane passes every step either way: the
    // other tiles of the warp may be solving. trsv's arithmetic: x_k = x_k * (1 / L(k, k)), then
    // x_i -= L(i, k) x_k forward and x_i -= L(k, i) x_k backward.
    const bool solve = mine && fail == 0;
    T* const xs = sh;  // the column buffers are free now
    if constexpr (OP == RegCholOp::Solve) {
#pragma unroll
      for (int k = 0; k < NP; ++k) {
        if (k < n) {
          if (solve && v == k) {
            inv = T(1) / l[k];
            bv = bv * inv;
            xs[k] = bv;
          }
          __syncwarp();
          if (solve && v > k) bv = fma(-l[k], xs[k], bv);
        }
      }
    }
    if (solve) {
#pragma unroll
      for (int k = 0; k < NP; ++k)
        if (k <= v) sl[v * NP + k] = l[k];
    }
    __syncwarp();
#pragma unroll
    for (int k = NP - 1; k >= 0; --k) {
      if (k < n) {
        if (solve && v == k) {
          bv = bv * inv;
          xs[k] = bv;
        }
        __syncwarp();
        if (solve && v < k) bv = fma(-sl[k * NP + v], xs[k], bv);
      }
    }
    if (solve) b[p * n + v] = bv;
  }

  if constexpr (OP != RegCholOp::Solve) {
    // Columns from fail - 1 on are left as they came in.
    const int cols = fail == 0 ? n : fail - 1;
    if (mine) {
#pragma unroll
      for (int k = 0; k < NP; ++k)
        if (k <= v && k < cols) a[reg_chol_at<UL>(v, k, n)] = l[k];
    }
    if (live && v == 0 && info != nullptr) info[p] = fail;
  }
}

}  // namespace knot::linalg::cuda::detail

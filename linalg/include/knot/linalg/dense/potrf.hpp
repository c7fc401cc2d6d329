// --- Cholesky factorization  A = L L'  (lower, in place) ---
//
// A: n x n, column-major, leading dimension lda. On entry the lower triangle (diagonal included)
// holds the symmetric matrix; on success it holds L. The strict upper triangle is never read or
// written. No scratch. Ends on a barrier; any group but SerialGroup passes n + 1 barriers, whatever
// the data.
//
// Returns, on every member, 0 on success or j + 1 where column j is the first whose pivot
//   d_j = A(j,j) - sum_{k<j} L(j,k)^2
// is not positive or not finite (NaN, Inf); *info (if non-null) is set to the same value by one
// member before the closing barrier. On failure columns >= j are left as they came in, columns < j
// hold the factor so far, and the remaining phases only keep the barrier sequence: the routine
// takes no square root of a non-positive number and divides by no zero.
//
// Each entry is computed by one member as
//   L(i,j) = (A(i,j) - L(i,0) L(j,0) - L(i,1) L(j,1) - ... - L(i,j-1) L(j,j-1)) / sqrt(d_j)
// (left to right), so the result is bitwise the same for every group size. (A true division, not a
// reciprocal: unlike trsm's, these divisions are independent of one another and cost little.)
//
// N fixes n at compile time (the run-time value is then ignored); the serial group then keeps a
// block of up to 16 x 16 in registers. For 8 <= n <= 16 a host compiler with vector extensions
// (GCC, Clang) runs that block right-looking on whole columns held as SIMD vectors: element (i,j)
// still takes the updates k = 0, 1, ..., j-1 in turn and then the division, so the bits are the
// cooperative path's. (As everywhere in linalg, that presumes a - b*c is rounded alike on both
// paths: so without FMA contraction, as in the test build; under -march=native GCC fuses some
// loops and not others, the scalar paths included.)
//
// potrf_strided is the same factorization on strided storage: element (i,j) of the matrix and of
// L lives at A[i*rs + j*cs], and only entries with i >= j are touched. Since a symmetric matrix is
// its own transpose, one core serves four storage orders:
//   column-major, lower, A = L L'   rs = 1,   cs = lda   (what potrf does)
//   column-major, upper, A = U'U    rs = lda, cs = 1     (U(j,i) = L(i,j) sits at j + i*lda)
//   row-major,    lower, A = L L'   rs = lda, cs = 1
//   row-major,    upper, A = U'U    rs = 1,   cs = lda   (the same bytes as column-major lower)
// In the upper cases the factor written is U = L', in the upper triangle; the lower one is untouched.
#pragma once

#include <cmath>
#include <type_traits>

#include "knot/linalg/dense/types.hpp"

namespace knot::linalg {

namespace detail {

struct ColMajorIndex {
  int ld;
  KNOT_HD constexpr int operator()(int i, int j) const { return i + j * ld; }
};

struct StridedIndex {
  int rs, cs;
  KNOT_HD constexpr int operator()(int i, int j) const { return i * rs + j * cs; }
};

// Whether the fixed-size serial kernels may use the host compiler's vector extensions (not under
// nvcc, whose device pass has none).
#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__))
#define KNOT_POTRF_SIMD 1
#else
#define KNOT_POTRF_SIMD 0
#endif

#if KNOT_POTRF_SIMD
// 32 bytes even where AVX-512 exists: 4-lane double vectors waste fewer lanes on these short
// columns and get at the lanes more cheaply (on AMD Zen 4, 512-bit operations are also split in
// two), and measure faster than 8-lane ones for every n here.
#if defined(__AVX__)
inline constexpr int kSimdBytes = 32;
#else
inline constexpr int kSimdBytes = 16;
#endif

// Lanes per vector for columns of n entries of T: the width above, or the power of two >= n when
// that is narrower.
template <class T>
constexpr int simd_lanes(int n) {
  int p = 2;
  while (p < n) p *= 2;
  const int native = kSimdBytes / static_cast<int>(sizeof(T));
  return p < native ? p : native;
}

template <class T, int L>
struct Simd {
  using Int = std::conditional_t<sizeof(T) == 8, long long, int>;
  typedef T V __attribute__((vector_size(sizeof(T) * L)));
  typedef Int Mask __attribute__((vector_size(sizeof(T) * L)));
  // 0, 1, ..., L-1: lane l of vector v of a column is row v*L + l.
  static Mask iota() {
    Mask m{};
    for (int l = 0; l < L; ++l) m[l] = l;
    return m;
  }
};

// From n = 8 up the vector kernel is the faster one; below, the scalar one (one or two vectors
// per column leave little to gain over its shorter dependency chains).
template <class T, int N>
inline constexpr bool kPotrfSimd = (std::is_same_v<T, double> || std::is_same_v<T, float>) && N >= 8 && N <= 16;

// Right-looking on a private copy held as column vectors c[j][v] (rows v*L .. v*L+L-1 of column
// j; rows above the diagonal are zero). Step k: sqrt of the pivot, divide column k, subtract
// column k times L(j,k) from every later column j. The next pivot, the one value on the critical
// path, is also computed as a scalar (the same expression as its vector lane, so the same bits),
// sparing the lane extractions on that path.
//
// With Solve, x (n entries) is overwritten by the solution of L L' x = x: the forward sweep runs
// inside the factorization (step k: x_k *= 1/L(k,k), x_i -= L(i,k) x_k for i > k), the backward
// one after it (x_k *= 1/L(k,k), x_i -= L(k,i) x_k for i < k, k descending): trsv's operations,
// reciprocals included. On failure x is left as it came in.
template <int N, bool Solve, class T, class Index>
inline int potrf_simd(T* A, Index at, T* x) {
  using std::sqrt;
  constexpr int L = simd_lanes<T>(N), NV = (N + L - 1) / L;
  using S = Simd<T, L>;
  using V = typename S::V;
  const typename S::Mask lane = S::iota();
  V c[N][NV] = {};
  KNOT_UNROLL for (int j = 0; j < N; ++j) {
    KNOT_UNROLL for (int v = 0; v < NV; ++v) {
      KNOT_UNROLL for (int l = 0; l < L; ++l) {
        const int i = v * L + l;
        c[j][v][l] = i >= j && i < N ? A[at(i, j)] : T(0);
      }
    }
  }
  V xv[NV] = {};
  T inv[N];
  if constexpr (Solve) {
    KNOT_UNROLL for (int v = 0; v < NV; ++v) {
      KNOT_UNROLL for (int l = 0; l < L; ++l) xv[v][l] = v * L + l < N ? x[v * L + l] : T(0);
    }
  }
  int fail = 0;
  T d = c[0][0][0];
  KNOT_UNROLL for (int k = 0; k < N; ++k) {
    if (!positive_finite(d)) {
      fail = k + 1;
      break;
    }
    const T root = sqrt(d);
    if (k + 1 < N) {
      const int k1 = k + 1 < N ? k + 1 : k;
      const T l = c[k][k1 / L][k1 % L] / root;
      d = c[k1][k1 / L][k1 % L] - l * l;
    }
    KNOT_UNROLL for (int v = 0; v < NV; ++v) {
      if (v >= k / L) c[k][v] = lane + v * L > k ? c[k][v] / root : V{};
    }
    A[at(k, k)] = root;
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i > k) A[at(i, k)] = c[k][i / L][i % L];
    }
    KNOT_UNROLL for (int j = 0; j < N; ++j) {
      if (j > k) {
        const T l = c[k][j / L][j % L];
        KNOT_UNROLL for (int v = 0; v < NV; ++v) {
          if (v >= j / L) c[j][v] -= c[k][v] * l;
        }
      }
    }
    if constexpr (Solve) {
      inv[k] = T(1) / root;
      const T xk = xv[k / L][k % L] * inv[k];
      xv[k / L][k % L] = xk;
      KNOT_UNROLL for (int v = 0; v < NV; ++v) {
        if (v >= k / L) xv[v] = lane + v * L > k ? xv[v] - c[k][v] * xk : xv[v];
      }
    }
  }
  if constexpr (Solve) {
    if (fail == 0) {
      T y[N];
      KNOT_UNROLL for (int i = 0; i < N; ++i) y[i] = xv[i / L][i % L];
      KNOT_UNROLL for (int k = N - 1; k >= 0; --k) {
        y[k] *= inv[k];
        KNOT_UNROLL for (int i = 0; i < N; ++i) {
          if (i < k) y[i] -= A[at(k, i)] * y[k];
        }
      }
      KNOT_UNROLL for (int i = 0; i < N; ++i) x[i] = y[i];
    }
  }
  return fail;
}
#else
template <class T, int N>
inline constexpr bool kPotrfSimd = false;
#endif

// The serial group with a fixed small n: the same operations on a private copy, fully unrolled,
// so the factor stays in registers and the compiler schedules across columns. Stops at the first
// failing pivot, leaving that column and the later ones as they came in.
template <int N, class T, class Index>
KNOT_HD int potrf_fixed_scalar(T* A, Index at) {
  using std::sqrt;
  T L[N][N];
  KNOT_UNROLL for (int j = 0; j < N; ++j) {
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i >= j) L[i][j] = A[at(i, j)];
    }
  }
  int fail = 0;
  KNOT_UNROLL for (int j = 0; j < N; ++j) {
    T d = L[j][j];
    KNOT_UNROLL for (int k = 0; k < N; ++k) {
      if (k < j) d -= L[j][k] * L[j][k];
    }
    if (!positive_finite(d)) {
      fail = j + 1;
      break;
    }
    const T root = sqrt(d);
    L[j][j] = root;
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i > j) {
        T t = L[i][j];
        KNOT_UNROLL for (int k = 0; k < N; ++k) {
          if (k < j) t -= L[i][k] * L[j][k];
        }
        L[i][j] = t / root;
      }
    }
    KNOT_UNROLL for (int i = 0; i < N; ++i) {
      if (i >= j) A[at(i, j)] = L[i][j];
    }
  }
  return fail;
}

template <int N, class T, class Index>
KNOT_HD int potrf_fixed(T* A, Index at) {
#if KNOT_POTRF_SIMD
  if constexpr (kPotrfSimd<T, N>) {
    return potrf_simd<N, false>(A, at, static_cast<T*>(nullptr));
  } else {
    return potrf_fixed_scalar<N>(A, at);
  }
#else
  return potrf_fixed_scalar<N>(A, at);
#endif
}

// Left-looking, one phase per column. Every member computes the pivot d_j itself (the same bits
// everywhere), so all agree on success or failure without exchanging anything, and nobody needs
// L(j,j) stored during phase j: member 0 stores it in phase j + 1, when nobody reads it any more.
template <int N, class G, class T, class Index>
KNOT_HD int potrf_cooperative(G& g, int n_rt, T* A, Index at, int* info) {
  using std::sqrt;
  const int n = extent<N>(n_rt);
  int fail = 0;
  T last_root = T(0);  // sqrt(d_{j-1}), still to be stored
  for (int j = 0; j < n; ++j) {
    if (fail == 0) {
      if (j > 0 && g.rank() == 0) A[at(j - 1, j - 1)] = last_root;
      T d = A[at(j, j)];
      for (int k = 0; k < j; ++k) d -= A[at(j, k)] * A[at(j, k)];
      if (!positive_finite(d)) {
        fail = j + 1;
      } else {
        const T root = sqrt(d);
        for (int i = j + 1 + g.rank(); i < n; i += g.size()) {
          T t = A[at(i, j)];
          for (int k = 0; k < j; ++k) t -= A[at(i, k)] * A[at(j, k)];
          A[at(i, j)] = t / root;
        }
        last_root = root;
      }
    }
    g.sync();
  }
  if (fail == 0 && n > 0 && g.rank() == 0) A[at(n - 1, n - 1)] = last_root;
  if (info != nullptr && g.rank() == 0) *info = fail;
  g.sync();
  return fail;
}

template <int N, class G, class T, class Index>
KNOT_HD int potrf_core(G& g, int n, T* A, Index at, int* info) {
  if constexpr (kSerial<G> && N >= 1 && N <= 16) {
    const int fail = potrf_fixed<N>(A, at);
    if (info != nullptr) *info = fail;
    g.sync();
    return fail;
  } else {
    return potrf_cooperative<N>(g, n, A, at, info);
  }
}

}  // namespace detail

template <int N = kDynamic, class G, class T>
KNOT_HD int potrf_strided(G& g, int n, T* A, int rs, int cs, int* info = nullptr) {
  return detail::potrf_core<N>(g, n, A, detail::StridedIndex{rs, cs}, info);
}

template <int N = kDynamic, class G, class T>
KNOT_HD int potrf(G& g, int n, T* A, int lda, int* info = nullptr) {
  return detail::potrf_core<N>(g, n, A, detail::ColMajorIndex{lda}, info);
}

}  // namespace knot::linalg

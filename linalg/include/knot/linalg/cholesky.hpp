// --- Cholesky factorization and solves (cuSolverDx potrf/potrs/posv semantics) ---
//
//   A = L L'  (Uplo::Lower)    or    A = U'U  (Uplo::Upper),    A X = B  by  L Y = B, L' X = Y
//
// A: n x n symmetric positive definite, leading dimension lda, in the Arrangement AR: column-major
// A(i,j) = A[i + j*lda] or row-major A(i,j) = A[i*lda + j]. Only the UL triangle (diagonal
// included) is read; cholesky_factor overwrites it with L (Lower) or U = L' (Upper) and leaves the
// other strict triangle untouched. B: n x nrhs in the same arrangement, leading dimension ldb,
// overwritten by X. No scratch.
//
// Status (returned on every member, and written to *info by one member if info is non-null): 0 on
// success, else the order k of the smallest leading minor that is not positive definite, i.e. the
// first column whose pivot d = A(k-1,k-1) - sum L(k-1,j)^2 is not positive or not finite. Columns
// from k-1 on are then left as they came in. cholesky_posv skips the solve on failure (B is left as
// it came in) but still passes the solve's barriers.
//
// One core serves the four storage orders: a symmetric matrix is its own transpose, so lower
// row-major is upper column-major and vice versa; everything is delegated to potrf_strided (the
// factor), trsv (one contiguous right-hand side: a cooperative sweep) and trsm (several: one
// member per right-hand side). Results are therefore bitwise the same for every group size.
// Every routine ends on a barrier; the counts below hold for every group but SerialGroup, whatever
// the data: cholesky_factor_barriers(n) = n + 1, cholesky_solve_barriers = 2 (n + 1) for one
// contiguous right-hand side (column-major, or row-major with ldb == 1), else 2.
//
// N (and NRHS) fix n (and nrhs) at compile time (the run-time values are then ignored). With the
// serial group, N <= 16 keeps the factor in registers (potrf), and N <= 32 solves one contiguous
// right-hand side in registers, both sweeps sharing the reciprocals of the diagonal (trsv's
// arithmetic, so the same bits as the cooperative path). Where potrf has its vector kernel
// (8 <= N <= 16, float or double, a GCC or Clang host build), cholesky_posv with one contiguous
// right-hand side runs the forward sweep inside the factorization, again with the same bits.
//
// Several small systems per group. SubGroup cuts a group into sub-groups of w consecutive members:
// members [j*w, (j+1)*w) act as a group of w for system j. rank() and size() are the sub-group's,
// but sync() is the PARENT's barrier: every member of the parent must pass the same number of
// barriers, so all sub-groups must run the same sequence of primitives with the same dimensions
// (the barrier counts depend on dimensions alone), and members without a system (the last
// g.size() % w, and whole sub-groups in a last, partial round) must pass that many barriers idle.
// for_each_system does this bookkeeping: sub-group j takes systems j, j + count, j + 2 count, ...
// The *_batched entry points use it: system b at A + b*stride_a (B + b*stride_b), status info[b].
// A SerialGroup parent simply loops over the systems (the fast fixed-size path). Nothing here is
// specific to Cholesky: any primitive with a documented barrier count runs on a SubGroup (the
// LDL' tests do so). On a GPU, TileGroup (cuda/group.cuh) is the native form of the same idea,
// with a barrier of its own per tile.
#pragma once

#include <cstddef>

#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/dense/trsv.hpp"

namespace knot::linalg {

enum class Arrangement { ColMajor, RowMajor };

// Members [j*w, (j+1)*w) of the parent act as a group of w; the barrier is the parent's.
template <class G>
class SubGroup {
 public:
  KNOT_HD SubGroup(G& parent, int width) : parent_(&parent), width_(width) {}
  KNOT_HD int rank() const { return parent_->rank() % width_; }
  KNOT_HD int size() const { return width_; }
  KNOT_HD void sync() const { parent_->sync(); }
  // Which sub-group the caller is in, and how many complete sub-groups the parent holds.
  KNOT_HD int index() const { return parent_->rank() / width_; }
  KNOT_HD int count() const { return parent_->size() / width_; }
  // False for the parent.size() % w members left over: they hold no system.
  KNOT_HD bool active() const { return index() < count(); }

 private:
  G* parent_;
  int width_;
};

KNOT_HD constexpr int cholesky_factor_barriers(int n) { return (n > 0 ? n : 0) + 1; }

template <Arrangement AR>
KNOT_HD constexpr bool cholesky_vector_rhs(int nrhs, int ldb) {
  return nrhs == 1 && (AR == Arrangement::ColMajor || ldb == 1);
}

template <Arrangement AR>
KNOT_HD constexpr int cholesky_solve_barriers(int n, int nrhs, int ldb) {
  return cholesky_vector_rhs<AR>(nrhs, ldb) ? 2 * ((n > 0 ? n : 0) + 1) : 2;
}

template <Arrangement AR>
KNOT_HD constexpr int cholesky_posv_barriers(int n, int nrhs, int ldb) {
  return cholesky_factor_barriers(n) + cholesky_solve_barriers<AR>(n, nrhs, ldb);
}

namespace detail {

// Whether the factor sits in the lower triangle of a column-major array (L), rather than in the
// upper one (U = L').
template <Uplo UL, Arrangement AR>
inline constexpr bool kCholColLower = (UL == Uplo::Lower) == (AR == Arrangement::ColMajor);

template <class G>
KNOT_HD void idle_barriers(G& g, int count) {
  for (int i = 0; i < count; ++i) g.sync();
}

}  // namespace detail

// Runs fn(sub, system) for every system in [0, batch) on sub-groups of `width` members (see the
// top); every call of fn must pass exactly `barriers` barriers. width is clamped to
// [1, g.size()] (results do not depend on it).
template <class G, class Fn>
KNOT_HD void for_each_system(G& g, int width, int batch, int barriers, Fn&& fn) {
  width = width < 1 ? 1 : width > g.size() ? g.size() : width;
  SubGroup<G> sub(g, width);
  const int count = sub.count();
  if (count <= 0) return;
  const int rounds = (batch + count - 1) / count;
  for (int round = 0; round < rounds; ++round) {
    const int system = round * count + sub.index();
    if (sub.active() && system < batch) {
      fn(sub, system);
    } else {
      detail::idle_barriers(g, barriers);
    }
  }
}

template <Uplo UL, Arrangement AR, int N = kDynamic, class G, class T>
KNOT_HD int cholesky_factor(G& g, int n, T* A, int lda, int* info = nullptr) {
  if constexpr (detail::kCholColLower<UL, AR>) {
    return potrf_strided<N>(g, n, A, 1, lda, info);
  } else {
    return potrf_strided<N>(g, n, A, lda, 1, info);
  }
}

template <Uplo UL, Arrangement AR, int N = kDynamic, int NRHS = kDynamic, class G, class T>
KNOT_HD void cholesky_solve(G& g, int n_rt, int nrhs_rt, const T* A, int lda, T* B, int ldb) {
  const int n = extent<N>(n_rt), nrhs = extent<NRHS>(nrhs_rt);
  constexpr Uplo F = detail::kCholColLower<UL, AR> ? Uplo::Lower : Uplo::Upper;  // the factor's triangle
  // With F = Lower the column-major array holds L (A = L L'), with F = Upper it holds U (A = U'U):
  // the first solve is with op = No resp. Yes, the second with the other.
  constexpr Trans first = F == Uplo::Lower ? Trans::No : Trans::Yes;
  constexpr Trans second = F == Uplo::Lower ? Trans::Yes : Trans::No;
  if constexpr (detail::kSerial<G> && N != kDynamic && N >= 1 && N <= 32) {
    if (cholesky_vector_rhs<AR>(nrhs, ldb)) {
      // trsv's own fixed-size path, twice, sharing the reciprocals of the diagonal: the same bits,
      // n divisions fewer.
      T inv[N];
      KNOT_UNROLL for (int k = 0; k < N; ++k) inv[k] = T(1) / A[k + k * lda];
      detail::trsm_left_column<detail::kOpLower<F, first>, first, N>(N, T(1), A, lda, inv, B);
      detail::trsm_left_column<detail::kOpLower<F, second>, second, N>(N, T(1), A, lda, inv, B);
      g.sync();
      return;
    }
  }
  if (cholesky_vector_rhs<AR>(nrhs, ldb)) {
    trsv<F, first, N>(g, n, A, lda, B);
    trsv<F, second, N>(g, n, A, lda, B);
  } else if constexpr (AR == Arrangement::ColMajor) {
    trsm<Side::Left, F, first, N, NRHS>(g, n, nrhs, T(1), A, lda, B, ldb);
    trsm<Side::Left, F, second, N, NRHS>(g, n, nrhs, T(1), A, lda, B, ldb);
  } else {
    // Row-major B is column-major B' (nrhs x n): X' A = B', solved from the right.
    trsm<Side::Right, F, second, NRHS, N>(g, nrhs, n, T(1), A, lda, B, ldb);
    trsm<Side::Right, F, first, NRHS, N>(g, nrhs, n, T(1), A, lda, B, ldb);
  }
}

template <Uplo UL, Arrangement AR, int N = kDynamic, int NRHS = kDynamic, class G, class T>
KNOT_HD int cholesky_posv(G& g, int n, int nrhs, T* A, int lda, T* B, int ldb, int* info = nullptr) {
#if KNOT_POTRF_SIMD
  if constexpr (detail::kSerial<G> && detail::kPotrfSimd<T, N>) {
    if (cholesky_vector_rhs<AR>(extent<NRHS>(nrhs), ldb)) {
      // One pass: the forward sweep runs inside the factorization (the same bits as the two steps).
      int fail;
      if constexpr (detail::kCholColLower<UL, AR>) {
        fail = detail::potrf_simd<N, true>(A, detail::StridedIndex{1, lda}, B);
      } else {
        fail = detail::potrf_simd<N, true>(A, detail::StridedIndex{lda, 1}, B);
      }
      if (info != nullptr) *info = fail;
      g.sync();
      return fail;
    }
  }
#endif
  const int fail = cholesky_factor<UL, AR, N>(g, n, A, lda, info);
  if (fail == 0) {
    cholesky_solve<UL, AR, N, NRHS>(g, n, nrhs, A, lda, B, ldb);
  } else {
    detail::idle_barriers(g, cholesky_solve_barriers<AR>(extent<N>(n), extent<NRHS>(nrhs), ldb));
  }
  return fail;
}

// Batched forms: `batch` systems, system b at A + b*stride_a, B + b*stride_b, status info[b]
// (info may be null); sub-groups of `width` members (clamped to [1, g.size()]), see the top.
template <Uplo UL, Arrangement AR, int N = kDynamic, class G, class T>
KNOT_HD void cholesky_factor_batched(G& g, int width, int batch, int n, T* A, int lda, std::ptrdiff_t stride_a,
                                     int* info) {
  auto one = [&](auto& sg, int b) { cholesky_factor<UL, AR, N>(sg, n, A + b * stride_a, lda, info ? info + b : nullptr); };
  if constexpr (detail::kSerial<G>) {
    for (int b = 0; b < batch; ++b) one(g, b);
  } else {
    for_each_system(g, width, batch, cholesky_factor_barriers(extent<N>(n)), one);
  }
}

template <Uplo UL, Arrangement AR, int N = kDynamic, int NRHS = kDynamic, class G, class T>
KNOT_HD void cholesky_solve_batched(G& g, int width, int batch, int n, int nrhs, const T* A, int lda,
                                    std::ptrdiff_t stride_a, T* B, int ldb, std::ptrdiff_t stride_b) {
  auto one = [&](auto& sg, int b) {
    cholesky_solve<UL, AR, N, NRHS>(sg, n, nrhs, A + b * stride_a, lda, B + b * stride_b, ldb);
  };
  if constexpr (detail::kSerial<G>) {
    for (int b = 0; b < batch; ++b) one(g, b);
  } else {
    for_each_system(g, width, batch, cholesky_solve_barriers<AR>(extent<N>(n), extent<NRHS>(nrhs), ldb), one);
  }
}

template <Uplo UL, Arrangement AR, int N = kDynamic, int NRHS = kDynamic, class G, class T>
KNOT_HD void cholesky_posv_batched(G& g, int width, int batch, int n, int nrhs, T* A, int lda,
                                   std::ptrdiff_t stride_a, T* B, int ldb, std::ptrdiff_t stride_b, int* info) {
  auto one = [&](auto& sg, int b) {
    cholesky_posv<UL, AR, N, NRHS>(sg, n, nrhs, A + b * stride_a, lda, B + b * stride_b, ldb,
                                   info ? info + b : nullptr);
  };
  if constexpr (detail::kSerial<G>) {
    for (int b = 0; b < batch; ++b) one(g, b);
  } else {
    for_each_system(g, width, batch, cholesky_posv_barriers<AR>(extent<N>(n), extent<NRHS>(nrhs), ldb), one);
  }
}

}  // namespace knot::linalg

// Internals shared by the LQ backends (not installed): the workspace arena, the backend interface,
// the compile-time size dispatch and small block helpers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "knot/linalg/config.hpp"
#include "knot/linalg/dense/gemv.hpp"
#include "knot/linalg/dense/gemm_tile.hpp"
#include "knot/linalg/dense/gemv_tile.hpp"
#include "knot/linalg/group.hpp"
#include "knot/solver/lq.hpp"

namespace knot::solver::detail {

using linalg::kDynamic;
using Serial = linalg::SerialGroup;

// One 64-byte-aligned heap block carved into arrays. Two phases: reserve() every array (offsets in
// doubles, each rounded up to a cache line), then allocate() once; solve() only uses the pointers.
class Arena {
 public:
  std::size_t reserve(std::size_t doubles) {
    const std::size_t at = size_;
    size_ += (doubles + 7) / 8 * 8;
    return at;
  }
  std::size_t reserve_ints(std::size_t ints) { return reserve((ints * sizeof(int) + sizeof(double) - 1) / sizeof(double)); }
  void allocate() {
    const std::size_t n = size_ > 0 ? size_ : 8;
    data_.reset(static_cast<double*>(::operator new(n * sizeof(double), std::align_val_t{64})));
    for (std::size_t i = 0; i < n; ++i) data_.get()[i] = 0.0;
    bytes_ = n * sizeof(double);
  }
  double* at(std::size_t offset) const { return data_.get() + offset; }
  int* ints_at(std::size_t offset) const { return reinterpret_cast<int*>(data_.get() + offset); }
  std::size_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(double* p) const { ::operator delete(p, std::align_val_t{64}); }
  };
  std::unique_ptr<double, Free> data_;
  std::size_t size_ = 0, bytes_ = 0;
};

// A backend: created (and allocating) once, solved many times without allocating.
class LqBackend {
 public:
  virtual ~LqBackend() = default;
  virtual LqStatus solve(const LqData& data, LqSolution& sol, LqStats& stats) = 0;
  // New vectors, the matrices of the last solve (LqSolver::resolve); by default a full solve.
  virtual LqStatus resolve(const LqData& data, LqSolution& sol, LqStats& stats) { return solve(data, sol, stats); }
  // x and u only (LqSolver::solve_primal); by default a full solve.
  virtual LqStatus solve_primal(const LqData& data, LqSolution& sol, LqStats& stats) { return solve(data, sol, stats); }
  virtual std::size_t bytes() const = 0;  // its workspace and the object itself
  // LqSolver::dynamics_unchanged: the next factorization's A and B are the last one's.
  virtual void dynamics_unchanged() {}

  // LqSolver::set_deadline; iterative backends poll it.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool has_deadline() const { return deadline != std::chrono::steady_clock::time_point::max(); }
  bool past_deadline() const { return has_deadline() && std::chrono::steady_clock::now() >= deadline; }
  // LqSolver::set_tolerance; negative: the options' default. The Schur backends read it.
  double tolerance = -1;
};

std::unique_ptr<LqBackend> make_riccati(int nx, int nu, int N, const LqOptions& opt);
std::unique_ptr<LqBackend> make_schur(int nx, int nu, int N, const LqOptions& opt);  // Bdsv or Pcg
std::unique_ptr<LqBackend> make_kkt_ldlt(int nx, int nu, int N, const LqOptions& opt);

// Compile-time sizes: fn(Int<NX>, Int<NU>) with each size fixed when it is in the backend's list
// and kDynamic otherwise. Fixed sizes let the linalg kernels unroll and keep blocks in registers;
// each listed pair is one more instantiation of the backend's kernels (compile time and code size).
template <int V>
using Int = std::integral_constant<int, V>;
template <int... Ns>
using Sizes = std::integer_sequence<int, Ns...>;

// 1..16: every size linalg's serial kernels fix; the Riccati backend adds a few larger state sizes
// (2 x degrees of freedom of common robots).
using SmallSizes = Sizes<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16>;
using RiccatiNx = Sizes<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 28, 32>;
using ControlSizes = Sizes<1, 2, 3, 4, 5, 6, 7, 8>;
using StageSizes = Sizes<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24>;
using NoSizes = Sizes<>;

template <class Fn, int... Ns>
decltype(auto) dispatch_one(Sizes<Ns...>, int n, Fn&& fn) {
  using R = decltype(fn(Int<kDynamic>{}));
  if constexpr (std::is_void_v<R>) {
    if (!((n == Ns ? (fn(Int<Ns>{}), true) : false) || ...)) fn(Int<kDynamic>{});
  } else {
    R out{};
    if (!((n == Ns ? (out = fn(Int<Ns>{}), true) : false) || ...)) out = fn(Int<kDynamic>{});
    return out;
  }
}

template <class NxList, class NuList, class Fn>
decltype(auto) dispatch_sizes(int nx, int nu, Fn&& fn) {
  return dispatch_one(NxList{}, nx, [&](auto NX) -> decltype(auto) {
    return dispatch_one(NuList{}, nu, [&](auto NU) -> decltype(auto) { return fn(NX, NU); });
  });
}

// Column-major block helpers; with fixed sizes the loops unroll.

// dst (n x m) = src' (src m x n).
template <int M, int N>
inline void transpose_block(int m_rt, int n_rt, const double* src, int lds, double* dst, int ldd) {
  const int m = linalg::extent<M>(m_rt), n = linalg::extent<N>(n_rt);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) dst[j + i * ldd] = src[i + j * lds];
}

// Upper triangle <- lower triangle of a square block.
template <int N>
inline void mirror_lower(int n_rt, double* a, int lda) {
  const int n = linalg::extent<N>(n_rt);
  for (int j = 1; j < n; ++j)
    for (int i = 0; i < j; ++i) a[i + j * lda] = a[j + i * lda];
}

// On the bits: an entry is Inf or NaN when its exponent field is all ones, and adding one to that
// field then carries into the sign bit. Four lanes of integer ors, which the compiler packs into one
// vector operation (a sum of v * 0 is one chain of dependent additions, four cycles an entry).
inline bool all_finite(const double* v, std::size_t n) {
  constexpr std::uint64_t kExponent = 0x7ffULL << 52, kOne = 1ULL << 52;
  std::uint64_t carry[4] = {0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; ++l) {
      std::uint64_t b;
      std::memcpy(&b, v + i + l, sizeof(b));
      carry[l] |= (b & kExponent) + kOne;
    }
  for (; i < n; ++i) {
    std::uint64_t b;
    std::memcpy(&b, v + i, sizeof(b));
    carry[0] |= (b & kExponent) + kOne;
  }
  return ((carry[0] | carry[1] | carry[2] | carry[3]) >> 63) == 0;
}

#if KNOT_GEMM_TILE_SIMD
// Run-time row counts (a state size outside the compiled-in lists) on 4-lane vectors; linalg's gemv
// would run them one scalar FMA chain at a time.

// c = alpha A op(B)(:, 0) + beta c for one column, A m x k at run-time sizes, op(B)(p, 0) = B[p]
// (Trans::No) or B[p ldb] (Trans::Yes): tiles of 16 rows (four independent vector FMA chains; gemm_tile's
// 8-row tiles have two), the m % 16 rows left by the tile of that height.
template <linalg::Trans TB>
__attribute__((flatten)) inline void column_product(int m, int k, double alpha, const double* A, int lda,
                                                    const double* B, int ldb, double beta, double* c) {
  constexpr int MR = 16;
  constexpr auto full_shape = linalg::TileShape::Full;
  const int full = m / MR * MR;
  for (int i0 = 0; i0 < full; i0 += MR)
    linalg::detail::gemm_tile_block<MR, 1, TB, full_shape>(i0, 0, k, alpha, A, lda, B, ldb, beta, c, m);
  linalg::detail::with_fixed<MR - 1>(m - full, [&]<int Rows>() {
    linalg::detail::gemm_tile_block<Rows, 1, TB, full_shape>(full, 0, k, alpha, A, lda, B, ldb, beta, c, m);
  });
}

// y(j0 .. j0+NC-1) = A(:, j0..)' x + beta y (beta 0 or 1), A m x n: each column summed down its rows in
// 4-lane vectors (NC independent chains), the lanes reduced at the end, the m % 4 rows left added as
// scalars (a vector load there would read past the column).
template <int NC>
inline void dot_columns(int m, int j0, const double* A, int lda, const double* x, double beta, double* y) {
  const int mv = m / 4 * 4;
  linalg::detail::Tile4 acc[4] = {};
  for (int i = 0; i < mv; i += 4) {
    linalg::detail::Tile4 xv;
    linalg::detail::tile_load<4>(xv, x + i);
    KNOT_UNROLL for (int c = 0; c < NC; ++c) {
      linalg::detail::Tile4 a;
      linalg::detail::tile_load<4>(a, A + i + (j0 + c) * lda);
      acc[c] += a * xv;
    }
  }
  linalg::detail::Tile4 sum;
  linalg::detail::lane_sums(sum, acc[0], acc[1], acc[2], acc[3]);
  KNOT_UNROLL for (int c = 0; c < NC; ++c) {
    double t = sum[c];
    for (int i = mv; i < m; ++i) t += A[i + (j0 + c) * lda] * x[i];
    y[j0 + c] = beta == 0.0 ? t : y[j0 + c] + t;
  }
}

__attribute__((flatten)) inline void gemv_t_dynamic(int m, int n, const double* A, int lda, const double* x,
                                                    double beta, double* y) {
  const int full = n / 4 * 4;
  for (int j0 = 0; j0 < full; j0 += 4) dot_columns<4>(m, j0, A, lda, x, beta, y);
  linalg::detail::with_fixed<3>(n - full, [&]<int NC>() { dot_columns<NC>(m, full, A, lda, x, beta, y); });
}

#endif

// y += A x (y -= A x with Sub) and y = A'x + beta y (beta 0 or 1) for an M x N block A: gemv_tile's
// vector sweeps on fixed sizes, the kernels above at a run-time row count, linalg's gemv otherwise.
template <int M, int N, bool Sub = false>
inline void mv_n(int m, int n, const double* A, int lda, const double* x, double* y) {
#if KNOT_GEMM_TILE_SIMD
  if constexpr (M != kDynamic && N != kDynamic) {
    linalg::gemv_tile_n<M, N, false, Sub>(A, lda, x, y);
    return;
  } else if constexpr (M == kDynamic) {
    column_product<linalg::Trans::No>(m, n, Sub ? -1.0 : 1.0, A, lda, x, 1, 1.0, y);
    return;
  }
#endif
  Serial g;
  linalg::gemv<linalg::Trans::No, M, N>(g, m, n, Sub ? -1.0 : 1.0, A, lda, x, 1.0, y);
}

template <int M, int N>
inline void mv_t(int m, int n, const double* A, int lda, const double* x, double beta, double* y) {
#if KNOT_GEMM_TILE_SIMD
  if constexpr (M != kDynamic && N != kDynamic) {
    linalg::gemv_tile_t<M, N>(A, lda, x, beta, y);
    return;
  } else if constexpr (M == kDynamic) {
    gemv_t_dynamic(m, n, A, lda, x, beta, y);
    return;
  }
#endif
  Serial g;
  linalg::gemv<linalg::Trans::Yes, M, N>(g, m, n, 1.0, A, lda, x, beta, y);
}

bool data_finite(const LqData& d);
bool solution_finite(const LqSolution& s);
double inf_norm(const double* v, std::size_t n);

}  // namespace knot::solver::detail

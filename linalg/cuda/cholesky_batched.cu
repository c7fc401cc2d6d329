// Batched Cholesky factor, solve and posv (cholesky.hpp, column-major, lower or upper fill): one
// system per tile of W lanes of a warp. A tile stages its matrix and right-hand side in shared
// memory when the block's systems fit, works there and copies the results back; otherwise it works
// in place in global memory. No scratch.
#include "knot/linalg/cholesky.hpp"
#include "knot/linalg/cuda/group.cuh"
#include "launch.cuh"
#include "register_factor.cuh"

namespace knot::linalg::cuda {

namespace {

enum class CholOp : int { Factor, Solve, Posv };

// Whether element (i, j) of a column-major matrix lies in the triangle UL (diagonal included).
template <Uplo UL>
__device__ bool in_triangle(int i, int j) {
  return UL == Uplo::Lower ? i >= j : i <= j;
}

template <class T, int N, Uplo UL, CholOp OP>
__global__ void cholesky_kernel(int batch, int n_rt, int width, T* A, T* b, int* info, bool staged) {
  const int tiles = flat_block_size() / width;
  const int tile = flat_thread_index() / width;
  const int p = blockIdx.x * tiles + tile;
  if (p >= batch) return;
  LaneTile g(width);
  const int n = extent<N>(n_rt);
  const int nn = n * n;
  T* const gA = detail::problem(A, p, nn);
  T* const gb = OP == CholOp::Factor ? nullptr : detail::problem(b, p, n);
  T* a = gA;
  T* x = gb;
  const int me = g.rank(), w = g.size();
  if (staged) {
    a = reinterpret_cast<T*>(detail::dynamic_shared()) + static_cast<long long>(tile) * (nn + n);
    x = a + nn;
    // Only the triangle UL is read.
    for (int e = me; e < nn; e += w)
      if (in_triangle<UL>(e % n, e / n)) a[e] = gA[e];
    if constexpr (OP != CholOp::Factor)
      for (int e = me; e < n; e += w) x[e] = gb[e];
    g.sync();
  }

  int status = 0;
  if constexpr (OP == CholOp::Factor) {
    status = cholesky_factor<UL, Arrangement::ColMajor, N>(g, n, a, n);
  } else if constexpr (OP == CholOp::Solve) {
    cholesky_solve<UL, Arrangement::ColMajor, N, 1>(g, n, 1, a, n, x, n);
  } else {
    status = cholesky_posv<UL, Arrangement::ColMajor, N, 1>(g, n, 1, a, n, x, n);
  }

  // Every routine ends on a barrier: the tile's results are visible to all its lanes. The other
  // strict triangle is never written.
  if (staged) {
    if constexpr (OP != CholOp::Solve)
      for (int e = me; e < nn; e += w)
        if (in_triangle<UL>(e % n, e / n)) gA[e] = a[e];
    if constexpr (OP != CholOp::Factor)
      for (int e = me; e < n; e += w) gb[e] = x[e];
  }
  if constexpr (OP != CholOp::Solve)
    if (info != nullptr && me == 0) info[p] = status;
}

bool valid_tile(int tile) { return tile == 0 || tile == 1 || tile == 2 || tile == 4 || tile == 8 || tile == 16 || tile == 32; }

// Lanes per system when the caller passes 0: about n / 2 (step j of the factor updates the n - j - 1
// rows below the diagonal), a power of two in 1..32.
int cholesky_default_tile(int n) {
  int w = 1;
  while (w < 32 && 2 * w < n) w *= 2;
  return w;
}

// The checks that need no device.
Status check_args(int batch, int n, int tile, Uplo uplo, const Launch& launch, int* width, int* threads) {
  if (batch < 0 || n < 0) return detail::invalid("cholesky_batched: need batch >= 0, n >= 0");
  if (!valid_tile(tile)) return detail::invalid("cholesky_batched: tile must be 0, 1, 2, 4, 8, 16 or 32");
  if (uplo != Uplo::Lower && uplo != Uplo::Upper) return detail::invalid("cholesky_batched: uplo must be Lower or Upper");
  *width = tile > 0 ? tile : cholesky_default_tile(n);
  *threads = launch.threads ? launch.threads : 128;
  KNOT_STATUS_TRY(detail::check_threads(*threads));
  if (*threads % 32 != 0) return detail::invalid("cholesky_batched: Launch::threads must be a multiple of 32");
  return {};
}

template <class T, Uplo UL, CholOp OP>
using CholKernel = void (*)(int, int, int, T*, T*, int*, bool);

// The kernel compiled for n when there is one (double, n = 8, 16, 32), else the run-time-size one.
template <class T, Uplo UL, CholOp OP>
CholKernel<T, UL, OP> kernel_for(int n, bool fixed) {
  if constexpr (std::is_same_v<T, double>) {
    if (fixed) {
      switch (n) {
        case 8: return cholesky_kernel<T, 8, UL, OP>;
        case 16: return cholesky_kernel<T, 16, UL, OP>;
        case 32: return cholesky_kernel<T, 32, UL, OP>;
        default: break;
      }
    }
  }
  return cholesky_kernel<T, kDynamic, UL, OP>;
}

// The register kernels (register_factor.cuh) serve the default tile for 1 <= n <= 32;
// Launch::fixed_block_size = false keeps the cooperative run-time-size kernel (for comparisons).
bool cholesky_register_path(int n, int tile, const Launch& launch) {
  return tile == 0 && launch.fixed_block_size && detail::register_order(n) > 0;
}

// The size of a register launch; the shared memory of the solves (the larger), or of a factor only.
template <class T>
Status cholesky_register_size(int batch, int n, const Launch& launch, bool solves, LaunchSize* size) {
  const int np = detail::register_order(n);
  const int threads = launch.threads ? launch.threads : 64;  // batched.hpp says why 64
  const int per_block = threads / np;
  const std::size_t per_tile = static_cast<std::size_t>(detail::register_cholesky_shared(np, solves));
  KNOT_STATUS_TRY(detail::plan_scratch(threads, (batch + per_block - 1) / per_block, sizeof(T) * per_tile * per_block, size));
  size->workspace_bytes = 0;
  return {};
}

template <class T, int NP, Uplo UL, CholOp OP>
Status cholesky_register_launch_np(const char* what, const LaunchSize& size, const Launch& launch, int batch, int n,
                                   T* A, T* b, int* info) {
  constexpr auto kOp = static_cast<detail::RegCholOp>(static_cast<int>(OP));
  static_assert(static_cast<int>(CholOp::Posv) == static_cast<int>(detail::RegCholOp::Posv));
  return detail::launch_kernel(detail::cholesky_register_kernel<T, NP, UL, kOp>, size.grid, size.threads,
                               size.shared_bytes, launch.stream, what, batch, n, A, b, info);
}

template <class T, Uplo UL, CholOp OP>
Status cholesky_register_launch(const char* what, int batch, int n, T* A, T* b, int* info, const Launch& launch) {
  LaunchSize size;
  KNOT_STATUS_TRY(cholesky_register_size<T>(batch, n, launch, OP != CholOp::Factor, &size));
  if (!size.fits_shared) return detail::invalid("cholesky_batched: Launch::threads too large for the register kernel");
  switch (detail::register_order(n)) {
    case 8: return cholesky_register_launch_np<T, 8, UL, OP>(what, size, launch, batch, n, A, b, info);
    case 16: return cholesky_register_launch_np<T, 16, UL, OP>(what, size, launch, batch, n, A, b, info);
    default: return cholesky_register_launch_np<T, 32, UL, OP>(what, size, launch, batch, n, A, b, info);
  }
}

template <class T, CholOp OP>
Status cholesky_launch(const char* what, int batch, int n, T* A, Uplo uplo, T* b, int* info, int tile,
                       const Launch& launch) {
  if (cholesky_register_path(n, tile, launch)) {
    if (uplo == Uplo::Lower) return cholesky_register_launch<T, Uplo::Lower, OP>(what, batch, n, A, b, info, launch);
    return cholesky_register_launch<T, Uplo::Upper, OP>(what, batch, n, A, b, info, launch);
  }
  LaunchSize size;
  KNOT_STATUS_TRY(cholesky_batched_size<T>(batch, n, tile, launch, &size));
  const bool staged = size.fits_shared && n > 0;
  const std::size_t shared = staged ? size.shared_bytes : 0;
  int width = 0, threads = 0;
  KNOT_STATUS_TRY(check_args(batch, n, tile, uplo, launch, &width, &threads));
  if (uplo == Uplo::Lower)
    return detail::launch_kernel(kernel_for<T, Uplo::Lower, OP>(n, launch.fixed_block_size), size.grid, size.threads,
                                 shared, launch.stream, what, batch, n, width, A, b, info, staged);
  return detail::launch_kernel(kernel_for<T, Uplo::Upper, OP>(n, launch.fixed_block_size), size.grid, size.threads,
                               shared, launch.stream, what, batch, n, width, A, b, info, staged);
}

}  // namespace

template <class T>
Status cholesky_batched_size(int batch, int n, int tile, const Launch& launch, LaunchSize* size) {
  int width = 0, threads = 0;
  KNOT_STATUS_TRY(check_args(batch, n, tile, Uplo::Lower, launch, &width, &threads));
  if (size == nullptr) return detail::invalid("cholesky_batched_size: null LaunchSize");
  if (cholesky_register_path(n, tile, launch)) return cholesky_register_size<T>(batch, n, launch, true, size);
  const int per_block = threads / width;
  const int grid = (batch + per_block - 1) / per_block;
  const std::size_t nn = static_cast<std::size_t>(n);
  KNOT_STATUS_TRY(detail::plan_scratch(threads, grid, sizeof(T) * (nn * nn + nn) * per_block, size));
  // Staging is an optimization, not scratch: without room in shared memory the launch works in place.
  size->workspace_bytes = 0;
  return {};
}

template <class T>
Status cholesky_factor_batched(int batch, int n, T* A, Uplo uplo, int* info, int tile, const Launch& launch) {
  int width = 0, threads = 0;
  KNOT_STATUS_TRY(check_args(batch, n, tile, uplo, launch, &width, &threads));
  if (batch == 0) return {};
  if (A == nullptr) return detail::invalid("cholesky_factor_batched: null A");
  return cholesky_launch<T, CholOp::Factor>("cholesky_factor_batched kernel", batch, n, A, uplo,
                                            static_cast<T*>(nullptr), info, tile, launch);
}

template <class T>
Status cholesky_solve_batched(int batch, int n, const T* A, Uplo uplo, T* b, int tile, const Launch& launch) {
  int width = 0, threads = 0;
  KNOT_STATUS_TRY(check_args(batch, n, tile, uplo, launch, &width, &threads));
  if (batch == 0) return {};
  if (A == nullptr || b == nullptr) return detail::invalid("cholesky_solve_batched: null A or b");
  // The kernel only reads A in this mode.
  return cholesky_launch<T, CholOp::Solve>("cholesky_solve_batched kernel", batch, n, const_cast<T*>(A), uplo, b,
                                           static_cast<int*>(nullptr), tile, launch);
}

template <class T>
Status cholesky_posv_batched(int batch, int n, T* A, Uplo uplo, T* b, int* info, int tile, const Launch& launch) {
  int width = 0, threads = 0;
  KNOT_STATUS_TRY(check_args(batch, n, tile, uplo, launch, &width, &threads));
  if (batch == 0) return {};
  if (A == nullptr || b == nullptr) return detail::invalid("cholesky_posv_batched: null A or b");
  return cholesky_launch<T, CholOp::Posv>("cholesky_posv_batched kernel", batch, n, A, uplo, b, info, tile, launch);
}

#define KNOT_CHOLESKY_INSTANTIATE(T)                                                            \
  template Status cholesky_batched_size<T>(int, int, int, const Launch&, LaunchSize*);         \
  template Status cholesky_factor_batched<T>(int, int, T*, Uplo, int*, int, const Launch&);     \
  template Status cholesky_solve_batched<T>(int, int, const T*, Uplo, T*, int, const Launch&);  \
  template Status cholesky_posv_batched<T>(int, int, T*, Uplo, T*, int*, int, const Launch&);
KNOT_CHOLESKY_INSTANTIATE(float)
KNOT_CHOLESKY_INSTANTIATE(double)
#undef KNOT_CHOLESKY_INSTANTIATE

}  // namespace knot::linalg::cuda

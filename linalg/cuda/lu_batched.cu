// Batched LU with partial pivoting (coop_lu.hpp, column-major, logical interchanges): one system
// per tile of W lanes of a warp, W the smallest power of two >= threads_per_system. A tile stages
// its matrix, right-hand side and pivots in shared memory when the block's systems fit, works there
// and copies the results back; otherwise it works in place in global memory. The solver's own
// workspace is scratch: shared memory, or Launch::workspace.
#include "knot/linalg/coop_lu.hpp"
#include "knot/linalg/cuda/group.cuh"
#include "launch.cuh"
#include "register_factor.cuh"

namespace knot::linalg::cuda {

namespace {

enum class LuOp : int { Factor, Solve, Substitute };

__host__ __device__ constexpr CoopLuConfig lu_config(int rows_per_thread) {
  CoopLuConfig c;
  c.rows_per_thread = rows_per_thread;
  c.layout = LuLayout::kColMajor;
  c.interchange = LuInterchange::kLogical;
  return c;
}

// Static kernels: double, n = 8, 16, 32 with the default rows_per_thread (lu_default_rows below).
constexpr int kStaticRows8 = 1, kStaticRows16 = 2, kStaticRows32 = 2;

// Everything a launch decides on the host; the kernel re-derives its pointers from it.
struct LuPlan {
  int n = 0;
  int rows = 1;           // rows_per_thread
  int width = 1;          // lanes per system
  int ws = 0;             // coop_lu workspace elements per system
  bool staged = false;    // matrix, rhs and pivots copied to shared memory
  bool ws_shared = true;  // workspace in shared memory (else in Launch::workspace)
};

// Shared memory of one block, in this order: the workspaces (when in shared memory), the staged
// matrices and right-hand sides (T), the staged pivots (int).
std::size_t lu_stage_bytes(std::size_t elem, int n) {
  const std::size_t nn = static_cast<std::size_t>(n);
  return elem * (nn * nn + nn) + sizeof(int) * nn;
}

template <class T, int N, int R, LuOp OP>
__global__ void lu_kernel(int batch, LuPlan plan, T* A, int* piv, const T* b, T* x, int* info, T* work) {
  const int tiles = flat_block_size() / plan.width;
  const int tile = flat_thread_index() / plan.width;
  const int p = blockIdx.x * tiles + tile;
  if (p >= batch) return;
  LaneTile g(plan.width);
  const int n = extent<N>(plan.n);
  const long long nn = static_cast<long long>(n) * n;

  T* shared = reinterpret_cast<T*>(detail::dynamic_shared());
  T* ws = plan.ws_shared ? shared + static_cast<long long>(tile) * plan.ws
                         : work + static_cast<long long>(p) * plan.ws;
  T* const stage = shared + (plan.ws_shared ? static_cast<long long>(tiles) * plan.ws : 0);
  T* gA = detail::problem(A, p, nn);
  int* gp = detail::problem(piv, p, n);
  T* gx = OP == LuOp::Factor ? nullptr : detail::problem(x, p, n);
  const T* gb = OP == LuOp::Factor ? nullptr : detail::problem(b, p, n);
  T* a = gA;
  int* pv = gp;
  T* xv = gx;
  const T* bv = gb;
  const int me = g.rank(), w = g.size();
  if (plan.staged) {
    a = stage + tile * (nn + n);
    xv = a + nn;
    bv = xv;
    pv = reinterpret_cast<int*>(stage + tiles * (nn + n)) + static_cast<long long>(tile) * n;
    for (long long e = me; e < nn; e += w) a[e] = gA[e];
    if constexpr (OP != LuOp::Factor)
      for (int e = me; e < n; e += w) xv[e] = gb[e];
    if constexpr (OP == LuOp::Substitute)
      for (int e = me; e < n; e += w) pv[e] = gp[e];
    g.sync();
  }

  int status = 0;
  auto run = [&](const auto& lu) {
    if constexpr (OP == LuOp::Factor) {
      status = lu.factorize(g, a, kUnitStride, pv, kUnitStride, ws);
    } else if constexpr (OP == LuOp::Solve) {
      status = lu.solve(g, a, kUnitStride, pv, kUnitStride, bv, xv, kUnitStride, ws);
    } else {
      lu.substitute(g, a, kUnitStride, pv, kUnitStride, bv, xv, kUnitStride, ws);
    }
  };
  if constexpr (N == kDynamic) {
    run(CoopLuDynamic<T, lu_config(1)>(n, plan.rows));
  } else {
    run(CoopLuStatic<T, N, lu_config(R)>{});
  }

  // Every entry point ends on a barrier: the tile's results are visible to all its lanes.
  if (plan.staged) {
    if constexpr (OP != LuOp::Substitute) {
      for (long long e = me; e < nn; e += w) gA[e] = a[e];
      for (int e = me; e < n; e += w) gp[e] = pv[e];
    }
    if constexpr (OP != LuOp::Factor)
      for (int e = me; e < n; e += w) gx[e] = xv[e];
  }
  if constexpr (OP != LuOp::Substitute)
    if (info != nullptr && me == 0) info[p] = status;
}

// rows_per_thread when the caller passes 0: about 8 threads per system up to n = 16, 16 above.
int lu_default_rows(int n) {
  if (n <= 16) return n <= 8 ? 1 : (n + 7) / 8;
  return (n + 15) / 16;
}

int pow2_at_least(int t) {
  int w = 1;
  while (w < t) w *= 2;
  return w;
}

// The checks that need no device; fills the plan's n, rows and width and the block size.
Status lu_check(int batch, int n, int rows_per_thread, const Launch& launch, LuPlan* plan,
                int* threads) {
  if (batch < 0 || n < 0) return detail::invalid("lu_batched: need batch >= 0, n >= 0");
  if (rows_per_thread < 0) return detail::invalid("lu_batched: rows_per_thread must be >= 0 (0: the default)");
  const int rows = rows_per_thread > 0 ? rows_per_thread : lu_default_rows(n);
  const int t = coop_lu_threads_per_system(n, rows);
  if (t > 32) return detail::invalid("lu_batched: rows_per_thread must be >= ceil(n / 32) (one system per warp at most)");
  *threads = launch.threads ? launch.threads : 64;  // batched.hpp says why 64
  KNOT_STATUS_TRY(detail::check_threads(*threads));
  if (*threads % 32 != 0) return detail::invalid("lu_batched: Launch::threads must be a multiple of 32");
  plan->n = n;
  plan->rows = rows;
  plan->width = pow2_at_least(t);
  plan->ws = coop_lu_workspace_size(n, rows);
  return {};
}

template <class T>
Status lu_plan(int batch, int n, int rows_per_thread, const Launch& launch, LuPlan* plan, LaunchSize* size) {
  int threads = 0;
  KNOT_STATUS_TRY(lu_check(batch, n, rows_per_thread, launch, plan, &threads));
  const int per_block = threads / plan->width;
  const int grid = (batch + per_block - 1) / per_block;
  const std::size_t ws_bytes = sizeof(T) * static_cast<std::size_t>(plan->ws) * per_block;
  KNOT_STATUS_TRY(detail::plan_scratch(threads, grid, ws_bytes, size));
  // The workspace is per system, so a batch needs batch (not grid * per_block) of them.
  size->workspace_bytes = sizeof(T) * static_cast<std::size_t>(plan->ws) * batch;
  // Staging is an optimization, not scratch: without room in shared memory the tiles work in place.
  std::size_t limit = 0;
  KNOT_STATUS_TRY(detail::shared_limit(&limit));
  const std::size_t stage_bytes = lu_stage_bytes(sizeof(T), n) * per_block;
  plan->ws_shared = launch.workspace == nullptr;
  plan->staged = n > 0 && stage_bytes + (plan->ws_shared ? ws_bytes : 0) <= limit;
  // The shared memory of a launch without a workspace: the workspaces, and the staging if it fits.
  if (size->fits_shared && stage_bytes + ws_bytes <= limit) size->shared_bytes = ws_bytes + stage_bytes;
  return {};
}

template <class T, LuOp OP>
using LuKernel = void (*)(int, LuPlan, T*, int*, const T*, T*, int*, T*);

// The kernel compiled for (n, rows) when there is one (double only, to bound compile time).
template <class T, LuOp OP>
LuKernel<T, OP> lu_kernel_for(const LuPlan& plan, bool fixed) {
  if constexpr (std::is_same_v<T, double>) {
    if (fixed) {
      if (plan.n == 8 && plan.rows == kStaticRows8) return lu_kernel<T, 8, kStaticRows8, OP>;
      if (plan.n == 16 && plan.rows == kStaticRows16) return lu_kernel<T, 16, kStaticRows16, OP>;
      if (plan.n == 32 && plan.rows == kStaticRows32) return lu_kernel<T, 32, kStaticRows32, OP>;
    }
  }
  return lu_kernel<T, kDynamic, kDynamic, OP>;
}

// The register kernels (register_factor.cuh) serve the default rows_per_thread for 1 <= n <= 32;
// Launch::fixed_block_size = false keeps the cooperative run-time-size kernel (for comparisons).
bool lu_register_path(int n, int rows_per_thread, const Launch& launch) {
  return rows_per_thread == 0 && launch.fixed_block_size && detail::register_order(n) > 0;
}

template <class T>
Status lu_register_size(int batch, int n, const Launch& launch, LaunchSize* size) {
  const int np = detail::register_order(n);
  const int threads = launch.threads ? launch.threads : 64;  // batched.hpp says why 64
  const int per_block = threads / np;
  const std::size_t shared = sizeof(T) * static_cast<std::size_t>(detail::register_lu_shared(np)) * per_block;
  KNOT_STATUS_TRY(detail::plan_scratch(threads, (batch + per_block - 1) / per_block, shared, size));
  size->workspace_bytes = 0;  // shared memory only: a few words per system
  return {};
}

template <class T, int NP, LuOp OP>
Status lu_register_launch_np(const char* what, const LaunchSize& size, const Launch& launch, int batch, int n, T* A,
                             int* piv, const T* b, T* x, int* info) {
  constexpr auto kOp = static_cast<detail::RegLuOp>(static_cast<int>(OP));
  static_assert(static_cast<int>(LuOp::Substitute) == static_cast<int>(detail::RegLuOp::Substitute));
  return detail::launch_kernel(detail::lu_register_kernel<T, NP, kOp>, size.grid, size.threads, size.shared_bytes,
                               launch.stream, what, batch, n, A, piv, b, x, info);
}

template <class T, LuOp OP>
Status lu_register_launch(const char* what, int batch, int n, T* A, int* piv, const T* b, T* x, int* info,
                          const Launch& launch) {
  // The kernels assume coop_lu's default pivoting (batched.hpp promises it).
  static_assert(lu_config(1).relative_pivot_threshold == 1.0 && lu_config(1).singular_floor < 0);
  LaunchSize size;
  KNOT_STATUS_TRY(lu_register_size<T>(batch, n, launch, &size));
  if (!size.fits_shared) return detail::invalid("lu_batched: Launch::threads too large for the register kernel");
  switch (detail::register_order(n)) {
    case 8: return lu_register_launch_np<T, 8, OP>(what, size, launch, batch, n, A, piv, b, x, info);
    case 16: return lu_register_launch_np<T, 16, OP>(what, size, launch, batch, n, A, piv, b, x, info);
    default: return lu_register_launch_np<T, 32, OP>(what, size, launch, batch, n, A, piv, b, x, info);
  }
}

template <class T, LuOp OP>
Status lu_launch(const char* what, int batch, int n, T* A, int* piv, const T* b, T* x, int* info, int rows_per_thread,
                 const Launch& launch) {
  if (lu_register_path(n, rows_per_thread, launch))
    return lu_register_launch<T, OP>(what, batch, n, A, piv, b, x, info, launch);
  LuPlan plan;
  LaunchSize size;
  KNOT_STATUS_TRY(lu_plan<T>(batch, n, rows_per_thread, launch, &plan, &size));
  T* work = nullptr;
  std::size_t shared = 0;
  KNOT_STATUS_TRY(detail::place_scratch(size, launch, &shared, &work));
  const int per_block = size.threads / plan.width;
  shared = (plan.ws_shared ? sizeof(T) * static_cast<std::size_t>(plan.ws) * per_block : 0) +
           (plan.staged ? lu_stage_bytes(sizeof(T), n) * per_block : 0);
  return detail::launch_kernel(lu_kernel_for<T, OP>(plan, launch.fixed_block_size), size.grid, size.threads, shared,
                               launch.stream, what, batch, plan, A, piv, b, x, info, work);
}

// Argument checks shared by the entry points, in the order a caller would fix them.
Status lu_args(int batch, int n, int rows_per_thread, const Launch& launch) {
  LuPlan plan;
  int threads = 0;
  return lu_check(batch, n, rows_per_thread, launch, &plan, &threads);
}

}  // namespace

template <class T>
Status lu_batched_size(int batch, int n, int rows_per_thread, const Launch& launch, LaunchSize* size) {
  KNOT_STATUS_TRY(lu_args(batch, n, rows_per_thread, launch));
  if (size == nullptr) return detail::invalid("lu_batched_size: null LaunchSize");
  if (lu_register_path(n, rows_per_thread, launch)) return lu_register_size<T>(batch, n, launch, size);
  LuPlan plan;
  return lu_plan<T>(batch, n, rows_per_thread, launch, &plan, size);
}

template <class T>
Status lu_factor_batched(int batch, int n, T* A, int* piv, int* info, int rows_per_thread, const Launch& launch) {
  KNOT_STATUS_TRY(lu_args(batch, n, rows_per_thread, launch));
  if (batch == 0) return {};
  if (A == nullptr || piv == nullptr) return detail::invalid("lu_factor_batched: null A or piv");
  return lu_launch<T, LuOp::Factor>("lu_factor_batched kernel", batch, n, A, piv, static_cast<const T*>(nullptr),
                                    static_cast<T*>(nullptr), info, rows_per_thread, launch);
}

template <class T>
Status lu_solve_batched(int batch, int n, T* A, int* piv, const T* b, T* x, int* info, int rows_per_thread,
                        const Launch& launch) {
  KNOT_STATUS_TRY(lu_args(batch, n, rows_per_thread, launch));
  if (batch == 0) return {};
  if (A == nullptr || piv == nullptr || b == nullptr || x == nullptr)
    return detail::invalid("lu_solve_batched: null A, piv, b or x");
  return lu_launch<T, LuOp::Solve>("lu_solve_batched kernel", batch, n, A, piv, b, x, info, rows_per_thread, launch);
}

template <class T>
Status lu_substitute_batched(int batch, int n, const T* A, const int* piv, const T* b, T* x, int rows_per_thread,
                             const Launch& launch) {
  KNOT_STATUS_TRY(lu_args(batch, n, rows_per_thread, launch));
  if (batch == 0) return {};
  if (A == nullptr || piv == nullptr || b == nullptr || x == nullptr)
    return detail::invalid("lu_substitute_batched: null A, piv, b or x");
  // The kernel only reads A and piv in this mode.
  return lu_launch<T, LuOp::Substitute>("lu_substitute_batched kernel", batch, n, const_cast<T*>(A),
                                        const_cast<int*>(piv), b, x, static_cast<int*>(nullptr), rows_per_thread,
                                        launch);
}

#define KNOT_LU_INSTANTIATE(T)                                                                            \
  template Status lu_batched_size<T>(int, int, int, const Launch&, LaunchSize*);                         \
  template Status lu_factor_batched<T>(int, int, T*, int*, int*, int, const Launch&);                     \
  template Status lu_solve_batched<T>(int, int, T*, int*, const T*, T*, int*, int, const Launch&);        \
  template Status lu_substitute_batched<T>(int, int, const T*, const int*, const T*, T*, int, const Launch&);
KNOT_LU_INSTANTIATE(float)
KNOT_LU_INSTANTIATE(double)
#undef KNOT_LU_INSTANTIATE

}  // namespace knot::linalg::cuda

// Internal helpers of the batched launchers: checked CUDA calls, launch configuration, and the
// shared-memory-or-workspace decision. Not installed.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "knot/linalg/cuda/batched.hpp"

namespace knot::linalg::cuda::detail {

inline Status cuda_error(cudaError_t e, const char* what) {
  return Status{StatusCode::CudaError, static_cast<int>(e), what};
}

inline Status invalid(const char* what) { return Status{StatusCode::InvalidArgument, 0, what}; }

// Evaluates a CUDA call; on failure returns its Status from the enclosing function.
#define KNOT_CUDA_TRY(call, what)                                          \
  do {                                                                     \
    const cudaError_t knot_err_ = (call);                                  \
    if (knot_err_ != cudaSuccess) return ::knot::linalg::cuda::detail::cuda_error(knot_err_, what); \
  } while (0)

// Returns a non-ok Status from the enclosing function.
#define KNOT_STATUS_TRY(expr)                    \
  do {                                           \
    const ::knot::linalg::cuda::Status knot_st_ = (expr); \
    if (!knot_st_.ok()) return knot_st_;         \
  } while (0)

// Dynamic shared memory kept free for the kernels' static __shared__ variables (a few flags).
inline constexpr std::size_t kStaticSharedReserve = 256;
// Above this, a kernel must opt in to more dynamic shared memory.
inline constexpr std::size_t kDefaultSharedLimit = 48 * 1024;

inline int round_up(int x, int m) { return (x + m - 1) / m * m; }
inline int clamp_threads(int x) { return x < 32 ? 32 : (x > 256 ? 256 : x); }

// Largest dynamic shared memory one block of the current device may use.
inline Status shared_limit(std::size_t* bytes) {
  int dev = 0, optin = 0;
  KNOT_CUDA_TRY(cudaGetDevice(&dev), "cudaGetDevice");
  KNOT_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
                "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
  *bytes = static_cast<std::size_t>(optin) > kStaticSharedReserve ? optin - kStaticSharedReserve : 0;
  return {};
}

inline Status check_threads(int threads) {
  if (threads < 1 || threads > 1024) return invalid("Launch::threads must be in 1..1024 (or 0 for the default)");
  return {};
}

// Fills `size` for a launch of `grid` blocks whose per-block scratch is `scratch_bytes` (0: none).
// The scratch goes to shared memory unless launch.workspace is set; then the batch needs
// `grid * scratch_bytes` of workspace.
inline Status plan_scratch(int threads, int grid, std::size_t scratch_bytes, LaunchSize* size) {
  std::size_t limit = 0;
  KNOT_STATUS_TRY(shared_limit(&limit));
  size->threads = threads;
  size->grid = grid;
  size->fits_shared = scratch_bytes <= limit;
  size->shared_bytes = size->fits_shared ? scratch_bytes : 0;
  size->workspace_bytes = static_cast<std::size_t>(grid) * scratch_bytes;
  return {};
}

// Where the scratch goes: shared bytes for the launch, and the workspace to pass (null: shared).
// Checks the workspace is large enough, or that shared memory suffices.
template <class T>
Status place_scratch(const LaunchSize& size, const Launch& launch, std::size_t* shared_bytes, T** workspace) {
  if (launch.workspace != nullptr) {
    if (launch.workspace_bytes < size.workspace_bytes)
      return invalid("Launch::workspace_bytes is smaller than LaunchSize::workspace_bytes");
    *shared_bytes = 0;
    *workspace = static_cast<T*>(launch.workspace);
    return {};
  }
  if (!size.fits_shared)
    return Status{StatusCode::NeedsWorkspace, 0, "scratch exceeds the shared memory of one block; pass Launch::workspace"};
  *shared_bytes = size.shared_bytes;
  *workspace = nullptr;
  return {};
}

// Launches kernel<<<grid, threads, shared_bytes, stream>>>(args...) and checks the launch.
template <class... Params, class... Args>
Status launch_kernel(void (*kernel)(Params...), int grid, int threads, std::size_t shared_bytes, Stream stream,
                     const char* what, Args&&... args) {
  if (grid == 0) return {};
  // A kernel's register use caps its block size below 1024; say so instead of failing the launch.
  cudaFuncAttributes attr{};
  KNOT_CUDA_TRY(cudaFuncGetAttributes(&attr, kernel), "cudaFuncGetAttributes");
  if (threads > attr.maxThreadsPerBlock) return invalid("Launch::threads exceeds this kernel's limit (see batched.hpp)");
  if (shared_bytes > kDefaultSharedLimit)
    KNOT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)),
                  "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  KNOT_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), what);
  return {};
}

// Block sizes with a kernel compiled for that size (constant trip counts and index arithmetic);
// every other size runs the run-time-size kernel. Double only, to bound compile time.
template <class T>
inline constexpr bool kHasFixedBlockSizes = std::is_same_v<T, double>;

// Calls fn(std::integral_constant<int, BS>{}) with BS = bs when a fixed-size kernel exists for it
// (and `allowed`), else with BS = kDynamic.
template <class T, class Fn>
auto with_block_size(int bs, bool allowed, Fn&& fn) {
  if constexpr (kHasFixedBlockSizes<T>) {
    if (allowed) {
      switch (bs) {
        case 8: return fn(std::integral_constant<int, 8>{});
        case 16: return fn(std::integral_constant<int, 16>{});
        case 32: return fn(std::integral_constant<int, 32>{});
        case 64: return fn(std::integral_constant<int, 64>{});
        default: break;
      }
    }
  }
  return fn(std::integral_constant<int, kDynamic>{});
}

// Problem p's operand in a batch laid out back to back.
template <class T>
__device__ __forceinline__ T* problem(T* base, int p, long long stride) {
  return base + static_cast<long long>(p) * stride;
}

// Per-block dynamic shared memory, aligned for any scalar.
__device__ __forceinline__ unsigned char* dynamic_shared() {
  extern __shared__ __align__(16) unsigned char knot_dynamic_shared[];
  return knot_dynamic_shared;
}

}  // namespace knot::linalg::cuda::detail

// Portability macros shared by every linalg primitive.
//
// KNOT_HD marks a function callable on the host and on the device: `__host__ __device__` under
// nvcc, plain `inline` under a host compiler, so the whole core builds and is tested without CUDA.
//
// KNOT_HD_NOINLINE marks a whole phase of a kernel (a template: it needs no `inline`) that nvcc
// compiles as a function of its own instead of inlining it into its callers. ptxas's time and memory
// grow faster than the size of one function: the batched SQP kernel inlined whole held ptxas past
// 16 minutes and 7.5 GB per scalar type. On the host the compiler decides as before.
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#define KNOT_HD __host__ __device__ inline
#define KNOT_HD_NOINLINE __host__ __device__ __noinline__
#define KNOT_DEVICE_CODE 1
#else
#define KNOT_HD inline
#define KNOT_HD_NOINLINE
#define KNOT_DEVICE_CODE 0
#endif

#if defined(__CUDA_ARCH__)
#define KNOT_ON_DEVICE 1
#else
#define KNOT_ON_DEVICE 0
#endif

namespace knot::linalg {

// Marks a compile-time dimension as "given at run time" (the Eigen convention).
inline constexpr int kDynamic = -1;

// The extent a primitive loops over: the compile-time one when N is fixed, else the run-time one.
// With N fixed the compiler sees constant trip counts and unrolls small loops.
template <int N>
KNOT_HD constexpr int extent(int runtime_n) {
  return N == kDynamic ? runtime_n : N;
}

}  // namespace knot::linalg

// Portability macros shared by every linalg primitive.
//
// KNOT_HD marks a function callable on the host and on the device: `__host__ __device__` under
// nvcc, plain `inline` under a host compiler, so the whole core builds and is tested without CUDA.
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#define KNOT_HD __host__ __device__ inline
#define KNOT_DEVICE_CODE 1
#else
#define KNOT_HD inline
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

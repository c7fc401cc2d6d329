// The batched SQP kernel's launchers, one per scalar type, each compiled by nvcc in a translation
// unit of its own (batch_sqp_double.cu, batch_sqp_float.cu): the kernel is the whole device-path
// driver, by far the longest compile of the project, and two units build in parallel.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "knot/solver/cuda/batch_cuda.hpp"

namespace knot::solver::cuda::detail {

// Enqueues batch_sqp_kernel<T> on stream: one block of `threads` per problem; problem p reads
// the arena at arena + p arena_stride (its own model).
void launch_batch_sqp(int batch, int threads, cudaStream_t stream, const device::BatchProblem& P,
                      const unsigned char* arena, std::size_t arena_stride, const double* slices, std::size_t slice_stride,
                      const device::DeviceOptions& o, double* arrays, std::size_t array_stride, double* iterates,
                      std::size_t iterate_stride, device::DeviceResult* results, IterationStats* rows);
void launch_batch_sqp(int batch, int threads, cudaStream_t stream, const device::BatchProblem& P,
                      const unsigned char* arena, std::size_t arena_stride, const double* slices, std::size_t slice_stride,
                      const device::DeviceOptions& o, float* arrays, std::size_t array_stride, double* iterates,
                      std::size_t iterate_stride, device::DeviceResult* results, IterationStats* rows);

}  // namespace knot::solver::cuda::detail

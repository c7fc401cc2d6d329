// The batched SQP kernel's launchers, one per scalar type and (in double) one with the exact
// Hessian, each compiled by nvcc in a translation unit of its own (batch_sqp_double.cu,
// batch_sqp_float.cu, batch_sqp_exact.cu): the kernel is the whole device-path driver, by far the
// longest compile of the project, and the units build in parallel.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

// The device path's headers alone, not batch_cuda.hpp: the kernels then do not depend on the host
// API (batch.hpp, solver.hpp, the problems' terms), whose edits would rebuild them for many minutes.
#include "knot/solver/device/problem.hpp"
#include "knot/solver/device/sqp.hpp"

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

// batch_sqp_kernel<double, true>: the same with the exact Hessian (DeviceOptions::hessian 1 or 2).
void launch_batch_sqp_exact(int batch, int threads, cudaStream_t stream, const device::BatchProblem& P,
                            const unsigned char* arena, std::size_t arena_stride, const double* slices,
                            std::size_t slice_stride, const device::DeviceOptions& o, double* arrays,
                            std::size_t array_stride, double* iterates, std::size_t iterate_stride,
                            device::DeviceResult* results, IterationStats* rows);

// The kernels' attributes (their local memory per thread sizes the stack limit).
cudaError_t batch_sqp_attributes(const double*, cudaFuncAttributes* out);
cudaError_t batch_sqp_attributes(const float*, cudaFuncAttributes* out);
cudaError_t batch_sqp_exact_attributes(cudaFuncAttributes* out);

}  // namespace knot::solver::cuda::detail

// batch_sqp_kernel<double, true> (batch_sqp_kernel.cuh): the driver with the exact Hessian's code
// (device/hessian.hpp), in a translation unit of its own. Each model's second-order piece is a
// function of its own there, so ptxas compiles them one by one.
#include "batch_sqp_kernel.cuh"

namespace knot::solver::cuda::detail {

void launch_batch_sqp_exact(int batch, int threads, cudaStream_t stream, const device::BatchProblem& P,
                            const unsigned char* arena, std::size_t arena_stride, const double* slices,
                            std::size_t slice_stride, const device::DeviceOptions& o, double* arrays,
                            std::size_t array_stride, double* iterates, std::size_t iterate_stride,
                            device::DeviceResult* results, IterationStats* rows) {
  launch<true>(batch, threads, stream, P, arena, arena_stride, slices, slice_stride, o, arrays, array_stride, iterates,
               iterate_stride, results, rows);
}

cudaError_t batch_sqp_exact_attributes(cudaFuncAttributes* out) {
  return cudaFuncGetAttributes(out, batch_sqp_kernel<double, true>);
}

}  // namespace knot::solver::cuda::detail

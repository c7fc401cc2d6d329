// batch_sqp_kernel<float, false> (batch_sqp_kernel.cuh, Gauss-Newton steps), in a translation unit of its own.
#include "batch_sqp_kernel.cuh"

namespace knot::solver::cuda::detail {

void launch_batch_sqp(int batch, int threads, cudaStream_t stream, const device::BatchProblem& P,
                      const unsigned char* arena, std::size_t arena_stride, const double* slices, std::size_t slice_stride,
                      const device::DeviceOptions& o, float* arrays, std::size_t array_stride, double* iterates,
                      std::size_t iterate_stride, device::DeviceResult* results, IterationStats* rows) {
  launch<false>(batch, threads, stream, P, arena, arena_stride, slices, slice_stride, o, arrays, array_stride, iterates,
                iterate_stride, results, rows);
}

cudaError_t batch_sqp_attributes(const float*, cudaFuncAttributes* out) {
  return cudaFuncGetAttributes(out, batch_sqp_kernel<float, false>);
}

}  // namespace knot::solver::cuda::detail

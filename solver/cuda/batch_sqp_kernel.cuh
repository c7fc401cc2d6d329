// The batched SQP kernel (one problem per block), included by batch_sqp_double.cu,
// batch_sqp_float.cu and batch_sqp_exact.cu, which instantiate it for one scalar type each, and
// (exact) with the exact Hessian's code.
#pragma once
#include "batch_sqp_launch.hpp"
#include "knot/linalg/cuda/group.cuh"
#include "knot/solver/device/riccati.hpp"

namespace knot::solver::cuda::detail {

// One problem per block: the staged iterate in, the solve, the iterate out (converted when T is float).
template <class T, bool kExact>
__global__ void batch_sqp_kernel(device::BatchProblem P, const unsigned char* arenas, std::size_t arena_stride,
                                 const double* slices,
                                 std::size_t slice_stride, device::DeviceOptions o, T* arrays,
                                 std::size_t array_stride, double* iterates, std::size_t iterate_stride,
                                 device::DeviceResult* results, IterationStats* rows, int batch) {
  const int p = static_cast<int>(blockIdx.x);
  if (p >= batch) return;  // the whole block leaves together
  linalg::BlockGroup g;
  const device::SqpArrays<T> a = device::SqpArrays<T>::carve(P, o, o.trials, arrays + p * array_stride);
  double* it = iterates + p * iterate_stride;
  for (std::size_t i = g.rank(); i < iterate_stride; i += g.size()) a.x[i] = T(it[i]);
  g.sync();
  device::sqp_solve<kExact>(g, P, arenas + p * arena_stride, slices + p * slice_stride, o, a, results + p,
                    rows + static_cast<std::size_t>(p) * (o.max_iter + 1));
#if defined(KNOT_DEVICE_PROFILE)
  if (p == 0 && g.rank() == 0)
    for (int i = 0; i < 16; ++i) results[0].phase_cycles[8 + i] = device::riccati_detail::riccati_profile_cycles[i];
#endif
  for (std::size_t i = g.rank(); i < iterate_stride; i += g.size()) it[i] = double(a.x[i]);
}

template <bool kExact, class T>
void launch(int batch, int threads, cudaStream_t stream, const device::BatchProblem& P, const unsigned char* arena,
            std::size_t arena_stride, const double* slices, std::size_t slice_stride, const device::DeviceOptions& o, T* arrays,
            std::size_t array_stride, double* iterates, std::size_t iterate_stride, device::DeviceResult* results,
            IterationStats* rows) {
  batch_sqp_kernel<T, kExact><<<batch, threads, 0, stream>>>(P, arena, arena_stride, slices, slice_stride, o, arrays, array_stride,
                                                     iterates, iterate_stride, results, rows, batch);
}

}  // namespace knot::solver::cuda::detail

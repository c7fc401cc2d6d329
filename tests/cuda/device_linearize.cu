// The batched SQP's linearize phase (solver/device/linearize.hpp) as device code: one problem per
// thread block, instantiated for double and float, so that a CUDA build proves the phase and every
// model, cost and constraint evaluation under it compile for the GPU. Launched by no test yet (the
// driver that owns the launch is the batch solver's).
#include <cuda_runtime.h>

#include "knot/linalg/cuda/group.cuh"
#include "knot/solver/device/linearize.hpp"

namespace knot::test {

// Problem b of the batch at b times each per-problem size.
template <class T>
__global__ void device_linearize_kernel(solver::device::BatchProblem P, const unsigned char* arena,
                                        const double* slices, const T* x, const T* u, T* lq, T* ineq_value,
                                        T* ineq_jac, T* eq_value, T* eq_jac, T* cost, T* work, int* ok) {
  linalg::BlockGroup g;
  const std::size_t b = blockIdx.x;
  const int nx = P.nx, nu = P.nu, N = P.N, nw = nx + nu;
  const std::size_t lq_size = solver::device::LqView<T>::size(nx, nu, N);
  const solver::device::LqView<T> view = solver::device::LqView<T>::carve(nx, nu, N, lq + b * lq_size);
  const bool fine = solver::device::linearize(
      g, P, arena, slices + b * P.slice_size, x + b * (std::size_t(N) + 1) * nx, u + b * std::size_t(N) * nu, view,
      ineq_value + b * P.n_ineq, ineq_jac + b * std::size_t(P.n_ineq) * nw, eq_value + b * P.n_eq,
      eq_jac + b * std::size_t(P.n_eq) * nw, cost + b * (std::size_t(N) + 1),
      work + b * g.size() * solver::device::linearize_work_size<T>(P));
  if (g.rank() == 0) ok[b] = fine ? 1 : 0;
}

template __global__ void device_linearize_kernel<double>(solver::device::BatchProblem, const unsigned char*,
                                                         const double*, const double*, const double*, double*,
                                                         double*, double*, double*, double*, double*, double*, int*);
template __global__ void device_linearize_kernel<float>(solver::device::BatchProblem, const unsigned char*,
                                                        const double*, const float*, const float*, float*, float*,
                                                        float*, float*, float*, float*, float*, int*);

}  // namespace knot::test

// Batched block-tridiagonal matvec: one problem per thread block, straight from global memory.
#include "knot/linalg/bdmv.hpp"
#include "knot/linalg/cuda/group.cuh"
#include "launch.cuh"

namespace knot::linalg::cuda {

namespace {

template <class T>
__global__ void bdmv_batched_kernel(int nb, int bs, const T* A, const T* v, T* out) {
  const int p = blockIdx.x;
  BlockGroup g;
  bdmv(g, nb, bs, detail::problem(out, p, padded_size(nb, bs)), detail::problem(A, p, strips_size(nb, bs)),
       detail::problem(v, p, padded_size(nb, bs)));
}

}  // namespace

template <class T>
Status bdmv_batched(int batch, int nb, int bs, const T* A, const T* v, T* out, const Launch& launch) {
  if (batch < 0 || nb < 0 || bs < 1) return detail::invalid("bdmv_batched: need batch >= 0, nb >= 0, bs >= 1");
  const int threads = launch.threads ? launch.threads : detail::clamp_threads(detail::round_up(nb * bs, 32));
  KNOT_STATUS_TRY(detail::check_threads(threads));
  if (batch == 0 || nb == 0) return {};
  if (A == nullptr || v == nullptr || out == nullptr) return detail::invalid("bdmv_batched: null operand");
  return detail::launch_kernel(bdmv_batched_kernel<T>, batch, threads, 0, launch.stream, "bdmv_batched kernel", nb, bs,
                               A, v, out);
}

template Status bdmv_batched<float>(int, int, int, const float*, const float*, float*, const Launch&);
template Status bdmv_batched<double>(int, int, int, const double*, const double*, double*, const Launch&);

}  // namespace knot::linalg::cuda

// Batched direct block-tridiagonal solve: bdsv (factor + solve, bdsv.hpp) of one problem per
// thread block, in place on global-memory strips and vectors. Its scratch, bdsv_scratch_size(bs)
// elements (none at present: bdsv works in place), goes to shared memory or the caller's workspace
// by the rules of batched.hpp, so the launcher keeps working should bdsv need scratch again.
#include "knot/linalg/bdsv.hpp"
#include "knot/linalg/cuda/group.cuh"
#include "launch.cuh"

namespace knot::linalg::cuda {

namespace {

template <class T, int BS>
__global__ void bdsv_batched_kernel(int nb, int bs, T* strips, T* v, int* fail, T* workspace) {
  __shared__ int s_fail;
  const int p = blockIdx.x;
  BlockGroup g;
  T* scratch = workspace != nullptr ? detail::problem(workspace, p, bdsv_scratch_size(bs))
                                    : reinterpret_cast<T*>(detail::dynamic_shared());
  if (g.rank() == 0) s_fail = 0;
  g.sync();
  bdsv<true, BS>(g, nb, bs, detail::problem(strips, p, strips_size(nb, bs)), detail::problem(v, p, padded_size(nb, bs)),
                 scratch, &s_fail);
  if (fail != nullptr && g.rank() == 0) fail[p] = s_fail;
}

int bdsv_default_threads(int bs) { return detail::clamp_threads(detail::round_up(bs * bs, 32)); }

// The checks that need no device.
Status check_args(int batch, int nb, int bs, const Launch& launch, int* threads) {
  if (batch < 0 || nb < 0 || bs < 1) return detail::invalid("bdsv_batched: need batch >= 0, nb >= 0, bs >= 1");
  *threads = launch.threads ? launch.threads : bdsv_default_threads(bs);
  return detail::check_threads(*threads);
}

}  // namespace

template <class T>
Status bdsv_batched_size(int batch, int nb, int bs, const Launch& launch, LaunchSize* size) {
  int threads = 0;
  KNOT_STATUS_TRY(check_args(batch, nb, bs, launch, &threads));
  if (size == nullptr) return detail::invalid("bdsv_batched_size: null LaunchSize");
  return detail::plan_scratch(threads, batch, sizeof(T) * static_cast<std::size_t>(bdsv_scratch_size(bs)), size);
}

template <class T>
Status bdsv_batched(int batch, int nb, int bs, T* strips, T* v, int* fail, const Launch& launch) {
  int threads = 0;
  KNOT_STATUS_TRY(check_args(batch, nb, bs, launch, &threads));
  if (batch == 0) return {};
  if (strips == nullptr || v == nullptr) return detail::invalid("bdsv_batched: null operand");
  LaunchSize size;
  KNOT_STATUS_TRY(bdsv_batched_size<T>(batch, nb, bs, launch, &size));
  std::size_t shared = 0;
  T* workspace = nullptr;
  KNOT_STATUS_TRY(detail::place_scratch(size, launch, &shared, &workspace));
  return detail::with_block_size<T>(bs, launch.fixed_block_size, [&](auto fixed) {
    return detail::launch_kernel(bdsv_batched_kernel<T, decltype(fixed)::value>, size.grid, size.threads, shared,
                                 launch.stream, "bdsv_batched kernel", nb, bs, strips, v, fail, workspace);
  });
}

template Status bdsv_batched_size<float>(int, int, int, const Launch&, LaunchSize*);
template Status bdsv_batched_size<double>(int, int, int, const Launch&, LaunchSize*);
template Status bdsv_batched<float>(int, int, int, float*, float*, int*, const Launch&);
template Status bdsv_batched<double>(int, int, int, double*, double*, int*, const Launch&);

}  // namespace knot::linalg::cuda

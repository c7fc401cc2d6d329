// Batched strip movers: dense blocks <-> [L|D|R] strips, one problem per thread block, each warp
// moving whole blocks with the warp forms of store_block / load_block (group.cuh).
#include "knot/linalg/bdmv.hpp"
#include "knot/linalg/cuda/group.cuh"
#include "launch.cuh"

namespace knot::linalg::cuda {

namespace {

// Block (br, slot) of problem p goes to/from warp (br*3 + slot) % warps. Threads: a multiple of 32.
template <bool STORE, bool TRANSPOSE, class T>
__global__ void strips_batched_kernel(int nb, int bs, const T* in, T* out, T scale) {
  const int p = blockIdx.x;
  const long long block_elems = static_cast<long long>(bs) * bs;
  const long long strips = strips_size(nb, bs);
  const long long blocks = 3LL * nb * block_elems;
  const int warps = flat_block_size() / 32;
  for (int b = flat_thread_index() / 32; b < 3 * nb; b += warps) {
    const int br = b / 3;
    const auto slot = static_cast<BandSlot>(b % 3);
    if constexpr (STORE) {
      const T* src = detail::problem(in, p, blocks) + b * block_elems;
      T* strip = detail::problem(out, p, strips) + strip_offset(br, bs);
      warp::store_block<TRANSPOSE>(bs, strip, slot, src, scale);
    } else {
      const T* strip = detail::problem(in, p, strips) + strip_offset(br, bs);
      T* dst = detail::problem(out, p, blocks) + b * block_elems;
      warp::load_block<TRANSPOSE>(bs, dst, strip, slot, scale);
    }
  }
}

template <bool STORE, class T>
Status strips_batched(int batch, int nb, int bs, const T* in, T* out, bool transpose, T scale, const Launch& launch) {
  const int threads = launch.threads ? launch.threads : 128;
  KNOT_STATUS_TRY(detail::check_threads(threads));
  if (threads % 32 != 0) return detail::invalid("strip movers: Launch::threads must be a multiple of 32");
  if (batch < 0 || nb < 0 || bs < 1) return detail::invalid("strip movers: need batch >= 0, nb >= 0, bs >= 1");
  if (batch == 0 || nb == 0) return {};
  if (in == nullptr || out == nullptr) return detail::invalid("strip movers: null operand");
  const char* what = STORE ? "store_strips_batched kernel" : "load_strips_batched kernel";
  return transpose ? detail::launch_kernel(strips_batched_kernel<STORE, true, T>, batch, threads, 0, launch.stream, what,
                                           nb, bs, in, out, scale)
                   : detail::launch_kernel(strips_batched_kernel<STORE, false, T>, batch, threads, 0, launch.stream,
                                           what, nb, bs, in, out, scale);
}

}  // namespace

template <class T>
Status store_strips_batched(int batch, int nb, int bs, const T* blocks, T* strips, bool transpose, T scale,
                            const Launch& launch) {
  return strips_batched<true>(batch, nb, bs, blocks, strips, transpose, scale, launch);
}

template <class T>
Status load_strips_batched(int batch, int nb, int bs, const T* strips, T* blocks, bool transpose, T scale,
                           const Launch& launch) {
  return strips_batched<false>(batch, nb, bs, strips, blocks, transpose, scale, launch);
}

template Status store_strips_batched<float>(int, int, int, const float*, float*, bool, float, const Launch&);
template Status store_strips_batched<double>(int, int, int, const double*, double*, bool, double, const Launch&);
template Status load_strips_batched<float>(int, int, int, const float*, float*, bool, float, const Launch&);
template Status load_strips_batched<double>(int, int, int, const double*, double*, bool, double, const Launch&);

}  // namespace knot::linalg::cuda

// Batched preconditioned conjugate gradient: per thread block, build P^-1 from S (precond.hpp)
// into the caller's Pinv strips, then run pcg (pcg.hpp) on global-memory S, P^-1, gamma and x.
// The work vectors and reduction buffer (pcg_scratch_size) live in shared memory when they fit.
#include "knot/linalg/cuda/group.cuh"
#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"
#include "launch.cuh"

namespace knot::linalg::cuda {

namespace {

// Scratch elements per problem: the preconditioner's, then pcg's, one after the other in time.
long long pcg_batched_scratch(int nb, int bs, Precond precond) {
  const long long pcg_part = pcg_scratch_size(nb, bs);
  const long long pre_part = precond == Precond::None ? 0 : precond_scratch_size(bs);
  return pcg_part > pre_part ? pcg_part : pre_part;
}

// At most 256 threads, two blocks per SM: caps registers at 128 (without the bound the fused
// preconditioner + pcg body takes about 170, which allows one 256-thread block per SM).
template <class T, int BS>
__global__ void __launch_bounds__(256, 2)
    pcg_batched_kernel(int nb, int bs, const T* S, T* Pinv, const T* gamma, T* x, Precond precond, PcgOptions<T> options,
                       int* iterations, int* outcome, T* workspace, long long scratch_elems) {
  const int p = blockIdx.x;
  BlockGroup g;
  T* scratch = workspace != nullptr ? detail::problem(workspace, p, scratch_elems)
                                    : reinterpret_cast<T*>(detail::dynamic_shared());
  const T* s = detail::problem(S, p, strips_size(nb, bs));
  T* pinv = precond == Precond::None ? nullptr : detail::problem(Pinv, p, strips_size(nb, bs));
  // Every member gets the same return value, so the early exit below is block-uniform.
  int precond_fail = 0;
  if (precond == Precond::BlockJacobi) precond_fail = precond_block_jacobi<BS>(g, nb, bs, s, pinv, scratch);
  if (precond == Precond::Stair) precond_fail = precond_stair<BS>(g, nb, bs, s, pinv, scratch);
  if (precond_fail != 0) {
    if (g.rank() == 0) {
      if (iterations != nullptr) iterations[p] = 0;
      if (outcome != nullptr) outcome[p] = static_cast<int>(PcgOutcome::PreconditionerFailed);
    }
    return;
  }
  const PcgResult r = pcg<BS>(g, nb, bs, s, static_cast<const T*>(pinv), detail::problem(gamma, p, padded_size(nb, bs)),
                              detail::problem(x, p, padded_size(nb, bs)), scratch, options);
  if (g.rank() == 0) {
    if (iterations != nullptr) iterations[p] = r.iterations;
    if (outcome != nullptr)
      outcome[p] = static_cast<int>(r.converged ? PcgOutcome::Converged : PcgOutcome::NotConverged);
  }
}

int pcg_default_threads(int nb, int bs) { return detail::clamp_threads(detail::round_up(nb * bs, 32)); }

// The checks that need no device.
Status check_args(int batch, int nb, int bs, Precond precond, const Launch& launch, int* threads) {
  if (batch < 0 || nb < 0 || bs < 1) return detail::invalid("pcg_batched: need batch >= 0, nb >= 0, bs >= 1");
  if (precond != Precond::None && precond != Precond::BlockJacobi && precond != Precond::Stair)
    return detail::invalid("pcg_batched: unknown Precond");
  *threads = launch.threads ? launch.threads : pcg_default_threads(nb, bs);
  return detail::check_threads(*threads);
}

}  // namespace

template <class T>
Status pcg_batched_size(int batch, int nb, int bs, Precond precond, const Launch& launch, LaunchSize* size) {
  int threads = 0;
  KNOT_STATUS_TRY(check_args(batch, nb, bs, precond, launch, &threads));
  if (size == nullptr) return detail::invalid("pcg_batched_size: null LaunchSize");
  return detail::plan_scratch(threads, batch, sizeof(T) * static_cast<std::size_t>(pcg_batched_scratch(nb, bs, precond)),
                              size);
}

template <class T>
Status pcg_batched(int batch, int nb, int bs, const T* S, T* Pinv, const T* gamma, T* x, Precond precond,
                   const PcgOptions<T>& options, int* iterations, int* outcome, const Launch& launch) {
  int threads = 0;
  KNOT_STATUS_TRY(check_args(batch, nb, bs, precond, launch, &threads));
  if (options.max_iters < 0) return detail::invalid("pcg_batched: PcgOptions::max_iters must be >= 0");
  if (batch == 0) return {};
  if (S == nullptr || gamma == nullptr || x == nullptr) return detail::invalid("pcg_batched: null operand");
  if (precond != Precond::None && Pinv == nullptr) return detail::invalid("pcg_batched: null Pinv with a preconditioner");
  LaunchSize size;
  KNOT_STATUS_TRY(pcg_batched_size<T>(batch, nb, bs, precond, launch, &size));
  std::size_t shared = 0;
  T* workspace = nullptr;
  KNOT_STATUS_TRY(detail::place_scratch(size, launch, &shared, &workspace));
  return detail::with_block_size<T>(bs, launch.fixed_block_size, [&](auto fixed) {
    return detail::launch_kernel(pcg_batched_kernel<T, decltype(fixed)::value>, size.grid, size.threads, shared,
                                 launch.stream, "pcg_batched kernel", nb, bs, S, Pinv, gamma, x, precond, options,
                                 iterations, outcome, workspace, pcg_batched_scratch(nb, bs, precond));
  });
}

template Status pcg_batched_size<float>(int, int, int, Precond, const Launch&, LaunchSize*);
template Status pcg_batched_size<double>(int, int, int, Precond, const Launch&, LaunchSize*);
template Status pcg_batched<float>(int, int, int, const float*, float*, const float*, float*, Precond,
                                   const PcgOptions<float>&, int*, int*, const Launch&);
template Status pcg_batched<double>(int, int, int, const double*, double*, const double*, double*, Precond,
                                    const PcgOptions<double>&, int*, int*, const Launch&);

}  // namespace knot::linalg::cuda

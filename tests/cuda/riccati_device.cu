// The device Riccati step (knot/solver/device/riccati.hpp) in a kernel: riccati_solve (or, with
// `warp`, riccati_step's warp recursion where the stage fits) and riccati_resolve on a BlockGroup,
// for double and float, one problem per block. Building this file
// is the proof that the header is device code; test_gpu_riccati runs it where a GPU is present.
#include <cuda_runtime.h>

#include "knot/linalg/cuda/group.cuh"
#include "knot/solver/device/riccati.hpp"
#include "riccati_device.hpp"

namespace knot::test {
namespace {

using solver::device::DeviceLqResult;
using solver::device::LqView;
using solver::device::StepView;

// Problem blockIdx.x: its LQ, step and scratch at that index times their sizes. `resolve_data` null:
// riccati_solve only.
template <class T>
__global__ void riccati_kernel(int nx, int nu, int N, bool warp, T* data, T* resolve_data, T* step, T* scratch,
                               DeviceLqResult* results) {
  linalg::BlockGroup g;
  const std::size_t p = blockIdx.x;
  const LqView<T> lq = LqView<T>::carve(nx, nu, N, data + p * LqView<T>::size(nx, nu, N));
  const StepView<T> out = StepView<T>::carve(nx, nu, N, step + p * StepView<T>::size(nx, nu, N));
  T* s = scratch + p * solver::device::riccati_scratch_size<T>(nx, nu, N);
  DeviceLqResult r = warp ? solver::device::riccati_step(g, lq, out, s, true) : solver::device::riccati_solve(g, lq, out, s);
  if (resolve_data != nullptr) {
    const LqView<T> lq2 = LqView<T>::carve(nx, nu, N, resolve_data + p * LqView<T>::size(nx, nu, N));
    r = solver::device::riccati_resolve(g, lq2, out, s);
  }
  if (g.rank() == 0) results[p] = r;
}

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  ~DeviceBuffer() { cudaFree(ptr); }
};

}  // namespace

template <class T>
std::string riccati_on_device(int nx, int nu, int N, int batch, int threads, bool warp, const std::vector<T>& data,
                              const std::vector<T>& resolve_data, std::vector<T>& step,
                              std::vector<DeviceLqResult>& results) {
  const std::size_t per = LqView<T>::size(nx, nu, N);
  if (batch < 1 || threads < 1 || data.size() != per * batch ||
      (!resolve_data.empty() && resolve_data.size() != data.size()))
    return "riccati_on_device: sizes do not match";
  step.assign(StepView<T>::size(nx, nu, N) * batch, T(0));
  results.assign(batch, DeviceLqResult{});
  DeviceBuffer<T> d_data, d_resolve, d_step, d_scratch;
  DeviceBuffer<DeviceLqResult> d_results;
  cudaError_t e = cudaSuccess;
  const auto alloc = [&](auto& buf, std::size_t n) {
    if (e == cudaSuccess) e = cudaMalloc(&buf.ptr, n * sizeof(*buf.ptr));
  };
  alloc(d_data, data.size());
  if (!resolve_data.empty()) alloc(d_resolve, resolve_data.size());
  alloc(d_step, step.size());
  alloc(d_scratch, solver::device::riccati_scratch_size<T>(nx, nu, N) * batch);
  alloc(d_results, results.size());
  if (e == cudaSuccess) e = cudaMemcpy(d_data.ptr, data.data(), data.size() * sizeof(T), cudaMemcpyHostToDevice);
  if (e == cudaSuccess && !resolve_data.empty())
    e = cudaMemcpy(d_resolve.ptr, resolve_data.data(), resolve_data.size() * sizeof(T), cudaMemcpyHostToDevice);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  riccati_kernel<T><<<batch, threads>>>(nx, nu, N, warp, d_data.ptr, d_resolve.ptr, d_step.ptr, d_scratch.ptr, d_results.ptr);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(step.data(), d_step.ptr, step.size() * sizeof(T), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess)
    e = cudaMemcpy(results.data(), d_results.ptr, results.size() * sizeof(DeviceLqResult), cudaMemcpyDeviceToHost);
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

template std::string riccati_on_device<double>(int, int, int, int, int, bool, const std::vector<double>&,
                                               const std::vector<double>&, std::vector<double>&,
                                               std::vector<DeviceLqResult>&);
template std::string riccati_on_device<float>(int, int, int, int, int, bool, const std::vector<float>&,
                                              const std::vector<float>&, std::vector<float>&,
                                              std::vector<DeviceLqResult>&);

}  // namespace knot::test

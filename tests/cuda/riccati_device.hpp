// Launcher of the device Riccati step (riccati_device.cu), plain C++ so that the host test built by
// the C++ compiler calls it.
#pragma once

#include <string>
#include <vector>

#include "knot/solver/device/views.hpp"

namespace knot::test {

// Solves `batch` LQs of one size on the GPU, one problem per block of `threads` threads (BlockGroup):
// riccati_solve (with `warp`: riccati_step's warp recursion, riccati_warp.cuh, where it fits) on `data` (batch LqViews back to back, LqView<T>::size(nx, nu, N) scalars each), then,
// when `resolve_data` is not empty (the same layout: the same matrices, new vectors), riccati_resolve
// on it with the same scratch. `step` gets the batch's StepViews back to back, `results` what the
// last call on each problem returned. Returns "" or the CUDA error that stopped it.
template <class T>
std::string riccati_on_device(int nx, int nu, int N, int batch, int threads, bool warp, const std::vector<T>& data,
                              const std::vector<T>& resolve_data, std::vector<T>& step,
                              std::vector<solver::device::DeviceLqResult>& results);

extern template std::string riccati_on_device<double>(int, int, int, int, int, bool, const std::vector<double>&,
                                                      const std::vector<double>&, std::vector<double>&,
                                                      std::vector<solver::device::DeviceLqResult>&);
extern template std::string riccati_on_device<float>(int, int, int, int, int, bool, const std::vector<float>&,
                                                     const std::vector<float>&, std::vector<float>&,
                                                     std::vector<solver::device::DeviceLqResult>&);

}  // namespace knot::test

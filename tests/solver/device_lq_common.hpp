// The device LQ steps' test fixture: one problem in the device layout (views.hpp), for
// test_device_riccati.cpp and test_device_schur.cpp.
#pragma once

#include <limits>
#include <vector>

#include "knot/solver/device/riccati.hpp"
#include "test_lq_common.hpp"

namespace knot::test {

// One problem in the device layout: the LqView's arrays, the step and the scratch, each one block
// of T; the step and the scratch start as NaN so that an element read before it is written shows.
template <class T>
struct DeviceLq {
  int nx, nu, N;
  std::vector<T> data, step, scratch;
  solver::device::LqView<T> lq;
  solver::device::StepView<T> out;

  // scratch: scalars of the solver's scratch (0: riccati_scratch_size).
  explicit DeviceLq(const LqData& d, std::size_t scratch_size = 0)
      : nx(d.nx),
        nu(d.nu),
        N(d.N),
        data(solver::device::LqView<T>::size(d.nx, d.nu, d.N)),
        step(solver::device::StepView<T>::size(d.nx, d.nu, d.N), std::numeric_limits<T>::quiet_NaN()),
        scratch(scratch_size ? scratch_size : solver::device::riccati_scratch_size<T>(d.nx, d.nu, d.N),
                std::numeric_limits<T>::quiet_NaN()) {
    lq = solver::device::LqView<T>::carve(nx, nu, N, data.data());
    out = solver::device::StepView<T>::carve(nx, nu, N, step.data());
    load(d);
  }
  DeviceLq(const DeviceLq&) = delete;
  DeviceLq& operator=(const DeviceLq&) = delete;

  // The data of d (its sizes) into the view, converted to T.
  void load(const LqData& d) {
    const auto put_all = [](const std::vector<double>& src, T* dst) {
      for (std::size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<T>(src[i]);
    };
    put_all(d.A, lq.A);
    put_all(d.B, lq.B);
    put_all(d.c, lq.c);
    put_all(d.Q, lq.Q);
    put_all(d.R, lq.R);
    put_all(d.S, lq.S);
    put_all(d.q, lq.q);
    put_all(d.r, lq.r);
    put_all(d.x_init, lq.x_init);
  }

  LqSolution solution() const {
    LqSolution s(nx, nu, N);
    for (std::size_t i = 0; i < s.x.size(); ++i) s.x[i] = static_cast<double>(out.x[i]);
    for (std::size_t i = 0; i < s.u.size(); ++i) s.u[i] = static_cast<double>(out.u[i]);
    for (std::size_t i = 0; i < s.lambda.size(); ++i) s.lambda[i] = static_cast<double>(out.lambda[i]);
    return s;
  }
};

}  // namespace knot::test

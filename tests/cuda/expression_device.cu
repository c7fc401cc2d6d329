// The expression tape evaluated in device code: evaluate<S>() of expression.hpp, the function the
// CPU models run, called from a kernel with the tape copied into device memory as is (ExprTape is a
// flat, non-owning view: instruction and output arrays plus sizes).
#include <cuda_runtime.h>

#include "expression_device.hpp"

namespace knot::test {
namespace {

using problems::Dual, problems::ExprTape, problems::HyperDual, problems::Tangent;
constexpr int W = kDeviceExprWidth, kPacked = kDeviceExprPacked;
constexpr int kMaxStates = W;  // nx <= nx + nu = W

__global__ void evaluate_kernel(ExprTape tape, int nx, int nu, int points, const double* w, double* f, double* J,
                                double* H, double* JL) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= points) return;
  const double* wp = w + p * (nx + nu);
  double fp[kMaxStates];
  problems::evaluate(tape, wp, wp + nx, fp);
  for (int i = 0; i < nx; ++i) f[p * nx + i] = fp[i];

  problems::ExpressionDynamics model;  // the lanes' Jacobian, as dynamics_jacobian gives it
  model.tape = tape;
  model.n_states = nx;
  model.n_controls = nu;
  double* jl = JL + p * nx * (nx + nu);
  model.jacobian(wp, wp + nx, fp, jl, jl + nx * nx);

  using D = Dual<double, Tangent<double, W>>;
  D xd[kMaxStates], ud[W], fd[kMaxStates];
  for (int j = 0; j < nx + nu; ++j) {
    D& in = j < nx ? xd[j] : ud[j - nx];
    in = D(wp[j]);
    in.d.e[j] = 1.0;
  }
  problems::evaluate(tape, xd, ud, fd);
  for (int j = 0; j < nx + nu; ++j)
    for (int i = 0; i < nx; ++i) J[p * nx * (nx + nu) + j * nx + i] = fd[i].d.e[j];

  using HD = HyperDual<W>;
  HD xh[kMaxStates], uh[W], fh[kMaxStates];
  for (int j = 0; j < nx + nu; ++j) {
    HD& in = j < nx ? xh[j] : uh[j - nx];
    in = HD(wp[j]);
    in.g[j] = 1.0;
  }
  problems::evaluate(tape, xh, uh, fh);
  for (int i = 0; i < nx; ++i)
    for (int q = 0; q < kPacked; ++q) H[(p * nx + i) * kPacked + q] = fh[i].h[q];
}

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  ~DeviceBuffer() { cudaFree(ptr); }
};

}  // namespace

std::string evaluate_tape_on_device(const ExprTape& tape, int nx, int nu, const std::vector<double>& w,
                                    DeviceExprResult& out) {
  if (nx + nu != W || nx < 1) return "the kernel is built for nx + nu = " + std::to_string(W);
  const int points = int(w.size()) / (nx + nu);
  DeviceBuffer<problems::ExprInstr> code;
  DeviceBuffer<std::uint8_t> outputs;
  DeviceBuffer<std::int32_t> output_input, lane_input, input_lane, nonzero;
  DeviceBuffer<double> dw, df, dJ, dH, dJL;
  out.f.assign(std::size_t(points) * nx, 0.0);
  out.J.assign(std::size_t(points) * nx * (nx + nu), 0.0);
  out.H.assign(std::size_t(points) * nx * kPacked, 0.0);
  out.JL.assign(out.J.size(), 0.0);
  cudaError_t e = cudaSuccess;
  const auto alloc = [&](auto& buf, std::size_t n) {
    if (e == cudaSuccess) e = cudaMalloc(&buf.ptr, (n > 0 ? n : 1) * sizeof(*buf.ptr));
  };
  alloc(code, std::size_t(tape.size));
  alloc(outputs, std::size_t(tape.n_outputs));
  alloc(dw, w.size());
  alloc(df, out.f.size());
  alloc(dJ, out.J.size());
  alloc(dH, out.H.size());
  alloc(dJL, out.JL.size());
  alloc(output_input, std::size_t(tape.n_outputs));
  alloc(lane_input, std::size_t(tape.lanes));
  alloc(input_lane, std::size_t(nx + nu));
  alloc(nonzero, std::size_t(3 * tape.nonzeros));
  const auto up = [&](auto* dst, const auto* src, std::size_t n) {
    if (e == cudaSuccess && n > 0) e = cudaMemcpy(dst, src, n * sizeof(*src), cudaMemcpyHostToDevice);
  };
  up(code.ptr, tape.code, std::size_t(tape.size));
  up(outputs.ptr, tape.outputs, std::size_t(tape.n_outputs));
  up(output_input.ptr, tape.output_input, std::size_t(tape.n_outputs));
  up(lane_input.ptr, tape.lane_input, std::size_t(tape.lanes));
  up(input_lane.ptr, tape.input_lane, std::size_t(nx + nu));
  up(nonzero.ptr, tape.nonzero, std::size_t(3 * tape.nonzeros));
  up(dw.ptr, w.data(), w.size());
  if (e != cudaSuccess) return cudaGetErrorString(e);
  ExprTape device_tape = tape;  // the same view, pointing into device memory
  device_tape.code = code.ptr;
  device_tape.outputs = outputs.ptr;
  device_tape.output_input = output_input.ptr;
  device_tape.lane_input = lane_input.ptr;
  device_tape.input_lane = input_lane.ptr;
  device_tape.nonzero = nonzero.ptr;
  const int threads = 64;
  evaluate_kernel<<<(points + threads - 1) / threads, threads>>>(device_tape, nx, nu, points, dw.ptr, df.ptr, dJ.ptr,
                                                                 dH.ptr, dJL.ptr);
  e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  const auto down = [&](std::vector<double>& dst, const double* src) {
    if (e == cudaSuccess && !dst.empty())
      e = cudaMemcpy(dst.data(), src, dst.size() * sizeof(double), cudaMemcpyDeviceToHost);
  };
  down(out.f, df.ptr);
  down(out.J, dJ.ptr);
  down(out.H, dH.ptr);
  down(out.JL, dJL.ptr);
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace knot::test

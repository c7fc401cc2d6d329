// The device path's calling convention: one problem's arrays as raw pointers (docs/batch.md).
//
// The per-knot phase functions of the batched SQP (device/*.hpp) are KNOT_HD templates on an
// execution group and a scalar T (double, or float on the GPU). They read and write through these
// views, never through std containers, so the same function runs on a SerialGroup, a ThreadedGroup
// and a CUDA block. The memory behind a view belongs to its executor (a host arena, or one
// cudaMalloc per batch, problem p at p times the per-problem size).
//
// Layouts are those of LqData and LqSolution (lq.hpp): every block column-major, block k of a
// family right after block k-1; Q_k and R_k symmetric with both triangles stored.
#pragma once

#include <cstddef>

#include "knot/linalg/config.hpp"

namespace knot::solver::device {

// The LQ subproblem of lq.hpp (the same equations and multiplier convention).
template <class T>
struct LqView {
  int nx = 0, nu = 0, N = 0;
  T* A = nullptr;       // N blocks nx x nx
  T* B = nullptr;       // N blocks nx x nu
  T* c = nullptr;       // N vectors nx
  T* Q = nullptr;       // N+1 blocks nx x nx
  T* R = nullptr;       // N blocks nu x nu
  T* S = nullptr;       // N blocks nu x nx
  T* q = nullptr;       // N+1 vectors nx
  T* r = nullptr;       // N vectors nu
  T* x_init = nullptr;  // nx

  KNOT_HD T* A_k(int k) const { return A + std::size_t(k) * nx * nx; }
  KNOT_HD T* B_k(int k) const { return B + std::size_t(k) * nx * nu; }
  KNOT_HD T* c_k(int k) const { return c + std::size_t(k) * nx; }
  KNOT_HD T* Q_k(int k) const { return Q + std::size_t(k) * nx * nx; }
  KNOT_HD T* R_k(int k) const { return R + std::size_t(k) * nu * nu; }
  KNOT_HD T* S_k(int k) const { return S + std::size_t(k) * nu * nx; }
  KNOT_HD T* q_k(int k) const { return q + std::size_t(k) * nx; }
  KNOT_HD T* r_k(int k) const { return r + std::size_t(k) * nu; }

  // Scalars the view's arrays need, in the order above: the size of the block a caller carves.
  KNOT_HD static constexpr std::size_t size(int nx, int nu, int N) {
    const std::size_t n = std::size_t(N), x = std::size_t(nx), u = std::size_t(nu);
    return n * x * x + n * x * u + n * x + (n + 1) * x * x + n * u * u + n * u * x + (n + 1) * x + n * u + x;
  }
  // Points every array into `base` (size(nx, nu, N) scalars), in the order above.
  KNOT_HD static LqView carve(int nx, int nu, int N, T* base) {
    LqView v;
    v.nx = nx;
    v.nu = nu;
    v.N = N;
    const std::size_t n = std::size_t(N), x = std::size_t(nx), u = std::size_t(nu);
    v.A = base;
    v.B = v.A + n * x * x;
    v.c = v.B + n * x * u;
    v.Q = v.c + n * x;
    v.R = v.Q + (n + 1) * x * x;
    v.S = v.R + n * u * u;
    v.q = v.S + n * u * x;
    v.r = v.q + (n + 1) * x;
    v.x_init = v.r + n * u;
    return v;
  }
};

// The LQ step (LqSolution's layout): N+1 states, N controls, N+1 costates.
template <class T>
struct StepView {
  int nx = 0, nu = 0, N = 0;
  T* x = nullptr;
  T* u = nullptr;
  T* lambda = nullptr;

  KNOT_HD T* x_k(int k) const { return x + std::size_t(k) * nx; }
  KNOT_HD T* u_k(int k) const { return u + std::size_t(k) * nu; }
  KNOT_HD T* lambda_k(int k) const { return lambda + std::size_t(k) * nx; }

  KNOT_HD static constexpr std::size_t size(int nx, int nu, int N) {
    return (std::size_t(N) + 1) * nx * 2 + std::size_t(N) * nu;
  }
  KNOT_HD static StepView carve(int nx, int nu, int N, T* base) {
    StepView v;
    v.nx = nx;
    v.nu = nu;
    v.N = N;
    v.x = base;
    v.u = v.x + (std::size_t(N) + 1) * nx;
    v.lambda = v.u + std::size_t(N) * nu;
    return v;
  }
};

// What a device LQ solve reports (the device counterpart of LqStatus's first three values).
enum class DeviceLqStatus : int {
  Solved = 0,
  NotPositiveDefinite = 1,  // the stage `failed_stage` of the result
  NonFinite = 2,
  MaxIterations = 3,  // the Schur step's refinement stalled above its tolerance (schur.hpp)
};

struct DeviceLqResult {
  DeviceLqStatus status = DeviceLqStatus::Solved;
  int failed_stage = -1;
};

}  // namespace knot::solver::device

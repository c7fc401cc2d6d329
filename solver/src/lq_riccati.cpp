// Riccati backend: backward recursion on the cost-to-go V_k(x) = 1/2 x'P_k x + p_k'x, forward rollout.
//
// Backward, from P_N = Q_N, p_N = q_N (P = P_{k+1}, p = p_{k+1}):
//   T   = A'P (A' copied once so that the product runs down columns),   W = P B
//   Hxx = Q + T A,   Hxu = S' + T B,   Huu = R + B'W
//   pc  = P c + p,   hx = q + A' pc,   hu = r + B' pc
//   Huu = L L'                                  (Cholesky; a failing pivot is NotPositiveDefinite)
//   Y   = Hxu L^-T,  kt = L^-1 hu
//   P_k = Hxx - Y Y',   p_k = hx - Y kt      (the lower triangle by gemm, then mirrored: P_k is exactly
//                                             symmetric)
// Forward, from x_0 = x_init:
//   u_k = -L^-T (Y' x_k + kt),   x_{k+1} = A x_k + B u_k + c,   lambda_k = P_k x_k + p_k
// u_k minimizes the stage cost plus V_{k+1}(A x_k + B u + c): its gradient R u + S x + r +
// B'(P (A x + B u + c) + p) = Huu u + Hxu' x + hu vanishes. lambda_k = grad V_k(x_k) is the costate.
#include <algorithm>
#include <cstring>
#include <utility>

#include "knot/linalg/dense/gemm.hpp"
#include "knot/linalg/dense/gemv.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/syrk.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/dense/trsv.hpp"
#include "lq_internal.hpp"

namespace knot::solver::detail {
namespace {

using linalg::Side;
using linalg::Trans;
using linalg::Uplo;

struct RiccatiWork {
  double* P;    // N+1 blocks nx x nx (full symmetric)
  double* p;    // N+1 vectors nx
  double* L;    // N blocks nu x nu (Cholesky factor of Huu, lower)
  double* Y;    // N blocks nx x nu
  double* kt;   // N vectors nu
  double* At;   // nx x nx scratch
  double* T;    // nx x nx scratch
  double* W;    // nx x nu scratch
  double* pc;   // nx scratch
};

// C = alpha A op(B) + beta C (A not transposed). Blocks of more than 16 rows are cut into equal row
// panels of at most 16: linalg's serial tile then holds a whole panel column in registers (1.5x at
// nx = 28). Lower: only the panels' columns that reach the lower triangle are formed (C symmetric,
// mirrored afterwards), which skips a quarter of the product at two panels.
template <Trans TB, int M, int N, int K, bool Lower = false>
void gemm_rows(int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb, double beta,
               double* C, int ldc) {
  Serial g;
  if constexpr (M != kDynamic && M > 16) {
    constexpr int P = (M + 15) / 16, H = (M + P - 1) / P;
    [&]<int... Is>(std::integer_sequence<int, Is...>) {
      (linalg::gemm<Trans::No, TB, (Is + 1 < P ? H : M - (P - 1) * H), (Lower ? std::min((Is + 1) * H, M) : N), K>(
           g, Is + 1 < P ? H : M - (P - 1) * H, Lower ? std::min((Is + 1) * H, n) : n, k, alpha, A + Is * H, lda, B, ldb,
           beta, C + Is * H, ldc),
       ...);
    }(std::make_integer_sequence<int, P>{});
  } else {
    linalg::gemm<Trans::No, TB, M, N, K>(g, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

// Backward recursion; returns -1 on success, else the failing stage.
template <int NX, int NU>
int riccati_backward(int nx_rt, int nu_rt, int N, const LqData& d, const RiccatiWork& w) {
  const int nx = linalg::extent<NX>(nx_rt), nu = linalg::extent<NU>(nu_rt);
  Serial g;
  const std::size_t sxx = static_cast<std::size_t>(nx) * nx, sxu = static_cast<std::size_t>(nx) * nu;
  std::memcpy(w.P + N * sxx, d.Q_k(N), sxx * sizeof(double));
  std::memcpy(w.p + static_cast<std::size_t>(N) * nx, d.q_k(N), nx * sizeof(double));
  for (int k = N - 1; k >= 0; --k) {
    const double* A = d.A_k(k);
    const double* B = d.B_k(k);
    const double* P = w.P + (k + 1) * sxx;
    const double* p = w.p + static_cast<std::size_t>(k + 1) * nx;
    double* Pk = w.P + k * sxx;
    double* pk = w.p + static_cast<std::size_t>(k) * nx;
    double* L = w.L + static_cast<std::size_t>(k) * nu * nu;
    double* Y = w.Y + k * sxu;
    double* kt = w.kt + static_cast<std::size_t>(k) * nu;

    transpose_block<NX, NX>(nx, nx, A, nx, w.At, nx);
    gemm_rows<Trans::No, NX, NX, NX>(nx, nx, nx, 1.0, w.At, nx, P, nx, 0.0, w.T, nx);
    gemm_rows<Trans::No, NX, NU, NX>(nx, nu, nx, 1.0, P, nx, B, nx, 0.0, w.W, nx);
    std::memcpy(Pk, d.Q_k(k), sxx * sizeof(double));
    gemm_rows<Trans::No, NX, NX, NX, true>(nx, nx, nx, 1.0, w.T, nx, A, nx, 1.0, Pk, nx);
    transpose_block<NU, NX>(nu, nx, d.S_k(k), nu, Y, nx);
    gemm_rows<Trans::No, NX, NU, NX>(nx, nu, nx, 1.0, w.T, nx, B, nx, 1.0, Y, nx);
    std::memcpy(L, d.R_k(k), static_cast<std::size_t>(nu) * nu * sizeof(double));
    linalg::gemm<Trans::Yes, Trans::No, NU, NU, NX>(g, nu, nu, nx, 1.0, B, nx, w.W, nx, 1.0, L, nu);

    std::memcpy(w.pc, p, nx * sizeof(double));
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, P, nx, d.c_k(k), 1.0, w.pc);
    std::memcpy(pk, d.q_k(k), nx * sizeof(double));
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, w.At, nx, w.pc, 1.0, pk);
    std::memcpy(kt, d.r_k(k), nu * sizeof(double));
    linalg::gemv<Trans::Yes, NX, NU>(g, nx, nu, 1.0, B, nx, w.pc, 1.0, kt);

    if (linalg::potrf<NU>(g, nu, L, nu) != 0) return k;
    linalg::trsm<Side::Right, Uplo::Lower, Trans::Yes, NX, NU>(g, nx, nu, 1.0, L, nu, Y, nx);
    gemm_rows<Trans::Yes, NX, NX, NU, true>(nx, nx, nu, -1.0, Y, nx, Y, nx, 1.0, Pk, nx);
    mirror_lower<NX>(nx, Pk, nx);
    linalg::trsv<Uplo::Lower, Trans::No, NU>(g, nu, L, nu, kt);
    linalg::gemv<Trans::No, NX, NU>(g, nx, nu, -1.0, Y, nx, kt, 1.0, pk);
  }
  return -1;
}

// The vector half of the backward recursion, with P_{k+1}, L_k, Y_k of the last riccati_backward
// (the matrices are unchanged; only c, q, r differ).
template <int NX, int NU>
void riccati_backward_vectors(int nx_rt, int nu_rt, int N, const LqData& d, const RiccatiWork& w) {
  const int nx = linalg::extent<NX>(nx_rt), nu = linalg::extent<NU>(nu_rt);
  Serial g;
  const std::size_t sxx = static_cast<std::size_t>(nx) * nx, sxu = static_cast<std::size_t>(nx) * nu;
  std::memcpy(w.p + static_cast<std::size_t>(N) * nx, d.q_k(N), nx * sizeof(double));
  for (int k = N - 1; k >= 0; --k) {
    const double* p = w.p + static_cast<std::size_t>(k + 1) * nx;
    double* pk = w.p + static_cast<std::size_t>(k) * nx;
    double* kt = w.kt + static_cast<std::size_t>(k) * nu;
    std::memcpy(w.pc, p, nx * sizeof(double));
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, w.P + (k + 1) * sxx, nx, d.c_k(k), 1.0, w.pc);
    std::memcpy(pk, d.q_k(k), nx * sizeof(double));
    linalg::gemv<Trans::Yes, NX, NX>(g, nx, nx, 1.0, d.A_k(k), nx, w.pc, 1.0, pk);
    std::memcpy(kt, d.r_k(k), nu * sizeof(double));
    linalg::gemv<Trans::Yes, NX, NU>(g, nx, nu, 1.0, d.B_k(k), nx, w.pc, 1.0, kt);
    linalg::trsv<Uplo::Lower, Trans::No, NU>(g, nu, w.L + static_cast<std::size_t>(k) * nu * nu, nu, kt);
    linalg::gemv<Trans::No, NX, NU>(g, nx, nu, -1.0, w.Y + k * sxu, nx, kt, 1.0, pk);
  }
}

template <int NX, int NU>
void riccati_forward(int nx_rt, int nu_rt, int N, const LqData& d, const RiccatiWork& w, LqSolution& s) {
  const int nx = linalg::extent<NX>(nx_rt), nu = linalg::extent<NU>(nu_rt);
  Serial g;
  const std::size_t sxx = static_cast<std::size_t>(nx) * nx, sxu = static_cast<std::size_t>(nx) * nu;
  std::memcpy(s.x_k(0), d.x_init.data(), nx * sizeof(double));
  for (int k = 0; k < N; ++k) {
    const double* x = s.x_k(k);
    double* u = s.u_k(k);
    double* xn = s.x_k(k + 1);
    const double* L = w.L + static_cast<std::size_t>(k) * nu * nu;
    std::memcpy(u, w.kt + static_cast<std::size_t>(k) * nu, nu * sizeof(double));
    linalg::gemv<Trans::Yes, NX, NU>(g, nx, nu, 1.0, w.Y + k * sxu, nx, x, 1.0, u);
    linalg::trsv<Uplo::Lower, Trans::Yes, NU>(g, nu, L, nu, u);
    for (int i = 0; i < nu; ++i) u[i] = -u[i];
    std::memcpy(xn, d.c_k(k), nx * sizeof(double));
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, d.A_k(k), nx, x, 1.0, xn);
    linalg::gemv<Trans::No, NX, NU>(g, nx, nu, 1.0, d.B_k(k), nx, u, 1.0, xn);
  }
  for (int k = 0; k <= N; ++k) {
    double* lam = s.lambda_k(k);
    std::memcpy(lam, w.p + static_cast<std::size_t>(k) * nx, nx * sizeof(double));
    linalg::gemv<Trans::No, NX, NX>(g, nx, nx, 1.0, w.P + k * sxx, nx, s.x_k(k), 1.0, lam);
  }
}

class RiccatiBackend final : public LqBackend {
 public:
  RiccatiBackend(int nx, int nu, int N) : nx_(nx), nu_(nu), N_(N) {
    const std::size_t sxx = static_cast<std::size_t>(nx) * nx, sxu = static_cast<std::size_t>(nx) * nu;
    const std::size_t oP = arena_.reserve((N + 1) * sxx), op = arena_.reserve(static_cast<std::size_t>(N + 1) * nx),
                      oL = arena_.reserve(static_cast<std::size_t>(N) * nu * nu), oY = arena_.reserve(N * sxu),
                      okt = arena_.reserve(static_cast<std::size_t>(N) * nu), oAt = arena_.reserve(sxx),
                      oT = arena_.reserve(sxx), oW = arena_.reserve(sxu), opc = arena_.reserve(nx);
    arena_.allocate();
    w_ = {arena_.at(oP), arena_.at(op), arena_.at(oL), arena_.at(oY), arena_.at(okt),
          arena_.at(oAt), arena_.at(oT), arena_.at(oW), arena_.at(opc)};
    dispatch_sizes<RiccatiNx, ControlSizes>(nx, nu, [&](auto NX, auto NU) {
      backward_ = &riccati_backward<decltype(NX)::value, decltype(NU)::value>;
      forward_ = &riccati_forward<decltype(NX)::value, decltype(NU)::value>;
      vectors_ = &riccati_backward_vectors<decltype(NX)::value, decltype(NU)::value>;
    });
  }

  LqStatus solve(const LqData& d, LqSolution& s, LqStats& stats) override {
    stats.linsys = Linsys::Riccati;
    const int failed = backward_(nx_, nu_, N_, d, w_);
    if (failed >= 0) {
      stats.failed_stage = failed;
      return data_finite(d) ? LqStatus::NotPositiveDefinite : LqStatus::NonFinite;
    }
    forward_(nx_, nu_, N_, d, w_, s);
    return solution_finite(s) ? LqStatus::Solved : LqStatus::NonFinite;
  }

  LqStatus resolve(const LqData& d, LqSolution& s, LqStats& stats) override {
    stats.linsys = Linsys::Riccati;
    vectors_(nx_, nu_, N_, d, w_);
    forward_(nx_, nu_, N_, d, w_, s);
    return solution_finite(s) ? LqStatus::Solved : LqStatus::NonFinite;
  }

  std::size_t bytes() const override { return arena_.bytes() + sizeof(*this); }

 private:
  int nx_, nu_, N_;
  Arena arena_;
  RiccatiWork w_{};
  int (*backward_)(int, int, int, const LqData&, const RiccatiWork&) = nullptr;
  void (*forward_)(int, int, int, const LqData&, const RiccatiWork&, LqSolution&) = nullptr;
  void (*vectors_)(int, int, int, const LqData&, const RiccatiWork&) = nullptr;
};

}  // namespace

std::unique_ptr<LqBackend> make_riccati(int nx, int nu, int N, const LqOptions& /*opt*/) {
  return std::make_unique<RiccatiBackend>(nx, nu, N);
}

}  // namespace knot::solver::detail

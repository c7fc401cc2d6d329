// --- The LQ step's Riccati recursion for a stage that fits a warp: products over the block, the
// eliminations in one warp's registers (CUDA only) ---
//
// riccati_solve (riccati.hpp) spreads each knot's products over a CUDA block and passes about
// 4 + nu + 1 block barriers a knot, each between short dependent chains in global memory: 47,000
// cycles a knot on an H200 (docs/BENCHMARKS.md, GPU). This is the same recursion for a block whose
// stage fits one warp (nu <= 16, nx <= 16), with the knot's operands and P_{k+1} in shared memory:
//   - the products P [B A] and [B A]' P [B A] spread over the whole block (one output per thread);
//   - the elimination on warp 0, one lane per variable of the stage, as the register LU and Cholesky
//     (linalg/cuda/register_factor.cuh) run a matrix with one lane per row;
//   - the next knot's operands staged by the other warps meanwhile.
//
// A stage's variables are ordered [u; x], each part padded to a compile-time width (NU, NX), so
// that every register index is a constant. Lane v takes row v of
//   H = [R  S ; S'  Q] + [B A]' P_{k+1} [B A],   h = [r; q] + [B A]' (P_{k+1} c + p_{k+1})
// into h[0 .. NU + NX) and hv. Eliminating the u variables (nu Cholesky columns of H, h carried
// along as a last column) leaves on lane NU + i row i of
//   L (u lanes: row a of Huu's factor),  Y = Hxu L^-T,  kt = L^-1 hu  (u lanes' hv),
//   P_k = Hxx - Y Y' (x lanes' x columns, lower triangle, then mirrored),  p_k = hx - Y kt.
// A column of the elimination is one pivot (a shuffle and an rsqrt), each later lane's entry of L
// published through shared memory, one __syncwarp, and each lane's update of its own row.
//
// The factorization is stored in riccati_solve's scratch layout (Work: P_k, p_k, L_k, Y_k, kt_k) and
// the statuses follow riccati_solve's rules, with its group helpers for the finiteness checks. The
// arithmetic is ordered differently from riccati_solve's (and divides by way of rsqrt and
// reciprocals), so the two agree to rounding, not bit for bit. Every output has one writer, in an
// order that does not depend on the block size, so results are bitwise the same for every block
// size (tests/cuda/test_gpu_riccati.cpp checks both against the host's serial solve).
#pragma once

#if defined(__CUDACC__)

#include <cmath>

#include "knot/linalg/cuda/group.cuh"
#include "knot/linalg/dense/types.hpp"
#include "knot/solver/device/riccati.hpp"

namespace knot::solver::device {

namespace riccati_warp_detail {

inline constexpr int kMaxNu = 16, kMaxNx = 16;
inline constexpr unsigned kFull = 0xffffffffu;

template <int NU, int NX>
struct Shape {
  static constexpr int W = NU + NX;  // lanes in use: u variables, then x variables
  static constexpr int S = W + 1;    // row stride of the shared matrices (odd: fewer bank conflicts)
  static_assert(W <= 32, "a stage must fit one warp");
  // One knot's operands for the backward recursion: [B A] (NX rows), G = [R S; S' Q] in [u; x]
  // order (W rows), its vector [r; q], and c.
  static constexpr int kAB = 0, kG = NX * S, kGv = kG + W * S, kC = kGv + W, kBackward = kC + NX;
  // For the forward rollout: Y, L, kt, P, p, A, B, c of one knot in their scratch and LqView layouts.
  static constexpr int kY = 0, kL = kY + NX * NU, kKt = kL + NU * NU, kP = kKt + NU, kPv = kP + NX * NX, kA = kPv + NX,
                       kB = kA + NX * NX, kFc = kB + NX * NU, kForward = kFc + NX;
  static constexpr int kStage = kBackward > kForward ? kBackward : kForward;
  // After the stages (one for the recursion, two for the rollout): the recursion's P_{k+1} and
  // p_{k+1}, P [B A] and P c + p, H and h, two columns of L; the rollout's x and u.
  static constexpr int kPs = kStage, kPsv = kPs + NX * S, kM = kPsv + NX, kPc = kM + NX * S, kH = kPc + NX,
                       kHv = kH + W * S, kCol = kHv + W, kBackwardEnd = kCol + 64;
  static constexpr int kXs = 2 * kStage, kUs = kXs + NX, kForwardEnd = kUs + NU;
  static constexpr int kShared = kBackwardEnd > kForwardEnd ? kBackwardEnd : kForwardEnd;
};

// Shared scalars, for the widest shape.
inline constexpr int kSharedScalars = Shape<kMaxNu, kMaxNx>::kShared;

// Knot k's backward operands into the stage `st`, by threads t, t + nt, ... (padding written as 0).
template <class T, int NU, int NX>
__device__ void load_backward(const LqView<T>& d, int k, T* st, int t, int nt) {
  using Sh = Shape<NU, NX>;
  constexpr int W = Sh::W, S = Sh::S;
  const int nx = d.nx, nu = d.nu;
  const T* A = d.A_k(k);
  const T* B = d.B_k(k);
  const T* Q = d.Q_k(k);
  const T* R = d.R_k(k);
  const T* Sk = d.S_k(k);
  for (int e = t; e < nx * W; e += nt) {  // [B A](l, b), l fastest: global reads down columns
    const int b = e / nx, l = e - b * nx;
    T v = T(0);
    if (b < NU) {
      if (b < nu) v = B[l + std::size_t(b) * nx];
    } else if (b - NU < nx) {
      v = A[l + std::size_t(b - NU) * nx];
    }
    st[Sh::kAB + l * S + b] = v;
  }
  for (int e = t; e < W * W; e += nt) {  // G(a, b), a fastest
    const int a = e % W, b = e / W;
    T v = T(0);
    if (a < NU) {
      if (a < nu) {
        if (b < NU) {
          if (b < nu) v = R[a + std::size_t(b) * nu];
        } else if (b - NU < nx) {
          v = Sk[a + std::size_t(b - NU) * nu];
        }
      }
    } else if (a - NU < nx) {
      const int i = a - NU;
      if (b < NU) {
        if (b < nu) v = Sk[b + std::size_t(i) * nu];
      } else if (b - NU < nx) {
        v = Q[i + std::size_t(b - NU) * nx];
      }
    }
    st[Sh::kG + a * S + b] = v;
  }
  for (int e = t; e < W; e += nt) {
    T v = T(0);
    if (e < NU) {
      if (e < nu) v = d.r_k(k)[e];
    } else if (e - NU < nx) {
      v = d.q_k(k)[e - NU];
    }
    st[Sh::kGv + e] = v;
  }
  for (int e = t; e < nx; e += nt) st[Sh::kC + e] = d.c_k(k)[e];
}

// Knot k's forward operands (the factorization in w, the dynamics in d) into the stage `st`.
template <class T, int NU, int NX>
__device__ void load_forward(const LqView<T>& d, const riccati_detail::Work<T>& w, int k, T* st, int t, int nt) {
  using Sh = Shape<NU, NX>;
  const int nx = d.nx, nu = d.nu;
  const auto copy = [&](const T* src, int n, int at) {
    for (int e = t; e < n; e += nt) st[at + e] = src[e];
  };
  copy(w.Y_k(k, nx, nu), nx * nu, Sh::kY);
  copy(w.L_k(k, nu), nu * nu, Sh::kL);
  copy(w.kt_k(k, nu), nu, Sh::kKt);
  copy(w.P_k(k, nx), nx * nx, Sh::kP);
  copy(w.p_k(k, nx), nx, Sh::kPv);
  copy(d.A_k(k), nx * nx, Sh::kA);
  copy(d.B_k(k), nx * nu, Sh::kB);
  copy(d.c_k(k), nx, Sh::kFc);
}

// 1 / sqrt(x) to within an ulp or so (CUDA's rsqrt): the elimination's only long-latency step.
__device__ inline double inv_sqrt(double x) { return rsqrt(x); }
__device__ inline float inv_sqrt(float x) { return rsqrtf(x); }

// The backward recursion. Every thread of the block calls; per knot:
//   A. all threads: P_{k+1} [B A] and P_{k+1} c + p_{k+1}, one output per thread at a time;
//   B. all threads: H = G + [B A]' (P [B A]) and h = [r; q] + [B A]' (P c + p);
//   C. warp 0: each lane takes its row of H into registers and the nu eliminations run there;
//      P_k and p_k go back to shared memory for the next knot. Meanwhile the other warps stage
//      knot k - 1's operands (warp 0 itself when the block is a single warp).
// Three block barriers a knot. Returns -1, or the first stage k (counting down) whose Huu has a pivot
// that is not positive and finite; the same on every thread.
template <class T, int NU, int NX>
__device__ __noinline__ int backward(linalg::BlockGroup& g, const LqView<T> d, const riccati_detail::Work<T> w, T* sh,
                                     int* flags) {
  using Sh = Shape<NU, NX>;
  constexpr int W = Sh::W, S = Sh::S;
  const int rank = g.rank(), size = g.size(), lane = rank & 31;
  const bool warp0 = rank < 32;
  const int nx = d.nx, nu = d.nu, N = d.N;
  T* st = sh;  // the knot's operands
  const T* AB = st + Sh::kAB;
  const T* G = st + Sh::kG;
  const T* gv = st + Sh::kGv;
  const T* c = st + Sh::kC;
  T* Ps = sh + Sh::kPs;    // P_{k+1}, rows of stride S
  T* psv = sh + Sh::kPsv;  // p_{k+1}
  T* M = sh + Sh::kM;      // P_{k+1} [B A]
  T* pc = sh + Sh::kPc;    // P_{k+1} c + p_{k+1}
  T* H = sh + Sh::kH;      // H and h
  T* hs = sh + Sh::kHv;
  T* col = sh + Sh::kCol;  // two columns of L, alternately
  const int xi = lane - NU;
  const bool is_u = lane < nu;
  const bool is_x = lane >= NU && xi < nx;

  load_backward<T, NU, NX>(d, N - 1, st, rank, size);
  {  // P_N = Q_N, p_N = q_N
    const T* Q = d.Q_k(N);
    T* P = w.P_k(N, nx);
    for (int e = rank; e < nx * nx; e += size) {
      const int i = e % nx, j = e / nx;
      Ps[i * S + j] = Q[e];
      P[e] = Q[e];
    }
    for (int i = rank; i < nx; i += size) {
      psv[i] = d.q_k(N)[i];
      w.p_k(N, nx)[i] = psv[i];
    }
  }
  g.sync();

  for (int k = N - 1; k >= 0; --k) {
    KNOT_RICCATI_CLOCK;
    // A. M = P [B A] (nx rows of W) and pc = P c + p.
    for (int e = rank; e < nx * (W + 1); e += size) {
      const int i = e / (W + 1), b = e - i * (W + 1);
      const T* prow = Ps + i * S;
      T acc = T(0);
      if (b < W) {
        for (int j = 0; j < nx; ++j) acc += prow[j] * AB[j * S + b];
        M[i * S + b] = acc;
      } else {
        for (int j = 0; j < nx; ++j) acc += prow[j] * c[j];
        pc[i] = acc + psv[i];
      }
    }
    g.sync();
    KNOT_RICCATI_LAP(1);
    // B. H = G + [B A]' M and h = [r; q] + [B A]' pc (rows a < W; padded rows and columns stay 0).
    for (int e = rank; e < W * (W + 1); e += size) {
      const int a = e / (W + 1), b = e - a * (W + 1);
      T acc = T(0);
      if (b < W) {
        for (int l = 0; l < nx; ++l) acc += AB[l * S + a] * M[l * S + b];
        H[a * S + b] = G[a * S + b] + acc;
      } else {
        for (int l = 0; l < nx; ++l) acc += AB[l * S + a] * pc[l];
        hs[a] = gv[a] + acc;
      }
    }
    g.sync();
    KNOT_RICCATI_LAP(2);

    if (!warp0) {
      if (k > 0) load_backward<T, NU, NX>(d, k - 1, st, rank - 32, size - 32);
    } else {
      int failed = -1;
      // C. Lane v's row of H and h, then eliminate u_0 .. u_{nu-1}. Column j: lane j's pivot, every
      //    later lane's L entry, which each lane publishes so that all can update their rows (one
      //    __syncwarp a column: the two column buffers alternate, so a column is never rewritten
      //    while a lane may still read it).
      T h[W];
      T hv = T(0);
#pragma unroll
      for (int b = 0; b < W; ++b) h[b] = lane < W ? H[lane * S + b] : T(0);
      if (lane < W) hv = hs[lane];
#pragma unroll
      for (int j = 0; j < NU; ++j) {
        if (j < nu && failed < 0) {
          const T dj = __shfl_sync(kFull, h[j], j);
          if (!linalg::detail::positive_finite(dj)) {
            failed = k;
          } else {
            const T inv = inv_sqrt(dj);
            const T ktj = __shfl_sync(kFull, hv, j) * inv;
            T l = T(0);
            if (lane == j) {
              h[j] = dj * inv;
              hv = ktj;
            } else if (lane > j && lane < W) {
              l = h[j] * inv;
              h[j] = l;
              hv -= l * ktj;
            }
            T* cl = col + (j & 1) * 32;
            cl[lane] = l;
            __syncwarp();
            if (lane > j) {
#pragma unroll
              for (int b = j + 1; b < W; ++b) h[b] -= l * cl[b];
            }
          }
        }
      }
      KNOT_RICCATI_LAP(3);
      if (failed < 0) {
        // Store L_k, kt_k, Y_k, p_k; P_k's lower triangle to shared memory, mirrored there, then
        // stored whole.
        if (is_u) {
          T* L = w.L_k(k, nu);
#pragma unroll
          for (int b = 0; b < NU; ++b)
            if (b <= lane) L[lane + std::size_t(b) * nu] = h[b];
          w.kt_k(k, nu)[lane] = hv;
        }
        if (is_x) {
          T* Y = w.Y_k(k, nx, nu);
#pragma unroll
          for (int b = 0; b < NU; ++b)
            if (b < nu) Y[xi + std::size_t(b) * nx] = h[b];
          w.p_k(k, nx)[xi] = hv;
          psv[xi] = hv;
#pragma unroll
          for (int j = 0; j < NX; ++j)
            if (j <= xi) Ps[xi * S + j] = h[NU + j];
        }
        __syncwarp();
        if (is_x) {
          T* P = w.P_k(k, nx);
#pragma unroll
          for (int j = 0; j < NX; ++j)
            if (j < nx) {
              const T v = j > xi ? Ps[j * S + xi] : h[NU + j];
              if (j > xi) Ps[xi * S + j] = v;  // the upper triangle; lanes read only the lower
              P[xi + std::size_t(j) * nx] = v;
            }
        }
      }
      if (size <= 32 && k > 0 && failed < 0) {  // a one-warp block stages the next knot itself
        __syncwarp();
        load_backward<T, NU, NX>(d, k - 1, st, lane, 32);
      }
      if (lane == 0) flags[k & 1] = failed;
      KNOT_RICCATI_LAP(5);
    }
    g.sync();  // P_k in place, the next knot's operands staged
    KNOT_RICCATI_LAP(4);
    const int f = flags[k & 1];
    if (f >= 0) return f;
  }
  return -1;
}

// The forward rollout from the factorization in w: u_k = -L^-T (kt + Y' x_k), x_{k+1} = A x_k +
// B u_k + c_k, lambda_k = P_k x_k + p_k (riccati_detail::forward's formulas). Every thread of the
// block calls; warp 0 computes knot k while the other warps stage knot k + 1.
template <class T, int NU, int NX>
__device__ __noinline__ void forward(linalg::BlockGroup& g, const LqView<T> d, const StepView<T> s,
                                     const riccati_detail::Work<T> w, T* sh) {
  using Sh = Shape<NU, NX>;
  const int rank = g.rank(), size = g.size(), lane = rank & 31;
  const bool warp0 = rank < 32, loaders = size >= 64;
  const int nx = d.nx, nu = d.nu, N = d.N;
  // Knot k's stage: sh + (k & 1) kStage (by arithmetic: an array of the two would live in local memory).
  const auto stage = [&](int k) { return sh + (k & 1) * Sh::kStage; };
  T* xs = sh + 2 * Sh::kStage;  // x_k
  T* us = xs + NX;              // u_k
  const int xi = lane - NU;
  const bool is_u = lane < nu;
  const bool is_x = lane >= NU && xi < nx;
  load_forward<T, NU, NX>(d, w, 0, stage(0), rank, size);
  T xv = T(0);
  if (warp0 && is_x) {
    xv = d.x_init[xi];
    s.x[xi] = xv;
  }
  g.sync();
  for (int k = 0; k < N; ++k) {
    KNOT_RICCATI_CLOCK;
    const T* st = stage(k);
    if (!warp0) {
      if (k + 1 < N) load_forward<T, NU, NX>(d, w, k + 1, stage(k + 1), rank - 32, size - 32);
    } else {
      if (!loaders && k > 0) load_forward<T, NU, NX>(d, w, k, stage(k), lane, 32);
      if (is_x) xs[xi] = xv;
      __syncwarp();
      // u lanes: t = kt + Y' x and their column of L (L(b, lane), b >= lane); x lanes: lambda_k and
      // the A x + c part of x_{k+1}.
      T t = T(0), xn = T(0), dinv = T(0);
      T lc[NU];
#pragma unroll
      for (int b = 0; b < NU; ++b) lc[b] = T(0);
      if (is_u) {
        const T* Y = st + Sh::kY + lane * nx;
        const T* L = st + Sh::kL + lane * nu;
#pragma unroll
        for (int b = 0; b < NU; ++b)
          if (b < nu && b >= lane) lc[b] = L[b];
        T acc = T(0);
        for (int i = 0; i < nx; ++i) acc += Y[i] * xs[i];
        t = acc + st[Sh::kKt + lane];
        dinv = T(1) / L[lane];  // 1 / L(lane, lane), off the chain below
      }
      if (is_x) {
        const T* P = st + Sh::kP;
        const T* A = st + Sh::kA;
        T lam = T(0), ax = T(0);
        for (int j = 0; j < nx; ++j) {
          const T xj = xs[j];
          lam += P[xi + j * nx] * xj;
          ax += A[xi + j * nx] * xj;
        }
        s.lambda_k(k)[xi] = lam + st[Sh::kPv + xi];
        xn = ax + st[Sh::kFc + xi];
      }
      // L' y = t from the last row up; u = -y.
#pragma unroll
      for (int j = NU - 1; j >= 0; --j) {
        if (j < nu) {
          const T yj = __shfl_sync(kFull, t, j) * __shfl_sync(kFull, dinv, j);
          if (lane == j)
            t = yj;
          else if (lane < j)
            t -= lc[j] * yj;  // L(j, lane)
        }
      }
      if (is_u) {
        s.u_k(k)[lane] = -t;
        us[lane] = -t;
      }
      __syncwarp();
      if (is_x) {
        const T* Bk = st + Sh::kB;
        T bu = T(0);
        for (int b = 0; b < nu; ++b) bu += Bk[xi + b * nx] * us[b];
        xv = xn + bu;
        s.x_k(k + 1)[xi] = xv;
      }
      KNOT_RICCATI_LAP(8);
    }
    g.sync();
    KNOT_RICCATI_LAP(9);
  }
  if (warp0) {
    if (is_x) xs[xi] = xv;
    __syncwarp();
    if (is_x) {
      const T* P = w.P_k(N, nx);
      T lam = T(0);
      for (int j = 0; j < nx; ++j) lam += P[xi + std::size_t(j) * nx] * xs[j];
      s.lambda_k(N)[xi] = lam + w.p_k(N, nx)[xi];
    }
  }
}

}  // namespace riccati_warp_detail

// Whether riccati_warp_solve takes a problem of these sizes on a block of `block` threads.
KNOT_HD constexpr bool riccati_warp_fits(int nx, int nu, int block) {
  return nx >= 1 && nu >= 1 && nx <= riccati_warp_detail::kMaxNx && nu <= riccati_warp_detail::kMaxNu && block >= 32;
}

// riccati_solve's contract (arguments, scratch, statuses, closing barrier) on a CUDA block where
// riccati_warp_fits: the recursion on warp 0, the finiteness checks on the whole block.
template <class T>
__device__ __noinline__ DeviceLqResult riccati_warp_solve(linalg::BlockGroup& g, const LqView<T>& lq,
                                                          const StepView<T>& out, T* scratch) {
  namespace wd = riccati_warp_detail;
  __shared__ T sh[wd::kSharedScalars];
  __shared__ int flags[2];
  const int nx = lq.nx, nu = lq.nu, N = lq.N;
  const auto w = riccati_detail::Work<T>::carve(nx, nu, N, scratch);
  DeviceLqResult r;
  r.failed_stage = nu <= 4   ? wd::backward<T, 4, 16>(g, lq, w, sh, flags)
                   : nu <= 8 ? wd::backward<T, 8, 16>(g, lq, w, sh, flags)
                             : wd::backward<T, 16, 16>(g, lq, w, sh, flags);
  if (r.failed_stage >= 0) {
    r.status = riccati_detail::data_finite(g, lq, w) ? DeviceLqStatus::NotPositiveDefinite : DeviceLqStatus::NonFinite;
  } else {
    if (nu <= 4)
      wd::forward<T, 4, 16>(g, lq, out, w, sh);
    else if (nu <= 8)
      wd::forward<T, 8, 16>(g, lq, out, w, sh);
    else
      wd::forward<T, 16, 16>(g, lq, out, w, sh);
    g.sync();
    if (!riccati_detail::step_finite(g, out, w)) r.status = DeviceLqStatus::NonFinite;
  }
  if (g.rank() == 0) {
    w.state[0] = T(static_cast<int>(r.status));
    w.state[1] = T(r.failed_stage);
  }
  g.sync();
  return r;
}

}  // namespace knot::solver::device

#endif  // __CUDACC__

// Shared by the LQ suites: random LQ problems and the independent dense reference (the whole KKT
// system assembled from the Lagrangian in lq.hpp with Eigen and solved by LU).
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <vector>

#include "knot/solver/lq.hpp"
#include "test_util.hpp"

namespace knot::test {

using solver::LqData;
using solver::LqOptions;
using solver::LqSolution;
using solver::LqSolver;
using solver::LqStatus;
using solver::Linsys;

enum class Cost {
  PositiveDefinite,  // G_k = [Q S'; S R] random SPD (so S_k random), Q_N SPD
  ZeroStateWeights,  // Q_k = D M D with some diagonal entries of D zero, S_k = 0, R_k SPD
  TerminalOnly,      // Q_k = 0, S_k = 0 for k < N, R_k SPD, Q_N SPD
};

inline void put(const Mat& m, double* dst) {
  for (int j = 0; j < m.cols(); ++j)
    for (int i = 0; i < m.rows(); ++i) dst[i + j * m.rows()] = m(i, j);
}

inline Mat get(const double* src, int r, int c) { return Eigen::Map<const Mat>(src, r, c); }

// Dynamics with spectral radius near 1 (I/2 plus a scaled random part), so that long horizons stay
// well scaled; every other entry uniform in [-1, 1].
inline LqData random_lq(Rng& rng, int nx, int nu, int N, Cost cost = Cost::PositiveDefinite) {
  LqData d(nx, nu, N);
  const int m = nx + nu;
  for (int k = 0; k < N; ++k) {
    put(0.5 * Mat::Identity(nx, nx) + rng.matrix(nx, nx) / (2.0 * std::sqrt(nx)), d.A_k(k));
    put(rng.matrix(nx, nu), d.B_k(k));
    put(rng.vector(nx), d.c_k(k));
    put(rng.vector(nu), d.r_k(k));
    if (cost == Cost::PositiveDefinite) {
      const Mat G = rng.spd(m, 0.5);
      put(G.topLeftCorner(nx, nx), d.Q_k(k));
      put(G.bottomLeftCorner(nu, nx), d.S_k(k));
      put(G.bottomRightCorner(nu, nu), d.R_k(k));
    } else {
      put(rng.spd(nu, 0.5), d.R_k(k));
      put(Mat::Zero(nu, nx), d.S_k(k));
    }
  }
  for (int k = 0; k <= N; ++k) {
    put(rng.vector(nx), d.q_k(k));
    if (cost == Cost::PositiveDefinite && k < N) continue;  // Q_k came with G_k
    Mat Q = rng.spd(nx, 0.5);
    if (cost == Cost::ZeroStateWeights) {
      Mat D = Mat::Identity(nx, nx);
      for (int i = 0; i < nx; i += 2) D(i, i) = 0.0;  // states 0, 2, 4, ... carry no weight
      Q = D * Q * D;
    } else if (cost == Cost::TerminalOnly && k < N) {
      Q.setZero();
    }
    put(Q, d.Q_k(k));
  }
  put(rng.vector(nx), d.x_init.data());
  return d;
}

// The KKT system of lq.hpp's Lagrangian, unknowns ordered (x_0..x_N, u_0..u_{N-1}, lambda_0..lambda_N):
//   [H E'; E 0] [z; lambda] = [-g; -e]   with the constraints written E z + e = 0:
//   row 0: x_init - x_0,   row k+1: A_k x_k + B_k u_k + c_k - x_{k+1}.
struct DenseKkt {
  int nx = 0, nu = 0, N = 0;
  Mat K;
  Vec rhs;
  int nz() const { return (N + 1) * nx + N * nu; }
  int size() const { return nz() + (N + 1) * nx; }
  int ix(int k) const { return k * nx; }
  int iu(int k) const { return (N + 1) * nx + k * nu; }
  int il(int k) const { return nz() + k * nx; }
};

inline DenseKkt dense_kkt(const LqData& d) {
  DenseKkt s{d.nx, d.nu, d.N, {}, {}};
  const int nx = d.nx, nu = d.nu, N = d.N, n = s.size();
  s.K = Mat::Zero(n, n);
  s.rhs = Vec::Zero(n);
  auto E = [&](int row, int col, const Mat& blk) {  // constraint block and its transpose
    s.K.block(row, col, blk.rows(), blk.cols()) += blk;
    s.K.block(col, row, blk.cols(), blk.rows()) += blk.transpose();
  };
  for (int k = 0; k <= N; ++k) {
    s.K.block(s.ix(k), s.ix(k), nx, nx) = get(d.Q_k(k), nx, nx);
    s.rhs.segment(s.ix(k), nx) = -get(d.q_k(k), nx, 1);
  }
  for (int k = 0; k < N; ++k) {
    const Mat S = get(d.S_k(k), nu, nx);
    s.K.block(s.iu(k), s.iu(k), nu, nu) = get(d.R_k(k), nu, nu);
    s.K.block(s.iu(k), s.ix(k), nu, nx) = S;
    s.K.block(s.ix(k), s.iu(k), nx, nu) = S.transpose();
    s.rhs.segment(s.iu(k), nu) = -get(d.r_k(k), nu, 1);
  }
  E(s.il(0), s.ix(0), -Mat::Identity(nx, nx));
  s.rhs.segment(s.il(0), nx) = -get(d.x_init.data(), nx, 1);
  for (int k = 0; k < N; ++k) {
    E(s.il(k + 1), s.ix(k), get(d.A_k(k), nx, nx));
    E(s.il(k + 1), s.iu(k), get(d.B_k(k), nx, nu));
    E(s.il(k + 1), s.ix(k + 1), -Mat::Identity(nx, nx));
    s.rhs.segment(s.il(k + 1), nx) = -get(d.c_k(k), nx, 1);
  }
  return s;
}

// Full pivoting where it is affordable, partial pivoting for the large systems.
inline Vec dense_solve(const DenseKkt& s) {
  if (s.size() <= 400) return s.K.fullPivLu().solve(s.rhs);
  return s.K.partialPivLu().solve(s.rhs);
}

// Any solution type with x_k, u_k and lambda_k (LqSolution, LqIpmSolution).
template <class Solution>
Vec pack(const DenseKkt& s, const Solution& sol) {
  Vec w(s.size());
  for (int k = 0; k <= s.N; ++k) {
    w.segment(s.ix(k), s.nx) = get(sol.x_k(k), s.nx, 1);
    w.segment(s.il(k), s.nx) = get(sol.lambda_k(k), s.nx, 1);
  }
  for (int k = 0; k < s.N; ++k) w.segment(s.iu(k), s.nu) = get(sol.u_k(k), s.nu, 1);
  return w;
}

inline LqSolution unpack(const DenseKkt& s, const Vec& w) {
  LqSolution sol(s.nx, s.nu, s.N);
  for (int k = 0; k <= s.N; ++k) {
    put(w.segment(s.ix(k), s.nx), sol.x_k(k));
    put(w.segment(s.il(k), s.nx), sol.lambda_k(k));
  }
  for (int k = 0; k < s.N; ++k) put(w.segment(s.iu(k), s.nu), sol.u_k(k));
  return sol;
}

// Normwise backward error of w for K w = rhs: ||K w - rhs||_inf / (||K||_inf ||w||_inf + ||rhs||_inf).
// A backward-stable solve gives a small multiple of the unit roundoff.
inline double backward_error(const DenseKkt& s, const Vec& w) {
  if (!w.allFinite()) return kNaN;
  const double knorm = s.K.cwiseAbs().rowwise().sum().maxCoeff();
  return (s.K * w - s.rhs).cwiseAbs().maxCoeff() / (knorm * w.cwiseAbs().maxCoeff() + s.rhs.cwiseAbs().maxCoeff());
}

// Largest of rel_err (test_util) over x, u and lambda.
inline double solution_error(const LqSolution& a, const LqSolution& b) {
  const auto v = [](const std::vector<double>& x) { return Eigen::Map<const Vec>(x.data(), static_cast<Eigen::Index>(x.size())); };
  return std::max({rel_err(v(a.x), v(b.x)), rel_err(v(a.u), v(b.u)), rel_err(v(a.lambda), v(b.lambda))});
}

inline LqSolution poisoned_solution(int nx, int nu, int N) {
  LqSolution s(nx, nu, N);
  std::fill(s.x.begin(), s.x.end(), kNaN);
  std::fill(s.u.begin(), s.u.end(), kNaN);
  std::fill(s.lambda.begin(), s.lambda.end(), kNaN);
  return s;
}

inline LqOptions with(Linsys linsys) {
  LqOptions o;
  o.linsys = linsys;
  return o;
}

// Sizes the cross-checks sweep: nx 1..14, nu 1..7, N 1..64, the large ones few (the dense reference
// is cubic in the whole KKT size).
struct LqSize {
  int nx, nu, N;
};
inline const std::vector<LqSize> kLqSizes = {
    {1, 1, 1},  {1, 1, 64}, {2, 1, 3},   {3, 2, 1},  {3, 3, 10}, {4, 1, 50}, {5, 2, 7},   {6, 3, 17},
    {7, 7, 5},  {8, 1, 33}, {9, 4, 12},  {10, 5, 2}, {11, 6, 9}, {12, 4, 20}, {13, 7, 4}, {14, 7, 16},
    {14, 1, 8}, {2, 7, 40}, {14, 3, 30}, {5, 5, 64},
};

}  // namespace knot::test

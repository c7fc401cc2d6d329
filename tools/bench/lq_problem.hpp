// The random LQ problems of the LQ benchmarks (bench_lq.cpp, bench_lq_ipm.cpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "knot/solver/lq.hpp"

namespace knot::bench {

// Column-major n x n SPD matrix M M' + shift I, M uniform in [-1, 1].
inline std::vector<double> spd(std::mt19937_64& gen, int n, double shift) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> m(static_cast<std::size_t>(n) * n), a(m.size());
  for (double& v : m) v = u(gen);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double s = i == j ? shift : 0.0;
      for (int k = 0; k < n; ++k) s += m[i + k * n] * m[j + k * n];
      a[i + j * n] = s;
    }
  return a;
}

// Dynamics I/2 + uniform / (2 sqrt(nx)); stage Hessians [Q S'; S R] random SPD (so the cross terms
// S_k are dense); vectors uniform in [-1, 1]. Deterministic for given sizes.
inline solver::LqData random_lq(int nx, int nu, int N) {
  std::mt19937_64 gen(1234 + 17 * nx + 5 * nu + N);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  solver::LqData d(nx, nu, N);
  const int m = nx + nu;
  for (int k = 0; k < N; ++k) {
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) d.A_k(k)[i + j * nx] = (i == j ? 0.5 : 0.0) + u(gen) / (2.0 * std::sqrt(nx));
    for (int i = 0; i < nx * nu; ++i) d.B_k(k)[i] = u(gen);
    for (int i = 0; i < nx; ++i) d.c_k(k)[i] = u(gen);
    for (int i = 0; i < nu; ++i) d.r_k(k)[i] = u(gen);
    const std::vector<double> G = spd(gen, m, 0.5);
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) d.Q_k(k)[i + j * nx] = G[i + j * m];
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nu; ++i) d.S_k(k)[i + j * nu] = G[nx + i + j * m];
    for (int j = 0; j < nu; ++j)
      for (int i = 0; i < nu; ++i) d.R_k(k)[i + j * nu] = G[nx + i + (nx + j) * m];
  }
  const std::vector<double> QN = spd(gen, nx, 0.5);
  for (int i = 0; i < nx * nx; ++i) d.Q_k(N)[i] = QN[i];
  for (double& v : d.q) v = u(gen);
  for (double& v : d.x_init) v = u(gen);
  return d;
}

}  // namespace knot::bench

// The SPD block-tridiagonal test problem shared by the benchmarks and `knot bench`: GLASS strips
// plus the same matrix as an Eigen sparse (for SimplicialLLT) and dense (for LLT) matrix.
#pragma once

#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <cmath>
#include <random>
#include <vector>

namespace knot::bench {

struct BlockTriProblem {
  int nb = 0, bs = 0;
  std::vector<double> strips;  // nb x (bs x 3bs) row-major [L|D|R]
  std::vector<double> rhs;     // padded (nb + 2) * bs
  Eigen::SparseMatrix<double> sparse;
  Eigen::MatrixXd dense;
  Eigen::VectorXd b;
};

// Diagonal blocks B B' + 2 bs I, off-diagonal blocks uniform in [-1, 1]: SPD and moderately
// conditioned, like a regularized Schur complement. Deterministic for a given (nb, bs, seed).
inline BlockTriProblem make_blocktri(int nb, int bs, unsigned seed = 7, double block_scale_decades = 0.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int n = nb * bs;
  BlockTriProblem p;
  p.nb = nb;
  p.bs = bs;
  p.dense = Eigen::MatrixXd::Zero(n, n);
  std::vector<double> scale(nb);
  for (int k = 0; k < nb; ++k) scale[k] = std::pow(10.0, block_scale_decades * std::sin(1.3 * k));
  for (int k = 0; k < nb; ++k) {
    Eigen::MatrixXd m(bs, bs);
    for (int j = 0; j < bs; ++j)
      for (int i = 0; i < bs; ++i) m(i, j) = u(gen);
    Eigen::MatrixXd d = m * m.transpose() + 2.0 * bs * Eigen::MatrixXd::Identity(bs, bs);
    p.dense.block(k * bs, k * bs, bs, bs) = scale[k] * scale[k] * d;
    if (k + 1 < nb) {
      Eigen::MatrixXd c(bs, bs);
      for (int j = 0; j < bs; ++j)
        for (int i = 0; i < bs; ++i) c(i, j) = scale[k] * scale[k + 1] * u(gen);
      p.dense.block(k * bs, (k + 1) * bs, bs, bs) = c;
      p.dense.block((k + 1) * bs, k * bs, bs, bs) = c.transpose();
    }
  }
  p.strips.assign(static_cast<std::size_t>(nb) * 3 * bs * bs, 0.0);
  for (int k = 0; k < nb; ++k)
    for (int y = 0; y < bs; ++y)
      for (int s = 0; s < 3; ++s) {
        const int bc = k + s - 1;
        if (bc < 0 || bc >= nb) continue;
        for (int x = 0; x < bs; ++x)
          p.strips[static_cast<std::size_t>(k) * 3 * bs * bs + y * 3 * bs + s * bs + x] = p.dense(k * bs + y, bc * bs + x);
      }
  p.sparse = p.dense.sparseView();
  p.b.resize(n);
  for (int i = 0; i < n; ++i) p.b(i) = u(gen);
  p.rhs.assign(static_cast<std::size_t>(nb + 2) * bs, 0.0);
  for (int i = 0; i < n; ++i) p.rhs[bs + i] = p.b(i);
  return p;
}

}  // namespace knot::bench

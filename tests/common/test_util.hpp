// Shared helpers for the linalg test suites: random operands, the dense Eigen view of strips,
// NaN poisoning, and the group-size sweep.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "knot/linalg/bdmv.hpp"
#include "knot/linalg/threaded_group.hpp"

namespace knot::test {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;

// Group sizes every cooperative primitive is swept over (issue: {1, 2, 3, 7, 32, 33}).
inline const std::vector<int> kGroupSizes = {1, 2, 3, 7, 32, 33};

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline std::vector<double> poisoned(std::size_t n) { return std::vector<double>(n, kNaN); }

inline bool same_bits(double a, double b) {
  std::uint64_t x, y;
  std::memcpy(&x, &a, 8);
  std::memcpy(&y, &b, 8);
  return x == y;
}

// Bitwise equality of two double arrays (NaN payloads included).
inline bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

// H(i, j) and H(j, i) are the same double, bit for bit, for every pair.
inline bool bitwise_symmetric(const Mat& H) {
  for (int j = 0; j < H.cols(); ++j)
    for (int i = 0; i < H.rows(); ++i)
      if (!same_bits(H(i, j), H(j, i))) return false;
  return true;
}

// Relative error max|a - b| / max(1, max|b|): scale-aware, and NaN anywhere makes it NaN (which
// fails every `< tol` check).
inline double rel_err(const Mat& a, const Mat& b) {
  if (!a.allFinite()) return kNaN;
  const double scale = std::max(1.0, b.cwiseAbs().maxCoeff());
  return (a - b).cwiseAbs().maxCoeff() / scale;
}

class Rng {
 public:
  explicit Rng(unsigned seed) : gen_(seed) {}
  double uniform(double lo = -1, double hi = 1) { return std::uniform_real_distribution<double>(lo, hi)(gen_); }
  Mat matrix(int r, int c) {
    Mat m(r, c);
    for (int j = 0; j < c; ++j)
      for (int i = 0; i < r; ++i) m(i, j) = uniform();
    return m;
  }
  Vec vector(int n) { return matrix(n, 1); }
  // Random SPD: B B' + shift I.
  Mat spd(int n, double shift = 1.0) {
    Mat b = matrix(n, n);
    return b * b.transpose() + shift * Mat::Identity(n, n);
  }

 private:
  std::mt19937_64 gen_;
};

// A block-tridiagonal matrix in GLASS strips, with its dense twin.
struct BlockTri {
  int nb = 0, bs = 0;
  std::vector<double> strips;  // nb * 3 * bs * bs
  Mat dense() const {
    const int n = nb * bs;
    Mat a = Mat::Zero(n, n);
    for (int br = 0; br < nb; ++br)
      for (int y = 0; y < bs; ++y)
        for (int s = 0; s < 3; ++s) {
          const int bc = br + s - 1;
          if (bc < 0 || bc >= nb) continue;
          for (int x = 0; x < bs; ++x)
            a(br * bs + y, bc * bs + x) = strips[static_cast<std::size_t>(br) * 3 * bs * bs + y * 3 * bs + s * bs + x];
        }
    return a;
  }
  double& at(int br, int slot, int y, int x) {
    return strips[static_cast<std::size_t>(br) * 3 * bs * bs + y * 3 * bs + slot * bs + x];
  }
};

// Strips of a general block-tridiagonal matrix (L and R independent, so a swap of L and R shows),
// with zero L_0 and R_{nb-1}.
inline BlockTri random_blocktri(Rng& rng, int nb, int bs) {
  BlockTri m{nb, bs, std::vector<double>(static_cast<std::size_t>(nb) * 3 * bs * bs, 0.0)};
  for (int br = 0; br < nb; ++br)
    for (int s = 0; s < 3; ++s) {
      if ((br == 0 && s == 0) || (br == nb - 1 && s == 2)) continue;
      for (int y = 0; y < bs; ++y)
        for (int x = 0; x < bs; ++x) m.at(br, s, y, x) = rng.uniform();
    }
  return m;
}

// Symmetric positive definite block-tridiagonal strips: off-diagonal blocks C_k (R_k = C_k,
// L_{k+1} = C_k'), diagonal blocks SPD with enough margin: D_k = B B' + (shift + 2 bs) I.
// `shift` below zero weakens the diagonal and can make it indefinite (used by the CHECK tests).
inline BlockTri random_spd_blocktri(Rng& rng, int nb, int bs, double shift = 1.0) {
  BlockTri m{nb, bs, std::vector<double>(static_cast<std::size_t>(nb) * 3 * bs * bs, 0.0)};
  for (int br = 0; br < nb; ++br) {
    Mat d = rng.spd(bs, shift + 2.0 * bs);
    for (int y = 0; y < bs; ++y)
      for (int x = 0; x < bs; ++x) m.at(br, 1, y, x) = d(y, x);
    if (br + 1 < nb) {
      Mat c = rng.matrix(bs, bs);
      for (int y = 0; y < bs; ++y)
        for (int x = 0; x < bs; ++x) {
          m.at(br, 2, y, x) = c(y, x);
          m.at(br + 1, 0, x, y) = c(y, x);
        }
    }
  }
  return m;
}

// Padded vector (nb + 2) * bs with zero pads and `interior` inside.
inline std::vector<double> padded(const Vec& interior, int bs) {
  std::vector<double> v(interior.size() + 2 * bs, 0.0);
  for (int i = 0; i < interior.size(); ++i) v[bs + i] = interior(i);
  return v;
}

inline Vec interior(const std::vector<double>& v, int nb, int bs) {
  Vec x(static_cast<Eigen::Index>(nb) * bs);
  for (int i = 0; i < nb * bs; ++i) x(i) = v[bs + i];
  return x;
}

// Column-major std::vector <-> Eigen.
inline std::vector<double> to_vec(const Mat& m) { return std::vector<double>(m.data(), m.data() + m.size()); }
inline Mat to_mat(const std::vector<double>& v, int r, int c) { return Eigen::Map<const Mat>(v.data(), r, c); }

// Dense column-major storage with a leading dimension ld >= rows: the rows past m.rows() hold `pad`.
inline std::vector<double> store(const Mat& m, int ld, double pad) {
  std::vector<double> v(static_cast<std::size_t>(ld) * std::max<Eigen::Index>(m.cols(), 1), pad);
  for (int j = 0; j < m.cols(); ++j)
    for (int i = 0; i < m.rows(); ++i) v[i + static_cast<std::size_t>(j) * ld] = m(i, j);
  return v;
}

inline Mat load(const std::vector<double>& v, int rows, int cols, int ld) {
  Mat m(rows, cols);
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) m(i, j) = v[i + static_cast<std::size_t>(j) * ld];
  return m;
}

// The lower triangle of a (column-major, leading dimension ld); the strict upper triangle and the
// pads are NaN, so a read of them poisons the result and a write of them shows.
inline std::vector<double> store_lower(const Mat& a, int ld) {
  const int n = static_cast<int>(a.rows());
  std::vector<double> v(static_cast<std::size_t>(ld) * std::max(n, 1), kNaN);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) v[i + static_cast<std::size_t>(j) * ld] = a(i, j);
  return v;
}

// kGroupSizes plus 0, which the run helpers read as "a SerialGroup" (the fixed-size CPU path).
inline std::vector<int> groups_and_serial() {
  std::vector<int> v = kGroupSizes;
  v.push_back(0);
  return v;
}

// Runs fn(group, out) on a copy of `out`: t == 0 on a SerialGroup, else on t threads.
template <class Fn>
std::vector<double> run(int t, std::vector<double> out, Fn fn) {
  if (t == 0) {
    linalg::SerialGroup g;
    fn(g, out.data());
  } else {
    linalg::run_threaded(t, [&](linalg::ThreadedGroup& g) { fn(g, out.data()); });
  }
  return out;
}

inline bool all_equal(const std::vector<int>& v, int x) {
  for (int y : v)
    if (y != x) return false;
  return true;
}

// An SPD matrix whose leading minor of order k is not positive (those of lower order are): the
// pivot d_{k-1} is made `pivot` (<= 0) by setting A(k-1,k-1) from the Schur complement.
inline Mat planted(Rng& rng, int n, int k, double pivot) {
  Mat a = rng.spd(n, 1.0);
  const int m = k - 1;
  if (m == 0) {
    a(0, 0) = pivot;
  } else {
    const Vec c = a.row(m).head(m).transpose();
    a(m, m) = c.dot(a.topLeftCorner(m, m).llt().solve(c)) + pivot;
  }
  return a;
}

}  // namespace knot::test

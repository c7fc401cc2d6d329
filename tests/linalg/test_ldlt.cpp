// ldlt (Bunch-Kaufman LDL') against Eigen: inertia vs SelfAdjointEigenSolver on random indefinite
// and KKT matrices (zero diagonals force 2x2 pivots), backward error of the solves, the factors
// reassembled into A, static perturbation with per-row signs, iterative refinement, the pivot
// threshold, the band form against the dense one, group-size sweeps with bitwise comparison,
// NaN-poisoned outputs, and negative controls.
#include <gtest/gtest.h>

#include <string>

#include "knot/linalg/cholesky.hpp"  // SubGroup, for_each_system
#include "knot/linalg/ldlt.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

struct Inertia {
  int pos = 0, neg = 0, zero = 0;
  bool operator==(const Inertia&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Inertia& i) {
  return os << "(" << i.pos << ", " << i.neg << ", " << i.zero << ")";
}

Inertia of(const LdltStats& s) { return {s.npos, s.nneg, s.nzero}; }

// Sign count of the eigenvalues; |lambda| <= tol counts as zero.
Inertia eigen_inertia(const Mat& a, double tol = 0.0) {
  const Vec ev = Eigen::SelfAdjointEigenSolver<Mat>(a).eigenvalues();
  Inertia r;
  for (int i = 0; i < ev.size(); ++i) {
    if (ev(i) > tol) {
      ++r.pos;
    } else if (ev(i) < -tol) {
      ++r.neg;
    } else {
      ++r.zero;
    }
  }
  return r;
}

// Normwise backward error ||A x - b||_inf / (max|a_ij| ||x||_inf + ||b||_inf).
double backward_error(const Mat& a, const Vec& x, const Vec& b) {
  const double r = (a * x - b).cwiseAbs().maxCoeff();
  return r / (a.cwiseAbs().maxCoeff() * x.cwiseAbs().maxCoeff() + b.cwiseAbs().maxCoeff());
}

struct Factor {
  std::vector<double> a;
  std::vector<int> piv;
  std::vector<LdltStats> stats;  // per member
};

bool same_stats(const LdltStats& x, const LdltStats& y) {
  return x.npos == y.npos && x.nneg == y.nneg && x.nzero == y.nzero && x.nperturbed == y.nperturbed &&
         x.n2x2 == y.n2x2 && x.nrestricted == y.nrestricted;
}

// fn(group, a, piv, scratch) -> LdltStats on t threads (t == 0: SerialGroup). Scratch and piv
// start poisoned.
template <class Fn>
Factor run_factor(int t, std::vector<double> a, int n, int scratch_size, Fn fn) {
  Factor f;
  f.piv.assign(std::max(n, 1), -12345);
  std::vector<double> scratch = poisoned(scratch_size);
  if (t == 0) {
    SerialGroup g;
    f.stats = {fn(g, a.data(), f.piv.data(), scratch.data())};
  } else {
    f.stats.resize(t);
    run_threaded(t, [&](ThreadedGroup& g) { f.stats[g.rank()] = fn(g, a.data(), f.piv.data(), scratch.data()); });
  }
  f.a = std::move(a);
  return f;
}

// fn(group, b) on t threads (t == 0: serial).
template <class Fn>
std::vector<double> run_solve(int t, std::vector<double> b, Fn fn) {
  if (t == 0) {
    SerialGroup g;
    fn(g, b.data());
  } else {
    run_threaded(t, [&](ThreadedGroup& g) { fn(g, b.data()); });
  }
  return b;
}

Factor factor_dense(int t, const Mat& a, int ld, const LdltOptions<double>& o = {}) {
  const int n = static_cast<int>(a.rows());
  return run_factor(t, store_lower(a, ld), n, ldlt_scratch_size(n),
                    [&](auto& g, double* p, int* piv, double* s) { return ldlt_factor(g, n, p, ld, piv, s, o); });
}

Vec solve_dense(int t, const Factor& f, int n, int ld, const Vec& b) {
  const auto x = run_solve(t, to_vec(b), [&](auto& g, double* p) { ldlt_solve(g, n, 1, f.a.data(), ld, f.piv.data(), p, n); });
  return to_mat(x, n, 1);
}

// The original row at each position after all interchanges (position k holds row perm[k]).
std::vector<int> permutation(const std::vector<int>& piv, int n) {
  std::vector<int> perm(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  for (int k = 0; k < n;) {
    const int s = ldlt_is_2x2(piv[k]) ? 2 : 1, q = k + s - 1, r = ldlt_interchange(piv[k]);
    std::swap(perm[q], perm[r]);
    k += s;
  }
  return perm;
}

// Band form: M D M' from the factors, M = P_0 L_0 P_1 L_1 ... (window W: entries of L past row
// k + W - 1 are not stored).
Mat reassemble_band(const std::vector<double>& f, int n, int lda, const std::vector<int>& piv, int W) {
  auto at = [&](int i, int j) { return f[i + static_cast<std::size_t>(j) * lda]; };
  Mat m = Mat::Identity(n, n), d = Mat::Zero(n, n);
  for (int k = 0; k < n;) {
    const int s = ldlt_is_2x2(piv[k]) ? 2 : 1, q = k + s - 1, r = ldlt_interchange(piv[k]);
    m.col(q).swap(m.col(r));  // M <- M P_k
    Mat lk = Mat::Identity(n, n);
    for (int c = k; c < k + s; ++c)
      for (int i = k + s; i < std::min(n, k + W); ++i) lk(i, c) = at(i, c);
    m = m * lk;
    d(k, k) = at(k, k);
    if (s == 2) {
      d(k + 1, k) = d(k, k + 1) = at(k + 1, k);
      d(k + 1, k + 1) = at(k + 1, k + 1);
    }
    k += s;
  }
  return m * d * m.transpose();
}

// Dense form: P A P' = L D L', so A(perm[i], perm[j]) = (L D L')(i, j).
Mat reassemble(const std::vector<double>& f, int n, int lda, const std::vector<int>& piv) {
  auto at = [&](int i, int j) { return f[i + static_cast<std::size_t>(j) * lda]; };
  Mat l = Mat::Identity(n, n), d = Mat::Zero(n, n);
  for (int k = 0; k < n;) {
    const int s = ldlt_is_2x2(piv[k]) ? 2 : 1;
    for (int c = k; c < k + s; ++c)
      for (int i = k + s; i < n; ++i) l(i, c) = at(i, c);
    d(k, k) = at(k, k);
    if (s == 2) {
      d(k + 1, k) = d(k, k + 1) = at(k + 1, k);
      d(k + 1, k + 1) = at(k + 1, k + 1);
    }
    k += s;
  }
  const Mat m = l * d * l.transpose();
  const std::vector<int> perm = permutation(piv, n);
  Mat a(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) a(perm[i], perm[j]) = m(i, j);
  return a;
}

// A random symmetric matrix with entries in [-1, 1] (indefinite).
Mat random_symmetric(Rng& rng, int n) {
  const Mat b = rng.matrix(n, n);
  return (b + b.transpose()) * 0.5;
}

// [H A'; A -delta I] with H (nh x nh) PSD, of rank nh - zero_rows (those rows and columns zero: zero
// diagonals that force 2x2 pivots), A (m x nh) random.
Mat kkt(Rng& rng, int nh, int m, double delta, int zero_rows, bool convex = true) {
  Mat h = rng.spd(nh, 0.5);
  if (!convex) h -= 3.0 * Mat::Identity(nh, nh);
  for (int i = 0; i < zero_rows; ++i) {
    h.row(2 * i % nh).setZero();
    h.col(2 * i % nh).setZero();
  }
  Mat k = Mat::Zero(nh + m, nh + m);
  k.topLeftCorner(nh, nh) = h;
  const Mat a = rng.matrix(m, nh);
  k.bottomLeftCorner(m, nh) = a;
  k.topRightCorner(nh, m) = a.transpose();
  k.bottomRightCorner(m, m) = -delta * Mat::Identity(m, m);
  return k;
}

// Checks a factorization of a: inertia against Eigen, the factors reassemble to a, solves.
void check_factorization(const Mat& a, const Factor& f, int ld, const std::string& where, bool check_eigen = true) {
  const int n = static_cast<int>(a.rows());
  const LdltStats& s = f.stats[0];
  EXPECT_EQ(s.npos + s.nneg + s.nzero, n) << where;
  if (check_eigen) {
    EXPECT_EQ(of(s), eigen_inertia(a)) << where;
  }
  EXPECT_EQ(s.nperturbed, 0) << where;
  EXPECT_EQ(s.nrestricted, 0) << where;
  const Mat back = reassemble(f.a, n, ld, f.piv);
  EXPECT_LT((back - a).cwiseAbs().maxCoeff() / a.cwiseAbs().maxCoeff(), 1e-12) << where;
}

}  // namespace

TEST(Ldlt, InertiaMatchesEigenOnRandomIndefiniteMatrices) {
  Rng rng(501);
  for (int n : {1, 2, 3, 4, 5, 8, 13, 16, 20, 33}) {
    for (int rep = 0; rep < 4; ++rep) {
      const Mat a = random_symmetric(rng, n);
      const int ld = n + 2;
      const auto f = factor_dense(1, a, ld);
      const std::string where = "n=" + std::to_string(n) + " rep=" + std::to_string(rep);
      check_factorization(a, f, ld, where);
      const Vec b = rng.vector(n);
      const Vec x = solve_dense(1, f, n, ld, b);
      EXPECT_LT(backward_error(a, x, b), 1e-14) << where;
      EXPECT_LT((x - a.fullPivLu().solve(b)).norm() / x.norm(), 1e-14 * a.norm() * a.inverse().norm()) << where;
    }
  }
}

TEST(Ldlt, KktMatricesWithZeroDiagonalsTake2x2PivotsAndGetTheInertiaRight) {
  Rng rng(502);
  struct Case {
    int nh, m, zero_rows;
    double delta;
    bool convex;
  };
  for (const Case& c : {Case{4, 2, 0, 0.0, true}, Case{6, 3, 2, 0.0, true}, Case{10, 4, 3, 0.0, true},
                        Case{10, 4, 3, 1e-6, true}, Case{12, 6, 4, 0.0, false}, Case{20, 8, 5, 1e-3, false},
                        Case{25, 12, 6, 0.0, true}}) {
    const Mat k = kkt(rng, c.nh, c.m, c.delta, c.zero_rows, c.convex);
    const int n = c.nh + c.m, ld = n + 1;
    const std::string where = "nh=" + std::to_string(c.nh) + " m=" + std::to_string(c.m) +
                              " delta=" + std::to_string(c.delta) + " convex=" + std::to_string(c.convex);
    const auto f = factor_dense(1, k, ld);
    check_factorization(k, f, ld, where);
    if (c.zero_rows > 0) {
      EXPECT_GT(f.stats[0].n2x2, 0) << where;
    }
    if (c.convex) {
      // H positive definite on the null space of A: a minimum, inertia (nh, m, 0).
      EXPECT_EQ(of(f.stats[0]), (Inertia{c.nh, c.m, 0})) << where;
    }
    for (int rep = 0; rep < 2; ++rep) {
      const Vec b = rng.vector(n) * (rep == 0 ? 1.0 : 1e6);
      const Vec x = solve_dense(1, f, n, ld, b);
      EXPECT_LT(backward_error(k, x, b), 1e-13) << where;
      EXPECT_LT((k * x - b).norm() / (k.norm() * x.norm() + b.norm()), 1e-13) << where;
    }
  }
}

TEST(Ldlt, GroupSizeSweepIsBitwiseIdentical) {
  Rng rng(503);
  for (int n : {1, 2, 7, 16, 33}) {
    const Mat a = n > 4 ? kkt(rng, n - n / 3, n / 3, 0.0, 2) : random_symmetric(rng, n);
    const int ld = n + 3;
    const auto ref = factor_dense(1, a, ld);
    const Vec b = rng.vector(n);
    const Mat B = rng.matrix(n, 3);
    const auto x_ref = solve_dense(1, ref, n, ld, b);
    auto solve3 = [&](int t, const Factor& f) {
      return run_solve(t, to_vec(B), [&](auto& g, double* p) { ldlt_solve(g, n, 3, f.a.data(), ld, f.piv.data(), p, n); });
    };
    const auto X_ref = solve3(1, ref);
    for (int t : groups_and_serial()) {
      const auto f = factor_dense(t, a, ld);
      const std::string where = "n=" + std::to_string(n) + " t=" + std::to_string(t);
      EXPECT_TRUE(bitwise_equal(f.a, ref.a)) << where;
      EXPECT_EQ(f.piv, ref.piv) << where;
      for (const auto& s : f.stats) EXPECT_TRUE(same_stats(s, ref.stats[0])) << where;
      EXPECT_TRUE(bitwise_equal(to_vec(solve_dense(t, f, n, ld, b)), to_vec(x_ref))) << where;
      EXPECT_TRUE(bitwise_equal(solve3(t, f), X_ref)) << where;
    }
    // Three right-hand sides at once are three single solves.
    for (int c = 0; c < 3; ++c) {
      const auto xc = solve_dense(1, ref, n, ld, B.col(c));
      EXPECT_TRUE(bitwise_equal(to_vec(xc), std::vector<double>(X_ref.begin() + c * n, X_ref.begin() + (c + 1) * n)));
    }
  }
}

namespace {

// The fixed-size kernels ldlt_factor<N>, ldlt_solve<N> on the serial and threaded groups, as
// pointers to thin templates: only they are instantiated per size, the check once.
template <class G>
using FactorFn = LdltStats (*)(G& g, int n, double* A, int lda, int* piv, double* scratch);
template <class G>
using SolveFn = void (*)(G& g, int n, int nrhs, const double* A, int lda, const int* piv, double* B, int ldb);

template <int N, class G>
LdltStats factor_n(G& g, int n, double* A, int lda, int* piv, double* scratch) {
  return ldlt_factor<N>(g, n, A, lda, piv, scratch);
}
template <int N, class G>
void solve_n(G& g, int n, int nrhs, const double* A, int lda, const int* piv, double* B, int ldb) {
  ldlt_solve<N>(g, n, nrhs, A, lda, piv, B, ldb);
}

struct FixedLdlt {
  FactorFn<SerialGroup> factor_serial;
  FactorFn<ThreadedGroup> factor_threaded;
  SolveFn<SerialGroup> solve_serial;
  SolveFn<ThreadedGroup> solve_threaded;
  LdltStats factor(SerialGroup& g, int n, double* A, int lda, int* piv, double* s) const {
    return factor_serial(g, n, A, lda, piv, s);
  }
  LdltStats factor(ThreadedGroup& g, int n, double* A, int lda, int* piv, double* s) const {
    return factor_threaded(g, n, A, lda, piv, s);
  }
  void solve(SerialGroup& g, int n, int nrhs, const double* A, int lda, const int* piv, double* B, int ldb) const {
    solve_serial(g, n, nrhs, A, lda, piv, B, ldb);
  }
  void solve(ThreadedGroup& g, int n, int nrhs, const double* A, int lda, const int* piv, double* B, int ldb) const {
    solve_threaded(g, n, nrhs, A, lda, piv, B, ldb);
  }
};

template <int N>
FixedLdlt fixed_ldlt() {
  return {factor_n<N, SerialGroup>, factor_n<N, ThreadedGroup>, solve_n<N, SerialGroup>, solve_n<N, ThreadedGroup>};
}

}  // namespace

TEST(Ldlt, CompileTimeSizeMatchesRuntimeBitwise) {
  Rng rng(504);
  auto check = [&](int N, const FixedLdlt& k) {
    const Mat a = random_symmetric(rng, N);
    const auto dyn = factor_dense(0, a, N);
    for (int t : {0, 3}) {
      const auto fixed = run_factor(t, store_lower(a, N), N, ldlt_scratch_size(N),
                                    [&](auto& g, double* p, int* piv, double* s) { return k.factor(g, N, p, N, piv, s); });
      EXPECT_TRUE(bitwise_equal(fixed.a, dyn.a)) << "N=" << N << " t=" << t;
      EXPECT_EQ(fixed.piv, dyn.piv);
      const Vec b = rng.vector(N);
      const auto x1 = run_solve(t, to_vec(b), [&](auto& g, double* p) { k.solve(g, N, 1, fixed.a.data(), N, fixed.piv.data(), p, N); });
      EXPECT_TRUE(bitwise_equal(x1, to_vec(solve_dense(0, dyn, N, N, b))));
    }
  };
  check(1, fixed_ldlt<1>());
  check(4, fixed_ldlt<4>());
  check(8, fixed_ldlt<8>());
  check(14, fixed_ldlt<14>());
  check(16, fixed_ldlt<16>());
  check(32, fixed_ldlt<32>());
}

TEST(Ldlt, UpperTriangleAndPadsAreNeverTouched) {
  Rng rng(505);
  const int n = 9, ld = 12;
  const Mat a = kkt(rng, 6, 3, 0.0, 2);
  const auto in = store_lower(a, ld);  // NaN in the strict upper triangle and the pads
  const auto f = factor_dense(3, a, ld);
  for (std::size_t e = 0; e < in.size(); ++e) {
    const int i = static_cast<int>(e % ld), j = static_cast<int>(e / ld);
    if (i >= n || i < j) {
      EXPECT_TRUE(std::isnan(f.a[e])) << i << "," << j;
    } else {
      EXPECT_TRUE(std::isfinite(f.a[e])) << i << "," << j;  // every lower entry written, none poisoned
    }
  }
  for (int k = 0; k < n; ++k) EXPECT_GE(ldlt_interchange(f.piv[k]), k);
}

TEST(Ldlt, PerturbationUsesTheRequestedSignsAndReportsTheInertiaAfterIt) {
  Rng rng(506);
  // A singular KKT: H with zero rows, A with two dependent rows and delta = 0, so some Schur
  // complement pivots are (numerically) zero.
  const int nh = 8, m = 4, n = nh + m, ld = n;
  Mat k = kkt(rng, nh, m, 0.0, 3);
  k.row(nh + 3).head(nh) = k.row(nh + 1).head(nh);
  k.col(nh + 3).head(nh) = k.col(nh + 1).head(nh);
  k.row(nh + 2).head(nh) = 2.0 * k.row(nh).head(nh);
  k.col(nh + 2).head(nh) = 2.0 * k.col(nh).head(nh);
  ASSERT_GT(eigen_inertia(k, 1e-12).zero, 0);

  LdltOptions<double> o;
  o.tiny = 1e-10;
  o.delta = 1e-6;
  o.n_primal = nh;
  const auto f = factor_dense(1, k, ld, o);
  const LdltStats& s = f.stats[0];
  EXPECT_GT(s.nperturbed, 0);
  EXPECT_EQ(s.nzero, 0);
  EXPECT_EQ(s.npos + s.nneg, n);
  // Each perturbed pivot (|d| == delta, 1x1) carries the sign of its original row.
  const auto perm = permutation(f.piv, n);
  int seen = 0;
  for (int j = 0; j < n;) {
    if (ldlt_is_2x2(f.piv[j])) {
      j += 2;
      continue;
    }
    const double d = f.a[j + static_cast<std::size_t>(j) * ld];
    if (std::abs(d) == o.delta) {
      ++seen;
      EXPECT_EQ(d, perm[j] < nh ? o.delta : -o.delta) << "position " << j << " row " << perm[j];
    }
    ++j;
  }
  EXPECT_EQ(seen, s.nperturbed);
  // The factors are exact for A + E, E diagonal: the inertia reported is that of A + E.
  const Mat ke = reassemble(f.a, n, ld, f.piv);
  const Mat e = ke - k;
  EXPECT_LT((e - Mat(e.diagonal().asDiagonal())).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_EQ(of(s), eigen_inertia(ke));

  // Signs given row by row: all dual here, so every perturbed pivot is negative.
  std::vector<int> signs(n, -1);
  o.row_sign = signs.data();
  const auto g = factor_dense(2, k, ld, o);
  for (int j = 0; j < n; ++j) {
    const double d = g.a[j + static_cast<std::size_t>(j) * ld];
    if (!ldlt_is_2x2(g.piv[j]) && std::abs(d) == o.delta) {
      EXPECT_EQ(d, -o.delta);
    }
  }
  EXPECT_EQ(g.stats[0].nperturbed, s.nperturbed);

  // Without perturbation, an exactly singular diagonal matrix reports its zero pivots.
  Mat z = Mat::Identity(5, 5);
  z(1, 1) = 0.0;
  z(3, 3) = -2.0;
  const auto fz = factor_dense(2, z, 5);
  EXPECT_EQ(of(fz.stats[0]), (Inertia{3, 1, 1}));
  LdltOptions<double> oz;
  oz.delta = 1e-8;
  oz.n_primal = 1;  // row 1 is dual: its zero pivot becomes -1e-8
  const auto pz = factor_dense(2, z, 5, oz);
  EXPECT_EQ(of(pz.stats[0]), (Inertia{3, 2, 0}));
  EXPECT_EQ(pz.stats[0].nperturbed, 1);
  EXPECT_EQ(pz.a[1 + 1 * 5], -1e-8);
}

TEST(Ldlt, IterativeRefinementRecoversTheUnperturbedSolution) {
  Rng rng(507);
  const int nh = 12, m = 5, n = nh + m, ld = n;
  const Mat k = kkt(rng, nh, m, 0.0, 4);
  // Static pivoting (threshold 0): the zero diagonals become tiny pivots, perturbed to +-1e-7, so
  // the factors are those of a nearby matrix.
  LdltOptions<double> o;
  o.threshold = 0.0;
  o.tiny = 1e-12;
  o.delta = 1e-7;
  o.n_primal = nh;
  const auto f = factor_dense(1, k, ld, o);
  ASSERT_GT(f.stats[0].nperturbed, 0);
  for (int j = 0; j < n; ++j) EXPECT_EQ(f.piv[j], j);  // no interchanges at all
  const Vec b = rng.vector(n);
  const Vec x0 = solve_dense(1, f, n, ld, b);
  const double be0 = backward_error(k, x0, b);
  EXPECT_GT(be0, 1e-10);  // the perturbation shows
  const auto A0 = store_lower(k, ld);
  for (int iters : {1, 2, 4}) {
    std::vector<double> scratch = poisoned(ldlt_refine_scratch_size(n));
    const auto x = run_solve(0, to_vec(x0), [&](auto& g, double* p) {
      ldlt_refine(g, n, A0.data(), ld, f.a.data(), ld, f.piv.data(), b.data(), p, iters, scratch.data());
    });
    const double be = backward_error(k, to_mat(x, n, 1), b);
    EXPECT_LT(be, be0 * 1e-3) << "iters=" << iters;
    if (iters == 4) {
      EXPECT_LT(be, 1e-14);
    }
  }
  // Bitwise the same for every group size.
  std::vector<double> scratch(n);
  const auto ref = run_solve(1, to_vec(x0), [&](auto& g, double* p) {
    ldlt_refine(g, n, A0.data(), ld, f.a.data(), ld, f.piv.data(), b.data(), p, 3, scratch.data());
  });
  for (int t : groups_and_serial()) {
    const auto x = run_solve(t, to_vec(x0), [&](auto& g, double* p) {
      ldlt_refine(g, n, A0.data(), ld, f.a.data(), ld, f.piv.data(), b.data(), p, 3, scratch.data());
    });
    EXPECT_TRUE(bitwise_equal(x, ref)) << "t=" << t;
  }
}

TEST(Ldlt, ThresholdZeroMeansNoInterchanges) {
  Rng rng(508);
  // Quasi-definite [H A'; A -delta I] (H PD, delta > 0): every diagonal pivot exists.
  const int nh = 10, m = 4, n = nh + m;
  const Mat k = kkt(rng, nh, m, 0.5, 0);
  LdltOptions<double> o;
  o.threshold = 0.0;
  const auto f = factor_dense(2, k, n, o);
  for (int j = 0; j < n; ++j) EXPECT_EQ(f.piv[j], j);
  EXPECT_EQ(f.stats[0].n2x2, 0);
  EXPECT_EQ(of(f.stats[0]), (Inertia{nh, m, 0}));
  check_factorization(k, f, n, "threshold 0");
  // The default threshold interchanges on the same matrix only when it pays; the inertia agrees.
  EXPECT_EQ(of(factor_dense(2, k, n).stats[0]), (Inertia{nh, m, 0}));
}

TEST(Ldlt, BandFormMatchesTheDenseOne) {
  Rng rng(509);
  int restricted = 0, zero_pivots = 0;
  for (int n : {1, 5, 30, 61})
    for (int hb : {0, 1, 3, 6}) {
      // A symmetric band matrix (half-bandwidth hb) with some zero diagonal entries.
      Mat a = Mat::Zero(n, n);
      for (int j = 0; j < n; ++j)
        for (int i = j; i < std::min(n, j + hb + 1); ++i) a(i, j) = a(j, i) = rng.uniform();
      for (int j = 0; j < n && n > 1; j += 3) a(j, j) = 0.0;
      if (hb == 0)
        for (int j = 0; j < n; ++j) a(j, j) = j % 3 == 0 ? 1.0 : -1.5;
      const std::string where = "n=" + std::to_string(n) + " hb=" + std::to_string(hb);
      const auto dense = factor_dense(1, a, n);
      for (int ldab : {hb + 1, 2 * hb + 1, 3 * hb + 2}) {
        std::vector<double> ab(static_cast<std::size_t>(n) * ldab, kNaN);
        for (int j = 0; j < n; ++j)
          for (int i = j; i < std::min(n, j + ldab); ++i) ab[(i - j) + static_cast<std::size_t>(j) * ldab] = a(i, j);
        const auto band = run_factor(1, ab, n, ldlt_band_scratch_size(n, ldab), [&](auto& g, double* p, int* piv, double* s) {
          return ldlt_band_factor(g, n, p, ldab, piv, s);
        });
        const std::string w = where + " ldab=" + std::to_string(ldab);
        const LdltStats& s = band.stats[0];
        restricted += s.nrestricted;
        if (s.nzero > 0) {
          // A narrow window can leave nothing but a zero diagonal to pivot on (documented): the
          // count says so. Nothing else is promised then.
          EXPECT_GT(s.nrestricted, 0) << w;
          zero_pivots += ldab > hb + 1 ? 1 : 0;
          continue;
        }
        EXPECT_EQ(of(s), of(dense.stats[0])) << w;
        if (s.nrestricted == 0) {
          // Unrestricted, the band core takes the dense core's pivots.
          EXPECT_EQ(band.piv, dense.piv) << w;
        }
        const Mat back = reassemble_band(band.a, n, ldab - 1, band.piv, ldab);
        EXPECT_LT((back - a).cwiseAbs().maxCoeff(), 1e-12) << w;
        const Vec b = rng.vector(n);
        const auto x = run_solve(1, to_vec(b), [&](auto& g, double* p) { ldlt_band_solve(g, n, 1, band.a.data(), ldab, band.piv.data(), p, n); });
        EXPECT_LT(backward_error(a, to_mat(x, n, 1), b), 1e-13) << w;
        for (int t : {0, 2, 7}) {
          const auto bt = run_factor(t, ab, n, ldlt_band_scratch_size(n, ldab), [&](auto& g, double* p, int* piv, double* sc) {
            return ldlt_band_factor(g, n, p, ldab, piv, sc);
          });
          EXPECT_TRUE(bitwise_equal(bt.a, band.a)) << w << " t=" << t;
          const auto xt = run_solve(t, to_vec(b), [&](auto& g, double* p) { ldlt_band_solve(g, n, 1, bt.a.data(), ldab, bt.piv.data(), p, n); });
          EXPECT_TRUE(bitwise_equal(xt, x)) << w << " t=" << t;
        }
        // Refinement against the band original.
        std::vector<double> scratch(n);
        const auto xr = run_solve(2, x, [&](auto& g, double* p) {
          ldlt_band_refine(g, n, ab.data(), band.a.data(), ldab, band.piv.data(), b.data(), p, 2, scratch.data());
        });
        EXPECT_LT(backward_error(a, to_mat(xr, n, 1), b), 1e-14) << w;
      }
    }
  // The restricted choice was exercised; only the narrowest window (no room for any interchange
  // that spreads a column) ran out of pivots.
  EXPECT_GT(restricted, 0);
  EXPECT_EQ(zero_pivots, 0);
}

// A group that counts its barriers (one member; not the SerialGroup, so the cooperative paths run).
struct CountingGroup {
  int* count;
  int rank() const { return 0; }
  int size() const { return 1; }
  void sync() const { ++*count; }
};

TEST(Ldlt, BarrierCountsDependOnTheSizeAlone) {
  Rng rng(511);
  for (int n : {0, 1, 2, 9}) {
    // Data that takes 2x2 pivots, 1x1 pivots with and without interchanges: the same counts.
    for (int kind = 0; kind < 3; ++kind) {
      Mat a = kind == 0 ? Mat(Mat::Identity(n, n)) : random_symmetric(rng, n);
      if (kind == 2 && n > 1) a = kkt(rng, n - n / 2, n / 2, 0.0, 1);
      auto A = store_lower(a, std::max(n, 1));
      std::vector<int> piv(std::max(n, 1));
      std::vector<double> scratch(ldlt_scratch_size(n)), b(std::max(n, 1), 1.0);
      int count = 0;
      CountingGroup g{&count};
      ldlt_factor(g, n, A.data(), std::max(n, 1), piv.data(), scratch.data());
      EXPECT_EQ(count, 1 + 3 * n) << "n=" << n << " kind=" << kind;
      count = 0;
      ldlt_solve(g, n, 1, A.data(), std::max(n, 1), piv.data(), b.data(), std::max(n, 1));
      EXPECT_EQ(count, 2 * n + 3) << "n=" << n << " kind=" << kind;
      // The band forms (ldab = n + 1 holds everything).
      const int ldab = n + 1;
      std::vector<double> ab(static_cast<std::size_t>(std::max(n, 1)) * ldab, 0.0), sb(ldlt_band_scratch_size(n, ldab));
      for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) ab[(i - j) + static_cast<std::size_t>(j) * ldab] = a(i, j);
      count = 0;
      ldlt_band_factor(g, n, ab.data(), ldab, piv.data(), sb.data());
      EXPECT_EQ(count, 1 + 3 * n);
      count = 0;
      ldlt_band_solve(g, n, 1, ab.data(), ldab, piv.data(), b.data(), std::max(n, 1));
      EXPECT_EQ(count, 3 * n + 1);
    }
  }
}

TEST(Ldlt, SeveralSystemsPerGroupThroughSubGroups) {
  // for_each_system runs any primitive whose barrier count depends on the sizes alone.
  Rng rng(512);
  const int n = 7, batch = 9, ld = n;
  std::vector<double> A, B;
  for (int s = 0; s < batch; ++s) {
    const auto a = store_lower(s % 2 ? random_symmetric(rng, n) : kkt(rng, 5, 2, 0.0, 1), ld);
    A.insert(A.end(), a.begin(), a.end());
    const Vec b = rng.vector(n);
    B.insert(B.end(), b.data(), b.data() + n);
  }
  std::vector<double> A_ref = A, B_ref = B, s(ldlt_scratch_size(n));
  std::vector<int> piv_ref(n * batch);
  SerialGroup sg;
  for (int b = 0; b < batch; ++b) {
    ldlt_factor(sg, n, A_ref.data() + b * n * ld, ld, piv_ref.data() + b * n, s.data());
    ldlt_solve(sg, n, 1, A_ref.data() + b * n * ld, ld, piv_ref.data() + b * n, B_ref.data() + b * n, n);
  }
  for (int t : {2, 5, 7})
    for (int w : {1, 2, 3}) {
      std::vector<double> A2 = A, B2 = B, scratch(static_cast<std::size_t>(t) * ldlt_scratch_size(n));
      std::vector<int> piv(n * batch);
      run_threaded(t, [&](ThreadedGroup& g) {
        double* mine = scratch.data() + (g.rank() / w) * ldlt_scratch_size(n);  // one per sub-group
        for_each_system(g, w, batch, 1 + 3 * n + 2 * n + 3, [&](auto& sub, int b) {
          ldlt_factor(sub, n, A2.data() + b * n * ld, ld, piv.data() + b * n, mine);
          ldlt_solve(sub, n, 1, A2.data() + b * n * ld, ld, piv.data() + b * n, B2.data() + b * n, n);
        });
      });
      EXPECT_TRUE(bitwise_equal(A2, A_ref)) << "t=" << t << " w=" << w;
      EXPECT_TRUE(bitwise_equal(B2, B_ref)) << "t=" << t << " w=" << w;
      EXPECT_EQ(piv, piv_ref);
    }
}

TEST(Ldlt, StorageTooSmallForTheMatrixThrows) {
  std::vector<double> a(16, 1.0), s(12);
  std::vector<int> piv(4);
  SerialGroup g;
  EXPECT_THROW(ldlt_factor(g, 4, a.data(), 3, piv.data(), s.data()), std::invalid_argument);
  EXPECT_THROW(ldlt_solve(g, 4, 1, a.data(), 3, piv.data(), s.data(), 4), std::invalid_argument);
  EXPECT_THROW(ldlt_solve(g, 4, 1, a.data(), 4, piv.data(), s.data(), 2), std::invalid_argument);
  EXPECT_THROW(ldlt_band_factor(g, 4, a.data(), 0, piv.data(), s.data()), std::invalid_argument);
  // On real threads every member throws, and run_threaded hands the exception on.
  EXPECT_THROW(run_threaded(3, [&](ThreadedGroup& tg) { ldlt_factor(tg, 4, a.data(), 2, piv.data(), s.data()); }),
               std::invalid_argument);
}

TEST(Ldlt, EmptyMatrix) {
  std::vector<double> a = {7.0}, b = {3.0}, s(3);
  std::vector<int> piv = {-5};
  for (int t : groups_and_serial()) {
    const auto f = run_factor(t, a, 0, 3, [&](auto& g, double* p, int* pv, double* sc) { return ldlt_factor(g, 0, p, 1, pv, sc); });
    EXPECT_EQ(f.a, a);
    EXPECT_EQ(f.stats[0].npos + f.stats[0].nneg + f.stats[0].nzero, 0);
    EXPECT_EQ(run_solve(t, b, [&](auto& g, double* p) { ldlt_solve(g, 0, 1, a.data(), 1, piv.data(), p, 1); }), b);
  }
}

TEST(Ldlt, NegativeControlChecksRejectWrongAnswers) {
  Rng rng(510);
  const int n = 10;
  const Mat k = kkt(rng, 7, 3, 0.0, 2);
  const auto f = factor_dense(1, k, n);
  const Vec b = rng.vector(n);
  Vec x = solve_dense(1, f, n, n, b);
  ASSERT_LT(backward_error(k, x, b), 1e-13);
  x(4) *= 1.0 + 1e-9;
  EXPECT_GT(backward_error(k, x, b), 1e-13);
  // A factor entry a few million ulps off no longer reassembles the matrix.
  auto bad = f.a;
  bad[8 + 5 * n] *= 1.0 + 1e-9;
  EXPECT_GT((reassemble(bad, n, n, f.piv) - k).cwiseAbs().maxCoeff(), 1e-12);
  // A wrong inertia is told apart: flip the sign of one diagonal entry of H.
  Mat k2 = k;
  k2(1, 1) = -k2(1, 1) - 5.0;
  EXPECT_NE(of(factor_dense(1, k2, n).stats[0]), of(f.stats[0]));
  EXPECT_EQ(of(factor_dense(1, k2, n).stats[0]), eigen_inertia(k2));
  // An unwritten (NaN) solution entry fails the bound.
  Vec y = solve_dense(1, f, n, n, b);
  y(2) = kNaN;
  EXPECT_FALSE(backward_error(k, y, b) < 1e-13);
}

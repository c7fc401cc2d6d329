// kkt_ldlt (the banded LDL' of an OCP's KKT matrix in stage order) against the dense LDL' of the
// same matrix and against Eigen: solutions and inertia for horizons 1..64 and several sizes, a
// non-convex case, the assembled matrix and kkt_multiply against a hand-built dense KKT, group-size
// sweeps with bitwise comparison, perturbation signs, refinement, and negative controls.
#include <gtest/gtest.h>

#include <string>

#include "knot/linalg/kkt_ldlt.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

// A random OCP. Stage Hessians [Q_k S_k'; S_k R_k] = G G' with the rows and columns of every
// third state zeroed (unweighted states), plus 0.2 I on R_k: convex, Q_k PSD with zero weights,
// R_k PD. nonconvex subtracts 3 I from every Hessian block. A_k near identity, B_k random.
// `shape` holds the sizes and regularizations; view() points an OcpKkt at the data.
struct Ocp {
  std::vector<double> Q, R, S, A, B;
  OcpKkt<double> shape;
  OcpKkt<double> view() const {
    OcpKkt<double> d = shape;
    d.Q = Q.data();
    d.R = R.data();
    d.S = S.data();
    d.A = A.data();
    d.B = B.data();
    return d;
  }
};

Ocp random_ocp(Rng& rng, int N, int nx, int nu, bool initial, bool nonconvex = false) {
  Ocp o;
  const int m = nx + nu;
  for (int k = 0; k <= N; ++k) {
    const Mat g = rng.matrix(m, m);
    Mat h = g * g.transpose();
    for (int i = 0; i < nx; i += 3) {
      h.row(i).setZero();
      h.col(i).setZero();
    }
    h.bottomRightCorner(nu, nu) += 0.2 * Mat::Identity(nu, nu);
    if (nonconvex) h -= 3.0 * Mat::Identity(m, m);
    Mat q = h.topLeftCorner(nx, nx);
    if (k == 0 && !initial) q += Mat::Identity(nx, nx);  // a free x_0 needs weight of its own
    o.Q.insert(o.Q.end(), q.data(), q.data() + q.size());
    if (k == N) break;
    const Mat r = h.bottomRightCorner(nu, nu), s = h.bottomLeftCorner(nu, nx);
    const Mat a = Mat::Identity(nx, nx) + 0.2 * rng.matrix(nx, nx);
    const Mat b = rng.matrix(nx, nu);
    o.R.insert(o.R.end(), r.data(), r.data() + r.size());
    o.S.insert(o.S.end(), s.data(), s.data() + s.size());
    o.A.insert(o.A.end(), a.data(), a.data() + a.size());
    o.B.insert(o.B.end(), b.data(), b.data() + b.size());
  }
  o.shape.N = N;
  o.shape.nx = nx;
  o.shape.nu = nu;
  o.shape.initial_constraint = initial;
  return o;
}

// The KKT matrix built by hand from the blocks (independent of kkt_column).
Mat reference_kkt(const OcpKkt<double>& d) {
  const int n = d.size(), nx = d.nx, nu = d.nu;
  Mat k = Mat::Zero(n, n);
  auto block = [&](const double* p, int r, int c) { return Eigen::Map<const Mat>(p, r, c); };
  for (int s = 0; s <= d.N; ++s) {
    k.block(d.x(s), d.x(s), nx, nx) = block(d.Q + s * nx * nx, nx, nx) + d.reg_primal * Mat::Identity(nx, nx);
    if (s > 0 || d.initial_constraint) {
      k.block(d.lambda(s), d.lambda(s), nx, nx) = -d.reg_dual * Mat::Identity(nx, nx);
      k.block(d.x(s), d.lambda(s), nx, nx) = Mat::Identity(nx, nx);  // +I, below the diagonal
    }
    if (s < d.N) {
      k.block(d.u(s), d.u(s), nu, nu) = block(d.R + s * nu * nu, nu, nu) + d.reg_primal * Mat::Identity(nu, nu);
      k.block(d.u(s), d.x(s), nu, nx) = block(d.S + s * nu * nx, nu, nx);
      k.block(d.lambda(s + 1), d.x(s), nx, nx) = -block(d.A + s * nx * nx, nx, nx);
      k.block(d.lambda(s + 1), d.u(s), nx, nu) = -block(d.B + s * nx * nu, nx, nu);
    }
  }
  return k.selfadjointView<Eigen::Lower>();
}

struct Inertia {
  int pos = 0, neg = 0, zero = 0;
  bool operator==(const Inertia&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Inertia& i) { return os << "(" << i.pos << ", " << i.neg << ", " << i.zero << ")"; }
Inertia of(const LdltStats& s) { return {s.npos, s.nneg, s.nzero}; }
Inertia eigen_inertia(const Mat& a) {
  const Vec ev = Eigen::SelfAdjointEigenSolver<Mat>(a).eigenvalues();
  Inertia r;
  for (int i = 0; i < ev.size(); ++i) (ev(i) > 0 ? r.pos : ev(i) < 0 ? r.neg : r.zero)++;
  return r;
}

struct Banded {
  std::vector<double> ab;
  std::vector<int> piv;
  std::vector<LdltStats> stats;  // per member
  int ldab = 0;
};

// kkt_ldlt_factor on t threads (0: serial); outputs and scratch start poisoned.
Banded factor_banded(int t, const OcpKkt<double>& d, int ldab, const LdltOptions<double>& o = {}) {
  Banded f;
  f.ldab = ldab;
  const int n = d.size();
  f.ab = poisoned(static_cast<std::size_t>(kkt_band_size(d, ldab)) + 1);
  f.piv.assign(std::max(n, 1), -777);
  std::vector<double> scratch = poisoned(kkt_ldlt_scratch_size(d, ldab));
  auto body = [&](auto& g) { return kkt_ldlt_factor(g, d, f.ab.data(), ldab, f.piv.data(), scratch.data(), o); };
  if (t == 0) {
    SerialGroup g;
    f.stats = {body(g)};
  } else {
    f.stats.resize(t);
    run_threaded(t, [&](ThreadedGroup& g) { f.stats[g.rank()] = body(g); });
  }
  return f;
}

template <class Fn>
std::vector<double> run_on(int t, std::vector<double> v, Fn fn) {
  if (t == 0) {
    SerialGroup g;
    fn(g, v.data());
  } else {
    run_threaded(t, [&](ThreadedGroup& g) { fn(g, v.data()); });
  }
  return v;
}

Vec solve_banded(int t, const OcpKkt<double>& d, const Banded& f, const Vec& b) {
  const auto x = run_on(t, to_vec(b), [&](auto& g, double* p) { kkt_ldlt_solve(g, d, f.ab.data(), f.ldab, f.piv.data(), p); });
  return to_mat(x, d.size(), 1);
}

// Dense LDL' of the assembled KKT: its inertia and the solution of K x = b.
struct Dense {
  LdltStats stats;
  Vec x;
  Mat k;
  std::vector<int> piv;
};
Dense dense_ldlt(const OcpKkt<double>& d, const Vec& b) {
  SerialGroup g;
  const int n = d.size();
  Dense r;
  std::vector<double> a = poisoned(static_cast<std::size_t>(n) * n);
  kkt_assemble_dense(g, d, a.data(), n);
  r.k = Mat::Zero(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) r.k(i, j) = r.k(j, i) = a[i + static_cast<std::size_t>(j) * n];
  r.piv.resize(n);
  std::vector<double> scratch(ldlt_scratch_size(n));
  r.stats = ldlt_factor(g, n, a.data(), n, r.piv.data(), scratch.data());
  r.x = b;
  ldlt_solve(g, n, 1, a.data(), n, r.piv.data(), r.x.data(), n);
  return r;
}

double rel(const Vec& a, const Vec& b) { return a.allFinite() ? (a - b).norm() / b.norm() : kNaN; }

}  // namespace

TEST(KktLdlt, LayoutAndAssemblyMatchTheHandBuiltMatrix) {
  Rng rng(601);
  for (bool initial : {true, false})
    for (int N : {0, 1, 3}) {
      Ocp o = random_ocp(rng, N, 3, 2, initial);
      o.shape.reg_primal = 0.25;
      o.shape.reg_dual = 0.125;
      const OcpKkt<double> d = o.view();
      const int n = d.size();
      EXPECT_EQ(n, N * 8 + 3 + (initial ? 3 : 0));
      EXPECT_EQ(d.n_primal() + d.n_dual(), n);
      int duals = 0;
      for (int i = 0; i < n; ++i) duals += d.is_dual(i) ? 1 : 0;
      EXPECT_EQ(duals, d.n_dual());
      if (N >= 1) {
        EXPECT_EQ(d.x(0), initial ? 3 : 0);
        EXPECT_EQ(d.u(0), d.x(0) + 3);
        EXPECT_EQ(d.lambda(1), d.u(0) + 2);
        EXPECT_EQ(d.x(1), d.lambda(1) + 3);
        EXPECT_TRUE(d.is_dual(d.lambda(1)) && !d.is_dual(d.x(1)) && !d.is_dual(d.u(0)));
      }
      const Mat ref = reference_kkt(d);
      const Dense dn = dense_ldlt(d, Vec::Ones(n));
      EXPECT_EQ(dn.k, ref) << "N=" << N;
      // The band holds the same entries, and nothing past the half-bandwidth.
      const int ldab = kkt_min_ldab(d);
      std::vector<double> ab = poisoned(kkt_band_size(d, ldab));
      run_threaded(3, [&](ThreadedGroup& g) { kkt_assemble_band(g, d, ab.data(), ldab); });
      for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) {
          if (i - j < ldab) {
            EXPECT_EQ(ab[(i - j) + static_cast<std::size_t>(j) * ldab], ref(i, j)) << i << "," << j;
          } else {
            EXPECT_EQ(ref(i, j), 0.0) << i << "," << j;
          }
        }
      // kkt_multiply is K z, the same for every group size.
      const Vec z = rng.vector(n);
      const auto y_ref = run_on(1, std::vector<double>(n, kNaN), [&](auto& g, double* y) { kkt_multiply(g, d, z.data(), y); });
      EXPECT_LT((to_mat(y_ref, n, 1) - ref * z).cwiseAbs().maxCoeff(), 1e-13);
      for (int t : {0, 2, 7})
        EXPECT_TRUE(bitwise_equal(run_on(t, std::vector<double>(n, kNaN), [&](auto& g, double* y) { kkt_multiply(g, d, z.data(), y); }), y_ref));
    }
}

TEST(KktLdlt, BandedEqualsDenseForHorizons1To64) {
  Rng rng(602);
  int n2x2 = 0;
  for (int N = 1; N <= 64; ++N)
    for (bool initial : {true, false}) {
      // Both layouts up to N = 16, then they take turns (the dense reference is O(N^3)).
      if (N > 16 && initial != (N % 2 == 0)) continue;
      const Ocp o = random_ocp(rng, N, 3, 2, initial);
      const OcpKkt<double> d = o.view();
      const int n = d.size();
      const Vec b = rng.vector(n);
      const Dense dn = dense_ldlt(d, b);
      const Banded f = factor_banded(0, d, kkt_ldab(d));
      const Vec x = solve_banded(0, d, f, b);
      const std::string where = "N=" + std::to_string(N) + " initial=" + std::to_string(initial);
      EXPECT_LT(rel(x, dn.x), 1e-10) << where;
      EXPECT_EQ(of(f.stats[0]), of(dn.stats)) << where;
      // Convex with R PD: a minimum, inertia (n_primal, n_dual, 0).
      EXPECT_EQ(of(f.stats[0]), (Inertia{d.n_primal(), d.n_dual(), 0})) << where;
      EXPECT_EQ(f.stats[0].nrestricted, 0) << where;
      EXPECT_EQ(f.piv, dn.piv) << where;  // unrestricted, the band core takes the dense pivots
      n2x2 += f.stats[0].n2x2;
      EXPECT_LT((dn.k * x - b).norm() / (dn.k.norm() * x.norm() + b.norm()), 1e-14) << where;
      if (N % 9 == 1 && N < 30) {
        EXPECT_EQ(of(f.stats[0]), eigen_inertia(dn.k)) << where;
      }
    }
  EXPECT_GT(n2x2, 64);  // the zero diagonals of the multipliers call for 2x2 pivots
}

TEST(KktLdlt, OtherSizes) {
  Rng rng(603);
  struct Size {
    int nx, nu;
  };
  for (const Size& s : {Size{1, 1}, Size{2, 3}, Size{4, 1}, Size{6, 3}, Size{2, 0}, Size{7, 4}})
    for (bool initial : {true, false})
      for (int N : {1, 2, 7, 20}) {
        const Ocp o = random_ocp(rng, N, s.nx, s.nu, initial);
        const OcpKkt<double> d = o.view();
        const Vec b = rng.vector(d.size());
        const Dense dn = dense_ldlt(d, b);
        const Banded f = factor_banded(0, d, kkt_ldab(d));
        const Vec x = solve_banded(0, d, f, b);
        const std::string where = "nx=" + std::to_string(s.nx) + " nu=" + std::to_string(s.nu) +
                                  " N=" + std::to_string(N) + " initial=" + std::to_string(initial);
        EXPECT_LT(rel(x, dn.x), 1e-10) << where;
        EXPECT_EQ(of(f.stats[0]), of(dn.stats)) << where;
        if (d.size() <= 160) {
          EXPECT_EQ(of(f.stats[0]), eigen_inertia(dn.k)) << where;
        }
        EXPECT_EQ(f.stats[0].nrestricted, 0) << where;
      }
}

TEST(KktLdlt, NonConvexProblemsReportTheSameWrongInertia) {
  Rng rng(604);
  for (bool initial : {true, false})
    for (int N : {1, 4, 16, 25}) {
      // Draw until the reduced Hessian is indefinite (Eigen's inertia is not that of a minimum).
      Ocp o;
      Dense dn;
      Vec b;
      for (int draw = 0; draw < 20; ++draw) {
        o = random_ocp(rng, N, 4, 2, initial, /*nonconvex=*/true);
        b = rng.vector(o.view().size());
        dn = dense_ldlt(o.view(), b);
        if (eigen_inertia(dn.k).pos != o.view().n_primal()) break;
      }
      const OcpKkt<double> d = o.view();
      const Banded f = factor_banded(0, d, kkt_ldab(d));
      const std::string where = "N=" + std::to_string(N) + " initial=" + std::to_string(initial);
      EXPECT_NE(f.stats[0].npos, d.n_primal()) << where;  // not a minimum: the oracle says so
      EXPECT_EQ(of(f.stats[0]), of(dn.stats)) << where;
      EXPECT_EQ(f.stats[0].nrestricted, 0) << where;
      EXPECT_EQ(f.piv, dn.piv) << where;
      EXPECT_EQ(of(f.stats[0]), eigen_inertia(dn.k)) << where;
      EXPECT_LT(rel(solve_banded(0, d, f, b), dn.x), 1e-10) << where;
      // An inertia-correcting SQP adds reg_primal until the inertia is right; so can we.
      OcpKkt<double> fixed = d;
      fixed.reg_primal = 8.0;
      const Banded fr = factor_banded(0, fixed, kkt_ldab(fixed));
      EXPECT_EQ(of(fr.stats[0]), (Inertia{d.n_primal(), d.n_dual(), 0})) << where;
    }
}

TEST(KktLdlt, GroupSizeSweepIsBitwiseIdentical) {
  Rng rng(605);
  for (bool initial : {true, false}) {
    const Ocp o = random_ocp(rng, 5, 3, 2, initial, initial);
    const OcpKkt<double> d = o.view();
    const Vec b = rng.vector(d.size());
    const Banded ref = factor_banded(1, d, kkt_ldab(d));
    const Vec x_ref = solve_banded(1, d, ref, b);
    for (int t : {0, 1, 2, 3, 7, 32, 33}) {
      const Banded f = factor_banded(t, d, kkt_ldab(d));
      EXPECT_TRUE(bitwise_equal(f.ab, ref.ab)) << "t=" << t;
      EXPECT_TRUE(std::isnan(f.ab.back())) << "t=" << t;  // nothing written past the band
      EXPECT_EQ(f.piv, ref.piv) << "t=" << t;
      for (const auto& s : f.stats) EXPECT_EQ(of(s), of(ref.stats[0])) << "t=" << t;
      EXPECT_TRUE(bitwise_equal(to_vec(solve_banded(t, d, f, b)), to_vec(x_ref))) << "t=" << t;
    }
  }
}

TEST(KktLdlt, PerturbedPivotsTakeTheSignOfTheirRow) {
  Rng rng(606);
  // Static pivoting (threshold 0) with x_0 constrained: the first pivot is lambda_0's zero diagonal,
  // a dual row, so it becomes -delta; the factors are then those of a nearby matrix, and refinement
  // against the exact KKT recovers its solution.
  Ocp o = random_ocp(rng, 6, 3, 2, true);
  const OcpKkt<double> d = o.view();
  LdltOptions<double> opts;
  opts.threshold = 0.0;
  opts.tiny = 1e-12;
  opts.delta = 1e-8;
  const Banded f = factor_banded(2, d, kkt_ldab(d), opts);
  EXPECT_GT(f.stats[0].nperturbed, 0);
  EXPECT_EQ(f.ab[0], -opts.delta);  // AB(0, 0): D(0, 0)
  for (int k = 0; k < d.size(); ++k) EXPECT_EQ(f.piv[k], k);  // no interchanges
  for (int k = 0; k < d.size(); ++k) {
    const double dk = f.ab[static_cast<std::size_t>(k) * f.ldab];
    if (std::abs(dk) == opts.delta) {
      EXPECT_EQ(dk, d.is_dual(k) ? -opts.delta : opts.delta) << k;
    }
  }
  const Vec b = rng.vector(d.size());
  const Dense dn = dense_ldlt(d, b);
  const Vec x0 = solve_banded(0, d, f, b);
  const double r0 = (dn.k * x0 - b).cwiseAbs().maxCoeff();
  std::vector<double> scratch = poisoned(d.size());
  const auto x = run_on(3, to_vec(x0), [&](auto& g, double* p) {
    kkt_ldlt_refine(g, d, f.ab.data(), f.ldab, f.piv.data(), b.data(), p, 3, scratch.data());
  });
  const double r = (dn.k * to_mat(x, d.size(), 1) - b).cwiseAbs().maxCoeff();
  EXPECT_LT(r, r0 * 1e-3);
  EXPECT_LT(rel(to_mat(x, d.size(), 1), dn.x), 1e-10);

  // A singular KKT (control 0 has no weight and no effect): Bunch-Kaufman meets zero pivots on
  // primal rows, perturbed to +delta; the inertia reported is that of the perturbed matrix.
  Ocp s = random_ocp(rng, 4, 3, 2, true);
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 2; ++i) s.R[k * 4 + i * 2 + 0] = s.R[k * 4 + 0 * 2 + i] = 0.0;
    for (int i = 0; i < 3; ++i) s.B[k * 6 + i] = 0.0;
    for (int j = 0; j < 3; ++j) s.S[k * 6 + j * 2] = 0.0;
  }
  LdltOptions<double> ps;
  ps.tiny = 1e-12;
  ps.delta = 1e-6;
  const OcpKkt<double> sd = s.view();
  const Banded fs = factor_banded(0, sd, kkt_ldab(sd), ps);
  EXPECT_EQ(fs.stats[0].nperturbed, 4);
  EXPECT_EQ(of(fs.stats[0]), (Inertia{sd.n_primal(), sd.n_dual(), 0}));
  const Banded fz = factor_banded(0, sd, kkt_ldab(sd));  // no perturbation: four zero pivots
  EXPECT_EQ(fz.stats[0].nzero, 4);
  EXPECT_EQ(of(fz.stats[0]), (Inertia{sd.n_primal() - 4, sd.n_dual(), 4}));
}

TEST(KktLdlt, NarrowestWindowIsExactOrSaysSo) {
  Rng rng(607);
  // The least band that holds K leaves no room to interchange x_0 with lambda_0: the window
  // restricts the choice, and (here) a zero pivot results, which the statistics report.
  const Ocp o = random_ocp(rng, 6, 3, 2, true);
  const OcpKkt<double> od = o.view();
  const Banded f = factor_banded(0, od, kkt_min_ldab(od));
  EXPECT_GT(f.stats[0].nrestricted, 0);
  EXPECT_GT(f.stats[0].nzero, 0);
  // With a perturbation the factors are usable, and refinement recovers the solution.
  LdltOptions<double> p;
  p.tiny = 1e-12;
  p.delta = 1e-8;
  const Banded fp = factor_banded(0, od, kkt_min_ldab(od), p);
  EXPECT_EQ(fp.stats[0].nzero, 0);
  const Vec b = rng.vector(od.size());
  const Dense dn = dense_ldlt(od, b);
  std::vector<double> scratch(od.size());
  const auto x = run_on(0, to_vec(solve_banded(0, od, fp, b)), [&](auto& g, double* v) {
    kkt_ldlt_refine(g, od, fp.ab.data(), fp.ldab, fp.piv.data(), b.data(), v, 5, scratch.data());
  });
  EXPECT_LT(rel(to_mat(x, od.size(), 1), dn.x), 1e-10);
}

TEST(KktLdlt, BadSizesAndTooNarrowBandsThrow) {
  Rng rng(610);
  const Ocp o = random_ocp(rng, 3, 2, 1, true);
  OcpKkt<double> d = o.view();
  const int ldab = kkt_min_ldab(d) - 1;
  std::vector<double> ab(kkt_band_size(d, kkt_ldab(d))), scratch(kkt_ldlt_scratch_size(d, kkt_ldab(d)));
  std::vector<int> piv(d.size());
  SerialGroup g;
  EXPECT_THROW(kkt_ldlt_factor(g, d, ab.data(), ldab, piv.data(), scratch.data()), std::invalid_argument);
  EXPECT_THROW(kkt_assemble_band(g, d, ab.data(), ldab), std::invalid_argument);
  EXPECT_THROW(kkt_assemble_dense(g, d, ab.data(), d.size() - 1), std::invalid_argument);
  OcpKkt<double> bad = d;
  bad.A = nullptr;
  EXPECT_THROW(kkt_ldlt_factor(g, bad, ab.data(), kkt_ldab(d), piv.data(), scratch.data()), std::invalid_argument);
  bad = d;
  bad.nx = 0;
  EXPECT_THROW(kkt_ldlt_factor(g, bad, ab.data(), kkt_ldab(d), piv.data(), scratch.data()), std::invalid_argument);
  // The least band is accepted.
  EXPECT_NO_THROW(kkt_ldlt_factor(g, d, ab.data(), ldab + 1, piv.data(), scratch.data()));
}

// A group that counts its barriers (one member; not the SerialGroup).
struct CountingGroup {
  int* count;
  int rank() const { return 0; }
  int size() const { return 1; }
  void sync() const { ++*count; }
};

TEST(KktLdlt, BarrierCountsDependOnTheSizeAlone) {
  Rng rng(609);
  for (bool nonconvex : {false, true}) {
    const Ocp o = random_ocp(rng, 3, 2, 1, true, nonconvex);
    const OcpKkt<double> d = o.view();
    const int n = d.size(), ldab = kkt_ldab(d);
    std::vector<double> ab(kkt_band_size(d, ldab)), scratch(kkt_ldlt_scratch_size(d, ldab)), x(n, 1.0), y(n);
    std::vector<int> piv(n);
    int count = 0;
    CountingGroup g{&count};
    kkt_ldlt_factor(g, d, ab.data(), ldab, piv.data(), scratch.data());
    EXPECT_EQ(count, 1 + 3 * n);
    count = 0;
    kkt_ldlt_solve(g, d, ab.data(), ldab, piv.data(), x.data());
    EXPECT_EQ(count, 3 * n + 1);
    count = 0;
    kkt_multiply(g, d, x.data(), y.data());
    EXPECT_EQ(count, 1);
  }
}

TEST(KktLdlt, NegativeControlChecksRejectWrongAnswers) {
  Rng rng(608);
  const Ocp o = random_ocp(rng, 10, 3, 2, true);
  const OcpKkt<double> od = o.view();
  const Vec b = rng.vector(od.size());
  const Dense dn = dense_ldlt(od, b);
  const Banded f = factor_banded(0, od, kkt_ldab(od));
  Vec x = solve_banded(0, od, f, b);
  ASSERT_LT(rel(x, dn.x), 1e-10);
  x(17) += 1e-9 * x.norm();
  EXPECT_GT(rel(x, dn.x), 1e-10);
  // A sign error in the dynamics rows is caught by the comparison with the dense reference.
  Ocp w = o;
  for (double& a : w.A) a = -a;
  const OcpKkt<double> wd = w.view();
  const Banded fw = factor_banded(0, wd, kkt_ldab(wd));
  EXPECT_GT(rel(solve_banded(0, wd, fw, b), dn.x), 1e-10);
  // An unwritten (NaN) entry fails the check.
  Vec y = solve_banded(0, od, f, b);
  y(3) = kNaN;
  EXPECT_FALSE(rel(y, dn.x) < 1e-10);
}

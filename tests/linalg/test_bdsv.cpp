// bdsv: block Cholesky factor/solve against Eigen's dense LLT, factor layout, CHECK, group sweep.
#include <gtest/gtest.h>

#include <tuple>

#include "knot/linalg/bdsv.hpp"
#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

struct Case {
  int nb, bs;
};
const Case kCases[] = {{1, 1}, {1, 5}, {4, 1}, {3, 5}, {8, 7}, {5, 14}, {2, 33}};

struct Factored {
  std::vector<double> strips, v;
  int fail = 0;
};

Factored run_bdsv(int threads, const BlockTri& m, const std::vector<double>& b) {
  Factored out{m.strips, b, 0};
  std::vector<double> scratch = poisoned(bdsv_scratch_size(m.bs));
  run_threaded(threads, [&](ThreadedGroup& g) {
    bdsv<true>(g, m.nb, m.bs, out.strips.data(), out.v.data(), scratch.data(), &out.fail);
  });
  return out;
}

}  // namespace

TEST(Bdsv, SolvesLikeDenseLLT) {
  Rng rng(31);
  for (const auto& c : kCases) {
    const BlockTri m = random_spd_blocktri(rng, c.nb, c.bs);
    const Mat a = m.dense();
    const Vec b = rng.vector(c.nb * c.bs);
    const Vec want = a.llt().solve(b);
    const Factored r = run_bdsv(1, m, padded(b, c.bs));
    EXPECT_EQ(r.fail, 0);
    EXPECT_LT(rel_err(interior(r.v, c.nb, c.bs), want), 1e-12) << "nb=" << c.nb << " bs=" << c.bs;
    // Residual against the original matrix, scale-aware.
    const Vec x = interior(r.v, c.nb, c.bs);
    EXPECT_LT((a * x - b).lpNorm<Eigen::Infinity>() / (a.lpNorm<Eigen::Infinity>() * x.lpNorm<Eigen::Infinity>()), 1e-14);
    // Pads of v are left as they were (zero).
    for (int i = 0; i < c.bs; ++i) {
      EXPECT_EQ(r.v[i], 0.0);
      EXPECT_EQ(r.v[(c.nb + 1) * c.bs + i], 0.0);
    }
  }
}

TEST(Bdsv, FactorLayoutIsTheSeedsFAndE) {
  Rng rng(32);
  const int nb = 4, bs = 5;
  BlockTri m = random_spd_blocktri(rng, nb, bs);
  const BlockTri orig = m;
  std::vector<double> scratch = poisoned(bdsv_scratch_size(bs));
  SerialGroup g;
  bdsv_factor(g, nb, bs, m.strips.data(), scratch.data());
  // Reference recursion in Eigen: F_0 = chol(D_0), E_k = L_k F_{k-1}^-T, F_k = chol(D_k - E_k E_k').
  auto block = [&](const BlockTri& t, int k, int s) {
    Mat b(bs, bs);
    for (int y = 0; y < bs; ++y)
      for (int x = 0; x < bs; ++x) b(y, x) = const_cast<BlockTri&>(t).at(k, s, y, x);
    return b;
  };
  Mat f_prev;
  for (int k = 0; k < nb; ++k) {
    Mat d = block(orig, k, 1);
    if (k > 0) {
      const Mat e = f_prev.triangularView<Eigen::Lower>().solve(block(orig, k, 0).transpose()).transpose();
      EXPECT_LT(rel_err(block(m, k, 0), e), 1e-13) << "E_" << k;
      d -= e * e.transpose();
    }
    const Mat f = d.llt().matrixL();
    const Mat got = block(m, k, 1);
    for (int y = 0; y < bs; ++y)
      for (int x = 0; x < bs; ++x) {
        if (x <= y) {
          EXPECT_NEAR(got(y, x), f(y, x), 1e-12) << "F_" << k;
        } else {
          EXPECT_EQ(got(y, x), block(orig, k, 1)(y, x)) << "upper triangle keeps D_" << k;
        }
      }
    f_prev = f;
    // RIGHT slots are never written.
    EXPECT_TRUE(bitwise_equal(to_vec(block(m, k, 2)), to_vec(block(orig, k, 2))));
  }
}

TEST(Bdsv, FactorOnceSolveTwoRightHandSides) {
  Rng rng(33);
  const int nb = 6, bs = 4;
  BlockTri m = random_spd_blocktri(rng, nb, bs);
  const Mat a = m.dense();
  std::vector<double> scratch(bdsv_scratch_size(bs));
  SerialGroup g;
  bdsv_factor(g, nb, bs, m.strips.data(), scratch.data());
  for (int rhs = 0; rhs < 2; ++rhs) {
    const Vec b = rng.vector(nb * bs);
    auto v = padded(b, bs);
    bdsv_solve(g, nb, bs, m.strips.data(), v.data(), scratch.data());
    EXPECT_LT(rel_err(interior(v, nb, bs), a.llt().solve(b)), 1e-12);
  }
}

TEST(Bdsv, BitwiseIdenticalForEveryGroupSize) {
  Rng rng(34);
  for (const auto& c : {Case{5, 7}, Case{3, 14}, Case{1, 1}}) {
    const BlockTri m = random_spd_blocktri(rng, c.nb, c.bs);
    const auto b = padded(rng.vector(c.nb * c.bs), c.bs);
    const Factored ref = run_bdsv(1, m, b);
    for (int t : kGroupSizes) {
      const Factored r = run_bdsv(t, m, b);
      EXPECT_TRUE(bitwise_equal(r.strips, ref.strips)) << "t=" << t;
      EXPECT_TRUE(bitwise_equal(r.v, ref.v)) << "t=" << t;
    }
  }
}

TEST(Bdsv, SerialDispatchToFixedSizeMatchesTheGeneralPathBitwise) {
  // A SerialGroup with a run-time bs in [1, 16] runs the compile-time-size kernels; a one-member
  // ThreadedGroup runs the general ones. Same operations in the same order: the same bits.
  Rng rng(40);
  for (int bs : {1, 2, 5, 14, 16, 17}) {
    const BlockTri m = random_spd_blocktri(rng, 4, bs);
    const auto b = padded(rng.vector(4 * bs), bs);
    const Factored general = run_bdsv(1, m, b);
    auto strips = m.strips, v = b;
    SerialGroup g;
    bdsv(g, 4, bs, strips.data(), v.data());
    EXPECT_TRUE(bitwise_equal(strips, general.strips)) << "bs=" << bs;
    EXPECT_TRUE(bitwise_equal(v, general.v)) << "bs=" << bs;
  }
}

TEST(Bdsv, CompileTimeBlockSizeMatchesRuntime) {
  Rng rng(35);
  const BlockTri m = random_spd_blocktri(rng, 6, 7);
  const auto b = padded(rng.vector(42), 7);
  auto s1 = m.strips, s2 = m.strips, v1 = b, v2 = b;
  std::vector<double> scratch(bdsv_scratch_size(7));
  SerialGroup g;
  bdsv<false, 7>(g, 6, 7, s1.data(), v1.data(), scratch.data());
  bdsv(g, 6, 7, s2.data(), v2.data(), scratch.data());
  EXPECT_TRUE(bitwise_equal(v1, v2));
  EXPECT_TRUE(bitwise_equal(s1, s2));
}

TEST(Bdsv, CheckFlagsNonSpdAndNonFinite) {
  Rng rng(36);
  // Indefinite: a negative diagonal entry deep in the chain.
  BlockTri m = random_spd_blocktri(rng, 5, 3);
  m.at(3, 1, 1, 1) = -1e3;
  Factored r = run_bdsv(3, m, padded(rng.vector(15), 3));
  EXPECT_EQ(r.fail, 1);
  // NaN in an off-diagonal block propagates into a later pivot and is flagged too.
  BlockTri n = random_spd_blocktri(rng, 5, 3);
  n.at(2, 0, 0, 1) = kNaN;
  r = run_bdsv(7, n, padded(rng.vector(15), 3));
  EXPECT_EQ(r.fail, 1);
  // Negative control: the same call on an SPD matrix does not flag.
  r = run_bdsv(7, random_spd_blocktri(rng, 5, 3), padded(rng.vector(15), 3));
  EXPECT_EQ(r.fail, 0);
}

TEST(Bdsv, NegativeControlWrongAnswerIsRejected) {
  Rng rng(37);
  const BlockTri m = random_spd_blocktri(rng, 4, 3);
  const Vec b = rng.vector(12);
  Factored r = run_bdsv(1, m, padded(b, 3));
  Vec x = interior(r.v, 4, 3);
  x(5) *= 1.0 + 1e-9;
  EXPECT_GT(rel_err(x, m.dense().llt().solve(b)), 1e-12);
}

TEST(Bdsv, AgreesWithPcgToPcgTolerance) {
  Rng rng(38);
  const int nb = 16, bs = 6;
  const BlockTri m = random_spd_blocktri(rng, nb, bs);
  const Vec b = rng.vector(nb * bs);
  const Factored direct = run_bdsv(1, m, padded(b, bs));
  std::vector<double> pinv(m.strips.size()), pscratch(precond_scratch_size(bs)), scratch(pcg_scratch_size(nb, bs));
  auto gamma = padded(b, bs);
  std::vector<double> x(gamma.size(), 0.0);
  SerialGroup g;
  ASSERT_EQ(precond_block_jacobi(g, nb, bs, m.strips.data(), pinv.data(), pscratch.data()), 0);
  PcgOptions<double> opt;
  opt.rel_tol = 1e-24;  // on eta = r'z: a residual reduction of about 1e-12
  opt.max_iters = 500;
  const PcgResult res = pcg(g, nb, bs, m.strips.data(), pinv.data(), gamma.data(), x.data(), scratch.data(), opt);
  ASSERT_TRUE(res.converged);
  EXPECT_LT(rel_err(interior(x, nb, bs), interior(direct.v, nb, bs)), 1e-9);
}

TEST(Bdsv, EmptyDoesNothing) {
  std::vector<double> strips(1, 3.0), v(1, 4.0), s(1);
  int fail = 0;
  run_threaded(2, [&](ThreadedGroup& g) { bdsv<true>(g, 0, 3, strips.data(), v.data(), s.data(), &fail); });
  EXPECT_EQ(strips[0], 3.0);
  EXPECT_EQ(v[0], 4.0);
  EXPECT_EQ(fail, 0);
}

TEST(Bdsv, BadArgumentsAreReportedAndTouchNothing) {
  Rng rng(39);
  const BlockTri m = random_spd_blocktri(rng, 3, 2);
  auto strips = m.strips;
  auto v = padded(rng.vector(6), 2);
  const auto v0 = v;
  for (auto [nb, bs, a] : {std::tuple{-1, 2, strips.data()}, {3, -2, strips.data()}, {3, 2, (double*)nullptr}}) {
    int fail = 0;
    run_threaded(3, [&](ThreadedGroup& g) { bdsv<true>(g, nb, bs, a, v.data(), (double*)nullptr, &fail); });
    EXPECT_EQ(fail, 1) << nb << " " << bs;
    EXPECT_TRUE(bitwise_equal(strips, m.strips));
    EXPECT_TRUE(bitwise_equal(v, v0));
  }
  // A missing right-hand side is reported too, before anything is factored.
  int fail = 0;
  SerialGroup g;
  bdsv<true>(g, 3, 2, strips.data(), (double*)nullptr, (double*)nullptr, &fail);
  EXPECT_EQ(fail, 1);
  EXPECT_TRUE(bitwise_equal(strips, m.strips));
}

// pcg: convergence to the dense solution, preconditioner benefit, warm start, NaN handling,
// stopping rules and the group-size sweep.
#include <gtest/gtest.h>

#include <cstdio>

#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

enum class Pre { None, Jacobi, Stair };

struct Solve {
  std::vector<double> x;
  PcgResult res;
};

Solve run_pcg(int threads, const BlockTri& s, Pre pre, const std::vector<double>& gamma, std::vector<double> x0,
              const PcgOptions<double>& opt) {
  std::vector<double> pinv(s.strips.size()), pscratch(precond_scratch_size(s.bs));
  std::vector<double> scratch = poisoned(pcg_scratch_size(s.nb, s.bs));
  std::vector<PcgResult> per_rank(threads);
  run_threaded(threads, [&](ThreadedGroup& g) {
    const double* p = nullptr;
    if (pre != Pre::None) {
      const int info = pre == Pre::Jacobi ? precond_block_jacobi(g, s.nb, s.bs, s.strips.data(), pinv.data(), pscratch.data())
                                          : precond_stair(g, s.nb, s.bs, s.strips.data(), pinv.data(), pscratch.data());
      if (info != 0) throw std::runtime_error("preconditioner failed");
      p = pinv.data();
    }
    per_rank[g.rank()] = pcg(g, s.nb, s.bs, s.strips.data(), p, gamma.data(), x0.data(), scratch.data(), opt);
  });
  for (const auto& r : per_rank) {
    EXPECT_EQ(r.iterations, per_rank[0].iterations);
    EXPECT_EQ(r.converged, per_rank[0].converged);
  }
  return {x0, per_rank[0]};
}

PcgOptions<double> tight() {
  PcgOptions<double> o;
  o.rel_tol = 1e-26;
  o.max_iters = 1000;
  return o;
}

// Block-scaled SPD matrix Sigma S0 Sigma: the block scales span 2 decades (4 in S), so plain CG
// struggles and both block preconditioners undo the scaling.
BlockTri ill_conditioned(Rng& rng, int nb, int bs) {
  BlockTri s = random_spd_blocktri(rng, nb, bs);
  std::vector<double> scale(nb);
  for (int k = 0; k < nb; ++k) scale[k] = std::pow(10.0, 1.0 * std::sin(1.3 * k));
  for (int k = 0; k < nb; ++k)
    for (int y = 0; y < bs; ++y)
      for (int x = 0; x < bs; ++x) {
        s.at(k, 1, y, x) *= scale[k] * scale[k];
        if (k > 0) s.at(k, 0, y, x) *= scale[k] * scale[k - 1];
        if (k + 1 < nb) s.at(k, 2, y, x) *= scale[k] * scale[k + 1];
      }
  return s;
}

}  // namespace

TEST(Pcg, ConvergesToDenseSolutionWithEveryPreconditioner) {
  Rng rng(51);
  for (auto [nb, bs] : {std::pair{1, 1}, {1, 6}, {7, 1}, {12, 5}, {6, 14}}) {
    const BlockTri s = random_spd_blocktri(rng, nb, bs);
    const Vec b = rng.vector(nb * bs);
    const Vec want = s.dense().llt().solve(b);
    for (Pre pre : {Pre::None, Pre::Jacobi, Pre::Stair}) {
      const Solve r = run_pcg(1, s, pre, padded(b, bs), std::vector<double>(padded_size(nb, bs), 0.0), tight());
      EXPECT_TRUE(r.res.converged);
      EXPECT_LE(r.res.iterations, nb * bs + 5);
      EXPECT_LT(rel_err(interior(r.x, nb, bs), want), 1e-10) << "nb=" << nb << " bs=" << bs << " pre=" << int(pre);
    }
  }
}

TEST(Pcg, PreconditionersCutIterationsOnAnIllConditionedMatrix) {
  Rng rng(52);
  const int nb = 32, bs = 6;
  const BlockTri s = ill_conditioned(rng, nb, bs);
  const Vec b = rng.vector(nb * bs);
  const Vec want = s.dense().llt().solve(b);
  PcgOptions<double> opt = tight();
  opt.rel_tol = 1e-20;
  opt.max_iters = 5000;
  int iters[3];
  for (Pre pre : {Pre::None, Pre::Jacobi, Pre::Stair}) {
    const Solve r = run_pcg(1, s, pre, padded(b, bs), std::vector<double>(padded_size(nb, bs), 0.0), opt);
    iters[int(pre)] = r.res.iterations;
    EXPECT_TRUE(r.res.converged) << int(pre);
    EXPECT_LT(rel_err(interior(r.x, nb, bs), want), 1e-6) << int(pre);
  }
  std::printf("pcg iterations on a block-scaled matrix (nb=%d, bs=%d): none %d, block-Jacobi %d, stair %d\n", nb, bs,
              iters[0], iters[1], iters[2]);
  EXPECT_LT(iters[1], iters[0]);
  EXPECT_LT(iters[2], iters[0]);
}

TEST(Pcg, WarmStartFromTheExactSolutionTakesZeroIterations) {
  Rng rng(53);
  const int nb = 5, bs = 4;
  const BlockTri s = random_spd_blocktri(rng, nb, bs);
  const auto xstar = padded(rng.vector(nb * bs), bs);
  // gamma = S x* by the same bdmv pcg uses, so the residual at x* is exactly zero.
  std::vector<double> gamma(xstar.size(), 0.0);
  SerialGroup g;
  bdmv(g, nb, bs, gamma.data(), s.strips.data(), xstar.data());
  for (PcgStop stop : {PcgStop::Relative, PcgStop::Absolute}) {
    PcgOptions<double> opt;
    opt.stop = stop;
    const Solve r = run_pcg(3, s, Pre::Stair, gamma, xstar, opt);
    EXPECT_TRUE(r.res.converged);
    EXPECT_EQ(r.res.iterations, 0);
    EXPECT_TRUE(bitwise_equal(r.x, xstar));
  }
  // Within an absolute tolerance, a solution perturbed at rounding level also returns at once.
  auto near = xstar;
  near[bs + 2] += 1e-15;
  PcgOptions<double> opt;
  opt.stop = PcgStop::Absolute;
  opt.abs_tol = 1e-20;
  EXPECT_EQ(run_pcg(1, s, Pre::Jacobi, gamma, near, opt).res.iterations, 0);
}

TEST(Pcg, AbsoluteRuleStopsOnEtaBelowEpsilon) {
  Rng rng(54);
  const int nb = 10, bs = 3;
  const BlockTri s = random_spd_blocktri(rng, nb, bs);
  const Vec b = rng.vector(nb * bs);
  PcgOptions<double> loose, strict;
  loose.stop = strict.stop = PcgStop::Absolute;
  loose.abs_tol = 1e-4;
  strict.abs_tol = 1e-24;
  loose.max_iters = strict.max_iters = 500;
  const auto zero = std::vector<double>(padded_size(nb, bs), 0.0);
  const Solve a = run_pcg(1, s, Pre::Jacobi, padded(b, bs), zero, loose);
  const Solve c = run_pcg(1, s, Pre::Jacobi, padded(b, bs), zero, strict);
  EXPECT_TRUE(a.res.converged);
  EXPECT_TRUE(c.res.converged);
  EXPECT_LT(a.res.iterations, c.res.iterations);
  EXPECT_LT(rel_err(interior(c.x, nb, bs), s.dense().llt().solve(b)), 1e-9);
}

TEST(Pcg, NaNInRightHandSideEndsNotConvergedWithinMaxIters) {
  Rng rng(55);
  const int nb = 6, bs = 3;
  const BlockTri s = random_spd_blocktri(rng, nb, bs);
  Vec b = rng.vector(nb * bs);
  b(7) = kNaN;
  PcgOptions<double> opt;
  opt.max_iters = 40;
  for (Pre pre : {Pre::None, Pre::Stair}) {
    const Solve r = run_pcg(2, s, pre, padded(b, bs), std::vector<double>(padded_size(nb, bs), 0.0), opt);
    EXPECT_FALSE(r.res.converged);
    EXPECT_LE(r.res.iterations, opt.max_iters);
  }
}

TEST(Pcg, NonSpdMatrixIsNotConverged) {
  Rng rng(56);
  BlockTri s = random_spd_blocktri(rng, 4, 3);
  for (double& v : s.strips) v = -v;  // negative definite
  const Solve r = run_pcg(1, s, Pre::None, padded(rng.vector(12), 3), std::vector<double>(padded_size(4, 3), 0.0), tight());
  EXPECT_FALSE(r.res.converged);
}

TEST(Pcg, BitwiseIdenticalForEveryGroupSize) {
  Rng rng(57);
  const BlockTri s = random_spd_blocktri(rng, 9, 5);
  const auto gamma = padded(rng.vector(45), 5);
  const auto x0 = padded(rng.vector(45), 5);  // a non-trivial warm start
  for (Pre pre : {Pre::None, Pre::Jacobi, Pre::Stair}) {
    const Solve ref = run_pcg(1, s, pre, gamma, x0, tight());
    for (int t : kGroupSizes) {
      const Solve r = run_pcg(t, s, pre, gamma, x0, tight());
      EXPECT_EQ(r.res.iterations, ref.res.iterations);
      EXPECT_TRUE(bitwise_equal(r.x, ref.x)) << "t=" << t;
    }
  }
}

TEST(Pcg, NegativeControlTooFewIterationsFailsTheCheck) {
  Rng rng(58);
  const BlockTri s = random_spd_blocktri(rng, 12, 5);
  const Vec b = rng.vector(60);
  PcgOptions<double> opt = tight();
  opt.max_iters = 2;
  const Solve r = run_pcg(1, s, Pre::None, padded(b, 5), std::vector<double>(padded_size(12, 5), 0.0), opt);
  EXPECT_FALSE(r.res.converged);
  EXPECT_EQ(r.res.iterations, 2);
  EXPECT_GT(rel_err(interior(r.x, 12, 5), s.dense().llt().solve(b)), 1e-6);
}

TEST(Pcg, BadArgumentsAreNotConvergedAndTouchNothing) {
  Rng rng(59);
  const BlockTri s = random_spd_blocktri(rng, 3, 2);
  const auto gamma = padded(rng.vector(6), 2);
  std::vector<double> x(gamma.size(), 0.0), scratch(pcg_scratch_size(3, 2));
  SerialGroup g;
  PcgOptions<double> opt;
  EXPECT_FALSE(pcg(g, -1, 2, s.strips.data(), nullptr, gamma.data(), x.data(), scratch.data(), opt).converged);
  EXPECT_FALSE(pcg(g, 3, 2, s.strips.data(), nullptr, gamma.data(), x.data(), (double*)nullptr, opt).converged);
  EXPECT_EQ(x, std::vector<double>(gamma.size(), 0.0));
  const PcgResult empty = pcg(g, 0, 2, s.strips.data(), nullptr, gamma.data(), x.data(), scratch.data(), opt);
  EXPECT_TRUE(empty.converged);
  EXPECT_EQ(empty.iterations, 0);
}

// The stop predicate ends the loop before the iteration it is asked about: stopping before
// iteration 4 leaves bitwise the iterate of max_iters = 3, on every group size (every member gets
// the same answer from the predicate, so all take the branch together).
TEST(Pcg, StopPredicateEndsBeforeItsIterationBitwise) {
  Rng rng(60);
  const BlockTri s = random_spd_blocktri(rng, 12, 5);
  const auto gamma = padded(rng.vector(60), 5);
  const std::vector<double> x0(padded_size(12, 5), 0.0);
  PcgOptions<double> three = tight();
  three.max_iters = 3;
  const Solve ref = run_pcg(1, s, Pre::Stair, gamma, x0, three);
  ASSERT_FALSE(ref.res.converged);
  for (int t : kGroupSizes) {
    std::vector<double> pinv(s.strips.size()), pscratch(precond_scratch_size(s.bs));
    std::vector<double> scratch = poisoned(pcg_scratch_size(s.nb, s.bs)), x = x0;
    std::vector<PcgResult> per_rank(static_cast<std::size_t>(t));
    std::vector<int> asked(static_cast<std::size_t>(t), 0);
    run_threaded(t, [&](ThreadedGroup& g) {
      EXPECT_EQ(precond_stair(g, s.nb, s.bs, s.strips.data(), pinv.data(), pscratch.data()), 0);
      int& last = asked[static_cast<std::size_t>(g.rank())];
      per_rank[static_cast<std::size_t>(g.rank())] =
          pcg(g, s.nb, s.bs, s.strips.data(), pinv.data(), gamma.data(), x.data(), scratch.data(), tight(),
              [&last](int it) {
                last = it;
                return it == 4;
              });
    });
    for (int r = 0; r < t; ++r) {
      EXPECT_TRUE(per_rank[static_cast<std::size_t>(r)].stopped);
      EXPECT_FALSE(per_rank[static_cast<std::size_t>(r)].converged);
      EXPECT_EQ(per_rank[static_cast<std::size_t>(r)].iterations, 3);
      EXPECT_EQ(asked[static_cast<std::size_t>(r)], 4);  // asked once per iteration, and not after stopping
    }
    EXPECT_TRUE(bitwise_equal(x, ref.x)) << "t=" << t;
  }
  // Negative control: a predicate that never fires leaves the iteration to converge, not stopped.
  std::vector<double> x = x0;
  std::vector<double> pinv(s.strips.size()), pscratch(precond_scratch_size(s.bs)), scratch(pcg_scratch_size(12, 5));
  SerialGroup g;
  ASSERT_EQ(precond_stair(g, s.nb, s.bs, s.strips.data(), pinv.data(), pscratch.data()), 0);
  const PcgResult full = pcg(g, s.nb, s.bs, s.strips.data(), pinv.data(), gamma.data(), x.data(), scratch.data(),
                             tight(), [](int) { return false; });
  EXPECT_TRUE(full.converged);
  EXPECT_FALSE(full.stopped);
  EXPECT_GT(full.iterations, 3);
  EXPECT_FALSE(bitwise_equal(x, ref.x));
}

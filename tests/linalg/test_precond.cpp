// Preconditioner builders against the dense formulas D^-1 and D^-1 - D^-1 O D^-1.
#include <gtest/gtest.h>

#include "knot/linalg/precond.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

enum class Kind { Jacobi, Stair };

struct Built {
  std::vector<double> pinv;
  int info = -1;
};

Built build(Kind kind, int threads, const BlockTri& s) {
  Built b{poisoned(s.strips.size()), -1};
  std::vector<double> scratch = poisoned(precond_scratch_size(s.bs));
  std::vector<int> infos(threads, -1);
  run_threaded(threads, [&](ThreadedGroup& g) {
    infos[g.rank()] = kind == Kind::Jacobi ? precond_block_jacobi(g, s.nb, s.bs, s.strips.data(), b.pinv.data(), scratch.data())
                                           : precond_stair(g, s.nb, s.bs, s.strips.data(), b.pinv.data(), scratch.data());
  });
  for (int i : infos) EXPECT_EQ(i, infos[0]) << "every member returns the same verdict";
  b.info = infos[0];
  return b;
}

// Dense reference: Dinv = blockdiag(D_k^-1); stair = Dinv - Dinv O Dinv.
Mat reference(Kind kind, const BlockTri& s) {
  const Mat a = s.dense();
  const int n = s.nb * s.bs;
  Mat dinv = Mat::Zero(n, n);
  for (int k = 0; k < s.nb; ++k) dinv.block(k * s.bs, k * s.bs, s.bs, s.bs) = a.block(k * s.bs, k * s.bs, s.bs, s.bs).inverse();
  if (kind == Kind::Jacobi) return dinv;
  Mat o = a;
  for (int k = 0; k < s.nb; ++k) o.block(k * s.bs, k * s.bs, s.bs, s.bs).setZero();
  return dinv - dinv * o * dinv;
}

}  // namespace

TEST(Precond, MatchesDenseFormulasAndIsExactlySymmetric) {
  Rng rng(41);
  for (auto [nb, bs] : {std::pair{1, 1}, {1, 4}, {5, 1}, {6, 5}, {4, 14}}) {
    const BlockTri s = random_spd_blocktri(rng, nb, bs);
    for (Kind kind : {Kind::Jacobi, Kind::Stair}) {
      const Built b = build(kind, 1, s);
      ASSERT_EQ(b.info, 0);
      BlockTri p{nb, bs, b.pinv};
      // Every element of every slot written (no NaN left), the edges' absent blocks zero.
      for (double v : b.pinv) ASSERT_FALSE(std::isnan(v));
      const Mat got = p.dense();
      EXPECT_LT(rel_err(got, reference(kind, s)), 1e-13) << "nb=" << nb << " bs=" << bs;
      EXPECT_TRUE(bitwise_equal(to_vec(got), to_vec(Mat(got.transpose()))));
    }
  }
}

TEST(Precond, BitwiseIdenticalForEveryGroupSize) {
  Rng rng(42);
  const BlockTri s = random_spd_blocktri(rng, 5, 7);
  for (Kind kind : {Kind::Jacobi, Kind::Stair}) {
    const Built ref = build(kind, 1, s);
    for (int t : kGroupSizes) EXPECT_TRUE(bitwise_equal(build(kind, t, s).pinv, ref.pinv)) << "t=" << t;
  }
}

TEST(Precond, NonSpdDiagonalBlockIsReported) {
  Rng rng(43);
  BlockTri s = random_spd_blocktri(rng, 4, 3);
  s.at(2, 1, 0, 0) = -50.0;
  EXPECT_EQ(build(Kind::Jacobi, 3, s).info, 3);
  EXPECT_EQ(build(Kind::Stair, 2, s).info, 3);
}

TEST(Precond, NegativeControlSwappedOffDiagonalIsCaught) {
  Rng rng(44);
  const BlockTri s = random_spd_blocktri(rng, 3, 4);
  Built b = build(Kind::Stair, 1, s);
  BlockTri p{3, 4, b.pinv};
  // Transposing RIGHT_0 in place (as a wrong transpose flag would) must be detected.
  for (int y = 0; y < 4; ++y)
    for (int x = y + 1; x < 4; ++x) std::swap(p.at(0, 2, y, x), p.at(0, 2, x, y));
  EXPECT_GT(rel_err(p.dense(), reference(Kind::Stair, s)), 1e-6);
}

TEST(Precond, BadArgumentsReturnMinusOneAndEmptyReturnsZero) {
  Rng rng(45);
  const BlockTri s = random_spd_blocktri(rng, 2, 3);
  std::vector<double> pinv(s.strips.size(), 9.0), scratch(precond_scratch_size(3));
  SerialGroup g;
  EXPECT_EQ(precond_block_jacobi(g, 2, 3, s.strips.data(), pinv.data(), (double*)nullptr), -1);
  EXPECT_EQ(precond_stair(g, -2, 3, s.strips.data(), pinv.data(), scratch.data()), -1);
  EXPECT_EQ(pinv, std::vector<double>(s.strips.size(), 9.0));
  EXPECT_EQ(precond_stair(g, 0, 3, s.strips.data(), pinv.data(), scratch.data()), 0);
}

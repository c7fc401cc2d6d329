// bdmv against the dense Eigen product, with NaN-poisoned outputs and a group-size sweep.
#include <gtest/gtest.h>

#include "knot/linalg/bdmv.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

struct Case {
  int nb, bs;
};
const Case kCases[] = {{1, 1}, {1, 5}, {3, 1}, {4, 5}, {6, 14}, {9, 3}};

std::vector<double> run_bdmv(int threads, const BlockTri& m, const std::vector<double>& v) {
  auto out = poisoned(v.size());
  run_threaded(threads, [&](ThreadedGroup& g) { bdmv(g, m.nb, m.bs, out.data(), m.strips.data(), v.data()); });
  return out;
}

}  // namespace

TEST(Bdmv, MatchesDenseProductForEveryGroupSize) {
  Rng rng(11);
  for (const auto& c : kCases) {
    const BlockTri m = random_blocktri(rng, c.nb, c.bs);
    const Vec x = rng.vector(c.nb * c.bs);
    const auto v = padded(x, c.bs);
    const Vec want = m.dense() * x;
    const auto ref = run_bdmv(1, m, v);
    EXPECT_LT(rel_err(interior(ref, c.nb, c.bs), want), 1e-14) << "nb=" << c.nb << " bs=" << c.bs;
    // Pads of the output are not written: still NaN.
    for (int i = 0; i < c.bs; ++i) {
      EXPECT_TRUE(std::isnan(ref[i]));
      EXPECT_TRUE(std::isnan(ref[(c.nb + 1) * c.bs + i]));
    }
    for (int t : kGroupSizes) EXPECT_TRUE(bitwise_equal(run_bdmv(t, m, v), ref)) << "t=" << t;
  }
}

TEST(Bdmv, DualOutputWritesTheSameValuesTwice) {
  Rng rng(12);
  const BlockTri m = random_blocktri(rng, 5, 4);
  const auto v = padded(rng.vector(20), 4);
  const auto single = run_bdmv(1, m, v);
  for (int t : kGroupSizes) {
    auto o1 = poisoned(v.size()), o2 = poisoned(v.size());
    run_threaded(t, [&](ThreadedGroup& g) { bdmv(g, m.nb, m.bs, o1.data(), o2.data(), m.strips.data(), v.data()); });
    EXPECT_TRUE(bitwise_equal(o1, single));
    EXPECT_TRUE(bitwise_equal(o2, single));
  }
}

TEST(Bdmv, CompileTimeBlockSizeMatchesRuntime) {
  Rng rng(13);
  const BlockTri m = random_blocktri(rng, 4, 7);
  const auto v = padded(rng.vector(28), 7);
  auto a = poisoned(v.size()), b = poisoned(v.size());
  SerialGroup g;
  bdmv<7>(g, 4, 7, a.data(), m.strips.data(), v.data());
  bdmv(g, 4, 7, b.data(), m.strips.data(), v.data());
  EXPECT_TRUE(bitwise_equal(a, b));
}

TEST(Bdmv, NegativeControlSwappedLeftAndRightIsCaught) {
  Rng rng(14);
  BlockTri m = random_blocktri(rng, 4, 3);
  const Vec x = rng.vector(12);
  const Vec want = m.dense() * x;
  // Swap L and R in the strips: a matvec that confused the slots would produce this.
  BlockTri swapped = m;
  for (int br = 0; br < m.nb; ++br)
    for (int y = 0; y < m.bs; ++y)
      for (int c = 0; c < m.bs; ++c) std::swap(swapped.at(br, 0, y, c), swapped.at(br, 2, y, c));
  const auto out = run_bdmv(1, swapped, padded(x, 3));
  EXPECT_GT(rel_err(interior(out, 4, 3), want), 1e-3);
}

TEST(Bdmv, EmptyMatrixWritesNothing) {
  std::vector<double> out(4, 5.0), v(4, 1.0), a(1, 1.0);
  run_threaded(2, [&](ThreadedGroup& g) { bdmv(g, 0, 2, out.data(), a.data(), v.data()); });
  EXPECT_EQ(out, std::vector<double>(4, 5.0));
}

// Group reductions: exact against a long-double reference, bitwise the same for every group size.
#include <gtest/gtest.h>

#include "knot/linalg/reduce.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

TEST(Reduce, DotIsBitwiseInvariantAndAccurate) {
  Rng rng(21);
  for (int n : {1, 2, 3, 7, 64, 100, 1001}) {
    const auto x = to_vec(rng.vector(n)), y = to_vec(rng.vector(n));
    long double ref = 0;
    for (int i = 0; i < n; ++i) ref += static_cast<long double>(x[i]) * y[i];
    std::vector<double> results;
    for (int t : kGroupSizes) {
      std::vector<double> scratch = poisoned(reduce_scratch_size(n)), per_rank(t, kNaN);
      run_threaded(t, [&](ThreadedGroup& g) { per_rank[g.rank()] = dot(g, n, x.data(), y.data(), scratch.data()); });
      for (double r : per_rank) EXPECT_EQ(r, per_rank[0]) << "every rank returns the same value";
      results.push_back(per_rank[0]);
    }
    for (double r : results) EXPECT_TRUE(bitwise_equal({r}, {results[0]})) << "n=" << n;
    EXPECT_NEAR(results[0], static_cast<double>(ref), 1e-14 * n);
  }
}

TEST(Reduce, NormAndEmpty) {
  const std::vector<double> x = {3.0, 4.0};
  std::vector<double> s(2);
  SerialGroup g;
  EXPECT_DOUBLE_EQ(norm2(g, 2, x.data(), s.data()), 5.0);
  EXPECT_EQ(dot(g, 0, x.data(), x.data(), s.data()), 0.0);
}

TEST(Reduce, NegativeControlPerturbationIsSeen) {
  Rng rng(22);
  const int n = 50;
  auto x = to_vec(rng.vector(n));
  std::vector<double> s(n);
  SerialGroup g;
  const double a = sum_sq(g, n, x.data(), s.data());
  x[17] += 1e-6;
  EXPECT_NE(sum_sq(g, n, x.data(), s.data()), a);
}

TEST(Reduce, NaNPropagatesInsteadOfHiding) {
  std::vector<double> x = {1.0, kNaN, 2.0}, s(3);
  SerialGroup g;
  EXPECT_TRUE(std::isnan(dot(g, 3, x.data(), x.data(), s.data())));
}

// The helpers the dense primitives share: the triangle walk that spreads a triangle's elements
// over members, and the pivot test potrf relies on.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "knot/linalg/dense/types.hpp"
#include "knot/linalg/threaded_group.hpp"

using namespace knot::linalg;

TEST(DenseTypes, LowerTriangleIndexVisitsEveryEntryOnceColumnByColumn) {
  for (int n = 1; n <= 40; ++n) {
    std::vector<int> seen(static_cast<std::size_t>(n) * n, 0);
    int prev_i = -1, prev_j = -1;
    for (int e = 0; e < n * (n + 1) / 2; ++e) {
      int i = -1, j = -1;
      detail::lower_triangle_index(e, n, i, j);
      ASSERT_TRUE(j >= 0 && j <= i && i < n) << "n=" << n << " e=" << e;
      ++seen[i + j * n];
      // Consecutive numbers step down a column (so members read neighbouring memory) unless a
      // column ends.
      if (prev_j == j) {
        EXPECT_EQ(i, prev_i + 1);
      }
      prev_i = i;
      prev_j = j;
    }
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) EXPECT_EQ(seen[i + j * n], i >= j ? 1 : 0) << "n=" << n;
  }
}

TEST(DenseTypes, PositiveFiniteRejectsZeroNegativeNaNAndInf) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(detail::positive_finite(1.0));
  EXPECT_TRUE(detail::positive_finite(std::numeric_limits<double>::denorm_min()));
  EXPECT_TRUE(detail::positive_finite(std::numeric_limits<double>::max()));
  EXPECT_FALSE(detail::positive_finite(0.0));
  EXPECT_FALSE(detail::positive_finite(-0.0));
  EXPECT_FALSE(detail::positive_finite(-1.0));
  EXPECT_FALSE(detail::positive_finite(inf));
  EXPECT_FALSE(detail::positive_finite(-inf));
  EXPECT_FALSE(detail::positive_finite(nan));
  EXPECT_TRUE(detail::positive_finite(1.0f));
  EXPECT_FALSE(detail::positive_finite(std::numeric_limits<float>::infinity()));
}

TEST(DenseTypes, OnlyTheSerialGroupTilesProducts) {
  static_assert(detail::kSerial<SerialGroup> && detail::kSerial<const SerialGroup>);
  static_assert(!detail::kSerial<ThreadedGroup>);
  static_assert(detail::tile_rows<ThreadedGroup, 5>() == 1);
  static_assert(detail::tile_rows<SerialGroup, 5>() == 5);
  static_assert(detail::tile_rows<SerialGroup, kDynamic>() == 8);
  static_assert(detail::tile_rows<SerialGroup, 40>() == 8);
  SUCCEED();
}

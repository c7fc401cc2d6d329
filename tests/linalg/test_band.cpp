// store_block / load_block: index formula, transpose, scale, inverse property, group-size sweep.
#include <gtest/gtest.h>

#include "knot/linalg/band.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

// Independent reference of the seed's formula: strip(y, s*d + x) = scale * src(transposed or not).
std::vector<double> reference_store(std::vector<double> strip, int d, int slot, const std::vector<double>& src,
                                    bool transpose, double scale) {
  for (int y = 0; y < d; ++y)
    for (int x = 0; x < d; ++x) strip[y * 3 * d + slot * d + x] = scale * (transpose ? src[x * d + y] : src[y * d + x]);
  return strip;
}

template <bool TR>
std::vector<double> run_store(int threads, int d, const std::vector<double>& strip0, BandSlot slot,
                              const std::vector<double>& src, double scale) {
  std::vector<double> strip = strip0;
  run_threaded(threads, [&](ThreadedGroup& g) { store_block<TR>(g, d, strip.data(), slot, src.data(), scale); });
  return strip;
}

}  // namespace

TEST(Band, StoreMatchesSeedFormulaForEverySlotTransposeAndGroupSize) {
  Rng rng(1);
  for (int d : {1, 2, 5, 14}) {
    const auto src = to_vec(rng.matrix(d, d));
    // Poison the strip: store must write exactly its slot and leave the other two untouched.
    const auto strip0 = poisoned(3 * d * d);
    for (int s = 0; s < 3; ++s) {
      const auto slot = static_cast<BandSlot>(s);
      const auto want = reference_store(strip0, d, s, src, false, -2.0);
      const auto want_t = reference_store(strip0, d, s, src, true, -2.0);
      for (int t : kGroupSizes) {
        EXPECT_TRUE(bitwise_equal(run_store<false>(t, d, strip0, slot, src, -2.0), want)) << "d=" << d << " s=" << s << " t=" << t;
        EXPECT_TRUE(bitwise_equal(run_store<true>(t, d, strip0, slot, src, -2.0), want_t)) << "d=" << d << " s=" << s << " t=" << t;
      }
    }
  }
}

TEST(Band, LoadAfterStoreIsIdentity) {
  Rng rng(2);
  for (int d : {1, 3, 7}) {
    const auto src = to_vec(rng.matrix(d, d));
    for (int s = 0; s < 3; ++s)
      for (int t : {1, 3, 33}) {
        std::vector<double> strip(3 * d * d, 0.0), back = poisoned(d * d), back_t = poisoned(d * d);
        run_threaded(t, [&](ThreadedGroup& g) {
          store_block<false>(g, d, strip.data(), static_cast<BandSlot>(s), src.data());
          load_block<false>(g, d, back.data(), strip.data(), static_cast<BandSlot>(s));
          store_block<true>(g, d, strip.data(), static_cast<BandSlot>(s), src.data());
          load_block<true>(g, d, back_t.data(), strip.data(), static_cast<BandSlot>(s));
        });
        EXPECT_TRUE(bitwise_equal(back, src));
        EXPECT_TRUE(bitwise_equal(back_t, src));
      }
  }
}

TEST(Band, LoadTransposeAndScale) {
  Rng rng(3);
  const int d = 5;
  const auto strip = to_vec(rng.matrix(3 * d * d, 1));
  std::vector<double> out = poisoned(d * d), out_t = poisoned(d * d);
  SerialGroup g;
  load_block<false>(g, d, out.data(), strip.data(), BandSlot::RIGHT, 0.5);
  load_block<true>(g, d, out_t.data(), strip.data(), BandSlot::RIGHT, 0.5);
  for (int y = 0; y < d; ++y)
    for (int x = 0; x < d; ++x) {
      EXPECT_EQ(out[y * d + x], 0.5 * strip[y * 3 * d + 2 * d + x]);
      EXPECT_EQ(out_t[x * d + y], 0.5 * strip[y * 3 * d + 2 * d + x]);
    }
}

TEST(Band, CompileTimeSizeMatchesRuntime) {
  Rng rng(4);
  const auto src = to_vec(rng.matrix(7, 7));
  std::vector<double> a(3 * 49, 0.0), b(3 * 49, 0.0);
  SerialGroup g;
  store_block<true, 7>(g, 7, a.data(), BandSlot::LEFT, src.data(), 3.0);
  store_block<true>(g, 7, b.data(), BandSlot::LEFT, src.data(), 3.0);
  EXPECT_TRUE(bitwise_equal(a, b));
}

TEST(Band, NegativeControlWrongSlotIsCaught) {
  Rng rng(5);
  const int d = 4;
  const auto src = to_vec(rng.matrix(d, d));
  const auto strip0 = std::vector<double>(3 * d * d, 0.0);
  const auto want_main = reference_store(strip0, d, 1, src, false, 1.0);
  // Storing into RIGHT instead of MAIN, or the transpose instead of the block, must not compare equal.
  EXPECT_FALSE(bitwise_equal(run_store<false>(1, d, strip0, BandSlot::RIGHT, src, 1.0), want_main));
  EXPECT_FALSE(bitwise_equal(run_store<true>(1, d, strip0, BandSlot::MAIN, src, 1.0), want_main));
}

TEST(Band, ZeroSizeTouchesNothing) {
  std::vector<double> strip(3, 7.0);
  const double src = 1.0;
  run_threaded(3, [&](ThreadedGroup& g) { store_block(g, 0, strip.data(), BandSlot::MAIN, &src); });
  EXPECT_EQ(strip, std::vector<double>(3, 7.0));
}

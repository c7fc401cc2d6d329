// ThreadedGroup and run_threaded: ranks, the barrier, and failure reporting from any rank.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "knot/linalg/threaded_group.hpp"

using namespace knot::linalg;

static_assert(Group<ThreadedGroup>);

TEST(ThreadedGroup, EveryRankRunsOnceWithTheRightSize) {
  for (int t : {1, 2, 3, 7, 33}) {
    std::vector<int> seen(t, 0);
    std::vector<int> sizes(t, -1);
    run_threaded(t, [&](ThreadedGroup& g) {
      seen[g.rank()] += 1;
      sizes[g.rank()] = g.size();
    });
    for (int r = 0; r < t; ++r) {
      EXPECT_EQ(seen[r], 1);
      EXPECT_EQ(sizes[r], t);
    }
  }
}

TEST(ThreadedGroup, SyncMakesEveryWriteVisible) {
  // Phase 1: each rank writes its slot; after the barrier every rank sums all slots. Without the
  // barrier the sums would differ between ranks (and ThreadSanitizer would report the race).
  const int t = 7;
  for (int round = 0; round < 20; ++round) {
    std::vector<int> slot(t, 0), sum(t, -1);
    run_threaded(t, [&](ThreadedGroup& g) {
      slot[g.rank()] = g.rank() + 1;
      g.sync();
      int s = 0;
      for (int v : slot) s += v;
      sum[g.rank()] = s;
    });
    for (int s : sum) EXPECT_EQ(s, t * (t + 1) / 2);
  }
}

TEST(ThreadedGroup, AFailingRankIsReportedAndTheOthersDoNotHang) {
  std::atomic<int> finished{0};
  try {
    run_threaded(5, [&](ThreadedGroup& g) {
      if (g.rank() == 3) throw std::runtime_error("rank 3 failed");
      g.sync();  // the others wait here for rank 3, which has left the barrier
      g.sync();
      finished.fetch_add(1);
    });
    FAIL() << "the exception was swallowed";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 3 failed");
  }
  EXPECT_EQ(finished.load(), 4);
}

TEST(ThreadedGroup, NonPositiveThreadCountIsRejected) {
  EXPECT_THROW(run_threaded(0, [](ThreadedGroup&) {}), std::invalid_argument);
  EXPECT_THROW(run_threaded(-2, [](ThreadedGroup&) {}), std::invalid_argument);
}

TEST(SerialGroup, IsOneMemberWithANoOpBarrier) {
  static_assert(Group<SerialGroup>);
  static_assert(SerialGroup::rank() == 0 && SerialGroup::size() == 1);
  SerialGroup g;
  int n = 0;
  for (int i = g.rank(); i < 10; i += g.size()) ++n;
  g.sync();
  EXPECT_EQ(n, 10);
}

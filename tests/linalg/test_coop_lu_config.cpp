// Cooperative LU configuration: threads per system, workspace size, the barrier adapters.
#include <gtest/gtest.h>

#include <thread>

#include "knot/linalg/coop_lu_config.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

TEST(CoopLuConfig, ThreadsPerSystem) {
  EXPECT_EQ(coop_lu_threads_per_system(1, 1), 1);
  EXPECT_EQ(coop_lu_threads_per_system(5, 2), 3);
  EXPECT_EQ(coop_lu_threads_per_system(32, 1), 32);
  EXPECT_EQ(coop_lu_threads_per_system(33, 2), 17);
  EXPECT_EQ(coop_lu_threads_per_system(4, 9), 1);
  EXPECT_EQ(coop_lu_threads_per_system(0, 1), 1);
}

TEST(CoopLuConfig, WorkspaceCoversEveryArea) {
  for (int n = 1; n <= 64; ++n)
    for (int r = 1; r <= n + 2; ++r) {
      const detail::CoopLuWorkspace m{n, coop_lu_threads_per_system(n, r)};
      const int size = coop_lu_workspace_size(n, r);
      EXPECT_GE(size, m.factor_end());
      EXPECT_GE(size, m.subst_end());
      EXPECT_GE(m.cand_val(), 2) << "the barrier slots stay free";
      EXPECT_GE(m.xs(), 2);
      EXPECT_LE(m.leave() + n + 2, m.factor_end());
      EXPECT_LE(m.gather() + n, m.subst_end());
    }
  static_assert(coop_lu_workspace_size(8, 8) > 0, "constexpr");
}

TEST(CoopLuConfig, SmallestNormal) {
  EXPECT_EQ(smallest_normal<double>(), std::numeric_limits<double>::min());
  EXPECT_EQ(smallest_normal<float>(), std::numeric_limits<float>::min());
}

TEST(CoopLuConfig, CallbackGroupForwardsTheBarrier) {
  int calls = 0;
  auto g = make_callback_group(2, 5, [&calls] { ++calls; });
  EXPECT_EQ(g.rank(), 2);
  EXPECT_EQ(g.size(), 5);
  g.sync();
  g.sync();
  EXPECT_EQ(calls, 2);
}

// Every round, each member writes its own cell, crosses the barrier, and reads every other cell:
// a barrier that orders nothing shows up as a stale value here (and as a race under TSan).
TEST(CoopLuConfig, WorkspaceBarrierOrdersMemory) {
  for (int t : {1, 2, 3, 7}) {
    const int rounds = 200;
    std::vector<double> work(2 + t, 0.0);
    std::vector<int> bad(t, 0);
    auto member = [&](int rank) {
      WorkspaceBarrierGroup<double> g(rank, t, work.data());
      for (int k = 1; k <= rounds; ++k) {
        work[2 + rank] = k * 100.0 + rank;
        g.sync();
        for (int s = 0; s < t; ++s)
          if (work[2 + s] != k * 100.0 + s) ++bad[rank];
        g.sync();
      }
    };
    std::vector<std::thread> pool;
    for (int r = 1; r < t; ++r) pool.emplace_back(member, r);
    member(0);
    for (auto& th : pool) th.join();
    for (int r = 0; r < t; ++r) EXPECT_EQ(bad[r], 0) << "t=" << t << " rank=" << r;
    EXPECT_EQ(work[0], 0.0) << "the counter returns to zero between barriers";
    EXPECT_TRUE(work[1] == 0.0 || work[1] == 1.0);
  }
}

}  // namespace

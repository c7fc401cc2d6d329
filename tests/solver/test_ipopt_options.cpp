// IpoptOptions::validate names the bad field and value; every status has its own message.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "knot/solver/ipopt.hpp"

namespace knot::test {
namespace {

using solver::IpoptOptions;
using solver::IpoptStatus;

std::string message(void (*mutate)(IpoptOptions&)) {
  IpoptOptions o;
  mutate(o);
  return o.validate();
}

bool names(const std::string& msg, const std::string& field, const std::string& value) {
  return msg.find(field) != std::string::npos && msg.find(value) != std::string::npos;
}

TEST(IpoptOptions, DefaultsAreValid) { EXPECT_EQ(IpoptOptions{}.validate(), ""); }

TEST(IpoptOptions, ValidateNamesTheBadFieldAndValue) {
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.tol = 0; }), "tol", "0"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.tol = std::numeric_limits<double>::quiet_NaN(); }), "tol", "nan"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.constr_viol_tol = -1; }), "constr_viol_tol", "-1"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.max_iter = -3; }), "max_iter", "-3"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.mu_init = 0; }), "mu_init", "0"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.bound_relax_factor = -1e-8; }), "bound_relax_factor", "-1e-08"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.print_level = 13; }), "print_level", "13"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.time_limit = -1; }), "time_limit", "-1"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.time_limit = std::numeric_limits<double>::infinity(); }),
                    "time_limit", "inf"));
  EXPECT_TRUE(
      names(message([](IpoptOptions& o) { o.hessian = static_cast<solver::IpoptHessian>(7); }), "hessian", "7"));
  EXPECT_TRUE(names(message([](IpoptOptions& o) { o.limited_memory_history = 0; }), "limited_memory_history", "0"));
}

TEST(IpoptOptions, EveryStatusHasItsOwnMessage) {
  std::set<std::string> seen;
  for (int s = 0; s <= static_cast<int>(IpoptStatus::InternalError); ++s) {
    const std::string m = solver::to_string(static_cast<IpoptStatus>(s));
    EXPECT_FALSE(m.empty());
    EXPECT_NE(m, "unknown status") << s;
    EXPECT_TRUE(seen.insert(m).second) << m;
  }
  EXPECT_NE(std::string(solver::to_string(IpoptStatus::NotAvailable)).find("not available"), std::string::npos);
}

}  // namespace
}  // namespace knot::test

// ParamMap: each typed getter's value, fallback and validation, and the errors it raises (key path
// under the context, what was expected, what was found).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "knot/problems/error.hpp"
#include "knot/problems/params.hpp"
#include "source_tree.hpp"

namespace knot::problems {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLo = -std::numeric_limits<double>::max(), kHi = std::numeric_limits<double>::max();

// Runs `f`, requires a ProblemError for `key`, and returns it for further checks.
ProblemError error_of(const std::function<void()>& f, const std::string& key) {
  try {
    f();
  } catch (const ProblemError& e) {
    EXPECT_EQ(e.key_path(), key);
    EXPECT_EQ(e.where().line, 0);  // no file behind a ParamMap
    return e;
  }
  ADD_FAILURE() << "no ProblemError for " << key;
  return ProblemError({}, "", "", "");
}

TEST(ParamMap, NumbersWithFallbackAndRange) {
  ParamMap p("model.params");
  p.set("mass", 2.5).set("count", 3.0);
  EXPECT_TRUE(p.has("mass"));
  EXPECT_FALSE(p.has("length"));
  EXPECT_EQ(p.number("mass", 1.0, 0.0, 10.0), 2.5);
  EXPECT_EQ(p.number("length", 0.8, 0.0, 10.0), 0.8);  // absent: the fallback, unchecked
  EXPECT_EQ(p.integer("count", 1, 0, 5), 3);
  EXPECT_EQ(p.integer("absent", 7, 0, 5), 7);

  const ProblemError e = error_of([&] { p.number("mass", 1.0, 3.0, 10.0); }, "model.params.mass");
  EXPECT_EQ(e.expected(), "a finite number in [3, 10]");
  EXPECT_EQ(e.found(), "2.5");
  EXPECT_EQ(std::string(e.what()), "<problem>: model.params.mass: expected a finite number in [3, 10], found 2.5");
  EXPECT_EQ(error_of([&] { p.number("mass", 1.0, 3.0, kHi); }, "model.params.mass").expected(), "a finite number >= 3");
  EXPECT_EQ(error_of([&] { p.number("mass", 1.0, kLo, 2.0); }, "model.params.mass").expected(), "a finite number <= 2");
  // The boundary itself is inside the range.
  EXPECT_EQ(p.number("mass", 1.0, 2.5, 2.5), 2.5);
}

TEST(ParamMap, NonFiniteAndMistypedNumbersAreRejected) {
  ParamMap p("params");
  p.set("inf", kInf).set("nan", std::nan("")).set("list", std::vector<double>{1, 2}).set("name", std::string("x"));
  EXPECT_EQ(error_of([&] { p.number("inf", 0, kLo, kHi); }, "params.inf").expected(), "a finite number");
  error_of([&] { p.number("nan", 0, kLo, kHi); }, "params.nan");
  EXPECT_EQ(error_of([&] { p.number("list", 0, kLo, kHi); }, "params.list").found(), "a list of 2 numbers");
  EXPECT_EQ(error_of([&] { p.number("name", 0, kLo, kHi); }, "params.name").found(), "'x'");
}

TEST(ParamMap, IntegersMustBeWholeAndInRange) {
  ParamMap p("params");
  p.set("half", 2.5).set("big", 12.0).set("ok", -4.0);
  EXPECT_EQ(p.integer("ok", 0, -10, 10), -4);
  EXPECT_EQ(error_of([&] { p.integer("half", 0, 0, 10); }, "params.half").expected(), "an integer in [0, 10]");
  EXPECT_EQ(error_of([&] { p.integer("big", 0, 0, 10); }, "params.big").found(), "12");
}

TEST(ParamMap, Booleans) {
  ParamMap p("params");
  p.set("t", std::string("true")).set("f", std::string("false")).set("one", 1.0).set("zero", 0.0);
  p.set("two", 2.0).set("yes", std::string("yes"));
  EXPECT_TRUE(p.boolean("t", false));
  EXPECT_FALSE(p.boolean("f", true));
  EXPECT_TRUE(p.boolean("one", false));
  EXPECT_FALSE(p.boolean("zero", true));
  EXPECT_TRUE(p.boolean("absent", true));
  error_of([&] { p.boolean("two", false); }, "params.two");
  EXPECT_EQ(error_of([&] { p.boolean("yes", false); }, "params.yes").found(), "'yes'");
}

TEST(ParamMap, VectorsWithSize) {
  ParamMap p("cost");
  p.set("w", std::vector<double>{1, 2, 3}).set("bad", std::vector<double>{1, kInf});
  EXPECT_EQ(p.vector("w", {}, 3), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(p.vector("w", {}, 0), (std::vector<double>{1, 2, 3}));  // any length
  EXPECT_EQ(p.vector("absent", {4, 5}, 3), (std::vector<double>{4, 5}));
  const ProblemError e = error_of([&] { p.vector("w", {}, 2); }, "cost.w");
  EXPECT_EQ(e.expected(), "a list of 2 numbers");
  EXPECT_EQ(e.found(), "a list of 3 numbers");
  EXPECT_EQ(error_of([&] { p.vector("bad", {}, 2); }, "cost.bad").found(), "inf at index 1");
  // A single number is a list of one.
  p.set("one", 7.0);
  EXPECT_EQ(p.vector("one", {}, 1), (std::vector<double>{7}));
}

TEST(ParamMap, MatricesAreRowMajorInColumnMajorOut) {
  ParamMap p("model.params");
  p.set_matrix("A", 2, 3, {1, 2, 3, 4, 5, 6});
  const std::vector<double> a = p.matrix("A", 2, 3);
  Eigen::MatrixXd ref(2, 3);
  ref << 1, 2, 3, 4, 5, 6;
  EXPECT_EQ(Eigen::Map<const Eigen::MatrixXd>(a.data(), 2, 3), ref);
  const ProblemError e = error_of([&] { p.matrix("A", 3, 2); }, "model.params.A");
  EXPECT_EQ(e.expected(), "a 3 x 2 matrix");
  EXPECT_EQ(e.found(), "a 2 x 3 matrix");
  EXPECT_EQ(error_of([&] { p.matrix("B", 2, 2); }, "model.params.B").found(), "nothing (the key is required)");
  // A flat list is not a matrix, and a matrix is not a list.
  p.set("flat", std::vector<double>{1, 2, 3, 4});
  error_of([&] { p.matrix("flat", 2, 2); }, "model.params.flat");
  error_of([&] { p.vector("A", {}, 6); }, "model.params.A");
  // set_matrix itself checks its count.
  error_of([&] { p.set_matrix("C", 2, 2, {1, 2, 3}); }, "model.params.C");
  p.set_matrix("N", 2, 2, {1, std::nan(""), 3, 4});
  EXPECT_EQ(error_of([&] { p.matrix("N", 2, 2); }, "model.params.N").found(), "nan at row 0, column 1");
}

TEST(ParamMap, StringsAndPaths) {
  ParamMap p("model.params");
  const std::string urdf = std::string(knot::source_tree::test_data_dir()) + "/torso_two_arms.urdf";
  p.set("frame", std::string("tool0")).set("urdf", urdf).set("nofile", std::string("/no/such.urdf"));
  p.set("num", 3.0);
  EXPECT_EQ(p.string("frame", "base"), "tool0");
  EXPECT_EQ(p.string("absent", "base"), "base");
  EXPECT_EQ(error_of([&] { p.string("num", ""); }, "model.params.num").expected(), "a string");
  EXPECT_EQ(p.path("urdf"), urdf);
  const ProblemError e = error_of([&] { p.path("nofile"); }, "model.params.nofile");
  EXPECT_EQ(e.expected(), "an existing file");
  EXPECT_EQ(e.found(), "'/no/such.urdf'");
  error_of([&] { p.path("absent"); }, "model.params.absent");
}

TEST(ParamMap, FailNamesTheKeyUnderTheContext) {
  ParamMap p("costs[2].params");
  const ProblemError e =
      error_of([&] { p.fail("weights", "3 numbers > 0", "-1 at index 0"); }, "costs[2].params.weights");
  EXPECT_EQ(e.expected(), "3 numbers > 0");
  EXPECT_EQ(e.found(), "-1 at index 0");
  // Setting a key again replaces it.
  p.set("k", 1.0).set("k", std::string("text"));
  EXPECT_EQ(p.string("k", ""), "text");
}

}  // namespace
}  // namespace knot::problems

// ClosedLoop: the cart-pole swings up and balances against a 20 % heavier pole with noise and a
// push, the iiwa14 follows the MPCGPU fixture path (its error measured here from the fixture file,
// not from the loop's own reference record), each with a negative control that breaks the bound;
// bitwise reproducibility per seed; deadline misses reported, not failed; failed solves fall back
// on the previous plan; no allocation per step; the plant's RK4 substeps against a hand-written RK4.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "alloc_counter.hpp"
#include "knot/solver/closed_loop.hpp"
#include "test_sqp_common.hpp"
#include "source_tree.hpp"

namespace knot::test {
namespace {

using solver::ClosedLoop;
using solver::ClosedLoopRecord;
using solver::Status;

// max |theta| over the recorded rows with t0 <= t_i < t1.
double max_abs_theta(const ClosedLoopRecord& r, double t0, double t1) {
  double m = 0;
  for (int i = 0; i <= r.steps; ++i)
    if (r.time[i] >= t0 && r.time[i] < t1) m = std::max(m, std::abs(r.x[static_cast<std::size_t>(i) * r.nx + 1]));
  return m;
}

// Swing-up from hanging, then balance with pole_mass 0.12 in the plant against 0.1 in the model,
// sensor and process noise and a push (0.1 rad, 0.5 rad/s) at t = 3 s. Bounds on |theta|:
// - settled, [1.5, 3) and [4, 5]: 0.05 rad. The open-loop optimum of cartpole_swingup is upright at
//   1 s; half a second more absorbs the mismatch, and what remains is the measurement noise
//   (sigma 0.001 rad, 0.01 rad/s) and process noise filtered by the loop: a few hundredths at most.
// - recovering from the push, [3, 4): 0.45 rad. Left alone, the pushed pole (time constant
//   tau = sqrt(l/g) ~ 0.29 s) follows 0.1 cosh(t/tau) + 0.5 tau sinh(t/tau) and passes 0.45 rad at
//   t ~ 0.37 s; staying below means the loop stopped the fall within about 18 control periods.
// A pole that falls, or is never swung up, leaves both bands by a radian or more.
constexpr double kSettledBound = 0.05, kPushBound = 0.45;

TEST(ClosedLoop, CartpoleBalancesAfterSwingUpDespiteMismatchNoiseAndPush) {
  problems::Problem p = load_config("cartpole_mpc");
  ASSERT_NE(p.mpc.plant_model, nullptr);
  ASSERT_EQ(p.mpc.plant_params.size(), 1u);
  EXPECT_EQ(p.mpc.plant_params[0].plant_value, (std::vector<double>{0.12}));
  EXPECT_EQ(p.mpc.plant_params[0].model_value, (std::vector<double>{0.1}));
  ClosedLoop loop(p);
  loop.run();
  const ClosedLoopRecord& r = loop.record();
  ASSERT_EQ(loop.steps_done(), 250);
  EXPECT_LE(max_abs_theta(r, 1.5, 3.0), kSettledBound);
  EXPECT_LE(max_abs_theta(r, 3.0, 4.0), kPushBound);
  EXPECT_LE(max_abs_theta(r, 4.0, 5.1), kSettledBound);
  // The push happened: theta left the settled band right after 3 s by more than the kick.
  EXPECT_GE(max_abs_theta(r, 3.0, 3.5), 0.1);
  const solver::ClosedLoopSummary s = loop.summary();
  EXPECT_EQ(s.failed_steps, 0);
  EXPECT_EQ(s.steps, 250);
  EXPECT_EQ(s.constraint_violation, 0.0);  // |F| <= 80 is a bound of the solver's LQ steps
  int counted = 0;
  for (int n : s.statuses) counted += n;
  EXPECT_EQ(counted, 250);
  EXPECT_LE(s.solve_p50, s.solve_p99);
  EXPECT_LE(s.solve_p99, s.solve_max);
}

// Negative control: a push five times as large (0.5 rad, 2.5 rad/s) is more than |F| <= 80 N can
// catch; the pole falls and leaves both bands (the check measures the plant, and can fail).
TEST(ClosedLoop, CartpolePushedTooHardLeavesTheBounds) {
  ClosedLoop loop(load_config("cartpole_mpc", {"mpc.disturbances[0].state_kick=[0, 0.5, 0, 2.5]"}));
  loop.run();
  EXPECT_GT(max_abs_theta(loop.record(), 3.0, 4.0), kPushBound);
  EXPECT_GT(max_abs_theta(loop.record(), 4.0, 5.1), kSettledBound);
}

std::vector<std::array<double, 3>> fixture_path() {
  std::ifstream in(std::string(knot::source_tree::test_data_dir()) + "/mpcgpu_0_0_eepos.traj");
  std::vector<std::array<double, 3>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream s(line);
    std::array<double, 3> row{};
    if (s >> row[0] >> row[1] >> row[2]) rows.push_back(row);
  }
  return rows;
}

// RMS over the loop of ||p_ee(t_i) - path row i|| (dt = the control period: row i is due at t_i).
double path_error_rms(const ClosedLoopRecord& r, const std::vector<std::array<double, 3>>& path) {
  double sum = 0;
  for (int i = 0; i <= r.steps; ++i) {
    const auto& row = path[std::min<std::size_t>(static_cast<std::size_t>(i), path.size() - 1)];
    double d2 = 0;
    for (int a = 0; a < 3; ++a) d2 += std::pow(r.ee[static_cast<std::size_t>(i) * 3 + a] - row[a], 2);
    sum += d2;
  }
  return std::sqrt(sum / (r.steps + 1));
}

// Bound: RMS end-effector error <= 0.06 m over 10 s of the path. The path spans 1.4 m at a mean
// speed of 0.58 m/s (up to 2.5 m/s: 3.9 cm per 1/64 s step), so 6 cm is a lag of about six control
// periods at the mean speed, or of 1.5 at the fastest; the weights (1 on the position, 1e-4 on the
// torques, 0.5 s of horizon) let the plan trail the fast stretches and the joins where the fixture
// trajectory jumps (tests/data/README.md). A robot that does not follow is off by the path's own
// displacement: the frozen-reference control below measures 0.98 m, sixteen times the bound.
constexpr double kPathRmsBound = 0.06;

TEST(ClosedLoop, IiwaFollowsTheFixturePath) {
  const auto path = fixture_path();
  ASSERT_EQ(path.size(), 666u);
  ClosedLoop loop(load_config("iiwa14_mpc"));
  loop.run();
  const ClosedLoopRecord& r = loop.record();
  ASSERT_EQ(r.ee.size(), static_cast<std::size_t>(r.steps + 1) * 3);
  EXPECT_LE(path_error_rms(r, path), kPathRmsBound);
  // The loop's own reference record is the fixture row due at t_i.
  for (int i : {0, 100, 400})
    for (int a = 0; a < 3; ++a) EXPECT_EQ(r.ee_ref[static_cast<std::size_t>(i) * 3 + a], path[i][a]);
  const solver::ClosedLoopSummary s = loop.summary();
  EXPECT_EQ(s.failed_steps, 0);
  ASSERT_FALSE(s.tracking.empty());
  EXPECT_EQ(s.tracking.back().name, "iiwa_link_7");
  EXPECT_NEAR(s.tracking.back().rms, path_error_rms(r, path), 1e-12);
}

// Negative control: a reference that does not move (the first row held) leaves the robot behind.
TEST(ClosedLoop, IiwaWithAFrozenReferenceMissesThePath) {
  const auto path = fixture_path();
  problems::Problem p = load_config("iiwa14_mpc");
  problems::MpcReference frozen;
  frozen.cost = "track";
  frozen.dim = 3;
  frozen.values = {path[0][0], path[0][1], path[0][2]};
  p.mpc.references = {frozen};
  ClosedLoop loop(p);
  loop.run();
  EXPECT_GT(path_error_rms(loop.record(), path), kPathRmsBound);
}

// A timed reference table: rows at t = 0 and 2 s, linear in between. The record's x_ref at t_i and
// the solver's knot k (at t_i + k dt) read the interpolated row, here p_ref(t) = 0.1 t, until 2 s,
// then the last row.
TEST(ClosedLoop, ATimedReferenceIsInterpolatedAtEachKnotsTime) {
  problems::Problem p = load_config("cartpole_mpc", {"mpc.steps=5", "mpc.duration=null"});
  problems::MpcReference ref;
  ref.cost = "state";
  ref.dim = 4;
  ref.times = {0, 2};
  ref.values = {0, 0, 0, 0, 0.2, 0, 0, 0};
  p.mpc.references = {ref};
  ClosedLoop loop(p);
  loop.run();
  const ClosedLoopRecord& r = loop.record();
  for (int i = 0; i <= 5; ++i) EXPECT_NEAR(r.x_ref[static_cast<std::size_t>(i) * 4], 0.1 * r.time[i], 1e-15) << i;
  const problems::Reference& window = *loop.problem().costs[0]->reference();
  ASSERT_EQ(window.rows(), p.horizon.N + 1);
  const double t4 = 4 * loop.period();  // the last step solved at t_4
  for (int k : {0, 10, 60}) {
    const double t = t4 + k * p.horizon.dt;
    EXPECT_NEAR(window.at(k)[0], t < 2 ? 0.1 * t : 0.2, 1e-15) << k;
  }
}

// The loop moves its solver's own reference: the Problem it was built from keeps the file's, so a
// second loop (or solver) from that Problem starts from it.
TEST(ClosedLoop, TheProblemKeepsItsReference) {
  const problems::Problem p = load_config("iiwa14_mpc", {"mpc.steps=5", "mpc.duration=null"});
  int track = -1;
  for (std::size_t c = 0; c < p.costs.size(); ++c)
    if (p.costs[c]->info().name == "track") track = static_cast<int>(c);
  ASSERT_GE(track, 0);
  const problems::Reference before = *p.costs[static_cast<std::size_t>(track)]->reference();
  ClosedLoop loop(p);
  loop.run();
  const problems::Reference& moved = *loop.problem().costs[static_cast<std::size_t>(track)]->reference();
  EXPECT_NE(moved.values, before.values);  // negative control: the loop's window did move
  const problems::Reference& kept = *p.costs[static_cast<std::size_t>(track)]->reference();
  EXPECT_EQ(kept.values, before.values);
  EXPECT_EQ(kept.rows(), before.rows());
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

ClosedLoopRecord run_record(const std::vector<std::string>& overrides) {
  ClosedLoop loop(load_config("cartpole_mpc", overrides));
  loop.run();
  return loop.record();
}

// Everything but the wall-clock solve times is a function of the seed.
TEST(ClosedLoop, OneSeedGivesBitwiseTheSameRunAnotherSeedAnother) {
  const ClosedLoopRecord a = run_record({"mpc.seed=7"}), b = run_record({"mpc.seed=7"});
  EXPECT_TRUE(same_bits(a.x, b.x));
  EXPECT_TRUE(same_bits(a.u, b.u));
  EXPECT_TRUE(same_bits(a.x_ref, b.x_ref));
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.iterations, b.iterations);
  const ClosedLoopRecord c = run_record({"mpc.seed=8"});
  EXPECT_FALSE(same_bits(a.x, c.x));
  EXPECT_FALSE(same_bits(a.u, c.u));
  // Without noise the seed has nothing to change.
  const ClosedLoopRecord d = run_record({"mpc.seed=7", "mpc.measurement_noise=0", "mpc.process_noise=0"});
  const ClosedLoopRecord e = run_record({"mpc.seed=8", "mpc.measurement_noise=0", "mpc.process_noise=0"});
  EXPECT_TRUE(same_bits(d.x, e.x));
}

// A control period of 1 us is shorter than any solve: every step misses its deadline, and the loop
// still runs every step with usable plans.
TEST(ClosedLoop, ATooShortDeadlineIsReportedAsMissesNotFailures) {
  ClosedLoop loop(load_config("cartpole_mpc", {"mpc.control_rate=1e6", "mpc.steps=20", "mpc.duration=null"}));
  loop.run();
  const solver::ClosedLoopSummary s = loop.summary();
  EXPECT_EQ(s.steps, 20);
  EXPECT_EQ(s.deadline_misses, 20);
  EXPECT_EQ(s.failed_steps, 0);
  // And a period of 1 s is missed by none (the negative control of the count).
  ClosedLoop slow(load_config("cartpole_mpc", {"mpc.control_rate=1", "mpc.steps=3", "mpc.duration=null"}));
  slow.run();
  EXPECT_EQ(slow.summary().deadline_misses, 0);
}

// A plant that turns to NaN after `good_calls` evaluations of its dynamics (a sensor or model
// failure): every later measurement is NaN, every solve fails.
class FailingPlant final : public problems::Model {
 public:
  FailingPlant(std::shared_ptr<const problems::Model> inner, int good_calls) : inner_(std::move(inner)), good_(good_calls) {}
  std::string_view type() const override { return inner_->type(); }
  int nx() const override { return inner_->nx(); }
  int nu() const override { return inner_->nu(); }
  int nq() const override { return inner_->nq(); }
  std::unique_ptr<problems::ModelData> make_data() const override {
    auto d = std::make_unique<Data>();
    d->inner = inner_->make_data();
    return d;
  }
  void dynamics(problems::ModelData& data, const double* x, const double* u, double* f) const override {
    auto& d = static_cast<Data&>(data);
    inner_->dynamics(*d.inner, x, u, f);
    if (++d.calls > good_)
      for (int i = 0; i < nx(); ++i) f[i] = std::numeric_limits<double>::quiet_NaN();
  }
  void dynamics_jacobian(problems::ModelData& data, const double* x, const double* u, double* f, double* fx,
                         double* fu) const override {
    inner_->dynamics_jacobian(*static_cast<Data&>(data).inner, x, u, f, fx, fu);
  }

 private:
  struct Data final : problems::ModelData {
    std::unique_ptr<problems::ModelData> inner;
    int calls = 0;
  };
  std::shared_ptr<const problems::Model> inner_;
  int good_;
};

// The plant fails during step 5 (RK4: 4 evaluations per substep, 10 substeps per step): steps 0..5
// solve, steps 6.. fail and apply u_j of the plan of step 5, j = steps since, clamped to N-1.
TEST(ClosedLoop, FailedSolvesApplyTheShiftedPreviousPlanAndAreCounted) {
  problems::Problem p = load_config("cartpole_mpc", {"mpc.steps=70", "mpc.duration=null"});
  p.mpc.plant_model = std::make_shared<FailingPlant>(p.model, 5 * 40 + 20);
  ClosedLoop loop(p);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(loop.step());
  const std::vector<double> plan = loop.solver().solution().u;
  loop.run();
  const ClosedLoopRecord& r = loop.record();
  const solver::ClosedLoopSummary s = loop.summary();
  EXPECT_EQ(loop.steps_done(), 70);
  EXPECT_EQ(s.failed_steps, 64);
  const int N = p.horizon.N;
  for (int i = 6; i < 70; ++i) {
    EXPECT_TRUE(r.failed[i]) << i;
    EXPECT_EQ(r.status[i], Status::NumericalError) << i;
    EXPECT_EQ(r.u[i], plan[std::min(i - 5, N - 1)]) << i;
  }
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(r.failed[i]) << i;
  EXPECT_EQ(s.statuses[static_cast<std::size_t>(Status::NumericalError)], 64);
}

// set_initial_state .. solve .. plant: no heap allocation in any step after construction, with
// noise, a disturbance and a plant model (cart-pole), a moving reference and kinematics (iiwa14),
// and sqp mode.
TEST(ClosedLoop, StepsAllocateNothing) {
  EXPECT_GE(allocations_during([] { std::vector<double> v(3); v[1] = 2; }), 1);  // the counter counts
  for (const auto& [name, overrides] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"cartpole_mpc", {}}, {"cartpole_mpc", {"mpc.mode=sqp", "mpc.warm_start=hold"}}, {"iiwa14_mpc", {"mpc.duration=2"}}}) {
    SCOPED_TRACE(name);
    ClosedLoop loop(load_config(name, overrides));
    EXPECT_EQ(allocations_during([&] { loop.run(); }), 0);
    EXPECT_EQ(loop.steps_done(), loop.steps());
  }
}

// One control step of the plant against a hand-written RK4 of the model's dynamics with the same
// substeps and the applied control: equal to rounding. The same with Euler substeps differs by
// far more (the comparison can tell schemes apart).
TEST(ClosedLoop, PlantStepIsRk4SubstepsOfTheModel) {
  problems::Problem p = load_config("cartpole_mpc", {"mpc.steps=1", "mpc.duration=null", "mpc.measurement_noise=0",
                                                     "mpc.process_noise=0", "mpc.plant.substeps=7"});
  ClosedLoop loop(p);
  loop.run();
  const ClosedLoopRecord& r = loop.record();
  const problems::Model& plant = *p.mpc.plant_model;
  auto data = plant.make_data();
  const double h = loop.period() / 7;
  std::vector<double> x(r.x.begin(), r.x.begin() + 4), k1(4), k2(4), k3(4), k4(4), tmp(4);
  std::vector<double> euler = x, f(4);
  const double* u = r.u.data();
  for (int s = 0; s < 7; ++s) {
    plant.dynamics(*data, x.data(), u, k1.data());
    for (int j = 0; j < 4; ++j) tmp[j] = x[j] + 0.5 * h * k1[j];
    plant.dynamics(*data, tmp.data(), u, k2.data());
    for (int j = 0; j < 4; ++j) tmp[j] = x[j] + 0.5 * h * k2[j];
    plant.dynamics(*data, tmp.data(), u, k3.data());
    for (int j = 0; j < 4; ++j) tmp[j] = x[j] + h * k3[j];
    plant.dynamics(*data, tmp.data(), u, k4.data());
    for (int j = 0; j < 4; ++j) x[j] += h / 6 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
    plant.dynamics(*data, euler.data(), u, f.data());
    for (int j = 0; j < 4; ++j) euler[j] += h * f[j];
  }
  double rk4_gap = 0, euler_gap = 0;
  for (int j = 0; j < 4; ++j) {
    rk4_gap = std::max(rk4_gap, std::abs(r.x[4 + j] - x[j]) / (1 + std::abs(x[j])));
    euler_gap = std::max(euler_gap, std::abs(r.x[4 + j] - euler[j]) / (1 + std::abs(x[j])));
  }
  EXPECT_LE(rk4_gap, 1e-14);
  EXPECT_GT(euler_gap, 1e-6);
  // The plant is the mismatched model, not the controller's.
  EXPECT_NE(p.mpc.plant_model.get(), p.model.get());
}

}  // namespace
}  // namespace knot::test

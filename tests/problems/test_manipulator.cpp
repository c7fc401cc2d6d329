// The manipulator model (models/manipulator.hpp) built from configs/robots/iiwa14_iiwa_grid.urdf
// through make_manipulator: dimensions and names, limits from the URDF, dynamics and its Jacobians
// against central differences, gravity compensation, frames and their Jacobians, parameter errors.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/models/manipulator.hpp"
#include "knot/problems/robot/dynamics.hpp"
#include "scratch_dir.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace {

using knot::test::scratch_dir;
using knot::test::error_of;
using knot::test::write_scratch_file;

using knot::problems::Manipulator;
using knot::problems::Model;
using knot::problems::ModelData;
using knot::problems::ParamMap;
using knot::problems::ProblemError;
using knot::test::Mat;
using knot::test::rel_err;
using knot::test::Rng;
using knot::test::Vec;
namespace robot = knot::problems::robot;

const std::string kIiwa = std::string(knot::source_tree::configs_dir()) + "/robots/iiwa14_iiwa_grid.urdf";

std::shared_ptr<const Model> iiwa(ParamMap params = ParamMap("model.params")) {
  params.set("urdf", kIiwa);
  return knot::problems::make_manipulator(params);
}

const Manipulator& as_manipulator(const Model& m) { return dynamic_cast<const Manipulator&>(m); }

Vec dynamics(const Model& m, ModelData& data, const Vec& x, const Vec& u) {
  Vec f(m.nx());
  m.dynamics(data, x.data(), u.data(), f.data());
  return f;
}

// Central differences with h = cbrt(eps) max(1, |x_i|).
Mat central_diff(const std::function<Vec(const Vec&)>& f, const Vec& x) {
  const Vec f0 = f(x);
  Mat J(f0.size(), x.size());
  for (int i = 0; i < x.size(); ++i) {
    const double h = 6e-6 * std::max(1.0, std::abs(x(i)));
    Vec xp = x, xm = x;
    xp(i) += h;
    xm(i) -= h;
    J.col(i) = (f(xp) - f(xm)) / (2 * h);
  }
  return J;
}

// The comparison, and the same comparison failing on a copy with one entry moved by 1e-5 of the scale.
void expect_matches_fd(const Mat& analytic, const Mat& fd, int row, int col, const char* what) {
  EXPECT_LE(rel_err(analytic, fd), 1e-6) << what;
  Mat wrong = analytic;
  wrong(row, col) += 1e-5 * std::max(1.0, fd.cwiseAbs().maxCoeff());
  EXPECT_GT(rel_err(wrong, fd), 1e-6) << what << " (negative control)";
}

TEST(Manipulator, DimensionsAndNames) {
  const auto m = iiwa();
  EXPECT_EQ(m->type(), "manipulator");
  EXPECT_EQ(m->nx(), 14);
  EXPECT_EQ(m->nu(), 7);
  EXPECT_EQ(m->nq(), 7);
  EXPECT_FALSE(m->discrete_time());
  const auto x = m->state_names(), u = m->control_names();
  ASSERT_EQ(x.size(), 14u);
  ASSERT_EQ(u.size(), 7u);
  EXPECT_EQ(x[0], "q_iiwa_joint_1");
  EXPECT_EQ(x[6], "q_iiwa_joint_7");
  EXPECT_EQ(x[7], "qd_iiwa_joint_1");
  EXPECT_EQ(x[13], "qd_iiwa_joint_7");
  EXPECT_EQ(u[0], "tau_iiwa_joint_1");
  EXPECT_EQ(u[6], "tau_iiwa_joint_7");
}

TEST(Manipulator, LimitsComeFromTheUrdf) {
  const knot::problems::ModelLimits lim = iiwa()->limits();
  ASSERT_EQ(lim.x_lower.size(), 14u);
  ASSERT_EQ(lim.u_lower.size(), 7u);
  const double range[7] = {2.96705972839, 2.09439510239, 2.96705972839, 2.09439510239,
                           2.96705972839, 2.09439510239, 3.05432619099};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(lim.x_lower[i], -range[i]);
    EXPECT_EQ(lim.x_upper[i], range[i]);
    EXPECT_EQ(lim.x_lower[7 + i], -10.0);
    EXPECT_EQ(lim.x_upper[7 + i], 10.0);
    EXPECT_EQ(lim.u_lower[i], -300.0);
    EXPECT_EQ(lim.u_upper[i], 300.0);
  }
}

TEST(Manipulator, DynamicsJacobianMatchesFiniteDifferences) {
  const auto m = iiwa();
  auto data = m->make_data();
  Rng rng(11);
  for (int trial = 0; trial < 5; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Vec x = 2.0 * rng.vector(14), u = 50.0 * rng.vector(7);
    Vec f = Vec::Constant(14, knot::test::kNaN);
    Mat fx = Mat::Constant(14, 14, knot::test::kNaN), fu = Mat::Constant(14, 7, knot::test::kNaN);
    m->dynamics_jacobian(*data, x.data(), u.data(), f.data(), fx.data(), fu.data());
    EXPECT_LE(rel_err(f, dynamics(*m, *data, x, u)), 0.0);
    EXPECT_EQ(f.head(7), x.tail(7));
    // The structure [[0, I], [., .]], [[0], [.]] holds exactly.
    EXPECT_EQ(fx.topLeftCorner(7, 7), Mat::Zero(7, 7));
    EXPECT_EQ(fx.topRightCorner(7, 7), Mat::Identity(7, 7));
    EXPECT_EQ(fu.topRows(7), Mat::Zero(7, 7));
    expect_matches_fd(fx, central_diff([&](const Vec& y) { return dynamics(*m, *data, y, u); }, x), 9, 3, "fx");
    expect_matches_fd(fu, central_diff([&](const Vec& v) { return dynamics(*m, *data, x, v); }, u), 10, 4, "fu");
  }
}

TEST(Manipulator, GravityCompensationHoldsStill) {
  const auto m = iiwa();
  const robot::RobotData& d = as_manipulator(*m).robot().data;
  EXPECT_EQ(d.gravity[2], -9.81);
  auto data = m->make_data();
  Rng rng(12);
  for (int trial = 0; trial < 5; ++trial) {
    Vec x = Vec::Zero(14);
    x.head(7) = 2.0 * rng.vector(7);
    auto w = std::make_unique<robot::Workspace<double>>();
    Vec g(7);
    robot::rnea(d, x.data(), x.data() + 7, nullptr, g.data(), *w);
    const Vec f = dynamics(*m, *data, x, g);
    EXPECT_LE(f.tail(7).cwiseAbs().maxCoeff(), 1e-10 * std::max(1.0, g.cwiseAbs().maxCoeff()));
    // Negative control: without the compensation the arm falls.
    EXPECT_GT(dynamics(*m, *data, x, Vec::Zero(7)).tail(7).cwiseAbs().maxCoeff(), 1e-3);
  }
}

TEST(Manipulator, GravityParameter) {
  ParamMap params("model.params");
  params.set("gravity", std::vector<double>{0.0, 0.0, 0.0});
  const auto m = iiwa(params);
  auto data = m->make_data();
  Vec x = Vec::Zero(14);
  x.head(7) << 0.3, -0.5, 0.7, 1.1, -0.2, 0.4, 0.9;
  EXPECT_LE(dynamics(*m, *data, x, Vec::Zero(7)).cwiseAbs().maxCoeff(), 1e-12);
  // Gravity along +x instead of -z: a pure gravity load on the wrist, the sign flips with gravity.
  ParamMap sideways("model.params");
  sideways.set("gravity", std::vector<double>{9.81, 0.0, 0.0});
  ParamMap opposite("model.params");
  opposite.set("gravity", std::vector<double>{-9.81, 0.0, 0.0});
  const auto a = iiwa(sideways), b = iiwa(opposite);
  auto da = a->make_data(), db = b->make_data();
  const Vec fa = dynamics(*a, *da, x, Vec::Zero(7)), fb = dynamics(*b, *db, x, Vec::Zero(7));
  EXPECT_GT(fa.tail(7).cwiseAbs().maxCoeff(), 1e-3);
  EXPECT_LE(rel_err(fa, -fb), 1e-12);
}

TEST(Manipulator, FramesByLinkName) {
  const auto m = iiwa();
  const knot::problems::Kinematics* k = m->kinematics();
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->frame_count(), 9);  // base, iiwa_link_0 .. iiwa_link_7
  for (int i = 0; i < k->frame_count(); ++i) EXPECT_EQ(k->frame_index(k->frame_name(i)), i);
  ASSERT_TRUE(k->frame_index("iiwa_link_7").has_value());
  EXPECT_FALSE(k->frame_index("iiwa_link_8").has_value());

  // iiwa_link_7's origin at row 0 of the MPCGPU trajectory (tests/data/README.md).
  auto data = m->make_data();
  const double q0[14] = {0.4550000131, 1.220000029, 0.5, -0.9649999738, 2.700000048, -0.7699999809, 0.65200001,
                         0, 0, 0, 0, 0, 0, 0};
  double p[3];
  k->frame_position(*data, q0, *k->frame_index("iiwa_link_7"), {0, 0, 0}, p, nullptr);
  EXPECT_NEAR(p[0], 0.576292, 1e-5);
  EXPECT_NEAR(p[1], 0.474906, 1e-5);
  EXPECT_NEAR(p[2], 0.234419, 1e-5);
  // Base frames do not move.
  k->frame_position(*data, q0, *k->frame_index("iiwa_link_0"), {0.1, 0.2, 0.3}, p, nullptr);
  EXPECT_EQ(p[0], 0.1);
  EXPECT_EQ(p[1], 0.2);
  EXPECT_EQ(p[2], 0.3);
}

TEST(Manipulator, FrameJacobianMatchesFiniteDifferences) {
  const auto m = iiwa();
  const knot::problems::Kinematics* k = m->kinematics();
  auto data = m->make_data();
  Rng rng(13);
  const Vec x = 2.0 * rng.vector(14);
  const std::array<double, 3> offset = {0.05, -0.1, 0.2};
  for (const char* name : {"iiwa_link_7", "iiwa_link_3"}) {
    SCOPED_TRACE(name);
    const int frame = *k->frame_index(name);
    auto position = [&](const Vec& y) {
      Vec p(3);
      k->frame_position(*data, y.data(), frame, offset, p.data(), nullptr);
      return p;
    };
    Vec p(3);
    Mat J = Mat::Constant(3, 14, knot::test::kNaN);
    k->frame_position(*data, x.data(), frame, offset, p.data(), J.data());
    EXPECT_LE(rel_err(p, position(x)), 0.0);
    EXPECT_EQ(J.rightCols(7), Mat::Zero(3, 7));
    expect_matches_fd(J, central_diff(position, x), 1, 2, "frame Jacobian");
  }
}

// --- URDF files written for the error and fixed-frame tests -------------------------------------

// The iiwa with a tool frame: iiwa_link_ee fixed 0.1 m along link 7's z, rotated, with a mass.
std::string iiwa_with_tool() {
  std::ifstream in(kIiwa);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  const std::string tool = R"(  <joint name="iiwa_joint_ee" type="fixed">
    <parent link="iiwa_link_7"/>
    <child link="iiwa_link_ee"/>
    <origin rpy="0.3 0 1.2" xyz="0 0 0.1"/>
  </joint>
  <link name="iiwa_link_ee">
    <inertial><origin xyz="0.01 0 0.02"/><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
)";
  text.insert(text.find("  <transmission"), tool);
  return text;
}

TEST(Manipulator, FixedToolFrameIsAnOffsetOnTheLastBody) {
  ParamMap params("model.params");
  params.set("urdf", write_scratch_file("iiwa_tool.urdf", iiwa_with_tool()));
  const auto tool = knot::problems::make_manipulator(params);
  const auto plain = iiwa();
  EXPECT_EQ(tool->nx(), 14);  // the fixed joint adds no state
  const knot::problems::Kinematics* k = tool->kinematics();
  ASSERT_TRUE(k->frame_index("iiwa_link_ee").has_value());
  EXPECT_EQ(as_manipulator(*tool).robot().frames[static_cast<std::size_t>(as_manipulator(*tool).robot().ee_frame)].name,
            "iiwa_link_ee");
  // The tool origin is link 7's point (0, 0, 0.1); a tool-frame offset turns with the tool's rpy.
  auto data = tool->make_data();
  Rng rng(14);
  const Vec x = rng.vector(14);
  const Eigen::Matrix3d R = (Eigen::AngleAxisd(1.2, Eigen::Vector3d::UnitZ()) *
                             Eigen::AngleAxisd(0.3, Eigen::Vector3d::UnitX()))
                                .toRotationMatrix();
  const Eigen::Vector3d offset(0.02, -0.03, 0.05), in_link7 = Eigen::Vector3d(0, 0, 0.1) + R * offset;
  Eigen::Vector3d p_tool, p_link7;
  k->frame_position(*data, x.data(), *k->frame_index("iiwa_link_ee"), {offset.x(), offset.y(), offset.z()},
                    p_tool.data(), nullptr);
  k->frame_position(*data, x.data(), *k->frame_index("iiwa_link_7"), {in_link7.x(), in_link7.y(), in_link7.z()},
                    p_link7.data(), nullptr);
  EXPECT_LE(rel_err(p_tool, p_link7), 1e-14);
  // The tool's mass joins body 7: 1.2 + 0.5 kg, COM between the two.
  const robot::RobotData& d = as_manipulator(*tool).robot().data;
  EXPECT_DOUBLE_EQ(d.mass[6], 1.7);
  EXPECT_NEAR(d.com[6][2], (1.2 * 0.02 + 0.5 * (0.1 + (R * Eigen::Vector3d(0.01, 0, 0.02)).z())) / 1.7, 1e-14);
  // ... so the dynamics differ from the plain arm's (and the check could tell).
  auto pdata = plain->make_data();
  EXPECT_GT(rel_err(dynamics(*tool, *data, x, Vec::Zero(7)), dynamics(*plain, *pdata, x, Vec::Zero(7))), 1e-6);
}

TEST(Manipulator, ParameterErrors) {
  std::string key;
  // Missing file.
  ParamMap missing("model.params");
  missing.set("urdf", (scratch_dir() / "nope.urdf").string());
  std::string msg = error_of([&] { knot::problems::make_manipulator(missing); }, &key);
  EXPECT_EQ(key, "model.params.urdf");
  EXPECT_NE(msg.find("nope.urdf"), std::string::npos) << msg;

  // Required.
  msg = error_of([&] { knot::problems::make_manipulator(ParamMap("model.params")); }, &key);
  EXPECT_EQ(key, "model.params.urdf");

  // Malformed XML.
  ParamMap malformed("model.params");
  const std::string bad = write_scratch_file("malformed.urdf", "<robot name=\"r\"><link name=\"a\">");
  malformed.set("urdf", bad);
  msg = error_of([&] { knot::problems::make_manipulator(malformed); }, &key);
  EXPECT_EQ(key, "model.params.urdf");
  EXPECT_NE(msg.find("a valid URDF file"), std::string::npos) << msg;
  EXPECT_NE(msg.find(bad), std::string::npos) << msg;

  // A floating joint, named with the file.
  std::string text = iiwa_with_tool();
  text.replace(text.find("name=\"iiwa_joint_ee\" type=\"fixed\""), 33, "name=\"iiwa_joint_ee\" type=\"floating\"");
  ParamMap floating("model.params");
  const std::string floating_path = write_scratch_file("floating.urdf", text);
  floating.set("urdf", floating_path);
  msg = error_of([&] { knot::problems::make_manipulator(floating); }, &key);
  EXPECT_EQ(key, "model.params.urdf");
  EXPECT_NE(msg.find("floating joint 'iiwa_joint_ee'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(floating_path), std::string::npos) << msg;

  // An unknown end-effector frame.
  ParamMap ee("model.params");
  ee.set("ee_frame", std::string("iiwa_link_9"));
  msg = error_of([&] { iiwa(ee); }, &key);
  EXPECT_EQ(key, "model.params.ee_frame");
  EXPECT_NE(msg.find("'iiwa_link_9'"), std::string::npos) << msg;

  // A wrong gravity.
  ParamMap gravity("model.params");
  gravity.set("gravity", std::vector<double>{0.0, -9.81});
  msg = error_of([&] { iiwa(gravity); }, &key);
  EXPECT_EQ(key, "model.params.gravity");

  // And the valid twins of the above load; ee_frame picks a frame and keeps every joint.
  ParamMap ok("model.params");
  ok.set("ee_frame", std::string("iiwa_link_5"));
  const auto m5 = iiwa(ok);
  EXPECT_EQ(m5->nu(), 7);
  EXPECT_EQ(m5->kinematics()->default_frame(), *m5->kinematics()->frame_index("iiwa_link_5"));
}

// The iiwa with a tool on link 7 and a contact point past the tool (fixed children with fixed children).
std::string iiwa_with_contact() {
  std::string text = iiwa_with_tool();
  const std::string contact = R"(  <joint name="contact_joint" type="fixed">
    <parent link="iiwa_link_ee"/><child link="contact"/><origin xyz="0 0 0.04"/>
  </joint>
  <link name="contact"/>
)";
  return text.insert(text.find("  <transmission"), contact);
}

std::string reach_problem(const std::string& urdf, const std::string& ee_frame) {
  return "name: reach\nmodel:\n  type: manipulator\n  params: {urdf: " + urdf +
         (ee_frame.empty() ? "" : ", ee_frame: " + ee_frame) +
         "}\nhorizon: {N: 4, dt: 0.05}\nx0: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\ncosts:\n"
         "  - {name: reach, type: end_effector, weights: 1, reference: [0.5, 0, 0.6]}\n"
         "  - {name: touch, type: end_effector, frame: contact, weights: 1}\n"
         "constraints:\n  - {name: floor, type: end_effector_height, min: 0.1}\n"
         "  - {name: box, type: end_effector_box, lower: [-1, -1, 0], upper: [1, 1, 2]}\n";
}

TEST(Manipulator, EndEffectorTermsWithoutFrameReadEeFrame) {
  const std::string urdf = write_scratch_file("iiwa_contact.urdf", iiwa_with_contact());
  const knot::problems::Problem p = knot::problems::load_problem_from_string(reach_problem(urdf, "iiwa_link_7"));
  const knot::problems::Kinematics& k = *p.model->kinematics();
  const int link7 = *k.frame_index("iiwa_link_7"), contact = *k.frame_index("contact");
  EXPECT_EQ(k.default_frame(), link7);
  EXPECT_EQ(p.costs[0]->frame(), link7);
  EXPECT_EQ(p.costs[1]->frame(), contact);
  EXPECT_EQ(p.constraints[0]->frame(), link7);
  EXPECT_EQ(p.constraints[1]->frame(), link7);
  // The terms read link 7's origin, which at q = 0 is straight above the base.
  auto data = p.model->make_data();
  const std::vector<double> x(14, 0.0);
  double p7[3], pc[3];
  k.frame_position(*data, x.data(), link7, {0, 0, 0}, p7, nullptr);
  k.frame_position(*data, x.data(), contact, {0, 0, 0}, pc, nullptr);
  EXPECT_NEAR(p7[0], 0.0, 1e-12);
  EXPECT_NEAR(p7[1], 0.0, 1e-12);
  EXPECT_GT(std::abs(pc[2] - p7[2]) + std::abs(pc[0] - p7[0]) + std::abs(pc[1] - p7[1]), 0.1);
  // knot check names each term's frame.
  const std::string d = knot::problems::describe(p);
  EXPECT_NE(d.find("reach: end_effector, stages all, scale_by_dt false, weights 1 I, frame iiwa_link_7 "
                   "(the model's end effector)"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("touch: end_effector, stages all, scale_by_dt false, weights 1 I, frame contact,"),
            std::string::npos)
      << d;
  EXPECT_NE(
      d.find("floor: end_effector_height, inequality, 1 row, stages all, frame iiwa_link_7 (the model's end effector)"),
      std::string::npos)
      << d;
  // Without ee_frame the single leaf is the default: the contact point.
  const knot::problems::Problem leaf = knot::problems::load_problem_from_string(reach_problem(urdf, ""));
  EXPECT_EQ(leaf.costs[0]->frame(), *leaf.model->kinematics()->frame_index("contact"));
  EXPECT_NE(knot::problems::describe(leaf).find("frame contact (the model's end effector)"), std::string::npos);
}

// A near-boundary URDF value reaches the user: the model's warnings, and knot check's description.
TEST(Manipulator, UrdfWarningsReachTheDescription) {
  std::string text = iiwa_with_contact();
  const std::string wide = "lower=\"-2.09439510239\" upper=\"2.09439510239\"";
  text.replace(text.find(wide), wide.size(), "lower=\"0.3\" upper=\"0.30001\"");
  const std::string urdf = write_scratch_file("iiwa_narrow.urdf", text);
  const knot::problems::Problem p = knot::problems::load_problem_from_string(reach_problem(urdf, "iiwa_link_7"));
  ASSERT_EQ(p.model->warnings().size(), 1u);
  const std::string d = knot::problems::describe(p);
  EXPECT_NE(d.find("warning      " + urdf + ": joint 'iiwa_joint_2' moves only 1e-05"), std::string::npos) << d;
  // Control: the unchanged robot has none, and describes none.
  const knot::problems::Problem fine =
      knot::problems::load_problem_from_string(reach_problem(write_scratch_file("iiwa_c.urdf", iiwa_with_contact()), "iiwa_link_7"));
  EXPECT_TRUE(fine.model->warnings().empty());
  EXPECT_EQ(knot::problems::describe(fine).find("warning"), std::string::npos);
}

}  // namespace

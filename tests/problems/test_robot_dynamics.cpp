// Rigid-body dynamics (robot/dynamics.hpp) and the URDF reader (robot/urdf.hpp) against independent
// references: Kane's equations with body Jacobians in Eigen on random chains, central finite
// differences for every derivative, and the MPCGPU iiwa14 trajectory (tests/data/README.md).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/robot/dynamics.hpp"
#include "knot/problems/robot/urdf.hpp"
#include "scratch_dir.hpp"
#include "test_util.hpp"
#include "source_tree.hpp"

namespace {

using knot::test::scratch_dir;
using knot::test::error_of;
using knot::test::write_scratch_file;

using knot::test::Mat;
using knot::test::rel_err;
using knot::test::Rng;
using knot::test::Vec;
namespace robot = knot::problems::robot;
using Mat3 = Eigen::Matrix3d;
using Vec3 = Eigen::Vector3d;

// ---------------------------------------------------------------------------------------------
// A random chain described at the URDF level (no merging), written to a file for load_urdf and
// evaluated independently below.

struct RLink {
  std::string name;
  double mass = 0;
  Vec3 com = Vec3::Zero(), com_rpy = Vec3::Zero();
  Mat3 inertia = Mat3::Zero();  // in the inertial frame
};

struct RJoint {
  std::string name, type;  // "revolute", "continuous", "prismatic", "fixed"
  int parent = 0, child = 0;  // link indices
  Vec3 xyz = Vec3::Zero(), rpy = Vec3::Zero(), axis = Vec3::UnitZ();
};

// A chain or a tree; the reference numbers moving joints in the order of `joints`.
struct Chain {
  std::vector<RLink> links;    // links[0] is the root
  std::vector<RJoint> joints;  // in tree order (parents before children)
  int tip = 0;                 // the end-effector link
  int n = 0;                   // moving joints
};

Mat3 rpy_matrix(const Vec3& rpy) {
  return (Eigen::AngleAxisd(rpy.z(), Vec3::UnitZ()) * Eigen::AngleAxisd(rpy.y(), Vec3::UnitY()) *
          Eigen::AngleAxisd(rpy.x(), Vec3::UnitX()))
      .toRotationMatrix();
}

RLink random_link(Rng& rng, const std::string& name) {
  RLink l;
  l.name = name;
  l.mass = rng.uniform(0.5, 3.0);
  l.com = Vec3(rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2));
  l.com_rpy = Vec3(rng.uniform(-3, 3), rng.uniform(-1.5, 1.5), rng.uniform(-3, 3));
  // Principal moments satisfying the triangle inequality, in a random orientation.
  const Vec3 d(rng.uniform(0.02, 0.1), rng.uniform(0.02, 0.1), rng.uniform(0.02, 0.1));
  const Mat3 Q = rpy_matrix(Vec3(rng.uniform(-3, 3), rng.uniform(-1.5, 1.5), rng.uniform(-3, 3)));
  l.inertia = Q * Vec3(d.y() + d.z(), d.x() + d.z(), d.x() + d.y()).asDiagonal() * Q.transpose();
  return l;
}

// Adds a random link below `parent` through a random joint of `type`; returns the link's index.
int attach(Chain& c, Rng& rng, const std::string& type, int parent, const std::string& link_name,
           const std::string& joint_name = {}) {
  RJoint j;
  j.type = type;
  j.name = joint_name.empty() ? "j" + std::to_string(c.joints.size()) + "_" + type : joint_name;
  j.parent = parent;
  c.links.push_back(random_link(rng, link_name));
  j.child = static_cast<int>(c.links.size()) - 1;
  j.xyz = Vec3(rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), rng.uniform(0.05, 0.4));
  j.rpy = Vec3(rng.uniform(-3, 3), rng.uniform(-1.5, 1.5), rng.uniform(-3, 3));
  j.axis = Vec3(rng.uniform(), rng.uniform(), rng.uniform()).normalized() * rng.uniform(0.5, 2.0);  // unnormalized
  c.joints.push_back(j);
  if (type != "fixed") ++c.n;
  return j.child;
}

// n moving joints (one prismatic, one continuous), a fixed joint at the base, one in the middle of
// the chain, one to a tool link at the tip, and a fixed side link (so the tree branches).
Chain random_chain(Rng& rng, int n, int prismatic_at, int fixed_after) {
  Chain c;
  c.links.push_back(random_link(rng, "world"));
  int link = attach(c, rng, "fixed", 0, "base");
  for (int k = 0; k < n; ++k) {
    const std::string type = k == prismatic_at ? "prismatic" : (k == 1 ? "continuous" : "revolute");
    link = attach(c, rng, type, link, "body" + std::to_string(k));
    if (k == fixed_after) {
      const int mid = attach(c, rng, "fixed", link, "mid" + std::to_string(k));
      attach(c, rng, "fixed", link, "sensor");  // side branch
      link = mid;
    }
  }
  c.tip = attach(c, rng, "fixed", link, "tool");
  return c;
}

// A branching tree of 10 moving joints: a torso joint carrying two 3-joint arms (the right one with
// a prismatic joint and a fixed sensor with mass), a finger on the left arm's second link beside its
// third joint, and a 2-joint branch straight on the base. Joint names are chosen so that the
// reader's order (depth first, siblings by name) differs from the order of this list.
Chain random_tree(Rng& rng) {
  Chain c;
  c.links.push_back(random_link(rng, "world"));
  const int base = attach(c, rng, "fixed", 0, "base");
  const int torso = attach(c, rng, "revolute", base, "torso", "t_torso");
  int l = torso, r = torso;
  for (int k = 0; k < 3; ++k) {
    l = attach(c, rng, k == 1 ? "continuous" : "revolute", l, "left" + std::to_string(k), "l" + std::to_string(k));
    if (k == 1) attach(c, rng, "revolute", l, "finger", "a_finger");  // sorts before l2
  }
  for (int k = 0; k < 3; ++k) {
    r = attach(c, rng, k == 1 ? "prismatic" : "revolute", r, "right" + std::to_string(k), "r" + std::to_string(k));
    if (k == 0) attach(c, rng, "fixed", r, "sensor", "r0_sensor");
  }
  const int side = attach(c, rng, "revolute", base, "side0", "b_side0");
  attach(c, rng, "prismatic", side, "side1", "b_side1");
  c.tip = l;
  return c;
}

std::string vec_str(const Vec3& v) {
  std::ostringstream s;
  s.precision(17);
  s << v.x() << " " << v.y() << " " << v.z();
  return s.str();
}

std::string urdf_text(const Chain& c) {
  std::ostringstream s;
  s.precision(17);
  s << "<?xml version=\"1.0\"?>\n<robot name=\"random\">\n";
  for (const RLink& l : c.links) {
    s << "  <link name=\"" << l.name << "\">\n    <inertial>\n      <origin xyz=\"" << vec_str(l.com) << "\" rpy=\""
      << vec_str(l.com_rpy) << "\"/>\n      <mass value=\"" << l.mass << "\"/>\n      <inertia ixx=\"" << l.inertia(0, 0)
      << "\" ixy=\"" << l.inertia(0, 1) << "\" ixz=\"" << l.inertia(0, 2) << "\" iyy=\"" << l.inertia(1, 1) << "\" iyz=\""
      << l.inertia(1, 2) << "\" izz=\"" << l.inertia(2, 2) << "\"/>\n    </inertial>\n  </link>\n";
  }
  for (const RJoint& j : c.joints) {
    s << "  <joint name=\"" << j.name << "\" type=\"" << j.type << "\">\n    <parent link=\"" << c.links[j.parent].name
      << "\"/>\n    <child link=\"" << c.links[j.child].name << "\"/>\n    <origin xyz=\"" << vec_str(j.xyz) << "\" rpy=\""
      << vec_str(j.rpy) << "\"/>\n";
    if (j.type != "fixed") s << "    <axis xyz=\"" << vec_str(j.axis) << "\"/>\n";
    if (j.type == "revolute" || j.type == "prismatic")
      s << "    <limit lower=\"-1.5\" upper=\"2\" velocity=\"3\" effort=\"40\"/>\n";
    s << "  </joint>\n";
  }
  s << "</robot>\n";
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// Independent reference: Kane's equations. Each URDF link is its own rigid body; with v_x = Jv qd the
// velocity of its COM and w = Jw qd its angular velocity,
//   M = sum_links m Jv' Jv + Jw' I_w Jw
//   tau = sum_links Jv' m (Jv qdd + dJv qd - g) + Jw' (I_w (Jw qdd + dJw qd) + w x I_w w)
// where dJ qd follows from d/dt a_j = w_parent(j) x a_j for the world axis a_j of joint j.

struct Reference {
  Mat M;
  Vec tau;
  std::vector<Eigen::Isometry3d> pose;  // per link, world
};

Reference reference(const Chain& c, const Vec& q, const Vec& qd, const Vec& qdd, const Vec3& g,
                    const std::vector<double>& mass_override = {}) {
  const int n = c.n, L = static_cast<int>(c.links.size());
  struct JointState {
    bool revolute = false;
    Vec3 a, p, w_parent, pdot;  // world axis, origin, parent's angular velocity, origin velocity
  };
  std::vector<Eigen::Isometry3d> pose(L, Eigen::Isometry3d::Identity());
  std::vector<std::vector<int>> moving(L);  // moving joints (indices into js) above each link
  std::vector<JointState> js;
  std::vector<Vec3> w(L, Vec3::Zero()), vel_origin(L, Vec3::Zero());
  for (const RJoint& j : c.joints) {
    Eigen::Isometry3d origin = Eigen::Isometry3d::Identity();
    origin.linear() = rpy_matrix(j.rpy);
    origin.translation() = j.xyz;
    const Eigen::Isometry3d frame = pose[j.parent] * origin;
    moving[j.child] = moving[j.parent];
    w[j.child] = w[j.parent];
    Eigen::Isometry3d motion = Eigen::Isometry3d::Identity();
    if (j.type != "fixed") {
      const int k = static_cast<int>(js.size());
      const Vec3 axis = j.axis.normalized();
      JointState s;
      s.revolute = j.type != "prismatic";
      s.a = frame.linear() * axis;
      s.p = frame.translation();
      s.w_parent = w[j.parent];
      // Velocity of the joint origin, a point of the parent link.
      s.pdot = vel_origin[j.parent] + w[j.parent].cross(s.p - pose[j.parent].translation());
      js.push_back(s);
      moving[j.child].push_back(k);
      if (s.revolute) {
        motion.linear() = Eigen::AngleAxisd(q(k), axis).toRotationMatrix();
        w[j.child] += s.a * qd(k);
      } else {
        motion.translation() = axis * q(k);
      }
    }
    pose[j.child] = frame * motion;
    // Velocity of the child origin from the Jacobian columns.
    Vec3 v = Vec3::Zero();
    for (int k : moving[j.child])
      v += (js[k].revolute ? Vec3(js[k].a.cross(pose[j.child].translation() - js[k].p)) : js[k].a) * qd(k);
    vel_origin[j.child] = v;
  }

  Reference r;
  r.M = Mat::Zero(n, n);
  r.tau = Vec::Zero(n);
  r.pose = pose;
  for (int l = 0; l < L; ++l) {
    const RLink& link = c.links[l];
    const double m = mass_override.empty() ? link.mass : mass_override[l];
    const Mat3 Rc = pose[l].linear() * rpy_matrix(link.com_rpy);
    const Vec3 x = pose[l] * link.com;
    const Mat3 Iw = Rc * link.inertia * Rc.transpose();
    Eigen::Matrix<double, 3, Eigen::Dynamic> Jv = Eigen::MatrixXd::Zero(3, n), Jw = Eigen::MatrixXd::Zero(3, n);
    for (int k : moving[l]) {
      Jv.col(k) = js[k].revolute ? Vec3(js[k].a.cross(x - js[k].p)) : js[k].a;
      if (js[k].revolute) Jw.col(k) = js[k].a;
    }
    const Vec3 xdot = Jv * qd, wl = Jw * qd;
    Vec3 dJv = Vec3::Zero(), dJw = Vec3::Zero();
    for (int k : moving[l]) {
      const Vec3 adot = js[k].w_parent.cross(js[k].a);
      if (js[k].revolute) {
        dJv += (adot.cross(x - js[k].p) + js[k].a.cross(xdot - js[k].pdot)) * qd(k);
        dJw += adot * qd(k);
      } else {
        dJv += adot * qd(k);
      }
    }
    r.M += m * Jv.transpose() * Jv + Jw.transpose() * Iw * Jw;
    const Vec3 acc = Jv * qdd + dJv, alpha = Jw * qdd + dJw;
    r.tau += Jv.transpose() * (m * (acc - g)) + Jw.transpose() * (Iw * alpha + wl.cross(Iw * wl));
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Helpers around the library.

struct Case {
  Chain chain;
  robot::RobotModel model;
};

Case random_setup(unsigned seed) {
  Rng rng(seed);
  const int n = 3 + static_cast<int>(seed % 5);  // 3..7
  const int prismatic_at = static_cast<int>(seed % static_cast<unsigned>(n));
  const int fixed_after = (static_cast<int>(seed) + 1) % (n - 1);
  Case s;
  s.chain = random_chain(rng, n, prismatic_at, fixed_after);
  const std::string path = write_scratch_file("random_" + std::to_string(seed) + ".urdf", urdf_text(s.chain));
  s.model = robot::load_urdf(path, "tool");
  return s;
}

Vec random_vec(Rng& rng, int n, double scale) { return scale * rng.vector(n); }

Vec rnea_vec(const robot::RobotData& d, const Vec& q, const Vec& qd, const Vec* qdd) {
  auto w = std::make_unique<robot::Workspace<double>>();
  Vec tau(d.n);
  robot::rnea(d, q.data(), qd.data(), qdd != nullptr ? qdd->data() : nullptr, tau.data(), *w);
  return tau;
}

Vec fd_vec(const robot::RobotData& d, const Vec& q, const Vec& qd, const Vec& tau) {
  auto w = std::make_unique<robot::Workspace<double>>();
  Vec qdd(d.n);
  EXPECT_EQ(robot::forward_dynamics(d, q.data(), qd.data(), tau.data(), qdd.data(), *w), 0);
  return qdd;
}

Mat mass(const robot::RobotData& d, const Vec& q) {
  auto w = std::make_unique<robot::Workspace<double>>();
  Mat M(d.n, d.n);
  robot::mass_matrix(d, q.data(), M.data(), d.n, *w);
  return M;
}

// Central differences, step scaled to each coordinate: h = cbrt(eps) max(1, |x_i|).
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

// The same comparison applied to a copy with one entry moved by 1e-5 of the scale must fail.
void expect_matches_fd(const Mat& analytic, const Mat& fd, const char* what) {
  EXPECT_LE(rel_err(analytic, fd), 1e-6) << what;
  Mat wrong = analytic;
  wrong(analytic.rows() / 2, analytic.cols() / 2) += 1e-5 * std::max(1.0, fd.cwiseAbs().maxCoeff());
  EXPECT_GT(rel_err(wrong, fd), 1e-6) << what << " (negative control)";
}

// ---------------------------------------------------------------------------------------------
// Random chains against the Kane reference.

TEST(RobotDynamics, UrdfChainIsReadAndMerged) {
  const Case s = random_setup(3);
  const robot::RobotData& d = s.model.data;
  EXPECT_EQ(d.n, s.chain.n);
  ASSERT_EQ(static_cast<int>(s.model.joint_names.size()), d.n);
  // Every URDF link is a frame; the end effector is the tool link.
  EXPECT_EQ(s.model.frames.size(), s.chain.links.size());
  EXPECT_EQ(s.model.frames[static_cast<std::size_t>(s.model.ee_frame)].name, "tool");
  // Fixed links are merged: the total moving mass is that of every link past the first moving joint.
  double total = 0, expected = 0;
  for (int i = 0; i < d.n; ++i) total += d.mass[i];
  for (std::size_t l = 2; l < s.chain.links.size(); ++l) expected += s.chain.links[l].mass;
  EXPECT_NEAR(total, expected, 1e-12 * expected);
  EXPECT_EQ(d.q_lower[1], -INFINITY);  // the continuous joint
  EXPECT_EQ(d.q_upper[1], INFINITY);
  EXPECT_EQ(d.q_lower[0], -1.5);
  EXPECT_EQ(d.q_upper[0], 2.0);
  EXPECT_EQ(d.velocity_limit[0], 3.0);
  EXPECT_EQ(d.effort_limit[0], 40.0);
}

// Every frame of the model (a point on it, in the link frame) sits where the reference's link pose
// at the same joint positions puts it.
void expect_frames_at_reference(const robot::RobotModel& model, const Chain& c, const Vec& q, const Reference& ref) {
  auto w = std::make_unique<robot::Workspace<double>>();
  robot::forward_kinematics(model.data, q.data(), *w);
  for (const robot::Frame& f : model.frames) {
    const auto l = static_cast<std::size_t>(
        std::find_if(c.links.begin(), c.links.end(), [&](const RLink& x) { return x.name == f.name; }) -
        c.links.begin());
    ASSERT_LT(l, c.links.size()) << f.name;
    const Vec3 offset(0.1, -0.2, 0.3);
    Vec3 in_body = Eigen::Map<const Vec3>(f.p) + Eigen::Map<const Mat3>(f.R) * offset, p;
    robot::point_position(*w, f.body, in_body.data(), p.data());
    EXPECT_LE(rel_err(p, ref.pose[l] * offset), 1e-12) << f.name;
  }
}

TEST(RobotDynamics, RneaAndMassMatrixMatchKaneReference) {
  for (unsigned seed = 0; seed < 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case s = random_setup(seed);
    const robot::RobotData& d = s.model.data;
    const Vec3 g(d.gravity[0], d.gravity[1], d.gravity[2]);
    Rng rng(100 + seed);
    const Vec q = random_vec(rng, d.n, 1.5), qd = random_vec(rng, d.n, 2.0), qdd = random_vec(rng, d.n, 3.0);
    const Reference ref = reference(s.chain, q, qd, qdd, g);
    const Mat M = mass(d, q);
    EXPECT_LE(rel_err(M, ref.M), 1e-10);
    EXPECT_LE(rel_err(M, M.transpose()), 0.0);
    EXPECT_LE(rel_err(rnea_vec(d, q, qd, &qdd), ref.tau), 1e-10);
    // Bias forces alone (qdd = 0) and without velocity (gravity only).
    const Vec zero = Vec::Zero(d.n);
    EXPECT_LE(rel_err(rnea_vec(d, q, qd, nullptr), reference(s.chain, q, qd, zero, g).tau), 1e-10);
    EXPECT_LE(rel_err(rnea_vec(d, q, zero, nullptr), reference(s.chain, q, zero, zero, g).tau), 1e-10);

    // Every link frame sits where the reference puts it.
    expect_frames_at_reference(s.model, s.chain, q, ref);

    // Negative control: the reference without the side link's mass (merged by the reader) differs.
    std::vector<double> masses;
    for (const RLink& l : s.chain.links) masses.push_back(l.name == "sensor" ? 0.0 : l.mass);
    EXPECT_GT(rel_err(M, reference(s.chain, q, qd, qdd, g, masses).M), 1e-10);
  }
}

TEST(RobotDynamics, ForwardDynamicsInvertsRnea) {
  for (unsigned seed = 0; seed < 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case s = random_setup(seed);
    const robot::RobotData& d = s.model.data;
    Rng rng(200 + seed);
    const Vec q = random_vec(rng, d.n, 1.5), qd = random_vec(rng, d.n, 2.0), tau = random_vec(rng, d.n, 20.0);
    Vec qdd = fd_vec(d, q, qd, tau);
    EXPECT_LE(rel_err(rnea_vec(d, q, qd, &qdd), tau), 1e-10);
    qdd(0) += 1e-6;  // negative control
    EXPECT_GT(rel_err(rnea_vec(d, q, qd, &qdd), tau), 1e-10);
  }
}

TEST(RobotDynamics, SingularMassMatrixIsAStatusNotACrash) {
  const Case s = random_setup(4);
  robot::RobotData d = s.model.data;
  // A massless, inertia-free last body: its joint moves nothing.
  d.mass[d.n - 1] = 0;
  for (double& v : d.inertia[d.n - 1]) v = 0;
  const Vec q = Vec::Constant(d.n, 0.3), qd = Vec::Zero(d.n), tau = Vec::Ones(d.n);
  auto w = std::make_unique<robot::Workspace<double>>();
  Vec qdd(d.n);
  Mat A(d.n, d.n);
  EXPECT_EQ(robot::forward_dynamics(d, q.data(), qd.data(), tau.data(), qdd.data(), *w), d.n);
  EXPECT_TRUE(qdd.array().isNaN().all());
  EXPECT_EQ(robot::forward_dynamics_derivatives(d, q.data(), qd.data(), tau.data(), qdd.data(), A.data(), nullptr,
                                                nullptr, d.n, *w),
            d.n);
  EXPECT_TRUE(A.array().isNaN().all());
}

// ---------------------------------------------------------------------------------------------
// Derivatives against central differences.

TEST(RobotDynamics, RneaDerivativesMatchFiniteDifferences) {
  for (unsigned seed = 0; seed < 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case s = random_setup(seed);
    const robot::RobotData& d = s.model.data;
    Rng rng(300 + seed);
    const Vec q = random_vec(rng, d.n, 1.5), qd = random_vec(rng, d.n, 2.0), qdd = random_vec(rng, d.n, 3.0);
    auto w = std::make_unique<robot::Workspace<double>>();
    Mat dq = Mat::Constant(d.n, d.n, knot::test::kNaN), dqd = dq;
    Vec tau(d.n);
    robot::rnea_derivatives(d, q.data(), qd.data(), qdd.data(), tau.data(), dq.data(), dqd.data(), d.n, *w);
    EXPECT_LE(rel_err(tau, rnea_vec(d, q, qd, &qdd)), 0.0);
    expect_matches_fd(dq, central_diff([&](const Vec& x) { return rnea_vec(d, x, qd, &qdd); }, q), "dtau/dq");
    expect_matches_fd(dqd, central_diff([&](const Vec& x) { return rnea_vec(d, q, x, &qdd); }, qd), "dtau/dqd");
  }
}

TEST(RobotDynamics, ForwardDynamicsDerivativesMatchFiniteDifferences) {
  for (unsigned seed = 0; seed < 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case s = random_setup(seed);
    const robot::RobotData& d = s.model.data;
    Rng rng(400 + seed);
    const Vec q = random_vec(rng, d.n, 1.5), qd = random_vec(rng, d.n, 2.0), tau = random_vec(rng, d.n, 20.0);
    auto w = std::make_unique<robot::Workspace<double>>();
    // Written into blocks of a larger array, to exercise the leading dimension.
    const int ld = d.n + 3;
    Mat A = Mat::Constant(ld, 3 * d.n, knot::test::kNaN);
    Vec qdd(d.n);
    ASSERT_EQ(robot::forward_dynamics_derivatives(d, q.data(), qd.data(), tau.data(), qdd.data(), A.data(),
                                                  A.data() + d.n * ld, A.data() + 2 * d.n * ld, ld, *w),
              0);
    EXPECT_LE(rel_err(qdd, fd_vec(d, q, qd, tau)), 0.0);
    expect_matches_fd(A.block(0, 0, d.n, d.n), central_diff([&](const Vec& x) { return fd_vec(d, x, qd, tau); }, q),
                      "dqdd/dq");
    expect_matches_fd(A.block(0, d.n, d.n, d.n),
                      central_diff([&](const Vec& x) { return fd_vec(d, q, x, tau); }, qd), "dqdd/dqd");
    expect_matches_fd(A.block(0, 2 * d.n, d.n, d.n),
                      central_diff([&](const Vec& x) { return fd_vec(d, q, qd, x); }, tau), "dqdd/du");
    // Rows past n are untouched.
    EXPECT_TRUE(A.bottomRows(3).array().isNaN().all());
    // Both state Jacobians come from one paired product; asked for alone, each comes from its own.
    // They are the same bits.
    Mat dq_alone = Mat::Constant(ld, d.n, knot::test::kNaN), dqd_alone = dq_alone;
    ASSERT_EQ(robot::forward_dynamics_derivatives(d, q.data(), qd.data(), tau.data(), qdd.data(), dq_alone.data(),
                                                  nullptr, nullptr, ld, *w),
              0);
    ASSERT_EQ(robot::forward_dynamics_derivatives(d, q.data(), qd.data(), tau.data(), qdd.data(), nullptr,
                                                  dqd_alone.data(), nullptr, ld, *w),
              0);
    const auto same_bits = [&](const Mat& x, int col) {
      return std::memcmp(x.data(), A.data() + col * ld, sizeof(double) * ld * d.n) == 0;  // NaN rows alike
    };
    EXPECT_TRUE(same_bits(dq_alone, 0));
    EXPECT_TRUE(same_bits(dqd_alone, d.n));
    dq_alone(d.n - 1, d.n - 1) = std::nextafter(dq_alone(d.n - 1, d.n - 1), 1e300);  // negative control
    EXPECT_FALSE(same_bits(dq_alone, 0));
  }
}

TEST(RobotDynamics, PointJacobianMatchesFiniteDifferences) {
  for (unsigned seed = 0; seed < 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case s = random_setup(seed);
    const robot::RobotData& d = s.model.data;
    Rng rng(500 + seed);
    const Vec q = random_vec(rng, d.n, 1.5);
    const Vec3 offset(rng.uniform(), rng.uniform(), rng.uniform());
    for (int body : {d.n - 1, d.n / 2}) {
      auto position = [&](const Vec& x) {
        auto w = std::make_unique<robot::Workspace<double>>();
        robot::forward_kinematics(d, x.data(), *w);
        Vec p(3);
        robot::point_position(*w, body, offset.data(), p.data());
        return p;
      };
      auto w = std::make_unique<robot::Workspace<double>>();
      robot::forward_kinematics(d, q.data(), *w);
      Vec3 p;
      robot::point_position(*w, body, offset.data(), p.data());
      Mat J = Mat::Constant(3, d.n, knot::test::kNaN);
      robot::point_jacobian(d, *w, body, p.data(), J.data(), 3);
      expect_matches_fd(J, central_diff(position, q), "point Jacobian");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Energy: along the flow qdd = FD(q, qd, u), d/dt (1/2 qd' M qd + V) = qd' u, V = -sum m g'c.
// dV/dt and the q-part of d/dt(kinetic) are a directional central difference along qd; the
// qd-part is (M qd)' qdd. This ties c(q, qd) to M(q) and V(q) through the energy balance alone.

double energy(const robot::RobotData& d, const Vec& q, const Vec& qd) {
  auto w = std::make_unique<robot::Workspace<double>>();
  robot::forward_kinematics(d, q.data(), *w);
  double V = 0;
  for (int i = 0; i < d.n; ++i) {
    Vec3 c;
    robot::point_position(*w, i, d.com[i], c.data());
    V -= d.mass[i] * (d.gravity[0] * c.x() + d.gravity[1] * c.y() + d.gravity[2] * c.z());
  }
  return 0.5 * qd.dot(mass(d, q) * qd) + V;
}

double power_residual(const robot::RobotData& d, const Vec& q, const Vec& qd, const Vec& qdd, const Vec& u) {
  const double h = 1e-5;
  const double dE_dq = (energy(d, q + h * qd, qd) - energy(d, q - h * qd, qd)) / (2 * h);
  const double dEdt = dE_dq + (mass(d, q) * qd).dot(qdd);
  return std::abs(dEdt - qd.dot(u)) / std::max(1.0, std::abs(qd.dot(u)) + std::abs(dE_dq));
}

TEST(RobotDynamics, PowerBalanceAlongTheFlow) {
  for (unsigned seed = 0; seed < 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case s = random_setup(seed);
    const robot::RobotData& d = s.model.data;
    Rng rng(600 + seed);
    const Vec q = random_vec(rng, d.n, 1.5), qd = random_vec(rng, d.n, 2.0), u = random_vec(rng, d.n, 20.0);
    const Vec qdd = fd_vec(d, q, qd, u);
    EXPECT_LE(power_residual(d, q, qd, qdd, u), 1e-7);
    // Negative control: accelerations that drop the velocity-product terms (keep only gravity).
    const Vec g = rnea_vec(d, q, Vec::Zero(d.n), nullptr);
    const Vec wrong = mass(d, q).llt().solve(u - g);
    EXPECT_GT(power_residual(d, q, qd, wrong, u), 1e-7);
  }
}

// ---------------------------------------------------------------------------------------------
// Branching trees against the same references. The reference numbers joints in the order of the
// description; the reader depth first with siblings by name, so the comparisons permute.

struct TreeCase {
  Chain tree;
  robot::RobotModel model;
  std::vector<int> ref;  // ref[i]: the reference's index of the reader's joint i
};

TreeCase load_tree(Chain tree, const std::string& file, const std::string& ee) {
  TreeCase s;
  s.tree = std::move(tree);
  s.model = robot::load_urdf(write_scratch_file(file, urdf_text(s.tree)), ee);
  std::vector<std::string> ref_names;
  for (const RJoint& j : s.tree.joints)
    if (j.type != "fixed") ref_names.push_back(j.name);
  for (const std::string& name : s.model.joint_names) {
    const auto it = std::find(ref_names.begin(), ref_names.end(), name);
    EXPECT_NE(it, ref_names.end()) << name;
    s.ref.push_back(static_cast<int>(it - ref_names.begin()));
  }
  return s;
}

TreeCase tree_setup(unsigned seed) {
  Rng rng(seed);
  return load_tree(random_tree(rng), "tree_" + std::to_string(seed) + ".urdf", "left2");
}

Vec to_ref(const TreeCase& s, const Vec& x) {
  Vec y(x.size());
  for (int i = 0; i < x.size(); ++i) y(s.ref[static_cast<std::size_t>(i)]) = x(i);
  return y;
}

Vec from_ref(const TreeCase& s, const Vec& y) {
  Vec x(y.size());
  for (int i = 0; i < y.size(); ++i) x(i) = y(s.ref[static_cast<std::size_t>(i)]);
  return x;
}

Mat from_ref(const TreeCase& s, const Mat& A) {
  Mat B(A.rows(), A.cols());
  for (int j = 0; j < A.cols(); ++j)
    for (int i = 0; i < A.rows(); ++i)
      B(i, j) = A(s.ref[static_cast<std::size_t>(i)], s.ref[static_cast<std::size_t>(j)]);
  return B;
}

int joint(const robot::RobotModel& m, const std::string& name) {
  const auto it = std::find(m.joint_names.begin(), m.joint_names.end(), name);
  EXPECT_NE(it, m.joint_names.end()) << name;
  return static_cast<int>(it - m.joint_names.begin());
}

TEST(RobotTree, EveryMovingJointIsModeledDepthFirst) {
  const TreeCase s = tree_setup(1);
  const robot::RobotData& d = s.model.data;
  ASSERT_EQ(d.n, 10);
  const std::vector<std::string> order = {"b_side0",  "b_side1", "t_torso", "l0", "l1",
                                          "a_finger", "l2",      "r0",      "r1", "r2"};
  EXPECT_EQ(s.model.joint_names, order);
  const int parent[10] = {-1, 0, -1, 2, 3, 4, 4, 2, 7, 8};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(d.parent[i], parent[i]) << order[static_cast<std::size_t>(i)];
  EXPECT_EQ(d.ancestors[5], (1u << 5) | (1u << 4) | (1u << 3) | (1u << 2));  // a_finger
  EXPECT_EQ(d.type[1], robot::JointType::Prismatic);                         // b_side1
  // Every link is a frame; the sensor rides on r0's body.
  EXPECT_EQ(s.model.frames.size(), s.tree.links.size());
  for (const robot::Frame& f : s.model.frames)
    if (f.name == "sensor") {
      EXPECT_EQ(f.body, 7);
    }
  EXPECT_EQ(s.model.frames[static_cast<std::size_t>(s.model.ee_frame)].name, "left2");
}

TEST(RobotTree, RneaAndMassMatrixMatchKaneReference) {
  for (unsigned seed = 0; seed < 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TreeCase s = tree_setup(seed);
    const robot::RobotData& d = s.model.data;
    const Vec3 g(d.gravity[0], d.gravity[1], d.gravity[2]);
    Rng rng(700 + seed);
    const Vec q = random_vec(rng, d.n, 1.5), qd = random_vec(rng, d.n, 2.0), qdd = random_vec(rng, d.n, 3.0);
    const Reference ref = reference(s.tree, to_ref(s, q), to_ref(s, qd), to_ref(s, qdd), g);
    const Mat M = mass(d, q);
    EXPECT_LE(rel_err(M, from_ref(s, ref.M)), 1e-10);
    EXPECT_LE(rel_err(M, M.transpose()), 0.0);
    EXPECT_LE(rel_err(rnea_vec(d, q, qd, &qdd), from_ref(s, ref.tau)), 1e-10);
    const Vec zero = Vec::Zero(d.n);
    EXPECT_LE(rel_err(rnea_vec(d, q, qd, nullptr),
                      from_ref(s, reference(s.tree, to_ref(s, q), to_ref(s, qd), Vec::Zero(d.n), g).tau)),
              1e-10);
    // Joints on separate branches do not couple: exactly zero, and the reference agrees.
    const robot::RobotModel& m = s.model;
    for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
             {"l0", "r0"}, {"a_finger", "l2"}, {"a_finger", "r2"}, {"b_side1", "t_torso"}, {"b_side0", "l1"}}) {
      EXPECT_EQ(M(joint(m, a), joint(m, b)), 0.0) << a << " " << b;
      EXPECT_LE(std::abs(from_ref(s, ref.M)(joint(m, a), joint(m, b))), 1e-12 * ref.M.norm()) << a << " " << b;
    }
    // ... while a joint and the branches it carries do (the zero check could tell).
    EXPECT_GT(std::abs(M(joint(m, "t_torso"), joint(m, "a_finger"))), 1e-6);
    EXPECT_GT(std::abs(M(joint(m, "t_torso"), joint(m, "r2"))), 1e-6);

    // Every link frame sits where the reference puts it.
    expect_frames_at_reference(m, s.tree, q, ref);
    // Negative control: the reference without the sensor's mass differs.
    std::vector<double> masses;
    for (const RLink& l : s.tree.links) masses.push_back(l.name == "sensor" ? 0.0 : l.mass);
    EXPECT_GT(rel_err(M, from_ref(s, reference(s.tree, to_ref(s, q), to_ref(s, qd), to_ref(s, qdd), g, masses).M)),
              1e-10);
  }
}

// Potential energy V = -sum_links m g'x_com in the reference's own kinematics.
double potential(const Chain& c, const Vec& q_ref, const Vec3& g) {
  const Reference r = reference(c, q_ref, Vec::Zero(q_ref.size()), Vec::Zero(q_ref.size()), g);
  double V = 0;
  for (std::size_t l = 0; l < c.links.size(); ++l) V -= c.links[l].mass * g.dot(r.pose[l] * c.links[l].com);
  return V;
}

// c(q, qd) from the Lagrangian alone: Christoffel symbols of the reference mass matrix,
// c_i = sum_jk 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) qd_j qd_k + dV/dq_i, every derivative
// by central differences. `drop_last` leaves out the -dM_jk/dq_i term (the negative control).
Vec christoffel_bias(const Chain& c, const Vec& q, const Vec& qd, const Vec3& g, bool drop_last = false) {
  const int n = static_cast<int>(q.size());
  const double h = 1e-5;
  std::vector<Mat> dM;
  Vec dV(n);
  const Vec zero = Vec::Zero(n);
  for (int k = 0; k < n; ++k) {
    Vec qp = q, qm = q;
    qp(k) += h;
    qm(k) -= h;
    dM.push_back((reference(c, qp, zero, zero, g).M - reference(c, qm, zero, zero, g).M) / (2 * h));
    dV(k) = (potential(c, qp, g) - potential(c, qm, g)) / (2 * h);
  }
  Vec out = dV;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k)
        out(i) += 0.5 * (dM[k](i, j) + dM[j](i, k) - (drop_last ? 0.0 : dM[i](j, k))) * qd(j) * qd(k);
  return out;
}

TEST(RobotTree, BiasForcesMatchChristoffelSymbolsOfTheMassMatrix) {
  for (unsigned seed = 0; seed < 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TreeCase s = tree_setup(seed);
    const robot::RobotData& d = s.model.data;
    const Vec3 g(d.gravity[0], d.gravity[1], d.gravity[2]);
    Rng rng(800 + seed);
    const Vec q = random_vec(rng, d.n, 1.5), qd = random_vec(rng, d.n, 2.0);
    const Vec c = rnea_vec(d, q, qd, nullptr);
    EXPECT_LE(rel_err(c, from_ref(s, christoffel_bias(s.tree, to_ref(s, q), to_ref(s, qd), g))), 1e-7);
    EXPECT_GT(rel_err(c, from_ref(s, christoffel_bias(s.tree, to_ref(s, q), to_ref(s, qd), g, true))), 1e-4);
  }
}

TEST(RobotTree, DerivativesMatchFiniteDifferences) {
  for (unsigned seed = 0; seed < 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TreeCase s = tree_setup(seed);
    const robot::RobotData& d = s.model.data;
    Rng rng(900 + seed);
    const Vec q = random_vec(rng, d.n, 1.5), qd = random_vec(rng, d.n, 2.0), qdd = random_vec(rng, d.n, 3.0),
              tau = random_vec(rng, d.n, 20.0);
    auto w = std::make_unique<robot::Workspace<double>>();
    Mat dq = Mat::Constant(d.n, d.n, knot::test::kNaN), dqd = dq;
    Vec out(d.n);
    robot::rnea_derivatives(d, q.data(), qd.data(), qdd.data(), out.data(), dq.data(), dqd.data(), d.n, *w);
    expect_matches_fd(dq, central_diff([&](const Vec& x) { return rnea_vec(d, x, qd, &qdd); }, q), "dtau/dq");
    expect_matches_fd(dqd, central_diff([&](const Vec& x) { return rnea_vec(d, q, x, &qdd); }, qd), "dtau/dqd");
    const int l0 = joint(s.model, "l0"), r1 = joint(s.model, "r1");
    EXPECT_EQ(dq(l0, r1), 0.0);
    EXPECT_EQ(dqd(r1, l0), 0.0);

    Mat A = Mat::Constant(d.n, 3 * d.n, knot::test::kNaN);
    ASSERT_EQ(robot::forward_dynamics_derivatives(d, q.data(), qd.data(), tau.data(), out.data(), A.data(),
                                                  A.data() + d.n * d.n, A.data() + 2 * d.n * d.n, d.n, *w),
              0);
    expect_matches_fd(A.leftCols(d.n), central_diff([&](const Vec& x) { return fd_vec(d, x, qd, tau); }, q), "dqdd/dq");
    expect_matches_fd(A.middleCols(d.n, d.n), central_diff([&](const Vec& x) { return fd_vec(d, q, x, tau); }, qd),
                      "dqdd/dqd");
    expect_matches_fd(A.rightCols(d.n), central_diff([&](const Vec& x) { return fd_vec(d, q, qd, x); }, tau),
                      "dqdd/du");

    // The finger's point Jacobian: nonzero only in the columns of its ancestors.
    const int finger = joint(s.model, "a_finger");
    const Vec3 offset(0.05, 0.1, -0.07);
    auto position = [&](const Vec& x) {
      auto wx = std::make_unique<robot::Workspace<double>>();
      robot::forward_kinematics(d, x.data(), *wx);
      Vec p(3);
      robot::point_position(*wx, finger, offset.data(), p.data());
      return p;
    };
    robot::forward_kinematics(d, q.data(), *w);
    Vec3 p;
    robot::point_position(*w, finger, offset.data(), p.data());
    Mat J = Mat::Constant(3, d.n, knot::test::kNaN);
    robot::point_jacobian(d, *w, finger, p.data(), J.data(), 3);
    expect_matches_fd(J, central_diff(position, q), "finger Jacobian");
    for (const char* name : {"b_side0", "b_side1", "l2", "r0", "r1", "r2"})
      EXPECT_EQ(J.col(joint(s.model, name)), Vec3::Zero()) << name;
    for (const char* name : {"t_torso", "l0", "l1", "a_finger"})
      EXPECT_GT(J.col(joint(s.model, name)).norm(), 1e-6) << name;
  }
}

// The tree without the joints whose names start with `prefix` and the links below them.
Chain without_branch(const Chain& c, const std::string& prefix) {
  std::vector<bool> keep(c.links.size(), true);
  for (const RJoint& j : c.joints)  // parents before children
    if (j.name.rfind(prefix, 0) == 0 || !keep[static_cast<std::size_t>(j.parent)])
      keep[static_cast<std::size_t>(j.child)] = false;
  Chain out;
  std::vector<int> index(c.links.size(), -1);
  for (std::size_t l = 0; l < c.links.size(); ++l)
    if (keep[l]) {
      index[l] = static_cast<int>(out.links.size());
      out.links.push_back(c.links[l]);
    }
  for (RJoint j : c.joints) {
    if (!keep[static_cast<std::size_t>(j.child)]) continue;
    j.parent = index[static_cast<std::size_t>(j.parent)];
    j.child = index[static_cast<std::size_t>(j.child)];
    out.joints.push_back(j);
    if (j.type != "fixed") ++out.n;
  }
  return out;
}

TEST(RobotTree, BranchesOnTheFixedBaseDecouple) {
  Rng rng(31);
  Chain c;
  c.links.push_back(random_link(rng, "world"));
  const int base = attach(c, rng, "fixed", 0, "base", "fixed_base");
  int a = base, b = base;
  for (int k = 0; k < 3; ++k) {
    a = attach(c, rng, k == 2 ? "prismatic" : "revolute", a, "a_link" + std::to_string(k), "a" + std::to_string(k));
    b = attach(c, rng, "revolute", b, "b_link" + std::to_string(k), "b" + std::to_string(k));
  }
  const TreeCase both = load_tree(c, "branches.urdf", "a_link2");
  const robot::RobotModel only_a =
      robot::load_urdf(write_scratch_file("branch_a.urdf", urdf_text(without_branch(c, "b"))));
  const robot::RobotModel only_b =
      robot::load_urdf(write_scratch_file("branch_b.urdf", urdf_text(without_branch(c, "a"))));
  ASSERT_EQ(both.model.data.n, 6);
  ASSERT_EQ(only_a.data.n, 3);
  ASSERT_EQ(only_b.data.n, 3);
  EXPECT_EQ(both.model.joint_names, (std::vector<std::string>{"a0", "a1", "a2", "b0", "b1", "b2"}));
  Rng r2(32);
  for (int trial = 0; trial < 3; ++trial) {
    const Vec q = random_vec(r2, 6, 1.5), qd = random_vec(r2, 6, 2.0), qdd = random_vec(r2, 6, 3.0);
    const Vec qa = q.head(3), qb = q.tail(3), qda = qd.head(3), qdb = qd.tail(3), qdda = qdd.head(3),
              qddb = qdd.tail(3);
    const Mat M = mass(both.model.data, q);
    EXPECT_EQ(M.topRightCorner(3, 3), Mat::Zero(3, 3));
    EXPECT_EQ(M.bottomLeftCorner(3, 3), Mat::Zero(3, 3));
    // Each block is its branch alone: the same operations, so the same bits.
    EXPECT_LE(rel_err(M.topLeftCorner(3, 3), mass(only_a.data, qa)), 0.0);
    EXPECT_LE(rel_err(M.bottomRightCorner(3, 3), mass(only_b.data, qb)), 0.0);
    const Vec tau = rnea_vec(both.model.data, q, qd, &qdd);
    EXPECT_LE(rel_err(tau.head(3), rnea_vec(only_a.data, qa, qda, &qdda)), 0.0);
    EXPECT_LE(rel_err(tau.tail(3), rnea_vec(only_b.data, qb, qdb, &qddb)), 0.0);
    // Negative control: the blocks are not interchangeable (the comparison could fail).
    EXPECT_GT(rel_err(M.topLeftCorner(3, 3), mass(only_b.data, qa)), 1e-6);
  }
}

// ---------------------------------------------------------------------------------------------
// The iiwa14 fixture (issue acceptance).

std::vector<std::vector<double>> read_rows(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<std::vector<double>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<double> row;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) row.push_back(std::stod(cell));
    rows.push_back(row);
  }
  return rows;
}

robot::RobotModel iiwa() { return robot::load_urdf(std::string(knot::source_tree::configs_dir()) + "/robots/iiwa14_iiwa_grid.urdf"); }

TEST(RobotDynamics, IiwaForwardKinematicsReproducesMpcgpuEndEffector) {
  const robot::RobotModel m = iiwa();
  ASSERT_EQ(m.data.n, 7);
  EXPECT_EQ(m.frames[static_cast<std::size_t>(m.ee_frame)].name, "iiwa_link_7");
  const auto traj = read_rows(std::string(knot::source_tree::test_data_dir()) + "/mpcgpu_0_0_traj.csv");
  const auto ee = read_rows(std::string(knot::source_tree::test_data_dir()) + "/mpcgpu_0_0_eepos.traj");
  ASSERT_EQ(traj.size(), 666u);
  ASSERT_EQ(ee.size(), 666u);
  auto w = std::make_unique<robot::Workspace<double>>();
  const double origin[3] = {0, 0, 0};
  double worst = 0, worst_perturbed = 1e9;
  for (std::size_t k = 0; k < traj.size(); ++k) {
    ASSERT_EQ(traj[k].size(), 21u);
    double q[7], p[3];
    for (int i = 0; i < 7; ++i) q[i] = traj[k][static_cast<std::size_t>(i)];
    robot::forward_kinematics(m.data, q, *w);
    robot::point_position(*w, 6, origin, p);
    for (int i = 0; i < 3; ++i) worst = std::max(worst, std::abs(p[i] - ee[k][static_cast<std::size_t>(i)]));
    // Negative control: 1 mrad on the shoulder moves the end effector well past the tolerance.
    q[1] += 1e-3;
    robot::forward_kinematics(m.data, q, *w);
    robot::point_position(*w, 6, origin, p);
    double e = 0;
    for (int i = 0; i < 3; ++i) e = std::max(e, std::abs(p[i] - ee[k][static_cast<std::size_t>(i)]));
    worst_perturbed = std::min(worst_perturbed, e);
  }
  EXPECT_LE(worst, 1e-5);
  EXPECT_GT(worst_perturbed, 1e-5);
}

TEST(RobotDynamics, IiwaForwardDynamicsReproducesMpcgpuTrajectory) {
  robot::RobotModel m = iiwa();
  m.data.gravity[0] = m.data.gravity[1] = m.data.gravity[2] = 0;  // the trajectory is gravity-free
  robot::RobotData with_gravity = m.data;
  with_gravity.gravity[2] = -9.81;
  const auto traj = read_rows(std::string(knot::source_tree::test_data_dir()) + "/mpcgpu_0_0_traj.csv");
  const double dt = 1.0 / 64;
  // The file is five point-to-point moves; the joins (tests/data/README.md) and the row after each
  // are not Euler steps, nor is row 0, which like every segment start repeats the state with u = 0.
  // The skipped rows are exactly those where the position step q+ = q + dt qd fails too.
  const std::vector<std::size_t> skip = {0, 147, 148, 293, 294, 423, 424, 541, 542};
  std::vector<std::size_t> not_a_step;
  for (std::size_t k = 0; k + 1 < traj.size(); ++k) {
    double e = 0;
    for (std::size_t i = 0; i < 7; ++i) e = std::max(e, std::abs(traj[k + 1][i] - traj[k][i] - dt * traj[k][7 + i]));
    if (e > 1e-6) not_a_step.push_back(k);
  }
  EXPECT_EQ(not_a_step, skip);
  auto w = std::make_unique<robot::Workspace<double>>();
  double worst = 0;
  int checked = 0, gravity_mismatch = 0;
  for (std::size_t k = 0; k + 1 < traj.size(); ++k) {
    if (std::find(skip.begin(), skip.end(), k) != skip.end()) continue;
    const double* x = traj[k].data();
    double qdd[7], qdd_g[7];
    ASSERT_EQ(robot::forward_dynamics(m.data, x, x + 7, x + 14, qdd, *w), 0);
    ASSERT_EQ(robot::forward_dynamics(with_gravity, x, x + 7, x + 14, qdd_g, *w), 0);
    double e = 0, e_g = 0;
    for (int i = 0; i < 7; ++i) {
      const double fd = (traj[k + 1][static_cast<std::size_t>(7 + i)] - x[7 + i]) / dt;
      e = std::max(e, std::abs(qdd[i] - fd));
      e_g = std::max(e_g, std::abs(qdd_g[i] - fd));
    }
    EXPECT_LE(e, 1e-4) << "row " << k;
    worst = std::max(worst, e);
    gravity_mismatch += e_g > 1e-4;  // negative control
    ++checked;
  }
  EXPECT_EQ(checked, 665 - 9);
  EXPECT_EQ(gravity_mismatch, checked);
  RecordProperty("worst_qdd_error", std::to_string(worst));

  const double* x = traj[2].data();
  double qdd[7];
  ASSERT_EQ(robot::forward_dynamics(m.data, x, x + 7, x + 14, qdd, *w), 0);
  const double expected[7] = {27.750, -8.088, -82.684, 53.291, -24.468, 2.152, -1.389};
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(qdd[i], expected[i], 5e-4) << "joint " << i;
}

TEST(RobotDynamics, IiwaPowerBalanceAndDerivativesWithGravity) {
  const robot::RobotModel m = iiwa();
  const robot::RobotData& d = m.data;
  Rng rng(7);
  const Vec q = random_vec(rng, 7, 2.0), qd = random_vec(rng, 7, 3.0), u = random_vec(rng, 7, 100.0);
  const Vec qdd = fd_vec(d, q, qd, u);
  EXPECT_LE(power_residual(d, q, qd, qdd, u), 1e-7);
  auto w = std::make_unique<robot::Workspace<double>>();
  Mat A(7, 21);
  Vec out(7);
  ASSERT_EQ(robot::forward_dynamics_derivatives(d, q.data(), qd.data(), u.data(), out.data(), A.data(),
                                                A.data() + 49, A.data() + 98, 7, *w),
            0);
  expect_matches_fd(A.leftCols(7), central_diff([&](const Vec& x) { return fd_vec(d, x, qd, u); }, q), "dqdd/dq");
  expect_matches_fd(A.middleCols(7, 7), central_diff([&](const Vec& x) { return fd_vec(d, q, x, u); }, qd),
                    "dqdd/dqd");
  expect_matches_fd(A.rightCols(7), central_diff([&](const Vec& x) { return fd_vec(d, q, qd, x); }, u), "dqdd/du");
}

// ---------------------------------------------------------------------------------------------
// The local-frame mass matrix against RNEA columns: with gravity off and qd = 0, rnea(q, 0, e_j) is
// column j of M exactly (no bias to subtract), computed by the world-frame sweeps, a separate path.

// n joints, parents[i] (-1 the base), joint axes cycling through z, x, a general unit axis, y and
// -z, every fifth joint prismatic, each placement turned and offset, full inertias off the COM.
robot::RobotData tilted_tree(const std::vector<int>& parents) {
  robot::RobotData r;
  r.n = static_cast<int>(parents.size());
  const double axes[5][3] = {{0, 0, 1}, {1, 0, 0}, {1.0 / 3, 2.0 / 3, -2.0 / 3}, {0, 1, 0}, {0, 0, -1}};
  for (int i = 0; i < r.n; ++i) {
    r.type[i] = i % 5 == 4 ? robot::JointType::Prismatic : robot::JointType::Revolute;
    const Mat3 R = rpy_matrix(Vec3(0.3 + 0.2 * i, -0.4 + 0.1 * i, 0.7 - 0.15 * i));
    std::copy(R.data(), R.data() + 9, r.joint_R[i]);
    r.joint_p[i][0] = 0.05 - 0.01 * i;
    r.joint_p[i][1] = 0.02 * (i % 3);
    r.joint_p[i][2] = 0.12;
    std::copy(axes[i % 5], axes[i % 5] + 3, r.axis[i]);
    r.mass[i] = 4.0 - 0.2 * i;
    r.com[i][0] = 0.01 * (1 + i % 3);
    r.com[i][1] = -0.02 * (i % 2);
    r.com[i][2] = 0.06;
    const double b = 0.02 * r.mass[i];
    const double J[6] = {b, 1.1 * b, 0.6 * b, 0.05 * b, -0.03 * b, 0.02 * b};
    std::copy(J, J + 6, r.inertia[i]);
  }
  EXPECT_TRUE(robot::set_tree(r, parents.data()));
  return r;
}

std::vector<int> chain_parents(int n) {
  std::vector<int> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i - 1;
  return p;
}

Mat mass_by_rnea_columns(robot::RobotData d, const Vec& q) {
  d.gravity[0] = d.gravity[1] = d.gravity[2] = 0.0;
  Mat M(d.n, d.n);
  const Vec zero = Vec::Zero(d.n);
  for (int j = 0; j < d.n; ++j) {
    const Vec e = Vec::Unit(d.n, j);
    M.col(j) = rnea_vec(d, q, zero, &e);
  }
  return M;
}

TEST(RobotDynamics, LocalFrameMassMatrixMatchesRneaColumns) {
  const robot::RobotModel arm = iiwa();
  const std::vector<std::pair<std::string, robot::RobotData>> robots = {
      {"iiwa14", arm.data},
      {"chain 6", tilted_tree(chain_parents(6))},
      {"chain 14", tilted_tree(chain_parents(14))},
      {"tree 14", tilted_tree({-1, 0, 1, 2, 1, 4, 5, -1, 7, 8, 8, 10, 0, 12})}};
  Rng rng(41);
  for (const auto& [name, d] : robots) {
    SCOPED_TRACE(name);
    for (int trial = 0; trial < 5; ++trial) {
      const Vec q = random_vec(rng, d.n, 2.0);
      const Mat ref = mass_by_rnea_columns(d, q);
      Mat M = Mat::Constant(d.n, d.n, NAN);  // every entry must be written
      auto w = std::make_unique<robot::Workspace<double>>();
      robot::mass_matrix(d, q.data(), M.data(), d.n, *w);
      EXPECT_LE(rel_err(M, ref), 1e-13);
      EXPECT_LE(rel_err(M, M.transpose()), 0.0);
      // Both ways of taking the pairs (joint by joint; in the base frame), whichever mass_matrix picks.
      for (const bool world_walk : {false, true}) {
        Mat Mv = Mat::Constant(d.n, d.n, NAN);
        robot::detail::crba_local(d, q.data(), Mv.data(), d.n, *w, world_walk);
        EXPECT_LE(rel_err(Mv, ref), 1e-13) << "world_walk " << world_walk;
        EXPECT_LE(rel_err(Mv, Mv.transpose()), 0.0) << "world_walk " << world_walk;
      }
      // A leading dimension larger than n writes the same block.
      Mat big = Mat::Constant(d.n + 3, d.n, NAN);
      robot::mass_matrix(d, q.data(), big.data(), d.n + 3, *w);
      EXPECT_LE(rel_err(big.topRows(d.n), M), 0.0);
      // Negative control: one body's inertia moved by 1e-6 of its scale changes M beyond the tolerance.
      robot::RobotData wrong = d;
      wrong.inertia[d.n / 2][4] += 1e-6 * std::max(1e-3, std::abs(wrong.inertia[d.n / 2][0]));
      Mat Mw(d.n, d.n);
      robot::mass_matrix(wrong, q.data(), Mw.data(), d.n, *w);
      EXPECT_GT(rel_err(Mw, ref), 1e-13);
    }
  }
  // The iiwa14 and the 6-joint chain walk joint by joint; the 14-joint chain takes its pairs in the
  // base frame (so both paths run through mass_matrix above).
  EXPECT_FALSE(robot::detail::crba_world_walk_pays(robots[0].second));
  EXPECT_FALSE(robot::detail::crba_world_walk_pays(robots[1].second));
  EXPECT_TRUE(robot::detail::crba_world_walk_pays(robots[2].second));
}

// ---------------------------------------------------------------------------------------------
// URDF errors.

const char* kTwoLinks = R"(<robot name="r">
  <link name="a"/>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="j" type="%TYPE%"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="5" velocity="2"/></joint>
</robot>)";

std::string two_links(const std::string& type) {
  std::string s = kTwoLinks;
  s.replace(s.find("%TYPE%"), 6, type);
  return s;
}

TEST(RobotUrdf, ErrorsNameTheFileAndTheProblem) {
  std::string key;
  const std::string missing = (scratch_dir() / "missing.urdf").string();
  std::string msg = error_of([&] { robot::load_urdf(missing); }, &key);
  EXPECT_EQ(key, "model.params.urdf");
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;

  const std::string bad_xml = write_scratch_file("bad.urdf", "<robot name=\"r\"><link name=\"a\"></robot>");
  msg = error_of([&] { robot::load_urdf(bad_xml); }, &key);
  EXPECT_EQ(key, "model.params.urdf");
  EXPECT_NE(msg.find(bad_xml), std::string::npos) << msg;
  EXPECT_NE(msg.find("a valid URDF file"), std::string::npos) << msg;

  const std::string floating = write_scratch_file("floating.urdf", two_links("floating"));
  msg = error_of([&] { robot::load_urdf(floating); }, &key);
  EXPECT_EQ(key, "model.params.urdf");
  EXPECT_NE(msg.find("floating joint 'j'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(floating), std::string::npos) << msg;

  const std::string planar = write_scratch_file("planar.urdf", two_links("planar"));
  msg = error_of([&] { robot::load_urdf(planar, {}, "ctx"); }, &key);
  EXPECT_EQ(key, "ctx.urdf");
  EXPECT_NE(msg.find("planar joint 'j'"), std::string::npos) << msg;

  const std::string only_fixed = write_scratch_file("fixed.urdf", two_links("fixed"));
  msg = error_of([&] { robot::load_urdf(only_fixed); }, &key);
  EXPECT_NE(msg.find("at least one revolute"), std::string::npos) << msg;

  // A branching tree needs ee_frame; an unknown ee_frame lists the links.
  const std::string branching = write_scratch_file("random_3.urdf", urdf_text(random_setup(3).chain));
  msg = error_of([&] { robot::load_urdf(branching); }, &key);
  EXPECT_EQ(key, "model.params.ee_frame");
  EXPECT_NE(msg.find("2 leaf links (sensor, tool)"), std::string::npos) << msg;
  msg = error_of([&] { robot::load_urdf(branching, "hand"); }, &key);
  EXPECT_EQ(key, "model.params.ee_frame");
  EXPECT_NE(msg.find("'hand'"), std::string::npos) << msg;

  // A moving joint that moves nothing.
  std::string massless = two_links("revolute");
  massless.replace(massless.find("<inertial>"), massless.find("</inertial>") + 11 - massless.find("<inertial>"), "");
  msg = error_of([&] { robot::load_urdf(write_scratch_file("massless.urdf", massless)); }, &key);
  EXPECT_NE(msg.find("singular one at joint 'j'"), std::string::npos) << msg;

  // The well-formed twin loads (the errors above come from what was changed).
  const robot::RobotModel ok = robot::load_urdf(write_scratch_file("ok.urdf", two_links("revolute")));
  EXPECT_EQ(ok.data.n, 1);
  EXPECT_EQ(ok.joint_names.front(), "j");
}

// Each refused file, made from the valid two-link file by one change: the message names the file,
// the link or joint, and what is wrong (urdfdom's text where urdfdom found it).
struct BadUrdf {
  const char* name;
  std::string from, to;               // the change to kTwoLinks (revolute)
  std::vector<std::string> expected;  // substrings of the message
};

std::string changed(const std::string& from, const std::string& to) {
  std::string s = two_links("revolute");
  const std::size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(RobotUrdf, BadNumbersAndImpossibleBodiesAreRefused) {
  const std::string mass = "<mass value=\"1\"/>", ixx = "ixx=\"0.1\"",
                    inertia = "<inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"/>";
  const std::vector<BadUrdf> cases = {
      {"mass_nan", mass, "<mass value=\"nan\"/>", {"link 'b'", "mass [nan] is not a float"}},
      {"mass_inf", mass, "<mass value=\"inf\"/>", {"link 'b'", "mass [inf] is not a float"}},
      {"mass_1e400", mass, "<mass value=\"1e400\"/>", {"link 'b'", "mass [1e400] is not a float"}},
      {"mass_heavy", mass, "<mass value=\"heavy\"/>", {"link 'b'", "mass [heavy] is not a float"}},
      {"ixx_abc", ixx, "ixx=\"abc\"", {"link 'b'", "ixx is not a valid double"}},
      {"origin_two", "<inertial>", "<inertial><origin xyz=\"0 0\"/>", {"link 'b'", "2 elements but 3 expected"}},
      {"visual_two",
       "</inertial>",
       "</inertial><visual><geometry><box size=\"1 1\"/></geometry></visual>",
       {"link 'b'", "Could not parse visual element"}},
      {"mass_negative", mass, "<mass value=\"-1\"/>", {"a finite mass >= 0", "mass -1 of link 'b'"}},
      {"moment_negative", ixx, "ixx=\"-0.1\"", {"principal moments (-0.1, 0.1, 0.1) of link 'b' (a negative moment)"}},
      {"moment_rotated",
       inertia,
       "<inertia ixx=\"0.1\" ixy=\"0.2\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"/>",
       {"principal moments (-0.1, 0.1, 0.3) of link 'b' (a negative moment)"}},
      {"triangle",
       inertia,
       "<inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.3\"/>",
       {"principal moments (0.1, 0.1, 0.3) of link 'b' (the triangle inequality fails)"}},
      {"zero_range",
       "lower=\"-1\" upper=\"1\"",
       "lower=\"0.5\" upper=\"0.5\"",
       {"type=\"fixed\"", "limits [0.5, 0.5] of joint 'j' (zero range)"}},
      // urdfdom would pass the value to vsnprintf as a format and crash (found by fuzz_urdf).
      {"percent", "<inertial>", "<inertial><origin xyz=\"%s%s%s 0 0\"/>", {"a URDF without '%'", "'%' at line"}},
      // tinyxml read past the text's end after a UTF-8 sequence cut short there (found by fuzz_urdf).
      {"utf8_cut_at_end", "</robot>", "</robot>\n\xC8", {"a URDF in UTF-8", "byte 0xC8 at line", "complete UTF-8"}},
      {"utf8_stray", "name=\"b\"", "name=\"b\xAA\"", {"a URDF in UTF-8", "byte 0xAA at line"}},
      {"utf8_short", "name=\"b\"", "name=\"b\xE2\x82\"", {"byte 0xE2 at line"}},
  };
  for (const BadUrdf& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write_scratch_file(std::string(c.name) + ".urdf", changed(c.from, c.to));
    std::string key;
    const std::string msg = error_of([&] { robot::load_urdf(path); }, &key);
    EXPECT_EQ(key, "model.params.urdf");
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const std::string& e : c.expected) EXPECT_NE(msg.find(e), std::string::npos) << e << " in: " << msg;
  }
  // The valid twins load: the file itself, a thin plate on the triangle inequality's boundary, a
  // point mass, a rotated inertia, a '%' in a comment, and, with a warning naming the link or joint,
  // a joint with a tiny but nonzero range and a moment negative within rounding.
  struct Fine {
    std::string from, to, warning;  // warning: a substring of the one warning, or empty for none
  };
  const std::vector<Fine> fine = {
      {mass, mass, ""},
      {inertia, "<inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.2\"/>", ""},
      {inertia, "<origin xyz=\"0.1 0 0\"/><inertia ixx=\"0\" ixy=\"0\" ixz=\"0\" iyy=\"0\" iyz=\"0\" izz=\"0\"/>", ""},
      {inertia, "<inertia ixx=\"0.2\" ixy=\"0.05\" ixz=\"0\" iyy=\"0.2\" iyz=\"0\" izz=\"0.1\"/>", ""},
      {mass, mass + "<!-- 100% of the mass, %s -->", ""},
      {mass, mass + "<!-- 1 \xC2\xB5m, 20 \xE2\x82\xAC, \xF0\x9F\xA6\xBE -->", ""},  // UTF-8 of 2, 3 and 4 bytes
      {"lower=\"-1\" upper=\"1\"", "lower=\"0.5\" upper=\"0.5000001\"",
       "joint 'j' moves only 1e-07 (limits [0.5, 0.5000001]); if it should not move, make it type=\"fixed\""},
      {ixx, "ixx=\"-1e-8\"", "link 'b' has principal moments (-1e-08, 0.1, 0.1) that include a negative one"},
  };
  for (const Fine& c : fine) {
    SCOPED_TRACE(c.to);
    const std::string path = write_scratch_file("fine.urdf", changed(c.from, c.to));
    const robot::RobotModel m = robot::load_urdf(path);
    EXPECT_EQ(m.data.n, 1);
    EXPECT_EQ(m.data.mass[0], 1.0);  // the link kept its inertial
    if (c.warning.empty()) {
      EXPECT_TRUE(m.warnings.empty()) << m.warnings.front();
    } else {
      ASSERT_EQ(m.warnings.size(), 1u);
      EXPECT_EQ(m.warnings[0].rfind(path + ": ", 0), 0u) << m.warnings[0];
      EXPECT_NE(m.warnings[0].find(c.warning), std::string::npos) << m.warnings[0];
    }
  }
}

const char* kThreeLinks = R"(<robot name="r">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="c"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="ja" type="continuous"><parent link="base"/><child link="a"/></joint>
  <joint name="jb" type="continuous"><parent link="a"/><child link="b"/></joint>
  %EXTRA%
</robot>)";

std::string three_links(const std::string& extra) {
  std::string s = kThreeLinks;
  return s.replace(s.find("%EXTRA%"), 7, extra);
}

TEST(RobotUrdf, LoopsAndCyclesAreRefusedWithTheJointsNamed) {
  // urdfdom accepts each of these and keeps one parent joint per link.
  const std::vector<BadUrdf> cases = {
      {"two_parents",
       "",
       R"(<joint name="jc1" type="continuous"><parent link="a"/><child link="c"/></joint>
        <joint name="jc2" type="continuous"><parent link="b"/><child link="c"/></joint>)",
       {"link 'c' with two parent joints 'jc1' and 'jc2' (a closed kinematic loop)"}},
      {"back_to_a",
       "",
       R"(<joint name="jc" type="continuous"><parent link="b"/><child link="c"/></joint>
        <joint name="jd" type="continuous"><parent link="c"/><child link="a"/></joint>)",
       {"link 'a' with two parent joints 'ja' and 'jd' (a closed kinematic loop)"}},
      // A cycle cut off from the root: c -> d -> c beside the chain.
      {"cycle",
       "",
       R"(<link name="d"/><joint name="jc" type="continuous"><parent link="d"/><child link="c"/></joint>
        <joint name="jd" type="continuous"><parent link="c"/><child link="d"/></joint>)",
       {"joints 'jc' -> 'jd' -> 'jc' form a cycle (link '"}},
      {"self",
       "",
       R"(<joint name="jc" type="continuous"><parent link="b"/><child link="c"/></joint>
        <joint name="js" type="continuous"><parent link="c"/><child link="c"/></joint>)",
       {"joint 'js' with link 'c' as both parent and child (a cycle)"}},
  };
  for (const BadUrdf& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write_scratch_file(std::string(c.name) + ".urdf", three_links(c.to));
    std::string key;
    const std::string msg = error_of([&] { robot::load_urdf(path, "b"); }, &key);
    EXPECT_EQ(key, "model.params.urdf");
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const std::string& e : c.expected) EXPECT_NE(msg.find(e), std::string::npos) << e << " in: " << msg;
  }
  // The valid twin: c on a as a branch beside b; all three joints are modeled.
  const robot::RobotModel m = robot::load_urdf(
      write_scratch_file(
          "branch.urdf",
          three_links(R"(<joint name="jc" type="continuous"><parent link="a"/><child link="c"/></joint>)")),
      "b");
  EXPECT_EQ(m.joint_names, (std::vector<std::string>{"ja", "jb", "jc"}));
  EXPECT_EQ(m.data.parent[2], 0);
}

// The iiwa with a tool on link 7 and a contact point 4 cm past it, each a fixed child with a mass.
std::string iiwa_with_contact() {
  std::ifstream in(std::string(knot::source_tree::configs_dir()) + "/robots/iiwa14_iiwa_grid.urdf");
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  const std::string tool = R"(  <joint name="iiwa_joint_ee" type="fixed">
    <parent link="iiwa_link_7"/><child link="iiwa_link_ee"/><origin rpy="0.3 0 1.2" xyz="0 0 0.1"/>
  </joint>
  <link name="iiwa_link_ee">
    <inertial><origin xyz="0.01 0 0.02"/><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
  <joint name="contact_joint" type="fixed">
    <parent link="iiwa_link_ee"/><child link="contact"/><origin xyz="0 0 0.04"/>
  </joint>
  <link name="contact"/>
)";
  text.insert(text.find("  <transmission"), tool);
  return text;
}

TEST(RobotUrdf, EeFrameIsTheNamedLinkNotItsFixedChildren) {
  const std::string path = write_scratch_file("iiwa_contact.urdf", iiwa_with_contact());
  const robot::RobotModel m = robot::load_urdf(path, "iiwa_link_7");
  EXPECT_EQ(m.data.n, 7);
  const robot::Frame& ee = m.frames[static_cast<std::size_t>(m.ee_frame)];
  EXPECT_EQ(ee.name, "iiwa_link_7");
  EXPECT_EQ(ee.body, 6);
  // At MPCGPU's rows the frame's origin is MPCGPU's end-effector position (tests/data/README.md) ...
  const auto traj = read_rows(std::string(knot::source_tree::test_data_dir()) + "/mpcgpu_0_0_traj.csv");
  const auto eepos = read_rows(std::string(knot::source_tree::test_data_dir()) + "/mpcgpu_0_0_eepos.traj");
  auto w = std::make_unique<robot::Workspace<double>>();
  for (std::size_t k : {0u, 100u, 400u}) {
    robot::forward_kinematics(m.data, traj[k].data(), *w);
    Vec3 p, contact = Vec3::Constant(knot::test::kNaN);
    robot::point_position(*w, ee.body, ee.p, p.data());
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(p(i), eepos[k][static_cast<std::size_t>(i)], 1e-5) << "row " << k;
    // ... and the contact frame, which the reader used to return, is 10 cm and 4 cm further on.
    for (const robot::Frame& f : m.frames)
      if (f.name == "contact") robot::point_position(*w, f.body, f.p, contact.data());
    const Mat3 R7 = Eigen::Map<const Mat3>(w->R[6]);
    const Vec3 expected = p + R7 * (Vec3(0, 0, 0.1) + rpy_matrix(Vec3(0.3, 0, 1.2)) * Vec3(0, 0, 0.04));
    EXPECT_LE((contact - expected).norm(), 1e-12);
    EXPECT_GT((contact - p).norm(), 0.1);
  }
  // Without ee_frame the end effector is the single leaf, the contact point.
  const robot::RobotModel leaf = robot::load_urdf(path);
  EXPECT_EQ(leaf.frames[static_cast<std::size_t>(leaf.ee_frame)].name, "contact");
  // ee_frame selects a frame and no longer cuts the chain: every joint stays in the model.
  const robot::RobotModel mid = robot::load_urdf(path, "iiwa_link_4");
  EXPECT_EQ(mid.data.n, 7);
  EXPECT_EQ(mid.frames[static_cast<std::size_t>(mid.ee_frame)].name, "iiwa_link_4");
  EXPECT_EQ(mid.frames[static_cast<std::size_t>(mid.ee_frame)].body, 3);
  EXPECT_EQ(mid.frames.size(), 11u);  // base, iiwa_link_0 .. iiwa_link_7, iiwa_link_ee, contact
}

}  // namespace

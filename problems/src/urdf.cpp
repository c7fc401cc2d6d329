#include "knot/problems/robot/urdf.hpp"

#include <console_bridge/console.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <urdf_parser/urdf_parser.h>

#include "knot/problems/error.hpp"
#include "knot/problems/robot/dynamics.hpp"

namespace knot::problems::robot {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A rigid transform: x_parent = R x_child + p, R 3 x 3 column-major.
struct Transform {
  double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double p[3] = {0, 0, 0};
};

Transform compose(const Transform& a, const Transform& b) {
  Transform c;
  for (int col = 0; col < 3; ++col)
    for (int row = 0; row < 3; ++row) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += a.R[row + 3 * k] * b.R[k + 3 * col];
      c.R[row + 3 * col] = s;
    }
  for (int row = 0; row < 3; ++row) {
    double s = a.p[row];
    for (int k = 0; k < 3; ++k) s += a.R[row + 3 * k] * b.p[k];
    c.p[row] = s;
  }
  return c;
}

Transform from_pose(const urdf::Pose& pose) {
  Transform t;
  double x = pose.rotation.x, y = pose.rotation.y, z = pose.rotation.z, w = pose.rotation.w;
  const double norm = std::sqrt(x * x + y * y + z * z + w * w);
  x /= norm, y /= norm, z /= norm, w /= norm;
  const double R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y + z * w),     2 * (x * z - y * w),
                       2 * (x * y - z * w),     1 - 2 * (x * x + z * z), 2 * (y * z + x * w),
                       2 * (x * z + y * w),     2 * (y * z - x * w),     1 - 2 * (x * x + y * y)};
  for (int k = 0; k < 9; ++k) t.R[k] = R[k];
  t.p[0] = pose.position.x;
  t.p[1] = pose.position.y;
  t.p[2] = pose.position.z;
  return t;
}

// Mass properties of a body accumulated about the body origin, so that links add up exactly.
struct MassSum {
  double m = 0;
  double mc[3] = {0, 0, 0};   // first moment
  double I_o[9] = {};         // rotational inertia about the body origin, body axes
};

void add_mass(MassSum& sum, double m, const double c[3], const double Ic[9]) {
  sum.m += m;
  const double cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
  for (int k = 0; k < 3; ++k) sum.mc[k] += m * c[k];
  for (int col = 0; col < 3; ++col)
    for (int row = 0; row < 3; ++row)
      sum.I_o[row + 3 * col] += Ic[row + 3 * col] + m * ((row == col ? cc : 0.0) - c[row] * c[col]);
}

// Serializes loads: urdfdom reports its errors through console_bridge's one global output handler.
std::mutex& parse_mutex() {
  static std::mutex m;
  return m;
}

// Keeps urdfdom's messages (instead of printing them) while it parses.
class CaptureLog final : public console_bridge::OutputHandler {
 public:
  CaptureLog() { console_bridge::useOutputHandler(this); }
  ~CaptureLog() override { console_bridge::restorePreviousOutputHandler(); }
  CaptureLog(const CaptureLog&) = delete;
  CaptureLog& operator=(const CaptureLog&) = delete;
  void log(const std::string& text, console_bridge::LogLevel level, const char*, int) override {
    if (level >= console_bridge::CONSOLE_BRIDGE_LOG_ERROR) {
      if (!errors.empty()) errors += "; ";
      errors += text;
    }
  }
  std::string errors;
};

class Builder {
 public:
  Builder(const std::string& path, const std::string& context) : path_(path), context_(context) {}

  [[noreturn]] void fail(const std::string& key, std::string expected, const std::string& found) const {
    throw ProblemError(SourceLocation{path_, 0, 0}, context_.empty() ? key : context_ + "." + key,
                       std::move(expected), found + " in " + path_);
  }

  urdf::ModelInterfaceSharedPtr parse() const {
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw ProblemError(SourceLocation{path_, 0, 0}, key("urdf"), "a readable URDF file", "'" + path_ + "' (no such file or not readable)");
    std::stringstream text;
    text << in.rdbuf();
    std::lock_guard<std::mutex> lock(parse_mutex());
    CaptureLog capture;
    urdf::ModelInterfaceSharedPtr model;
    std::string why;
    try {
      model = urdf::parseURDF(text.str());
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!model) {
      if (why.empty()) why = capture.errors.empty() ? "unknown urdfdom error" : capture.errors;
      fail("urdf", "a valid URDF file", "a file urdfdom rejects (" + why + ")");
    }
    return model;
  }

  RobotModel build(const urdf::ModelInterface& model, const std::string& ee_name) {
    out_.file = path_;
    out_.name = model.getName();
    for (const auto& [name, joint] : model.joints_) {
      if (joint->type == urdf::Joint::FLOATING || joint->type == urdf::Joint::PLANAR)
        fail("urdf", "a fixed-base chain of revolute, continuous, prismatic and fixed joints",
             std::string(joint->type == urdf::Joint::FLOATING ? "floating" : "planar") + " joint '" + name + "'");
      if (joint->type == urdf::Joint::UNKNOWN) fail("urdf", "a known joint type", "joint '" + name + "' of unknown type");
    }
    const urdf::LinkConstSharedPtr root = model.getRoot();
    if (!root) fail("urdf", "a link tree with a root", "no root link");

    // The end effector: the named link, or the single leaf.
    urdf::LinkConstSharedPtr ee;
    if (!ee_name.empty()) {
      ee = model.getLink(ee_name);
      if (!ee) {
        std::string names;
        for (const auto& [name, link] : model.links_) names += (names.empty() ? "" : ", ") + name;
        fail("ee_frame", "the name of a link (" + names + ")", "'" + ee_name + "'");
      }
    } else {
      std::vector<std::string> leaves;
      for (const auto& [name, link] : model.links_)
        if (link->child_joints.empty()) {
          leaves.push_back(name);
          ee = link;
        }
      if (leaves.size() != 1) {
        std::string names;
        for (const auto& l : leaves) names += (names.empty() ? "" : ", ") + l;
        fail("ee_frame", "ee_frame naming the end-effector link when the link tree branches",
             std::to_string(leaves.size()) + " leaf links (" + names + ")");
      }
    }

    // Joints from the root to the end effector.
    std::vector<urdf::JointConstSharedPtr> chain;
    for (urdf::LinkConstSharedPtr link = ee; link != root; link = model.getLink(link->parent_joint->parent_link_name))
      chain.insert(chain.begin(), link->parent_joint);

    add_link(*root, -1, Transform{}, chain.empty() ? nullptr : chain.front().get());
    int body = -1;
    Transform in_body;  // the current chain link's frame in the current body's frame
    for (std::size_t k = 0; k < chain.size(); ++k) {
      const urdf::Joint& joint = *chain[k];
      const Transform origin = from_pose(joint.parent_to_joint_origin_transform);
      if (joint.type == urdf::Joint::FIXED) {
        in_body = compose(in_body, origin);
      } else {
        body = add_joint(joint, compose(in_body, origin));
        in_body = Transform{};
      }
      const urdf::Link& child = *model.getLink(joint.child_link_name);
      add_link(child, body, in_body, k + 1 < chain.size() ? chain[k + 1].get() : nullptr);
      if (child.name == ee->name) out_.ee_frame = static_cast<int>(out_.frames.size()) - 1;
    }
    if (chain.empty()) out_.ee_frame = 0;

    RobotData& d = out_.data;
    if (d.n == 0) fail("urdf", "at least one revolute, continuous or prismatic joint between the root and the end effector",
                       "none (root '" + root->name + "', end effector '" + ee->name + "')");
    for (int i = 0; i < d.n; ++i) finish_body(i);
    check_mass_matrix();
    return std::move(out_);
  }

 private:
  std::string key(const std::string& k) const { return context_.empty() ? k : context_ + "." + k; }

  int add_joint(const urdf::Joint& joint, const Transform& placement) {
    RobotData& d = out_.data;
    if (d.n == kMaxJoints)
      fail("urdf", "at most " + std::to_string(kMaxJoints) + " moving joints on the chain", "more, at joint '" + joint.name + "'");
    if (joint.mimic) fail("urdf", "independent joints", "mimic joint '" + joint.name + "'");
    const int i = d.n++;
    out_.joint_names.push_back(joint.name);
    sums_.emplace_back();
    d.type[i] = joint.type == urdf::Joint::PRISMATIC ? JointType::Prismatic : JointType::Revolute;
    for (int k = 0; k < 9; ++k) d.joint_R[i][k] = placement.R[k];
    for (int k = 0; k < 3; ++k) d.joint_p[i][k] = placement.p[k];
    const double ax[3] = {joint.axis.x, joint.axis.y, joint.axis.z};
    const double norm = std::sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]);
    if (!(norm > 1e-12) || !std::isfinite(norm))
      fail("urdf", "a nonzero finite joint axis", "axis (" + std::to_string(ax[0]) + ", " + std::to_string(ax[1]) + ", " +
                                                      std::to_string(ax[2]) + ") of joint '" + joint.name + "'");
    for (int k = 0; k < 3; ++k) d.axis[i][k] = ax[k] / norm;

    d.q_lower[i] = -kInf;
    d.q_upper[i] = kInf;
    d.velocity_limit[i] = kInf;
    d.effort_limit[i] = kInf;
    if (const auto& lim = joint.limits) {
      if (joint.type != urdf::Joint::CONTINUOUS) {
        if (!(lim->lower <= lim->upper))
          fail("urdf", "lower <= upper", "limits [" + std::to_string(lim->lower) + ", " + std::to_string(lim->upper) +
                                             "] of joint '" + joint.name + "'");
        d.q_lower[i] = lim->lower;
        d.q_upper[i] = lim->upper;
      }
      if (!(lim->velocity >= 0) || !(lim->effort >= 0))
        fail("urdf", "velocity and effort limits >= 0", "velocity " + std::to_string(lim->velocity) + ", effort " +
                                                            std::to_string(lim->effort) + " of joint '" + joint.name + "'");
      if (lim->velocity > 0) d.velocity_limit[i] = lim->velocity;
      if (lim->effort > 0) d.effort_limit[i] = lim->effort;
    }
    return i;
  }

  // Records `link` as a frame on `body` at `in_body`, adds its mass there, and recurses into the
  // links fixed to it (except `next`, the chain's next joint, which the caller follows).
  void add_link(const urdf::Link& link, int body, const Transform& in_body, const urdf::Joint* next) {
    Frame f;
    f.name = link.name;
    f.body = body;
    for (int k = 0; k < 9; ++k) f.R[k] = in_body.R[k];
    for (int k = 0; k < 3; ++k) f.p[k] = in_body.p[k];
    out_.frames.push_back(f);
    if (const auto& in = link.inertial) {
      if (!(in->mass >= 0) || !std::isfinite(in->mass))
        fail("urdf", "a finite mass >= 0", "mass " + std::to_string(in->mass) + " of link '" + link.name + "'");
      const double Iin[9] = {in->ixx, in->ixy, in->ixz, in->ixy, in->iyy, in->iyz, in->ixz, in->iyz, in->izz};
      for (double v : Iin)
        if (!std::isfinite(v)) fail("urdf", "a finite inertia", "inertia of link '" + link.name + "'");
      if (body >= 0) {
        const Transform com = compose(in_body, from_pose(in->origin));
        // Ic = Rc Iin Rc' in body axes.
        double RI[9], Ic[9];
        for (int col = 0; col < 3; ++col)
          for (int row = 0; row < 3; ++row) {
            double s = 0;
            for (int k = 0; k < 3; ++k) s += com.R[row + 3 * k] * Iin[k + 3 * col];
            RI[row + 3 * col] = s;
          }
        for (int col = 0; col < 3; ++col)
          for (int row = 0; row < 3; ++row) {
            double s = 0;
            for (int k = 0; k < 3; ++k) s += RI[row + 3 * k] * com.R[col + 3 * k];
            Ic[row + 3 * col] = s;
          }
        add_mass(sums_[static_cast<std::size_t>(body)], in->mass, com.p, Ic);
      }
    }
    for (const auto& joint : link.child_joints) {
      if (joint.get() == next || joint->type != urdf::Joint::FIXED) continue;
      const urdf::LinkConstSharedPtr child = link.child_links.empty() ? nullptr : find_child(link, joint->child_link_name);
      if (child) add_link(*child, body, compose(in_body, from_pose(joint->parent_to_joint_origin_transform)), nullptr);
    }
  }

  static urdf::LinkConstSharedPtr find_child(const urdf::Link& link, const std::string& name) {
    for (const auto& c : link.child_links)
      if (c->name == name) return c;
    return nullptr;
  }

  // Mass properties of body i about its COM from the accumulated sums.
  void finish_body(int i) {
    const MassSum& s = sums_[static_cast<std::size_t>(i)];
    RobotData& d = out_.data;
    d.mass[i] = s.m;
    double c[3] = {0, 0, 0};
    if (s.m > 0)
      for (int k = 0; k < 3; ++k) c[k] = s.mc[k] / s.m;
    for (int k = 0; k < 3; ++k) d.com[i][k] = c[k];
    const double cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
    double Ic[9];
    for (int col = 0; col < 3; ++col)
      for (int row = 0; row < 3; ++row)
        Ic[row + 3 * col] = s.I_o[row + 3 * col] - s.m * ((row == col ? cc : 0.0) - c[row] * c[col]);
    d.inertia[i][0] = Ic[0];
    d.inertia[i][1] = Ic[4];
    d.inertia[i][2] = Ic[8];
    d.inertia[i][3] = 0.5 * (Ic[3] + Ic[1]);
    d.inertia[i][4] = 0.5 * (Ic[6] + Ic[2]);
    d.inertia[i][5] = 0.5 * (Ic[7] + Ic[5]);
  }

  // Every moving joint must move some mass or inertia, else forward dynamics has no solution. Checked
  // at q = 0 (or the middle of a range that excludes 0): a singular mass matrix there is one
  // everywhere for a massless link, the usual cause.
  void check_mass_matrix() const {
    const RobotData& d = out_.data;
    double q[kMaxJoints];
    for (int i = 0; i < d.n; ++i) {
      q[i] = 0;
      if (d.q_lower[i] > 0 || d.q_upper[i] < 0) q[i] = 0.5 * (d.q_lower[i] + d.q_upper[i]);
    }
    auto w = std::make_unique<Workspace<double>>();
    mass_matrix(d, q, w->L, d.n, *w);
    const int fail_at = detail::factor_mass(d.n, *w);
    if (fail_at != 0)
      fail("urdf", "a positive definite joint-space mass matrix (every moving joint must move mass or inertia)",
           "a singular one at joint '" + out_.joint_names[static_cast<std::size_t>(fail_at - 1)] + "'");
  }

  std::string path_, context_;
  RobotModel out_;
  std::vector<MassSum> sums_;
};

}  // namespace

RobotModel load_urdf(const std::string& path, const std::string& ee_frame, const std::string& context) {
  Builder builder(path, context);
  const urdf::ModelInterfaceSharedPtr model = builder.parse();
  return builder.build(*model, ee_frame);
}

}  // namespace knot::problems::robot

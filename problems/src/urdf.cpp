#include "knot/problems/robot/urdf.hpp"

#include <console_bridge/console.h>
#include <urdf_parser/urdf_parser.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

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

Transform to_transform(const urdf::Pose& pose) {
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

// The element urdfdom's report is about: it ends a failed element's messages with "... for Link [x]"
// or "... for joint [x]". Empty when the text names neither.
std::string reported_subject(const std::string& errors) {
  for (const char* tag : {"Link [", "joint ["}) {
    const std::size_t at = errors.find(tag);
    if (at == std::string::npos) continue;
    const std::size_t begin = at + std::string(tag).size(), close = errors.find(']', begin);
    if (close == std::string::npos) continue;
    return std::string(tag[0] == 'L' ? "link '" : "joint '") + errors.substr(begin, close - begin) + "'";
  }
  return {};
}

std::string num(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// The shortest text that reads back as v: limits a hair apart must not print alike.
std::string exact(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t k = 0; k < names.size(); ++k)
    out += std::string(k == 0 ? "" : (k + 1 == names.size() ? " and " : ", ")) + "'" + names[k] + "'";
  return out;
}

// Principal moments of a 3 x 3 rotational inertia may differ from a physical body's only by this
// fraction of the largest one: URDFs exported from CAD round them, and a thin plate or rod sits
// exactly on the triangle inequality's boundary.
constexpr double kInertiaTolerance = 1e-6;
// A moving joint whose range is narrower than this (rad or m) is accepted with a warning: it is
// most likely meant to be fixed, and it makes the problem's bounds nearly an equality.
constexpr double kNarrowRange = 1e-4;

class Builder {
 public:
  Builder(const std::string& path, const std::string& context) : path_(path), context_(context) {}

  [[noreturn]] void fail(const std::string& key, std::string expected, const std::string& found) const {
    throw ProblemError(SourceLocation{path_, 0, 0}, context_.empty() ? key : context_ + "." + key,
                       std::move(expected), found + " in " + path_);
  }

  urdf::ModelInterfaceSharedPtr parse() {
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw ProblemError(SourceLocation{path_, 0, 0}, key("urdf"), "a readable URDF file", "'" + path_ + "' (no such file or not readable)");
    std::stringstream text;
    text << in.rdbuf();
    refuse_broken_utf8(text.str());
    refuse_percent(text.str());
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
    reports_ = capture.errors;
    return model;
  }

  // urdfdom drops an element it cannot read (an inertial with a mass of 'nan' or 'heavy', an origin
  // with two numbers) and still returns the model, which would then lack that link's mass. Called
  // once the caller holds the model's links for cutting apart (a cycle would leak them otherwise).
  void refuse_reports() const {
    if (reports_.empty()) return;
    const std::string subject = reported_subject(reports_);
    fail("urdf", "a URDF file urdfdom reads without errors",
         (subject.empty() ? "" : subject + ": ") + "urdfdom reports '" + reports_ + "'");
  }

  RobotModel build(const urdf::ModelInterface& model, const std::string& ee_name) {
    out_.file = path_;
    out_.name = model.getName();
    for (const auto& [name, joint] : model.joints_) {
      if (joint->type == urdf::Joint::FLOATING || joint->type == urdf::Joint::PLANAR)
        fail("urdf", "a fixed-base tree of revolute, continuous, prismatic and fixed joints",
             std::string(joint->type == urdf::Joint::FLOATING ? "floating" : "planar") + " joint '" + name + "'");
      if (joint->type == urdf::Joint::UNKNOWN) fail("urdf", "a known joint type", "joint '" + name + "' of unknown type");
    }
    check_tree(model);
    const urdf::LinkConstSharedPtr root = model.getRoot();
    if (!root) fail("urdf", "a link tree with a root", "no root link");

    visit(model, *root, -1, Transform{});
    RobotData& d = out_.data;
    if (d.n == 0)
      fail("urdf", "at least one revolute, continuous or prismatic joint", "none (root '" + root->name + "')");
    if (!set_tree(d, parents_.data())) throw std::logic_error("load_urdf: bodies not numbered parents first");
    for (int i = 0; i < d.n; ++i) finish_body(i);
    select_ee(model, ee_name);
    check_mass_matrix();
    return std::move(out_);
  }

 private:
  std::string key(const std::string& k) const { return context_.empty() ? k : context_ + "." + k; }

  // tinyxml, which urdfdom parses with, steps over a multi-byte UTF-8 sequence by the length its first
  // byte announces, so a sequence cut short by the end of the text made it read past the string's
  // terminator (found by fuzz_urdf). So the text must be well-formed UTF-8 (ASCII is) before urdfdom
  // sees it.
  void refuse_broken_utf8(const std::string& text) const {
    int line = 1, column = 1;
    for (std::size_t i = 0; i < text.size();) {
      const auto b = static_cast<unsigned char>(text[i]);
      const std::size_t len = b < 0x80 ? 1 : (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3
                              : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
      bool ok = len > 0 && i + len <= text.size();
      for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
      if (!ok) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", b);
        throw ProblemError(SourceLocation{path_, line, column}, key("urdf"),
                           "a URDF in UTF-8 (tinyxml, which urdfdom reads it with, runs past a broken sequence)",
                           std::string("byte ") + hex + " at line " + std::to_string(line) + " column " +
                               std::to_string(column) + " of " + path_ + ", which starts no complete UTF-8 character");
      }
      if (b == '\n') line++, column = 1;
      else column++;
      i += len;
    }
  }

  // urdfdom hands text from the file to console_bridge as a printf format, so a '%' in a value it
  // reports ("%s" in an origin, say) would be read as a conversion and crash inside vsnprintf before
  // any handler of ours sees it. Comments never reach urdfdom's messages and may keep theirs.
  void refuse_percent(const std::string& text) const {
    int line = 1, column = 1;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 4, "<!--") == 0) {
        const std::size_t end = text.find("-->", i + 4);
        const std::size_t stop = end == std::string::npos ? text.size() : end + 3;
        for (; i < stop; ++i) {
          if (text[i] == '\n') line++, column = 1;
          else column++;
        }
        --i;
        continue;
      }
      if (text[i] == '%')
        throw ProblemError(SourceLocation{path_, line, column}, key("urdf"),
                           "a URDF without '%' outside comments (urdfdom would read it as a printf format)",
                           "'%' at line " + std::to_string(line) + " column " + std::to_string(column) + " of " + path_);
      if (text[i] == '\n') line++, column = 1;
      else column++;
    }
  }

  // Every link but the root has exactly one parent joint and no link is its own ancestor. urdfdom
  // keeps one of a link's parent joints and loses the other without a word, and it accepts a cycle
  // of joints cut off from the root; either would lose joints here.
  void check_tree(const urdf::ModelInterface& model) const {
    std::map<std::string, std::vector<std::string>> parents;  // child link -> its parent joints
    for (const auto& [name, joint] : model.joints_) {
      if (joint->parent_link_name == joint->child_link_name)
        fail("urdf", "a tree of links (no link its own ancestor)",
             "joint '" + name + "' with link '" + joint->child_link_name + "' as both parent and child (a cycle)");
      parents[joint->child_link_name].push_back(name);
    }
    for (const auto& [link, joints] : parents)
      if (joints.size() > 1)
        fail("urdf", "a tree of links (one parent joint per link)",
             "link '" + link + "' with " + (joints.size() == 2 ? "two" : std::to_string(joints.size())) +
                 " parent joints " + quoted_list(joints) + " (a closed kinematic loop)");
    // Each link now has at most one parent: walk up from every link and look for a repeat.
    std::map<std::string, int> state;  // 1 on the current walk, 2 known to reach the root
    for (const auto& [start, unused] : model.links_) {
      std::vector<std::string> walk;  // links from `start` upwards
      std::string link = start;
      while (state[link] == 0) {
        state[link] = 1;
        walk.push_back(link);
        const auto up = parents.find(link);
        if (up == parents.end()) break;
        link = model.joints_.at(up->second.front())->parent_link_name;
        if (state[link] == 1) {
          // The cycle: from `link` back up to `link`, then written parent to child.
          std::vector<std::string> cycle;
          std::string l = link;
          do {
            const std::string& j = parents.at(l).front();
            cycle.push_back(j);
            l = model.joints_.at(j)->parent_link_name;
          } while (l != link);
          // Parent to child, starting from the first joint by name (the same text whichever link the
          // walk met first).
          std::reverse(cycle.begin(), cycle.end());
          std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
          std::string text;
          for (const std::string& j : cycle) text += "'" + j + "' -> ";
          fail("urdf", "a tree of links (no link its own ancestor)",
               "joints " + text + "'" + cycle.front() + "' form a cycle (link '" +
                   model.joints_.at(cycle.front())->parent_link_name + "' is its own ancestor)");
        }
      }
      for (const std::string& l : walk) state[l] = 2;
    }
  }

  // Depth first from `link`, on `body` at `in_body`: records the link as a frame, adds its mass to
  // the body, and follows its child joints in the order of their names (a fixed joint stays on the
  // body, a moving one starts a new body). Bodies are so numbered parents first.
  void visit(const urdf::ModelInterface& model, const urdf::Link& link, int body, const Transform& in_body) {
    add_link(link, body, in_body);
    std::vector<urdf::JointConstSharedPtr> joints(link.child_joints.begin(), link.child_joints.end());
    std::sort(joints.begin(), joints.end(), [](const auto& a, const auto& b) { return a->name < b->name; });
    for (const auto& joint : joints) {
      const urdf::LinkConstSharedPtr child = model.getLink(joint->child_link_name);
      if (!child) fail("urdf", "joints between links of the file", "joint '" + joint->name + "' to a missing link");
      const Transform origin =
          compose(in_body, checked_transform(joint->parent_to_joint_origin_transform, "joint '" + joint->name + "'"));
      if (joint->type == urdf::Joint::FIXED)
        visit(model, *child, body, origin);
      else
        visit(model, *child, add_joint(*joint, origin, body), Transform{});
    }
  }

  Transform checked_transform(const urdf::Pose& pose, const std::string& what) const {
    const double v[7] = {pose.position.x, pose.position.y, pose.position.z, pose.rotation.x,
                         pose.rotation.y, pose.rotation.z, pose.rotation.w};
    for (double x : v)
      if (!std::isfinite(x)) fail("urdf", "a finite origin", "the origin of " + what);
    return to_transform(pose);
  }

  int add_joint(const urdf::Joint& joint, const Transform& placement, int parent) {
    RobotData& d = out_.data;
    if (d.n == kMaxJoints)
      fail("urdf", "at most " + std::to_string(kMaxJoints) + " moving joints", "more, at joint '" + joint.name + "'");
    if (joint.mimic) fail("urdf", "independent joints", "mimic joint '" + joint.name + "'");
    const int i = d.n++;
    out_.joint_names.push_back(joint.name);
    parents_.push_back(parent);
    sums_.emplace_back();
    d.type[i] = joint.type == urdf::Joint::PRISMATIC ? JointType::Prismatic : JointType::Revolute;
    for (int k = 0; k < 9; ++k) d.joint_R[i][k] = placement.R[k];
    for (int k = 0; k < 3; ++k) d.joint_p[i][k] = placement.p[k];
    const double ax[3] = {joint.axis.x, joint.axis.y, joint.axis.z};
    const double norm = std::sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]);
    if (!(norm > 1e-12) || !std::isfinite(norm))
      fail("urdf", "a nonzero finite joint axis",
           "axis (" + num(ax[0]) + ", " + num(ax[1]) + ", " + num(ax[2]) + ") of joint '" + joint.name + "'");
    for (int k = 0; k < 3; ++k) d.axis[i][k] = ax[k] / norm;

    d.q_lower[i] = -kInf;
    d.q_upper[i] = kInf;
    d.velocity_limit[i] = kInf;
    d.effort_limit[i] = kInf;
    if (const auto& lim = joint.limits) {
      if (joint.type != urdf::Joint::CONTINUOUS) {
        if (!(lim->lower <= lim->upper))
          fail("urdf", "lower <= upper",
               "limits [" + num(lim->lower) + ", " + num(lim->upper) + "] of joint '" + joint.name + "'");
        if (lim->lower == lim->upper)
          fail("urdf", "a joint that can move (lower < upper; a joint that cannot is type=\"fixed\")",
               "limits [" + num(lim->lower) + ", " + num(lim->upper) + "] of joint '" + joint.name + "' (zero range)");
        if (lim->upper - lim->lower < kNarrowRange)
          out_.warnings.push_back(path_ + ": joint '" + joint.name + "' moves only " + num(lim->upper - lim->lower) +
                                  " (limits [" + exact(lim->lower) + ", " + exact(lim->upper) +
                                  "]); if it should not move, make it type=\"fixed\"");
        d.q_lower[i] = lim->lower;
        d.q_upper[i] = lim->upper;
      }
      if (!(lim->velocity >= 0) || !(lim->effort >= 0))
        fail("urdf", "velocity and effort limits >= 0",
             "velocity " + num(lim->velocity) + ", effort " + num(lim->effort) + " of joint '" + joint.name + "'");
      if (lim->velocity > 0) d.velocity_limit[i] = lim->velocity;
      if (lim->effort > 0) d.effort_limit[i] = lim->effort;
    }
    return i;
  }

  // A link's mass properties must be those of a body: a finite mass >= 0 and a rotational inertia
  // whose principal moments are >= 0 and obey the triangle inequality (each at most the sum of the
  // other two), both within kInertiaTolerance of the largest moment.
  void check_inertial(const urdf::Link& link, const urdf::Inertial& in) {
    if (!(in.mass >= 0) || !std::isfinite(in.mass))
      fail("urdf", "a finite mass >= 0", "mass " + num(in.mass) + " of link '" + link.name + "'");
    const double I[6] = {in.ixx, in.iyy, in.izz, in.ixy, in.ixz, in.iyz};
    for (double v : I)
      if (!std::isfinite(v))
        fail("urdf", "a finite inertia",
             "inertia (ixx " + num(in.ixx) + ", iyy " + num(in.iyy) + ", izz " + num(in.izz) + ", ixy " + num(in.ixy) +
                 ", ixz " + num(in.ixz) + ", iyz " + num(in.iyz) + ") of link '" + link.name + "'");
    Eigen::Matrix3d M;
    M << in.ixx, in.ixy, in.ixz, in.ixy, in.iyy, in.iyz, in.ixz, in.iyz, in.izz;
    const Eigen::Vector3d d = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(M, Eigen::EigenvaluesOnly).eigenvalues();
    const double tol = kInertiaTolerance * d.cwiseAbs().maxCoeff();
    if (d(0) < -tol || d(0) + d(1) < d(2) - tol)
      fail("urdf", "a physical rotational inertia (principal moments >= 0, each at most the sum of the other two)",
           "principal moments (" + num(d(0)) + ", " + num(d(1)) + ", " + num(d(2)) + ") of link '" + link.name + "'" +
               (d(0) < -tol ? " (a negative moment)" : " (the triangle inequality fails)"));
    const double rounding = 1e-12 * d.cwiseAbs().maxCoeff();  // the eigensolver's own error
    if (d(0) < -rounding || d(0) + d(1) < d(2) - rounding)
      out_.warnings.push_back(path_ + ": link '" + link.name + "' has principal moments (" + num(d(0)) + ", " +
                              num(d(1)) + ", " + num(d(2)) + ") that " +
                              (d(0) < 0 ? "include a negative one" : "break the triangle inequality") +
                              " by less than the rounding tolerance (1e-6 of the largest); accepted");
  }

  // Records `link` as a frame on `body` at `in_body` and adds its mass there.
  void add_link(const urdf::Link& link, int body, const Transform& in_body) {
    Frame f;
    f.name = link.name;
    f.body = body;
    for (int k = 0; k < 9; ++k) f.R[k] = in_body.R[k];
    for (int k = 0; k < 3; ++k) f.p[k] = in_body.p[k];
    out_.frames.push_back(f);
    const auto& in = link.inertial;
    if (!in) return;
    check_inertial(link, *in);
    if (body < 0) return;  // carried by the base
    const double Iin[9] = {in->ixx, in->ixy, in->ixz, in->ixy, in->iyy, in->iyz, in->ixz, in->iyz, in->izz};
    const Transform com = compose(in_body, checked_transform(in->origin, "the inertial of link '" + link.name + "'"));
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

  // The end effector: the named link itself, or the single leaf of the link tree.
  void select_ee(const urdf::ModelInterface& model, const std::string& ee_name) {
    std::string name = ee_name;
    if (name.empty()) {
      std::vector<std::string> leaves;
      for (const auto& [n, link] : model.links_)
        if (link->child_joints.empty()) leaves.push_back(n);
      if (leaves.size() != 1) {
        std::string names;
        for (const auto& l : leaves) names += (names.empty() ? "" : ", ") + l;
        fail("ee_frame", "ee_frame naming the end-effector link when the link tree branches",
             std::to_string(leaves.size()) + " leaf links (" + names + ")");
      }
      name = leaves.front();
    }
    for (std::size_t k = 0; k < out_.frames.size(); ++k)
      if (out_.frames[k].name == name) {
        out_.ee_frame = static_cast<int>(k);
        return;
      }
    std::string names;
    for (const auto& [n, link] : model.links_) names += (names.empty() ? "" : ", ") + n;
    fail("ee_frame", "the name of a link (" + names + ")", "'" + ee_name + "'");
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
  std::string reports_;  // urdfdom's error reports while parsing, "; "-separated
  RobotModel out_;
  std::vector<MassSum> sums_;
  std::vector<int> parents_;
};

}  // namespace

RobotModel load_urdf(const std::string& path, const std::string& ee_frame, const std::string& context) {
  Builder builder(path, context);
  const urdf::ModelInterfaceSharedPtr model = builder.parse();
  // urdfdom's links own their children, so a cycle of joints in the file would keep its links alive
  // after the model is dropped; cut the links apart on the way out, whether the build throws or not.
  struct CutLinks {
    urdf::ModelInterface& m;
    ~CutLinks() {
      for (auto& [name, link] : m.links_) link->clear();
    }
  } cut{*model};
  builder.refuse_reports();
  return builder.build(*model, ee_frame);
}

}  // namespace knot::problems::robot

// A fixed-base robot whose moving joints form a tree (a serial arm, or branches: two arms on a
// torso, fingers on a hand), in plain fixed-capacity arrays, so that the dynamics
// (robot/dynamics.hpp) run unchanged in device code. Built from a URDF by load_urdf (robot/urdf.hpp).
//
// Moving joints are numbered 0..n-1 depth first from the base; body j is the child link of joint j
// and its parent is body parent[j] < j (-1 is the fixed base, whose frame is the world), so a chain
// has parent[j] = j - 1. Fixed joints are already merged: their child links' inertias are added to
// the parent body, and their transforms are folded into the next moving joint's placement.
//
// Joint j places its frame in the parent body's frame by (joint_R[j], joint_p[j]); the body frame is
// the joint frame moved by the joint variable:
//   revolute   R_body = R_parent joint_R Rot(axis, q_j),  p_body = p_parent + R_parent joint_p
//   prismatic  R_body = R_parent joint_R,                 p_body = p_parent + R_parent (joint_p + joint_R axis q_j)
// Rotations are 3 x 3 column-major. Body quantities are in the body frame.
#pragma once

namespace knot::problems::robot {

inline constexpr int kMaxJoints = 16;
static_assert(kMaxJoints <= 32, "ancestor sets are 32-bit masks");

enum class JointType : int { Revolute = 0, Prismatic = 1 };

struct RobotData {
  int n = 0;  // moving joints (= bodies), 1..kMaxJoints

  // The tree: parent body (-1 the base), and bit j of ancestors[i] set when body j is i or an
  // ancestor of i (so column j of a Jacobian of body i is nonzero). Set both with set_tree.
  int parent[kMaxJoints] = {};
  unsigned ancestors[kMaxJoints] = {};

  JointType type[kMaxJoints] = {};
  double joint_R[kMaxJoints][9] = {};  // joint frame in parent body frame, column-major
  double joint_p[kMaxJoints][3] = {};
  double axis[kMaxJoints][3] = {};  // unit axis in the joint frame

  double mass[kMaxJoints] = {};
  double com[kMaxJoints][3] = {};      // centre of mass in the body frame
  double inertia[kMaxJoints][6] = {};  // about the COM, body axes: xx, yy, zz, xy, xz, yz

  double gravity[3] = {0.0, 0.0, -9.81};  // world frame, m/s^2

  // Limits, +-inf where the URDF gives none (continuous joints have no position limits).
  double q_lower[kMaxJoints] = {};
  double q_upper[kMaxJoints] = {};
  double velocity_limit[kMaxJoints] = {};  // |qd_j| <= velocity_limit[j]
  double effort_limit[kMaxJoints] = {};    // |tau_j| <= effort_limit[j]
};

// Sets r.parent from `parent` (n entries) and fills r.ancestors. False, with r unchanged, unless
// -1 <= parent[i] < i for every i (a tree numbered parents first).
inline bool set_tree(RobotData& r, const int* parent) {
  for (int i = 0; i < r.n; ++i)
    if (parent[i] < -1 || parent[i] >= i) return false;
  for (int i = 0; i < r.n; ++i) {
    r.parent[i] = parent[i];
    r.ancestors[i] = (1u << i) | (parent[i] >= 0 ? r.ancestors[parent[i]] : 0u);
  }
  return true;
}

}  // namespace knot::problems::robot

// Reading a fixed-base robot from a URDF file (host only; parsed with urdfdom).
//
// The whole link tree is modeled: every revolute, continuous and prismatic joint becomes a moving
// joint (a body), numbered depth first from the root with a link's child joints in the order of
// their names, so a serial chain keeps its order base to tip and a branching robot (two arms on a
// torso, fingers on a hand) gets one joint per branch joint. Fixed joints are merged into the body
// they hang from (masses, COMs and inertias combined about the common COM). Every link is a frame.
// `ee_frame` only selects the end-effector link (its own frame, whatever hangs from it); without it
// the single leaf of the link tree is the end effector.
//
// Refused, each with the link or joint named: floating and planar joints; mimic joints; a link with
// two parent joints (a closed kinematic loop) and a cycle of joints; any error urdfdom reports while
// it reads the file (it drops an element it cannot read, such as an inertial with a mass 'nan', and
// would otherwise return the model without it); a mass that is negative or not finite; a rotational
// inertia that is not finite or not a body's (a negative principal moment, a triangle-inequality
// violation); a revolute or prismatic joint with lower == upper (a joint that cannot move is fixed);
// more than kMaxJoints moving joints; a joint that moves no mass. Joint damping and friction are
// ignored.
//
// Limits: revolute and prismatic position limits from <limit lower upper>; continuous joints are
// unbounded; velocity and effort from <limit velocity effort>, where 0 or a missing <limit> means
// unbounded (+inf).
#pragma once

#include <string>
#include <vector>

#include "knot/problems/robot/robot_data.hpp"

namespace knot::problems::robot {

// A URDF link as a frame fixed on a body: the link frame is (R, p) in the body frame (R 3 x 3
// column-major). body is -1 for links fixed to the base (the world).
struct Frame {
  std::string name;
  int body = -1;
  double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double p[3] = {0, 0, 0};
};

struct RobotModel {
  RobotData data;
  std::string name;                      // <robot name>
  std::string file;                      // the URDF path as given
  std::vector<std::string> joint_names;  // the n moving joints, in body order (depth first)
  std::vector<Frame> frames;             // every link, depth first from the root
  int ee_frame = -1;                     // index in frames of the end-effector link
  // What was accepted but is close to being refused (a joint range near zero, an inertia that
  // breaks a bound only within rounding), one sentence each naming the file and the link or joint.
  std::vector<std::string> warnings;
};

// Throws ProblemError (location: the URDF file) with key path `<context>.urdf` for a missing,
// unreadable or malformed file and for refused content, and `<context>.ee_frame` when ee_frame
// names no link or is needed (the tree has several leaves) and missing. gravity is left at [0, 0, -9.81].
RobotModel load_urdf(const std::string& path, const std::string& ee_frame = {},
                     const std::string& context = "model.params");

}  // namespace knot::problems::robot

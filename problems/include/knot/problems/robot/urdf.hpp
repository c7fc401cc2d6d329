// Reading a fixed-base serial chain from a URDF file (host only; parsed with urdfdom).
//
// The chain runs from the root link to the end-effector link: `ee_frame` when given, else the single
// leaf of the link tree (a branching tree then needs `ee_frame`). Revolute, continuous and prismatic
// joints on the chain become moving joints; fixed joints are merged into the body they hang from
// (masses, COMs and inertias combined about the common COM), on the chain or in a fixed-only
// subtree beside it.
// Links reached from the chain only through another moving joint (other branches, links beyond
// ee_frame) are not modeled. Floating and planar joints anywhere in the file are rejected, as are
// mimic joints on the chain. Joint damping and friction are ignored.
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
  std::vector<std::string> joint_names;  // the n moving joints, base to tip
  std::vector<Frame> frames;             // every modeled link, in chain order (fixed subtrees after their parent)
  int ee_frame = -1;                     // index in frames of the end-effector link
};

// Throws ProblemError (location: the URDF file) with key path `<context>.urdf` for a missing,
// unreadable or malformed file and for unsupported content, and `<context>.ee_frame` when ee_frame
// names no link or is needed and missing. gravity is left at [0, 0, -9.81].
RobotModel load_urdf(const std::string& path, const std::string& ee_frame = {},
                     const std::string& context = "model.params");

}  // namespace knot::problems::robot

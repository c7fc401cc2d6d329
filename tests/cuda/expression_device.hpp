// Launcher of the expression tape's device evaluation (expression_device.cu), plain C++ so that the
// host test built by the C++ compiler calls it.
#pragma once

#include <string>
#include <vector>

#include "knot/problems/expression.hpp"

namespace knot::test {

// The width of the duals in the kernel: models with nx + nu = 5 (the cart-pole, the acrobot).
inline constexpr int kDeviceExprWidth = 5;
inline constexpr int kDeviceExprPacked = problems::HyperDual<kDeviceExprWidth>::kPacked;

struct DeviceExprResult {
  std::vector<double> f;  // points x nx, the double evaluation
  std::vector<double> J;  // points x (nx x nw), column-major per point: the Dual<Tangent<5>> sweep
  std::vector<double> H;  // points x (nx x packed): each output's HyperDual<5> Hessian, hyperdual.hpp's packing
  std::vector<double> JL;  // as J, by ExpressionDynamics::jacobian (the tape's lanes seeded alone)
};

// Copies `tape` (its instructions and output registers) into device memory, evaluates it at each of
// the points w (nx + nu per point, back to back), one thread per point, in double, Dual and
// HyperDual, seeded with the unit directions of w, and by ExpressionDynamics::jacobian (its
// Jacobian structure copied too). Returns "" or the CUDA error that stopped it.
std::string evaluate_tape_on_device(const problems::ExprTape& tape, int nx, int nu, const std::vector<double>& w,
                                    DeviceExprResult& out);

}  // namespace knot::test

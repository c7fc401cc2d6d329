// The host-side model interface: dynamics x' = f(x, u) with exact first derivatives.
//
// Concrete models are templates on the scalar, callable in device code (models/*.hpp); ModelAdapter
// (model_adapter.hpp) wraps one in this interface and differentiates it with forward-mode duals
// unless the model supplies analytic Jacobians. A Model is immutable after construction; per-call
// scratch lives in the ModelData it creates (Pinocchio's model/data split), so evaluation never
// allocates and one Model can serve several threads, each with its own data.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace knot::problems {

enum class IntegratorType;  // integrator.hpp

// How a second-order evaluation (Model::step_hessian) went.
enum class SecondOrderStatus {
  Ok,
  Unsupported,  // this model, scheme or size has none: the caller differences the gradient instead
  NonFinite,    // the step or its derivatives are not finite at this point
};

class ModelData {
 public:
  virtual ~ModelData() = default;
};

// Bounds a model knows from its description (a URDF's joint limits); empty vectors when none.
struct ModelLimits {
  std::vector<double> x_lower, x_upper;  // nx each, +-inf where unbounded
  std::vector<double> u_lower, u_upper;  // nu each
};

// Forward kinematics of named frames, for end-effector costs and constraints (manipulators).
class Kinematics {
 public:
  virtual ~Kinematics() = default;
  virtual int frame_count() const = 0;
  virtual std::string frame_name(int frame) const = 0;
  // Index of a frame (URDF link) by name; nullopt when unknown.
  virtual std::optional<int> frame_index(std::string_view name) const = 0;
  // The frame an end-effector term without `frame` reads (a manipulator's ee_frame).
  virtual int default_frame() const { return frame_count() - 1; }
  // World position p of the point `offset` (frame coordinates) on `frame` at state x; J (3 x nx,
  // column-major) is dp/dx when not null.
  virtual void frame_position(ModelData& data, const double* x, int frame, const std::array<double, 3>& offset,
                              double* p, double* J) const = 0;
  // H += sum_k c_k d2p_k / dx2 (p as frame_position's, c three weights; H nx x nx, column-major,
  // ld ldh), adding equal numbers to H(i, j) and H(j, i). false (the default) says the model has no
  // second derivatives of its frames, and H is left untouched.
  virtual bool add_frame_curvature(ModelData& /*data*/, const double* /*x*/, int /*frame*/,
                                   const std::array<double, 3>& /*offset*/, const double* /*c*/, double* /*H*/,
                                   int /*ldh*/) const {
    return false;
  }
};

// One value a model was built with, named as the problem file's model.params writes it: numbers
// (one, or a vector such as gravity), or text (a path, a frame name, true/false).
struct ModelParameter {
  ModelParameter(std::string n, std::vector<double> v, std::string t = {})
      : name(std::move(n)), values(std::move(v)), text(std::move(t)) {}
  std::string name;
  std::vector<double> values;  // empty for a text value
  std::string text;
};

class Model {
 public:
  virtual ~Model() = default;

  virtual std::string_view type() const = 0;  // the registry name, e.g. "cartpole"
  virtual int nx() const = 0;
  virtual int nu() const = 0;
  // Split x = [q; v] for semi-implicit Euler: the first nq() states are positions. 0 when the
  // model has no such split (the integrator then refuses semi_implicit_euler).
  virtual int nq() const { return 0; }
  // True when x = [q; v] with nx = 2 nq and f's first nq rows are v itself (q' = v, so fx's first
  // rows are [0 I] and fu's are zero): the integrators then skip what those rows would cost.
  virtual bool velocity_rows() const { return false; }
  // True when dynamics() is already the discrete map x+ = f(x, u) (a discrete linear model); the
  // integrator then applies it as is.
  virtual bool discrete_time() const { return false; }
  virtual std::vector<std::string> state_names() const;    // default x0, x1, ...
  virtual std::vector<std::string> control_names() const;  // default u0, u1, ...

  virtual std::unique_ptr<ModelData> make_data() const = 0;
  // f = x' (continuous time) or x+ (discrete time).
  virtual void dynamics(ModelData& data, const double* x, const double* u, double* f) const = 0;
  // f and its Jacobians fx = df/dx (nx x nx) and fu = df/du (nx x nu), column-major.
  virtual void dynamics_jacobian(ModelData& data, const double* x, const double* u, double* f, double* fx,
                                 double* fu) const = 0;
  // The chain rule through f for an integrator stage: the state point depends on (x0, u) with
  // S = d x / d(x0, u) (nx x (nx + nu)) and u is the control itself, so K = d f / d(x0, u) =
  // fx S + [0 | fu] (nx x (nx + nu)); both column-major, and f as above. A model that can seed S
  // into its own evaluation (forward-mode duals) forms K without fx and fu and returns true; false
  // (the default) leaves the product to the caller.
  virtual bool dynamics_chain(ModelData& /*data*/, const double* /*x*/, const double* /*u*/, const double* /*S*/,
                              double* /*f*/, double* /*K*/) const {
    return false;
  }

  // H = sum_i lambda_i d2F_i / dw2 (nw x nw, nw = nx + nu, column-major), the curvature of
  // lambda' F(x, u) in w = (x, u) for one step F of the explicit scheme `type` (integrator.hpp)
  // with step dt, by forward mode (second order on a scalar template, model_adapter.hpp; over the
  // analytic first derivatives for the manipulator): exact to rounding, with H(i, j) and H(j, i)
  // one number. Unsupported (the default, and for implicit schemes) leaves H untouched.
  virtual SecondOrderStatus step_hessian(ModelData& /*data*/, IntegratorType /*type*/, const double* /*x*/,
                                         const double* /*u*/, double /*dt*/, const double* /*lambda*/,
                                         double* /*H*/) const {
    return SecondOrderStatus::Unsupported;
  }

  // Optional capabilities.
  virtual const Kinematics* kinematics() const { return nullptr; }
  virtual ModelLimits limits() const { return {}; }
  // What the model's data accepted but is close to being refused, one sentence each (knot check and
  // knot solve print them); empty for most models.
  virtual std::vector<std::string> warnings() const { return {}; }
  // The parameters the model was built with, defaults included (knot check prints them); empty when
  // the model has none to show.
  virtual std::vector<ModelParameter> parameters() const { return {}; }
  // Indices of the planar position (x, y) in the state, for obstacle constraints; nullopt if none.
  virtual std::optional<std::array<int, 2>> planar_position() const { return std::nullopt; }
};

}  // namespace knot::problems

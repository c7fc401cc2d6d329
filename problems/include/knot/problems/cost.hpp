// Cost terms: least-squares residuals l = 1/2 r' W r (times dt when scale_by_dt) at each knot.
//
// Each term adds its gradient and Gauss-Newton Hessian J' W J (never a rank-one gradient outer
// product) to caller-owned blocks. Terms:
//   StateCost         r = x - x_ref                     W: nx x nx
//   ControlCost       r = u - u_ref                     W: nu x nu
//   EndEffectorCost   r = p_frame(x) - p_ref            W: 3 x 3   (models with Kinematics)
//   ControlRateCost   r = u_k - u_{k-1}                 W: nu x nu (couples consecutive controls)
// Weights are symmetric positive semidefinite, kept in the form given (cost_weight.hpp); the
// constructors taking a std::vector take a full column-major matrix (the Dense form).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "knot/problems/cost_weight.hpp"
#include "knot/problems/model.hpp"
#include "knot/problems/stage.hpp"

namespace knot::problems {

// Blocks a term accumulates into (+=), column-major; any pointer may be null to skip that block.
//   gx (nx), gu (nu), Hxx (nx x nx), Huu (nu x nu), Hux (nu x nx);
//   for ControlRateCost also gu_prev (nu), Hpp (nu x nu, d2/du_prev2), Hup (nu x nu, d2/du du_prev).
struct CostBlocks {
  double* gx = nullptr;
  double* gu = nullptr;
  double* Hxx = nullptr;
  double* Huu = nullptr;
  double* Hux = nullptr;
  double* gu_prev = nullptr;
  double* Hpp = nullptr;
  double* Hup = nullptr;
};

class CostTerm {
 public:
  explicit CostTerm(TermInfo info) : info_(std::move(info)) {}
  virtual ~CostTerm() = default;

  const TermInfo& info() const { return info_; }
  virtual std::string_view type() const = 0;  // the problem-file type name
  virtual bool uses_control() const = 0;      // then it is skipped at the terminal knot
  virtual bool couples_previous_control() const { return false; }
  bool active(int k, int N) const;  // stages, and no control term at N

  virtual double value(const StagePoint& p) const = 0;
  // Adds gradient and Gauss-Newton Hessian; returns the value.
  virtual double accumulate(const StagePoint& p, const CostBlocks& out) const = 0;
  // Adds to out's Hessian blocks (Hxx, Huu, Hux; the others are ignored) what the Gauss-Newton
  // Hessian of accumulate leaves out of the term's exact one, s sum_i (W r)_i d2r_i. Quadratic
  // terms (r linear) have nothing to add and return true; false (the default) says the term cannot,
  // and the caller differences its gradient instead.
  virtual bool add_curvature(const StagePoint& /*p*/, const CostBlocks& /*out*/) const { return false; }

  // The weight matrix in the form it was given, for terms that have one.
  virtual const Weight* weight() const { return nullptr; }

  // The tracking reference, for terms that have one (MPC updates it between solves).
  virtual const Reference* reference() const { return nullptr; }
  virtual void set_reference(Reference ref);  // throws std::invalid_argument on a dim mismatch
  // The frame (index in the model's Kinematics) an end-effector term reads; -1 for other terms.
  virtual int frame() const { return -1; }

 protected:
  double scale(const StagePoint& p) const { return info_.scale_by_dt ? p.dt : 1.0; }
  TermInfo info_;
};

class StateCost final : public CostTerm {
 public:
  StateCost(TermInfo info, int nx, Weight W, Reference ref);
  StateCost(TermInfo info, int nx, std::vector<double> W, Reference ref);
  std::string_view type() const override { return "state"; }
  bool uses_control() const override { return false; }
  double value(const StagePoint& p) const override;
  double accumulate(const StagePoint& p, const CostBlocks& out) const override;
  bool add_curvature(const StagePoint&, const CostBlocks&) const override { return true; }  // quadratic
  const Weight* weight() const override { return &W_; }
  const Reference* reference() const override { return &ref_; }
  void set_reference(Reference ref) override;

 private:
  int n_;
  Weight W_;
  Reference ref_;
};

class ControlCost final : public CostTerm {
 public:
  ControlCost(TermInfo info, int nu, Weight W, Reference ref);
  ControlCost(TermInfo info, int nu, std::vector<double> W, Reference ref);
  std::string_view type() const override { return "control"; }
  bool uses_control() const override { return true; }
  double value(const StagePoint& p) const override;
  double accumulate(const StagePoint& p, const CostBlocks& out) const override;
  bool add_curvature(const StagePoint&, const CostBlocks&) const override { return true; }  // quadratic
  const Weight* weight() const override { return &W_; }
  const Reference* reference() const override { return &ref_; }
  void set_reference(Reference ref) override;

 private:
  int n_;
  Weight W_;
  Reference ref_;
};

class EndEffectorCost final : public CostTerm {
 public:
  // Throws std::invalid_argument when the model has no Kinematics or the frame is out of range.
  EndEffectorCost(TermInfo info, std::shared_ptr<const Model> model, int frame, std::array<double, 3> offset, Weight W,
                  Reference ref);
  EndEffectorCost(TermInfo info, std::shared_ptr<const Model> model, int frame, std::array<double, 3> offset,
                  std::vector<double> W, Reference ref);
  std::string_view type() const override { return "end_effector"; }
  bool uses_control() const override { return false; }
  double value(const StagePoint& p) const override;
  double accumulate(const StagePoint& p, const CostBlocks& out) const override;
  // s sum_a (W r)_a d2p_a / dx2 by the model's frame curvature (Kinematics::add_frame_curvature);
  // false when the model has none.
  bool add_curvature(const StagePoint& p, const CostBlocks& out) const override;
  const Weight* weight() const override { return &W_; }
  const Reference* reference() const override { return &ref_; }
  void set_reference(Reference ref) override;
  int frame() const override { return frame_; }
  const std::array<double, 3>& offset() const { return offset_; }  // the point, in frame coordinates

 private:
  std::shared_ptr<const Model> model_;
  int frame_;
  std::array<double, 3> offset_;
  Weight W_;
  Reference ref_;
};

class ControlRateCost final : public CostTerm {
 public:
  ControlRateCost(TermInfo info, int nu, Weight W);
  ControlRateCost(TermInfo info, int nu, std::vector<double> W);
  std::string_view type() const override { return "control_rate"; }
  bool uses_control() const override { return true; }
  bool couples_previous_control() const override { return true; }
  double value(const StagePoint& p) const override;  // 0 when p.u_prev is null
  double accumulate(const StagePoint& p, const CostBlocks& out) const override;
  bool add_curvature(const StagePoint&, const CostBlocks&) const override { return true; }  // quadratic
  const Weight* weight() const override { return &W_; }

 private:
  int n_;
  Weight W_;
};

// A copy of `c` with a reference of its own, for a term whose reference is moved per solver (the
// state, control and end_effector costs); `c` itself for a term without a reference, and for a
// reference-carrying type this function does not know (it then stays shared).
std::shared_ptr<CostTerm> own_reference_copy(const std::shared_ptr<CostTerm>& c);

}  // namespace knot::problems

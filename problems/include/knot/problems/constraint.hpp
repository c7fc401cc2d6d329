// Constraint terms: g(x, u) <= 0 (inequality) or g(x, u) = 0 (equality), per knot, with Jacobians.
//
//   ControlBox        lo <= u <= hi                      rows: one per finite bound
//   StateBox          lo <= x[idx] <= hi                 rows: one per finite bound
//   CircleObstacle    r^2 - |p - c|^2 <= 0, p = planar position (Model::planar_position)
//   EndEffectorHeight z_min - p_z <= 0                   (models with Kinematics)
//   EndEffectorBox    lo <= p <= hi                      rows: one per finite bound
//   StateEquality     x[idx] - target = 0                (usually at the terminal knot)
// Box terms also expose their bounds (box()) so a solver may treat them as simple bounds.
// Box rows: per bounded entry (axis) in order, first v - hi if hi is finite, then lo - v if lo is
// finite; infinite bounds add no row. g <= 0 means satisfied (CircleObstacle: g > 0 inside).
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "knot/problems/model.hpp"
#include "knot/problems/stage.hpp"

namespace knot::problems {

enum class ConstraintKind { Inequality, Equality };

// Simple bounds on state or control entries; lo/hi are +-inf where absent.
struct BoxBounds {
  bool on_control = false;
  std::vector<int> index;
  std::vector<double> lower, upper;
};

// Empty when lower and upper are bounds of `count` entries: that many values each, lower <= upper,
// no NaN, each finite or the matching infinity (an infinite bound adds no row); else what is wrong
// ("bounds of entry 0: expected ..."). Allocates only for the message.
std::string bounds_error(std::span<const double> lower, std::span<const double> upper, std::size_t count);

class ConstraintTerm;
// An end_effector_box's or end_effector_height's bounds given as a box's (three lower and three
// upper values, the point's x, y, z) or a height's (lower {z_min}, finite; upper {inf}), written to
// lo3, hi3 as the three axes' (a height's x, y and upper z infinite). Empty when they are such
// bounds, else what is wrong. `term` must be one of the two.
std::string end_effector_axis_bounds(const ConstraintTerm& term, std::span<const double> lower,
                                     std::span<const double> upper, std::array<double, 3>& lo3,
                                     std::array<double, 3>& hi3);

class ConstraintTerm {
 public:
  explicit ConstraintTerm(TermInfo info) : info_(std::move(info)) {}
  virtual ~ConstraintTerm() = default;

  const TermInfo& info() const { return info_; }
  virtual std::string_view type() const = 0;
  virtual ConstraintKind kind() const { return ConstraintKind::Inequality; }
  virtual bool uses_control() const = 0;
  bool active(int k, int N) const;
  virtual int dim() const = 0;
  // The most rows the term can have at a knot: dim() for most terms; a box's or end-effector box's
  // bounds may become finite or infinite (set_bounds), so theirs is that of every bound finite.
  virtual int max_dim() const { return dim(); }

  virtual void evaluate(const StagePoint& p, double* g) const = 0;
  // g, gx = dg/dx (dim x nx) and gu = dg/du (dim x nu, may be null when !uses_control()), column-major.
  // Any of g, gx, gu may be null to skip it. A term writes in full (zeros included) the blocks of the
  // variables it depends on and never touches the others: state terms leave gu, and ControlBox
  // (whose dg/dx is zero and which does not know nx) leaves gx, to the caller.
  virtual void jacobian(const StagePoint& p, double* g, double* gx, double* gu) const = 0;
  // H += sum_i mult_i d2g_i / dw2 in w = (x, u): H is column-major with leading dimension ldh, the
  // state first (rows and columns 0..nx-1), then the control. Linear terms add nothing and return
  // true; false (the default) says the term cannot, and the caller differences its Jacobian instead.
  virtual bool add_curvature(const StagePoint& /*p*/, const double* /*mult*/, double* /*H*/, int /*ldh*/) const {
    return false;
  }
  virtual const BoxBounds* box() const { return nullptr; }
  // The frame (index in the model's Kinematics) an end-effector term reads; -1 for other terms.
  virtual int frame() const { return -1; }

 protected:
  TermInfo info_;
};

class ControlBox final : public ConstraintTerm {
 public:
  ControlBox(TermInfo info, int nu, std::vector<double> lower, std::vector<double> upper);
  std::string_view type() const override { return "control_box"; }
  bool uses_control() const override { return true; }
  int dim() const override;
  void evaluate(const StagePoint& p, double* g) const override;
  void jacobian(const StagePoint& p, double* g, double* gx, double* gu) const override;
  bool add_curvature(const StagePoint&, const double*, double*, int) const override { return true; }  // linear
  const BoxBounds* box() const override { return &box_; }
  int max_dim() const override { return 2 * nu_; }
  // New bounds, one lower and one upper value per control (checked as the constructor checks them);
  // a bound may become finite or infinite (a row added or removed: dim() follows). Throws
  // std::invalid_argument, the term unchanged, otherwise. Allocates nothing unless it throws.
  void set_bounds(std::span<const double> lower, std::span<const double> upper);

 private:
  int nu_;
  BoxBounds box_;
};

class StateBox final : public ConstraintTerm {
 public:
  StateBox(TermInfo info, int nx, std::vector<int> index, std::vector<double> lower, std::vector<double> upper);
  std::string_view type() const override { return "state_box"; }
  bool uses_control() const override { return false; }
  int dim() const override;
  void evaluate(const StagePoint& p, double* g) const override;
  void jacobian(const StagePoint& p, double* g, double* gx, double* gu) const override;
  bool add_curvature(const StagePoint&, const double*, double*, int) const override { return true; }  // linear
  const BoxBounds* box() const override { return &box_; }
  int max_dim() const override { return 2 * static_cast<int>(box_.index.size()); }
  // New bounds, one lower and one upper value per bounded entry, as ControlBox::set_bounds.
  void set_bounds(std::span<const double> lower, std::span<const double> upper);

 private:
  int nx_;
  BoxBounds box_;
};

class CircleObstacle final : public ConstraintTerm {
 public:
  // Throws std::invalid_argument when the model has no planar_position().
  CircleObstacle(TermInfo info, const Model& model, std::array<double, 2> center, double radius);
  std::string_view type() const override { return "circle_obstacle"; }
  bool uses_control() const override { return false; }
  int dim() const override { return 1; }
  void evaluate(const StagePoint& p, double* g) const override;
  void jacobian(const StagePoint& p, double* g, double* gx, double* gu) const override;
  bool add_curvature(const StagePoint& p, const double* mult, double* H, int ldh) const override;  // -2 mult I
  const std::array<int, 2>& planar_index() const { return ix_; }  // the state entries of the position
  const std::array<double, 2>& center() const { return center_; }
  double radius() const { return radius_; }
  // Moves the obstacle (the row stays: one per knot where it is active). Throws
  // std::invalid_argument, the obstacle unchanged, when geometry_error finds something.
  void set_geometry(std::array<double, 2> center, double radius);
  // Empty when center and radius describe an obstacle (a finite center, a finite radius > 0), else
  // what is wrong ("radius: expected a finite value > 0, found 0").
  static std::string geometry_error(std::array<double, 2> center, double radius);

 private:
  int nx_;
  std::array<int, 2> ix_;
  std::array<double, 2> center_;
  double radius_;
};

class EndEffectorHeight final : public ConstraintTerm {
 public:
  EndEffectorHeight(TermInfo info, std::shared_ptr<const Model> model, int frame, std::array<double, 3> offset,
                    double z_min);
  std::string_view type() const override { return "end_effector_height"; }
  bool uses_control() const override { return false; }
  int frame() const override { return frame_; }
  int dim() const override { return 1; }
  void evaluate(const StagePoint& p, double* g) const override;
  void jacobian(const StagePoint& p, double* g, double* gx, double* gu) const override;
  // -mult d2p_z / dx2 by the model's frame curvature; false when the model has none.
  bool add_curvature(const StagePoint& p, const double* mult, double* H, int ldh) const override;
  const std::array<double, 3>& offset() const { return offset_; }
  double z_min() const { return z_min_; }
  // Moves the floor (the row stays). Throws std::invalid_argument, the term unchanged, unless z_min
  // is finite.
  void set_z_min(double z_min);

 private:
  std::shared_ptr<const Model> model_;
  int frame_;
  std::array<double, 3> offset_;
  double z_min_;
};

class EndEffectorBox final : public ConstraintTerm {
 public:
  EndEffectorBox(TermInfo info, std::shared_ptr<const Model> model, int frame, std::array<double, 3> offset,
                 std::array<double, 3> lower, std::array<double, 3> upper);
  std::string_view type() const override { return "end_effector_box"; }
  bool uses_control() const override { return false; }
  int frame() const override { return frame_; }
  int dim() const override;
  void evaluate(const StagePoint& p, double* g) const override;
  void jacobian(const StagePoint& p, double* g, double* gx, double* gu) const override;
  // sum_r +-mult_r d2p_a(r) / dx2 by the model's frame curvature; false when the model has none.
  bool add_curvature(const StagePoint& p, const double* mult, double* H, int ldh) const override;
  const std::array<double, 3>& offset() const { return offset_; }
  const std::array<double, 3>& lower() const { return lower_; }
  const std::array<double, 3>& upper() const { return upper_; }
  // Row r bounds axis |rows()[r]| - 1 from above (> 0) or below (< 0).
  std::span<const int> rows() const { return {rows_.data(), static_cast<std::size_t>(n_rows_)}; }
  int max_dim() const override { return 6; }
  // New bounds, checked as the constructor checks them: lower <= upper, no NaN, each finite or the
  // matching infinity. A bound may become finite or infinite (rows() and dim() follow: a row per
  // finite bound). Throws std::invalid_argument, the term unchanged, otherwise. Allocates nothing
  // unless it throws.
  void set_bounds(const std::array<double, 3>& lower, const std::array<double, 3>& upper);

 private:
  std::shared_ptr<const Model> model_;
  int frame_;
  std::array<double, 3> offset_, lower_, upper_;
  void lay_out_rows();         // rows_ from the bounds
  std::array<int, 6> rows_{};  // +-(axis+1) per finite bound: the first n_rows_ (fixed storage, so
  int n_rows_ = 0;             // set_bounds never allocates, in a copy too)
};

class StateEquality final : public ConstraintTerm {
 public:
  StateEquality(TermInfo info, int nx, std::vector<int> index, std::vector<double> target);
  std::string_view type() const override { return "state_equality"; }
  ConstraintKind kind() const override { return ConstraintKind::Equality; }
  bool uses_control() const override { return false; }
  int dim() const override { return static_cast<int>(index_.size()); }
  void evaluate(const StagePoint& p, double* g) const override;
  void jacobian(const StagePoint& p, double* g, double* gx, double* gu) const override;
  bool add_curvature(const StagePoint&, const double*, double*, int) const override { return true; }  // linear
  const std::vector<int>& index() const { return index_; }
  const std::vector<double>& target() const { return target_; }

 private:
  int nx_;
  std::vector<int> index_;
  std::vector<double> target_;
};

}  // namespace knot::problems

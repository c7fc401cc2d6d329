#include "knot/problems/constraint.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include "text.hpp"
#include "kinematic_scratch.hpp"

namespace knot::problems {
namespace {

[[noreturn]] void fail(const TermInfo& info, std::string_view type, const std::string& what) {
  throw std::invalid_argument("constraint '" + info.name + "' (" + std::string(type) + "): " + what);
}

// Bounds of `count` entries (bounds_error's rule), or the term's error.
void check_bounds(const TermInfo& info, std::string_view type, std::size_t count, const double* lower,
                  const double* upper) {
  if (std::string why = bounds_error({lower, count}, {upper, count}, count); !why.empty()) fail(info, type, why);
}

// Entries must lie in [0, n) and appear once.
void check_index(const TermInfo& info, std::string_view type, int n, const std::vector<int>& index) {
  for (std::size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= n)
      fail(info, type,
           "index: expected entries in [0, " + std::to_string(n) + "), found " + std::to_string(index[i]));
    if (std::find(index.begin(), index.begin() + static_cast<std::ptrdiff_t>(i), index[i]) !=
        index.begin() + static_cast<std::ptrdiff_t>(i))
      fail(info, type, "index: expected distinct entries, found " + std::to_string(index[i]) + " twice");
  }
}

int finite_bounds(const BoxBounds& b) {
  int rows = 0;
  for (std::size_t i = 0; i < b.index.size(); ++i) rows += std::isfinite(b.upper[i]) + std::isfinite(b.lower[i]);
  return rows;
}

// A box's new bounds in place, checked as its constructor checks them (the box unchanged on error).
void set_box_bounds(const TermInfo& info, std::string_view type, BoxBounds& box, std::span<const double> lower,
                    std::span<const double> upper) {
  if (std::string why = bounds_error(lower, upper, box.index.size()); !why.empty()) fail(info, type, why);
  std::copy(lower.begin(), lower.end(), box.lower.begin());
  std::copy(upper.begin(), upper.end(), box.upper.begin());
}

// Box rows on v = x or u: per entry i, v[index[i]] - upper[i] if finite, then lower[i] - v[index[i]]
// if finite. J (rows x cols, column-major), when not null, gets +-1 in column index[i].
void box_rows(const BoxBounds& b, const double* v, double* g, double* J, int cols) {
  const int rows = finite_bounds(b);
  if (J != nullptr) std::fill(J, J + static_cast<std::size_t>(rows) * cols, 0.0);
  int r = 0;
  for (std::size_t i = 0; i < b.index.size(); ++i) {
    const int c = b.index[i];
    const double vi = v[c];
    if (std::isfinite(b.upper[i])) {
      if (g != nullptr) g[r] = vi - b.upper[i];
      if (J != nullptr) J[r + static_cast<std::size_t>(c) * rows] = 1.0;
      ++r;
    }
    if (std::isfinite(b.lower[i])) {
      if (g != nullptr) g[r] = b.lower[i] - vi;
      if (J != nullptr) J[r + static_cast<std::size_t>(c) * rows] = -1.0;
      ++r;
    }
  }
}

const double* need(const double* v, const TermInfo& info, std::string_view type, const char* what) {
  if (v == nullptr) fail(info, type, std::string("evaluated without ") + what);
  return v;
}

void check_kinematics(const TermInfo& info, std::string_view type, const std::shared_ptr<const Model>& model,
                      int frame, const std::array<double, 3>& offset) {
  if (!model || model->kinematics() == nullptr)
    fail(info, type, "expected a model with kinematics, found " +
                         (model ? "model '" + std::string(model->type()) + "' without" : std::string("no model")));
  const int frames = model->kinematics()->frame_count();
  if (frame < 0 || frame >= frames)
    fail(info, type, "frame: expected an index in [0, " + std::to_string(frames) + "), found " + std::to_string(frame));
  for (double v : offset)
    if (!std::isfinite(v)) fail(info, type, "offset: expected finite values, found " + text::format_number(v));
}

// World position of the term's point and, when J is not null, its Jacobian (3 x nx).
void position(const Model& model, const StagePoint& p, const TermInfo& info, std::string_view type, int frame,
              const std::array<double, 3>& offset, double* pos, double* J) {
  if (p.data == nullptr) fail(info, type, "evaluated without model data");
  model.kinematics()->frame_position(*p.data, need(p.x, info, type, "a state"), frame, offset, pos, J);
}

}  // namespace

std::string bounds_error(std::span<const double> lower, std::span<const double> upper, std::size_t count) {
  if (lower.size() != count || upper.size() != count)
    return "lower and upper: expected " + std::to_string(count) + " values each, found " +
           std::to_string(lower.size()) + " and " + std::to_string(upper.size());
  for (std::size_t i = 0; i < count; ++i) {
    const double lo = lower[i], hi = upper[i];
    if (std::isnan(lo) || std::isnan(hi) || lo == INFINITY || hi == -INFINITY || lo > hi)
      return "bounds of entry " + std::to_string(i) + ": expected lower <= upper (each finite or the matching "
             "infinity), found [" + text::format_number(lo) + ", " + text::format_number(hi) + "]";
  }
  return {};
}

std::string end_effector_axis_bounds(const ConstraintTerm& term, std::span<const double> lower,
                                     std::span<const double> upper, std::array<double, 3>& lo3,
                                     std::array<double, 3>& hi3) {
  const double inf = INFINITY;
  if (dynamic_cast<const EndEffectorHeight*>(&term) != nullptr) {
    if (lower.size() != 1 || upper.size() != 1 || upper[0] != inf || !std::isfinite(lower[0]))
      return "an end_effector_height bounds z from below: expected lower = [a finite z_min] and upper = [inf]";
    lo3 = {-inf, -inf, lower[0]};
    hi3 = {inf, inf, inf};
    return {};
  }
  if (std::string why = bounds_error(lower, upper, 3); !why.empty()) return why;
  std::copy(lower.begin(), lower.end(), lo3.begin());
  std::copy(upper.begin(), upper.end(), hi3.begin());
  return {};
}

// ---- ControlBox ----

ControlBox::ControlBox(TermInfo info, int nu, std::vector<double> lower, std::vector<double> upper)
    : ConstraintTerm(std::move(info)), nu_(nu) {
  if (nu_ <= 0) fail(info_, type(), "expected a positive control dimension, found " + std::to_string(nu_));
  if (lower.size() != static_cast<std::size_t>(nu_) || upper.size() != static_cast<std::size_t>(nu_))
    fail(info_, type(),
         "lower and upper: expected " + std::to_string(nu_) + " values each, found " + std::to_string(lower.size()) +
             " and " + std::to_string(upper.size()));
  check_bounds(info_, type(), lower.size(), lower.data(), upper.data());
  box_.on_control = true;
  for (int i = 0; i < nu_; ++i) box_.index.push_back(i);
  box_.lower = std::move(lower);
  box_.upper = std::move(upper);
}

int ControlBox::dim() const { return finite_bounds(box_); }

void ControlBox::set_bounds(std::span<const double> lower, std::span<const double> upper) {
  set_box_bounds(info_, type(), box_, lower, upper);
}

void ControlBox::evaluate(const StagePoint& p, double* g) const {
  box_rows(box_, need(p.u, info_, type(), "a control"), g, nullptr, nu_);
}

void ControlBox::jacobian(const StagePoint& p, double* g, double*, double* gu) const {
  box_rows(box_, need(p.u, info_, type(), "a control"), g, gu, nu_);
}

// ---- StateBox ----

StateBox::StateBox(TermInfo info, int nx, std::vector<int> index, std::vector<double> lower,
                   std::vector<double> upper)
    : ConstraintTerm(std::move(info)), nx_(nx) {
  if (nx_ <= 0) fail(info_, type(), "expected a positive state dimension, found " + std::to_string(nx_));
  if (lower.size() != index.size() || upper.size() != index.size())
    fail(info_, type(),
         "lower and upper: expected " + std::to_string(index.size()) + " values each (one per index), found " +
             std::to_string(lower.size()) + " and " + std::to_string(upper.size()));
  check_index(info_, type(), nx_, index);
  check_bounds(info_, type(), index.size(), lower.data(), upper.data());
  box_.on_control = false;
  box_.index = std::move(index);
  box_.lower = std::move(lower);
  box_.upper = std::move(upper);
}

int StateBox::dim() const { return finite_bounds(box_); }

void StateBox::set_bounds(std::span<const double> lower, std::span<const double> upper) {
  set_box_bounds(info_, type(), box_, lower, upper);
}

void StateBox::evaluate(const StagePoint& p, double* g) const {
  box_rows(box_, need(p.x, info_, type(), "a state"), g, nullptr, nx_);
}

void StateBox::jacobian(const StagePoint& p, double* g, double* gx, double*) const {
  box_rows(box_, need(p.x, info_, type(), "a state"), g, gx, nx_);
}

// ---- CircleObstacle ----

CircleObstacle::CircleObstacle(TermInfo info, const Model& model, std::array<double, 2> center, double radius)
    : ConstraintTerm(std::move(info)), nx_(model.nx()), ix_{}, center_(center), radius_(radius) {
  const auto planar = model.planar_position();
  if (!planar)
    fail(info_, type(), "expected a model with a planar position, found model '" + std::string(model.type()) + "'");
  ix_ = *planar;
  for (int i : ix_)
    if (i < 0 || i >= nx_)
      fail(info_, type(), "planar position: expected state indices in [0, " + std::to_string(nx_) + "), found " +
                              std::to_string(i));
  if (std::string why = geometry_error(center_, radius_); !why.empty()) fail(info_, type(), why);
}

std::string CircleObstacle::geometry_error(std::array<double, 2> center, double radius) {
  if (!std::isfinite(center[0]) || !std::isfinite(center[1]))
    return "center: expected finite values, found [" + text::format_number(center[0]) + ", " +
           text::format_number(center[1]) + "]";
  if (!(radius > 0) || !std::isfinite(radius))
    return "radius: expected a finite value > 0, found " + text::format_number(radius);
  return {};
}

void CircleObstacle::set_geometry(std::array<double, 2> center, double radius) {
  if (std::string why = geometry_error(center, radius); !why.empty())
    throw std::invalid_argument("circle_obstacle '" + info_.name + "': " + why);
  center_ = center;
  radius_ = radius;
}

void CircleObstacle::evaluate(const StagePoint& p, double* g) const {
  const double* x = need(p.x, info_, type(), "a state");
  const double dx = x[ix_[0]] - center_[0], dy = x[ix_[1]] - center_[1];
  g[0] = radius_ * radius_ - (dx * dx + dy * dy);
}

void CircleObstacle::jacobian(const StagePoint& p, double* g, double* gx, double*) const {
  const double* x = need(p.x, info_, type(), "a state");
  const double dx = x[ix_[0]] - center_[0], dy = x[ix_[1]] - center_[1];
  if (g != nullptr) g[0] = radius_ * radius_ - (dx * dx + dy * dy);
  if (gx != nullptr) {
    std::fill(gx, gx + nx_, 0.0);
    gx[ix_[0]] = -2.0 * dx;
    gx[ix_[1]] = -2.0 * dy;
  }
}

// g = r^2 - (dx^2 + dy^2): d2g = -2 on the two planar-position entries, zero elsewhere.
bool CircleObstacle::add_curvature(const StagePoint&, const double* mult, double* H, int ldh) const {
  for (int a : ix_) H[a + static_cast<std::size_t>(a) * ldh] += -2.0 * mult[0];
  return true;
}

// ---- EndEffectorHeight ----

EndEffectorHeight::EndEffectorHeight(TermInfo info, std::shared_ptr<const Model> model, int frame,
                                     std::array<double, 3> offset, double z_min)
    : ConstraintTerm(std::move(info)), model_(std::move(model)), frame_(frame), offset_(offset), z_min_(z_min) {
  check_kinematics(info_, type(), model_, frame_, offset_);
  if (!std::isfinite(z_min_)) fail(info_, type(), "z_min: expected a finite value, found " + text::format_number(z_min_));
}

void EndEffectorHeight::set_z_min(double z_min) {
  if (!std::isfinite(z_min))
    throw std::invalid_argument("end_effector_height '" + info_.name + "': z_min: expected a finite value, found " +
                                text::format_number(z_min));
  z_min_ = z_min;
}

void EndEffectorHeight::evaluate(const StagePoint& p, double* g) const {
  double pos[3];
  position(*model_, p, info_, type(), frame_, offset_, pos, nullptr);
  g[0] = z_min_ - pos[2];
}

void EndEffectorHeight::jacobian(const StagePoint& p, double* g, double* gx, double*) const {
  const int nx = model_->nx();
  Jacobian3 scratch(nx);
  double* J = scratch.data();
  double pos[3];
  position(*model_, p, info_, type(), frame_, offset_, pos, J);
  if (g != nullptr) g[0] = z_min_ - pos[2];
  if (gx != nullptr)
    for (int j = 0; j < nx; ++j) gx[j] = -J[2 + 3 * static_cast<std::size_t>(j)];
}

bool EndEffectorHeight::add_curvature(const StagePoint& p, const double* mult, double* H, int ldh) const {
  if (p.data == nullptr) fail(info_, type(), "evaluated without model data");
  const double c[3] = {0.0, 0.0, -mult[0]};
  return model_->kinematics()->add_frame_curvature(*p.data, need(p.x, info_, type(), "a state"), frame_, offset_, c, H,
                                                   ldh);
}

// ---- EndEffectorBox ----

EndEffectorBox::EndEffectorBox(TermInfo info, std::shared_ptr<const Model> model, int frame,
                               std::array<double, 3> offset, std::array<double, 3> lower, std::array<double, 3> upper)
    : ConstraintTerm(std::move(info)),
      model_(std::move(model)),
      frame_(frame),
      offset_(offset),
      lower_(lower),
      upper_(upper) {
  check_kinematics(info_, type(), model_, frame_, offset_);
  check_bounds(info_, type(), 3, lower_.data(), upper_.data());
  lay_out_rows();
}

void EndEffectorBox::lay_out_rows() {
  n_rows_ = 0;
  for (int a = 0; a < 3; ++a) {
    if (std::isfinite(upper_[a])) rows_[static_cast<std::size_t>(n_rows_++)] = a + 1;
    if (std::isfinite(lower_[a])) rows_[static_cast<std::size_t>(n_rows_++)] = -(a + 1);
  }
}

int EndEffectorBox::dim() const { return n_rows_; }

void EndEffectorBox::set_bounds(const std::array<double, 3>& lower, const std::array<double, 3>& upper) {
  check_bounds(info_, type(), 3, lower.data(), upper.data());
  lower_ = lower;
  upper_ = upper;
  lay_out_rows();
}

void EndEffectorBox::evaluate(const StagePoint& p, double* g) const {
  double pos[3];
  position(*model_, p, info_, type(), frame_, offset_, pos, nullptr);
  for (std::size_t r = 0; r < static_cast<std::size_t>(n_rows_); ++r) {
    const int a = std::abs(rows_[r]) - 1;
    g[r] = rows_[r] > 0 ? pos[a] - upper_[a] : lower_[a] - pos[a];
  }
}

void EndEffectorBox::jacobian(const StagePoint& p, double* g, double* gx, double*) const {
  const int nx = model_->nx();
  Jacobian3 scratch(nx);
  double* J = scratch.data();
  double pos[3];
  position(*model_, p, info_, type(), frame_, offset_, pos, J);
  const std::size_t rows = static_cast<std::size_t>(n_rows_);
  for (std::size_t r = 0; r < rows; ++r) {
    const int a = std::abs(rows_[r]) - 1;
    const double sign = rows_[r] > 0 ? 1.0 : -1.0;
    if (g != nullptr) g[r] = rows_[r] > 0 ? pos[a] - upper_[a] : lower_[a] - pos[a];
    if (gx != nullptr)
      for (int j = 0; j < nx; ++j) gx[r + j * rows] = sign * J[a + 3 * static_cast<std::size_t>(j)];
  }
}

// Row r is +-p_a: its multiplier weighs d2p_a with the row's sign.
bool EndEffectorBox::add_curvature(const StagePoint& p, const double* mult, double* H, int ldh) const {
  if (p.data == nullptr) fail(info_, type(), "evaluated without model data");
  double c[3] = {0.0, 0.0, 0.0};
  for (std::size_t r = 0; r < static_cast<std::size_t>(n_rows_); ++r) {
    const int a = std::abs(rows_[r]) - 1;
    c[a] += rows_[r] > 0 ? mult[r] : -mult[r];
  }
  return model_->kinematics()->add_frame_curvature(*p.data, need(p.x, info_, type(), "a state"), frame_, offset_, c, H,
                                                   ldh);
}

// ---- StateEquality ----

StateEquality::StateEquality(TermInfo info, int nx, std::vector<int> index, std::vector<double> target)
    : ConstraintTerm(std::move(info)), nx_(nx) {
  if (nx_ <= 0) fail(info_, type(), "expected a positive state dimension, found " + std::to_string(nx_));
  if (target.size() != index.size())
    fail(info_, type(),
         "target: expected " + std::to_string(index.size()) + " values (one per index), found " +
             std::to_string(target.size()));
  check_index(info_, type(), nx_, index);
  for (double v : target)
    if (!std::isfinite(v)) fail(info_, type(), "target: expected finite values, found " + text::format_number(v));
  index_ = std::move(index);
  target_ = std::move(target);
}

void StateEquality::evaluate(const StagePoint& p, double* g) const {
  const double* x = need(p.x, info_, type(), "a state");
  for (std::size_t r = 0; r < index_.size(); ++r) g[r] = x[index_[r]] - target_[r];
}

void StateEquality::jacobian(const StagePoint& p, double* g, double* gx, double*) const {
  const double* x = need(p.x, info_, type(), "a state");
  const std::size_t rows = index_.size();
  if (gx != nullptr) std::fill(gx, gx + rows * nx_, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    if (g != nullptr) g[r] = x[index_[r]] - target_[r];
    if (gx != nullptr) gx[r + static_cast<std::size_t>(index_[r]) * rows] = 1.0;
  }
}

}  // namespace knot::problems

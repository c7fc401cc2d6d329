#include "knot/problems/cost.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kinematic_scratch.hpp"
#include "text.hpp"

namespace knot::problems {
namespace {

// Relative tolerance of the symmetry and semidefiniteness checks on a dense weight: rounding of
// numbers as written, not a modelling slack.
constexpr double kMatrixTol = 1e-12;

std::string term_name(const TermInfo& info, std::string_view type) {
  return "cost '" + info.name + "' (" + std::string(type) + ")";
}

[[noreturn]] void fail(const TermInfo& info, std::string_view type, const std::string& what) {
  throw std::invalid_argument(term_name(info, type) + ": " + what);
}

// A term's weight: of the term's dimension, and valid (each factory checked it).
Weight check_weight(const TermInfo& info, std::string_view type, int n, Weight W) {
  if (n <= 0) fail(info, type, "expected a positive dimension, found " + std::to_string(n));
  if (W.dim() != n)
    fail(info, type, "weights: expected dimension " + std::to_string(n) + ", found " + std::to_string(W.dim()));
  return W;
}

// The dense form from a full column-major matrix (the C++ constructors' argument), with the term's name
// in the error.
Weight dense_weight(const TermInfo& info, std::string_view type, int n, std::vector<double> W) {
  if (n <= 0) fail(info, type, "expected a positive dimension, found " + std::to_string(n));
  try {
    return Weight::dense(n, std::move(W));
  } catch (const WeightError& e) {
    fail(info, type, e.what());
  }
}

void check_reference(const TermInfo& info, std::string_view type, int dim, const Reference& ref) {
  if (ref.dim != dim || ref.rows() < 1 || ref.values.size() != static_cast<std::size_t>(ref.rows()) * dim)
    fail(info, type,
         "reference: expected rows of " + std::to_string(dim) + " values, found dim " + std::to_string(ref.dim) +
             " with " + std::to_string(ref.values.size()) + " values");
  for (double v : ref.values)
    if (!std::isfinite(v)) fail(info, type, "reference: expected finite values, found " + std::to_string(v));
}

const double* need(const double* v, const TermInfo& info, std::string_view type, const char* what) {
  if (v == nullptr) fail(info, type, std::string("evaluated without ") + what);
  return v;
}

}  // namespace

// ---- Weight ----

WeightError::WeightError(std::string expected, std::string found)
    : std::invalid_argument("weights: expected " + expected + ", found " + found),
      expected_(std::move(expected)),
      found_(std::move(found)) {}

const char* to_string(Weight::Form form) {
  switch (form) {
    case Weight::Form::Scalar:
      return "scalar";
    case Weight::Form::Diagonal:
      return "diagonal";
    case Weight::Form::Dense:
      return "dense";
  }
  return "?";
}

namespace {

void check_dimension(int n) {
  if (n <= 0) throw WeightError("a positive dimension", std::to_string(n));
}

void check_entry(double v) {
  if (!(std::isfinite(v) && v >= 0)) throw WeightError("finite values >= 0", text::format_number(v));
}

}  // namespace

Weight Weight::scalar(int n, double w) {
  check_dimension(n);
  check_entry(w);
  return Weight(Form::Scalar, n, {w});
}

Weight Weight::diagonal(std::vector<double> d) {
  if (d.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw WeightError("at most " + std::to_string(std::numeric_limits<int>::max()) + " entries",
                      std::to_string(d.size()));
  check_dimension(static_cast<int>(d.size()));
  for (double v : d) check_entry(v);
  const int n = static_cast<int>(d.size());
  return Weight(Form::Diagonal, n, std::move(d));
}

// Symmetric and positive semidefinite to rounding relative to the largest entry: a matrix read
// from a file is symmetric only to its printed digits.
Weight Weight::dense(int n, std::vector<double> W) {
  check_dimension(n);
  const std::size_t want = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  if (W.size() != want)
    throw WeightError(std::to_string(want) + " values (" + std::to_string(n) + " x " + std::to_string(n) + ")",
                      std::to_string(W.size()));
  for (double v : W)
    if (!std::isfinite(v)) throw WeightError("finite values", text::format_number(v));
  const Eigen::Map<const Eigen::MatrixXd> w(W.data(), n, n);
  const double scale = std::max(1.0, w.cwiseAbs().maxCoeff());
  const double asym = (w - w.transpose()).cwiseAbs().maxCoeff();
  if (asym > kMatrixTol * scale) throw WeightError("a symmetric matrix", "|W - W'| = " + text::format_number(asym));
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(w, Eigen::EigenvaluesOnly);
  const double lowest = eig.info() == Eigen::Success ? eig.eigenvalues()(0) : std::numeric_limits<double>::quiet_NaN();
  if (!(lowest >= -kMatrixTol * scale))
    throw WeightError("a positive semidefinite matrix", "smallest eigenvalue " + text::format_number(lowest));
  return Weight(Form::Dense, n, std::move(W));
}

double Weight::operator()(int i, int j) const {
  switch (form_) {
    case Form::Scalar:
      return i == j ? v_[0] : 0.0;
    case Form::Diagonal:
      return i == j ? v_[static_cast<std::size_t>(i)] : 0.0;
    case Form::Dense:
      break;
  }
  return v_[static_cast<std::size_t>(i) + static_cast<std::size_t>(j) * static_cast<std::size_t>(n_)];
}

// The Scalar and Diagonal loops are the Dense ones with the zero terms left out, in the same
// order of operations, so all three forms agree bitwise.
double Weight::half_quadratic(const double* a, const double* b) const {
  double sum = 0;
  if (form_ == Form::Dense) {
    const std::size_t n = static_cast<std::size_t>(n_);
    for (std::size_t j = 0; j < n; ++j) {
      double wr = 0;
      for (std::size_t i = 0; i < n; ++i) wr += v_[i + j * n] * (a[i] - b[i]);
      sum += (a[j] - b[j]) * wr;
    }
  } else {
    const bool scalar = form_ == Form::Scalar;
    for (int j = 0; j < n_; ++j) {
      const double wr = v_[scalar ? 0 : static_cast<std::size_t>(j)] * (a[j] - b[j]);
      sum += (a[j] - b[j]) * wr;
    }
  }
  return 0.5 * sum;
}

void Weight::add_gradient(const double* a, const double* b, double s, double* g) const {
  if (form_ == Form::Dense) {
    const std::size_t n = static_cast<std::size_t>(n_);
    for (std::size_t j = 0; j < n; ++j) {
      const double rj = s * (a[j] - b[j]);
      for (std::size_t i = 0; i < n; ++i) g[i] += v_[i + j * n] * rj;
    }
    return;
  }
  const bool scalar = form_ == Form::Scalar;
  for (int j = 0; j < n_; ++j) {
    const double rj = s * (a[j] - b[j]);
    g[j] += v_[scalar ? 0 : static_cast<std::size_t>(j)] * rj;
  }
}

void Weight::apply(const double* v, double* y) const {
  const std::size_t n = static_cast<std::size_t>(n_);
  if (form_ == Form::Dense) {
    for (std::size_t i = 0; i < n; ++i) {
      double acc = 0;
      for (std::size_t j = 0; j < n; ++j) acc += v_[i + j * n] * v[j];
      y[i] = acc;
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) y[i] = v_[form_ == Form::Scalar ? 0 : i] * v[i];
}

void Weight::add_to(double s, double* H) const {
  const std::size_t n = static_cast<std::size_t>(n_);
  if (form_ == Form::Dense) {
    for (std::size_t e = 0; e < n * n; ++e) H[e] += s * v_[e];
    return;
  }
  for (std::size_t i = 0; i < n; ++i) H[i + i * n] += s * v_[form_ == Form::Scalar ? 0 : i];
}

// ---- StateCost ----

StateCost::StateCost(TermInfo info, int nx, Weight W, Reference ref)
    : CostTerm(std::move(info)), n_(nx), W_(check_weight(info_, "state", nx, std::move(W))) {
  check_reference(info_, type(), n_, ref);
  ref_ = std::move(ref);
}

StateCost::StateCost(TermInfo info, int nx, std::vector<double> W, Reference ref)
    : StateCost(info, nx, dense_weight(info, "state", nx, std::move(W)), std::move(ref)) {}

void StateCost::set_reference(Reference ref) {
  check_reference(info_, type(), n_, ref);
  ref_ = std::move(ref);
}

double StateCost::value(const StagePoint& p) const {
  return scale(p) * W_.half_quadratic(need(p.x, info_, type(), "a state"), ref_.at(p.k).data());
}

// g += s W r and H += s W for r = x - x_ref: the exact derivatives of a linear residual.
double StateCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  const double* x = need(p.x, info_, type(), "a state");
  const double* xr = ref_.at(p.k).data();
  if (out.gx != nullptr) W_.add_gradient(x, xr, scale(p), out.gx);
  if (out.Hxx != nullptr) W_.add_to(scale(p), out.Hxx);
  return scale(p) * W_.half_quadratic(x, xr);
}

// ---- ControlCost ----

ControlCost::ControlCost(TermInfo info, int nu, Weight W, Reference ref)
    : CostTerm(std::move(info)), n_(nu), W_(check_weight(info_, "control", nu, std::move(W))) {
  check_reference(info_, type(), n_, ref);
  ref_ = std::move(ref);
}

ControlCost::ControlCost(TermInfo info, int nu, std::vector<double> W, Reference ref)
    : ControlCost(info, nu, dense_weight(info, "control", nu, std::move(W)), std::move(ref)) {}

void ControlCost::set_reference(Reference ref) {
  check_reference(info_, type(), n_, ref);
  ref_ = std::move(ref);
}

double ControlCost::value(const StagePoint& p) const {
  return scale(p) * W_.half_quadratic(need(p.u, info_, type(), "a control"), ref_.at(p.k).data());
}

double ControlCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  const double* u = need(p.u, info_, type(), "a control");
  const double* ur = ref_.at(p.k).data();
  if (out.gu != nullptr) W_.add_gradient(u, ur, scale(p), out.gu);
  if (out.Huu != nullptr) W_.add_to(scale(p), out.Huu);
  return scale(p) * W_.half_quadratic(u, ur);
}

// ---- EndEffectorCost ----

EndEffectorCost::EndEffectorCost(TermInfo info, std::shared_ptr<const Model> model, int frame,
                                 std::array<double, 3> offset, Weight W, Reference ref)
    : CostTerm(std::move(info)),
      model_(std::move(model)),
      frame_(frame),
      offset_(offset),
      W_(check_weight(info_, "end_effector", 3, std::move(W))) {
  if (!model_ || model_->kinematics() == nullptr)
    fail(info_, type(), "expected a model with kinematics, found " +
                            (model_ ? "model '" + std::string(model_->type()) + "' without" : std::string("no model")));
  const int frames = model_->kinematics()->frame_count();
  if (frame_ < 0 || frame_ >= frames)
    fail(info_, type(),
         "frame: expected an index in [0, " + std::to_string(frames) + "), found " + std::to_string(frame_));
  for (double v : offset_)
    if (!std::isfinite(v)) fail(info_, type(), "offset: expected finite values, found " + std::to_string(v));
  check_reference(info_, type(), 3, ref);
  ref_ = std::move(ref);
}

EndEffectorCost::EndEffectorCost(TermInfo info, std::shared_ptr<const Model> model, int frame,
                                 std::array<double, 3> offset, std::vector<double> W, Reference ref)
    : EndEffectorCost(info, std::move(model), frame, offset, dense_weight(info, "end_effector", 3, std::move(W)),
                      std::move(ref)) {}

void EndEffectorCost::set_reference(Reference ref) {
  check_reference(info_, type(), 3, ref);
  ref_ = std::move(ref);
}

double EndEffectorCost::value(const StagePoint& p) const {
  if (p.data == nullptr) fail(info_, type(), "evaluated without model data");
  double pos[3];
  model_->kinematics()->frame_position(*p.data, need(p.x, info_, type(), "a state"), frame_, offset_, pos, nullptr);
  return scale(p) * W_.half_quadratic(pos, ref_.at(p.k).data());
}

double EndEffectorCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  if (p.data == nullptr) fail(info_, type(), "evaluated without model data");
  const int nx = model_->nx();
  Jacobian3 scratch(nx);
  double* J = scratch.data();
  double pos[3];
  model_->kinematics()->frame_position(*p.data, need(p.x, info_, type(), "a state"), frame_, offset_, pos, J);
  const double* pr = ref_.at(p.k).data();
  const double s = scale(p);
  // gx = s J' W r; Hxx = s J' W J (Gauss-Newton: the curvature of p(x) is left out).
  const double r[3] = {pos[0] - pr[0], pos[1] - pr[1], pos[2] - pr[2]};
  double wr[3];
  W_.apply(r, wr);
  if (out.gx != nullptr)
    for (int a = 0; a < nx; ++a) {
      const double* ja = J + 3 * static_cast<std::size_t>(a);
      out.gx[a] += s * (ja[0] * wr[0] + ja[1] * wr[1] + ja[2] * wr[2]);
    }
  if (out.Hxx != nullptr)
    for (int b = 0; b < nx; ++b) {
      double wj[3];
      W_.apply(J + 3 * static_cast<std::size_t>(b), wj);
      for (int a = 0; a < nx; ++a) {
        const double* ja = J + 3 * static_cast<std::size_t>(a);
        out.Hxx[a + static_cast<std::size_t>(b) * nx] += s * (ja[0] * wj[0] + ja[1] * wj[1] + ja[2] * wj[2]);
      }
    }
  return s * W_.half_quadratic(pos, pr);
}

// The Gauss-Newton Hessian leaves out s sum_a (W r)_a d2p_a, which the model's frame curvature adds.
bool EndEffectorCost::add_curvature(const StagePoint& p, const CostBlocks& out) const {
  if (p.data == nullptr) fail(info_, type(), "evaluated without model data");
  const double* x = need(p.x, info_, type(), "a state");
  double pos[3];
  model_->kinematics()->frame_position(*p.data, x, frame_, offset_, pos, nullptr);
  const double* pr = ref_.at(p.k).data();
  const double r[3] = {pos[0] - pr[0], pos[1] - pr[1], pos[2] - pr[2]};
  double wr[3];
  W_.apply(r, wr);
  const double s = scale(p);
  const double c[3] = {s * wr[0], s * wr[1], s * wr[2]};
  if (out.Hxx == nullptr) return true;
  return model_->kinematics()->add_frame_curvature(*p.data, x, frame_, offset_, c, out.Hxx, model_->nx());
}

// ---- ControlRateCost ----

ControlRateCost::ControlRateCost(TermInfo info, int nu, Weight W)
    : CostTerm(std::move(info)), n_(nu), W_(check_weight(info_, "control_rate", nu, std::move(W))) {}

ControlRateCost::ControlRateCost(TermInfo info, int nu, std::vector<double> W)
    : ControlRateCost(info, nu, dense_weight(info, "control_rate", nu, std::move(W))) {}

double ControlRateCost::value(const StagePoint& p) const {
  if (p.u_prev == nullptr) return 0.0;
  return scale(p) * W_.half_quadratic(need(p.u, info_, type(), "a control"), p.u_prev);
}

// r = u - u_prev: dr/du = I, dr/du_prev = -I, so the u_prev blocks are those of u with the sign of
// each factor dr/du_prev.
double ControlRateCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  if (p.u_prev == nullptr) return 0.0;
  const double* u = need(p.u, info_, type(), "a control");
  const double s = scale(p);
  if (out.gu != nullptr) W_.add_gradient(u, p.u_prev, s, out.gu);
  if (out.Huu != nullptr) W_.add_to(s, out.Huu);
  if (out.gu_prev != nullptr) W_.add_gradient(u, p.u_prev, -s, out.gu_prev);
  if (out.Hpp != nullptr) W_.add_to(s, out.Hpp);
  if (out.Hup != nullptr) W_.add_to(-s, out.Hup);
  return s * W_.half_quadratic(u, p.u_prev);
}

std::shared_ptr<CostTerm> own_reference_copy(const std::shared_ptr<CostTerm>& c) {
  if (c->reference() == nullptr) return c;
  if (const auto* t = dynamic_cast<const StateCost*>(c.get())) return std::make_shared<StateCost>(*t);
  if (const auto* t = dynamic_cast<const ControlCost*>(c.get())) return std::make_shared<ControlCost>(*t);
  if (const auto* t = dynamic_cast<const EndEffectorCost*>(c.get())) return std::make_shared<EndEffectorCost>(*t);
  return c;
}

}  // namespace knot::problems

#include "knot/problems/cost.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include "kinematic_scratch.hpp"

namespace knot::problems {
namespace {

std::string term_name(const TermInfo& info, std::string_view type) {
  return "cost '" + info.name + "' (" + std::string(type) + ")";
}

[[noreturn]] void fail(const TermInfo& info, std::string_view type, const std::string& what) {
  throw std::invalid_argument(term_name(info, type) + ": " + what);
}

// W must be n x n, finite, symmetric and positive semidefinite, each to rounding relative to its
// largest entry (a weight matrix read from a file is symmetric only to its printed digits).
void check_weights(const TermInfo& info, std::string_view type, int n, const std::vector<double>& W) {
  if (n <= 0) fail(info, type, "expected a positive dimension, found " + std::to_string(n));
  const std::size_t want = static_cast<std::size_t>(n) * n;
  if (W.size() != want)
    fail(info, type,
         "weights: expected " + std::to_string(want) + " values (" + std::to_string(n) + " x " + std::to_string(n) +
             "), found " + std::to_string(W.size()));
  for (double v : W)
    if (!std::isfinite(v)) fail(info, type, "weights: expected finite values, found " + std::to_string(v));
  const Eigen::Map<const Eigen::MatrixXd> w(W.data(), n, n);
  const double scale = std::max(1.0, w.cwiseAbs().maxCoeff());
  const double asym = (w - w.transpose()).cwiseAbs().maxCoeff();
  if (asym > 1e-12 * scale)
    fail(info, type, "weights: expected a symmetric matrix, found |W - W'| = " + std::to_string(asym));
  const double lowest = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(w, Eigen::EigenvaluesOnly).eigenvalues()(0);
  if (lowest < -1e-12 * scale)
    fail(info, type, "weights: expected a positive semidefinite matrix, found eigenvalue " + std::to_string(lowest));
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

// 1/2 r' W r for r_i = a_i - b_i (n entries, W column-major).
double half_quadratic(int n, const double* W, const double* a, const double* b) {
  double sum = 0;
  for (int j = 0; j < n; ++j) {
    double wr = 0;
    for (int i = 0; i < n; ++i) wr += W[i + static_cast<std::size_t>(j) * n] * (a[i] - b[i]);
    sum += (a[j] - b[j]) * wr;
  }
  return 0.5 * sum;
}

// g += s W r and H += s W for r = a - b: the exact derivatives of a linear residual.
void add_linear(int n, const double* W, const double* a, const double* b, double s, double* g, double* H) {
  if (g != nullptr)
    for (int j = 0; j < n; ++j) {
      const double rj = s * (a[j] - b[j]);
      for (int i = 0; i < n; ++i) g[i] += W[i + static_cast<std::size_t>(j) * n] * rj;
    }
  if (H != nullptr)
    for (std::size_t e = 0; e < static_cast<std::size_t>(n) * n; ++e) H[e] += s * W[e];
}

}  // namespace

// ---- StateCost ----

StateCost::StateCost(TermInfo info, int nx, std::vector<double> W, Reference ref)
    : CostTerm(std::move(info)), n_(nx), W_(std::move(W)) {
  check_weights(info_, type(), n_, W_);
  check_reference(info_, type(), n_, ref);
  ref_ = std::move(ref);
}

void StateCost::set_reference(Reference ref) {
  check_reference(info_, type(), n_, ref);
  ref_ = std::move(ref);
}

double StateCost::value(const StagePoint& p) const {
  return scale(p) * half_quadratic(n_, W_.data(), need(p.x, info_, type(), "a state"), ref_.at(p.k).data());
}

double StateCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  const double* x = need(p.x, info_, type(), "a state");
  const double* xr = ref_.at(p.k).data();
  add_linear(n_, W_.data(), x, xr, scale(p), out.gx, out.Hxx);
  return scale(p) * half_quadratic(n_, W_.data(), x, xr);
}

// ---- ControlCost ----

ControlCost::ControlCost(TermInfo info, int nu, std::vector<double> W, Reference ref)
    : CostTerm(std::move(info)), n_(nu), W_(std::move(W)) {
  check_weights(info_, type(), n_, W_);
  check_reference(info_, type(), n_, ref);
  ref_ = std::move(ref);
}

void ControlCost::set_reference(Reference ref) {
  check_reference(info_, type(), n_, ref);
  ref_ = std::move(ref);
}

double ControlCost::value(const StagePoint& p) const {
  return scale(p) * half_quadratic(n_, W_.data(), need(p.u, info_, type(), "a control"), ref_.at(p.k).data());
}

double ControlCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  const double* u = need(p.u, info_, type(), "a control");
  const double* ur = ref_.at(p.k).data();
  add_linear(n_, W_.data(), u, ur, scale(p), out.gu, out.Huu);
  return scale(p) * half_quadratic(n_, W_.data(), u, ur);
}

// ---- EndEffectorCost ----

EndEffectorCost::EndEffectorCost(TermInfo info, std::shared_ptr<const Model> model, int frame,
                                 std::array<double, 3> offset, std::vector<double> W, Reference ref)
    : CostTerm(std::move(info)), model_(std::move(model)), frame_(frame), offset_(offset), W_(std::move(W)) {
  if (!model_ || model_->kinematics() == nullptr)
    fail(info_, type(), "expected a model with kinematics, found " +
                            (model_ ? "model '" + std::string(model_->type()) + "' without" : std::string("no model")));
  const int frames = model_->kinematics()->frame_count();
  if (frame_ < 0 || frame_ >= frames)
    fail(info_, type(),
         "frame: expected an index in [0, " + std::to_string(frames) + "), found " + std::to_string(frame_));
  for (double v : offset_)
    if (!std::isfinite(v)) fail(info_, type(), "offset: expected finite values, found " + std::to_string(v));
  check_weights(info_, type(), 3, W_);
  check_reference(info_, type(), 3, ref);
  ref_ = std::move(ref);
}

void EndEffectorCost::set_reference(Reference ref) {
  check_reference(info_, type(), 3, ref);
  ref_ = std::move(ref);
}

double EndEffectorCost::value(const StagePoint& p) const {
  if (p.data == nullptr) fail(info_, type(), "evaluated without model data");
  double pos[3];
  model_->kinematics()->frame_position(*p.data, need(p.x, info_, type(), "a state"), frame_, offset_, pos, nullptr);
  return scale(p) * half_quadratic(3, W_.data(), pos, ref_.at(p.k).data());
}

double EndEffectorCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  if (p.data == nullptr) fail(info_, type(), "evaluated without model data");
  const int nx = model_->nx();
  Jacobian3 scratch(nx);
  double* J = scratch.data();
  double pos[3];
  model_->kinematics()->frame_position(*p.data, need(p.x, info_, type(), "a state"), frame_, offset_, pos, J);
  const double* pr = ref_.at(p.k).data();
  const double* W = W_.data();
  const double s = scale(p);
  // gx = s J' W r; Hxx = s J' W J (Gauss-Newton: the curvature of p(x) is left out).
  double wr[3];
  for (int i = 0; i < 3; ++i) wr[i] = W[i] * (pos[0] - pr[0]) + W[i + 3] * (pos[1] - pr[1]) + W[i + 6] * (pos[2] - pr[2]);
  if (out.gx != nullptr)
    for (int a = 0; a < nx; ++a) {
      const double* ja = J + 3 * static_cast<std::size_t>(a);
      out.gx[a] += s * (ja[0] * wr[0] + ja[1] * wr[1] + ja[2] * wr[2]);
    }
  if (out.Hxx != nullptr)
    for (int b = 0; b < nx; ++b) {
      const double* jb = J + 3 * static_cast<std::size_t>(b);
      double wj[3];
      for (int i = 0; i < 3; ++i) wj[i] = W[i] * jb[0] + W[i + 3] * jb[1] + W[i + 6] * jb[2];
      for (int a = 0; a < nx; ++a) {
        const double* ja = J + 3 * static_cast<std::size_t>(a);
        out.Hxx[a + static_cast<std::size_t>(b) * nx] += s * (ja[0] * wj[0] + ja[1] * wj[1] + ja[2] * wj[2]);
      }
    }
  return s * half_quadratic(3, W, pos, pr);
}

// ---- ControlRateCost ----

ControlRateCost::ControlRateCost(TermInfo info, int nu, std::vector<double> W)
    : CostTerm(std::move(info)), n_(nu), W_(std::move(W)) {
  check_weights(info_, type(), n_, W_);
}

double ControlRateCost::value(const StagePoint& p) const {
  if (p.u_prev == nullptr) return 0.0;
  return scale(p) * half_quadratic(n_, W_.data(), need(p.u, info_, type(), "a control"), p.u_prev);
}

// r = u - u_prev: dr/du = I, dr/du_prev = -I, so the u_prev blocks are those of u with the sign of
// each factor dr/du_prev.
double ControlRateCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  if (p.u_prev == nullptr) return 0.0;
  const double* u = need(p.u, info_, type(), "a control");
  const double s = scale(p);
  add_linear(n_, W_.data(), u, p.u_prev, s, out.gu, out.Huu);
  add_linear(n_, W_.data(), u, p.u_prev, -s, out.gu_prev, nullptr);
  if (out.Hpp != nullptr)
    for (std::size_t e = 0; e < W_.size(); ++e) out.Hpp[e] += s * W_[e];
  if (out.Hup != nullptr)
    for (std::size_t e = 0; e < W_.size(); ++e) out.Hup[e] -= s * W_[e];
  return s * half_quadratic(n_, W_.data(), u, p.u_prev);
}

}  // namespace knot::problems

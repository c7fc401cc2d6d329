#include "knot/problems/expression_terms.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "knot/problems/model_adapter.hpp"

namespace knot::problems {
namespace {

[[noreturn]] void fail(const TermInfo& info, std::string_view kind, std::string_view type, const std::string& what) {
  std::string s(kind);
  s.append(" '").append(info.name).append("' (").append(type).append("): ").append(what);
  throw std::invalid_argument(s);
}

const double* need(const double* v, const TermInfo& info, std::string_view kind, std::string_view type,
                   const char* what) {
  if (v == nullptr) fail(info, kind, type, std::string("evaluated without ") + what);
  return v;
}

constexpr int kSweep = 4;  // directions per dual sweep

// Adds v to the block of (a, b), a and b inputs (state index, or nx + control index), of a
// Hessian split into Hxx (nx x nx), Huu (nu x nu) and Hux (nu x nx); the state-control entry
// above the diagonal is Hux's transpose and is not stored.
void add_split(const CostBlocks& out, int nx, int nu, int a, int b, double v) {
  if (a < nx && b < nx) {
    if (out.Hxx) out.Hxx[a + std::size_t(b) * nx] += v;
  } else if (a >= nx && b >= nx) {
    if (out.Huu) out.Huu[(a - nx) + std::size_t(b - nx) * nu] += v;
  } else if (a >= nx && b < nx) {
    if (out.Hux) out.Hux[(a - nx) + std::size_t(b) * nu] += v;
  }
}

}  // namespace

TermExpressions::TermExpressions(const ExprSymbols& symbols, const std::vector<ExprSource>& outputs)
    : compiled_(compile_expressions(symbols, outputs)),
      nx_(int(symbols.states.size())),
      nu_(int(symbols.controls.size())) {
  for (const ExprInstr& in : compiled_.code) {
    if (in.op == ExprOp::State) inputs_.push_back(in.n);
    if (in.op == ExprOp::Control) inputs_.push_back(nx_ + in.n);
  }
  std::sort(inputs_.begin(), inputs_.end());
  inputs_.erase(std::unique(inputs_.begin(), inputs_.end()), inputs_.end());
  if (int(inputs_.size()) > kTermMaxInputs)
    throw ProblemError(outputs.empty() ? SourceLocation{} : outputs[0].at,
                       outputs.empty() ? std::string() : outputs[0].key_path,
                       "expressions that read at most " + std::to_string(kTermMaxInputs) + " states and controls",
                       std::to_string(inputs_.size()));
  // Every input is read from the compact vector w (inputs_ order).
  for (ExprInstr& in : compiled_.code)
    if (in.op == ExprOp::State || in.op == ExprOp::Control) {
      const int id = in.op == ExprOp::State ? in.n : nx_ + in.n;
      in.n = int(std::lower_bound(inputs_.begin(), inputs_.end(), id) - inputs_.begin());
      in.op = ExprOp::State;
    }
  uses_control_ = !inputs_.empty() && inputs_.back() >= nx_;
  tape_ = compiled_.tape();
}

void TermExpressions::evaluate(const double* x, const double* u, double* r, double* J) const {
  const int n = int(inputs_.size()), m = dim();
  const auto value = [&](int j) { return inputs_[j] < nx_ ? x[inputs_[j]] : u[inputs_[j] - nx_]; };
  if (J == nullptr || n == 0) {
    double w[kTermMaxInputs];
    for (int j = 0; j < n; ++j) w[j] = value(j);
    problems::evaluate<double>(tape_, w, nullptr, r);
    return;
  }
  DualW<kSweep> w[kTermMaxInputs], out[kExprMaxRegisters];
  for (int j = 0; j < n; ++j) w[j] = DualW<kSweep>(value(j));
  for (int j0 = 0; j0 < n; j0 += kSweep) {
    const int cols = std::min(kSweep, n - j0);
    for (int k = 0; k < cols; ++k) w[j0 + k].d[k] = 1.0;
    problems::evaluate<DualW<kSweep>>(tape_, w, nullptr, out);
    for (int k = 0; k < cols; ++k) {
      w[j0 + k].d[k] = 0.0;
      for (int i = 0; i < m; ++i) J[i + std::size_t(j0 + k) * m] = out[i].d[k];
    }
  }
  for (int i = 0; i < m; ++i) r[i] = out[i].v;
}

namespace {

template <int W>
void curvature_with(const ExprTape& tape, int n, const double* w0, const double* c, double* H) {
  HyperDual<W> w[W], out[kExprMaxRegisters];
  for (int j = 0; j < W; ++j) {
    w[j] = HyperDual<W>(j < n ? w0[j] : 0.0);
    if (j < n) w[j].g[j] = 1.0;
  }
  evaluate<HyperDual<W>>(tape, w, nullptr, out);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double acc = 0;
      for (int r = 0; r < tape.n_outputs; ++r) acc += c[r] * out[r].h[HyperDual<W>::pair(i, j)];
      H[i + std::size_t(j) * n] = acc;
      H[j + std::size_t(i) * n] = acc;
    }
}

}  // namespace

bool TermExpressions::curvature(const double* x, const double* u, const double* c, double* H) const {
  const int n = int(inputs_.size());
  double w[kTermMaxInputs];
  for (int j = 0; j < n; ++j) w[j] = inputs_[j] < nx_ ? x[inputs_[j]] : u[inputs_[j] - nx_];
  if (n <= 4)
    curvature_with<4>(tape_, n, w, c, H);
  else if (n <= 8)
    curvature_with<8>(tape_, n, w, c, H);
  else if (n <= 16)
    curvature_with<16>(tape_, n, w, c, H);
  else
    return false;
  return true;
}

// --- ResidualCost ----------------------------------------------------------------------------------

ResidualCost::ResidualCost(TermInfo info, std::shared_ptr<const TermExpressions> r, Weight W)
    : CostTerm(std::move(info)), r_(std::move(r)), W_(std::move(W)) {
  if (W_.dim() != r_->dim())
    fail(info_, "cost", type(),
         "weights: expected dimension " + std::to_string(r_->dim()) + ", found " + std::to_string(W_.dim()));
}

double ResidualCost::value(const StagePoint& p) const {
  const double* x = need(p.x, info_, "cost", type(), "a state");
  const double* u = r_->uses_control() ? need(p.u, info_, "cost", type(), "a control") : nullptr;
  double r[kExprMaxRegisters], zero[kExprMaxRegisters] = {};
  r_->evaluate(x, u, r, nullptr);
  return scale(p) * W_.half_quadratic(r, zero);
}

double ResidualCost::accumulate(const StagePoint& p, const CostBlocks& out) const {
  const double* x = need(p.x, info_, "cost", type(), "a state");
  const double* u = r_->uses_control() ? need(p.u, info_, "cost", type(), "a control") : nullptr;
  const int m = r_->dim(), n = int(r_->inputs().size()), nx = r_->nx(), nu = r_->nu();
  const std::vector<int>& in = r_->inputs();
  double r[kExprMaxRegisters], wr[kExprMaxRegisters], wj[kExprMaxRegisters], zero[kExprMaxRegisters] = {};
  double J[kExprMaxRegisters * kTermMaxInputs];
  r_->evaluate(x, u, r, J);
  const double s = scale(p);
  // g = s J' W r; H = s J' W J (Gauss-Newton: the curvature of r is add_curvature's).
  W_.apply(r, wr);
  for (int j = 0; j < n; ++j) {
    const double* jj = J + std::size_t(j) * m;
    double acc = 0;
    for (int i = 0; i < m; ++i) acc += jj[i] * wr[i];
    if (in[j] < nx) {
      if (out.gx) out.gx[in[j]] += s * acc;
    } else if (out.gu) {
      out.gu[in[j] - nx] += s * acc;
    }
  }
  for (int b = 0; b < n; ++b) {
    W_.apply(J + std::size_t(b) * m, wj);
    for (int a = 0; a < n; ++a) {
      const double* ja = J + std::size_t(a) * m;
      double acc = 0;
      for (int i = 0; i < m; ++i) acc += ja[i] * wj[i];
      add_split(out, nx, nu, in[a], in[b], s * acc);
    }
  }
  return s * W_.half_quadratic(r, zero);
}

bool ResidualCost::add_curvature(const StagePoint& p, const CostBlocks& out) const {
  const double* x = need(p.x, info_, "cost", type(), "a state");
  const double* u = r_->uses_control() ? need(p.u, info_, "cost", type(), "a control") : nullptr;
  const int n = int(r_->inputs().size());
  double r[kExprMaxRegisters], c[kExprMaxRegisters];
  double H[kTermMaxInputs * kTermMaxInputs];
  r_->evaluate(x, u, r, nullptr);
  W_.apply(r, c);
  const double s = scale(p);
  for (int i = 0; i < r_->dim(); ++i) c[i] *= s;
  if (!r_->curvature(x, u, c, H)) return false;
  const std::vector<int>& in = r_->inputs();
  for (int b = 0; b < n; ++b)
    for (int a = 0; a < n; ++a) add_split(out, r_->nx(), r_->nu(), in[a], in[b], H[a + std::size_t(b) * n]);
  return true;
}

// --- ExpressionConstraint --------------------------------------------------------------------------

ExpressionConstraint::ExpressionConstraint(TermInfo info, std::shared_ptr<const TermExpressions> g,
                                           std::vector<double> lower, std::vector<double> upper)
    : ConstraintTerm(std::move(info)), g_(std::move(g)) {
  const std::size_t m = std::size_t(g_->dim());
  if (lower.size() != m || upper.size() != m)
    fail(info_, "constraint", type(), "lower and upper: expected " + std::to_string(m) + " bounds each");
  equality_ = true;
  for (std::size_t i = 0; i < m; ++i) equality_ = equality_ && lower[i] == upper[i] && std::isfinite(lower[i]);
  for (std::size_t i = 0; i < m; ++i) {
    if (!(lower[i] <= upper[i])) fail(info_, "constraint", type(), "expected lower <= upper");
    if (equality_) {
      rows_.push_back({int(i), 1.0, lower[i]});
      continue;
    }
    if (std::isfinite(upper[i])) rows_.push_back({int(i), 1.0, upper[i]});
    if (std::isfinite(lower[i])) rows_.push_back({int(i), -1.0, lower[i]});
  }
  if (rows_.empty()) fail(info_, "constraint", type(), "expected at least one finite bound");
}

void ExpressionConstraint::evaluate(const StagePoint& p, double* g) const { jacobian(p, g, nullptr, nullptr); }

void ExpressionConstraint::jacobian(const StagePoint& p, double* g, double* gx, double* gu) const {
  const double* x = need(p.x, info_, "constraint", type(), "a state");
  const double* u = g_->uses_control() ? need(p.u, info_, "constraint", type(), "a control") : nullptr;
  const int m = g_->dim(), nx = g_->nx(), nu = g_->nu(), rows = dim();
  const std::vector<int>& in = g_->inputs();
  double r[kExprMaxRegisters];
  double J[kExprMaxRegisters * kTermMaxInputs];
  const bool derivatives = gx != nullptr || (gu != nullptr && g_->uses_control());
  g_->evaluate(x, u, r, derivatives ? J : nullptr);
  if (g)
    for (int k = 0; k < rows; ++k) g[k] = rows_[k].sign * (r[rows_[k].expr] - rows_[k].bound);
  if (!derivatives) return;
  if (gx) std::fill(gx, gx + std::size_t(rows) * nx, 0.0);
  const bool write_u = gu != nullptr && g_->uses_control();
  if (write_u) std::fill(gu, gu + std::size_t(rows) * nu, 0.0);
  for (int j = 0; j < int(in.size()); ++j)
    for (int k = 0; k < rows; ++k) {
      const double v = rows_[k].sign * J[rows_[k].expr + std::size_t(j) * m];
      if (in[j] < nx) {
        if (gx) gx[k + std::size_t(in[j]) * rows] = v;
      } else if (write_u) {
        gu[k + std::size_t(in[j] - nx) * rows] = v;
      }
    }
}

bool ExpressionConstraint::add_curvature(const StagePoint& p, const double* mult, double* H, int ldh) const {
  const double* x = need(p.x, info_, "constraint", type(), "a state");
  const double* u = g_->uses_control() ? need(p.u, info_, "constraint", type(), "a control") : nullptr;
  double c[kExprMaxRegisters] = {};
  for (int k = 0; k < dim(); ++k) c[rows_[k].expr] += rows_[k].sign * mult[k];
  const int n = int(g_->inputs().size());
  double h[kTermMaxInputs * kTermMaxInputs];
  if (!g_->curvature(x, u, c, h)) return false;
  const std::vector<int>& in = g_->inputs();
  for (int b = 0; b < n; ++b)
    for (int a = 0; a < n; ++a) H[in[a] + std::size_t(in[b]) * ldh] += h[a + std::size_t(b) * n];
  return true;
}

}  // namespace knot::problems

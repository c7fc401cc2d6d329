// OcpNlp: the discretized OCP as a general sparse NLP (knot/solver/ipopt.hpp). Built on every
// configuration; only the IPOPT adapter (ipopt_solve.cpp) needs IPOPT.
#include <algorithm>
#include <cmath>
#include <limits>

#include "knot/solver/ipopt.hpp"

namespace knot::solver {
namespace {

using problems::CostBlocks;
using problems::IntegratorStatus;
using problems::StagePoint;

bool all_finite(const double* v, int n) {
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

}  // namespace

OcpNlp::OcpNlp(const problems::Problem& problem) : problem_(problem) {
  problem.validate();
  N_ = problem.horizon.N;
  nx_ = problem.nx();
  nu_ = problem.nu();
  dt_ = problem.horizon.dt;
  n_ = (N_ + 1) * nx_ + N_ * nu_;
  data_ = problem.model->make_data();
  integrator_ = std::make_unique<problems::Integrator>(*problem.model, problem.horizon.integrator);

  const auto& terms = problem.constraints;
  const int T = static_cast<int>(terms.size());

  // Jacobian pattern of each constraint term. A box term's Jacobian is a constant +-1 per row, so
  // one evaluation gives its exact pattern; other terms get their gx block dense (and gu when they
  // read the control).
  int max_dim = 0;
  for (const auto& t : terms) max_dim = std::max(max_dim, t->dim());
  gx_.assign(static_cast<std::size_t>(max_dim) * nx_, 0.0);
  gu_.assign(static_cast<std::size_t>(max_dim) * nu_, 0.0);
  pattern_.resize(terms.size());
  {
    const std::vector<double> u0(static_cast<std::size_t>(nu_), 0.0);
    for (int t = 0; t < T; ++t) {
      const problems::ConstraintTerm& term = *terms[t];
      const int dim = term.dim();
      auto& pat = pattern_[t];
      if (const problems::BoxBounds* box = term.box()) {
        std::fill(gx_.begin(), gx_.end(), 0.0);
        std::fill(gu_.begin(), gu_.end(), 0.0);
        StagePoint p{0, N_, dt_, problem.x0.data(), u0.data(), nullptr, data_.get()};
        term.jacobian(p, nullptr, gx_.data(), gu_.data());
        const double* J = box->on_control ? gu_.data() : gx_.data();
        const int cols = box->on_control ? nu_ : nx_;
        for (int r = 0; r < dim; ++r)
          for (int c = 0; c < cols; ++c)
            if (J[r + static_cast<std::size_t>(c) * dim] != 0.0) pat.push_back({r, c, box->on_control});
      } else {
        for (int r = 0; r < dim; ++r) {
          for (int c = 0; c < nx_; ++c) pat.push_back({r, c, false});
          if (term.uses_control())
            for (int c = 0; c < nu_; ++c) pat.push_back({r, c, true});
        }
      }
    }
  }

  // Rows, knot by knot: [x_0 - x0], active terms, dynamics defect.
  active_.resize(static_cast<std::size_t>(N_) + 1);
  int row = 0;
  for (int k = 0; k <= N_; ++k) {
    if (k == 0) {
      row_is_equality_.insert(row_is_equality_.end(), static_cast<std::size_t>(nx_), 1);
      row += nx_;
    }
    for (int t = 0; t < T; ++t) {
      if (!terms[t]->active(k, N_)) continue;
      active_[k].push_back({t, row});
      const int dim = terms[t]->dim();
      row_is_equality_.insert(row_is_equality_.end(), static_cast<std::size_t>(dim),
                              terms[t]->kind() == problems::ConstraintKind::Equality ? 1 : 0);
      row += dim;
    }
    if (k < N_) {
      dyn_row_.push_back(row);
      row_is_equality_.insert(row_is_equality_.end(), static_cast<std::size_t>(nx_), 1);
      row += nx_;
    }
  }
  m_ = row;

  walk_jacobian(nullptr, [this](int r, int c, double) {
    jac_row_.push_back(r);
    jac_col_.push_back(c);
  });

  for (const auto& c : problem.costs) rate_costs_ = rate_costs_ || c->couples_previous_control();
  walk_hessian([this](int r, int c, std::size_t) {
    hess_row_.push_back(r);
    hess_col_.push_back(c);
  });

  xn_.assign(static_cast<std::size_t>(nx_), 0.0);
  A_.assign(static_cast<std::size_t>(nx_) * nx_, 0.0);
  B_.assign(static_cast<std::size_t>(nx_) * nu_, 0.0);
  const std::size_t K = static_cast<std::size_t>(N_) + 1;
  Hxx_.assign(K * nx_ * nx_, 0.0);
  Huu_.assign(K * nu_ * nu_, 0.0);
  Hux_.assign(K * nu_ * nx_, 0.0);
  Hup_.assign(K * nu_ * nu_, 0.0);
  v_.assign(static_cast<std::size_t>(nx_ + nu_), 0.0);
  gp_.assign(v_.size(), 0.0);
  gm_.assign(v_.size(), 0.0);
  Hk_.assign(std::max(v_.size() * v_.size(), 2 * static_cast<std::size_t>(nu_) * nu_), 0.0);
}

OcpNlp::~OcpNlp() = default;

StagePoint OcpNlp::point(const double* z, int k) const {
  StagePoint p;
  p.k = k;
  p.N = N_;
  p.dt = dt_;
  p.x = z + state_offset(k);
  p.u = k < N_ ? z + control_offset(k) : nullptr;
  p.u_prev = k > 0 ? z + control_offset(k - 1) : nullptr;
  p.data = data_.get();
  return p;
}

void OcpNlp::pack(const double* x, const double* u, double* z) const {
  for (int k = 0; k <= N_; ++k) {
    std::copy_n(x + static_cast<std::size_t>(k) * nx_, nx_, z + state_offset(k));
    if (k < N_) std::copy_n(u + static_cast<std::size_t>(k) * nu_, nu_, z + control_offset(k));
  }
}

void OcpNlp::unpack(const double* z, double* x, double* u) const {
  for (int k = 0; k <= N_; ++k) {
    std::copy_n(z + state_offset(k), nx_, x + static_cast<std::size_t>(k) * nx_);
    if (k < N_) std::copy_n(z + control_offset(k), nu_, u + static_cast<std::size_t>(k) * nu_);
  }
}

std::vector<double> OcpNlp::default_guess() const {
  std::vector<double> z(static_cast<std::size_t>(n_), 0.0);
  for (int k = 0; k <= N_; ++k) std::copy(problem_.x0.begin(), problem_.x0.end(), z.begin() + state_offset(k));
  return z;
}

void OcpNlp::constraint_bounds(double* lower, double* upper) const {
  for (int r = 0; r < m_; ++r) {
    lower[r] = row_is_equality_[r] ? 0.0 : -std::numeric_limits<double>::infinity();
    upper[r] = 0.0;
  }
}

void OcpNlp::jacobian_structure(int* rows, int* cols) const {
  std::copy(jac_row_.begin(), jac_row_.end(), rows);
  std::copy(jac_col_.begin(), jac_col_.end(), cols);
}

void OcpNlp::hessian_structure(int* rows, int* cols) const {
  std::copy(hess_row_.begin(), hess_row_.end(), rows);
  std::copy(hess_col_.begin(), hess_col_.end(), cols);
}

bool OcpNlp::objective(const double* z, double& f) {
  double sum = 0;
  for (int k = 0; k <= N_; ++k) {
    const StagePoint p = point(z, k);
    for (const auto& c : problem_.costs)
      if (c->active(k, N_)) sum += c->value(p);
  }
  f = sum;
  return std::isfinite(f);
}

bool OcpNlp::gradient(const double* z, double* grad) {
  std::fill(grad, grad + n_, 0.0);
  for (int k = 0; k <= N_; ++k) {
    const StagePoint p = point(z, k);
    CostBlocks out;
    out.gx = grad + state_offset(k);
    out.gu = k < N_ ? grad + control_offset(k) : nullptr;
    out.gu_prev = k > 0 ? grad + control_offset(k - 1) : nullptr;
    for (const auto& c : problem_.costs)
      if (c->active(k, N_)) c->accumulate(p, out);
  }
  return all_finite(grad, n_);
}

bool OcpNlp::constraints(const double* z, double* g) {
  for (int k = 0; k <= N_; ++k) {
    const StagePoint p = point(z, k);
    if (k == 0)
      for (int i = 0; i < nx_; ++i) g[i] = z[i] - problem_.x0[i];
    for (const ActiveConstraint& a : active_[k]) problem_.constraints[a.term]->evaluate(p, g + a.row);
    if (k < N_) {
      if (integrator_->step(*data_, p.x, p.u, dt_, xn_.data()) != IntegratorStatus::Ok) return false;
      const double* x_next = z + state_offset(k + 1);
      for (int i = 0; i < nx_; ++i) g[dyn_row_[k] + i] = x_next[i] - xn_[i];
    }
  }
  return all_finite(g, m_);
}

// One traversal gives both the structure (z null: nothing is evaluated) and the values, so the
// two cannot disagree on the order of the entries.
template <class Emit>
bool OcpNlp::walk_jacobian(const double* z, Emit&& emit) {
  const bool eval = z != nullptr;
  for (int k = 0; k <= N_; ++k) {
    const int xk = state_offset(k), uk = k < N_ ? control_offset(k) : -1;
    if (k == 0)
      for (int i = 0; i < nx_; ++i) emit(i, xk + i, 1.0);
    for (const ActiveConstraint& a : active_[k]) {
      const problems::ConstraintTerm& term = *problem_.constraints[a.term];
      const int dim = term.dim();
      if (eval) {
        // Blocks a term does not depend on are left to the caller (constraint.hpp): zero them.
        std::fill(gx_.begin(), gx_.end(), 0.0);
        std::fill(gu_.begin(), gu_.end(), 0.0);
        term.jacobian(point(z, k), nullptr, gx_.data(), term.uses_control() ? gu_.data() : nullptr);
      }
      for (const TermEntry& e : pattern_[a.term]) {
        const std::size_t at = e.row + static_cast<std::size_t>(e.col) * dim;
        emit(a.row + e.row, (e.on_control ? uk : xk) + e.col, eval ? (e.on_control ? gu_[at] : gx_[at]) : 0.0);
      }
    }
    if (k < N_) {
      if (eval) {
        const StagePoint p = point(z, k);
        if (integrator_->step_jacobian(*data_, p.x, p.u, dt_, xn_.data(), A_.data(), nu_ > 0 ? B_.data() : nullptr) !=
            IntegratorStatus::Ok)
          return false;
      }
      // Row i of x_{k+1} - F(x_k, u_k): -A(i, :), -B(i, :), +1 at x_{k+1}[i].
      const int xk1 = state_offset(k + 1), row = dyn_row_[k];
      for (int i = 0; i < nx_; ++i) {
        for (int j = 0; j < nx_; ++j) emit(row + i, xk + j, eval ? -A_[i + static_cast<std::size_t>(j) * nx_] : 0.0);
        for (int j = 0; j < nu_; ++j) emit(row + i, uk + j, eval ? -B_[i + static_cast<std::size_t>(j) * nx_] : 0.0);
        emit(row + i, xk1 + i, 1.0);
      }
    }
  }
  return true;
}

bool OcpNlp::jacobian(const double* z, double* values) {
  std::size_t e = 0;
  if (!walk_jacobian(z, [&](int, int, double v) { values[e++] = v; })) return false;
  return all_finite(values, jacobian_nonzeros());
}

// Lower triangle, knot by knot: the dense (x_k, u_k) block (x_N alone at k = N), then, with rate
// costs, the full (u_k, u_{k-1}) block. emit(row, col, source) names where the value is held:
// source indexes the concatenation [Hxx_ | Huu_ | Hux_ | Hup_].
template <class Emit>
void OcpNlp::walk_hessian(Emit&& emit) const {
  const std::size_t K = static_cast<std::size_t>(N_) + 1;
  const std::size_t base_uu = K * nx_ * nx_, base_ux = base_uu + K * nu_ * nu_, base_up = base_ux + K * nu_ * nx_;
  for (int k = 0; k <= N_; ++k) {
    const int xk = state_offset(k);
    const std::size_t kk = static_cast<std::size_t>(k);
    for (int j = 0; j < nx_; ++j)
      for (int i = j; i < nx_; ++i) emit(xk + i, xk + j, kk * nx_ * nx_ + i + static_cast<std::size_t>(j) * nx_);
    if (k == N_) break;
    const int uk = control_offset(k);
    for (int i = 0; i < nu_; ++i)
      for (int j = 0; j < nx_; ++j)
        emit(uk + i, xk + j, base_ux + kk * nu_ * nx_ + i + static_cast<std::size_t>(j) * nu_);
    for (int j = 0; j < nu_; ++j)
      for (int i = j; i < nu_; ++i)
        emit(uk + i, uk + j, base_uu + kk * nu_ * nu_ + i + static_cast<std::size_t>(j) * nu_);
    if (rate_costs_ && k > 0) {
      const int up = control_offset(k - 1);
      for (int i = 0; i < nu_; ++i)
        for (int j = 0; j < nu_; ++j)
          emit(uk + i, up + j, base_up + kk * nu_ * nu_ + i + static_cast<std::size_t>(j) * nu_);
    }
  }
}

void OcpNlp::clear_hessian_blocks() {
  std::fill(Hxx_.begin(), Hxx_.end(), 0.0);
  std::fill(Huu_.begin(), Huu_.end(), 0.0);
  std::fill(Hux_.begin(), Hux_.end(), 0.0);
  std::fill(Hup_.begin(), Hup_.end(), 0.0);
}

bool OcpNlp::emit_hessian(double scale, double* values) {
  const std::size_t s1 = Hxx_.size(), s2 = s1 + Huu_.size(), s3 = s2 + Hux_.size();
  std::size_t e = 0;
  walk_hessian([&](int, int, std::size_t src) {
    const double v = src < s1 ? Hxx_[src] : src < s2 ? Huu_[src - s1] : src < s3 ? Hux_[src - s2] : Hup_[src - s3];
    values[e++] = scale * v;
  });
  return all_finite(values, hessian_nonzeros());
}

bool OcpNlp::gauss_newton_hessian(const double* z, double scale, double* values) {
  clear_hessian_blocks();
  for (int k = 0; k <= N_; ++k) {
    const std::size_t kk = static_cast<std::size_t>(k);
    const StagePoint p = point(z, k);
    CostBlocks out;
    out.Hxx = Hxx_.data() + kk * nx_ * nx_;
    if (k < N_) {
      out.Huu = Huu_.data() + kk * nu_ * nu_;
      out.Hux = Hux_.data() + kk * nu_ * nx_;
    }
    if (k > 0) {
      out.Hpp = Huu_.data() + (kk - 1) * nu_ * nu_;
      out.Hup = Hup_.data() + kk * nu_ * nu_;
    }
    for (const auto& c : problem_.costs)
      if (c->active(k, N_)) c->accumulate(p, out);
  }
  return emit_hessian(scale, values);
}

// out (nv = nx, plus nu when k < N) = d/dv of the terms of obj_factor f + lambda' g that depend on
// knot k's variables through knot k: the costs at k (u_{k-1} held fixed), the constraint terms at
// k, and the dynamics rows of interval k, x_{k+1} - F(x_k, u_k), whose gradient is -[A B]' y.
bool OcpNlp::knot_lagrangian_gradient(const double* z, int k, double obj_factor, const double* lambda, const double* v,
                                      double* out) {
  const int nv = nx_ + (k < N_ ? nu_ : 0);
  std::fill(out, out + nv, 0.0);
  StagePoint p = point(z, k);
  p.x = v;
  p.u = k < N_ ? v + nx_ : nullptr;
  CostBlocks cb;
  cb.gx = out;
  cb.gu = k < N_ ? out + nx_ : nullptr;
  for (const auto& c : problem_.costs)
    if (c->active(k, N_)) c->accumulate(p, cb);
  for (int i = 0; i < nv; ++i) out[i] *= obj_factor;

  for (const ActiveConstraint& a : active_[k]) {
    const problems::ConstraintTerm& term = *problem_.constraints[a.term];
    const int dim = term.dim();
    std::fill(gx_.begin(), gx_.end(), 0.0);
    std::fill(gu_.begin(), gu_.end(), 0.0);
    term.jacobian(p, nullptr, gx_.data(), term.uses_control() ? gu_.data() : nullptr);
    const double* mu = lambda + a.row;
    for (int j = 0; j < nx_; ++j)
      for (int r = 0; r < dim; ++r) out[j] += gx_[r + static_cast<std::size_t>(j) * dim] * mu[r];
    if (term.uses_control())
      for (int j = 0; j < nu_; ++j)
        for (int r = 0; r < dim; ++r) out[nx_ + j] += gu_[r + static_cast<std::size_t>(j) * dim] * mu[r];
  }

  if (k < N_) {
    if (integrator_->step_jacobian(*data_, p.x, p.u, dt_, xn_.data(), A_.data(), nu_ > 0 ? B_.data() : nullptr) !=
        IntegratorStatus::Ok)
      return false;
    const double* y = lambda + dyn_row_[k];
    for (int j = 0; j < nx_; ++j)
      for (int i = 0; i < nx_; ++i) out[j] -= A_[i + static_cast<std::size_t>(j) * nx_] * y[i];
    for (int j = 0; j < nu_; ++j)
      for (int i = 0; i < nx_; ++i) out[nx_ + j] -= B_[i + static_cast<std::size_t>(j) * nx_] * y[i];
  }
  return all_finite(out, nv);
}

bool OcpNlp::lagrangian_hessian(const double* z, double obj_factor, const double* lambda, double* values) {
  clear_hessian_blocks();
  // Central differences with the step that balances truncation (h^2) against rounding (eps / h).
  const double rel_step = std::cbrt(std::numeric_limits<double>::epsilon());
  for (int k = 0; k <= N_; ++k) {
    const std::size_t kk = static_cast<std::size_t>(k);
    const int nv = nx_ + (k < N_ ? nu_ : 0);
    std::copy_n(z + state_offset(k), nv, v_.data());  // x_k, u_k are adjacent in z
    for (int j = 0; j < nv; ++j) {
      const double vj = v_[j], h = rel_step * std::max(1.0, std::abs(vj));
      v_[j] = vj + h;
      if (!knot_lagrangian_gradient(z, k, obj_factor, lambda, v_.data(), gp_.data())) return false;
      v_[j] = vj - h;
      if (!knot_lagrangian_gradient(z, k, obj_factor, lambda, v_.data(), gm_.data())) return false;
      v_[j] = vj;
      for (int i = 0; i < nv; ++i) Hk_[i + static_cast<std::size_t>(j) * nv] = (gp_[i] - gm_[i]) / (2 * h);
    }
    // Symmetrize and split into the x-x, u-x and u-u blocks.
    const auto H = [&](int i, int j) {
      return 0.5 * (Hk_[i + static_cast<std::size_t>(j) * nv] + Hk_[j + static_cast<std::size_t>(i) * nv]);
    };
    for (int j = 0; j < nx_; ++j)
      for (int i = 0; i < nx_; ++i) Hxx_[kk * nx_ * nx_ + i + static_cast<std::size_t>(j) * nx_] = H(i, j);
    if (k < N_) {
      for (int j = 0; j < nx_; ++j)
        for (int i = 0; i < nu_; ++i) Hux_[kk * nu_ * nx_ + i + static_cast<std::size_t>(j) * nu_] = H(nx_ + i, j);
      for (int j = 0; j < nu_; ++j)
        for (int i = 0; i < nu_; ++i)
          Huu_[kk * nu_ * nu_ + i + static_cast<std::size_t>(j) * nu_] += H(nx_ + i, nx_ + j);
    }
  }
  // The rate cost couples u_k with u_{k-1}; it is quadratic, so its (u_{k-1}, u_{k-1}) and
  // (u_k, u_{k-1}) blocks are the exact constant ones it accumulates.
  if (rate_costs_) {
    const std::size_t nu2 = static_cast<std::size_t>(nu_) * nu_;
    for (int k = 1; k <= N_; ++k) {
      std::fill(Hk_.begin(), Hk_.begin() + 2 * nu2, 0.0);
      CostBlocks out;
      out.Hpp = Hk_.data();
      out.Hup = Hk_.data() + nu2;
      const StagePoint p = point(z, k);
      for (const auto& c : problem_.costs)
        if (c->couples_previous_control() && c->active(k, N_)) c->accumulate(p, out);
      const std::size_t kk = static_cast<std::size_t>(k);
      for (std::size_t e = 0; e < nu2; ++e) {
        Huu_[(kk - 1) * nu2 + e] += obj_factor * Hk_[e];
        Hup_[kk * nu2 + e] += obj_factor * Hk_[nu2 + e];
      }
    }
  }
  return emit_hessian(1.0, values);
}

}  // namespace knot::solver

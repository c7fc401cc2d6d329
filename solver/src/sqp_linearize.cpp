// The SQP phases that evaluate the problem: linearize (the LQ subproblem's data at the iterate), the
// KKT residuals for check_convergence, and the merit function at line-search trial points.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sqp_impl.hpp"

namespace knot::solver {
namespace {

bool all_finite(const std::vector<double>& v) {
  for (double e : v)
    if (!std::isfinite(e)) return false;
  return true;
}

double l1(const double* v, int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::abs(v[i]);
  return sum;
}

}  // namespace

problems::StagePoint Solver::Impl::point(int k, const double* x, const double* u, problems::ModelData* data) const {
  problems::StagePoint p;
  p.k = k;
  p.N = N;
  p.dt = dt;
  p.x = x + static_cast<std::size_t>(k) * nx;
  p.u = k < N ? u + static_cast<std::size_t>(k) * nu : nullptr;
  p.u_prev = k > 0 ? u + static_cast<std::size_t>(k - 1) * nu : nullptr;
  p.data = data;
  return p;
}

void Solver::Impl::for_each_knot(void (Impl::*phase)(int, KnotWork&)) {
  struct Round {
    Impl* self;
    void (Impl::*phase)(int, KnotWork&);
  } round{this, phase};
  pool->run(
      N + 1,
      [](void* ctx, int k, int worker) {
        const Round& r = *static_cast<const Round*>(ctx);
        (r.self->*r.phase)(k, r.self->work[static_cast<std::size_t>(worker)]);
      },
      &round);
}

// Rows of one kind at knot k: values into rows.value (or `values` when given) and, when `jacobian`,
// the Jacobian rows [dg/dx, dg/du].
static void evaluate_rows(const Rows& rows, const problems::StagePoint& p, int nx, int nu, double* values, double* jac,
                          double* tg, double* tgx, double* tgu) {
  const int nw = nx + nu;
  int row = rows.offset[static_cast<std::size_t>(p.k)];
  for (const problems::ConstraintTerm* t : rows.terms) {
    if (!t->active(p.k, p.N)) continue;
    const int m = t->dim();
    if (jac == nullptr) {
      t->evaluate(p, values + row);
    } else {
      // A term writes only the blocks of the variables it reads; the others must read as zero.
      std::fill(tgx, tgx + static_cast<std::size_t>(m) * nx, 0.0);
      std::fill(tgu, tgu + static_cast<std::size_t>(m) * nu, 0.0);
      t->jacobian(p, tg, tgx, p.u != nullptr ? tgu : nullptr);
      for (int i = 0; i < m; ++i) {
        values[row + i] = tg[i];
        double* J = jac + static_cast<std::size_t>(row + i) * nw;
        for (int j = 0; j < nx; ++j) J[j] = tgx[i + static_cast<std::size_t>(j) * m];
        for (int j = 0; j < nu; ++j) J[nx + j] = p.u != nullptr ? tgu[i + static_cast<std::size_t>(j) * m] : 0.0;
      }
    }
    row += m;
  }
}

// Per knot: the Gauss-Newton cost blocks (Q_k, R_k, S_k, q_k, r_k), the integrator's sensitivities
// A_k, B_k and defect c_k = F(x_k, u_k) - x_{k+1}, and the constraint rows with their Jacobians.
// The LQ is posed in the step, so x_init = x0 - x_0. The knots are independent (on the pool when
// SolverOptions::threads > 1); what couples them, the total cost and a rate cost's gradient in the
// previous control, is summed here afterwards in knot order.
bool Solver::Impl::linearize() {
  const double* x = sol.x.data();
  // The exact Hessian's multiplier terms are taken in the caller's units, so that scale_objective's
  // factor applies to the cost's share alone (obj_scale is a power of two: exact both ways). A cold
  // start's multipliers are re-initialized after this linearization.
  const bool unscaled_multipliers = exact_now && obj_scale != 1.0 && !cold;
  if (unscaled_multipliers) scale_multipliers(1 / obj_scale);
  for_each_knot(&Impl::linearize_knot);
  if (unscaled_multipliers) scale_multipliers(obj_scale);
  for (int k = 0; k <= N; ++k) {
    const KnotOutcome& o = knot_outcome[static_cast<std::size_t>(k)];
    if (o.failure == KnotFailure::None) continue;
    if (o.failure == KnotFailure::Integrator) {
      const std::string_view why = problems::to_string(o.integrator);
      set_status(Status::NumericalError, "integrator: %.*s at knot %d", static_cast<int>(why.size()), why.data(), k);
    } else if (o.failure == KnotFailure::NonFiniteHessian) {
      set_status(Status::NumericalError, "non-finite second derivatives of the integrator step at knot %d", k);
    } else {
      set_status(Status::NumericalError, "integrator failed while differencing the Hessian at knot %d", k);
    }
    return false;
  }
  cost = summed_term_cost();
  for (int i = 0; i < nx; ++i) lq.x_init[static_cast<std::size_t>(i)] = problem.x0[static_cast<std::size_t>(i)] - x[i];
  if (rate) {
    // Knot k's rate terms' gradient in u_{k-1} joins r_{k-1}; then the raw gradient is copied again.
    for (int k = 1; k <= N; ++k) {
      double* r = lq.r_k(k - 1);
      const double* g = rate_prev.data() + static_cast<std::size_t>(k) * nu;
      for (int i = 0; i < nu; ++i) r[i] += g[i];
    }
    std::copy(lq.r.begin(), lq.r.end(), grad_u.begin());
  }
  if (cold || !scale_known) {
    obj_scale = objective_scale();
    if (!cold) {  // a warm start's multipliers, given before the scale was known
      scale_multipliers(obj_scale);
      mu *= obj_scale;
    }
    scale_known = true;
  }
  if (obj_scale != 1.0) scale_objective();

  const auto bad = [&](const char* what) {
    set_status(Status::NumericalError, "non-finite %s at the iterate of iteration %d", what, stats.rows);
    return false;
  };
  if (!std::isfinite(cost)) return bad("cost");
  if (!all_finite(lq.A) || !all_finite(lq.B) || !all_finite(lq.c)) return bad("dynamics or sensitivities");
  if (!all_finite(lq.Q) || !all_finite(lq.R) || !all_finite(lq.S) || !all_finite(lq.q) || !all_finite(lq.r))
    return bad("cost derivatives");
  if (!all_finite(ineq.value) || !all_finite(ineq.jac) || !all_finite(eq.value) || !all_finite(eq.jac))
    return bad("constraint rows");

  // Merit pieces at the iterate, for the line search (the barrier term is added once mu is known).
  current.cost = obj_scale * cost;
  current.infeasibility = l1(lq.x_init.data(), nx) + l1(lq.c.data(), N * nx) + l1(eq.value.data(), eq.total());
  for (int i = 0; i < ineq.total(); ++i) current.infeasibility += std::abs(ineq.value[i] + s[i]);
  current.finite = true;
  return true;
}

// Knot k's share of linearize: its LQ blocks, raw gradients, defect, rows and (exact_now) Hessian,
// each cost term's value into term_cost and a rate cost's u_{k-1} gradient into rate_prev. Writes
// nothing another knot writes; a failure is left in knot_outcome[k].
void Solver::Impl::linearize_knot(int k, KnotWork& w) {
  KnotOutcome& outcome = knot_outcome[static_cast<std::size_t>(k)];
  outcome = KnotOutcome{};
  const double* x = sol.x.data();
  const problems::StagePoint p = point(k, x, sol.u.data(), w.data.get());
  const bool running = k < N;
  double* Q = lq.Q_k(k);
  double* q = lq.q_k(k);
  std::fill(Q, Q + static_cast<std::size_t>(nx) * nx, 0.0);
  std::fill(q, q + nx, 0.0);
  problems::CostBlocks blocks;
  blocks.gx = q;
  blocks.Hxx = Q;
  if (running) {
    std::fill(lq.R_k(k), lq.R_k(k) + static_cast<std::size_t>(nu) * nu, 0.0);
    std::fill(lq.S_k(k), lq.S_k(k) + static_cast<std::size_t>(nu) * nx, 0.0);
    std::fill(lq.r_k(k), lq.r_k(k) + nu, 0.0);
    blocks.gu = lq.r_k(k);
    blocks.Huu = lq.R_k(k);
    blocks.Hux = lq.S_k(k);
  }
  if (rate && k > 0) {
    double* Hpp = rate_Hpp.data() + static_cast<std::size_t>(k) * nu * nu;
    double* Hup = rate_Hup.data() + static_cast<std::size_t>(k) * nu * nu;
    double* g_prev = rate_prev.data() + static_cast<std::size_t>(k) * nu;
    std::fill(Hpp, Hpp + static_cast<std::size_t>(nu) * nu, 0.0);
    std::fill(Hup, Hup + static_cast<std::size_t>(nu) * nu, 0.0);
    std::fill(g_prev, g_prev + nu, 0.0);
    blocks.gu_prev = g_prev;
    blocks.Hpp = Hpp;
    blocks.Hup = Hup;
  }
  double* values = term_cost.data() + static_cast<std::size_t>(k) * costs.size();
  for (std::size_t t = 0; t < costs.size(); ++t)
    if (costs[t]->active(k, N)) values[t] = costs[t]->accumulate(p, blocks);
  std::copy(q, q + nx, grad_x.begin() + static_cast<std::ptrdiff_t>(k) * nx);
  if (running) {
    std::copy(lq.r_k(k), lq.r_k(k) + nu, grad_u.begin() + static_cast<std::ptrdiff_t>(k) * nu);
    const problems::IntegratorStatus st =
        w.integrator.step_jacobian(*w.data, p.x, p.u, dt, w.x_next.data(), lq.A_k(k), lq.B_k(k));
    if (st != problems::IntegratorStatus::Ok) {
      outcome = KnotOutcome{KnotFailure::Integrator, st};
      return;
    }
    const double* xn = x + static_cast<std::size_t>(k + 1) * nx;
    for (int i = 0; i < nx; ++i) lq.c_k(k)[i] = w.x_next[static_cast<std::size_t>(i)] - xn[i];
  }
  evaluate_rows(ineq, p, nx, nu, ineq.value.data(), ineq.jac.data(), w.term_g.data(), w.term_gx.data(),
                w.term_gu.data());
  evaluate_rows(eq, p, nx, nu, eq.value.data(), eq.jac.data(), w.term_g.data(), w.term_gx.data(), w.term_gu.data());
  if (exact_now) exact_hessian(k, w);
}

// The gradient in w = (x_k, u_k) of knot k's part of the Lagrangian,
//   L_k = l_k(w) + lambda_{k+1}' F(x_k, u_k) + z_k' g_k(w) + y_k' h_k(w),
// at the current multipliers; nx entries at the terminal knot. False when the integrator fails.
bool Solver::Impl::lagrangian_gradient(int k, const double* x, const double* u, double* out, KnotWork& w) {
  const bool running = k < N;
  std::fill(out, out + (running ? nw : nx), 0.0);
  problems::StagePoint p;
  p.k = k;
  p.N = N;
  p.dt = dt;
  p.x = x;
  p.u = running ? u : nullptr;
  // A rate cost's part in u_k (its u_{k-1} gradient belongs to knot k-1's variables, and its
  // constant blocks d2/du_{k-1}^2, d2/du_k du_{k-1} stay those of linearize).
  p.u_prev = k > 0 ? sol.u.data() + static_cast<std::size_t>(k - 1) * nu : nullptr;
  p.data = w.data.get();
  problems::CostBlocks blocks;
  blocks.gx = out;
  blocks.gu = running ? out + nx : nullptr;
  for (const problems::CostTerm* c : costs)
    if (c->active(k, N)) c->accumulate(p, blocks);
  if (running) {
    if (w.integrator.step_jacobian(*w.data, x, u, dt, w.x_next.data(), w.fd_A.data(), w.fd_B.data()) !=
        problems::IntegratorStatus::Ok)
      return false;
    const double* lam = sol.lambda.data() + static_cast<std::size_t>(k + 1) * nx;
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) out[j] += w.fd_A[i + static_cast<std::size_t>(j) * nx] * lam[i];
    for (int j = 0; j < nu; ++j)
      for (int i = 0; i < nx; ++i) out[nx + j] += w.fd_B[i + static_cast<std::size_t>(j) * nx] * lam[i];
  }
  for (const Rows* rows : {&ineq, &eq}) {
    const std::vector<double>& mult = rows == &ineq ? sol.z : sol.y;
    int row = rows->offset[static_cast<std::size_t>(k)];
    for (const problems::ConstraintTerm* t : rows->terms) {
      if (!t->active(k, N)) continue;
      const int m = t->dim();
      std::fill(w.term_gx.begin(), w.term_gx.begin() + static_cast<std::ptrdiff_t>(m) * nx, 0.0);
      std::fill(w.term_gu.begin(), w.term_gu.begin() + static_cast<std::ptrdiff_t>(m) * nu, 0.0);
      t->jacobian(p, w.term_g.data(), w.term_gx.data(), running ? w.term_gu.data() : nullptr);
      for (int i = 0; i < m; ++i) {
        const double mi = mult[static_cast<std::size_t>(row + i)];
        for (int j = 0; j < nx; ++j) out[j] += w.term_gx[i + static_cast<std::size_t>(j) * m] * mi;
        if (running)
          for (int j = 0; j < nu; ++j) out[nx + j] += w.term_gu[i + static_cast<std::size_t>(j) * m] * mi;
      }
      row += m;
    }
  }
  return true;
}

// Exact Hessian of knot k: in closed form where every piece of L_k has second derivatives, else by
// central differences of the analytic Lagrangian gradient. It replaces the Gauss-Newton blocks
// Q_k, R_k, S_k (the gradient stays analytic). A failure is left in knot_outcome[k].
bool Solver::Impl::exact_hessian(int k, KnotWork& w) {
  if (const std::optional<bool> done = closed_form_hessian(k, w)) return *done;
  return differenced_hessian(k, w);
}

// The Hessian of L_k from its pieces, exact to rounding: the cost blocks as linearize accumulated
// them (exact for quadratic terms) plus each term's curvature, lambda_{k+1}' d2F from the model's
// second-order forward mode (Model::step_hessian), and z' d2g + y' d2h from the constraint terms.
// Symmetric bit for bit. nullopt when a piece has no closed form (an implicit scheme, a model or
// term without second derivatives); false when the step's derivatives are not finite.
std::optional<bool> Solver::Impl::closed_form_hessian(int k, KnotWork& w) {
  const bool running = k < N;
  const int n = running ? nw : nx;
  const problems::StagePoint p = point(k, sol.x.data(), sol.u.data(), w.data.get());
  double* H = w.fd_H.data();
  if (running) {
    const double* lam = sol.lambda.data() + static_cast<std::size_t>(k + 1) * nx;
    switch (w.integrator.step_hessian(*w.data, p.x, p.u, dt, lam, H)) {
      case problems::SecondOrderStatus::Ok:
        break;
      case problems::SecondOrderStatus::Unsupported:
        return std::nullopt;
      case problems::SecondOrderStatus::NonFinite:
        knot_outcome[static_cast<std::size_t>(k)].failure = KnotFailure::NonFiniteHessian;
        return false;
    }
  } else {
    std::fill(H, H + static_cast<std::size_t>(n) * n, 0.0);
  }
  for (const Rows* rows : {&ineq, &eq}) {
    const double* mult = (rows == &ineq ? sol.z : sol.y).data();
    int row = rows->offset[static_cast<std::size_t>(k)];
    for (const problems::ConstraintTerm* t : rows->terms) {
      if (!t->active(k, N)) continue;
      if (!t->add_curvature(p, mult + row, H, n)) return std::nullopt;
      row += t->dim();
    }
  }
  double* Q = lq.Q_k(k);
  double* R = running ? lq.R_k(k) : nullptr;
  double* S = running ? lq.S_k(k) : nullptr;
  problems::CostBlocks blocks;
  blocks.Hxx = Q;
  blocks.Huu = R;
  blocks.Hux = S;
  for (const problems::CostTerm* c : costs)
    if (c->active(k, N) && !c->add_curvature(p, blocks)) return std::nullopt;
  const auto at = [n](int i, int j) { return static_cast<std::size_t>(i) + static_cast<std::size_t>(j) * n; };
  // Q and R symmetric bit for bit: H already is, and each mirrored pair of the cost blocks is set to
  // its mean (a no-op for a symmetric weight).
  const auto add_symmetric = [&](double* M, int m, int off) {
    for (int j = 0; j < m; ++j)
      for (int i = j; i < m; ++i) {
        const std::size_t ij = i + static_cast<std::size_t>(j) * m, ji = j + static_cast<std::size_t>(i) * m;
        const double v = 0.5 * (M[ij] + M[ji]) + H[at(off + i, off + j)];
        M[ij] = v;
        M[ji] = v;
      }
  };
  add_symmetric(Q, nx, 0);
  if (running) {
    add_symmetric(R, nu, nx);
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nu; ++i) S[i + static_cast<std::size_t>(j) * nu] += H[at(nx + i, j)];
  }
  return true;
}

// Central differences of the analytic Lagrangian gradient, with the step h_j = eps^(1/3)
// max(1, |w_j|) that balances truncation (h^2) against rounding (eps / h), then symmetrized.
bool Solver::Impl::differenced_hessian(int k, KnotWork& w) {
  const bool running = k < N;
  const int n = running ? nw : nx;
  const double* x = sol.x.data() + static_cast<std::size_t>(k) * nx;
  const double* u = running ? sol.u.data() + static_cast<std::size_t>(k) * nu : nullptr;
  std::vector<double>& at = w.fd_w;
  std::copy(x, x + nx, at.begin());
  if (running) std::copy(u, u + nu, at.begin() + nx);
  const double step_scale = std::cbrt(std::numeric_limits<double>::epsilon());
  for (int j = 0; j < n; ++j) {
    const double wj = at[static_cast<std::size_t>(j)];
    const double h = step_scale * std::max(1.0, std::abs(wj));
    at[static_cast<std::size_t>(j)] = wj + h;
    const bool ok_plus = lagrangian_gradient(k, at.data(), at.data() + nx, w.fd_plus.data(), w);
    at[static_cast<std::size_t>(j)] = wj - h;
    const bool ok_minus = lagrangian_gradient(k, at.data(), at.data() + nx, w.fd_minus.data(), w);
    at[static_cast<std::size_t>(j)] = wj;
    if (!ok_plus || !ok_minus) {
      knot_outcome[static_cast<std::size_t>(k)].failure = KnotFailure::DifferencedHessian;
      return false;
    }
    for (int i = 0; i < n; ++i)
      w.fd_H[static_cast<std::size_t>(i) + static_cast<std::size_t>(j) * n] =
          (w.fd_plus[static_cast<std::size_t>(i)] - w.fd_minus[static_cast<std::size_t>(i)]) / (2 * h);
  }
  const std::vector<double>& fd_H = w.fd_H;
  const auto H = [&](int i, int j) {
    return 0.5 * (fd_H[static_cast<std::size_t>(i) + static_cast<std::size_t>(j) * n] +
                  fd_H[static_cast<std::size_t>(j) + static_cast<std::size_t>(i) * n]);
  };
  double* Q = lq.Q_k(k);
  for (int j = 0; j < nx; ++j)
    for (int i = 0; i < nx; ++i) Q[i + static_cast<std::size_t>(j) * nx] = H(i, j);
  if (running) {
    double* R = lq.R_k(k);
    double* S = lq.S_k(k);
    for (int j = 0; j < nu; ++j)
      for (int i = 0; i < nu; ++i) R[i + static_cast<std::size_t>(j) * nu] = H(nx + i, nx + j);
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nu; ++i) S[i + static_cast<std::size_t>(j) * nu] = H(nx + i, j);
  }
  return true;
}

// Cold start: s = max(-g, slack_push max(1, |g|)) keeps the slacks off the boundary even where the
// guess violates a row; the duals start at dual_init, or on the central path (start_duals).
void Solver::Impl::initialize_slacks() {
  for (int i = 0; i < ineq.total(); ++i) {
    const double g = ineq.value[static_cast<std::size_t>(i)];
    s[i] = std::max(-g, opt.slack_push * std::max(1.0, std::abs(g)));
  }
  std::fill(sol.lambda.begin(), sol.lambda.end(), 0.0);
  std::fill(sol.y.begin(), sol.y.end(), 0.0);
  start_duals();
  // The slacks changed: the iterate's infeasibility includes g + s.
  current.infeasibility = 0;
  for (int k = 0; k < N; ++k)
    for (int i = 0; i < nx; ++i) current.infeasibility += std::abs(lq.c_k(k)[i]);
  for (int i = 0; i < nx; ++i) current.infeasibility += std::abs(lq.x_init[static_cast<std::size_t>(i)]);
  for (int i = 0; i < eq.total(); ++i) current.infeasibility += std::abs(eq.value[i]);
  for (int i = 0; i < ineq.total(); ++i) current.infeasibility += std::abs(ineq.value[i] + s[i]);
}

// check_convergence's measures at the iterate (mu = 0):
//   stationarity     inf-norm of grad_x L and grad_u L with
//                    L = f + lambda_0'(x0 - x_0) + sum lambda_{k+1}'(F_k - x_{k+1}) + z'(g + s) + y'h
//   feasibility      inf-norm of x_0 - x0, defects, h, max(g, 0) and g + s
//   complementarity  max s_i z_i
// plus the barrier problem's error (mu > 0) for the barrier update.
Residuals Solver::Impl::measure_residuals() const {
  Residuals r;
  const auto upd = [](double& m, double v) { m = std::max(m, std::abs(v)); };
  for (int k = 0; k <= N; ++k) {
    const double* lam = sol.lambda.data() + static_cast<std::size_t>(k) * nx;
    const double* gx = grad_x.data() + static_cast<std::size_t>(k) * nx;
    for (int i = 0; i < nx; ++i) {
      double acc = gx[i] - lam[i];
      if (k < N) {
        const double* A = lq.A_k(k);
        const double* ln = lam + nx;
        for (int j = 0; j < nx; ++j) acc += A[j + static_cast<std::size_t>(i) * nx] * ln[j];
      }
      for (int row = ineq.offset[k]; row < ineq.offset[k + 1]; ++row)
        acc += ineq.jac[static_cast<std::size_t>(row) * nw + i] * sol.z[row];
      for (int row = eq.offset[k]; row < eq.offset[k + 1]; ++row)
        acc += eq.jac[static_cast<std::size_t>(row) * nw + i] * sol.y[row];
      upd(r.stationarity, acc);
    }
    if (k == N) break;
    const double* B = lq.B_k(k);
    const double* ln = lam + nx;
    const double* gu = grad_u.data() + static_cast<std::size_t>(k) * nu;
    for (int i = 0; i < nu; ++i) {
      double acc = gu[i];
      for (int j = 0; j < nx; ++j) acc += B[j + static_cast<std::size_t>(i) * nx] * ln[j];
      for (int row = ineq.offset[k]; row < ineq.offset[k + 1]; ++row)
        acc += ineq.jac[static_cast<std::size_t>(row) * nw + nx + i] * sol.z[row];
      for (int row = eq.offset[k]; row < eq.offset[k + 1]; ++row)
        acc += eq.jac[static_cast<std::size_t>(row) * nw + nx + i] * sol.y[row];
      upd(r.stationarity, acc);
    }
  }
  for (double v : lq.x_init) upd(r.feasibility, v);
  for (double v : lq.c) upd(r.feasibility, v);
  for (double v : eq.value) upd(r.feasibility, v);
  double comp_mu = 0, z_sum = 0;
  for (int i = 0; i < ineq.total(); ++i) {
    const double g = ineq.value[i];
    upd(r.feasibility, std::max(g, 0.0));
    upd(r.feasibility, g + s[i]);
    r.complementarity = std::max(r.complementarity, s[i] * sol.z[i]);
    r.gap += s[i] * sol.z[i];
    z_sum += std::abs(sol.z[i]);
    comp_mu = std::max(comp_mu, std::abs(s[i] * sol.z[i] - mu));
  }
  // IPOPT's scaling of the dual measures (Waechter and Biegler 2006, eq. 5): a problem whose
  // multipliers are large (costates of a cost in the thousands) cannot meet an absolute
  // stationarity of 1e-8 in double precision, and the mean multiplier is the measure of that size.
  double multiplier_sum = z_sum;
  for (double v : sol.lambda) multiplier_sum += std::abs(v);
  for (double v : sol.y) multiplier_sum += std::abs(v);
  const double count = static_cast<double>(sol.lambda.size() + sol.z.size() + sol.y.size());
  r.scale_dual = std::max(opt.scale_max, multiplier_sum / count) / opt.scale_max;
  if (ineq.total() > 0) r.scale_comp = std::max(opt.scale_max, z_sum / ineq.total()) / opt.scale_max;
  r.barrier_error = std::max({r.stationarity / r.scale_dual, r.feasibility, comp_mu / r.scale_comp});
  return r;
}

// IPOPT's gradient-based scaling (nlp_scaling_max_gradient), with the cost's curvature measured as
// well: at a default guess a control cost has zero gradient but its full weight on the diagonal.
// Unlike IPOPT's it also scales up: with weights of 1e-12 every gradient is below the stationarity
// tolerance, and an unscaled solve stops at the first feasible point, far from the optimum. Inside
// the range the absolute constants (mu_init, dual_init, equality_reg, reg_init) were tested over,
// nothing changes. By a power of two, so scaling and unscaling the multipliers is exact.
double Solver::Impl::objective_scale() const {
  double m = 0;
  for (double v : grad_x) m = std::max(m, std::abs(v));
  for (double v : grad_u) m = std::max(m, std::abs(v));
  for (int k = 0; k <= N; ++k) {
    for (int i = 0; i < nx; ++i) m = std::max(m, std::abs(lq.Q_k(k)[i + static_cast<std::size_t>(i) * nx]));
    if (k < N)
      for (int i = 0; i < nu; ++i) m = std::max(m, std::abs(lq.R_k(k)[i + static_cast<std::size_t>(i) * nu]));
  }
  if (!(m > 0) || !std::isfinite(m)) return 1.0;  // no cost to measure: nothing to scale
  double target = m;
  if (m > opt.objective_scale_max) target = opt.objective_scale_target;
  else if (m < opt.objective_scale_min) target = opt.objective_scale_min;
  else return 1.0;
  return std::exp2(std::clamp(std::floor(std::log2(target / m)), -60.0, 60.0));
}

// The cost's blocks and gradient times obj_scale (the constraint rows and dynamics are not scaled).
void Solver::Impl::scale_objective() {
  const double f = obj_scale;
  for (std::vector<double>* v : {&lq.Q, &lq.R, &lq.S, &lq.q, &lq.r, &grad_x, &grad_u, &rate_Hpp, &rate_Hup})
    for (double& e : *v) e *= f;
}

// Multipliers and mu between the caller's units and the scaled problem's (exact: a power of two).
void Solver::Impl::scale_multipliers(double f) {
  for (std::vector<double>* v : {&sol.lambda, &sol.z, &sol.y})
    for (double& e : *v) e *= f;
}

double Solver::Impl::evaluate_cost(const double* x, const double* u) {
  double f = 0;
  for (int k = 0; k <= N; ++k) {
    const problems::StagePoint p = point(k, x, u, work[0].data.get());
    for (const problems::CostTerm* c : costs)
      if (c->active(k, N)) f += c->value(p);
  }
  return f;
}

double Solver::Impl::summed_term_cost() const {
  double f = 0;
  const std::size_t terms = costs.size();
  for (int k = 0; k <= N; ++k)
    for (std::size_t t = 0; t < terms; ++t)
      if (costs[t]->active(k, N)) f += term_cost[static_cast<std::size_t>(k) * terms + t];
  return f;
}

// Knot k's share of evaluate_merit_parts at (trial_x, trial_u): each cost term's value into
// term_cost, the integrator's step into trial_next, the rows into ineq.trial and eq.trial.
void Solver::Impl::trial_knot(int k, KnotWork& w) {
  KnotOutcome& outcome = knot_outcome[static_cast<std::size_t>(k)];
  outcome = KnotOutcome{};
  const problems::StagePoint p = point(k, trial_x, trial_u, w.data.get());
  double* values = term_cost.data() + static_cast<std::size_t>(k) * costs.size();
  for (std::size_t t = 0; t < costs.size(); ++t)
    if (costs[t]->active(k, N)) values[t] = costs[t]->value(p);
  if (k < N) {
    const problems::IntegratorStatus st =
        w.integrator.step(*w.data, p.x, p.u, dt, trial_next.data() + static_cast<std::size_t>(k) * nx);
    if (st != problems::IntegratorStatus::Ok) {
      outcome = KnotOutcome{KnotFailure::Integrator, st};
      return;
    }
  }
  evaluate_rows(ineq, p, nx, nu, ineq.trial.data(), nullptr, nullptr, nullptr, nullptr);
  evaluate_rows(eq, p, nx, nu, eq.trial.data(), nullptr, nullptr, nullptr, nullptr);
}

// Merit pieces at a trial point: cost, barrier and l1 infeasibility. Function values only (no
// derivatives); a failed integrator step or a NaN marks the point as not finite. The knots run by
// for_each_knot, the sums in knot order here.
MeritParts Solver::Impl::evaluate_merit_parts(const double* x, const double* u, const double* sl) {
  trial_x = x;
  trial_u = u;
  for_each_knot(&Impl::trial_knot);
  MeritParts m;
  m.cost = obj_scale * summed_term_cost();
  for (int i = 0; i < nx; ++i) m.infeasibility += std::abs(problem.x0[static_cast<std::size_t>(i)] - x[i]);
  for (int k = 0; k < N; ++k) {
    if (knot_outcome[static_cast<std::size_t>(k)].failure != KnotFailure::None) {
      m.finite = false;
      return m;
    }
    const double* next = trial_next.data() + static_cast<std::size_t>(k) * nx;
    const double* xn = x + static_cast<std::size_t>(k + 1) * nx;
    for (int i = 0; i < nx; ++i) m.infeasibility += std::abs(next[i] - xn[i]);
  }
  for (int i = 0; i < eq.total(); ++i) m.infeasibility += std::abs(eq.trial[i]);
  for (int i = 0; i < ineq.total(); ++i) {
    m.infeasibility += std::abs(ineq.trial[i] + sl[i]);
    m.barrier -= mu * std::log(sl[i]);
  }
  m.finite = std::isfinite(m.cost) && std::isfinite(m.infeasibility) && std::isfinite(m.barrier);
  return m;
}

}  // namespace knot::solver

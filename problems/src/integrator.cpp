#include "knot/problems/integrator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "knot/linalg/coop_lu.hpp"
#include "knot/problems/error.hpp"

namespace knot::problems {
namespace {

constexpr std::array<std::string_view, 5> kNames = {"euler", "semi_implicit_euler", "rk4", "implicit_euler",
                                                     "implicit_midpoint"};

// The Newton matrix is stored column-major; one system per call, on the host's SerialGroup.
constexpr linalg::CoopLuConfig kLuConfig{.layout = linalg::LuLayout::kColMajor};
using Lu = linalg::CoopLuDynamic<double, kLuConfig>;

// Offsets into Integrator::work_, in doubles, for nx = n, nu = m.
struct Layout {
  std::size_t f, fx, fu, y, acc, ax, bu, sx, su, kx, ku, lu_matrix, lu_work, total;
  Layout(int n, int m) {
    const std::size_t nn = static_cast<std::size_t>(n) * n, nm = static_cast<std::size_t>(n) * m;
    std::size_t at = 0;
    const auto take = [&at](std::size_t size) {
      const std::size_t here = at;
      at += size;
      return here;
    };
    f = take(n);
    fx = take(nn);
    fu = take(nm);
    y = take(n);
    acc = take(n);
    ax = take(nn);
    bu = take(nm);
    sx = take(nn);  // [sx | su] and [kx | ku] are read as one nx x (nx + nu) matrix each (rk4)
    su = take(nm);
    kx = take(nn);
    ku = take(nm);
    lu_matrix = take(nn);
    lu_work = take(static_cast<std::size_t>(Lu(n, std::max(n, 1)).workspace_size()));
    total = at;
  }
};

bool finite(const double* v, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

// C = alpha * A * B + beta * C; A is r x k, B is k x c, C is r x c, all column-major and packed.
// beta == 0 overwrites C without reading it.
void gemm(int r, int k, int c, double alpha, const double* A, const double* B, double beta, double* C) {
  for (int j = 0; j < c; ++j) {
    double* cj = C + static_cast<std::size_t>(j) * r;
    for (int i = 0; i < r; ++i) cj[i] = beta == 0.0 ? 0.0 : beta * cj[i];
    for (int l = 0; l < k; ++l) {
      const double b = alpha * B[l + static_cast<std::size_t>(j) * k];
      const double* al = A + static_cast<std::size_t>(l) * r;
      for (int i = 0; i < r; ++i) cj[i] += al[i] * b;
    }
  }
}

// K = fx [Sx | Su] + [0 | fu] (n x (n + m), the stage chain rule; fx n x n, fu and Su n x m, all
// packed). Rows i < r0 are [0 I] rows of fx (Model::velocity_rows: f_i = x[nq + i]) with fu's rows
// zero: their rows of K are S's rows nq + i, copied; the product runs over the other rows only.
void chain(int n, int m, int nq, int r0, const double* fx, const double* fu, const double* Sx, const double* Su,
           double* Kx, double* Ku) {
  for (int j = 0; j < n + m; ++j) {
    const double* sj = j < n ? Sx + static_cast<std::size_t>(j) * n : Su + static_cast<std::size_t>(j - n) * n;
    double* kj = j < n ? Kx + static_cast<std::size_t>(j) * n : Ku + static_cast<std::size_t>(j - n) * n;
    for (int i = 0; i < r0; ++i) kj[i] = sj[nq + i];
    if (j < n) {
      for (int i = r0; i < n; ++i) kj[i] = 0.0;
    } else {
      const double* fj = fu + static_cast<std::size_t>(j - n) * n;
      for (int i = r0; i < n; ++i) kj[i] = fj[i];
    }
    for (int l = 0; l < n; ++l) {
      const double b = sj[l];
      const double* fl = fx + static_cast<std::size_t>(l) * n;
      for (int i = r0; i < n; ++i) kj[i] += fl[i] * b;
    }
  }
}

// M = I + alpha * X (n x n).
void identity_plus(int n, double alpha, const double* X, double* M) {
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  for (std::size_t e = 0; e < nn; ++e) M[e] = alpha * X[e];
  for (int i = 0; i < n; ++i) M[i + static_cast<std::size_t>(i) * n] += 1.0;
}

double norm_inf(const double* v, int n) {
  double m = 0;
  for (int i = 0; i < n; ++i) m = std::max(m, std::abs(v[i]));
  return m;
}

}  // namespace

std::string_view to_string(IntegratorType type) { return kNames[static_cast<std::size_t>(type)]; }

std::optional<IntegratorType> parse_integrator(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<IntegratorType>(i);
  return std::nullopt;
}

std::vector<std::string_view> integrator_names() { return {kNames.begin(), kNames.end()}; }

std::string_view to_string(IntegratorStatus status) {
  switch (status) {
    case IntegratorStatus::Ok:
      return "ok";
    case IntegratorStatus::NewtonNotConverged:
      return "newton_not_converged";
    case IntegratorStatus::SingularNewtonMatrix:
      return "singular_newton_matrix";
    case IntegratorStatus::NonFinite:
      return "non_finite";
  }
  return "unknown";
}

Integrator::Integrator(const Model& model, IntegratorType type, IntegratorOptions options)
    : model_(&model), type_(type), options_(options) {
  const int n = model.nx(), m = model.nu();
  if (type == IntegratorType::SemiImplicitEuler && !model.discrete_time() && (model.nq() <= 0 || model.nq() >= n))
    throw ProblemError({}, "horizon.integrator",
                       "a model with a position/velocity split (0 < nq < nx) for semi_implicit_euler",
                       "model '" + std::string(model.type()) + "' with nq = " + std::to_string(model.nq()) +
                           ", nx = " + std::to_string(n),
                       "use rk4, euler or an implicit scheme");
  if (options.newton_max_iter < 0 || !(options.newton_tol > 0))
    throw ProblemError({}, "horizon.integrator", "newton_max_iter >= 0 and newton_tol > 0",
                       std::to_string(options.newton_max_iter) + " and " + std::to_string(options.newton_tol));
  work_.assign(Layout(n, m).total, 0.0);
  piv_.assign(static_cast<std::size_t>(std::max(n, 1)), 0);
}

IntegratorStatus Integrator::step(ModelData& data, const double* x, const double* u, double dt, double* x_next) {
  return step_jacobian(data, x, u, dt, x_next, nullptr, nullptr);
}

// With A == nullptr only x_next is formed (B is then ignored). Every result is built in the
// workspace and written last, so x_next may alias x.
IntegratorStatus Integrator::step_jacobian(ModelData& data, const double* x, const double* u, double dt,
                                           double* x_next, double* A, double* B) {
  const Model& model = *model_;
  const int n = model.nx(), m = model.nu();
  const std::size_t nn = static_cast<std::size_t>(n) * n, nm = static_cast<std::size_t>(n) * m;
  const bool jac = A != nullptr;
  const Layout L(n, m);
  double* const w = work_.data();
  double *f = w + L.f, *fx = w + L.fx, *fu = w + L.fu, *y = w + L.y, *acc = w + L.acc;
  if (!std::isfinite(dt)) return IntegratorStatus::NonFinite;

  const auto eval = [&](const double* at) {
    if (jac)
      model.dynamics_jacobian(data, at, u, f, fx, fu);
    else
      model.dynamics(data, at, u, f);
  };
  // Writes x_next (and A, B) from y (and the workspace's A, B), after a finiteness check.
  const auto finish = [&](const double* xa, const double* ja, const double* jb) {
    const bool ok = finite(xa, n) && (!jac || (finite(ja, nn) && finite(jb, nm)));
    std::copy(xa, xa + n, x_next);
    if (jac) {
      std::copy(ja, ja + nn, A);
      if (B != nullptr) std::copy(jb, jb + nm, B);
    }
    return ok ? IntegratorStatus::Ok : IntegratorStatus::NonFinite;
  };

  if (model.discrete_time()) {
    eval(x);
    return finish(f, fx, fu);
  }

  switch (type_) {
    case IntegratorType::Euler: {
      eval(x);
      for (int i = 0; i < n; ++i) y[i] = x[i] + dt * f[i];
      if (jac) {
        identity_plus(n, dt, fx, fx);
        for (std::size_t e = 0; e < nm; ++e) fu[e] *= dt;
      }
      return finish(y, fx, fu);
    }

    case IntegratorType::SemiImplicitEuler: {
      // y = [q; v+] with v+ = v + dt f_v(q, v, u); then q+ = q + dt f_q(q, v+, u). S = dy/d(x, u).
      const int nq = model.nq();
      double *Sx = w + L.sx, *Su = w + L.su, *Ax = w + L.ax;
      eval(x);
      for (int i = 0; i < n; ++i) y[i] = i < nq ? x[i] : x[i] + dt * f[i];
      if (jac) {
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) {
            const std::size_t e = i + static_cast<std::size_t>(j) * n;
            Sx[e] = (i == j ? 1.0 : 0.0) + (i < nq ? 0.0 : dt * fx[e]);
          }
        for (int j = 0; j < m; ++j)
          for (int i = 0; i < n; ++i) {
            const std::size_t e = i + static_cast<std::size_t>(j) * n;
            Su[e] = i < nq ? 0.0 : dt * fu[e];
          }
      }
      if (model.velocity_rows()) {
        // f_q(q, v+, u) = v+: q+ = q + dt v+ and its rows of S are dt times those of v+ (plus I),
        // the numbers the second evaluation's [0 I] rows would give, without it.
        for (int i = 0; i < nq; ++i) y[i] += dt * y[nq + i];
        if (jac) {
          for (int j = 0; j < n; ++j)
            for (int i = 0; i < nq; ++i) {
              const std::size_t e = i + static_cast<std::size_t>(j) * n;
              Sx[e] += dt * Sx[e + nq];
            }
          for (int j = 0; j < m; ++j)
            for (int i = 0; i < nq; ++i) {
              const std::size_t e = i + static_cast<std::size_t>(j) * n;
              Su[e] += dt * Su[e + nq];
            }
        }
        return finish(y, Sx, Su);
      }
      eval(y);
      for (int i = 0; i < nq; ++i) y[i] += dt * f[i];
      if (jac) {
        // Position rows: dq+/dx = dq/dx + dt fx2 Sx, dq+/du = dt (fx2 Su + fu2); velocity rows: S.
        gemm(n, n, n, 1.0, fx, Sx, 0.0, Ax);
        gemm(n, n, m, 1.0, fx, Su, 1.0, fu);
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < nq; ++i) {
            const std::size_t e = i + static_cast<std::size_t>(j) * n;
            Sx[e] += dt * Ax[e];
          }
        for (int j = 0; j < m; ++j)
          for (int i = 0; i < nq; ++i) {
            const std::size_t e = i + static_cast<std::size_t>(j) * n;
            Su[e] += dt * fu[e];
          }
      }
      return finish(y, Sx, Su);
    }

    case IntegratorType::Rk4: {
      // Stage s evaluates k_s = f(X_s, u) with X_1 = x, X_2 = x + dt/2 k_1, X_3 = x + dt/2 k_2,
      // X_4 = x + dt k_3. Its sensitivities K_s = fx(X_s) S_s (+ fu(X_s) for u) follow from those of
      // the stage point, S_s = d X_s / d(x, u), by the chain rule: inside the model's dual
      // evaluation when it offers dynamics_chain (S_s seeded; [Sx | Su] and [Kx | Ku] are adjacent
      // in the workspace), else as products with its Jacobian (over the acceleration rows alone for
      // a second-order model, whose velocity rows of K are rows of S).
      constexpr std::array<double, 4> weight = {1, 2, 2, 1};
      const std::array<double, 3> advance = {dt / 2, dt / 2, dt};
      const int nq = model.nq(), r0 = model.velocity_rows() ? nq : 0;
      double *Ax = w + L.ax, *Bu = w + L.bu, *Sx = w + L.sx, *Su = w + L.su, *Kx = w + L.kx, *Ku = w + L.ku;
      std::fill(acc, acc + n, 0.0);
      if (jac) {
        std::fill(Ax, Ax + nn, 0.0);
        std::fill(Bu, Bu + nm, 0.0);
      }
      std::copy(x, x + n, y);
      for (int s = 0; s < 4; ++s) {
        if (!jac) {
          model.dynamics(data, y, u, f);
        } else if (s == 0) {
          model.dynamics_jacobian(data, y, u, f, Kx, Ku);
        } else if (!model.dynamics_chain(data, y, u, Sx, f, Kx)) {
          model.dynamics_jacobian(data, y, u, f, fx, fu);
          chain(n, m, nq, r0, fx, fu, Sx, Su, Kx, Ku);
        }
        for (int i = 0; i < n; ++i) acc[i] += weight[s] * f[i];
        if (jac) {
          for (std::size_t e = 0; e < nn; ++e) Ax[e] += weight[s] * Kx[e];
          for (std::size_t e = 0; e < nm; ++e) Bu[e] += weight[s] * Ku[e];
        }
        if (s < 3) {
          const double c = advance[s];
          for (int i = 0; i < n; ++i) y[i] = x[i] + c * f[i];
          if (jac) {
            identity_plus(n, c, Kx, Sx);
            for (std::size_t e = 0; e < nm; ++e) Su[e] = c * Ku[e];
          }
        }
      }
      for (int i = 0; i < n; ++i) y[i] = x[i] + dt / 6 * acc[i];
      if (jac) {
        identity_plus(n, dt / 6, Ax, Ax);
        for (std::size_t e = 0; e < nm; ++e) Bu[e] *= dt / 6;
      }
      return finish(y, Ax, Bu);
    }

    case IntegratorType::ImplicitEuler:
    case IntegratorType::ImplicitMidpoint: {
      // Stage equation R(y) = y - x - dt f(z, u) = 0 with z = x + theta (y - x): theta = 1 (Euler),
      // 1/2 (midpoint). Newton matrix M = dR/dy = I - theta dt fx(z); at the root, by the implicit
      // function theorem, A = M^-1 (I + (1 - theta) dt fx(z)) and B = M^-1 dt fu(z).
      const double theta = type_ == IntegratorType::ImplicitEuler ? 1.0 : 0.5;
      double *M = w + L.lu_matrix, *lu_work = w + L.lu_work, *z = w + L.acc, *Ax = w + L.ax, *Bu = w + L.bu;
      const Lu lu(n, std::max(n, 1));
      linalg::SerialGroup g;
      model.dynamics(data, x, u, f);
      for (int i = 0; i < n; ++i) y[i] = x[i] + dt * f[i];  // explicit Euler guess
      if (!finite(y, n)) return finish(y, Ax, Bu);
      const double tol = options_.newton_tol * (1.0 + norm_inf(x, n));
      for (int it = 0;; ++it) {
        for (int i = 0; i < n; ++i) z[i] = x[i] + theta * (y[i] - x[i]);
        model.dynamics_jacobian(data, z, u, f, fx, fu);
        // The residual goes to f: R = y - x - dt f.
        for (int i = 0; i < n; ++i) f[i] = y[i] - x[i] - dt * f[i];
        if (!finite(f, n) || !finite(fx, nn)) {
          std::copy(y, y + n, x_next);
          return IntegratorStatus::NonFinite;
        }
        if (norm_inf(f, n) <= tol) break;
        if (it == options_.newton_max_iter) {
          std::copy(y, y + n, x_next);
          return IntegratorStatus::NewtonNotConverged;
        }
        identity_plus(n, -theta * dt, fx, M);
        if (lu.factorize(g, M, 1, piv_.data(), 1, lu_work) != 0) {
          std::copy(y, y + n, x_next);
          return IntegratorStatus::SingularNewtonMatrix;
        }
        lu.substitute(g, M, 1, piv_.data(), 1, f, f, 1, lu_work);
        for (int i = 0; i < n; ++i) y[i] -= f[i];
      }
      if (jac) {
        identity_plus(n, -theta * dt, fx, M);
        if (lu.factorize(g, M, 1, piv_.data(), 1, lu_work) != 0) {
          std::copy(y, y + n, x_next);
          return IntegratorStatus::SingularNewtonMatrix;
        }
        identity_plus(n, (1.0 - theta) * dt, fx, Ax);
        for (std::size_t e = 0; e < nm; ++e) Bu[e] = dt * fu[e];
        for (int j = 0; j < n; ++j) {
          double* col = Ax + static_cast<std::size_t>(j) * n;
          lu.substitute(g, M, 1, piv_.data(), 1, col, col, 1, lu_work);
        }
        for (int j = 0; j < m; ++j) {
          double* col = Bu + static_cast<std::size_t>(j) * n;
          lu.substitute(g, M, 1, piv_.data(), 1, col, col, 1, lu_work);
        }
      }
      return finish(y, Ax, Bu);
    }
  }
  return IntegratorStatus::NonFinite;
}

SecondOrderStatus Integrator::step_hessian(ModelData& data, const double* x, const double* u, double dt,
                                           const double* lambda, double* H) const {
  if (!std::isfinite(dt)) return SecondOrderStatus::NonFinite;
  const bool implicit = type_ == IntegratorType::ImplicitEuler || type_ == IntegratorType::ImplicitMidpoint;
  if (implicit && !model_->discrete_time()) return SecondOrderStatus::Unsupported;
  return model_->step_hessian(data, type_, x, u, dt, lambda, H);
}

}  // namespace knot::problems

// LqSolver: options, data containers, the backend choice, and the checks every backend shares.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "knot/solver/lq.hpp"
#include "lq_internal.hpp"

namespace knot::solver {

const char* to_string(Linsys linsys) {
  switch (linsys) {
    case Linsys::Pcg: return "pcg";
    case Linsys::Bdsv: return "bdsv";
    case Linsys::Riccati: return "riccati";
    case Linsys::KktLdlt: return "kkt_ldlt";
    case Linsys::Auto: return "auto";
  }
  return "?";
}

const char* to_string(Preconditioner preconditioner) {
  switch (preconditioner) {
    case Preconditioner::BlockJacobi: return "block_jacobi";
    case Preconditioner::Stair: return "stair";
  }
  return "?";
}

const char* to_string(LqStatus status) {
  switch (status) {
    case LqStatus::Solved: return "solved";
    case LqStatus::NotPositiveDefinite:
      return "not positive definite: a factorization met a non-positive pivot, or the KKT inertia is not that of "
             "a minimizer";
    case LqStatus::MaxIterations:
      return "stalled: the Schur backend's KKT residual stopped above its tolerance (pcg or refinement limit)";
    case LqStatus::NonFinite: return "non-finite: NaN or Inf in the data or the result";
    case LqStatus::Interrupted: return "interrupted: the deadline passed during pcg or the Schur refinement";
  }
  return "?";
}

std::string LqOptions::validate() const {
  auto bad = [](const char* what, const std::string& found) { return std::string(what) + ", found " + found; };
  if (pcg_max_iters < 1) return bad("pcg_max_iters must be >= 1", std::to_string(pcg_max_iters));
  if (!(pcg_rel_tol > 0.0 && pcg_rel_tol < 1.0)) return bad("pcg_rel_tol must be in (0, 1)", std::to_string(pcg_rel_tol));
  if (!(schur_reg > 0.0 && schur_reg < 1.0)) return bad("schur_reg must be in (0, 1)", std::to_string(schur_reg));
  if (max_refinement < 0) return bad("max_refinement must be >= 0", std::to_string(max_refinement));
  if (!(refine_tol > 0.0)) return bad("refine_tol must be > 0", std::to_string(refine_tol));
  if (kkt_refinement < 0) return bad("kkt_refinement must be >= 0", std::to_string(kkt_refinement));
  return {};
}

LqData::LqData(int nx_, int nu_, int N_)
    : nx(nx_), nu(nu_), N(N_),
      A(static_cast<std::size_t>(N_) * nx_ * nx_), B(static_cast<std::size_t>(N_) * nx_ * nu_),
      c(static_cast<std::size_t>(N_) * nx_), Q(static_cast<std::size_t>(N_ + 1) * nx_ * nx_),
      R(static_cast<std::size_t>(N_) * nu_ * nu_), S(static_cast<std::size_t>(N_) * nu_ * nx_),
      q(static_cast<std::size_t>(N_ + 1) * nx_), r(static_cast<std::size_t>(N_) * nu_),
      x_init(static_cast<std::size_t>(nx_)) {}

LqSolution::LqSolution(int nx_, int nu_, int N_)
    : nx(nx_), nu(nu_), N(N_), x(static_cast<std::size_t>(N_ + 1) * nx_), u(static_cast<std::size_t>(N_) * nu_),
      lambda(static_cast<std::size_t>(N_ + 1) * nx_) {}

namespace detail {

bool data_finite(const LqData& d) {
  for (const auto* v : {&d.A, &d.B, &d.c, &d.Q, &d.R, &d.S, &d.q, &d.r, &d.x_init})
    if (!all_finite(v->data(), v->size())) return false;
  return true;
}

bool solution_finite(const LqSolution& s) {
  return all_finite(s.x.data(), s.x.size()) && all_finite(s.u.data(), s.u.size()) &&
         all_finite(s.lambda.data(), s.lambda.size());
}

double inf_norm(const double* v, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(v[i]));
  return m;
}

}  // namespace detail

LqResidual lq_kkt_residual(const LqData& d, const LqSolution& s) {
  const int nx = d.nx, nu = d.nu, N = d.N;
  LqResidual res;
  auto upd = [](double& m, double v) { m = std::max(m, std::abs(v)); };
  for (int i = 0; i < nx; ++i) upd(res.feasibility, d.x_init[i] - s.x_k(0)[i]);
  for (int k = 0; k <= N; ++k) {
    const double *x = s.x_k(k), *lam = s.lambda_k(k), *Q = d.Q_k(k), *q = d.q_k(k);
    for (int i = 0; i < nx; ++i) {
      double acc = q[i] - lam[i];
      for (int j = 0; j < nx; ++j) acc += Q[i + j * nx] * x[j];
      if (k < N) {
        const double *S = d.S_k(k), *A = d.A_k(k), *u = s.u_k(k), *ln = s.lambda_k(k + 1);
        for (int j = 0; j < nu; ++j) acc += S[j + i * nu] * u[j];
        for (int j = 0; j < nx; ++j) acc += A[j + i * nx] * ln[j];
      }
      upd(res.stationarity, acc);
    }
    if (k == N) break;
    const double *R = d.R_k(k), *S = d.S_k(k), *B = d.B_k(k), *A = d.A_k(k), *u = s.u_k(k), *ln = s.lambda_k(k + 1);
    for (int i = 0; i < nu; ++i) {
      double acc = d.r_k(k)[i];
      for (int j = 0; j < nu; ++j) acc += R[i + j * nu] * u[j];
      for (int j = 0; j < nx; ++j) acc += S[i + j * nu] * x[j];
      for (int j = 0; j < nx; ++j) acc += B[j + i * nx] * ln[j];
      upd(res.stationarity, acc);
    }
    const double* xn = s.x_k(k + 1);
    for (int i = 0; i < nx; ++i) {
      double acc = d.c_k(k)[i] - xn[i];
      for (int j = 0; j < nx; ++j) acc += A[i + j * nx] * x[j];
      for (int j = 0; j < nu; ++j) acc += B[i + j * nx] * u[j];
      upd(res.feasibility, acc);
    }
  }
  return res;
}

Linsys lq_auto_linsys(int /*nx*/, int /*nu*/, int /*N*/) { return Linsys::Riccati; }

struct LqSolver::Impl {
  int nx, nu, N;
  LqOptions options;
  Linsys linsys;
  LqStats stats;
  LqStatus last = LqStatus::NonFinite;  // of the last solve or resolve: resolve needs a factorization
  std::unique_ptr<detail::LqBackend> backend;

  // One backend entry point (solve, solve_primal, resolve) with fresh stats.
  using Entry = LqStatus (detail::LqBackend::*)(const LqData&, LqSolution&, LqStats&);
  LqStatus run(Entry entry, const LqData& data, LqSolution& solution) {
    stats = LqStats{};
    stats.linsys = linsys;
    last = ((*backend).*entry)(data, solution, stats);
    return last;
  }
};

LqSolver::LqSolver(int nx, int nu, int N, const LqOptions& options) {
  if (nx < 1 || nu < 1 || N < 1)
    throw std::invalid_argument("LqSolver: needs nx >= 1, nu >= 1, N >= 1, found nx = " + std::to_string(nx) +
                                ", nu = " + std::to_string(nu) + ", N = " + std::to_string(N));
  if (const std::string why = options.validate(); !why.empty()) throw std::invalid_argument("LqOptions: " + why);
  impl_ = std::make_unique<Impl>();
  impl_->nx = nx;
  impl_->nu = nu;
  impl_->N = N;
  impl_->options = options;
  impl_->linsys = options.linsys == Linsys::Auto ? lq_auto_linsys(nx, nu, N) : options.linsys;
  impl_->options.linsys = impl_->linsys;
  switch (impl_->linsys) {
    case Linsys::Riccati: impl_->backend = detail::make_riccati(nx, nu, N, impl_->options); break;
    case Linsys::Bdsv:
    case Linsys::Pcg: impl_->backend = detail::make_schur(nx, nu, N, impl_->options); break;
    case Linsys::KktLdlt: impl_->backend = detail::make_kkt_ldlt(nx, nu, N, impl_->options); break;
    case Linsys::Auto: break;  // resolved above
  }
  impl_->options.linsys = options.linsys;
  impl_->stats.linsys = impl_->linsys;
}

LqSolver::~LqSolver() = default;
LqSolver::LqSolver(LqSolver&&) noexcept = default;
LqSolver& LqSolver::operator=(LqSolver&&) noexcept = default;

namespace {
void check_sizes(const LqSolver& solver, const LqData& data, const LqSolution& solution, const char* who) {
  const auto sized = [&](const std::vector<double>& v, long n) { return static_cast<long>(v.size()) == n; };
  const long nx = solver.nx(), nu = solver.nu(), N = solver.N();
  if (data.nx != nx || data.nu != nu || data.N != N || !sized(data.A, N * nx * nx) ||
      !sized(data.B, N * nx * nu) || !sized(data.c, N * nx) || !sized(data.Q, (N + 1) * nx * nx) ||
      !sized(data.R, N * nu * nu) || !sized(data.S, N * nu * nx) || !sized(data.q, (N + 1) * nx) ||
      !sized(data.r, N * nu) || !sized(data.x_init, nx))
    throw std::invalid_argument(std::string(who) + ": data does not have the solver's sizes (nx, nu, N)");
  if (solution.nx != nx || solution.nu != nu || solution.N != N || !sized(solution.x, (N + 1) * nx) ||
      !sized(solution.u, N * nu) || !sized(solution.lambda, (N + 1) * nx))
    throw std::invalid_argument(std::string(who) + ": solution does not have the solver's sizes (nx, nu, N)");
}
}  // namespace

LqStatus LqSolver::solve(const LqData& data, LqSolution& solution) {
  check_sizes(*this, data, solution, "LqSolver::solve");
  return impl_->run(&detail::LqBackend::solve, data, solution);
}

LqStatus LqSolver::solve_primal(const LqData& data, LqSolution& solution) {
  check_sizes(*this, data, solution, "LqSolver::solve_primal");
  return impl_->run(&detail::LqBackend::solve_primal, data, solution);
}

LqStatus LqSolver::resolve(const LqData& data, LqSolution& solution) {
  check_sizes(*this, data, solution, "LqSolver::resolve");
  if (impl_->last != LqStatus::Solved) return impl_->last;
  return impl_->run(&detail::LqBackend::resolve, data, solution);
}

void LqSolver::dynamics_unchanged() { impl_->backend->dynamics_unchanged(); }
void LqSolver::set_deadline(std::chrono::steady_clock::time_point deadline) { impl_->backend->deadline = deadline; }
void LqSolver::set_tolerance(double kkt_tol) { impl_->backend->tolerance = kkt_tol >= 0 ? kkt_tol : -1.0; }

const LqStats& LqSolver::stats() const { return impl_->stats; }
const LqOptions& LqSolver::options() const { return impl_->options; }
Linsys LqSolver::linsys() const { return impl_->linsys; }
int LqSolver::nx() const { return impl_->nx; }
int LqSolver::nu() const { return impl_->nu; }
int LqSolver::N() const { return impl_->N; }
std::size_t LqSolver::bytes_allocated() const { return sizeof(Impl) + impl_->backend->bytes(); }

}  // namespace knot::solver

// The LQ subproblem of one SQP iteration and the solver object for it.
//
//   minimize   sum_{k=0}^{N-1} ( 1/2 [x_k; u_k]' [Q_k S_k'; S_k R_k] [x_k; u_k] + q_k' x_k + r_k' u_k )
//              + 1/2 x_N' Q_N x_N + q_N' x_N
//   subject to x_0 = x_init,   x_{k+1} = A_k x_k + B_k u_k + c_k     (k = 0 .. N-1)
//
// Multipliers (one convention for every backend): with the Lagrangian
//   L = cost + lambda_0'(x_init - x_0) + sum_k lambda_{k+1}'(A_k x_k + B_k u_k + c_k - x_{k+1})
// stationarity reads
//   x_k:  Q_k x_k + S_k' u_k + q_k - lambda_k + A_k' lambda_{k+1} = 0     (k < N)
//   x_N:  Q_N x_N + q_N - lambda_N = 0
//   u_k:  R_k u_k + S_k x_k + r_k + B_k' lambda_{k+1} = 0
// so lambda_k is the costate: the gradient of the optimal cost-to-go at x_k (Riccati: P_k x_k + p_k).
//
// Storage: every block column-major and contiguous, block k of a family right after block k-1
// (LqData's accessors give the offsets). Q_k and R_k are symmetric with BOTH triangles stored.
//
// Backends (Linsys), all of which return the same x, u, lambda:
//   Riccati  backward Riccati recursion with the S_k cross terms and a forward rollout; needs only
//            R_k + B_k' P_{k+1} B_k positive definite. The CPU default.
//   Bdsv     Schur complement of the stage blocks G_k = [Q_k S_k'; S_k R_k] (positive definite
//            block-tridiagonal, state-sized blocks), solved by block Cholesky. Where that needs
//            more than Riccati does (an indefinite G_k) or misses its accuracy, the step is solved
//            by the Riccati recursion instead (riccati_fallback), so the verdict is Riccati's.
//   Pcg      the same Schur system solved by preconditioned conjugate gradient (inexact; refined, and
//            finished on a block Cholesky of S when pcg stalls, see pcg_direct_fallback).
//   KktLdlt  LDL' (Bunch-Kaufman) of the whole KKT matrix in stage order; reports the inertia.
//   Auto     chosen at construction by size (docs/solver-lq.md).
// docs/solver-lq.md derives each method, the Schur regularization and its accuracy.
//
// LqSolver allocates all it needs at construction; solve() allocates nothing and never throws on
// numerical trouble (a status), only on data of the wrong size.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace knot::solver {

enum class Linsys { Pcg, Bdsv, Riccati, KktLdlt, Auto };

// Preconditioner of the Pcg backend (knot/linalg/precond.hpp).
enum class Preconditioner { BlockJacobi, Stair };

enum class LqStatus {
  Solved,               // x, u, lambda solve the KKT system (Pcg: to its tolerance)
  NotPositiveDefinite,  // a factorization met a non-positive pivot (Riccati: R_k + B_k'P_{k+1}B_k;
                        // Bdsv/Pcg: a regularized G_k or the Schur complement); KktLdlt: the inertia
                        // is not that of a strict minimizer (x, u, lambda are then a KKT point when
                        // stats().inertia_zero == 0, else undefined)
  MaxIterations,        // Bdsv/Pcg: the KKT residual stalled above the tolerance (LqSolver::set_tolerance);
                        // stats().kkt_residual is what was achieved
  NonFinite,            // NaN or Inf in the data or the result
  Interrupted,          // the deadline (LqSolver::set_deadline) passed during pcg or the Schur
                        // refinement; x, u, lambda are not a solution
};

const char* to_string(Linsys linsys);
const char* to_string(Preconditioner preconditioner);
// A one-line explanation of the status.
const char* to_string(LqStatus status);

struct LqOptions {
  Linsys linsys = Linsys::Auto;

  // Pcg: stop when r'P^-1 r < pcg_rel_tol * gamma'P^-1 gamma (r the residual of S lambda = gamma,
  // P^-1 the preconditioner; the measure is squared, so 1e-20 is about 1e-10 on the residual),
  // after at most pcg_max_iters iterations. The reference is the right-hand side, not the first
  // residual, so a warm start near the answer stops early. On an exact solve (no positive
  // LqSolver::set_tolerance) with pcg_direct_fallback on, the first run also stops on the KKT check
  // of its iterate (every 8
  // iterations), or when its rate since the first check cannot reach it within the cap
  // (docs/solver-lq.md, pcg's stop).
  Preconditioner preconditioner = Preconditioner::Stair;
  double pcg_rel_tol = 1e-20;
  int pcg_max_iters = 1000;
  bool pcg_warm_start = false;  // start from the lambda the solution holds on entry (else zero)

  // Schur backends (Bdsv, Pcg): a stage block G_k that is singular or nearly so (its Cholesky fails,
  // or an eigenvalue estimate falls below rho_k) is replaced by G_k + rho_k I with
  // rho_k = schur_reg * the median of G_k's diagonal. Every answer is then checked against the
  // unregularized KKT system and corrected by iterative refinement (at most max_refinement steps)
  // until each row of the residual is within the tolerance or its own rounding level: the tolerance
  // is LqSolver::set_tolerance's, by default refine_tol * (1 + inf-norm of q, r, c, x_init).
  double schur_reg = 1e-6;
  int max_refinement = 10;
  double refine_tol = 1e-12;
  // Pcg: pcg runs at most min(pcg_max_iters, (N+1) nx) iterations (where conjugate gradients ends in
  // exact arithmetic); when it runs out of them or of progress, or its corrections stop reducing the
  // residual, factor S once by block Cholesky (as Bdsv; one more S-sized workspace) and solve on it
  // (from the start when the first run gave up, else finishing the refinement). Off: the stall is
  // reported as MaxIterations.
  bool pcg_direct_fallback = true;
  // Bdsv, Pcg: a solve whose stage blocks are not all positive definite (G_k + rho_k I fails its
  // Cholesky), whose Schur complement or preconditioner fails to factor, or whose refinement stalls
  // above the tolerance is solved again by the Riccati recursion on the same data, which returns its
  // own status (NotPositiveDefinite exactly when Riccati's reduced Hessian is not) and its own answer;
  // stats().riccati_fallback says so. The Schur path needs every G_k positive definite, Riccati only
  // R_k + B_k'P_{k+1}B_k: without this, the SQP's Hessian regularization loop adds more to the
  // diagonal for the Schur backends than for Riccati and they follow another path. One more Riccati
  // workspace. Off: those solves end NotPositiveDefinite or MaxIterations.
  bool riccati_fallback = true;
  // Bdsv, Pcg with a positive LqSolver::set_tolerance (an inexact Newton step): after every solve and
  // refinement step, x is rolled forward through the dynamics from x_init and u and the costates
  // backward from x and u, so the dynamics rows and the state rows hold to rounding and the residual
  // the tolerance admits sits in the control rows only, the condensed problem's gradient (an SQP
  // turns a dynamics-row residual into outer infeasibility, and a state-row residual times a
  // barrier diagonal of 1e9 into stationarity; docs/solver-lq.md measures the verdicts).
  bool inexact_rollout = true;

  // KktLdlt: steps of iterative refinement after the solve (each costs one more solve).
  int kkt_refinement = 1;

  // Riccati's square-root recursion keeps the transposes [B_k' A_k'] it forms at every stage (N of
  // them instead of one: N (nu + nx) nx doubles more), so that a solve announced by
  // LqSolver::dynamics_unchanged() skips forming them (5-8% of a solve at (21, 3, 40)). For callers
  // that factor one dynamics with several cost matrices (an interior point). Results are bitwise the
  // same either way; the other backends ignore it.
  bool reuse_dynamics = false;

  // Names the first invalid field and its value; empty when valid.
  std::string validate() const;
};

// One LQ subproblem; the vectors are sized by the constructor and never resized by the solver.
struct LqData {
  LqData() = default;
  LqData(int nx, int nu, int N);

  int nx = 0, nu = 0, N = 0;
  std::vector<double> A;       // N blocks nx x nx
  std::vector<double> B;       // N blocks nx x nu
  std::vector<double> c;       // N vectors nx
  std::vector<double> Q;       // N+1 blocks nx x nx, symmetric
  std::vector<double> R;       // N blocks nu x nu, symmetric
  std::vector<double> S;       // N blocks nu x nx (the cost term u_k' S_k x_k)
  std::vector<double> q;       // N+1 vectors nx
  std::vector<double> r;       // N vectors nu
  std::vector<double> x_init;  // nx

  double* A_k(int k) { return A.data() + static_cast<std::size_t>(k) * nx * nx; }
  double* B_k(int k) { return B.data() + static_cast<std::size_t>(k) * nx * nu; }
  double* c_k(int k) { return c.data() + static_cast<std::size_t>(k) * nx; }
  double* Q_k(int k) { return Q.data() + static_cast<std::size_t>(k) * nx * nx; }
  double* R_k(int k) { return R.data() + static_cast<std::size_t>(k) * nu * nu; }
  double* S_k(int k) { return S.data() + static_cast<std::size_t>(k) * nu * nx; }
  double* q_k(int k) { return q.data() + static_cast<std::size_t>(k) * nx; }
  double* r_k(int k) { return r.data() + static_cast<std::size_t>(k) * nu; }
  const double* A_k(int k) const { return A.data() + static_cast<std::size_t>(k) * nx * nx; }
  const double* B_k(int k) const { return B.data() + static_cast<std::size_t>(k) * nx * nu; }
  const double* c_k(int k) const { return c.data() + static_cast<std::size_t>(k) * nx; }
  const double* Q_k(int k) const { return Q.data() + static_cast<std::size_t>(k) * nx * nx; }
  const double* R_k(int k) const { return R.data() + static_cast<std::size_t>(k) * nu * nu; }
  const double* S_k(int k) const { return S.data() + static_cast<std::size_t>(k) * nu * nx; }
  const double* q_k(int k) const { return q.data() + static_cast<std::size_t>(k) * nx; }
  const double* r_k(int k) const { return r.data() + static_cast<std::size_t>(k) * nu; }
};

struct LqSolution {
  LqSolution() = default;
  LqSolution(int nx, int nu, int N);

  int nx = 0, nu = 0, N = 0;
  std::vector<double> x;       // N+1 vectors nx
  std::vector<double> u;       // N vectors nu
  std::vector<double> lambda;  // N+1 vectors nx (the convention above)

  double* x_k(int k) { return x.data() + static_cast<std::size_t>(k) * nx; }
  double* u_k(int k) { return u.data() + static_cast<std::size_t>(k) * nu; }
  double* lambda_k(int k) { return lambda.data() + static_cast<std::size_t>(k) * nx; }
  const double* x_k(int k) const { return x.data() + static_cast<std::size_t>(k) * nx; }
  const double* u_k(int k) const { return u.data() + static_cast<std::size_t>(k) * nu; }
  const double* lambda_k(int k) const { return lambda.data() + static_cast<std::size_t>(k) * nx; }
};

// What the last solve() did. Fields that do not apply to the backend that ran stay at their zero.
struct LqStats {
  Linsys linsys = Linsys::Riccati;  // the backend that ran (Auto resolved)
  bool square_root = false;         // Riccati: the square-root recursion ran (else the classical one,
                                    // at sizes it serves better or after a pivot of it failed)
  int failed_stage = -1;            // NotPositiveDefinite: the stage k whose R_k + B_k'P_{k+1}B_k
                                    // (Riccati, and Schur with riccati_fallback) or G_k (Schur) failed,
                                    // or the block-row of the pcg preconditioner; -1 otherwise (and for
                                    // bdsv's factorization)
  // Pcg
  int pcg_iterations = 0;           // of the first solve (refinement solves add theirs below)
  int pcg_iterations_total = 0;
  // Bdsv, Pcg: stages whose G_k was regularized, the largest rho_k used, refinement steps taken, the
  // final inf-norm of the unregularized KKT residual (0 for Riccati and KktLdlt, exact to rounding and
  // not measured), the tolerance it was held to, and whether pcg finished on the direct fallback.
  int regularized_stages = 0;
  double regularization = 0;
  int refinement_steps = 0;
  double kkt_residual = 0;
  double kkt_tolerance = 0;
  bool direct_fallback = false;
  bool riccati_fallback = false;  // Bdsv, Pcg: the answer is the Riccati recursion's (riccati_fallback)
  // KktLdlt: inertia of the KKT matrix (a strict minimizer has inertia_pos == N*(nx+nu) + nx and
  // inertia_neg == (N+1)*nx), 2x2 pivots taken.
  int inertia_pos = 0, inertia_neg = 0, inertia_zero = 0;
  int n2x2 = 0;
};

// Inf-norms of the KKT residual of (x, u, lambda) for the problem, from the data (no matrix):
// stationarity (the three lines above) and feasibility (initial state and dynamics).
struct LqResidual {
  double stationarity = 0;
  double feasibility = 0;
};
LqResidual lq_kkt_residual(const LqData& data, const LqSolution& solution);

// The backend Auto picks for a size (docs/solver-lq.md gives the measurements behind the rule).
Linsys lq_auto_linsys(int nx, int nu, int N);

class LqSolver {
 public:
  // Allocates every workspace of the chosen backend. Throws std::invalid_argument for nx < 1,
  // nu < 1, N < 1 or invalid options (the message names the bad value).
  LqSolver(int nx, int nu, int N, const LqOptions& options = {});
  ~LqSolver();
  LqSolver(LqSolver&&) noexcept;
  LqSolver& operator=(LqSolver&&) noexcept;

  // Solves the LQ subproblem into `solution`; allocates nothing. Throws std::invalid_argument only
  // when data or solution do not have this solver's sizes.
  LqStatus solve(const LqData& data, LqSolution& solution);
  // Solves again with the matrices (A, B, Q, R, S) of the last solve() and the vectors (c, q, r,
  // x_init) of `data`, for methods that solve one KKT matrix with several right-hand sides (an
  // interior point's predictor and corrector). The caller guarantees the matrices are unchanged.
  // Riccati reuses its factorization: two vector sweeps, O(N (nx^2 + nx nu)) instead of
  // O(N nx^3); the other backends solve in full. Allocates nothing; returns the last solve()'s
  // status without solving when that was not Solved (NonFinite before the first solve).
  LqStatus resolve(const LqData& data, LqSolution& solution);
  // As solve(), for callers that need the multipliers of some solves only (an interior point's
  // predictor): only x and u are guaranteed. Riccati skips the costate sweep lambda_k = P_k x_k + p_k
  // (lambda keeps what it held; its finiteness is not checked); the other backends compute lambda
  // anyway. resolve() afterwards works as after solve().
  LqStatus solve_primal(const LqData& data, LqSolution& solution);
  // Announces that the next solve() or solve_primal() has the A and B of the last one (bitwise; the
  // caller guarantees it: a different A or B then gives a wrong answer). With
  // LqOptions::reuse_dynamics, Riccati's square-root recursion reuses the transposes it formed then;
  // otherwise, or after a solve that did not complete that recursion, nothing changes.
  void dynamics_unchanged();

  // A wall-clock deadline for the iterative parts: pcg checks steady_clock before every iteration and
  // the Schur refinement before every step, and solve() returns Interrupted once it has passed. A
  // direct factorization and solve (Riccati, bdsv, kkt_ldlt with its kkt_refinement steps) runs to
  // its end. No deadline (time_point::max(), the default) runs the very same arithmetic as before
  // this hook existed and reads no clock.
  void set_deadline(std::chrono::steady_clock::time_point deadline);

  // The accuracy the Schur backends (Bdsv, Pcg) must reach: the inf-norm of the residual of the
  // unregularized KKT system, absolute; a row whose residual is within its own rounding level
  // (a few eps times the magnitudes of the products in it) counts as met. They check every answer
  // and refine it (reusing the factorization; pcg restarts from the current lambda and, once
  // loosened, stops near the tolerance) until it is met, or return MaxIterations. A negative value
  // restores the default (LqOptions::refine_tol). Riccati and KktLdlt ignore it: exact to rounding.
  void set_tolerance(double kkt_tol);

  const LqStats& stats() const;
  const LqOptions& options() const;
  Linsys linsys() const;  // the backend in use (Auto resolved)
  int nx() const;
  int nu() const;
  int N() const;
  // Heap bytes the constructor allocated: the workspace (one aligned block) and the solver objects.
  std::size_t bytes_allocated() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace knot::solver

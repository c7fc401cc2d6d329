// Knot's LQ solvers side by side with HPIPM's (BLASFEO underneath), in one process on the same
// problems: the unconstrained Riccati solve (knot::solver::LqSolver, Linsys::Riccati) against HPIPM's
// square-root and classical Riccati recursions (d_ocp_qp_ipm_solve on a QP without constraints, which
// factors and solves once), and the box-constrained interior point (LqIpmSolver) against HPIPM's
// SPEED_ABS mode, with both iteration counts: as it comes (no multipliers of the dynamics) and forming
// them (comp_dual_sol_eq = 1), as Knot's interior point always does.
//
// Problems (issue 15): x+ = A x + B u, A = 0.95 I + 0.1 U(-1,1)/sqrt(nx), B = U(-1,1), Q = I,
// R = 0.1 I, Q_N = 10 I, no linear terms, x0 = U(-5,5), |u| <= 0.5 for the interior point. HPIPM
// gets x0 eliminated: stage 0 has no state (nx[0] = 0) and b_0 = A_0 x0 (S = 0, so r_0 is unchanged).
//
// Before timing, each pair's solutions are compared (largest difference over x_1..x_N, u and the
// multipliers of the dynamics, relative to the largest entry), so a ratio is never one of two
// different computations. Each round times every solver over a short batch, one after another (a
// slow spell of the machine hits both sides of a ratio); the figures are medians over the rounds of
// the thread's CPU time per solve.
// Run it pinned to one core: `taskset -c 1 knot_compare_hpipm [--rounds=N] [--size=nx,nu,N]`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include <hpipm_d_ocp_qp.h>
#include <hpipm_d_ocp_qp_dim.h>
#include <hpipm_d_ocp_qp_ipm.h>
#include <hpipm_d_ocp_qp_sol.h>
}

#include "knot/solver/lq.hpp"
#include "knot/solver/lq_ipm.hpp"

namespace {

using knot::solver::LqBounds;
using knot::solver::LqData;
using knot::solver::LqIpmOptions;
using knot::solver::LqIpmSolution;
using knot::solver::LqIpmSolver;
using knot::solver::LqIpmStatus;
using knot::solver::LqOptions;
using knot::solver::LqSolution;
using knot::solver::LqSolver;
using knot::solver::LqStatus;

constexpr double kUmax = 0.5;

LqData make_problem(int nx, int nu, int N) {
  std::mt19937_64 gen(15 + 1000 * nx + 100 * nu + N);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  LqData d(nx, nu, N);
  std::fill(d.c.begin(), d.c.end(), 0.0);
  std::fill(d.q.begin(), d.q.end(), 0.0);
  std::fill(d.r.begin(), d.r.end(), 0.0);
  std::fill(d.S.begin(), d.S.end(), 0.0);
  std::fill(d.Q.begin(), d.Q.end(), 0.0);
  std::fill(d.R.begin(), d.R.end(), 0.0);
  for (int k = 0; k < N; ++k) {
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nx; ++i) d.A_k(k)[i + j * nx] = (i == j ? 0.95 : 0.0) + 0.1 * u(gen) / std::sqrt(nx);
    for (int i = 0; i < nx * nu; ++i) d.B_k(k)[i] = u(gen);
    for (int i = 0; i < nx; ++i) d.Q_k(k)[i + i * nx] = 1.0;
    for (int i = 0; i < nu; ++i) d.R_k(k)[i + i * nu] = 0.1;
  }
  for (int i = 0; i < nx; ++i) d.Q_k(N)[i + i * nx] = 10.0;
  for (double& v : d.x_init) v = 5.0 * u(gen);
  return d;
}

// HPIPM's OCP QP of the same problem with x0 eliminated, and everything its solver needs. Memory is
// owned here (malloc, as HPIPM's examples do).
struct Hpipm {
  int N = 0;
  std::vector<int> nx, nu, nbx, nbu, ng, ns;
  std::vector<double> b0;
  std::vector<int> idxbu;
  std::vector<double> lbu, ubu;
  d_ocp_qp_dim dim{};
  d_ocp_qp qp{};
  d_ocp_qp_sol sol{};
  d_ocp_qp_ipm_arg arg{};
  d_ocp_qp_ipm_ws ws{};
  std::vector<void*> mem;

  void* alloc(std::size_t n) {
    void* p = nullptr;
    if (posix_memalign(&p, 64, n == 0 ? 64 : n) != 0) std::abort();
    mem.push_back(p);
    return p;
  }
  // dual: the multipliers of the dynamics are formed too (SPEED_ABS leaves them out by default).
  Hpipm(const LqData& d, bool boxed, hpipm_mode mode, int square_root, int dual) : N(d.N) {
    const int X = d.nx, U = d.nu;
    nx.assign(N + 1, X), nu.assign(N + 1, U), nbx.assign(N + 1, 0), nbu.assign(N + 1, boxed ? U : 0);
    ng.assign(N + 1, 0), ns.assign(N + 1, 0);
    nx[0] = 0, nu[N] = 0, nbu[N] = 0;
    d_ocp_qp_dim_create(N, &dim, alloc(d_ocp_qp_dim_memsize(N)));
    d_ocp_qp_dim_set_all(nx.data(), nu.data(), nbx.data(), nbu.data(), ng.data(), ns.data(), &dim);
    d_ocp_qp_create(&dim, &qp, alloc(d_ocp_qp_memsize(&dim)));
    // b_0 = A_0 x0 + c_0.
    b0.assign(X, 0.0);
    for (int i = 0; i < X; ++i) {
      double s = d.c_k(0)[i];
      for (int j = 0; j < X; ++j) s += d.A_k(0)[i + j * X] * d.x_init[j];
      b0[i] = s;
    }
    for (int i = 0; i < U; ++i) idxbu.push_back(i);
    lbu.assign(U, -kUmax), ubu.assign(U, kUmax);
    // r_0 = r_0 + S_0 x0 (S_0 = 0 on these problems; x0'Q_0 x0 / 2 is a constant).
    std::vector<double> r0(U);
    for (int i = 0; i < U; ++i) {
      double s = d.r_k(0)[i];
      for (int j = 0; j < X; ++j) s += d.S_k(0)[i + j * U] * d.x_init[j];
      r0[i] = s;
    }
    LqData& m = const_cast<LqData&>(d);  // HPIPM's setters take non-const pointers; they only read
    for (int k = 0; k < N; ++k) {
      if (k > 0) d_ocp_qp_set_A(k, m.A_k(k), &qp);
      d_ocp_qp_set_B(k, m.B_k(k), &qp);
      d_ocp_qp_set_b(k, k == 0 ? b0.data() : m.c_k(k), &qp);
      d_ocp_qp_set_R(k, m.R_k(k), &qp);
      d_ocp_qp_set_r(k, k == 0 ? r0.data() : m.r_k(k), &qp);
      if (k > 0) {
        d_ocp_qp_set_Q(k, m.Q_k(k), &qp);
        d_ocp_qp_set_S(k, m.S_k(k), &qp);
        d_ocp_qp_set_q(k, m.q_k(k), &qp);
      }
      if (boxed) {
        d_ocp_qp_set_idxbu(k, idxbu.data(), &qp);
        d_ocp_qp_set_lbu(k, lbu.data(), &qp);
        d_ocp_qp_set_ubu(k, ubu.data(), &qp);
      }
    }
    d_ocp_qp_set_Q(N, m.Q_k(N), &qp);
    d_ocp_qp_set_q(N, m.q_k(N), &qp);
    d_ocp_qp_sol_create(&dim, &sol, alloc(d_ocp_qp_sol_memsize(&dim)));
    d_ocp_qp_ipm_arg_create(&dim, &arg, alloc(d_ocp_qp_ipm_arg_memsize(&dim)));
    d_ocp_qp_ipm_arg_set_default(mode, &arg);
    d_ocp_qp_ipm_arg_set_ric_alg(&square_root, &arg);
    d_ocp_qp_ipm_arg_set_comp_dual_sol_eq(&dual, &arg);
    d_ocp_qp_ipm_ws_create(&dim, &arg, &ws, alloc(d_ocp_qp_ipm_ws_memsize(&dim, &arg)));
  }
  ~Hpipm() {
    for (void* p : mem) std::free(p);
  }
  Hpipm(const Hpipm&) = delete;
  Hpipm& operator=(const Hpipm&) = delete;

  int solve() {
    d_ocp_qp_ipm_solve(&qp, &sol, &arg, &ws);
    int status = 0;
    d_ocp_qp_ipm_get_status(&ws, &status);
    return status;
  }
  int iterations() {
    int it = 0;
    d_ocp_qp_ipm_get_iter(&ws, &it);
    return it;
  }
  // x_1..x_N, u_0..u_{N-1}, pi_0..pi_{N-1} in Knot's layout (x and lambda from stage 1).
  void get(std::vector<double>& x, std::vector<double>& u, std::vector<double>& pi) {
    const int X = nx[1], U = nu[0];
    x.assign(static_cast<std::size_t>(N) * X, 0.0), u.assign(static_cast<std::size_t>(N) * U, 0.0);
    pi.assign(static_cast<std::size_t>(N) * X, 0.0);
    for (int k = 0; k < N; ++k) {
      d_ocp_qp_sol_get_x(k + 1, &sol, x.data() + static_cast<std::size_t>(k) * X);
      d_ocp_qp_sol_get_u(k, &sol, u.data() + static_cast<std::size_t>(k) * U);
      d_ocp_qp_sol_get_pi(k, &sol, pi.data() + static_cast<std::size_t>(k) * X);
    }
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size() / 2;
  return v.size() % 2 == 1 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

// Largest |a - b| relative to the largest |b|.
double rel_diff(const double* a, const double* b, std::size_t n) {
  double num = 0, den = 1e-300;
  for (std::size_t k = 0; k < n; ++k) {
    num = std::max(num, std::abs(a[k] - b[k]));
    den = std::max(den, std::abs(b[k]));
  }
  return num / den;
}

// Knot's x_1..x_N, u and (dual) lambda_1..lambda_N against HPIPM's x_1..x_N, u, pi_0..pi_{N-1}
// (HPIPM's pi_k multiplies the dynamics k -> k+1, Knot's lambda_{k+1}, same sign convention).
double agreement(int nx, int N, const std::vector<double>& kx, const std::vector<double>& ku,
                 const std::vector<double>& kl, Hpipm& h, bool dual) {
  std::vector<double> x, u, pi;
  h.get(x, u, pi);
  const std::size_t n = static_cast<std::size_t>(N) * nx;
  const double primal = std::max(rel_diff(kx.data() + nx, x.data(), n), rel_diff(ku.data(), u.data(), u.size()));
  return dual ? std::max(primal, rel_diff(kl.data() + nx, pi.data(), n)) : primal;
}

// The thread's CPU time, not the wall clock: on a shared machine a pinned solve of several
// milliseconds is descheduled for other processes' slices, which the wall clock would count.
double cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e6 * static_cast<double>(t.tv_sec) + 1e-3 * static_cast<double>(t.tv_nsec);
}

template <class Fn>
double time_per_call(int reps, const Fn& fn) {
  const double t0 = cpu_us();
  for (int k = 0; k < reps; ++k) fn();
  return (cpu_us() - t0) / reps;
}

// The Riccati path Knot ran: compiled-in sizes (lq_internal.hpp's RiccatiNx and ControlSizes) or the
// run-time kernels, and the recursion LqStats reports.
const char* knot_path(int nx, int nu, bool square_root) {
  const bool fixed_nx = (nx >= 1 && nx <= 16) || nx == 20 || nx == 24 || nx == 28 || nx == 32;
  const bool fixed = fixed_nx && nu >= 1 && nu <= 8;
  if (!fixed) return square_root ? "run-time square-root" : "run-time classical";
  return square_root ? "fixed square-root" : "fixed classical";
}

struct Row {
  int nx, nu, N;
  double ric_knot, ric_sqrt, ric_clas, ipm_knot, ipm_knot_max, ipm_h, ipm_h_dual;
  int it_knot, it_knot_max, it_h;
  bool square_root;
  double agree_ric_sqrt, agree_ric_clas, agree_ipm, agree_ipm_max;
};

bool run(int nx, int nu, int N, int rounds, Row& row) {
  const LqData d = make_problem(nx, nu, N);
  LqBounds bounds(nx, nu, N);
  std::fill(bounds.lbu.begin(), bounds.lbu.end(), -kUmax);
  std::fill(bounds.ubu.begin(), bounds.ubu.end(), kUmax);

  LqOptions lo;
  lo.linsys = knot::solver::Linsys::Riccati;
  LqSolver ric(nx, nu, N, lo);
  LqSolution rs(nx, nu, N);
  // The interior point with its default stop, the mean complementarity as HPIPM's SPEED_ABS (see
  // lq_ipm.hpp), and with the largest product for reference.
  LqIpmOptions io_max;
  io_max.complementarity_max = true;
  LqIpmSolver ipm(nx, nu, N, LqIpmOptions{});
  LqIpmSolver ipm_max(nx, nu, N, io_max);
  LqIpmSolution is(nx, nu, N), is_max(nx, nu, N);
  // The Riccati solves form the multipliers as Knot's solve() does; the interior point runs SPEED_ABS
  // as it comes (no multipliers of the dynamics), and a second instance that forms them checks
  // Knot's against them.
  Hpipm h_sqrt(d, false, SPEED_ABS, 1, 1), h_clas(d, false, SPEED_ABS, 0, 1), h_ipm(d, true, SPEED_ABS, 1, 0);
  Hpipm h_ipm_dual(d, true, SPEED_ABS, 1, 1);

  if (ric.solve(d, rs) != LqStatus::Solved || ipm.solve(d, bounds, is) != LqIpmStatus::Solved ||
      ipm_max.solve(d, bounds, is_max) != LqIpmStatus::Solved) {
    std::printf("(%d,%d,%d): Knot did not solve\n", nx, nu, N);
    return false;
  }
  if (h_sqrt.solve() != 0 || h_clas.solve() != 0 || h_ipm.solve() != 0 || h_ipm_dual.solve() != 0) {
    std::printf("(%d,%d,%d): HPIPM did not solve\n", nx, nu, N);
    return false;
  }
  row = Row{};
  row.nx = nx, row.nu = nu, row.N = N;
  row.square_root = ric.stats().square_root;
  row.agree_ric_sqrt = agreement(nx, N, rs.x, rs.u, rs.lambda, h_sqrt, true);
  row.agree_ric_clas = agreement(nx, N, rs.x, rs.u, rs.lambda, h_clas, true);
  row.agree_ipm = agreement(nx, N, is.x, is.u, is.lambda, h_ipm_dual, true);
  row.agree_ipm_max = agreement(nx, N, is_max.x, is_max.u, is_max.lambda, h_ipm_dual, true);
  row.it_knot = ipm.stats().iterations;
  row.it_knot_max = ipm_max.stats().iterations;
  row.it_h = h_ipm.iterations();

  // Batches of about 200 us.
  const auto reps_for = [](double us) { return std::max(1, static_cast<int>(200.0 / std::max(us, 0.05))); };
  const int r_ric = reps_for(time_per_call(20, [&] { ric.solve(d, rs); }));
  const int r_ipm = reps_for(time_per_call(5, [&] { ipm.solve(d, bounds, is); }));
  std::vector<double> t[7];
  for (int round = 0; round < rounds; ++round) {
    t[0].push_back(time_per_call(r_ric, [&] { ric.solve(d, rs); }));
    t[1].push_back(time_per_call(r_ric, [&] { h_sqrt.solve(); }));
    t[2].push_back(time_per_call(r_ric, [&] { h_clas.solve(); }));
    t[3].push_back(time_per_call(r_ipm, [&] { ipm.solve(d, bounds, is); }));
    t[4].push_back(time_per_call(r_ipm, [&] { ipm_max.solve(d, bounds, is_max); }));
    t[5].push_back(time_per_call(r_ipm, [&] { h_ipm.solve(); }));
    t[6].push_back(time_per_call(r_ipm, [&] { h_ipm_dual.solve(); }));
  }
  row.ric_knot = median(t[0]), row.ric_sqrt = median(t[1]), row.ric_clas = median(t[2]);
  row.ipm_knot = median(t[3]), row.ipm_knot_max = median(t[4]), row.ipm_h = median(t[5]);
  row.ipm_h_dual = median(t[6]);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 101;
  std::vector<std::vector<int>> sizes = {{14, 7, 64}, {28, 7, 128}, {21, 3, 40}, {36, 12, 50}, {4, 1, 50}, {12, 4, 50}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    int nx = 0, nu = 0, N = 0;
    if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::max(1, std::stoi(a.substr(9)));
    } else if (std::sscanf(a.c_str(), "--size=%d,%d,%d", &nx, &nu, &N) == 3 && nx > 0 && nu > 0 && N > 0) {
      sizes = {{nx, nu, N}};  // one size only (for a profiler)
    } else {
      std::fprintf(stderr, "usage: %s [--rounds=N] [--size=nx,nu,N]\n", argv[0]);
      return 2;
    }
  }
  std::printf("Knot vs HPIPM (BLASFEO), %d interleaved rounds, medians of thread CPU time, us per solve\n", rounds);
  std::vector<Row> rows;
  bool ok = true;
  for (const auto& s : sizes) {
    Row r{};
    if (run(s[0], s[1], s[2], rounds, r))
      rows.push_back(r);
    else
      ok = false;
  }
  std::printf("\nunconstrained Riccati (agreement: largest difference in x, u, multipliers / largest entry)\n");
  std::printf("  %-13s %-20s %8s %8s %8s %7s %7s %9s %9s\n", "(nx,nu,N)", "Knot path", "Knot", "H sqrt", "H clas",
              "K/sqrt", "K/clas", "agr sqrt", "agr clas");
  for (const Row& r : rows) {
    char sz[32];
    std::snprintf(sz, sizeof sz, "(%d,%d,%d)", r.nx, r.nu, r.N);
    std::printf("  %-13s %-20s %8.2f %8.2f %8.2f %7.2f %7.2f %9.1e %9.1e\n", sz, knot_path(r.nx, r.nu, r.square_root), r.ric_knot,
                r.ric_sqrt, r.ric_clas, r.ric_knot / r.ric_sqrt, r.ric_knot / r.ric_clas, r.agree_ric_sqrt,
                r.agree_ric_clas);
  }
  std::printf(
      "\nbox-constrained interior point, |u| <= 0.5 (Kmean: Knot's default stop, the mean "
      "complementarity; Kmax: complementarity_max = true; H+pi: HPIPM forming the multipliers of the dynamics,\n"
      "  comp_dual_sol_eq = 1, as Knot's interior point always does)\n");
  std::printf("  %-13s %8s %8s %8s %8s %8s %8s %9s %5s %5s %5s %9s %9s\n", "(nx,nu,N)", "Kmean", "Kmax", "HPIPM", "H+pi",
              "Kmean/H", "Kmax/H", "Kmean/H+pi", "itKm", "itKx", "itH", "agr mean", "agr max");
  for (const Row& r : rows) {
    char sz[32];
    std::snprintf(sz, sizeof sz, "(%d,%d,%d)", r.nx, r.nu, r.N);
    std::printf("  %-13s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %9.2f %5d %5d %5d %9.1e %9.1e\n", sz, r.ipm_knot,
                r.ipm_knot_max, r.ipm_h, r.ipm_h_dual, r.ipm_knot / r.ipm_h, r.ipm_knot_max / r.ipm_h,
                r.ipm_knot / r.ipm_h_dual, r.it_knot, r.it_knot_max, r.it_h, r.agree_ipm, r.agree_ipm_max);
  }
  return ok ? 0 : 1;
}

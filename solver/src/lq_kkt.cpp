// KktLdlt backend: the whole KKT matrix in stage order, factored by linalg's banded Bunch-Kaufman
// LDL' (kkt_ldlt.hpp), with its inertia.
//
// kkt_ldlt orders the unknowns lambda_0, x_0, u_0, lambda_1, x_1, ... and writes the constraint rows
// as x_0 = x_init and x_{k+1} - A_k x_k - B_k u_k = c_k with multipliers mu entering stationarity as
// + C'mu; lq.hpp's lambda enters as - C'lambda, so lambda = -mu. Right-hand side: x_init on the
// lambda_0 rows, -q_k and -r_k on the x_k and u_k rows, c_k on the lambda_{k+1} rows.
// A strict minimizer has inertia (N (nx + nu) + nx, (N + 1) nx, 0); anything else is reported as
// NotPositiveDefinite (the KKT point is still returned when the matrix is nonsingular).
#include <cstring>

#include "knot/linalg/kkt_ldlt.hpp"
#include "lq_internal.hpp"

namespace knot::solver::detail {
namespace {

class KktBackend final : public LqBackend {
 public:
  KktBackend(int nx, int nu, int N, const LqOptions& opt) : refine_(opt.kkt_refinement) {
    d_.N = N;
    d_.nx = nx;
    d_.nu = nu;
    d_.initial_constraint = true;
    ldab_ = linalg::kkt_ldab(d_);
    const std::size_t n = static_cast<std::size_t>(d_.size());
    const std::size_t oab = arena_.reserve(static_cast<std::size_t>(linalg::kkt_band_size(d_, ldab_)));
    const std::size_t opiv = arena_.reserve_ints(n);
    const std::size_t oscr = arena_.reserve(std::max<std::size_t>(n, linalg::kkt_ldlt_scratch_size(d_, ldab_)));
    const std::size_t orhs = arena_.reserve(n), osol = arena_.reserve(n);
    arena_.allocate();
    ab_ = arena_.at(oab);
    piv_ = arena_.ints_at(opiv);
    scratch_ = arena_.at(oscr);
    rhs_ = arena_.at(orhs);
    sol_ = arena_.at(osol);
  }

  LqStatus solve(const LqData& data, LqSolution& s, LqStats& st) override {
    st.linsys = Linsys::KktLdlt;
    const int nx = d_.nx, nu = d_.nu, N = d_.N;
    linalg::OcpKkt<double> d = d_;
    d.Q = data.Q.data();
    d.R = data.R.data();
    d.S = data.S.data();
    d.A = data.A.data();
    d.B = data.B.data();
    Serial g;
    const linalg::LdltStats ls = linalg::kkt_ldlt_factor(g, d, ab_, ldab_, piv_, scratch_);
    st.inertia_pos = ls.npos;
    st.inertia_neg = ls.nneg;
    st.inertia_zero = ls.nzero;
    st.n2x2 = ls.n2x2;
    const bool minimizer = ls.npos == d.n_primal() && ls.nneg == d.n_dual() && ls.nzero == 0;
    if (ls.nzero > 0) return data_finite(data) ? LqStatus::NotPositiveDefinite : LqStatus::NonFinite;

    std::memcpy(rhs_ + d.lambda(0), data.x_init.data(), nx * sizeof(double));
    for (int k = 0; k <= N; ++k) {
      for (int i = 0; i < nx; ++i) rhs_[d.x(k) + i] = -data.q_k(k)[i];
      if (k == N) break;
      for (int i = 0; i < nu; ++i) rhs_[d.u(k) + i] = -data.r_k(k)[i];
      std::memcpy(rhs_ + d.lambda(k + 1), data.c_k(k), nx * sizeof(double));
    }
    std::memcpy(sol_, rhs_, static_cast<std::size_t>(d.size()) * sizeof(double));
    linalg::kkt_ldlt_solve(g, d, ab_, ldab_, piv_, sol_);
    if (refine_ > 0) linalg::kkt_ldlt_refine(g, d, ab_, ldab_, piv_, rhs_, sol_, refine_, scratch_);
    for (int k = 0; k <= N; ++k) {
      std::memcpy(s.x_k(k), sol_ + d.x(k), nx * sizeof(double));
      for (int i = 0; i < nx; ++i) s.lambda_k(k)[i] = -sol_[d.lambda(k) + i];
      if (k < N) std::memcpy(s.u_k(k), sol_ + d.u(k), nu * sizeof(double));
    }
    if (!solution_finite(s)) return LqStatus::NonFinite;
    return minimizer ? LqStatus::Solved : LqStatus::NotPositiveDefinite;
  }

  std::size_t bytes() const override { return arena_.bytes() + sizeof(*this); }

 private:
  linalg::OcpKkt<double> d_{};
  int ldab_ = 0;
  int refine_ = 0;
  Arena arena_;
  double* ab_ = nullptr;
  int* piv_ = nullptr;
  double* scratch_ = nullptr;
  double* rhs_ = nullptr;
  double* sol_ = nullptr;
};

}  // namespace

std::unique_ptr<LqBackend> make_kkt_ldlt(int nx, int nu, int N, const LqOptions& opt) {
  return std::make_unique<KktBackend>(nx, nu, N, opt);
}

}  // namespace knot::solver::detail

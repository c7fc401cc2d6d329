// The exact Hessian of the device path: knot k's Lagrangian curvature, as Solver's closed form
// (Solver::Impl::closed_form_hessian, sqp_linearize.cpp) computes it, on the flat problem.
//
//   H  = lambda_{k+1}' d2F(x_k, u_k)   the integrator step's second derivatives (k < N)
//      + z_k' d2g_k + y_k' d2h_k       the constraint rows' curvature (circle obstacles, end-effector
//                                      rows, expressions)
//   Q, R, S += the cost terms' curvature beyond Gauss-Newton (end-effector, residual costs), then
//   Q = sym(Q) + H_xx, R = sym(R) + H_uu, S += H_ux   (sym: each mirrored pair set to its mean)
//
// Every piece repeats the host's arithmetic operation for operation: the manipulator's step by
// forward mode over its analytic first derivatives (robot::step_hessian, the host's own function,
// on duals of Manipulator::kSecondOrderWidth directions), the ModelAdapter models' by one evaluation
// of explicit_step on HyperDual (ModelAdapter::second_order), the frame curvature as
// Manipulator::add_frame_curvature (end-effector costs and constraints), the expression terms' as
// TermExpressions::curvature. So in
// double the blocks are Solver's bit for bit when the compiler contracts no multiply-adds
// (tests/solver/test_device_hessian.cpp). A HyperDual's entries do not depend on its width, so the
// device may seed fewer widths than the host builds (runtime_second_order_width) and still give the same numbers.
//
// The second derivatives are formed in double whatever T is (HyperDual is a double type); a float
// instance rounds them once, into its blocks. Scratch: hessian_work_size<T>(P) scalars T, caller-owned.
//
// On the GPU it is compiled into a kernel of its own (solver/cuda/batch_sqp_exact.cu; the
// Gauss-Newton kernels carry none of it), in double, for the manipulator (gpu_exact_hessian_refusal
// says what else is left out); the dual robot workspace (191 KB for Workspace<Dual<8>>) stays in
// the member's scratch there (problem.hpp, RobotWorkspaceAt).
#pragma once

#include <cstddef>
#include <cstdint>

#include "knot/linalg/config.hpp"
#include "knot/problems/dual.hpp"
#include "knot/problems/hyperdual.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/models/manipulator.hpp"
#include "knot/problems/robot/step_hessian.hpp"
#include "knot/solver/device/problem.hpp"

namespace knot::solver::device {

namespace detail {

// The device path's directions per sweep of the manipulator's step Hessian and frame curvature: 8,
// half the host Manipulator's kSecondOrderWidth. On the GPU a thread's dual workspace is local
// memory, which 16 directions would double (not measured there). Each direction is a lane of its
// own, so the blocks are the host's bit for bit at either width (test_device_hessian.cpp).
inline constexpr int kManipulatorWidth = 8;
using ManipulatorDual = problems::Dual<double, problems::Tangent<double, kManipulatorWidth>>;

// TermExpressions::curvature's widths: 4, 8, 16; more inputs have no closed form.
inline constexpr int kMaxTermCurvatureInputs = 16;

// What the GPU's exact Hessian compiles: the manipulator's step Hessian (dual sweeps over its
// analytic derivatives), its end-effector terms' curvature, and expression-term curvature over up
// to 8 inputs. The other models' HyperDual step Hessians stay on the host: each costs ptxas minutes
// and gigabytes (nvcc 13.0, sm_90, this unit on the 2-core machine: every width up to 24 passed
// 18 GB; widths up to 8 with 16-input terms 12.6 minutes and 19.4 GB; widths up to 8 alone 10.2
// minutes and 16.3 GB; the manipulator alone 5.6 minutes and 10.3 GB), and those models converge
// under Gauss-Newton on the GPU already; the arm is where the exact Hessian pays (docs/batch.md).
// The CUDA backend refuses the rest (gpu_exact_hessian_refusal).
inline constexpr int kMaxGpuTermCurvatureInputs = 8;
#if defined(__CUDA_ARCH__)
inline constexpr bool kHyperDualStepHessian = false;
inline constexpr int kMaxTermInputs = kMaxGpuTermCurvatureInputs;
#else
inline constexpr bool kHyperDualStepHessian = true;
inline constexpr int kMaxTermInputs = kMaxTermCurvatureInputs;
#endif

// The HyperDual widths the device builds for models whose nx + nu is known only at run time: 4, 8,
// 16, 24 (fewer instantiations than second_order_width's seven; a HyperDual's entries are the same
// at any width). A model with M::kNw builds second_order_width(M::kNw), as ModelAdapter does.
KNOT_HD constexpr int runtime_second_order_width(int nw) {
  return nw <= 4 ? 4 : nw <= 8 ? 8 : nw <= 16 ? 16 : nw <= 24 ? 24 : 0;
}

KNOT_HD constexpr std::size_t hyperdual_bytes(int w) {
  return (1 + std::size_t(w) + std::size_t(w) * (w + 1) / 2) * sizeof(double);
}
KNOT_HD constexpr std::size_t align16(std::size_t b) { return (b + 15) / 16 * 16; }

// Byte offsets into the Hessian's scratch (from a 16-byte aligned base).
struct HessianLayout {
  std::size_t H, x, u, lam, G, region, total;
  KNOT_HD static constexpr HessianLayout make(const BatchProblem& P) {
    HessianLayout L{};
    const std::size_t nx = P.nx, nu = P.nu, nw = nx + nu, d = sizeof(double);
    std::size_t at = 0;
    L.H = at, at = align16(at + nw * nw * d);
    L.x = at, at = align16(at + nx * d);
    L.u = at, at = align16(at + (nu > 0 ? nu : 1) * d);
    L.lam = at, at = align16(at + nx * d);
    L.G = at, at = align16(at + nw * nw * d);
    L.region = at;
    // The region is used by one piece at a time: the model's second order, then the constraint
    // terms', then the costs'.
    std::size_t region = 0;
    const auto need = [&region](std::size_t b) { region = b > region ? b : region; };
    if (P.model == ModelKind::Manipulator) {
      const std::size_t n = std::size_t(P.nq), dual = sizeof(ManipulatorDual);
      need(align16(sizeof(robot::Workspace<ManipulatorDual>)) + align16(robot::step_hessian_duals(int(n)) * dual) +
           align16(sizeof(robot::Workspace<double>)) + robot::step_hessian_doubles(int(n)) * d);
      // The end-effector cost: its double kinematics, then the dual point and its Jacobian.
      need(align16(sizeof(robot::Workspace<double>)) + align16(sizeof(robot::Workspace<ManipulatorDual>)) +
           (n + 3 * n + 3) * dual);
    } else {  // whichever of the two width rules the model takes
      const int a = problems::second_order_width(int(nw)), b = runtime_second_order_width(int(nw));
      need((4 * nx + nu) * hyperdual_bytes(a > b ? a : b));
    }
    if (P.term_work > 0) {
      // An expression term: r and c (registers), its n x n curvature, then the inputs, the register
      // file and the outputs on HyperDual<16>.
      const std::size_t regs = problems::kExprMaxRegisters;
      need(align16((2 * regs + std::size_t(kMaxTermCurvatureInputs) * kMaxTermCurvatureInputs + regs) * d) +
           (std::size_t(kMaxTermCurvatureInputs) + 2 * regs) * hyperdual_bytes(kMaxTermCurvatureInputs));
    }
    at += align16(region);
    L.total = at;
    return L;
  }
};

KNOT_HD unsigned char* aligned16(void* p) {
  const std::uintptr_t v = reinterpret_cast<std::uintptr_t>(p);
  return reinterpret_cast<unsigned char*>((v + 15) / 16 * 16);
}

// lambda' d2F (nw x nw, column-major, symmetric bit for bit) of the horizon's explicit scheme.
struct StepHessianFn {
  const BatchProblem* P;
  const double *x, *u, *lam;
  double *H, *G;
  unsigned char* region;

  // Manipulator::step_hessian: robot::step_hessian, the host's own function. (Each model's piece is
  // a function of its own on the GPU: inlined into one, ptxas took over 10 minutes and 20 GB on it.)
  KNOT_HD_NOINLINE bool operator()(const ManipulatorModel& m) const {
    using D = ManipulatorDual;
    D* ws = reinterpret_cast<D*>(region);
    const int n = m.r->n;
    unsigned char* at = region + align16(sizeof(robot::Workspace<D>));
    D* duals = reinterpret_cast<D*>(at);
    at += align16(robot::step_hessian_duals(n) * sizeof(D));
    // RK4's double workspace in the scratch too, as the end-effector cost's: a local one would grow
    // this frame past the stack CudaBatch sets.
    robot::Workspace<double>& wd = *reinterpret_cast<robot::Workspace<double>*>(at);
    double* work = reinterpret_cast<double*>(at + align16(sizeof(robot::Workspace<double>)));
    KNOT_ROBOT_WORKSPACE(D, rws, ws);
    return robot::step_hessian<kManipulatorWidth>(*m.r, P->integrator, x, u, P->dt, lam, H, G, rws, duals, wd,
                                                  work) == problems::SecondOrderStatus::Ok;
  }

  // ModelAdapter::second_order on HyperDual<W>: explicit_step_hessian.
  template <int W, class M>
  KNOT_HD_NOINLINE bool second_order(const AdaptedModel<M>& a) const {
    using HD = problems::HyperDual<W>;
    const int n = a.m.nx(), m = a.m.nu();
    HD* xd = reinterpret_cast<HD*>(region);
    const auto f = [&a](const HD* xs, const HD* us, HD* out) { a.m.template dynamics<HD>(xs, us, out); };
    return problems::explicit_step_hessian<W>(P->integrator, P->discrete != 0, n, m, a.m.nq(), f, x, u, P->dt, lam, H,
                                              xd, xd + n, xd + n + m, xd + 2 * n + m) == problems::SecondOrderStatus::Ok;
  }

  template <class M>
  KNOT_HD bool operator()(const AdaptedModel<M>& a) const {
    if constexpr (!kHyperDualStepHessian) {
      return false;  // on the GPU: refused by gpu_exact_hessian_refusal
    } else if constexpr (requires { M::kNw; }) {
      constexpr int W = problems::second_order_width(M::kNw);
      return second_order<W>(a);
    } else {
      const int nw = a.m.nx() + a.m.nu();
      if (nw <= 4) return second_order<4>(a);
      if (nw <= 8) return second_order<8>(a);
      if (nw <= 16) return second_order<16>(a);
      if (nw <= 24) return second_order<24>(a);
      return false;  // refused by device_sqp_unsupported
    }
  }
};

// TermExpressions::curvature: H (n x n) = sum_r c_r d2 out_r / dw2 over the term's n inputs w0, on
// HyperDual<W>; scratch from `region` (16-byte aligned).
template <int W>
KNOT_HD_NOINLINE void term_curvature_with(const problems::ExprTape& tape, int n, const double* w0, const double* c, double* H,
                                 unsigned char* region) {
  using HD = problems::HyperDual<W>;
  HD* w = reinterpret_cast<HD*>(region);
  HD* reg = w + W;
  HD* out = reg + problems::kExprMaxRegisters;
  for (int j = 0; j < W; ++j) {
    w[j] = HD(j < n ? w0[j] : 0.0);
    if (j < n) w[j].g[j] = 1.0;
  }
  problems::evaluate<HD>(tape, w, static_cast<const HD*>(nullptr), reg, out);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double acc = 0;
      for (int r = 0; r < tape.n_outputs; ++r) acc += c[r] * out[r].h[HD::pair(i, j)];
      H[i + std::size_t(j) * n] = acc;
      H[j + std::size_t(i) * n] = acc;
    }
}

KNOT_HD bool term_curvature(const problems::ExprTape& tape, const int* inputs, int n, int nx, const double* x,
                            const double* u, const double* c, double* H, unsigned char* region) {
  double w[kMaxTermCurvatureInputs];
  if (n > kMaxTermInputs) return false;
  for (int j = 0; j < n; ++j) w[j] = inputs[j] < nx ? x[inputs[j]] : u[inputs[j] - nx];
  if (n <= 4)
    term_curvature_with<4>(tape, n, w, c, H, region);
  else if (n <= 8)
    term_curvature_with<8>(tape, n, w, c, H, region);
  else if constexpr (kMaxTermInputs >= 16)
    term_curvature_with<16>(tape, n, w, c, H, region);
  return true;
}

// Manipulator::add_frame_curvature: G (nq x nq, ld nq) = sum_a c_a d2p_a / dq_j dq_i of the point
// `in_body` on `body` by dual sweeps over the point Jacobian, then its mirrored pairs' means added
// to out (ld ldo; only its q block is touched). region: a Workspace<Dual> and 4 nq + 3 duals.
template <class O>
KNOT_HD_NOINLINE void add_frame_curvature(const robot::RobotData& r, int body, const double* in_body_d, const double* x,
                                 const double* c, double* G, unsigned char* region, O* out, int ldo) {
  using D = ManipulatorDual;
  constexpr int kW = kManipulatorWidth;
  const int nq = r.n;
  robot::Workspace<D>& ws = *reinterpret_cast<robot::Workspace<D>*>(region);
  D* q = reinterpret_cast<D*>(region + align16(sizeof(robot::Workspace<D>)));
  D* J = q + nq;
  D* p = J + 3 * nq;
  const D in_body[3] = {D(in_body_d[0]), D(in_body_d[1]), D(in_body_d[2])};
  for (int j0 = 0; j0 < nq; j0 += kW) {
    const int w = nq - j0 < kW ? nq - j0 : kW;
    for (int i = 0; i < nq; ++i) q[i] = D(x[i]);
    for (int e = 0; e < w; ++e) q[j0 + e].d[e] = 1.0;
    robot::forward_kinematics(r, q, ws);
    robot::point_position(ws, body, in_body, p);
    robot::point_jacobian(r, ws, body, p, J, 3);
    for (int j = 0; j < nq; ++j) {
      const D* col = J + 3 * std::size_t(j);
      for (int e = 0; e < w; ++e) G[j + std::size_t(j0 + e) * nq] = c[0] * col[0].d[e] + c[1] * col[1].d[e] + c[2] * col[2].d[e];
    }
  }
  for (int j = 0; j < nq; ++j) {
    out[j + std::size_t(j) * ldo] += O(G[j + std::size_t(j) * nq]);
    for (int i = j + 1; i < nq; ++i) {
      const double v = 0.5 * (G[i + std::size_t(j) * nq] + G[j + std::size_t(i) * nq]);
      out[i + std::size_t(j) * ldo] += O(v);
      out[j + std::size_t(i) * ldo] += O(v);
    }
  }
}

}  // namespace detail

// Why the GPU's exact Hessian cannot run problem P with arena `arena` (static text), or null when
// it can: a model other than the manipulator, or an expression cost or constraint reading more than
// kMaxGpuTermCurvatureInputs states and controls.
inline const char* gpu_exact_hessian_refusal(const BatchProblem& P, const unsigned char* arena) {
  static_assert(detail::kMaxGpuTermCurvatureInputs == 8, "the texts below name the limit");
  if (P.model != ModelKind::Manipulator)
    return "the exact Hessian on the CUDA backend takes the manipulator only";
  const auto wide = [&](std::size_t tape) {
    return arena_at<TermTape>(arena, tape)->n_inputs > detail::kMaxGpuTermCurvatureInputs;
  };
  const CostRecord* costs = arena_at<CostRecord>(arena, P.costs);
  for (int t = 0; t < P.n_costs; ++t)
    if (costs[t].kind == CostKind::Residual && wide(costs[t].tape))
      return "the exact Hessian on the CUDA backend takes residual costs reading at most 8 states and controls";
  for (int pass = 0; pass < 2; ++pass) {
    const RowRecord* rec = arena_at<RowRecord>(arena, pass == 0 ? P.ineq_terms : P.eq_terms);
    for (int t = 0; t < (pass == 0 ? P.n_ineq_terms : P.n_eq_terms); ++t)
      if (rec[t].kind == RowKind::Expression && wide(rec[t].tape))
        return "the exact Hessian on the CUDA backend takes expression constraints reading at most 8 states and "
               "controls";
  }
  return nullptr;
}

// Scalars T of knot_hessian's scratch (room to align its start to 16 bytes included).
template <class T = double>
KNOT_HD constexpr std::size_t hessian_work_size(const BatchProblem& P) {
  return (detail::HessianLayout::make(P).total + 16 + sizeof(T) - 1) / sizeof(T);
}

// Knot k's exact Hessian into its blocks Q (nx x nx), R (nu x nu), S (nu x nx), which hold the
// Gauss-Newton ones (linearize's, before objective scaling): Solver::Impl::closed_form_hessian. The
// multipliers are the knot's own, each times mult_scale (the driver's 1 / obj_scale, a power of two):
// lambda_next = lambda_{k+1} (k < N), z_k = the knot's inequality rows' duals, y_k its equality
// rows'. False when a second derivative is not finite (the blocks are then unspecified).
template <class T>
KNOT_HD_NOINLINE bool knot_hessian(const BatchProblem& P, const unsigned char* arena, const double* slice, int k,
                                   const T* x_k, const T* u_k, const T* lambda_next, const T* z_k, const T* y_k,
                                   T mult_scale, T* Q, T* R, T* S, T* work) {
  const int nx = P.nx, nu = P.nu, N = P.N;
  const bool running = k < N;
  const int n = running ? nx + nu : nx;
  const detail::HessianLayout L = detail::HessianLayout::make(P);
  unsigned char* base = detail::aligned16(work);
  double* H = reinterpret_cast<double*>(base + L.H);
  double* x = reinterpret_cast<double*>(base + L.x);
  double* u = reinterpret_cast<double*>(base + L.u);
  double* lam = reinterpret_cast<double*>(base + L.lam);
  double* G = reinterpret_cast<double*>(base + L.G);
  unsigned char* region = base + L.region;
  for (int i = 0; i < nx; ++i) x[i] = double(x_k[i]);
  if (running)
    for (int i = 0; i < nu; ++i) u[i] = double(u_k[i]);
  const auto at = [n](int i, int j) { return std::size_t(i) + std::size_t(j) * n; };

  if (running) {
    for (int i = 0; i < nx; ++i) lam[i] = double(lambda_next[i] * mult_scale);
    detail::StepHessianFn fn{&P, x, u, lam, H, G, region};
    if (!detail::with_model(P, arena, fn)) return false;
  } else {
    for (int e = 0; e < n * n; ++e) H[e] = 0.0;
  }

  // The constraint rows' curvature, inequality rows then equality rows, terms in problem order.
  for (int pass = 0; pass < 2; ++pass) {
    const bool ineq = pass == 0;
    const RowRecord* rec = arena_at<RowRecord>(arena, ineq ? P.ineq_terms : P.eq_terms);
    const int terms = ineq ? P.n_ineq_terms : P.n_eq_terms;
    const T* mult = ineq ? z_k : y_k;
    int row = 0;
    for (int t = 0; t < terms; ++t) {
      const RowRecord& c = rec[t];
      if (!stage_applies(c.stages, k, N) || (c.uses_control && k >= N)) continue;
      const int rows_here = record_rows(c, slice);
      if (c.kind == RowKind::CircleObstacle) {  // CircleObstacle::add_curvature: -2 z on the position
        const int* index = arena_at<int>(arena, c.index);
        const double z = double(mult[row] * mult_scale);
        for (int e = 0; e < 2; ++e) H[at(index[e], index[e])] += -2.0 * z;
      } else if (c.kind == RowKind::EndEffector) {  // EndEffectorBox / EndEffectorHeight::add_curvature
        int codes[6];
        end_effector_codes(slice + c.lower, slice + c.upper, codes);
        double cw[3] = {0.0, 0.0, 0.0};
        for (int e = 0; e < rows_here; ++e) {
          const int code = codes[e], a = (code > 0 ? code : -code) - 1;
          const double m = double(mult[row + e] * mult_scale);
          cw[a] += code > 0 ? m : -m;
        }
        detail::add_frame_curvature(*arena_at<robot::RobotData>(arena, P.model_params), c.body, c.in_body, x, cw, G,
                                    region, H, n);
      } else if (c.kind == RowKind::Expression) {  // ExpressionConstraint::add_curvature
        const TermTape& tt = *arena_at<TermTape>(arena, c.tape);
        const problems::ExprTape tape = detail::term_tape(arena, tt);
        const int* in = arena_at<int>(arena, tt.inputs);
        const ExprRow* rows = arena_at<ExprRow>(arena, c.index);
        double* cw = reinterpret_cast<double*>(region);
        double* h = cw + problems::kExprMaxRegisters;
        for (int e = 0; e < tt.n_outputs; ++e) cw[e] = 0.0;
        for (int e = 0; e < c.rows; ++e) cw[rows[e].expr] += rows[e].sign * double(mult[row + e] * mult_scale);
        unsigned char* hd =
            region + detail::align16((2 * std::size_t(problems::kExprMaxRegisters) +
                                      std::size_t(detail::kMaxTermCurvatureInputs) * detail::kMaxTermCurvatureInputs) *
                                     sizeof(double));
        if (!detail::term_curvature(tape, in, tt.n_inputs, nx, x, u, cw, h, hd)) return false;
        for (int b = 0; b < tt.n_inputs; ++b)
          for (int a = 0; a < tt.n_inputs; ++a) H[at(in[a], in[b])] += h[a + std::size_t(b) * tt.n_inputs];
      }
      row += rows_here;  // boxes and state equalities are linear
    }
  }

  // The cost terms' curvature beyond their Gauss-Newton blocks, into Q, R, S.
  const CostRecord* costs = arena_at<CostRecord>(arena, P.costs);
  for (int t = 0; t < P.n_costs; ++t) {
    const CostRecord& c = costs[t];
    const bool uses_u = c.kind == CostKind::Control || c.uses_control;
    if (!stage_applies(c.stages, k, N) || (uses_u && k >= N)) continue;
    const double* w = arena_at<double>(arena, c.weight);
    const double s = c.scale_by_dt ? P.dt : 1.0;
    if (c.kind == CostKind::EndEffector) {  // EndEffectorCost::add_curvature
      const robot::RobotData& r = *arena_at<robot::RobotData>(arena, P.model_params);
      robot::Workspace<double>& wd = *reinterpret_cast<robot::Workspace<double>*>(region);
      double pos[3], rr[3], wr[3];
      robot::forward_kinematics(r, x, wd);
      robot::point_position(wd, c.body, c.in_body, pos);
      const int row = k < c.ref_rows - 1 ? k : c.ref_rows - 1;
      const double* ref = slice + c.ref + std::size_t(row) * c.dim;
      for (int a = 0; a < 3; ++a) rr[a] = pos[a] - ref[a];
      detail::apply(c.form, 3, w, rr, wr);
      const double cc[3] = {s * wr[0], s * wr[1], s * wr[2]};
      detail::add_frame_curvature(r, c.body, c.in_body, x, cc, G,
                                  region + detail::align16(sizeof(robot::Workspace<double>)), Q, nx);
    } else if (c.kind == CostKind::Residual) {  // ResidualCost::add_curvature
      const TermTape& tt = *arena_at<TermTape>(arena, c.tape);
      const problems::ExprTape tape = detail::term_tape(arena, tt);
      const int* in = arena_at<int>(arena, tt.inputs);
      const int m = tt.n_outputs, ni = tt.n_inputs;
      double* rv = reinterpret_cast<double*>(region);
      double* cw = rv + problems::kExprMaxRegisters;
      double* h = cw + problems::kExprMaxRegisters;
      unsigned char* hd =
          region + detail::align16((2 * std::size_t(problems::kExprMaxRegisters) +
                                    std::size_t(detail::kMaxTermCurvatureInputs) * detail::kMaxTermCurvatureInputs) *
                                   sizeof(double));
      detail::term_eval(tape, in, ni, nx, x, running ? u : static_cast<const double*>(nullptr), rv,
                        static_cast<double*>(nullptr), reinterpret_cast<double*>(hd));
      detail::apply(c.form, m, w, rv, cw);
      for (int i = 0; i < m; ++i) cw[i] *= s;
      if (!detail::term_curvature(tape, in, ni, nx, x, u, cw, h, hd)) return false;
      for (int b = 0; b < ni; ++b)
        for (int a = 0; a < ni; ++a) {
          const double v = h[a + std::size_t(b) * ni];
          const int ia = in[a], ib = in[b];
          if (ia < nx && ib < nx)
            Q[ia + std::size_t(ib) * nx] += T(v);
          else if (ia >= nx && ib >= nx && running)
            R[(ia - nx) + std::size_t(ib - nx) * nu] += T(v);
          else if (ia >= nx && ib < nx && running)
            S[(ia - nx) + std::size_t(ib) * nu] += T(v);
        }
    }
    // State and control costs are quadratic: their Gauss-Newton blocks are exact.
  }

  // Q and R symmetric bit for bit: each mirrored pair of the cost blocks at its mean, plus H.
  const auto add_symmetric = [&](T* M, int m, int off) {
    for (int j = 0; j < m; ++j)
      for (int i = j; i < m; ++i) {
        const std::size_t ij = i + std::size_t(j) * m, ji = j + std::size_t(i) * m;
        const T v = T(0.5) * (M[ij] + M[ji]) + T(H[at(off + i, off + j)]);
        M[ij] = v;
        M[ji] = v;
      }
  };
  add_symmetric(Q, nx, 0);
  if (running) {
    add_symmetric(R, nu, nx);
    for (int j = 0; j < nx; ++j)
      for (int i = 0; i < nu; ++i) S[i + std::size_t(j) * nu] += T(H[at(nx + i, j)]);
  }
  bool ok = true;
  for (std::size_t e = 0; e < std::size_t(nx) * nx; ++e) ok = ok && detail::finite(Q[e]);
  if (running) {
    for (std::size_t e = 0; e < std::size_t(nu) * nu; ++e) ok = ok && detail::finite(R[e]);
    for (std::size_t e = 0; e < std::size_t(nu) * nx; ++e) ok = ok && detail::finite(S[e]);
  }
  return ok;
}

}  // namespace knot::solver::device

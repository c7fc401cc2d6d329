// The flat, device-copyable problem description of the batched SQP (docs/batch.md) and its per-knot
// evaluation: the integrator step with its Jacobians, a knot's cost with gradient and Gauss-Newton
// Hessian, and a knot's constraint rows with their Jacobians.
//
// A BatchProblem holds sizes and offsets only: byte offsets into one shared `arena` (the model's
// parameter struct, the weights, the term records, the row offsets) and double offsets into a
// per-problem `slice` (x0, every reference, every bound), so the same bytes are valid on the host
// and in device memory and a batch is one arena plus one slice per problem. compile_batch_problem
// (host, device_problem.cpp) builds it from a Problem.
//
// The evaluation functions are KNOT_HD templates on the scalar T (double; float on the GPU). They
// repeat the host objects' arithmetic operation for operation (Integrator::step_jacobian's schemes,
// not explicit_step_jacobian's, which form some products differently), so that in double they give
// what Integrator::step_jacobian, CostTerm::accumulate and ConstraintTerm::jacobian give: bit for bit
// when the compiler contracts no multiply-adds (-ffp-contract=off; tests/solver/
// test_device_linearize.cpp), else to rounding. Models whose host adapter has a hand-written Jacobian
// (car, unicycle, double_integrator) are differentiated here by dual sweeps, which may differ from
// it by rounding (double_integrator's are exact), and take RK4's chain products as the host does.
//
// Scratch is caller-owned: `step_work_size(P)` scalars T for step/step_jacobian, `knot_work_size(P)`
// for knot_cost/knot_rows (the end-effector terms' kinematics). Nothing allocates or throws.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/dual.hpp"
#include "knot/problems/expression.hpp"
#include "knot/problems/integrator.hpp"
#include "knot/problems/models/acrobot.hpp"
#include "knot/problems/models/car.hpp"
#include "knot/problems/models/cartpole.hpp"
#include "knot/problems/models/chain_of_masses.hpp"
#include "knot/problems/models/double_integrator.hpp"
#include "knot/problems/models/linear.hpp"
#include "knot/problems/models/pendulum.hpp"
#include "knot/problems/models/quadrotor.hpp"
#include "knot/problems/models/unicycle.hpp"
#include "knot/problems/robot/dynamics.hpp"
#include "knot/problems/robot/robot_data.hpp"

namespace knot::problems {
struct Problem;
}

namespace knot::solver::device {

namespace models = problems::models;
namespace robot = problems::robot;

enum class ModelKind : int {
  DoubleIntegrator,
  Pendulum,
  Cartpole,
  Acrobot,
  Quadrotor,
  Unicycle,
  Car,
  ChainOfMasses,
  Linear,
  Manipulator,
  Expression,  // model: {type: expression}: the tape's arrays in the arena
};

enum class CostKind : int { State, Control, EndEffector, Residual };
enum class RowKind : int { ControlBox, StateBox, StateEquality, Expression, CircleObstacle, EndEffector };
enum class WeightForm : int { Scalar, Diagonal, Dense };  // problems::Weight::Form
enum class Stages : int { All, Running, Terminal };       // problems::StageSet
enum class ConstraintSet : int { Inequality, Equality };   // which rows knot_rows evaluates

// An expression term's tape (problems::TermExpressions): arena offsets of its instructions, its
// output registers and its inputs (n_inputs ints, ascending: state index, or nx + control index;
// the tape's loads read them as one compact vector), and the tape's sizes.
struct TermTape {
  std::size_t code = 0, outputs = 0, inputs = 0;
  int size = 0, n_outputs = 0, registers = 0, loads = 0, n_inputs = 0;
};

// One row of an expression constraint: sign (g_expr - bound), as ExpressionConstraint's rows.
struct ExprRow {
  int expr = 0;
  double sign = 1, bound = 0;
};

// One cost term. Offsets: `weight` in the arena (doubles: 1, dim or dim x dim column-major, as the
// form), `ref` in the slice (ref_rows rows of dim doubles, row-major; knot k reads row
// min(k, ref_rows - 1); none for a residual), `tape` (a residual's TermTape) in the arena.
struct CostRecord {
  CostKind kind = CostKind::State;
  Stages stages = Stages::All;
  int scale_by_dt = 0;
  int dim = 0;  // nx, nu or 3
  WeightForm form = WeightForm::Scalar;
  std::size_t weight = 0;
  std::size_t ref = 0;
  int ref_rows = 0;
  int body = -1;                        // end_effector: the robot body
  double in_body[3] = {0, 0, 0};        // end_effector: the point in body coordinates
  int uses_control = 0;                 // residual: r reads u (inactive at N)
  std::size_t tape = 0;                 // residual: its TermTape
};

// One constraint term. `index` (count ints in the arena) are the entries of x or u it bounds;
// `lower`, `upper` (count doubles each) are in the slice, for state_equality `lower` is the target.
// rows: the most rows it adds at a knot where it is active. Boxes and end-effector row sets add one
// per finite bound of the problem's own slice (record_rows), so rows is that of every bound finite
// (2 count; six; a height's one); the other kinds add exactly rows (count for equality).
// An expression constraint has `tape` (its TermTape) and `index` (rows ExprRow) in the arena, and
// its bounds in those rows. A circle obstacle (one row, r^2 - |p - c|^2) has the two state entries
// of the planar position p at `index`, its center c at `lower` (2) and its radius r at `upper` (1).
// An end-effector row set (end_effector_box; end_effector_height is its one row z_min - p_z) has
// the point on `body` at `in_body` (body coordinates) and the three lower and three upper bounds at
// `lower`, `upper`; its rows follow from those bounds (end_effector_codes).
struct RowRecord {
  RowKind kind = RowKind::StateBox;
  Stages stages = Stages::All;
  int uses_control = 0;
  int count = 0;
  int rows = 0;
  std::size_t index = 0;
  std::size_t lower = 0, upper = 0;
  std::size_t tape = 0;
  int body = -1;                  // end-effector rows: the robot body
  double in_body[3] = {0, 0, 0};  // end-effector rows: the point in body coordinates
};

// Sizes and offsets; trivially copyable, no pointers. Arena offsets are in bytes (8-aligned),
// slice offsets in doubles.
struct BatchProblem {
  int nx = 0, nu = 0, N = 0, nq = 0;
  double dt = 0;
  problems::IntegratorType integrator = problems::IntegratorType::Rk4;
  ModelKind model = ModelKind::Pendulum;
  int discrete = 0;       // the model is a discrete-time map
  int velocity_rows = 0;  // f's first nq rows are x[nq..2 nq) (the manipulator)
  std::size_t model_params = 0;  // the model struct (models::Cartpole, ...; robot::RobotData)
  std::size_t linear_A = 0, linear_B = 0, linear_c = 0;  // the linear model's arrays (c: 0 when none)
  int has_linear_c = 0;
  std::size_t expr_code = 0, expr_outputs = 0;  // the expression model's tape: ExprInstr and uint8 arrays
  std::size_t costs = 0;  // n_costs CostRecord, problem order
  int n_costs = 0;
  std::size_t ineq_terms = 0, eq_terms = 0;  // RowRecord arrays, problem order within each kind
  int n_ineq_terms = 0, n_eq_terms = 0;
  // The row layout of each kind is the problem's own (set_slice_bounds may make a bound finite or
  // infinite): N + 2 doubles each in the slice, knot k's first row at [k] and the total at [N + 1]
  // (row_offsets reads them). n_ineq, n_eq: the most rows in all, every bound finite (the arrays'
  // sizes; a problem uses the first row_offsets(...)[N + 1] of them).
  std::size_t ineq_layout = 0, eq_layout = 0;
  int n_ineq = 0, n_eq = 0;
  std::size_t term_work = 0;  // scalars of the largest expression term's scratch (term_work_scalars)
  std::size_t arena_bytes = 0;
  std::size_t slice_size = 0;  // doubles per problem
  std::size_t x0 = 0;          // slice offset of x0 (nx doubles)
};

// What compile_batch_problem returns: the description, the shared arena, the problem's own slice
// (its x0, references and bounds), and the names of the records (cost k is CostRecord k; the
// constraint names of each kind in record order), for the slice writers.
struct BatchProblemData {
  BatchProblem problem;
  std::vector<unsigned char> arena;
  std::vector<double> slice;
  std::vector<std::string> cost_names, ineq_names, eq_names;
};

// Compiles p; throws problems::ProblemError naming the first term, model or integrator the device
// path cannot run (found: "cost 'smooth' (control_rate), which has no device path yet").
BatchProblemData compile_batch_problem(const problems::Problem& p);
// The sentence why p has no device path ("cost 'smooth' (control_rate) has no device path yet"), or
// empty when it compiles.
std::string device_path_unsupported(const problems::Problem& p);

// Every size and offset of a and b equal: the arena of one fits the other's slices and arrays.
bool same_layout(const BatchProblem& a, const BatchProblem& b);
// The arena of p, a problem compiled before to `layout` and now holding another model (the
// per-problem models of BatchSolver::set_model). Throws std::invalid_argument when p compiles to
// another layout (an expression model whose parameters fold its tape to another length).
std::vector<unsigned char> recompiled_arena(const problems::Problem& p, const BatchProblem& layout);

// Writers of one problem's slice (P.slice_size doubles). Each throws std::invalid_argument on a
// wrong size or an unknown name.
void set_slice_initial_state(const BatchProblemData& d, double* slice, std::span<const double> x0);
// ref: one row (dim values, for every knot) or as many rows as the compiled reference has.
void set_slice_reference(const BatchProblemData& d, double* slice, std::string_view cost,
                         std::span<const double> ref);
// A control_box or state_box term (model_limits: its `<name>_state` / `<name>_control` terms): one
// value per bounded entry; an end-effector term (end_effector_box, end_effector_height): three, the
// point's x, y, z (a height is a box bounding z from below: its lower z finite, the rest infinite). A
// bound may become finite or infinite (a row added or removed): the slice's inequality row layout
// is laid out again. lower <= upper, no NaN, no lower +inf or upper -inf.
void set_slice_bounds(const BatchProblemData& d, double* slice, std::string_view constraint,
                      std::span<const double> lower, std::span<const double> upper);
// A circle_obstacle term's center and radius (finite, radius > 0).
void set_slice_obstacle(const BatchProblemData& d, double* slice, std::string_view constraint,
                        std::array<double, 2> center, double radius);

// ---- arena access -------------------------------------------------------------------------------

template <class R>
KNOT_HD const R* arena_at(const unsigned char* arena, std::size_t offset) {
  return reinterpret_cast<const R*>(arena + offset);
}

KNOT_HD bool stage_applies(Stages s, int k, int N) {
  if (k < 0 || k > N) return false;
  switch (s) {
    case Stages::All:
      return true;
    case Stages::Running:
      return k < N;
    case Stages::Terminal:
      return k == N;
  }
  return false;
}

namespace detail {

template <class T>
KNOT_HD bool finite(T v) {
  return v - v == T(0);  // false for inf and NaN; no <cmath> overload set needed on the device
}

constexpr int kNarrow = 4, kWide = 8;  // ModelAdapter's sweep widths (any width gives the same columns)

template <class T, int W>
using DualT = problems::Dual<T, problems::Tangent<T, W>>;

template <class T>
KNOT_HD constexpr std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

// Scalars T of the dual scratch (xd, ud, fd: 2 n + m duals of the wide width).
KNOT_HD constexpr std::size_t dual_scalars(int n, int m) {
  return (2 * std::size_t(n) + std::size_t(m)) * (kWide + 1);
}
template <class T>
KNOT_HD constexpr std::size_t robot_ws_scalars() {
  return ceil_div<T>(sizeof(robot::Workspace<T>), sizeof(T));
}

// Where the robot algorithms keep their per-joint arrays: on the host in the member's scratch; on
// the GPU in a temporary of the calling thread (local memory). Local memory is interleaved across a
// warp's threads, so when the lanes of a warp (each its own knot) touch one field their accesses
// coalesce; in the scratch, one region per member, every lane touched a cache line of its own. The
// GPU's per-thread stack grows by sizeof(robot::Workspace<T>) (CudaBatch sets the limit). Dual
// workspaces (the exact Hessian's, 190 KB for Dual<8>) stay in the scratch on the GPU too: local
// memory is reserved for every thread the GPU can hold, not for the few that use it.
inline constexpr std::size_t kMaxLocalRobotWorkspace = 32 * 1024;
template <class T, bool Local = sizeof(robot::Workspace<T>) <= kMaxLocalRobotWorkspace>
struct RobotWorkspaceAt {  // in local memory
  robot::Workspace<T> w;
  KNOT_HD explicit RobotWorkspaceAt(void*) {}
  KNOT_HD robot::Workspace<T>& get() { return w; }
};
template <class T>
struct RobotWorkspaceAt<T, false> {  // in the scratch
  robot::Workspace<T>* w;
  KNOT_HD explicit RobotWorkspaceAt(void* scratch) : w(reinterpret_cast<robot::Workspace<T>*>(scratch)) {}
  KNOT_HD robot::Workspace<T>& get() { return *w; }
};
#if defined(__CUDA_ARCH__)
#define KNOT_ROBOT_WORKSPACE(T, name, scratch)                \
  ::knot::solver::device::detail::RobotWorkspaceAt<T> name##_at(static_cast<void*>(scratch)); \
  robot::Workspace<T>& name = name##_at.get()
#else
#define KNOT_ROBOT_WORKSPACE(T, name, scratch) \
  robot::Workspace<T>& name = *reinterpret_cast<robot::Workspace<T>*>(scratch)
#endif

// The manipulator: its RobotData in the arena.
struct ManipulatorModel {
  const robot::RobotData* r;
};

// A ModelAdapter model: f by the template dynamics, [fx | fu] by dual sweeps, and (for kinds whose
// host adapter has no analytic Jacobian) RK4's K = fx S + [0 | fu] by sweeps seeded with S.
template <class M>
struct AdaptedModel {
  M m;
  bool seeded_chain;
};

template <class T, class M>
KNOT_HD void model_f(const AdaptedModel<M>& a, const T* x, const T* u, T* f, T*) {
  a.m.template dynamics<T>(x, u, f);
}
template <class T>
KNOT_HD void model_f(const ManipulatorModel& a, const T* x, const T* u, T* f, T* ws) {
  const int n = a.r->n;
  for (int i = 0; i < n; ++i) f[i] = x[n + i];
  KNOT_ROBOT_WORKSPACE(T, rws, ws);
  robot::forward_dynamics(*a.r, x, x + n, u, f + n, rws);
}

template <class T, int W, class M>
KNOT_HD void dual_sweeps(const M& m, int n, int nm, const T* x, const T* u, T* f, T* fx, T* fu, T* scratch) {
  using D = DualT<T, W>;
  D* xd = reinterpret_cast<D*>(scratch);
  D* ud = xd + n;
  D* fd = ud + nm;
  for (int i = 0; i < n; ++i) xd[i] = D(x[i]);
  for (int i = 0; i < nm; ++i) ud[i] = D(u[i]);
  for (int j0 = 0; j0 < n + nm; j0 += W) {
    const int w = n + nm - j0 < W ? n + nm - j0 : W;
    for (int k = 0; k < w; ++k) (j0 + k < n ? xd[j0 + k] : ud[j0 + k - n]).d[k] = T(1.0);
    m.template dynamics<D>(xd, ud, fd);
    for (int k = 0; k < w; ++k) {
      const int j = j0 + k;
      (j < n ? xd[j] : ud[j - n]).d[k] = T(0.0);
      T* col = j < n ? fx + std::size_t(j) * n : fu + std::size_t(j - n) * n;
      for (int i = 0; i < n; ++i) col[i] = fd[i].d[k];
    }
  }
  for (int i = 0; i < n; ++i) f[i] = fd[i].v;
}

// K = fx S + [0 | fu] by sweeps seeded with S's columns (ModelAdapter::seeded_sweeps).
template <class T, int W, class M>
KNOT_HD void seeded_sweeps(const M& m, int n, int nm, const T* x, const T* u, const T* S, T* f, T* K, T* scratch) {
  using D = DualT<T, W>;
  D* xd = reinterpret_cast<D*>(scratch);
  D* ud = xd + n;
  D* fd = ud + nm;
  const int nw = n + nm;
  for (int i = 0; i < n; ++i) xd[i] = D(x[i]);
  for (int i = 0; i < nm; ++i) ud[i] = D(u[i]);
  for (int j0 = 0; j0 < nw; j0 += W) {
    const int w = nw - j0 < W ? nw - j0 : W;
    for (int i = 0; i < n; ++i) {
      const T* row = S + std::size_t(j0) * n + i;
      for (int k = 0; k < W; ++k) xd[i].d[k] = k < w ? row[std::size_t(k) * n] : T(0.0);
    }
    for (int i = 0; i < nm; ++i)
      for (int k = 0; k < W; ++k) ud[i].d[k] = k < w && j0 + k - n == i ? T(1.0) : T(0.0);
    m.template dynamics<D>(xd, ud, fd);
    for (int i = 0; i < n; ++i) {
      T* row = K + std::size_t(j0) * n + i;
      for (int k = 0; k < W; ++k)
        if (k < w) row[std::size_t(k) * n] = fd[i].d[k];
    }
  }
  for (int i = 0; i < n; ++i) f[i] = fd[i].v;
}

template <class T, class M>
KNOT_HD void model_jac(const AdaptedModel<M>& a, const T* x, const T* u, T* f, T* fx, T* fu, T* scratch) {
  const int n = a.m.nx(), nm = a.m.nu();
  if constexpr (std::is_same_v<M, models::Linear>) {
    // Linear::jacobian: f by dynamics, then A and B as stored.
    a.m.template dynamics<T>(x, u, f);
    for (int k = 0; k < n * n; ++k) fx[k] = T(a.m.params.A[k]);
    for (int k = 0; k < n * nm; ++k) fu[k] = T(a.m.params.B[k]);
    return;
  }
  if (n + nm <= kNarrow)
    dual_sweeps<T, kNarrow>(a.m, n, nm, x, u, f, fx, fu, scratch);
  else
    dual_sweeps<T, kWide>(a.m, n, nm, x, u, f, fx, fu, scratch);
}
template <class T>
KNOT_HD void model_jac(const ManipulatorModel& a, const T* x, const T* u, T* f, T* fx, T* fu, T* ws) {
  KNOT_ROBOT_WORKSPACE(T, rws, ws);
  robot::state_jacobian(*a.r, x, u, f, fx, fu, rws);
}

template <class T, class M>
KNOT_HD bool model_chain(const AdaptedModel<M>& a, const T* x, const T* u, const T* S, T* f, T* K, T* scratch) {
  if (!a.seeded_chain) return false;
  const int n = a.m.nx(), nm = a.m.nu();
  if (n + nm <= kNarrow)
    seeded_sweeps<T, kNarrow>(a.m, n, nm, x, u, S, f, K, scratch);
  else
    seeded_sweeps<T, kWide>(a.m, n, nm, x, u, S, f, K, scratch);
  return true;
}
template <class T>
KNOT_HD bool model_chain(const ManipulatorModel&, const T*, const T*, const T*, T*, T*, T*) {
  return false;
}

// K = fx [Sx | Su] + [0 | fu] as integrator.cpp's chain() forms it.
template <class T>
KNOT_HD void chain(int n, int m, int nq, int r0, const T* fx, const T* fu, const T* Sx, const T* Su, T* Kx, T* Ku) {
  for (int j = 0; j < n + m; ++j) {
    const T* sj = j < n ? Sx + std::size_t(j) * n : Su + std::size_t(j - n) * n;
    T* kj = j < n ? Kx + std::size_t(j) * n : Ku + std::size_t(j - n) * n;
    for (int i = 0; i < r0; ++i) kj[i] = sj[nq + i];
    if (j < n) {
      for (int i = r0; i < n; ++i) kj[i] = T(0.0);
    } else {
      const T* fj = fu + std::size_t(j - n) * n;
      for (int i = r0; i < n; ++i) kj[i] = fj[i];
    }
    for (int l = 0; l < n; ++l) {
      const T b = sj[l];
      const T* fl = fx + std::size_t(l) * n;
      for (int i = r0; i < n; ++i) kj[i] += fl[i] * b;
    }
  }
}

// C = A B (+ C when accumulate): integrator.cpp's gemm with alpha 1.
template <class T>
KNOT_HD void gemm(int r, int k, int c, const T* A, const T* B, bool accumulate, T* C) {
  for (int j = 0; j < c; ++j) {
    T* cj = C + std::size_t(j) * r;
    if (!accumulate)
      for (int i = 0; i < r; ++i) cj[i] = T(0.0);
    for (int l = 0; l < k; ++l) {
      const T b = T(1.0) * B[l + std::size_t(j) * k];
      const T* al = A + std::size_t(l) * r;
      for (int i = 0; i < r; ++i) cj[i] += al[i] * b;
    }
  }
}

template <class T>
KNOT_HD void identity_plus(int n, T alpha, const T* X, T* M) {
  const std::size_t nn = std::size_t(n) * n;
  for (std::size_t e = 0; e < nn; ++e) M[e] = alpha * X[e];
  for (int i = 0; i < n; ++i) M[i + std::size_t(i) * n] += T(1.0);
}

// Offsets into step_jacobian's scratch, in scalars (integrator.cpp's Layout, plus the duals and the
// robot workspace).
struct StepLayout {
  std::size_t f, fx, fu, y, acc, ax, bu, sx, su, kx, ku, scratch, total;
  template <class T>
  KNOT_HD static constexpr StepLayout make(int n, int m) {
    StepLayout L{};
    const std::size_t nn = std::size_t(n) * n, nm = std::size_t(n) * m;
    std::size_t at = 0;
    L.f = at, at += n;
    L.fx = at, at += nn;
    L.fu = at, at += nm;
    L.y = at, at += n;
    L.acc = at, at += n;
    L.ax = at, at += nn;
    L.bu = at, at += nm;
    L.sx = at, at += nn;  // [sx | su] and [kx | ku] are one n x (n + m) matrix each
    L.su = at, at += nm;
    L.kx = at, at += nn;
    L.ku = at, at += nm;
    L.scratch = at;
    const std::size_t d = dual_scalars(n, m), w = robot_ws_scalars<T>();
    at += d > w ? d : w;
    L.total = at;
    return L;
  }
};

// Integrator::step_jacobian's formulas on T for the explicit schemes (jac false: x_next only).
template <class T, class Md>
KNOT_HD bool step_impl(const BatchProblem& P, const Md& md, const T* x, const T* u, T* x_next, T* A, T* B, T* work) {
  const int n = P.nx, m = P.nu;
  const std::size_t nn = std::size_t(n) * n, nm = std::size_t(n) * m;
  const bool jac = A != nullptr;
  const StepLayout L = StepLayout::make<T>(n, m);
  T *f = work + L.f, *fx = work + L.fx, *fu = work + L.fu, *y = work + L.y, *acc = work + L.acc;
  T* scratch = work + L.scratch;
  const T dt = T(P.dt);
  const auto eval = [&](const T* at) {
    if (jac)
      model_jac(md, at, u, f, fx, fu, scratch);
    else
      model_f(md, at, u, f, scratch);
  };
  const auto finish = [&](const T* xa, const T* ja, const T* jb) {
    bool ok = true;
    for (int i = 0; i < n; ++i) ok = ok && finite(xa[i]);
    if (jac) {
      for (std::size_t e = 0; e < nn; ++e) ok = ok && finite(ja[e]);
      for (std::size_t e = 0; e < nm; ++e) ok = ok && finite(jb[e]);
    }
    for (int i = 0; i < n; ++i) x_next[i] = xa[i];
    if (jac) {
      for (std::size_t e = 0; e < nn; ++e) A[e] = ja[e];
      if (B != nullptr)
        for (std::size_t e = 0; e < nm; ++e) B[e] = jb[e];
    }
    return ok;
  };
  if (!finite(dt)) return false;
  if (P.discrete) {
    eval(x);
    return finish(f, fx, fu);
  }
  switch (P.integrator) {
    case problems::IntegratorType::Euler: {
      eval(x);
      for (int i = 0; i < n; ++i) y[i] = x[i] + dt * f[i];
      if (jac) {
        identity_plus(n, dt, fx, fx);
        for (std::size_t e = 0; e < nm; ++e) fu[e] *= dt;
      }
      return finish(y, fx, fu);
    }
    case problems::IntegratorType::SemiImplicitEuler: {
      const int nq = P.nq;
      T *Sx = work + L.sx, *Su = work + L.su, *Ax = work + L.ax;
      eval(x);
      for (int i = 0; i < n; ++i) y[i] = i < nq ? x[i] : x[i] + dt * f[i];
      if (jac) {
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) {
            const std::size_t e = i + std::size_t(j) * n;
            Sx[e] = T(i == j ? 1.0 : 0.0) + (i < nq ? T(0.0) : dt * fx[e]);
          }
        for (int j = 0; j < m; ++j)
          for (int i = 0; i < n; ++i) {
            const std::size_t e = i + std::size_t(j) * n;
            Su[e] = i < nq ? T(0.0) : dt * fu[e];
          }
      }
      if (P.velocity_rows) {
        for (int i = 0; i < nq; ++i) y[i] += dt * y[nq + i];
        if (jac) {
          for (int j = 0; j < n; ++j)
            for (int i = 0; i < nq; ++i) Sx[i + std::size_t(j) * n] += dt * Sx[i + std::size_t(j) * n + nq];
          for (int j = 0; j < m; ++j)
            for (int i = 0; i < nq; ++i) Su[i + std::size_t(j) * n] += dt * Su[i + std::size_t(j) * n + nq];
        }
        return finish(y, Sx, Su);
      }
      eval(y);
      for (int i = 0; i < nq; ++i) y[i] += dt * f[i];
      if (jac) {
        gemm(n, n, n, fx, Sx, false, Ax);
        gemm(n, n, m, fx, Su, true, fu);
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < nq; ++i) Sx[i + std::size_t(j) * n] += dt * Ax[i + std::size_t(j) * n];
        for (int j = 0; j < m; ++j)
          for (int i = 0; i < nq; ++i) Su[i + std::size_t(j) * n] += dt * fu[i + std::size_t(j) * n];
      }
      return finish(y, Sx, Su);
    }
    case problems::IntegratorType::Rk4: {
      const double weight[4] = {1, 2, 2, 1};
      const double advance[3] = {P.dt / 2, P.dt / 2, P.dt};
      const int nq = P.nq, r0 = P.velocity_rows ? nq : 0;
      T *Ax = work + L.ax, *Bu = work + L.bu, *Sx = work + L.sx, *Su = work + L.su, *Kx = work + L.kx,
        *Ku = work + L.ku;
      for (int i = 0; i < n; ++i) acc[i] = T(0.0);
      if (jac) {
        for (std::size_t e = 0; e < nn; ++e) Ax[e] = T(0.0);
        for (std::size_t e = 0; e < nm; ++e) Bu[e] = T(0.0);
      }
      for (int i = 0; i < n; ++i) y[i] = x[i];
      for (int s = 0; s < 4; ++s) {
        if (!jac) {
          model_f(md, y, u, f, scratch);
        } else if (s == 0) {
          model_jac(md, y, u, f, Kx, Ku, scratch);
        } else if (!model_chain(md, y, u, Sx, f, Kx, scratch)) {
          model_jac(md, y, u, f, fx, fu, scratch);
          chain(n, m, nq, r0, fx, fu, Sx, Su, Kx, Ku);
        }
        const T ws = T(weight[s]);
        for (int i = 0; i < n; ++i) acc[i] += ws * f[i];
        if (jac) {
          for (std::size_t e = 0; e < nn; ++e) Ax[e] += ws * Kx[e];
          for (std::size_t e = 0; e < nm; ++e) Bu[e] += ws * Ku[e];
        }
        if (s < 3) {
          const T c = T(advance[s]);
          for (int i = 0; i < n; ++i) y[i] = x[i] + c * f[i];
          if (jac) {
            identity_plus(n, c, Kx, Sx);
            for (std::size_t e = 0; e < nm; ++e) Su[e] = c * Ku[e];
          }
        }
      }
      const T sixth = T(P.dt / 6);
      for (int i = 0; i < n; ++i) y[i] = x[i] + sixth * acc[i];
      if (jac) {
        identity_plus(n, sixth, Ax, Ax);
        for (std::size_t e = 0; e < nm; ++e) Bu[e] *= sixth;
      }
      return finish(y, Ax, Bu);
    }
    case problems::IntegratorType::ImplicitEuler:
    case problems::IntegratorType::ImplicitMidpoint:
      return false;  // refused by compile_batch_problem
  }
  return false;
}

template <class M>
KNOT_HD AdaptedModel<M> adapted(const unsigned char* arena, std::size_t off, bool seeded) {
  AdaptedModel<M> a;
  std::memcpy(static_cast<void*>(&a.m), arena + off, sizeof(M));
  a.seeded_chain = seeded;
  return a;
}

// Calls fn(model) with the concrete model of P (a plain functor with a templated operator()).
template <class Fn>
KNOT_HD bool with_model(const BatchProblem& P, const unsigned char* arena, Fn& fn) {
  switch (P.model) {
    case ModelKind::DoubleIntegrator:
      return fn(adapted<models::DoubleIntegrator>(arena, P.model_params, false));
    case ModelKind::Pendulum:
      return fn(adapted<models::Pendulum>(arena, P.model_params, true));
    case ModelKind::Cartpole:
      return fn(adapted<models::Cartpole>(arena, P.model_params, true));
    case ModelKind::Acrobot:
      return fn(adapted<models::Acrobot>(arena, P.model_params, true));
    case ModelKind::Quadrotor:
      return fn(adapted<models::Quadrotor>(arena, P.model_params, true));
    case ModelKind::Unicycle:
      return fn(adapted<models::Unicycle>(arena, P.model_params, false));
    case ModelKind::Car:
      return fn(adapted<models::Car>(arena, P.model_params, false));
    case ModelKind::ChainOfMasses:
      return fn(adapted<models::ChainOfMasses>(arena, P.model_params, true));
    case ModelKind::Linear: {
      AdaptedModel<models::Linear> a = adapted<models::Linear>(arena, P.model_params, false);
      a.m.params.A = arena_at<double>(arena, P.linear_A);  // rebased: the host's pointers mean nothing here
      a.m.params.B = arena_at<double>(arena, P.linear_B);
      a.m.params.c = P.has_linear_c ? arena_at<double>(arena, P.linear_c) : nullptr;
      return fn(a);
    }
    case ModelKind::Manipulator:
      return fn(ManipulatorModel{arena_at<robot::RobotData>(arena, P.model_params)});
    case ModelKind::Expression: {
      // The struct's tape view is rebuilt over the arena's copies of its arrays (its sizes are the
      // compiled ones); the host-only info stays null. Sweeps seeded with S, as ModelAdapter's.
      AdaptedModel<problems::ExpressionDynamics> a = adapted<problems::ExpressionDynamics>(arena, P.model_params, true);
      a.m.tape.code = arena_at<problems::ExprInstr>(arena, P.expr_code);
      a.m.tape.outputs = arena_at<std::uint8_t>(arena, P.expr_outputs);
      a.m.info = nullptr;
      return fn(a);
    }
  }
  return false;
}

template <class T>
struct StepFn {
  const BatchProblem* P;
  const T *x, *u;
  T *x_next, *A, *B, *work;
  template <class Md>
  KNOT_HD bool operator()(const Md& md) {
    return step_impl(*P, md, x, u, x_next, A, B, work);
  }
};

// Weight arithmetic of cost_weight.cpp (Weight::half_quadratic, add_gradient, apply, add_to), the
// Scalar and Diagonal forms with their own loops so that every form matches the host bit for bit.
template <class T>
KNOT_HD T w_at(const double* w, WeightForm form, int i) {
  return T(w[form == WeightForm::Scalar ? 0 : i]);
}
template <class T>
KNOT_HD T half_quadratic(WeightForm form, int n, const double* w, const T* a, const T* b) {
  T sum = T(0.0);
  if (form == WeightForm::Dense) {
    for (int j = 0; j < n; ++j) {
      T wr = T(0.0);
      for (int i = 0; i < n; ++i) wr += T(w[i + std::size_t(j) * n]) * (a[i] - b[i]);
      sum += (a[j] - b[j]) * wr;
    }
  } else {
    for (int j = 0; j < n; ++j) {
      const T wr = w_at<T>(w, form, j) * (a[j] - b[j]);
      sum += (a[j] - b[j]) * wr;
    }
  }
  return T(0.5) * sum;
}
template <class T>
KNOT_HD void add_gradient(WeightForm form, int n, const double* w, const T* a, const T* b, T s, T* g) {
  if (form == WeightForm::Dense) {
    for (int j = 0; j < n; ++j) {
      const T rj = s * (a[j] - b[j]);
      for (int i = 0; i < n; ++i) g[i] += T(w[i + std::size_t(j) * n]) * rj;
    }
    return;
  }
  for (int j = 0; j < n; ++j) g[j] += w_at<T>(w, form, j) * (s * (a[j] - b[j]));
}
template <class T>
KNOT_HD void apply(WeightForm form, int n, const double* w, const T* v, T* y) {
  if (form == WeightForm::Dense) {
    for (int i = 0; i < n; ++i) {
      T acc = T(0.0);
      for (int j = 0; j < n; ++j) acc += T(w[i + std::size_t(j) * n]) * v[j];
      y[i] = acc;
    }
    return;
  }
  for (int i = 0; i < n; ++i) y[i] = w_at<T>(w, form, i) * v[i];
}
template <class T>
KNOT_HD void add_to(WeightForm form, int n, const double* w, T s, T* H) {
  if (form == WeightForm::Dense) {
    for (std::size_t e = 0; e < std::size_t(n) * n; ++e) H[e] += s * T(w[e]);
    return;
  }
  for (int i = 0; i < n; ++i) H[i + std::size_t(i) * n] += s * w_at<T>(w, form, i);
}

// A reference row: nx, nu or 3 values.
KNOT_HD constexpr std::size_t ref_scalars(const BatchProblem& P) {
  const int n = P.nx > P.nu ? P.nx : P.nu;
  return std::size_t(n > 3 ? n : 3);
}

template <class T>
KNOT_HD void load(const double* src, int n, T* dst) {
  for (int i = 0; i < n; ++i) dst[i] = T(src[i]);
}

// ---- expression terms (expression_terms.cpp's arithmetic) ----

constexpr int kTermSweep = 4;  // TermExpressions' directions per dual sweep

// Scalars of one expression term's scratch: r, W r, W J_b and zeros (m each), J (m x n), then the
// evaluation's duals (the inputs, the register file and the outputs, kTermSweep + 1 scalars each).
KNOT_HD constexpr std::size_t term_work_scalars(int m, int n, int registers) {
  return 4 * std::size_t(m) + std::size_t(m) * n + std::size_t(kTermSweep + 1) * (std::size_t(n) + registers + m);
}

KNOT_HD problems::ExprTape term_tape(const unsigned char* arena, const TermTape& t) {
  problems::ExprTape tape;
  tape.code = arena_at<problems::ExprInstr>(arena, t.code);
  tape.size = t.size;
  tape.outputs = arena_at<std::uint8_t>(arena, t.outputs);
  tape.n_outputs = t.n_outputs;
  tape.registers = t.registers;
  tape.loads = t.loads;
  return tape;
}

// r = the term's m outputs at (x, u); with J non-null also J = dr/dw over its n inputs (m x n,
// column-major), by sweeps of kTermSweep directions: TermExpressions::evaluate. scratch: the
// evaluation's part of term_work_scalars.
template <class T>
KNOT_HD void term_eval(const problems::ExprTape& tape, const int* inputs, int n, int nx, const T* x, const T* u, T* r,
                       T* J, T* scratch) {
  const int m = tape.n_outputs;
  if (J == nullptr || n == 0) {
    T* w = scratch;
    T* reg = w + n;
    for (int j = 0; j < n; ++j) w[j] = inputs[j] < nx ? x[inputs[j]] : u[inputs[j] - nx];
    problems::evaluate<T>(tape, w, static_cast<const T*>(nullptr), reg, r);
    return;
  }
  using D = DualT<T, kTermSweep>;
  D* w = reinterpret_cast<D*>(scratch);
  D* reg = w + n;
  D* out = reg + tape.registers;
  for (int j = 0; j < n; ++j) w[j] = D(inputs[j] < nx ? x[inputs[j]] : u[inputs[j] - nx]);
  for (int j0 = 0; j0 < n; j0 += kTermSweep) {
    const int cols = n - j0 < kTermSweep ? n - j0 : kTermSweep;
    for (int k = 0; k < cols; ++k) w[j0 + k].d[k] = T(1.0);
    problems::evaluate<D>(tape, w, static_cast<const D*>(nullptr), reg, out);
    for (int k = 0; k < cols; ++k) {
      w[j0 + k].d[k] = T(0.0);
      for (int i = 0; i < m; ++i) J[i + std::size_t(j0 + k) * m] = out[i].d[k];
    }
  }
  for (int i = 0; i < m; ++i) r[i] = out[i].v;
}

// v into the (a, b) block of a Hessian split into Hxx, Huu and Hux (a, b: inputs; the state-control
// entry above the diagonal is Hux's transpose and not stored): expression_terms.cpp's add_split.
template <class T>
KNOT_HD void add_split(int nx, int nu, int a, int b, T v, T* Hxx, T* Huu, T* Hux) {
  if (a < nx && b < nx) {
    if (Hxx != nullptr) Hxx[a + std::size_t(b) * nx] += v;
  } else if (a >= nx && b >= nx) {
    if (Huu != nullptr) Huu[(a - nx) + std::size_t(b - nx) * nu] += v;
  } else if (a >= nx && b < nx) {
    if (Hux != nullptr) Hux[(a - nx) + std::size_t(b) * nu] += v;
  }
}

// A residual cost s/2 r'W r: its value, and with any block non-null s J'W r into (gx, gu) and the
// Gauss-Newton s J'W J into (Hxx, Huu, Hux): ResidualCost::value and ::accumulate.
template <class T>
KNOT_HD T residual_cost(const BatchProblem& P, const unsigned char* arena, const CostRecord& c, const double* w, T s,
                        const T* x_k, const T* u_k, T* gx, T* gu, T* Hxx, T* Huu, T* Hux, T* work) {
  const TermTape& tt = *arena_at<TermTape>(arena, c.tape);
  const problems::ExprTape tape = term_tape(arena, tt);
  const int m = tt.n_outputs, n = tt.n_inputs, nx = P.nx, nu = P.nu;
  const int* in = arena_at<int>(arena, tt.inputs);
  T* r = work;
  T* wr = r + m;
  T* wj = wr + m;
  T* zero = wj + m;
  T* J = zero + m;
  const bool derivatives = gx != nullptr || gu != nullptr || Hxx != nullptr || Huu != nullptr || Hux != nullptr;
  term_eval(tape, in, n, nx, x_k, u_k, r, derivatives ? J : nullptr, J + std::size_t(m) * n);
  for (int i = 0; i < m; ++i) zero[i] = T(0.0);
  if (derivatives) {
    apply(c.form, m, w, r, wr);
    for (int j = 0; j < n; ++j) {
      const T* jj = J + std::size_t(j) * m;
      T acc = T(0.0);
      for (int i = 0; i < m; ++i) acc += jj[i] * wr[i];
      if (in[j] < nx) {
        if (gx != nullptr) gx[in[j]] += s * acc;
      } else if (gu != nullptr) {
        gu[in[j] - nx] += s * acc;
      }
    }
    for (int b = 0; b < n; ++b) {
      apply(c.form, m, w, J + std::size_t(b) * m, wj);
      for (int a = 0; a < n; ++a) {
        const T* ja = J + std::size_t(a) * m;
        T acc = T(0.0);
        for (int i = 0; i < m; ++i) acc += ja[i] * wj[i];
        add_split(nx, nu, in[a], in[b], s * acc, Hxx, Huu, Hux);
      }
    }
  }
  return s * half_quadratic(c.form, m, w, r, zero);
}

// An expression constraint's rows sign (g_expr - bound) into g, and with jac non-null their
// Jacobian rows (width nx + nu, already zero) from J: ExpressionConstraint::jacobian.
template <class T>
KNOT_HD void expression_rows(const BatchProblem& P, const unsigned char* arena, const RowRecord& c, const T* x_k,
                             const T* u_k, T* g, T* jac, T* work) {
  const TermTape& tt = *arena_at<TermTape>(arena, c.tape);
  const problems::ExprTape tape = term_tape(arena, tt);
  const int m = tt.n_outputs, n = tt.n_inputs, nw = P.nx + P.nu;
  const int* in = arena_at<int>(arena, tt.inputs);
  const ExprRow* rows = arena_at<ExprRow>(arena, c.index);
  T* r = work;
  T* J = r + m;
  term_eval(tape, in, n, P.nx, x_k, u_k, r, jac != nullptr ? J : nullptr, J + std::size_t(m) * n);
  for (int k = 0; k < c.rows; ++k) g[k] = T(rows[k].sign) * (r[rows[k].expr] - T(rows[k].bound));
  if (jac == nullptr) return;
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < c.rows; ++k)
      jac[std::size_t(k) * nw + in[j]] = T(rows[k].sign) * J[rows[k].expr + std::size_t(j) * m];
}

}  // namespace detail

// ---- scratch sizes ------------------------------------------------------------------------------

// Scalars T that step and step_jacobian need.
template <class T = double>
KNOT_HD constexpr std::size_t step_work_size(const BatchProblem& P) {
  return detail::StepLayout::make<T>(P.nx, P.nu).total;
}
// Scalars T that knot_cost and knot_rows need: a reference row (nx or nu; T copies of the slice),
// the end-effector point, its Jacobian (3 x nx) and the robot workspace.
// Or an expression term's scratch (P.term_work), when larger.
template <class T = double>
KNOT_HD constexpr std::size_t knot_work_size(const BatchProblem& P) {
  const std::size_t fixed = detail::ref_scalars(P) + 3 * std::size_t(P.nx) + 12 + detail::robot_ws_scalars<T>();
  return fixed > P.term_work ? fixed : P.term_work;
}

// ---- evaluation ---------------------------------------------------------------------------------

// x_next = F(x, u) (the horizon's explicit scheme); work: step_work_size(P). x_next may alias x.
// false when the step is not finite.
template <class T>
KNOT_HD_NOINLINE bool step(const BatchProblem& P, const unsigned char* arena, const T* x, const T* u, T* x_next, T* work) {
  detail::StepFn<T> fn{&P, x, u, x_next, nullptr, nullptr, work};
  return detail::with_model(P, arena, fn);
}

// x_next, A = dF/dx (nx x nx) and B = dF/du (nx x nu), column-major: Integrator::step_jacobian.
template <class T>
KNOT_HD_NOINLINE bool step_jacobian(const BatchProblem& P, const unsigned char* arena, const T* x, const T* u, T* x_next, T* A,
                           T* B, T* work) {
  detail::StepFn<T> fn{&P, x, u, x_next, A, B, work};
  return detail::with_model(P, arena, fn);
}

// Knot k's cost sum_terms l_k(x_k, u_k) (each term's value added to 0 in problem order), adding each
// term's gradient and Gauss-Newton Hessian to gx (nx), gu (nu), Hxx (nx x nx), Huu (nu x nu) and
// Hux (nu x nx, a residual's cross term), as CostTerm::accumulate. u_k, gu, Huu, Hux are unused at
// k = N; any block may be null. work: knot_work_size(P).
template <class T>
KNOT_HD_NOINLINE T knot_cost(const BatchProblem& P, const unsigned char* arena, const double* slice, int k, const T* x_k,
                    const T* u_k, T* gx, T* gu, T* Hxx, T* Huu, T* Hux, T* work) {
  const CostRecord* rec = arena_at<CostRecord>(arena, P.costs);
  const int nx = P.nx;
  T* ref = work;
  T* pos = ref + detail::ref_scalars(P);
  T* J = pos + 3;
  T* rw = J + 3 * std::size_t(nx);  // r, W r, W J_b: 9
  T* ws = rw + 9;
  T cost = T(0.0);
  for (int t = 0; t < P.n_costs; ++t) {
    const CostRecord& c = rec[t];
    const bool uses_u = c.kind == CostKind::Control || c.uses_control;
    if (!stage_applies(c.stages, k, P.N) || (uses_u && k >= P.N)) continue;
    const double* w = arena_at<double>(arena, c.weight);
    const T s = c.scale_by_dt ? T(P.dt) : T(1.0);
    if (c.kind == CostKind::Residual) {
      cost += detail::residual_cost(P, arena, c, w, s, x_k, u_k, gx, gu, Hxx, Huu, Hux, work);
      continue;
    }
    const int row = k < c.ref_rows - 1 ? k : c.ref_rows - 1;
    detail::load(slice + c.ref + std::size_t(row) * c.dim, c.dim, ref);
    switch (c.kind) {
      case CostKind::State:
        if (gx != nullptr) detail::add_gradient(c.form, c.dim, w, x_k, ref, s, gx);
        if (Hxx != nullptr) detail::add_to(c.form, c.dim, w, s, Hxx);
        cost += s * detail::half_quadratic(c.form, c.dim, w, x_k, ref);
        break;
      case CostKind::Control:
        if (gu != nullptr) detail::add_gradient(c.form, c.dim, w, u_k, ref, s, gu);
        if (Huu != nullptr) detail::add_to(c.form, c.dim, w, s, Huu);
        cost += s * detail::half_quadratic(c.form, c.dim, w, u_k, ref);
        break;
      case CostKind::Residual:
        break;  // above
      case CostKind::EndEffector: {
        // Manipulator::frame_position, then EndEffectorCost::accumulate.
        const robot::RobotData& r = *arena_at<robot::RobotData>(arena, P.model_params);
        KNOT_ROBOT_WORKSPACE(T, wsp, ws);
        const T in_body[3] = {T(c.in_body[0]), T(c.in_body[1]), T(c.in_body[2])};
        robot::forward_kinematics(r, x_k, wsp);
        robot::point_position(wsp, c.body, in_body, pos);
        for (int e = 0; e < 3 * nx; ++e) J[e] = T(0.0);
        robot::point_jacobian(r, wsp, c.body, pos, J, 3);
        T* rr = rw;
        T* wr = rw + 3;
        T* wj = rw + 6;
        for (int a = 0; a < 3; ++a) rr[a] = pos[a] - ref[a];
        detail::apply(c.form, 3, w, rr, wr);
        if (gx != nullptr)
          for (int a = 0; a < nx; ++a) {
            const T* ja = J + 3 * std::size_t(a);
            gx[a] += s * (ja[0] * wr[0] + ja[1] * wr[1] + ja[2] * wr[2]);
          }
        if (Hxx != nullptr)
          for (int b = 0; b < nx; ++b) {
            detail::apply(c.form, 3, w, J + 3 * std::size_t(b), wj);
            for (int a = 0; a < nx; ++a) {
              const T* ja = J + 3 * std::size_t(a);
              Hxx[a + std::size_t(b) * nx] += s * (ja[0] * wj[0] + ja[1] * wj[1] + ja[2] * wj[2]);
            }
          }
        cost += s * detail::half_quadratic(c.form, 3, w, pos, ref);
        break;
      }
    }
  }
  return cost;
}

// An end-effector row set's rows from its bounds (lo, hi: three each): one code per finite bound,
// in EndEffectorBox's order (per axis the upper's row, +(a + 1): p_a - hi_a, then the lower's,
// -(a + 1): lo_a - p_a). Returns their number (at most 6).
KNOT_HD int end_effector_codes(const double* lo, const double* hi, int* codes) {
  int n = 0;
  for (int a = 0; a < 3; ++a) {
    if (detail::finite(hi[a])) codes[n++] = a + 1;
    if (detail::finite(lo[a])) codes[n++] = -(a + 1);
  }
  return n;
}

// The rows record c adds at a knot where it is active, with the bounds of this slice.
KNOT_HD int record_rows(const RowRecord& c, const double* slice) {
  if (c.kind != RowKind::ControlBox && c.kind != RowKind::StateBox && c.kind != RowKind::EndEffector) return c.rows;
  const int n = c.kind == RowKind::EndEffector ? 3 : c.count;
  int rows = 0;
  for (int i = 0; i < n; ++i)
    rows += (detail::finite(slice[c.upper + i]) ? 1 : 0) + (detail::finite(slice[c.lower + i]) ? 1 : 0);
  return rows;
}

// Writes the row layout of one kind (N + 2 values: knot k's first row at [k], the total at [N + 1])
// from the records and this slice's bounds: the active terms in problem order, as Solver's
// layout_rows counts ConstraintTerm::dim().
template <class V>
KNOT_HD void layout_rows(const BatchProblem& P, const unsigned char* arena, const double* slice, ConstraintSet kind,
                         V* offsets) {
  const bool ineq = kind == ConstraintSet::Inequality;
  const RowRecord* rec = arena_at<RowRecord>(arena, ineq ? P.ineq_terms : P.eq_terms);
  const int terms = ineq ? P.n_ineq_terms : P.n_eq_terms;
  int row = 0;
  offsets[0] = V(0);
  for (int k = 0; k <= P.N; ++k) {
    for (int t = 0; t < terms; ++t)
      if (stage_applies(rec[t].stages, k, P.N) && !(rec[t].uses_control && k >= P.N)) row += record_rows(rec[t], slice);
    offsets[k + 1] = V(row);
  }
}

// A kind's row offsets in a problem's slice (BatchProblem::ineq_layout, eq_layout).
struct RowOffsets {
  const double* v = nullptr;
  KNOT_HD int operator[](int k) const { return int(v[k]); }
};

KNOT_HD RowOffsets row_offsets(const BatchProblem& P, const double* slice, ConstraintSet kind) {
  return RowOffsets{slice + (kind == ConstraintSet::Inequality ? P.ineq_layout : P.eq_layout)};
}

// Rows of one kind at knot k, as the host Solver lays them out (evaluate_rows): the active terms in
// problem order, box rows per entry `v - hi` (finite hi) then `lo - v` (finite lo). g receives the
// knot's rows (row offset[k] onwards of the kind's values) and jac, when not null, their Jacobian
// rows [dg/dx, dg/du], row-major of width nx + nu (zeros where a term does not depend on a variable,
// and in the u columns at k = N). Returns the number of rows written. work: knot_work_size(P) (the
// expression constraints').
template <class T>
KNOT_HD_NOINLINE int knot_rows(const BatchProblem& P, const unsigned char* arena, const double* slice, ConstraintSet kind,
                      int k, const T* x_k, const T* u_k, T* g, T* jac, T* work) {
  const bool ineq = kind == ConstraintSet::Inequality;
  const RowRecord* rec = arena_at<RowRecord>(arena, ineq ? P.ineq_terms : P.eq_terms);
  const int terms = ineq ? P.n_ineq_terms : P.n_eq_terms;
  const int nx = P.nx, nw = P.nx + P.nu;
  int row = 0;
  for (int t = 0; t < terms; ++t) {
    const RowRecord& c = rec[t];
    if (!stage_applies(c.stages, k, P.N) || (c.uses_control && k >= P.N)) continue;
    const int* index = arena_at<int>(arena, c.index);
    const double* lo = slice + c.lower;
    const double* hi = slice + c.upper;
    const int rows = record_rows(c, slice);
    if (jac != nullptr)
      for (std::size_t e = std::size_t(row) * nw; e < std::size_t(row + rows) * nw; ++e) jac[e] = T(0.0);
    if (c.kind == RowKind::Expression) {
      detail::expression_rows(P, arena, c, x_k, u_k, g + row, jac != nullptr ? jac + std::size_t(row) * nw : nullptr,
                              work);
      row += rows;
      continue;
    }
    if (c.kind == RowKind::EndEffector) {  // Manipulator::frame_position, then EndEffectorBox::jacobian
      const robot::RobotData& rd = *arena_at<robot::RobotData>(arena, P.model_params);
      T* pos = work + detail::ref_scalars(P);
      T* J = pos + 3;
      T* ws = J + 3 * std::size_t(nx) + 9;
      KNOT_ROBOT_WORKSPACE(T, wsp, ws);
      const T in_body[3] = {T(c.in_body[0]), T(c.in_body[1]), T(c.in_body[2])};
      robot::forward_kinematics(rd, x_k, wsp);
      robot::point_position(wsp, c.body, in_body, pos);
      if (jac != nullptr) {
        for (int e = 0; e < 3 * nx; ++e) J[e] = T(0.0);
        robot::point_jacobian(rd, wsp, c.body, pos, J, 3);
      }
      int codes[6];
      end_effector_codes(lo, hi, codes);
      for (int rr = 0; rr < rows; ++rr) {
        const int code = codes[rr], a = (code > 0 ? code : -code) - 1;
        g[row + rr] = code > 0 ? pos[a] - T(hi[a]) : T(lo[a]) - pos[a];
        if (jac != nullptr) {
          const T sign = T(code > 0 ? 1.0 : -1.0);
          for (int j = 0; j < nx; ++j) jac[std::size_t(row + rr) * nw + j] = sign * J[a + 3 * std::size_t(j)];
        }
      }
      row += rows;
      continue;
    }
    if (c.kind == RowKind::CircleObstacle) {  // CircleObstacle::jacobian's arithmetic
      const T dx = x_k[index[0]] - T(lo[0]), dy = x_k[index[1]] - T(lo[1]);
      const T r = T(hi[0]);
      g[row] = r * r - (dx * dx + dy * dy);
      if (jac != nullptr) {
        jac[std::size_t(row) * nw + index[0]] = T(-2.0) * dx;
        jac[std::size_t(row) * nw + index[1]] = T(-2.0) * dy;
      }
      row += rows;
      continue;
    }
    const T* v = c.kind == RowKind::ControlBox ? u_k : x_k;
    const int col0 = c.kind == RowKind::ControlBox ? nx : 0;
    int r = row;
    for (int i = 0; i < c.count; ++i) {
      const int e = index[i];
      if (c.kind == RowKind::StateEquality) {
        g[r] = v[e] - T(lo[i]);
        if (jac != nullptr) jac[std::size_t(r) * nw + col0 + e] = T(1.0);
        ++r;
        continue;
      }
      if (detail::finite(hi[i])) {
        g[r] = v[e] - T(hi[i]);
        if (jac != nullptr) jac[std::size_t(r) * nw + col0 + e] = T(1.0);
        ++r;
      }
      if (detail::finite(lo[i])) {
        g[r] = T(lo[i]) - v[e];
        if (jac != nullptr) jac[std::size_t(r) * nw + col0 + e] = T(-1.0);
        ++r;
      }
    }
    row += rows;
  }
  return row;
}

}  // namespace knot::solver::device

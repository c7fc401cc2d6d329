// compile_batch_problem: a Problem's virtual model and terms as the flat records of
// device/problem.hpp, and the writers of a problem's slice.
#include "knot/solver/device/problem.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/expression.hpp"
#include "knot/problems/expression_terms.hpp"
#include "knot/problems/model_adapter.hpp"
#include "knot/problems/models/manipulator.hpp"
#include "knot/problems/problem.hpp"

namespace knot::solver::device {
namespace {

// Bytes appended 8-aligned (every record and model struct has alignment <= 8).
struct ArenaWriter {
  std::vector<unsigned char> bytes;
  std::size_t put(const void* data, std::size_t size) {
    bytes.resize((bytes.size() + 7) / 8 * 8);
    const std::size_t at = bytes.size();
    bytes.resize(at + size);
    if (size > 0) std::memcpy(bytes.data() + at, data, size);
    return at;
  }
  template <class R>
  std::size_t put_array(const std::vector<R>& v) {
    static_assert(std::is_trivially_copyable_v<R> && alignof(R) <= 8);
    return put(v.data(), v.size() * sizeof(R));
  }
};

struct Unsupported {
  std::string key, sentence, found;
};

std::string term_label(const char* what, const std::string& name, std::string_view type) {
  return std::string(what) + " '" + name + "' (" + std::string(type) + ")";
}

Stages stages_of(problems::StageSet s) {
  switch (s) {
    case problems::StageSet::All:
      return Stages::All;
    case problems::StageSet::Running:
      return Stages::Running;
    case problems::StageSet::Terminal:
      return Stages::Terminal;
  }
  return Stages::All;
}

WeightForm form_of(problems::Weight::Form f) {
  switch (f) {
    case problems::Weight::Form::Scalar:
      return WeightForm::Scalar;
    case problems::Weight::Form::Diagonal:
      return WeightForm::Diagonal;
    case problems::Weight::Form::Dense:
      return WeightForm::Dense;
  }
  return WeightForm::Dense;
}

// The model struct's bytes and kind, when the model is one of the device path's.
struct ModelBlock {
  ModelKind kind;
  std::vector<unsigned char> bytes;
  const problems::models::Linear* linear = nullptr;
  const problems::Manipulator* manipulator = nullptr;
  const problems::ExpressionDynamics* expression = nullptr;
};

template <class M>
bool try_adapted(const problems::Model& m, ModelKind kind, std::optional<ModelBlock>& out) {
  const auto* a = dynamic_cast<const problems::ModelAdapter<M>*>(&m);
  if (a == nullptr) return false;
  static_assert(std::is_trivially_copyable_v<M>);
  ModelBlock b{kind, std::vector<unsigned char>(sizeof(M)), nullptr, nullptr, nullptr};
  if constexpr (std::is_same_v<M, problems::ExpressionDynamics>) {
    // The arena's copy points at nothing: with_model rebuilds the tape view over the arena's arrays.
    M copy = a->model();
    copy.tape.code = nullptr;
    copy.tape.outputs = nullptr;
    copy.info = nullptr;
    std::memcpy(b.bytes.data(), &copy, sizeof(M));
    b.expression = &a->model();
  } else {
    std::memcpy(b.bytes.data(), &a->model(), sizeof(M));
  }
  if constexpr (std::is_same_v<M, problems::models::Linear>) b.linear = &a->model();
  out = std::move(b);
  return true;
}

std::optional<ModelBlock> model_block(const problems::Model& m) {
  namespace pm = problems::models;
  std::optional<ModelBlock> b;
  if (try_adapted<pm::DoubleIntegrator>(m, ModelKind::DoubleIntegrator, b) ||
      try_adapted<pm::Pendulum>(m, ModelKind::Pendulum, b) || try_adapted<pm::Cartpole>(m, ModelKind::Cartpole, b) ||
      try_adapted<pm::Acrobot>(m, ModelKind::Acrobot, b) || try_adapted<pm::Quadrotor>(m, ModelKind::Quadrotor, b) ||
      try_adapted<pm::Unicycle>(m, ModelKind::Unicycle, b) || try_adapted<pm::Car>(m, ModelKind::Car, b) ||
      try_adapted<pm::ChainOfMasses>(m, ModelKind::ChainOfMasses, b) ||
      try_adapted<pm::Linear>(m, ModelKind::Linear, b) ||
      try_adapted<problems::ExpressionDynamics>(m, ModelKind::Expression, b))
    return b;
  if (const auto* man = dynamic_cast<const problems::Manipulator*>(&m)) {
    static_assert(std::is_trivially_copyable_v<problems::robot::RobotData>);
    ModelBlock mb{ModelKind::Manipulator, std::vector<unsigned char>(sizeof(problems::robot::RobotData)), nullptr, man,
                  nullptr};
    std::memcpy(mb.bytes.data(), &man->robot().data, sizeof(problems::robot::RobotData));
    return mb;
  }
  return std::nullopt;
}

// The first thing p's device path cannot run, in the order model, integrator, costs, constraints.
std::optional<Unsupported> first_unsupported(const problems::Problem& p) {
  if (!p.model) return Unsupported{"model", "the problem has no model", "no model"};
  if (!model_block(*p.model)) {
    const std::string label = "model '" + std::string(p.model->type()) + "'";
    return Unsupported{"model.type", label + " has no device path yet", label};
  }
  const problems::IntegratorType it = p.horizon.integrator;
  if (!p.model->discrete_time() &&
      (it == problems::IntegratorType::ImplicitEuler || it == problems::IntegratorType::ImplicitMidpoint)) {
    const std::string label = "integrator '" + std::string(problems::to_string(it)) + "'";
    return Unsupported{"horizon.integrator", label + " has no device path yet (explicit schemes only)", label};
  }
  if (it == problems::IntegratorType::SemiImplicitEuler && !p.model->discrete_time() &&
      (p.model->nq() <= 0 || p.model->nq() >= p.model->nx())) {
    const std::string label = "integrator 'semi_implicit_euler' on model '" + std::string(p.model->type()) + "'";
    return Unsupported{"horizon.integrator", label + " needs a position/velocity split", label};
  }
  for (std::size_t i = 0; i < p.costs.size(); ++i) {
    const problems::CostTerm& c = *p.costs[i];
    const bool ok = c.type() == "state" || c.type() == "control" ||
                    (c.type() == "end_effector" && p.model->type() == "manipulator" &&
                     dynamic_cast<const problems::EndEffectorCost*>(&c) != nullptr) ||
                    dynamic_cast<const problems::ResidualCost*>(&c) != nullptr;
    if (!ok) {
      const std::string label = term_label("cost", c.info().name, c.type());
      return Unsupported{"costs[" + std::to_string(i) + "]", label + " has no device path yet", label};
    }
  }
  for (std::size_t i = 0; i < p.constraints.size(); ++i) {
    const problems::ConstraintTerm& c = *p.constraints[i];
    const bool ok = (c.type() == "control_box" || c.type() == "state_box") && c.box() != nullptr;
    const bool eq = c.type() == "state_equality" && dynamic_cast<const problems::StateEquality*>(&c) != nullptr;
    const bool expr = dynamic_cast<const problems::ExpressionConstraint*>(&c) != nullptr;
    const bool circle = dynamic_cast<const problems::CircleObstacle*>(&c) != nullptr;
    const bool ee = p.model->type() == "manipulator" && (dynamic_cast<const problems::EndEffectorHeight*>(&c) != nullptr ||
                                                         dynamic_cast<const problems::EndEffectorBox*>(&c) != nullptr);
    if (!ok && !eq && !expr && !circle && !ee) {
      const std::string label = term_label("constraint", c.info().name, c.type());
      return Unsupported{"constraints[" + std::to_string(i) + "]", label + " has no device path yet", label};
    }
  }
  return std::nullopt;
}

// An expression term's tape into the arena; returns its TermTape's offset and raises term_work.
std::size_t put_term_tape(ArenaWriter& arena, const problems::TermExpressions& e, std::size_t& term_work) {
  const problems::ExprTape& t = e.tape();
  TermTape r;
  r.code = arena.put(t.code, sizeof(problems::ExprInstr) * std::size_t(t.size));
  r.outputs = arena.put(t.outputs, sizeof(std::uint8_t) * std::size_t(t.n_outputs));
  r.inputs = arena.put_array(e.inputs());
  r.size = t.size;
  r.n_outputs = t.n_outputs;
  r.registers = t.registers;
  r.loads = t.loads;
  r.n_inputs = int(e.inputs().size());
  const std::size_t need = detail::term_work_scalars(r.n_outputs, r.n_inputs, r.registers);
  if (need > term_work) term_work = need;
  return arena.put(&r, sizeof r);
}

}  // namespace

std::string device_path_unsupported(const problems::Problem& p) {
  const std::optional<Unsupported> u = first_unsupported(p);
  return u ? u->sentence : std::string();
}

BatchProblemData compile_batch_problem(const problems::Problem& p) {
  if (const std::optional<Unsupported> u = first_unsupported(p))
    throw problems::ProblemError(problems::SourceLocation{p.source, 0, 0}, u->key,
                                 "a model, integrator and terms the device path can run", u->found +
                                     ", which has no device path yet",
                                 "the batch falls back to the host Solver");
  const problems::Model& model = *p.model;
  const ModelBlock mb = *model_block(model);
  const int nx = model.nx(), nu = model.nu(), N = p.horizon.N;
  if (p.x0.size() != static_cast<std::size_t>(nx))
    throw problems::ProblemError(problems::SourceLocation{p.source, 0, 0}, "x0", std::to_string(nx) + " values",
                                 std::to_string(p.x0.size()));

  BatchProblemData d;
  BatchProblem& P = d.problem;
  ArenaWriter arena;
  std::vector<double>& slice = d.slice;
  const auto slice_put = [&slice](const double* v, std::size_t n) {
    const std::size_t at = slice.size();
    slice.insert(slice.end(), v, v + n);
    return at;
  };

  P.nx = nx;
  P.nu = nu;
  P.N = N;
  P.nq = model.nq();
  P.dt = p.horizon.dt;
  P.integrator = p.horizon.integrator;
  P.model = mb.kind;
  P.discrete = model.discrete_time() ? 1 : 0;
  P.velocity_rows = model.velocity_rows() ? 1 : 0;
  P.model_params = arena.put(mb.bytes.data(), mb.bytes.size());
  if (mb.linear != nullptr) {
    const auto& lp = mb.linear->params;
    P.linear_A = arena.put(lp.A, sizeof(double) * std::size_t(nx) * nx);
    P.linear_B = arena.put(lp.B, sizeof(double) * std::size_t(nx) * nu);
    P.has_linear_c = lp.c != nullptr ? 1 : 0;
    if (lp.c != nullptr) P.linear_c = arena.put(lp.c, sizeof(double) * std::size_t(nx));
  }
  if (mb.expression != nullptr) {
    const problems::ExprTape& t = mb.expression->tape;
    static_assert(std::is_trivially_copyable_v<problems::ExprInstr> && alignof(problems::ExprInstr) <= 8);
    P.expr_code = arena.put(t.code, sizeof(problems::ExprInstr) * std::size_t(t.size));
    P.expr_outputs = arena.put(t.outputs, sizeof(std::uint8_t) * std::size_t(t.n_outputs));
  }
  P.x0 = slice_put(p.x0.data(), p.x0.size());

  // Costs, in problem order.
  std::vector<CostRecord> costs;
  for (const auto& cp : p.costs) {
    const problems::CostTerm& c = *cp;
    CostRecord r;
    const auto* residual = dynamic_cast<const problems::ResidualCost*>(&c);
    r.kind = residual != nullptr     ? CostKind::Residual
             : c.type() == "state"   ? CostKind::State
             : c.type() == "control" ? CostKind::Control
                                     : CostKind::EndEffector;
    r.stages = stages_of(c.info().stages);
    r.scale_by_dt = c.info().scale_by_dt ? 1 : 0;
    const problems::Weight& w = *c.weight();
    r.dim = w.dim();
    r.form = form_of(w.form());
    r.weight = arena.put(w.values().data(), sizeof(double) * w.values().size());
    if (residual != nullptr) {
      r.uses_control = residual->uses_control() ? 1 : 0;
      r.tape = put_term_tape(arena, residual->expressions(), P.term_work);
    } else {
      const problems::Reference& ref = *c.reference();
      r.ref_rows = ref.rows();
      r.ref = slice_put(ref.values.data(), ref.values.size());
    }
    if (r.kind == CostKind::EndEffector) {
      const auto& ee = dynamic_cast<const problems::EndEffectorCost&>(c);
      const problems::robot::Frame& f = mb.manipulator->robot().frames.at(static_cast<std::size_t>(ee.frame()));
      const std::array<double, 3>& off = ee.offset();
      r.body = f.body;
      // Manipulator::frame_position's point in body coordinates, the same double arithmetic.
      for (int k = 0; k < 3; ++k) r.in_body[k] = f.p[k] + f.R[k] * off[0] + f.R[k + 3] * off[1] + f.R[k + 6] * off[2];
    }
    costs.push_back(r);
    d.cost_names.push_back(c.info().name);
  }
  P.n_costs = static_cast<int>(costs.size());
  P.costs = arena.put_array(costs);

  // Constraint records by kind, problem order within each, and the row offsets (layout_rows).
  std::vector<RowRecord> ineq, eq;
  std::vector<const problems::ConstraintTerm*> ineq_terms, eq_terms;
  for (const auto& cp : p.constraints) {
    const problems::ConstraintTerm& c = *cp;
    RowRecord r;
    r.stages = stages_of(c.info().stages);
    r.uses_control = c.uses_control() ? 1 : 0;
    r.rows = c.dim();  // boxes and end-effector row sets: their most, below
    std::vector<int> index;
    if (const auto* ec = dynamic_cast<const problems::ExpressionConstraint*>(&c)) {
      r.kind = RowKind::Expression;
      r.tape = put_term_tape(arena, ec->expressions(), P.term_work);
      std::vector<ExprRow> rows;
      for (const problems::ExpressionConstraint::Row& row : ec->rows()) rows.push_back({row.expr, row.sign, row.bound});
      r.count = static_cast<int>(rows.size());
      r.index = arena.put_array(rows);
    } else if (dynamic_cast<const problems::EndEffectorHeight*>(&c) != nullptr ||
               dynamic_cast<const problems::EndEffectorBox*>(&c) != nullptr) {
      // Manipulator::frame_position's point in body coordinates, the same double arithmetic; the
      // height is the box's one row z_min - p_z.
      const double inf = std::numeric_limits<double>::infinity();
      std::array<double, 3> lower = {-inf, -inf, -inf}, upper = {inf, inf, inf}, off;
      if (const auto* h = dynamic_cast<const problems::EndEffectorHeight*>(&c)) {
        off = h->offset();
        lower[2] = h->z_min();
        r.rows = 1;
      } else {
        const auto& b = dynamic_cast<const problems::EndEffectorBox&>(c);
        off = b.offset();
        lower = b.lower();
        upper = b.upper();
        r.rows = 6;
      }
      const problems::robot::Frame& f = mb.manipulator->robot().frames.at(static_cast<std::size_t>(c.frame()));
      r.kind = RowKind::EndEffector;
      r.body = f.body;
      for (int k = 0; k < 3; ++k) r.in_body[k] = f.p[k] + f.R[k] * off[0] + f.R[k + 3] * off[1] + f.R[k + 6] * off[2];
      r.lower = slice_put(lower.data(), 3);
      r.upper = slice_put(upper.data(), 3);
    } else if (const auto* co = dynamic_cast<const problems::CircleObstacle*>(&c)) {
      r.kind = RowKind::CircleObstacle;
      index.assign(co->planar_index().begin(), co->planar_index().end());
      r.lower = slice_put(co->center().data(), 2);
      const double radius = co->radius();
      r.upper = slice_put(&radius, 1);
    } else if (const auto* se = dynamic_cast<const problems::StateEquality*>(&c)) {
      r.kind = RowKind::StateEquality;
      index = se->index();
      r.lower = slice_put(se->target().data(), se->target().size());
      r.upper = r.lower;
    } else {
      const problems::BoxBounds& b = *c.box();
      r.kind = b.on_control ? RowKind::ControlBox : RowKind::StateBox;
      index = b.index;
      r.rows = 2 * static_cast<int>(b.index.size());
      r.lower = slice_put(b.lower.data(), b.lower.size());
      r.upper = slice_put(b.upper.data(), b.upper.size());
    }
    if (r.kind != RowKind::Expression) {
      r.count = static_cast<int>(index.size());
      r.index = arena.put_array(index);
    }
    const bool is_eq = c.kind() == problems::ConstraintKind::Equality;
    (is_eq ? eq : ineq).push_back(r);
    (is_eq ? eq_terms : ineq_terms).push_back(&c);
    (is_eq ? d.eq_names : d.ineq_names).push_back(c.info().name);
  }
  // Rows at most (every bound finite: the arrays' sizes) and the problem's own layout in the slice,
  // which must be the host terms' (Solver's layout_rows: ConstraintTerm::dim() of the active terms).
  const auto most_rows = [N](const std::vector<RowRecord>& records) {
    int m = 0;
    for (int k = 0; k <= N; ++k)
      for (const RowRecord& r : records)
        if (stage_applies(r.stages, k, N) && !(r.uses_control && k >= N)) m += r.rows;
    return m;
  };
  P.n_ineq_terms = static_cast<int>(ineq.size());
  P.n_eq_terms = static_cast<int>(eq.size());
  P.ineq_terms = arena.put_array(ineq);
  P.eq_terms = arena.put_array(eq);
  P.n_ineq = most_rows(ineq);
  P.n_eq = most_rows(eq);
  const std::vector<double> zeros(static_cast<std::size_t>(N) + 2, 0.0);
  P.ineq_layout = slice_put(zeros.data(), zeros.size());
  P.eq_layout = slice_put(zeros.data(), zeros.size());
  arena.bytes.resize((arena.bytes.size() + 7) / 8 * 8);
  for (const ConstraintSet kind : {ConstraintSet::Inequality, ConstraintSet::Equality}) {
    const bool is_ineq = kind == ConstraintSet::Inequality;
    double* layout = slice.data() + (is_ineq ? P.ineq_layout : P.eq_layout);
    layout_rows(P, arena.bytes.data(), slice.data(), kind, layout);
    int row = 0;
    for (int k = 0; k <= N; ++k) {
      for (const auto* t : is_ineq ? ineq_terms : eq_terms)
        if (t->active(k, N)) row += t->dim();
      if (layout[k + 1] != double(row))
        throw std::logic_error("compile_batch_problem: the device rows of knot " + std::to_string(k) +
                               " differ from the host terms' (" + std::to_string(row) + ")");
    }
  }
  P.arena_bytes = arena.bytes.size();
  P.slice_size = slice.size();
  d.arena = std::move(arena.bytes);
  static_assert(std::is_trivially_copyable_v<BatchProblem>);
  return d;
}

namespace {

int find_name(const std::vector<std::string>& names, std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

void check_slice(const BatchProblemData& d, const double* slice, const char* who) {
  if (slice == nullptr) throw std::invalid_argument(std::string(who) + ": the slice is null");
  (void)d;
}

}  // namespace

void set_slice_initial_state(const BatchProblemData& d, double* slice, std::span<const double> x0) {
  check_slice(d, slice, "set_slice_initial_state");
  if (x0.size() != static_cast<std::size_t>(d.problem.nx))
    throw std::invalid_argument("set_slice_initial_state: expected " + std::to_string(d.problem.nx) +
                                " values, found " + std::to_string(x0.size()));
  std::copy(x0.begin(), x0.end(), slice + d.problem.x0);
}

void set_slice_reference(const BatchProblemData& d, double* slice, std::string_view cost,
                         std::span<const double> ref) {
  check_slice(d, slice, "set_slice_reference");
  const int i = find_name(d.cost_names, cost);
  if (i < 0) throw std::invalid_argument("set_slice_reference: no cost named '" + std::string(cost) + "'");
  const CostRecord& r = arena_at<CostRecord>(d.arena.data(), d.problem.costs)[i];
  const std::size_t dim = static_cast<std::size_t>(r.dim), rows = static_cast<std::size_t>(r.ref_rows);
  if (ref.size() != dim && ref.size() != dim * rows)
    throw std::invalid_argument("set_slice_reference: cost '" + std::string(cost) + "' expects " + std::to_string(dim) +
                                " or " + std::to_string(dim * rows) + " values, found " + std::to_string(ref.size()));
  for (std::size_t row = 0; row < rows; ++row)
    for (std::size_t j = 0; j < dim; ++j)
      slice[r.ref + row * dim + j] = ref[ref.size() == dim ? j : row * dim + j];
}

void set_slice_obstacle(const BatchProblemData& d, double* slice, std::string_view constraint,
                        std::array<double, 2> center, double radius) {
  check_slice(d, slice, "set_slice_obstacle");
  const int i = find_name(d.ineq_names, constraint);
  const RowRecord* r = i < 0 ? nullptr : arena_at<RowRecord>(d.arena.data(), d.problem.ineq_terms) + i;
  if (r == nullptr || r->kind != RowKind::CircleObstacle)
    throw std::invalid_argument("set_slice_obstacle: no circle_obstacle named '" + std::string(constraint) + "'");
  if (std::string why = problems::CircleObstacle::geometry_error(center, radius); !why.empty())
    throw std::invalid_argument("set_slice_obstacle: circle_obstacle '" + std::string(constraint) + "': " + why);
  slice[r->lower] = center[0];
  slice[r->lower + 1] = center[1];
  slice[r->upper] = radius;
}

void set_slice_bounds(const BatchProblemData& d, double* slice, std::string_view constraint,
                      std::span<const double> lower, std::span<const double> upper) {
  check_slice(d, slice, "set_slice_bounds");
  const int i = find_name(d.ineq_names, constraint);
  const RowRecord* r = i < 0 ? nullptr : arena_at<RowRecord>(d.arena.data(), d.problem.ineq_terms) + i;
  if (r == nullptr ||
      (r->kind != RowKind::ControlBox && r->kind != RowKind::StateBox && r->kind != RowKind::EndEffector))
    throw std::invalid_argument("set_slice_bounds: no control_box, state_box or end-effector constraint named '" +
                                std::string(constraint) + "'");
  // An end-effector term's bounds are the point's x, y, z ones (a height: z from below alone).
  const std::size_t n = r->kind == RowKind::EndEffector ? 3 : static_cast<std::size_t>(r->count);
  if (std::string why = problems::bounds_error(lower, upper, n); !why.empty())
    throw std::invalid_argument("set_slice_bounds: constraint '" + std::string(constraint) + "': " + why);
  const bool height = r->kind == RowKind::EndEffector && r->rows == 1;  // its one row stays
  if (height && (std::isfinite(upper[0]) || std::isfinite(upper[1]) || std::isfinite(upper[2]) ||
                 std::isfinite(lower[0]) || std::isfinite(lower[1]) || !std::isfinite(lower[2])))
    throw std::invalid_argument("set_slice_bounds: constraint '" + std::string(constraint) + "' (end_effector_height) "
                                "bounds z from below alone; expected a finite lower z and the others infinite");
  std::copy(lower.begin(), lower.end(), slice + r->lower);
  std::copy(upper.begin(), upper.end(), slice + r->upper);
  layout_rows(d.problem, d.arena.data(), slice, ConstraintSet::Inequality, slice + d.problem.ineq_layout);
}

std::vector<unsigned char> recompiled_arena(const problems::Problem& p, const BatchProblem& layout) {
  BatchProblemData d = compile_batch_problem(p);
  if (!same_layout(d.problem, layout))
    throw std::invalid_argument("expected a model compiled to the problem's layout (" +
                                std::to_string(layout.arena_bytes) + " arena bytes), found another (" +
                                std::to_string(d.problem.arena_bytes) +
                                "): an expression model whose parameters fold its tape to another length");
  return std::move(d.arena);
}

bool same_layout(const BatchProblem& a, const BatchProblem& b) {
  const auto fields = [](const BatchProblem& p) {
    return std::tuple(p.nx, p.nu, p.N, p.nq, p.dt, p.integrator, p.model, p.discrete, p.velocity_rows, p.model_params,
                      p.linear_A, p.linear_B, p.linear_c, p.has_linear_c, p.expr_code, p.expr_outputs, p.costs,
                      p.n_costs, p.ineq_terms, p.eq_terms, p.n_ineq_terms, p.n_eq_terms, p.ineq_layout, p.eq_layout,
                      p.n_ineq, p.n_eq, p.term_work, p.arena_bytes, p.slice_size, p.x0);
  };
  return fields(a) == fields(b);
}

}  // namespace knot::solver::device

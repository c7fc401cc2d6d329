// knot._knot: the nanobind bindings of the loader, the SQP Solver and the closed loop (docs/python.md).
// One translation unit, so the package adds one compile to a build. knot/__init__.py adds what is
// plain Python (load()'s dict of overrides).
//
// Lifetimes: arrays returned by Solution view the Solver's memory and hold a reference to the Python
// Solver, so they stay valid (and keep changing with every solve) as long as they are alive. Records
// and statistics are copies. The GIL is released inside solve(), step(), the closed loop's run() and
// step(); the iteration callback takes it back for the Python call.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine_capsule.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/problems/problem.hpp"
#include "knot/problems/registry.hpp"
#include "knot/solver/batch.hpp"
#include "knot/solver/closed_loop.hpp"
#include "knot/solver/options.hpp"
#include "knot/solver/solver.hpp"
#include "knot/solver/stats.hpp"
#include "knot/solver/status.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace knot::python {
namespace {

using problems::Problem;
using solver::SolverOptions;
using solver::Status;

// ---- numpy in and out

using Matrix = nb::ndarray<nb::numpy, const double, nb::ndim<2>, nb::c_contig>;
using Vector = nb::ndarray<nb::numpy, const double, nb::ndim<1>, nb::c_contig>;

std::string shape_text(const std::vector<long>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// `obj` as float64 values of exactly `shape` (a copy only where numpy needs one to convert). A wrong
// dtype or shape is a ValueError naming what was expected and what was found.
struct FloatArray {
  nb::object keep;  // the converted array the pointer reads
  const double* data = nullptr;
  std::size_t size = 0;
};

FloatArray as_float_array(nb::handle obj, const std::string& what, const std::vector<long>& shape) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::object arr = np.attr("asarray")(obj);
  const std::string kind = nb::cast<std::string>(arr.attr("dtype").attr("kind"));
  if (kind != "f" && kind != "i" && kind != "u")
    throw nb::value_error((what + ": expected real numbers (float64) of shape " + shape_text(shape) + ", found dtype " +
                           nb::cast<std::string>(arr.attr("dtype").attr("name")))
                              .c_str());
  std::vector<long> found;
  for (nb::handle d : nb::cast<nb::tuple>(arr.attr("shape"))) found.push_back(nb::cast<long>(d));
  if (found != shape)
    throw nb::value_error((what + ": expected shape " + shape_text(shape) + ", found " + shape_text(found)).c_str());
  FloatArray out;
  out.keep = np.attr("ascontiguousarray")(arr, "dtype"_a = np.attr("float64"));
  auto view = nb::cast<nb::ndarray<const double, nb::c_contig, nb::device::cpu>>(out.keep);
  out.data = view.data();
  out.size = view.size();
  return out;
}

// A numpy array owning a copy of `values`.
nb::object copy_array(const double* values, std::initializer_list<std::size_t> shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  auto* copy = new double[n > 0 ? n : 1];
  std::copy(values, values + n, copy);
  nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<double*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, double>(copy, shape, owner));
}

nb::object copy_vector(const std::vector<double>& v) { return copy_array(v.data(), {v.size()}); }

nb::object simple_namespace(nb::dict fields) { return nb::module_::import_("types").attr("SimpleNamespace")(**fields); }

// ---- options: every SolverOptions field as a keyword, by one table

double to_double(nb::handle v, const char* name) {
  if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr())))
    throw nb::type_error(
        (std::string(name) + " must be a number, found " + std::string(Py_TYPE(v.ptr())->tp_name)).c_str());
  const double x = PyFloat_AsDouble(v.ptr());
  if (x == -1.0 && PyErr_Occurred()) throw nb::python_error();
  return x;
}

int to_int(nb::handle v, const char* name) {
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr()))
    throw nb::type_error(
        (std::string(name) + " must be an int, found " + std::string(Py_TYPE(v.ptr())->tp_name)).c_str());
  const long x = PyLong_AsLong(nb::steal(PyNumber_Index(v.ptr())).ptr());
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    throw nb::value_error((std::string(name) + " is out of range, found " + std::to_string(x)).c_str());
  return static_cast<int>(x);
}

bool to_bool(nb::handle v, const char* name) {
  if (!PyBool_Check(v.ptr()))
    throw nb::type_error(
        (std::string(name) + " must be a bool, found " + std::string(Py_TYPE(v.ptr())->tp_name)).c_str());
  return v.ptr() == Py_True;
}

// A choice among names: the enum's to_string spelling, as the problem file writes it.
template <typename E, std::size_t K>
E to_choice(nb::handle v, const char* name, const std::array<E, K>& values) {
  std::string choices;
  for (E e : values) choices += (choices.empty() ? "" : ", ") + std::string(solver::to_string(e));
  if (!nb::isinstance<nb::str>(v))
    throw nb::type_error((std::string(name) + " must be a str (one of " + choices + ")").c_str());
  const std::string s = nb::cast<std::string>(v);
  for (E e : values)
    if (s == solver::to_string(e)) return e;
  throw nb::value_error((std::string(name) + " must be one of " + choices + ", found '" + s + "'").c_str());
}

constexpr std::array kLinsys{solver::Linsys::Auto, solver::Linsys::Riccati, solver::Linsys::Bdsv, solver::Linsys::Pcg,
                             solver::Linsys::KktLdlt};
constexpr std::array kHessian{solver::Hessian::GaussNewton, solver::Hessian::Exact, solver::Hessian::Auto};
constexpr std::array kGlobalization{solver::Globalization::Filter, solver::Globalization::Merit,
                                    solver::Globalization::None};
constexpr std::array kPreconditioner{solver::Preconditioner::Stair, solver::Preconditioner::BlockJacobi};

struct OptionField {
  const char* name;
  void (*set)(SolverOptions&, nb::handle);
  nb::object (*get)(const SolverOptions&);
};

#define KNOT_OPT(name, member, conv)                                                                          \
  OptionField {                                                                                               \
#name, [](SolverOptions & o,                                                                              \
              nb::handle v) { o.member = conv(v, #name); }, [](const SolverOptions& o)                        \
                                                                 -> nb::object { return nb::cast(o.member); } \
  }
#define KNOT_OPT_CHOICE(name, member, values)                                                       \
  OptionField {                                                                                     \
#name, [](SolverOptions& o, nb::handle v) { o.member = to_choice(v, #name, values); },            \
        [](const SolverOptions& o) -> nb::object { return nb::str(solver::to_string(o.member)); } \
  }

const std::array kOptionFields{
    KNOT_OPT(max_iter, max_iter, to_int),
    KNOT_OPT(time_limit, time_limit, to_double),
    KNOT_OPT(tol_stationarity, tol_stationarity, to_double),
    KNOT_OPT(tol_feasibility, tol_feasibility, to_double),
    KNOT_OPT(tol_complementarity, tol_complementarity, to_double),
    KNOT_OPT(tol_duality_gap, tol_duality_gap, to_double),
    KNOT_OPT(scale_max, scale_max, to_double),
    KNOT_OPT(objective_scale_min, objective_scale_min, to_double),
    KNOT_OPT(objective_scale_max, objective_scale_max, to_double),
    KNOT_OPT(objective_scale_target, objective_scale_target, to_double),
    KNOT_OPT(acceptable_tol, acceptable_tol, to_double),
    KNOT_OPT(acceptable_iter, acceptable_iter, to_int),
    KNOT_OPT(real_time_iteration, real_time_iteration, to_bool),
    KNOT_OPT_CHOICE(linsys, lq.linsys, kLinsys),
    KNOT_OPT_CHOICE(preconditioner, lq.preconditioner, kPreconditioner),
    KNOT_OPT(pcg_rel_tol, lq.pcg_rel_tol, to_double),
    KNOT_OPT(pcg_max_iters, lq.pcg_max_iters, to_int),
    KNOT_OPT(pcg_warm_start, lq.pcg_warm_start, to_bool),
    KNOT_OPT(schur_reg, lq.schur_reg, to_double),
    KNOT_OPT(max_refinement, lq.max_refinement, to_int),
    KNOT_OPT(refine_tol, lq.refine_tol, to_double),
    KNOT_OPT(pcg_direct_fallback, lq.pcg_direct_fallback, to_bool),
    KNOT_OPT(riccati_fallback, lq.riccati_fallback, to_bool),
    KNOT_OPT(inexact_rollout, lq.inexact_rollout, to_bool),
    KNOT_OPT(kkt_refinement, lq.kkt_refinement, to_int),
    KNOT_OPT_CHOICE(hessian, hessian, kHessian),
    KNOT_OPT(hessian_switch_ratio, hessian_switch_ratio, to_double),
    KNOT_OPT(hessian_switch_window, hessian_switch_window, to_int),
    KNOT_OPT(hessian_restart, hessian_restart, to_double),
    KNOT_OPT(lq_forcing, lq_forcing, to_double),
    KNOT_OPT(reg_init, reg_init, to_double),
    KNOT_OPT(reg_growth, reg_growth, to_double),
    KNOT_OPT(reg_max, reg_max, to_double),
    KNOT_OPT(mu_init, mu_init, to_double),
    KNOT_OPT(mu_min, mu_min, to_double),
    KNOT_OPT(mu_linear, mu_linear, to_double),
    KNOT_OPT(mu_superlinear, mu_superlinear, to_double),
    KNOT_OPT(barrier_tol, barrier_tol, to_double),
    KNOT_OPT(tau_min, tau_min, to_double),
    KNOT_OPT(slack_push, slack_push, to_double),
    KNOT_OPT(dual_init, dual_init, to_double),
    KNOT_OPT(central_start, central_start, to_bool),
    KNOT_OPT(warm_start_mu, warm_start_mu, to_double),
    KNOT_OPT(equality_reg, equality_reg, to_double),
    KNOT_OPT_CHOICE(globalization, globalization, kGlobalization),
    KNOT_OPT(armijo, armijo, to_double),
    KNOT_OPT(backtrack, backtrack, to_double),
    KNOT_OPT(min_step, min_step, to_double),
    KNOT_OPT(penalty_margin, penalty_margin, to_double),
    KNOT_OPT(penalty_max, penalty_max, to_double),
    KNOT_OPT(memory_limit, memory_limit, to_double),
    KNOT_OPT(threads, threads, to_int),
    KNOT_OPT(verbose, verbose, to_bool),
};
#undef KNOT_OPT
#undef KNOT_OPT_CHOICE

// The problem file's solver section, then the keywords; `caller` names the class in errors.
SolverOptions make_options(const Problem& problem, const nb::kwargs& kwargs, const char* caller) {
  SolverOptions o = solver::from_settings(problem.solver);
  for (auto [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    const OptionField* field = nullptr;
    for (const OptionField& f : kOptionFields)
      if (name == f.name) field = &f;
    if (!field)
      throw nb::type_error((std::string(caller) + "() got an unexpected keyword argument '" + name +
                            "' (knot.option_names() lists the options)")
                               .c_str());
    field->set(o, value);
  }
  const std::string why = o.validate();
  if (!why.empty()) throw nb::value_error(why.c_str());
  return o;
}

nb::dict options_dict(const SolverOptions& o) {
  nb::dict d;
  for (const OptionField& f : kOptionFields) d[f.name] = f.get(o);
  return d;
}

// ---- statistics as plain Python objects

nb::dict row_dict(const solver::IterationStats& r) {
  nb::dict d;
  d["cost"] = r.cost;
  d["merit"] = r.merit;
  d["stationarity"] = r.stationarity;
  d["feasibility"] = r.feasibility;
  d["complementarity"] = r.complementarity;
  d["duality_gap"] = r.duality_gap;
  d["dual_scale"] = r.dual_scale;
  d["mu"] = r.mu;
  d["penalty"] = r.penalty;
  d["regularization"] = r.regularization;
  d["step"] = r.step;
  d["dual_step"] = r.dual_step;
  d["step_norm"] = r.step_norm;
  d["seconds"] = r.seconds;
  d["backtracks"] = r.backtracks;
  d["restoration"] = r.restoration;
  d["exact_hessian"] = r.exact_hessian;
  d["lq_iterations"] = r.lq_iterations;
  d["lq_status"] = solver::to_string(r.lq_status);
  d["lq_residual"] = r.lq_residual;
  d["lq_tolerance"] = r.lq_tolerance;
  d["lq_riccati_fallback"] = r.lq_riccati_fallback;
  return d;
}

nb::object stats_object(const solver::Stats& s) {
  nb::dict time;
  time["linearize"] = s.time.linearize;
  time["barrier"] = s.time.barrier;
  time["lq"] = s.time.lq;
  time["step"] = s.time.step;
  time["line_search"] = s.time.line_search;
  time["convergence"] = s.time.convergence;
  time["total"] = s.time.total;
  nb::list rows;
  for (const solver::IterationStats& r : s.history()) rows.append(row_dict(r));
  nb::dict d;
  d["iterations"] = s.iterations;
  d["linsys"] = solver::to_string(s.linsys);
  d["lq_solves"] = s.lq_solves;
  d["lq_iterations"] = s.lq_iterations;
  d["regularized"] = s.regularized;
  d["restorations"] = s.restorations;
  d["riccati_fallbacks"] = s.riccati_fallbacks;
  d["max_regularization"] = s.max_regularization;
  d["time"] = simple_namespace(time);
  d["per_iteration"] = rows;
  return simple_namespace(d);
}

// ---- the Solver

// One call that runs or changes a solver at a time per object: a second thread, or a callback calling
// back, gets RuntimeError instead of a data race. Reads (solution, stats) stay open to the callback.
class Busy {
 public:
  explicit Busy(std::atomic<bool>& flag, const char* what) : flag_(flag) {
    if (flag_.exchange(true))
      throw std::runtime_error(std::string(what) + " is running already (on another thread, or this is its callback)");
  }
  ~Busy() { flag_.store(false); }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  std::atomic<bool>& flag_;
};

struct PySolver {
  PySolver(const Problem& problem, const SolverOptions& options) : solver(problem, options) {}

  solver::Solver solver;
  nb::object callback;                             // None, or callable(row: dict, iteration: int)
  std::optional<nb::python_error> callback_error;  // raised by the callback; re-raised by solve()
  std::atomic<bool> busy{false};

  static bool trampoline(const solver::IterationStats& row, int iteration, void* user) {
    auto* self = static_cast<PySolver*>(user);
    nb::gil_scoped_acquire gil;
    try {
      nb::object r = self->callback(row_dict(row), iteration);
      return r.is_none() || PyObject_IsTrue(r.ptr()) == 1;
    } catch (nb::python_error& e) {
      self->callback_error.emplace(std::move(e));
      return false;
    } catch (const std::exception& e) {  // a conversion inside the call: raised as RuntimeError
      PyErr_SetString(PyExc_RuntimeError, e.what());
      self->callback_error.emplace();
      return false;
    }
  }

  template <typename F>
  Status run(F&& f) {
    Busy busy_guard(busy, "this Solver");
    callback_error.reset();
    Status status;
    {
      nb::gil_scoped_release release;
      status = f();
    }
    if (callback_error) {
      nb::python_error e = std::move(*callback_error);
      callback_error.reset();
      throw e;
    }
    return status;
  }
};

// The callback may refer back to its Solver (a closure, the arrays a script keeps): the garbage
// collector must see the reference to break that cycle.
int solver_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  Py_VISIT(nb::inst_ptr<PySolver>(self)->callback.ptr());
  return 0;
}

int solver_clear(PyObject* self) {
  PySolver* s = nb::inst_ptr<PySolver>(self);
  s->solver.set_iteration_callback(nullptr);
  s->callback = nb::object();
  return 0;
}

PyType_Slot solver_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(solver_traverse)},
                              {Py_tp_clear, reinterpret_cast<void*>(solver_clear)},
                              {0, nullptr}};

// A property's default policy, reference_internal, cannot apply to an array that has an owner.
#define KNOT_ARRAY_POLICY nb::rv_policy::automatic

// A view of the solver's Solution; `owner` (the Python Solver) is what every array holds on to.
struct PySolution {
  nb::object owner;
  const solver::Solution* sol = nullptr;

  Matrix rows(const std::vector<double>& v, int n_rows, int cols) const {
    return Matrix(v.data(), {static_cast<std::size_t>(n_rows), static_cast<std::size_t>(cols)}, owner);
  }
  Vector flat(const std::vector<double>& v) const { return Vector(v.data(), {v.size()}, owner); }
};

std::vector<std::string> state_names(const Problem& p) {
  return p.state_names.empty() && p.model ? p.model->state_names() : p.state_names;
}
std::vector<std::string> control_names(const Problem& p) {
  return p.control_names.empty() && p.model ? p.model->control_names() : p.control_names;
}

// ---- conversions shared by Solver and BatchSolver

// A Reference from one row (dim,) or one row per knot (rows, dim).
problems::Reference reference_from(nb::handle ref, const std::string& what) {
  nb::object arr = nb::module_::import_("numpy").attr("asarray")(ref);
  const long ndim = nb::cast<long>(arr.attr("ndim"));
  if (ndim != 1 && ndim != 2)
    throw nb::value_error((what + ": expected a row (dim,) or one row per knot (rows, dim), found " +
                           std::to_string(ndim) + " dimensions")
                              .c_str());
  std::vector<long> shape;
  for (nb::handle d : nb::cast<nb::tuple>(arr.attr("shape"))) shape.push_back(nb::cast<long>(d));
  FloatArray a = as_float_array(arr, what + ": ref", shape);
  std::vector<double> values(a.data, a.data + a.size);
  return ndim == 1 ? problems::Reference::constant(std::move(values))
                   : problems::Reference::per_knot(static_cast<int>(shape[1]), std::move(values));
}

// One value per bounded entry: a number or a 1-d array.
std::vector<double> float_row(nb::handle v, const std::string& what) {
  nb::object arr = nb::module_::import_("numpy").attr("atleast_1d")(v);
  if (nb::cast<long>(arr.attr("ndim")) != 1)
    throw nb::value_error((what + ": expected one value per bounded entry, a 1-d array").c_str());
  FloatArray a = as_float_array(arr, what, {nb::cast<long>(arr.attr("size"))});
  return std::vector<double>(a.data, a.data + a.size);
}

// {'mass': 1.4, 'lengths': [..]} as the model's parameter changes (sizes checked against `model`).
std::vector<problems::ModelParameter> parameter_changes(const problems::Model& model, nb::dict params) {
  const std::vector<problems::ModelParameter> current = model.parameters();
  std::vector<problems::ModelParameter> changes;
  for (auto [key, value] : params) {
    const std::string name = nb::cast<std::string>(nb::str(key));
    std::vector<double> values;
    if (nb::isinstance<nb::float_>(value) || nb::isinstance<nb::int_>(value)) {
      values.push_back(nb::cast<double>(value));
    } else {
      long n = 1;  // an unknown name: with_parameters names it
      for (const problems::ModelParameter& q : current)
        if (q.name == name) n = static_cast<long>(q.values.size());
      FloatArray a = as_float_array(value, "set_model_parameters: " + name, {n});
      values.assign(a.data, a.data + a.size);
    }
    changes.emplace_back(name, std::move(values));
  }
  return changes;
}

// ---- the batch

struct PyBatch {
  PyBatch(const Problem& problem, int batch, const solver::BatchOptions& options) : batch(problem, batch, options) {}
  solver::BatchSolver batch;
  std::atomic<bool> busy{false};
};

// BatchOptions::cuda_engine from knot._cuda, imported now (the first backend="cuda" loads the CUDA
// runtime, never `import knot`).
solver::BatchEngineFactory cuda_engine() {
  nb::object module;
  try {
    module = nb::module_::import_("knot._cuda");
  } catch (nb::python_error& e) {
    throw nb::value_error(("BatchSolver: backend 'cuda': this knot has no CUDA engine (import knot._cuda: " +
                           nb::cast<std::string>(nb::str(e.value())) +
                           "); build knot with CUDA (KNOT_CUDA=ON, nvcc) or use backend='cpu'")
                              .c_str());
  }
  nb::object capsule = module.attr("engine");
  const void* factory = PyCapsule_GetPointer(capsule.ptr(), engine_capsule_name());
  if (factory == nullptr) {
    PyErr_Clear();
    throw nb::value_error(
        "BatchSolver: backend 'cuda': knot._cuda comes from another build of knot than knot._knot (the engine's "
        "types differ); rebuild the package");
  }
  return *static_cast<const solver::BatchEngineFactory*>(factory);
}

solver::BatchOptions batch_options(const Problem& problem, int threads, const std::string& path,
                                   const std::string& backend, const std::string& precision,
                                   const nb::kwargs& kwargs) {
  solver::BatchOptions o;
  o.threads = threads;
  if (path == "auto") o.path = solver::BatchPath::Auto;
  else if (path == "solvers") o.path = solver::BatchPath::Solvers;
  else if (path == "device") o.path = solver::BatchPath::Device;
  else throw nb::value_error(("BatchSolver: path: expected 'auto', 'solvers' or 'device', found '" + path + "'").c_str());
  if (backend == "cpu") o.backend = solver::BatchBackend::Cpu;
  else if (backend == "cuda") o.backend = solver::BatchBackend::Cuda;
  else throw nb::value_error(("BatchSolver: backend: expected 'cpu' or 'cuda', found '" + backend + "'").c_str());
  if (precision == "float") o.single = true;
  else if (precision != "double")
    throw nb::value_error(("BatchSolver: precision: expected 'double' or 'float', found '" + precision + "'").c_str());
  if (o.single && o.backend != solver::BatchBackend::Cuda)
    throw nb::value_error("BatchSolver: precision 'float' runs on backend 'cuda' only (backend 'cpu' solves in double)");
  o.solver = make_options(problem, kwargs, "BatchSolver");
  // Options before the engine: a bad value is named alike whether or not this build has CUDA.
  if (std::string why = o.validate(); !why.empty()) throw std::invalid_argument("BatchOptions: " + why);
  if (o.backend == solver::BatchBackend::Cuda) o.cuda_engine = cuda_engine();
  return o;
}

// (B, rows, cols) copies of one array of every problem's solution.
nb::object batch_rows(const solver::BatchSolver& b, const std::vector<double> solver::Solution::*field, int rows,
                      int cols) {
  const std::size_t B = static_cast<std::size_t>(b.size()), n = static_cast<std::size_t>(rows) * cols;
  std::vector<double> all(B * n);
  for (std::size_t i = 0; i < B; ++i) {
    const std::vector<double>& v = b.solution(static_cast<int>(i)).*field;
    std::copy(v.begin(), v.end(), all.begin() + static_cast<std::ptrdiff_t>(i * n));
  }
  return copy_array(all.data(), {B, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)});
}

// ---- the closed loop

struct PyClosedLoop {
  PyClosedLoop(const Problem& problem, const SolverOptions& options) : loop(problem, options) {}
  solver::ClosedLoop loop;
  std::atomic<bool> busy{false};
};

nb::object record_object(const solver::ClosedLoop& loop) {
  const solver::ClosedLoopRecord& r = loop.record();
  const int done = loop.steps_done();
  const auto rows = [&](const std::vector<double>& v, int n, int cols) -> nb::object {
    if (v.empty() || cols <= 0) return copy_array(v.data(), {0, static_cast<std::size_t>(std::max(cols, 0))});
    return copy_array(v.data(), {static_cast<std::size_t>(n), static_cast<std::size_t>(cols)});
  };
  nb::dict d;
  d["steps"] = done;
  d["time"] = copy_array(r.time.data(), {static_cast<std::size_t>(done + 1)});
  d["x"] = rows(r.x, done + 1, r.nx);
  d["u"] = rows(r.u, done, r.nu);
  d["x_ref"] = rows(r.x_ref, done + 1, r.nx);
  d["ee"] = rows(r.ee, done + 1, 3);
  d["ee_ref"] = rows(r.ee_ref, done + 1, 3);
  d["solve_time"] = copy_array(r.solve_time.data(), {static_cast<std::size_t>(done)});
  nb::list status, iterations, miss, failed;
  for (int i = 0; i < done; ++i) {
    status.append(nb::cast(r.status[i]));
    iterations.append(r.iterations[i]);
    miss.append(static_cast<bool>(r.deadline_miss[i]));
    failed.append(static_cast<bool>(r.failed[i]));
  }
  d["status"] = status;
  d["iterations"] = iterations;
  d["deadline_miss"] = miss;
  d["failed"] = failed;
  return simple_namespace(d);
}

nb::object summary_object(const solver::ClosedLoopSummary& s) {
  nb::list tracking;
  for (const solver::TrackingError& t : s.tracking) {
    nb::dict e;
    e["name"] = t.name;
    e["rms"] = t.rms;
    e["max"] = t.max;
    tracking.append(e);
  }
  nb::dict statuses;
  for (int i = 0; i < solver::kStatusCount; ++i)
    if (s.statuses[i] > 0) statuses[nb::cast(static_cast<Status>(i))] = s.statuses[i];
  nb::dict d;
  d["steps"] = s.steps;
  d["duration"] = s.duration;
  d["control_period"] = s.control_period;
  d["tracking"] = tracking;
  d["constraint_violation"] = s.constraint_violation;
  d["solve_p50"] = s.solve_p50;
  d["solve_p99"] = s.solve_p99;
  d["solve_max"] = s.solve_max;
  d["solve_mean"] = s.solve_mean;
  d["deadline_misses"] = s.deadline_misses;
  d["statuses"] = statuses;
  d["failed_steps"] = s.failed_steps;
  d["closed_loop_cost"] = s.closed_loop_cost;
  d["seed"] = s.seed;
  return simple_namespace(d);
}

// ---- knot.Error: the loader's errors with their parts

PyObject* g_error = nullptr;  // owned by the module's attribute

void translate_problem_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const problems::ProblemError& e) {
    nb::object exc = nb::borrow(g_error)(e.what());
    exc.attr("file") = e.where().file;
    exc.attr("line") = e.where().line;
    exc.attr("column") = e.where().column;
    exc.attr("key") = e.key_path();
    exc.attr("expected") = e.expected();
    exc.attr("found") = e.found();
    PyErr_SetObject(g_error, exc.ptr());
  }
}

}  // namespace
}  // namespace knot::python

NB_MODULE(_knot, m) {
  using namespace knot;
  using namespace knot::python;
  m.doc() = "Knot's trajectory optimization and MPC: problem files, the SQP solver, the closed loop.";

  g_error = PyErr_NewExceptionWithDoc(
      "knot.Error",
      "An invalid problem file, override or problem (a ValueError). The message names the file, line, "
      "column, key, what was expected and what was found; the attributes file, line, column, key, "
      "expected and found hold them apart (line and column 0 when unknown).",
      PyExc_ValueError, nullptr);
  m.attr("Error") = nb::steal(g_error);
  nb::register_exception_translator(translate_problem_error);

  nb::enum_<Status>(m, "Status", "How a solve ended (the C++ knot::solver::Status).")
      .value("NotRun", Status::NotRun, "solve() has not been called yet")
      .value("Solved", Status::Solved, "every convergence measure within its tolerance")
      .value("SolvedAcceptable", Status::SolvedAcceptable, "within the looser acceptable level")
      .value("MaxIterations", Status::MaxIterations, "max_iter iterations (a real-time step ends here)")
      .value("TimeLimit", Status::TimeLimit, "time_limit ran out; the last accepted iterate")
      .value("Infeasible", Status::Infeasible, "the constraints could not be met")
      .value("NumericalError", Status::NumericalError, "NaN or Inf, a failed integrator, regularization exhausted")
      .value("LineSearchFailed", Status::LineSearchFailed, "no step length decreased the merit function")
      .value("Interrupted", Status::Interrupted, "the iteration callback stopped the solve")
      .def_prop_ro(
          "message", [](Status s) { return solver::describe(s); }, "One line explaining the status.")
      .def_prop_ro(
          "label", [](Status s) { return solver::to_string(s); },
          "The CLI's and the JSON report's spelling ('solved', 'max_iterations', ...).")
      .def_prop_ro(
          "solved", [](Status s) { return solver::is_solved(s); },
          "True for Solved and SolvedAcceptable: the iterate is an optimum to the stated precision.");

  m.def(
      "option_names",
      [] {
        std::vector<std::string> names;
        for (const OptionField& f : kOptionFields) names.emplace_back(f.name);
        return names;
      },
      "The keyword options of Solver and ClosedLoop (the fields of the C++ SolverOptions; the LQ ones flat).");

  nb::class_<Problem>(m, "Problem",
                      "A discretized optimal control problem, as load() reads it from a problem file. Each solver "
                      "copies it: set_reference(), set_bounds() and set_obstacle() on one change neither the "
                      "Problem nor the others.")
      .def_ro("name", &Problem::name)
      .def_ro("description", &Problem::description)
      .def_ro("source", &Problem::source, "The problem file; empty when built otherwise.")
      .def_prop_ro("nx", &Problem::nx, "States per knot.")
      .def_prop_ro("nu", &Problem::nu, "Controls per knot.")
      .def_prop_ro(
          "N", [](const Problem& p) { return p.horizon.N; }, "Intervals of the horizon (knots 0..N).")
      .def_prop_ro(
          "dt", [](const Problem& p) { return p.horizon.dt; }, "Seconds per interval.")
      .def_prop_ro(
          "x0", [](const Problem& p) { return copy_vector(p.x0); }, "The initial state (a copy).")
      .def_prop_ro("state_names", &state_names)
      .def_prop_ro("control_names", &control_names)
      .def_prop_ro(
          "cost_names",
          [](const Problem& p) {
            std::vector<std::string> out;
            for (const auto& c : p.costs) out.push_back(c ? c->info().name : "");
            return out;
          },
          "The cost terms' names, which set_reference() takes.")
      .def(
          "reference",
          [](const Problem& p, const std::string& cost) -> nb::object {
            for (const auto& c : p.costs)
              if (c && c->info().name == cost) {
                const problems::Reference* r = c->reference();
                if (!r) return nb::none();
                return copy_array(r->values.data(),
                                  {static_cast<std::size_t>(r->rows()), static_cast<std::size_t>(r->dim)});
              }
            throw nb::value_error(("reference: no cost named '" + cost + "'").c_str());
          },
          nb::sig("def reference(self, cost: str) -> numpy.typing.NDArray[numpy.float64] | None"), "cost"_a,
          "The reference of the cost named `cost` (rows, dim), a copy; None for a cost without one.")
      .def_prop_ro(
          "frame_names",
          [](const Problem& p) {
            std::vector<std::string> out;
            if (const problems::Kinematics* k = p.model ? p.model->kinematics() : nullptr)
              for (int f = 0; f < k->frame_count(); ++f) out.push_back(k->frame_name(f));
            return out;
          },
          "The model's frames (URDF links); empty for a model without kinematics.")
      .def(
          "frame_positions",
          [](const Problem& p, nb::handle x, nb::object frame) {
            const problems::Kinematics* k = p.model ? p.model->kinematics() : nullptr;
            if (!k)
              throw nb::value_error(
                  ("frame_positions: the model '" + std::string(p.model ? p.model->type() : "") + "' has no kinematics")
                      .c_str());
            int f = k->default_frame();
            if (!frame.is_none()) {
              const std::string name = nb::cast<std::string>(frame);
              const std::optional<int> found = k->frame_index(name);
              if (!found) throw nb::value_error(("frame_positions: no frame named '" + name + "'").c_str());
              f = *found;
            }
            nb::object arr = nb::module_::import_("numpy").attr("asarray")(x);
            if (nb::cast<long>(arr.attr("ndim")) != 2)
              throw nb::value_error(("frame_positions: x: expected shape (rows, " + std::to_string(p.nx()) +
                                     "), found " + std::to_string(nb::cast<long>(arr.attr("ndim"))) + " dimensions")
                                        .c_str());
            const long rows = nb::cast<long>(arr.attr("shape")[0]);
            FloatArray a = as_float_array(arr, "frame_positions: x", {rows, p.nx()});
            std::unique_ptr<problems::ModelData> data = p.model->make_data();
            std::vector<double> out(static_cast<std::size_t>(rows) * 3);
            for (long i = 0; i < rows; ++i)
              k->frame_position(*data, a.data + i * p.nx(), f, {0, 0, 0}, out.data() + i * 3, nullptr);
            return copy_array(out.data(), {static_cast<std::size_t>(rows), 3});
          },
          nb::sig("def frame_positions(self, x: numpy.typing.ArrayLike, frame: str | None = None) -> "
                  "numpy.typing.NDArray[numpy.float64]"),
          "x"_a, "frame"_a = nb::none(),
          "World positions (rows, 3) of a frame's origin at each state row of x (rows, nx): the end effector "
          "(the model's ee_frame) unless `frame` names another. ValueError without kinematics.")
      .def(
          "describe", [](const Problem& p) { return problems::describe(p); },
          "The resolved problem as `knot check` prints it.")
      .def("__repr__", [](const Problem& p) {
        return "<knot.Problem '" + p.name + "' nx=" + std::to_string(p.nx()) + " nu=" + std::to_string(p.nu()) +
               " N=" + std::to_string(p.horizon.N) + ">";
      });

  m.def(
      "_load",
      [](const std::string& path, const std::vector<std::string>& overrides) {
        return problems::load_problem(path, overrides);
      },
      "path"_a, "overrides"_a);
  m.def(
      "_load_string",
      [](const std::string& yaml, const std::string& name, const std::string& base_dir,
         const std::vector<std::string>& overrides) {
        return problems::load_problem_from_string(yaml, name, base_dir, overrides);
      },
      "yaml"_a, "name"_a, "base_dir"_a, "overrides"_a);

  nb::class_<PySolution>(m, "Solution",
                         "The solver's current iterate. Its arrays view the Solver's memory without copying: "
                         "read-only, they change with every solve(), step(), shift() or set_initial_guess(), "
                         "and keep the Solver alive. np.array(a) takes a copy.")
      .def_prop_ro(
          "x", [](const PySolution& s) { return s.rows(s.sol->x, s.sol->N + 1, s.sol->nx); },
          "States, shape (N+1, nx).", KNOT_ARRAY_POLICY)
      .def_prop_ro(
          "u", [](const PySolution& s) { return s.rows(s.sol->u, s.sol->N, s.sol->nu); }, "Controls, shape (N, nu).",
          KNOT_ARRAY_POLICY)
      .def_prop_ro(
          "lambda_", [](const PySolution& s) { return s.rows(s.sol->lambda, s.sol->N + 1, s.sol->nx); },
          "Dynamics multipliers (costates), shape (N+1, nx).", KNOT_ARRAY_POLICY)
      .def_prop_ro(
          "z", [](const PySolution& s) { return s.flat(s.sol->z); }, "Inequality duals, flat.", KNOT_ARRAY_POLICY)
      .def_prop_ro(
          "s", [](const PySolution& s) { return s.flat(s.sol->s); }, "Inequality slacks, flat.", KNOT_ARRAY_POLICY)
      .def_prop_ro(
          "y", [](const PySolution& s) { return s.flat(s.sol->y); }, "Equality multipliers, flat.", KNOT_ARRAY_POLICY)
      .def_prop_ro(
          "cost", [](const PySolution& s) { return s.sol->cost; }, "The objective at x, u.")
      .def_prop_ro(
          "mu", [](const PySolution& s) { return s.sol->mu; }, "The barrier parameter at the end.")
      .def_prop_ro("status", [](const PySolution& s) { return s.sol->status; })
      .def_prop_ro("iterations", [](const PySolution& s) { return s.sol->iterations; })
      .def_prop_ro(
          "message", [](const PySolution& s) { return std::string(s.sol->message()); },
          "The status's explanation with its detail ('... at knot 12').");

  nb::class_<PySolver>(m, "Solver", nb::type_slots(solver_slots), nb::is_weak_referenceable(),
                       "Knot's SQP solver for a Problem. Options start from the problem file's solver: section; "
                       "every keyword sets the SolverOptions field of its name (knot.option_names() lists them; "
                       "linsys, hessian, globalization and preconditioner take their problem-file spelling). "
                       "An unknown keyword is a TypeError, an invalid value a ValueError, a problem the solver "
                       "cannot treat a knot.Error. Everything is allocated here; solve() allocates nothing.")
      .def(
          "__init__",
          [](PySolver* self, const Problem& problem, nb::kwargs kwargs) {
            new (self) PySolver(problem, make_options(problem, kwargs, "Solver"));
          },
          "problem"_a, "kwargs"_a)
      .def(
          "solve", [](PySolver& s) { return s.run([&] { return s.solver.solve(); }); },
          "Iterates from the current point (the default guess, a given one, or the previous solution) to "
          "convergence, max_iter or time_limit; returns the Status. Releases the GIL.")
      .def(
          "step", [](PySolver& s, int iterations) { return s.run([&] { return s.solver.step(iterations); }); },
          "iterations"_a = 1,
          "Real-time iterations: at most `iterations` SQP steps, returning after the last (MaxIterations), "
          "or Solved without a step when the iterate already converged. Releases the GIL.")
      .def(
          "set_initial_state",
          [](PySolver& s, nb::handle x0) {
            Busy busy_guard(s.busy, "this Solver");
            FloatArray a = as_float_array(x0, "set_initial_state: x0", {s.solver.nx()});
            s.solver.set_initial_state({a.data, a.size});
          },
          nb::sig("def set_initial_state(self, x0: numpy.typing.ArrayLike) -> None"), "x0"_a,
          "The initial state of the next solve: nx values. A NaN makes that solve end NumericalError.")
      .def(
          "set_model_parameters",
          [](PySolver& s, nb::dict params) {
            Busy busy_guard(s.busy, "this Solver");
            const problems::Problem& p = s.solver.problem();
            const std::vector<problems::ModelParameter> changes = parameter_changes(*p.model, params);
            try {
              s.solver.set_model(problems::with_parameters(*p.model, changes));
            } catch (const std::invalid_argument& e) {
              throw nb::value_error(e.what());
            }
          },
          nb::sig("def set_model_parameters(self, params: dict[str, float | numpy.typing.ArrayLike]) -> None"),
          "params"_a,
          "The model rebuilt with some parameters changed, e.g. {'mass': 1.4}, for the next solves (the "
          "iterate stays). An unknown name or a value the model refuses raises knot.Error; a problem whose "
          "terms read the model (end-effector terms, expression terms on an expression model) ValueError.")
      .def(
          "set_reference",
          [](PySolver& s, const std::string& cost, nb::handle ref) {
            Busy busy_guard(s.busy, "this Solver");
            s.solver.set_reference(cost, reference_from(ref, "set_reference"));
          },
          nb::sig("def set_reference(self, cost: str, ref: numpy.typing.ArrayLike) -> None"), "cost"_a, "ref"_a,
          "Replaces what the cost named `cost` tracks: one row (dim,) for every knot, or one row per knot "
          "(rows, dim), knots past the last row using the last. ValueError for an unknown cost or a wrong dim.")
      .def(
          "set_bounds",
          [](PySolver& s, const std::string& constraint, nb::handle lower, nb::handle upper) {
            Busy busy_guard(s.busy, "this Solver");
            s.solver.set_bounds(constraint, float_row(lower, "set_bounds: lower"), float_row(upper, "set_bounds: upper"));
          },
          nb::sig("def set_bounds(self, constraint: str, lower: numpy.typing.ArrayLike, upper: numpy.typing.ArrayLike) "
                  "-> None"),
          "constraint"_a, "lower"_a, "upper"_a,
          "New bounds for a control_box or state_box (one value per entry), end_effector_box (x, y, z) or "
          "end_effector_height ([z_min], [inf]) constraint; inf or -inf removes a bound's row, a finite value "
          "adds it (the next solve then starts cold from the current plan). ValueError for an unknown name "
          "or bad bounds, nothing changed.")
      .def(
          "set_obstacle",
          [](PySolver& s, const std::string& constraint, std::array<double, 2> center, double radius) {
            Busy busy_guard(s.busy, "this Solver");
            s.solver.set_obstacle(constraint, center, radius);
          },
          nb::sig("def set_obstacle(self, constraint: str, center: tuple[float, float], radius: float) -> None"),
          "constraint"_a, "center"_a, "radius"_a,
          "Moves a circle_obstacle constraint (a finite center, a finite radius > 0). ValueError otherwise.")
      .def(
          "set_initial_guess",
          [](PySolver& s, nb::handle x, nb::handle u) {
            Busy busy_guard(s.busy, "this Solver");
            const long N = s.solver.N();
            FloatArray ax = as_float_array(x, "set_initial_guess: x", {N + 1, s.solver.nx()});
            FloatArray au = as_float_array(u, "set_initial_guess: u", {N, s.solver.nu()});
            s.solver.set_initial_guess({ax.data, ax.size}, {au.data, au.size});
          },
          nb::sig("def set_initial_guess(self, x: numpy.typing.ArrayLike, u: numpy.typing.ArrayLike) -> None"), "x"_a,
          "u"_a, "A cold start from x (N+1, nx) and u (N, nu): multipliers reset.")
      .def(
          "set_warm_start",
          [](PySolver& s, nb::handle x, nb::handle u, nb::handle lambda_, nb::handle z, nb::handle sl, nb::handle y,
             double mu) {
            Busy busy_guard(s.busy, "this Solver");
            const long N = s.solver.N(), nx = s.solver.nx();
            const solver::Solution& sol = s.solver.solution();
            const auto values = [](nb::handle a, const std::string& what, const std::vector<long>& shape) {
              FloatArray f = as_float_array(a, what, shape);
              return std::vector<double>(f.data, f.data + f.size);
            };
            problems::InitialGuess g;
            g.x = values(x, "set_warm_start: x", {N + 1, nx});
            g.u = values(u, "set_warm_start: u", {N, s.solver.nu()});
            // Multipliers only together, as the C++ call takes them; their sizes are the solution's.
            if (!lambda_.is_none()) {
              g.lambda = values(lambda_, "set_warm_start: lambda_", {N + 1, nx});
              if (!z.is_none()) g.z = values(z, "set_warm_start: z", {static_cast<long>(sol.z.size())});
              if (!sl.is_none()) g.s = values(sl, "set_warm_start: s", {static_cast<long>(sol.s.size())});
              if (!y.is_none()) g.y = values(y, "set_warm_start: y", {static_cast<long>(sol.y.size())});
              g.mu = mu;
            }
            s.solver.set_warm_start(g);
          },
          nb::sig("def set_warm_start(self, x: numpy.typing.ArrayLike, u: numpy.typing.ArrayLike, "
                  "lambda_: numpy.typing.ArrayLike | None = None, z: numpy.typing.ArrayLike | None = None, "
                  "s: numpy.typing.ArrayLike | None = None, y: numpy.typing.ArrayLike | None = None, "
                  "mu: float = 0.0) -> None"),
          "x"_a, "u"_a, "lambda_"_a.none() = nb::none(), "z"_a.none() = nb::none(), "s"_a.none() = nb::none(),
          "y"_a.none() = nb::none(), "mu"_a = 0.0,
          "Starts the next solve from a stored plan (another solver's solution, say): x and u always; with "
          "lambda_, z, s, y (z, s, y may be omitted where the problem has no such rows) and mu > 0 a warm start "
          "that keeps them, otherwise a cold start as set_initial_guess. ValueError on other sizes, a non-positive "
          "slack or dual.")
      .def(
          "shift",
          [](PySolver& s) {
            Busy busy_guard(s.busy, "this Solver");
            s.solver.shift();
          },
          "Moves every knot's values one knot earlier (x_N and u_{N-1} stay): the next control step's warm start.")
      .def(
          "set_iteration_callback",
          [](PySolver& s, nb::object callback) {
            Busy busy_guard(s.busy, "this Solver");
            if (callback.is_none()) {
              s.solver.set_iteration_callback(nullptr);
              s.callback = nb::object();
            } else {
              if (!PyCallable_Check(callback.ptr()))
                throw nb::type_error("the iteration callback must be callable or None");
              s.callback = callback;
              s.solver.set_iteration_callback(&PySolver::trampoline, &s);
            }
          },
          nb::sig(
              "def set_iteration_callback(self, callback: typing.Callable[[dict, int], bool | None] | None) -> None"),
          "callback"_a.none(),
          "callback(row: dict, iteration: int) is called once per row of stats.per_iteration as soon as it is "
          "final, with the GIL held. Returning False stops the solve once the step under way is done (that "
          "iterate is measured and reported too; then Interrupted, or Solved when it converged); None or True "
          "continues. An exception in it stops the solve and is raised by "
          "solve(). None removes it.")
      .def_prop_ro(
          "solution",
          [](nb::handle self) {
            return PySolution{nb::borrow(self), &nb::cast<PySolver&>(self).solver.solution()};
          },
          "The current iterate; its arrays view the solver's memory.")
      .def_prop_ro(
          "status", [](const PySolver& s) { return s.solver.solution().status; }, "The last solve's Status.")
      .def_prop_ro(
          "stats", [](const PySolver& s) { return stats_object(s.solver.stats()); },
          "What the last solve did, as plain Python objects (a copy): iterations, linsys, lq_solves, "
          "lq_iterations, regularized, restorations, max_regularization, time (seconds per phase: "
          "linearize, barrier, lq, step, line_search, convergence, total) and per_iteration (a list "
          "of dicts, row 0 the initial iterate).")
      .def_prop_ro(
          "options", [](const PySolver& s) { return options_dict(s.solver.options()); },
          "The options in use, as a dict of the keywords.")
      .def_prop_ro(
          "problem", [](const PySolver& s) { return s.solver.problem(); }, "A copy of the problem.")
      .def_prop_ro("nx", [](const PySolver& s) { return s.solver.nx(); })
      .def_prop_ro("nu", [](const PySolver& s) { return s.solver.nu(); })
      .def_prop_ro("N", [](const PySolver& s) { return s.solver.N(); })
      .def_prop_ro(
          "threads", [](const PySolver& s) { return s.solver.threads(); },
          "Threads that evaluate the knots: the threads option (0: every core), at most N + 1. Every count "
          "gives the same solution bit for bit.")
      .def_prop_ro(
          "bytes_allocated", [](const PySolver& s) { return s.solver.bytes_allocated(); },
          "Heap bytes allocated at construction.")
      .def("__repr__", [](const PySolver& s) {
        return "<knot.Solver '" + s.solver.problem().name +
               "' status=" + solver::to_string(s.solver.solution().status) + ">";
      });

  m.def(
      "_time_solve",
      [](PySolver& s, int calls) {
        Busy busy_guard(s.busy, "this Solver");
        nb::gil_scoped_release release;
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) s.solver.solve();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / std::max(calls, 1);
      },
      "solver"_a, "calls"_a,
      "Seconds per call of `calls` solve() calls timed in C++, for the binding's overhead (scripts/bench_python.py).");

  nb::class_<PyBatch>(m, "BatchSolver",
                      "B problems of one Problem's structure solved at once (the C++ knot::solver::BatchSolver): "
                      "each problem its own initial state, references, bounds, obstacles and model parameters. "
                      "backend 'cpu': on the CPU's cores, threads worker threads (0: every core), path 'auto' "
                      "(B Solvers), 'solvers' or 'device' (the GPU's code on the CPU). backend 'cuda': on the GPU, "
                      "one thread block of threads (0: the engine's default, else 32..256) per problem, in "
                      "precision 'double' or 'float' (knot.cuda_device() says whether a GPU is usable). Other "
                      "keywords set SolverOptions as for Solver. Everything is allocated here; solve() "
                      "allocates nothing.")
      .def(
          "__init__",
          [](PyBatch* self, const Problem& problem, int batch, int threads, const std::string& path,
             const std::string& backend, const std::string& precision, nb::kwargs kwargs) {
            new (self) PyBatch(problem, batch, batch_options(problem, threads, path, backend, precision, kwargs));
          },
          "problem"_a, "batch"_a, "threads"_a = 0, "path"_a = "auto", "backend"_a = "cpu", "precision"_a = "double",
          "kwargs"_a)
      .def(
          "solve",
          [](PyBatch& b) {
            Busy busy_guard(b.busy, "this BatchSolver");
            nb::gil_scoped_release release;
            return b.batch.solve();
          },
          "Solves every problem from its current iterate; returns how many ended solved. One problem's "
          "failure (a NaN initial state) changes nothing in the others. Releases the GIL.")
      .def(
          "set_initial_state",
          [](PyBatch& b, int i, nb::handle x0) {
            Busy busy_guard(b.busy, "this BatchSolver");
            const int nx = b.batch.solution(0).nx;
            FloatArray a = as_float_array(x0, "set_initial_state: x0", {nx});
            b.batch.set_initial_state(i, {a.data, a.size});
          },
          nb::sig("def set_initial_state(self, i: int, x0: numpy.typing.ArrayLike) -> None"), "i"_a, "x0"_a,
          "Problem i's initial state (nx values). IndexError for i outside [0, B).")
      .def(
          "set_initial_states",
          [](PyBatch& b, nb::handle x0) {
            Busy busy_guard(b.busy, "this BatchSolver");
            const int nx = b.batch.solution(0).nx;
            FloatArray a = as_float_array(x0, "set_initial_states: x0", {b.batch.size(), nx});
            for (int i = 0; i < b.batch.size(); ++i)
              b.batch.set_initial_state(i, {a.data + static_cast<std::size_t>(i) * nx, static_cast<std::size_t>(nx)});
          },
          nb::sig("def set_initial_states(self, x0: numpy.typing.ArrayLike) -> None"), "x0"_a,
          "Every problem's initial state: x0 of shape (B, nx).")
      .def(
          "set_reference",
          [](PyBatch& b, int i, const std::string& cost, nb::handle ref) {
            Busy busy_guard(b.busy, "this BatchSolver");
            b.batch.set_reference(i, cost, reference_from(ref, "set_reference"));
          },
          nb::sig("def set_reference(self, i: int, cost: str, ref: numpy.typing.ArrayLike) -> None"), "i"_a,
          "cost"_a, "ref"_a, "Problem i's reference of the cost `cost`, as Solver.set_reference.")
      .def(
          "set_bounds",
          [](PyBatch& b, int i, const std::string& constraint, nb::handle lower, nb::handle upper) {
            Busy busy_guard(b.busy, "this BatchSolver");
            b.batch.set_bounds(i, constraint, float_row(lower, "set_bounds: lower"), float_row(upper, "set_bounds: upper"));
          },
          nb::sig("def set_bounds(self, i: int, constraint: str, lower: numpy.typing.ArrayLike, "
                  "upper: numpy.typing.ArrayLike) -> None"),
          "i"_a, "constraint"_a, "lower"_a, "upper"_a, "Problem i's bounds of a constraint, as Solver.set_bounds.")
      .def(
          "set_obstacle",
          [](PyBatch& b, int i, const std::string& constraint, std::array<double, 2> center, double radius) {
            Busy busy_guard(b.busy, "this BatchSolver");
            b.batch.set_obstacle(i, constraint, center, radius);
          },
          nb::sig("def set_obstacle(self, i: int, constraint: str, center: tuple[float, float], radius: float) -> None"),
          "i"_a, "constraint"_a, "center"_a, "radius"_a, "Moves problem i's circle_obstacle, as Solver.set_obstacle.")
      .def(
          "set_model_parameters",
          [](PyBatch& b, int i, nb::dict params) {
            Busy busy_guard(b.busy, "this BatchSolver");
            const std::vector<problems::ModelParameter> changes = parameter_changes(b.batch.model(i), params);
            try {
              b.batch.set_model_parameters(i, changes);
            } catch (const std::invalid_argument& e) {
              throw nb::value_error(e.what());
            }
          },
          nb::sig("def set_model_parameters(self, i: int, params: dict[str, float | numpy.typing.ArrayLike]) -> None"),
          "i"_a, "params"_a, "Problem i's model rebuilt with some parameters changed, as Solver.set_model_parameters.")
      .def(
          "set_initial_guess",
          [](PyBatch& b, int i, nb::handle x, nb::handle u) {
            Busy busy_guard(b.busy, "this BatchSolver");
            const solver::Solution& s0 = b.batch.solution(0);
            FloatArray ax = as_float_array(x, "set_initial_guess: x", {s0.N + 1, s0.nx});
            FloatArray au = as_float_array(u, "set_initial_guess: u", {s0.N, s0.nu});
            b.batch.set_initial_guess(i, {ax.data, ax.size}, {au.data, au.size});
          },
          nb::sig("def set_initial_guess(self, i: int, x: numpy.typing.ArrayLike, u: numpy.typing.ArrayLike) -> None"),
          "i"_a, "x"_a, "u"_a, "A cold start of problem i from x (N+1, nx) and u (N, nu).")
      .def(
          "solution",
          [](nb::handle self, int i) {
            return PySolution{nb::borrow(self), &nb::cast<PyBatch&>(self).batch.solution(i)};
          },
          "i"_a, "Problem i's current iterate; its arrays view the batch's memory.")
      .def(
          "stats", [](const PyBatch& b, int i) { return stats_object(b.batch.stats(i)); }, "i"_a,
          "Problem i's statistics of the last solve, as Solver.stats.")
      .def("__len__", [](const PyBatch& b) { return b.batch.size(); })
      .def_prop_ro(
          "statuses",
          [](const PyBatch& b) {
            std::vector<Status> v;
            for (int i = 0; i < b.batch.size(); ++i) v.push_back(b.batch.status(i));
            return v;
          },
          "Every problem's Status of the last solve, a list of B.")
      .def_prop_ro(
          "costs",
          [](const PyBatch& b) {
            std::vector<double> v;
            for (int i = 0; i < b.batch.size(); ++i) v.push_back(b.batch.solution(i).cost);
            return copy_array(v.data(), {v.size()});
          },
          "Every problem's cost, shape (B,) (a copy).")
      .def_prop_ro(
          "iterations",
          [](const PyBatch& b) {
            std::vector<int> v;
            for (int i = 0; i < b.batch.size(); ++i) v.push_back(b.batch.solution(i).iterations);
            return v;
          },
          "Every problem's iterations of the last solve, a list of B.")
      .def_prop_ro(
          "x",
          [](const PyBatch& b) {
            const solver::Solution& s0 = b.batch.solution(0);
            return batch_rows(b.batch, &solver::Solution::x, s0.N + 1, s0.nx);
          },
          "Every problem's states, shape (B, N+1, nx) (a copy).")
      .def_prop_ro(
          "u",
          [](const PyBatch& b) {
            const solver::Solution& s0 = b.batch.solution(0);
            return batch_rows(b.batch, &solver::Solution::u, s0.N, s0.nu);
          },
          "Every problem's controls, shape (B, N, nu) (a copy).")
      .def_prop_ro("size", [](const PyBatch& b) { return b.batch.size(); }, "B.")
      .def_prop_ro(
          "threads", [](const PyBatch& b) { return b.batch.threads(); },
          "cpu: threads that solve (the caller among them); cuda: threads per block, one block per problem.")
      .def_prop_ro(
          "backend", [](const PyBatch& b) { return std::string(solver::to_string(b.batch.backend())); },
          "'cpu' or 'cuda'.")
      .def_prop_ro(
          "precision", [](const PyBatch& b) { return std::string(b.batch.single() ? "float" : "double"); },
          "'double', or 'float' (backend 'cuda' only).")
      .def_prop_ro(
          "device_bytes", [](const PyBatch& b) { return b.batch.device_bytes(); },
          "Bytes of GPU memory allocated at creation (0 on backend 'cpu').")
      .def_prop_ro(
          "path", [](const PyBatch& b) { return std::string(solver::to_string(b.batch.path())); },
          "'solvers' or 'device' (auto resolved).")
      .def_prop_ro(
          "device_path_refusal", [](const PyBatch& b) { return b.batch.device_path_refusal(); },
          "On the solvers path, why the device path could not run this problem (empty when it could).");

  nb::class_<PyClosedLoop>(m, "ClosedLoop",
                           "The problem file's mpc: section run as a closed loop: the solver drives a simulated "
                           "plant (noise, disturbances, moving references; docs/mpc.md). Keywords as Solver's.")
      .def(
          "__init__",
          [](PyClosedLoop* self, const Problem& problem, nb::kwargs kwargs) {
            new (self) PyClosedLoop(problem, make_options(problem, kwargs, "ClosedLoop"));
          },
          "problem"_a, "kwargs"_a)
      .def(
          "run",
          [](PyClosedLoop& c) {
            Busy busy_guard(c.busy, "this ClosedLoop");
            nb::gil_scoped_release release;
            c.loop.run();
          },
          "Runs the remaining steps. Releases the GIL.")
      .def(
          "step",
          [](PyClosedLoop& c) {
            Busy busy_guard(c.busy, "this ClosedLoop");
            nb::gil_scoped_release release;
            return c.loop.step();
          },
          "One control step; False (nothing done) once every step is done. Releases the GIL.")
      .def_prop_ro("steps", [](const PyClosedLoop& c) { return c.loop.steps(); })
      .def_prop_ro("steps_done", [](const PyClosedLoop& c) { return c.loop.steps_done(); })
      .def_prop_ro(
          "period", [](const PyClosedLoop& c) { return c.loop.period(); }, "The control period, seconds.")
      .def_prop_ro(
          "ee_frame", [](const PyClosedLoop& c) { return c.loop.ee_frame(); },
          "The end-effector frame recorded in record.ee (-1 when the model has no kinematics).")
      .def_prop_ro(
          "record", [](const PyClosedLoop& c) { return record_object(c.loop); },
          "The steps done so far (copies): time (K+1), x (K+1, nx) the plant state before each control, "
          "u (K, nu), x_ref, ee and ee_ref (K+1, 3; empty without kinematics), solve_time, status, "
          "iterations, deadline_miss, failed.")
      .def(
          "summary", [](const PyClosedLoop& c) { return summary_object(c.loop.summary()); },
          "Tracking errors, constraint violation, solve-time percentiles, statuses and closed-loop cost of the "
          "steps done.");
}

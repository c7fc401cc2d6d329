#include "knot/solver/closed_loop.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>

#include "knot/problems/error.hpp"

namespace knot::solver {
namespace {

using problems::CostTerm;
using problems::MpcSettings;
using problems::Problem;
using problems::Reference;

SolverOptions loop_options(const Problem& p, SolverOptions o) {
  if (p.mpc.mode == "sqp") o.time_limit = p.mpc.time_limit > 0 ? p.mpc.time_limit : problems::mpc_period(p.mpc, p.horizon.dt);
  return o;
}

bool usable(Status s) { return is_solved(s) || s == Status::MaxIterations || s == Status::TimeLimit; }

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

ClosedLoop::ClosedLoop(Problem problem) : ClosedLoop(problem, from_settings(problem.solver)) {}

ClosedLoop::ClosedLoop(Problem problem, const SolverOptions& options)
    : solver_(problem, loop_options(problem, options)) {
  const Problem& p = solver_.problem();
  const MpcSettings& m = p.mpc;
  nx_ = p.nx();
  nu_ = p.nu();
  N_ = p.horizon.N;
  dt_ = p.horizon.dt;
  period_ = problems::mpc_period(m, dt_);
  steps_ = problems::mpc_steps(m, dt_);
  rti_ = m.mode != "sqp";
  shift_ = m.warm_start != "hold";
  iterations_per_step_ = m.iterations_per_step;
  rng_.seed(m.seed);

  plant_model_ = m.plant_model ? m.plant_model : p.model;
  plant_data_ = plant_model_->make_data();
  cost_data_ = p.model->make_data();
  plant_ = std::make_unique<problems::Integrator>(*plant_model_, m.plant_integrator);

  // Moving references: the file's, or every cost whose reference has one row per knot.
  const auto cost_index = [&](const std::string& name) {
    for (std::size_t c = 0; c < p.costs.size(); ++c)
      if (p.costs[c]->reference() && p.costs[c]->info().name == name) return static_cast<int>(c);
    throw problems::ProblemError({p.source, 0, 0}, "mpc.reference.cost", "the name of a cost with a reference",
                                 "'" + name + "'");
  };
  for (const problems::MpcReference& r : m.references) {
    Moving mv;
    mv.cost = cost_index(r.cost);
    mv.original = *p.costs[mv.cost]->reference();
    mv.dim = r.dim;
    mv.times = r.times;
    mv.table = r.values;
    // One row per knot from now on: set once here (allocating), then copied into place per step.
    mv.window = Reference::per_knot(r.dim, std::vector<double>(static_cast<std::size_t>(N_ + 1) * r.dim, 0.0));
    moving_.push_back(std::move(mv));
  }
  if (m.references.empty())
    for (std::size_t c = 0; c < p.costs.size(); ++c)
      if (const Reference* r = p.costs[c]->reference(); r && r->rows() > 1) {
        Moving mv;
        mv.cost = static_cast<int>(c);
        mv.original = *r;
        mv.dim = r->dim;
        mv.table = r->values;
        mv.window = *r;
        moving_.push_back(std::move(mv));
      }
  for (Moving& mv : moving_) solver_.set_reference(p.costs[mv.cost]->info().name, mv.window);

  // The tracked state cost: the first running state cost with a reference (a moving one first).
  for (std::size_t c = 0; c < p.costs.size() && tracked_state_ < 0; ++c)
    if (p.costs[c]->type() == "state" && p.costs[c]->info().stages != problems::StageSet::Terminal) {
      for (std::size_t j = 0; j < moving_.size(); ++j)
        if (moving_[j].cost == static_cast<int>(c)) tracked_state_ = static_cast<int>(c);
    }
  for (std::size_t c = 0; c < p.costs.size() && tracked_state_ < 0; ++c)
    if (p.costs[c]->type() == "state" && p.costs[c]->info().stages != problems::StageSet::Terminal)
      tracked_state_ = static_cast<int>(c);
  for (std::size_t c = 0; c < p.costs.size() && ee_cost_ < 0; ++c)
    if (p.costs[c]->type() == "end_effector") ee_cost_ = static_cast<int>(c);
  if (plant_model_->kinematics())
    ee_frame_ = ee_cost_ >= 0 ? p.costs[ee_cost_]->frame() : plant_model_->kinematics()->default_frame();
  for (std::size_t j = 0; j < moving_.size(); ++j) {
    if (moving_[j].cost == tracked_state_) state_moving_ = static_cast<int>(j);
    if (moving_[j].cost == ee_cost_) ee_moving_ = static_cast<int>(j);
  }

  const auto n = [](int a, int b) { return static_cast<std::size_t>(a) * static_cast<std::size_t>(b); };
  x_ = p.x0;
  x_next_.assign(x_.size(), 0.0);
  y_.assign(x_.size(), 0.0);
  u_apply_.assign(n(nu_, 1), 0.0);
  good_x_.assign(n(N_ + 1, nx_), 0.0);
  good_u_.assign(n(N_, nu_), 0.0);
  guess_x_.assign(good_x_.size(), 0.0);
  guess_u_.assign(good_u_.size(), 0.0);

  ClosedLoopRecord& r = record_;
  r.steps = steps_;
  r.nx = nx_;
  r.nu = nu_;
  r.time.assign(n(steps_ + 1, 1), kNaN);
  r.x.assign(n(steps_ + 1, nx_), kNaN);
  r.u.assign(n(steps_, nu_), kNaN);
  if (tracked_state_ >= 0) r.x_ref.assign(n(steps_ + 1, nx_), kNaN);
  if (ee_frame_ >= 0) r.ee.assign(n(steps_ + 1, 3), kNaN);
  if (ee_cost_ >= 0 && ee_frame_ >= 0) r.ee_ref.assign(n(steps_ + 1, 3), kNaN);
  r.solve_time.assign(n(steps_, 1), kNaN);
  r.status.assign(n(steps_, 1), Status::NotRun);
  r.iterations.assign(n(steps_, 1), 0);
  r.deadline_miss.assign(n(steps_, 1), 0);
  r.failed.assign(n(steps_, 1), 0);
}

ClosedLoop::~ClosedLoop() {
  const Problem& p = solver_.problem();
  for (Moving& mv : moving_) p.costs[mv.cost]->set_reference(std::move(mv.original));
}

void ClosedLoop::set_step_callback(StepCallback callback, void* user) {
  callback_ = callback;
  callback_user_ = user;
}

// Standard normal by Box-Muller: u1 in (0, 1], u2 in [0, 1) from 53 random bits each.
double ClosedLoop::normal() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  constexpr double scale = 1.0 / 9007199254740992.0;  // 2^-53
  const double u1 = 1.0 - static_cast<double>(rng_() >> 11) * scale;
  const double u2 = static_cast<double>(rng_() >> 11) * scale;
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  spare_ = radius * std::sin(angle);
  have_spare_ = true;
  return radius * std::cos(angle);
}

// The table at time t: rows at `times` (or r dt), linear in between, the first/last row outside.
void ClosedLoop::reference_at(const Moving& m, double t, double* row) const {
  const int rows = static_cast<int>(m.table.size()) / m.dim;
  double pos;  // fractional row index
  if (m.times.empty()) {
    pos = t / dt_;
    if (std::abs(pos - std::round(pos)) < 1e-9) pos = std::round(pos);
  } else if (t <= m.times.front()) {
    pos = 0;
  } else if (t >= m.times.back()) {
    pos = rows - 1;
  } else {
    const auto it = std::upper_bound(m.times.begin(), m.times.end(), t);
    const int r = static_cast<int>(it - m.times.begin()) - 1;
    pos = r + (t - m.times[r]) / (m.times[r + 1] - m.times[r]);
  }
  pos = std::clamp(pos, 0.0, static_cast<double>(rows - 1));
  const int r0 = static_cast<int>(std::floor(pos));
  const int r1 = std::min(r0 + 1, rows - 1);
  const double w = pos - r0;
  for (int j = 0; j < m.dim; ++j) {
    const double a = m.table[static_cast<std::size_t>(r0) * m.dim + j];
    const double b = m.table[static_cast<std::size_t>(r1) * m.dim + j];
    row[j] = w == 0 ? a : a + w * (b - a);
  }
}

void ClosedLoop::update_references(double t) {
  const Problem& p = solver_.problem();
  for (Moving& mv : moving_) {
    const int rows = mv.window.rows();
    for (int k = 0; k < rows; ++k) reference_at(mv, t + k * dt_, mv.window.values.data() + static_cast<std::size_t>(k) * mv.dim);
    solver_.set_reference(p.costs[mv.cost]->info().name, mv.window);
  }
}

void ClosedLoop::record_row(int i) {
  const Problem& p = solver_.problem();
  ClosedLoopRecord& r = record_;
  const double t = i * period_;
  r.time[i] = t;
  std::copy(x_.begin(), x_.end(), r.x.begin() + static_cast<std::ptrdiff_t>(i) * nx_);
  if (tracked_state_ >= 0) {
    double* out = r.x_ref.data() + static_cast<std::size_t>(i) * nx_;
    if (state_moving_ >= 0) {
      reference_at(moving_[state_moving_], t, out);
    } else {
      const auto row = p.costs[tracked_state_]->reference()->at(0);
      std::copy(row.begin(), row.end(), out);
    }
  }
  if (ee_frame_ >= 0) {
    plant_model_->kinematics()->frame_position(*plant_data_, x_.data(), ee_frame_, {0, 0, 0},
                                               r.ee.data() + static_cast<std::size_t>(i) * 3, nullptr);
    if (ee_cost_ >= 0) {
      double* out = r.ee_ref.data() + static_cast<std::size_t>(i) * 3;
      if (ee_moving_ >= 0) {
        reference_at(moving_[ee_moving_], t, out);
      } else {
        const auto row = p.costs[ee_cost_]->reference()->at(0);
        std::copy(row.begin(), row.end(), out);
      }
    }
  }
}

void ClosedLoop::integrate_plant(const double* u) {
  const double h = period_ / solver_.problem().mpc.plant_substeps;
  for (int s = 0; s < solver_.problem().mpc.plant_substeps; ++s) {
    if (plant_->step(*plant_data_, x_.data(), u, h, x_next_.data()) != problems::IntegratorStatus::Ok) {
      std::fill(x_.begin(), x_.end(), kNaN);
      return;
    }
    std::swap(x_, x_next_);
  }
}

// The last good plan, advanced by the steps since: its control now, and the solver's next iterate.
void ClosedLoop::apply_fallback(int i) {
  record_.failed[i] = 1;
  ++since_good_;
  if (!have_good_) {
    std::fill(u_apply_.begin(), u_apply_.end(), 0.0);
    solver_.set_initial_guess(good_x_, good_u_);  // zeros; x0 comes from the next measurement
    return;
  }
  const int j = std::min(since_good_, N_ - 1);
  std::copy_n(good_u_.begin() + static_cast<std::ptrdiff_t>(j) * nu_, nu_, u_apply_.begin());
  for (int k = 0; k <= N_; ++k)
    std::copy_n(good_x_.begin() + static_cast<std::ptrdiff_t>(std::min(k + since_good_, N_)) * nx_, nx_,
                guess_x_.begin() + static_cast<std::ptrdiff_t>(k) * nx_);
  for (int k = 0; k < N_; ++k)
    std::copy_n(good_u_.begin() + static_cast<std::ptrdiff_t>(std::min(k + since_good_, N_ - 1)) * nu_, nu_,
                guess_u_.begin() + static_cast<std::ptrdiff_t>(k) * nu_);
  solver_.set_initial_guess(guess_x_, guess_u_);
}

bool ClosedLoop::step() {
  if (done_ >= steps_) return false;
  const int i = done_;
  const Problem& p = solver_.problem();
  const MpcSettings& m = p.mpc;
  const double t = i * period_;
  record_row(i);

  // Measure, then solve from the measurement.
  for (int j = 0; j < nx_; ++j) y_[j] = x_[j] + (m.measurement_noise.empty() ? 0.0 : m.measurement_noise[j] * normal());
  solver_.set_initial_state(y_);
  if (i > 0 && shift_) solver_.shift();
  update_references(t);
  const auto start = std::chrono::steady_clock::now();
  const Status status = rti_ ? solver_.step(iterations_per_step_) : solver_.solve();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Solution& sol = solver_.solution();
  record_.solve_time[i] = seconds;
  record_.status[i] = status;
  record_.iterations[i] = sol.iterations;
  record_.deadline_miss[i] = seconds > period_ ? 1 : 0;

  bool finite = usable(status);
  for (int j = 0; j < nu_ && finite; ++j) finite = std::isfinite(sol.u[j]);
  if (finite) {
    std::copy(sol.x.begin(), sol.x.end(), good_x_.begin());
    std::copy(sol.u.begin(), sol.u.end(), good_u_.begin());
    std::copy_n(sol.u.begin(), nu_, u_apply_.begin());
    have_good_ = true;
    since_good_ = 0;
  } else {
    apply_fallback(i);
  }
  std::copy(u_apply_.begin(), u_apply_.end(), record_.u.begin() + static_cast<std::ptrdiff_t>(i) * nu_);

  // The closed-loop cost of this step: the running terms at (x_i, u_i), each lasting T.
  {
    problems::StagePoint sp;
    sp.k = 0;
    sp.N = N_;
    sp.dt = period_;
    sp.x = record_.x.data() + static_cast<std::size_t>(i) * nx_;
    sp.u = u_apply_.data();
    sp.u_prev = i > 0 ? record_.u.data() + static_cast<std::size_t>(i - 1) * nu_ : nullptr;
    sp.data = cost_data_.get();
    for (const auto& c : p.costs)
      if (c->info().stages != problems::StageSet::Terminal) closed_loop_cost_ += c->value(sp);
  }

  // Apply u_i for T, then process noise and the kicks due in [t_i, t_{i+1}).
  integrate_plant(u_apply_.data());
  if (!m.process_noise.empty())
    for (int j = 0; j < nx_; ++j) x_[j] += m.process_noise[j] * normal();
  const double t_next = (i + 1) * period_;
  for (const problems::Disturbance& d : m.disturbances)
    if (d.time >= t && d.time < t_next)
      for (int j = 0; j < nx_; ++j) x_[j] += d.state_kick[j];

  done_ = i + 1;
  if (done_ == steps_) record_row(steps_);
  if (callback_) callback_(done_, steps_, callback_user_);
  return true;
}

void ClosedLoop::run() {
  while (step()) {
  }
}

ClosedLoopSummary ClosedLoop::summary() const {
  const Problem& p = solver_.problem();
  const ClosedLoopRecord& r = record_;
  ClosedLoopSummary s;
  s.steps = done_;
  s.control_period = period_;
  s.duration = done_ * period_;
  s.seed = p.mpc.seed;
  s.closed_loop_cost = closed_loop_cost_;
  const int rows = done_ == steps_ ? done_ + 1 : done_;  // the final state once all steps are done

  const auto add_tracking = [&](std::string name, auto&& error) {
    TrackingError e{std::move(name), 0, 0};
    double sum = 0;
    for (int i = 0; i < rows; ++i) {
      const double v = error(i);
      sum += v * v;
      e.max = std::isnan(v) || std::isnan(e.max) ? kNaN : std::max(e.max, std::abs(v));
    }
    e.rms = rows > 0 ? std::sqrt(sum / rows) : 0;
    s.tracking.push_back(std::move(e));
  };
  if (tracked_state_ >= 0) {
    const problems::Weight* W = p.costs[tracked_state_]->weight();
    for (int j = 0; j < nx_; ++j)
      if (!W || (*W)(j, j) > 0)
        add_tracking(p.state_names.empty() ? std::string("x").append(std::to_string(j)) : p.state_names[j], [&](int i) {
          return r.x[static_cast<std::size_t>(i) * nx_ + j] - r.x_ref[static_cast<std::size_t>(i) * nx_ + j];
        });
  }
  if (!r.ee_ref.empty())
    add_tracking(plant_model_->kinematics()->frame_name(ee_frame_), [&](int i) {
      double d2 = 0;
      for (int a = 0; a < 3; ++a) {
        const double d = r.ee[static_cast<std::size_t>(i) * 3 + a] - r.ee_ref[static_cast<std::size_t>(i) * 3 + a];
        d2 += d * d;
      }
      return std::sqrt(d2);
    });

  for (const auto& c : p.constraints) {
    const problems::BoxBounds* b = c->box();
    if (!b) continue;
    const int n = b->on_control ? done_ : rows;
    const int width = b->on_control ? nu_ : nx_;
    const std::vector<double>& v = b->on_control ? r.u : r.x;
    for (int i = 0; i < n; ++i)
      for (std::size_t j = 0; j < b->index.size(); ++j) {
        const double value = v[static_cast<std::size_t>(i) * width + b->index[j]];
        const double excess = std::max({b->lower[j] - value, value - b->upper[j], 0.0});
        s.constraint_violation = std::isnan(value) ? kNaN : std::max(s.constraint_violation, excess);
      }
  }

  std::vector<double> times(r.solve_time.begin(), r.solve_time.begin() + done_);
  std::sort(times.begin(), times.end());
  if (!times.empty()) {
    const auto rank = [&](double q) {
      const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(times.size())));
      return times[std::clamp<std::size_t>(k, 1, times.size()) - 1];
    };
    s.solve_p50 = rank(0.5);
    s.solve_p99 = rank(0.99);
    s.solve_max = times.back();
    double sum = 0;
    for (double x : times) sum += x;
    s.solve_mean = sum / static_cast<double>(times.size());
  }
  for (int i = 0; i < done_; ++i) {
    s.deadline_misses += r.deadline_miss[i];
    s.failed_steps += r.failed[i];
    ++s.statuses[static_cast<std::size_t>(r.status[i])];
  }
  return s;
}

}  // namespace knot::solver

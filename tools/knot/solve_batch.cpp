// knot solve FILE --batch B: B copies of one problem solved at once by BatchSolver (docs/batch.md).
//
// The copies differ in their initial state: --vary x0=SIGMA perturbs copies 1..B-1 by SIGMA
// times standard normal draws (std::mt19937_64 seeded kVarySeed, std::normal_distribution<double>,
// nx draws per copy in copy order; copy 0 keeps the file's x0), --vary-file F gives one initial state
// per line. --sweep NAME=LO:HI gives copy i the model parameter NAME = LO + (HI - LO) i / (B - 1)
// (BatchSolver::set_model_parameters). The summary: the count of each status, the batch's wall clock per problem, and each
// problem's status, iterations, cost and solve time (table, JSON or CSV).
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "knot/solver/batch.hpp"
#if KNOT_WITH_CUDA
#include "knot/solver/cuda/batch_cuda.hpp"
#endif
#include "output.hpp"
#include "report.hpp"

namespace knot::cli {
namespace {

constexpr unsigned long long kVarySeed = 20261201;

// "x0=SIGMA" -> SIGMA; an error message otherwise.
std::string parse_vary(const std::string& spec, double& sigma) {
  const std::string key = "x0=";
  if (spec.rfind(key, 0) != 0) return "--vary: expected x0=SIGMA, found '" + spec + "'";
  const std::string value = spec.substr(key.size());
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), sigma);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(sigma) || sigma < 0)
    return "--vary x0=SIGMA: expected a finite SIGMA >= 0, found '" + value + "'";
  return {};
}

// "NAME=LO:HI" -> NAME, LO, HI; an error message otherwise.
std::string parse_sweep(const std::string& spec, std::string& name, double& lo, double& hi) {
  const std::size_t eq = spec.find('='), colon = spec.find(':', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || eq == 0 || colon == std::string::npos)
    return "--sweep: expected NAME=LO:HI (a model parameter and its range), found '" + spec + "'";
  name = spec.substr(0, eq);
  const auto number = [](const std::string& text, double& v) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    return ec == std::errc() && end == text.data() + text.size() && std::isfinite(v);
  };
  const std::string a = spec.substr(eq + 1, colon - eq - 1), b = spec.substr(colon + 1);
  if (!number(a, lo) || !number(b, hi))
    return "--sweep " + name + "=LO:HI: expected two finite numbers, found '" + a + "' and '" + b + "'";
  return {};
}

// One initial state per line, nx comma-separated numbers; blank lines and '#' lines skipped. Errors
// name the file, the line and the column.
std::string read_vary_file(const std::string& path, int nx, std::vector<std::vector<double>>& rows) {
  std::ifstream in(path);
  if (!in) return path + ": cannot open the file";
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::vector<double> row;
    std::size_t pos = 0;
    for (;;) {
      std::size_t begin = line.find_first_not_of(" \t", pos);
      if (begin == std::string::npos) begin = line.size();
      std::size_t stop = line.find(',', begin);
      if (stop == std::string::npos) stop = line.size();
      std::size_t last = stop;
      while (last > begin && (line[last - 1] == ' ' || line[last - 1] == '\t')) --last;
      double v = 0;
      const auto [end, ec] = std::from_chars(line.data() + begin, line.data() + last, v);
      if (begin == last || ec != std::errc() || end != line.data() + last)
        return fmt::format("{}:{}:{}: expected a number, found '{}'", path, number, begin + 1,
                           line.substr(begin, last - begin));
      row.push_back(v);
      if (stop == line.size()) break;
      pos = stop + 1;
    }
    if (static_cast<int>(row.size()) != nx)
      return fmt::format("{}:{}: expected {} values (the problem's nx), found {}", path, number, nx, row.size());
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return path + ": expected one initial state per line, found none";
  return {};
}

}  // namespace

int run_solve_batch(const SolveOptions& opt) {
  const auto usage = [](const std::string& why) {
    fmt::print(stderr, "knot solve --batch: {}\n", why.c_str());
    return kExitInput;
  };
  if (!opt.vary.empty() && !opt.vary_file.empty()) return usage("give --vary or --vary-file, not both");
  if (opt.solver != "knot") return usage("the batch is solved by Knot's SQP only (not --solver " + opt.solver + ")");
  if (!opt.out_dir.empty() || !opt.output.empty() || opt.plot || opt.verbose)
    return usage("--out, --output, --plot and -v describe one solve; they are not offered with a batch");
  double sigma = 0;
  if (!opt.vary.empty())
    if (std::string why = parse_vary(opt.vary, sigma); !why.empty()) return usage(why);
  std::string sweep_name;
  double sweep_lo = 0, sweep_hi = 0;
  if (!opt.sweep.empty())
    if (std::string why = parse_sweep(opt.sweep, sweep_name, sweep_lo, sweep_hi); !why.empty()) return usage(why);

  std::vector<std::string> overrides = opt.overrides;
  if (!opt.linsys.empty()) overrides.push_back("solver.linsys=" + opt.linsys);
  if (!opt.globalization.empty()) overrides.push_back("solver.globalization=" + opt.globalization);
  if (!opt.hessian.empty()) overrides.push_back("solver.hessian=" + opt.hessian);
  problems::Problem problem;
  try {
    problem = problems::load_problem(opt.file, overrides);
    if (!opt.initial_guess.empty()) problem.initial_guess = problems::read_initial_guess(opt.initial_guess, problem);
  } catch (const problems::ProblemError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitInput;
  }
  for (const std::string& w : problem.model->warnings()) fmt::print(stderr, "warning: {}\n", w.c_str());

  // The initial state of each copy.
  const int nx = problem.nx();
  std::vector<std::vector<double>> x0;
  int B = opt.batch;
  if (!opt.vary_file.empty()) {
    if (std::string why = read_vary_file(opt.vary_file, nx, x0); !why.empty()) return usage(why);
    if (B == 0) B = static_cast<int>(x0.size());
    if (static_cast<int>(x0.size()) != B)
      return usage(fmt::format("{}: holds {} initial states, expected {} (--batch)", opt.vary_file, x0.size(), B));
  } else {
    if (B < 1) return usage("expected --batch B with B >= 1");
    x0.assign(static_cast<std::size_t>(B), problem.x0);
    std::mt19937_64 rng(kVarySeed);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int i = 1; i < B && sigma > 0; ++i)
      for (double& v : x0[static_cast<std::size_t>(i)]) v += sigma * normal(rng);
  }

  if (opt.precision == "float" && opt.backend != "cuda")
    return usage("--precision float runs on --backend cuda only (backend cpu solves in double)");
  solver::BatchOptions options;
  options.backend = opt.backend == "cuda" ? solver::BatchBackend::Cuda : solver::BatchBackend::Cpu;
  options.single = opt.precision == "float";
  options.threads = opt.threads.value_or(0);
  options.path = opt.path == "device" ? solver::BatchPath::Device
                 : opt.path == "solvers" ? solver::BatchPath::Solvers
                                         : solver::BatchPath::Auto;
#if KNOT_WITH_CUDA
  options.cuda_engine = solver::cuda::make_cuda_engine;
#endif
  std::unique_ptr<solver::BatchSolver> batch;
  try {
    batch = std::make_unique<solver::BatchSolver>(problem, B, options);
  } catch (const problems::ProblemError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitInput;
  } catch (const std::invalid_argument& e) {
    return usage(e.what());
  } catch (const std::runtime_error& e) {  // the GPU could not be set up
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitInput;
  }
  for (int i = 0; i < B; ++i) batch->set_initial_state(i, x0[static_cast<std::size_t>(i)]);
  const auto swept = [&](int i) { return B == 1 ? sweep_lo : sweep_lo + (sweep_hi - sweep_lo) * i / (B - 1); };
  if (!sweep_name.empty()) {
    try {
      for (int i = 0; i < B; ++i) batch->set_model_parameters(i, {{sweep_name, {swept(i)}}});
    } catch (const problems::ProblemError& e) {
      // The error has no file position (the value comes from the command line): named by the file.
      std::string what = e.what();
      if (what.rfind("<problem>: ", 0) == 0) what.erase(0, sizeof("<problem>: ") - 1);
      fmt::print(stderr, "{}: --sweep {}: {}\n", opt.file.c_str(), opt.sweep.c_str(), what.c_str());
      return kExitInput;
    } catch (const std::invalid_argument& e) {
      return usage(std::string("--sweep: ") + e.what());
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int solved = batch->solve();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::array<int, solver::kStatusCount> counts{};
  for (int i = 0; i < B; ++i) ++counts[static_cast<std::size_t>(batch->status(i))];
  std::string statuses;
  for (int s = 0; s < solver::kStatusCount; ++s)
    if (counts[static_cast<std::size_t>(s)] > 0)
      statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ",
                              solver::to_string(static_cast<solver::Status>(s)), counts[static_cast<std::size_t>(s)]);
  const std::string vary =
      !opt.vary_file.empty() ? "x0 from " + opt.vary_file
      : sigma > 0 ? fmt::format("x0 + {:g} N(0, 1) (mt19937_64 seed {}; problem 0 unperturbed)", sigma, kVarySeed)
                  : std::string(sweep_name.empty() ? "none (B identical copies)" : "none");
  const std::string sweep =
      sweep_name.empty() ? std::string() : fmt::format("{} from {:g} to {:g}, evenly", sweep_name, sweep_lo, sweep_hi);

  if (opt.format == "json") {
    nlohmann::ordered_json j;
    j["problem"] = problem_json(problem);
    j["batch"] = B;
    j["backend"] = solver::to_string(batch->backend());
    j["precision"] = batch->single() ? "float" : "double";
    j["threads"] = batch->threads();
    j["path"] = solver::to_string(batch->path());
    j["vary"] = vary;
    if (!sweep.empty()) j["sweep"] = {{"parameter", sweep_name}, {"from", sweep_lo}, {"to", sweep_hi}};
    j["solved"] = solved;
    nlohmann::ordered_json by_status = nlohmann::ordered_json::object();
    for (int s = 0; s < solver::kStatusCount; ++s)
      if (counts[static_cast<std::size_t>(s)] > 0)
        by_status[solver::to_string(static_cast<solver::Status>(s))] = counts[static_cast<std::size_t>(s)];
    j["statuses"] = by_status;
    j["seconds"] = wall;
    j["seconds_per_problem"] = wall / B;
    nlohmann::ordered_json problems = nlohmann::ordered_json::array();
    for (int i = 0; i < B; ++i) {
      const solver::Solution& sol = batch->solution(i);
      nlohmann::ordered_json row = {{"index", i}};
      if (!sweep.empty()) row[sweep_name] = swept(i);
      row["status"] = solver::to_string(sol.status);
      row["message"] = std::string(sol.message());
      row["iterations"] = sol.iterations;
      row["cost"] = json_number(sol.cost);
      row["seconds"] = json_number(batch->stats(i).time.total);
      problems.push_back(std::move(row));
    }
    j["problems"] = std::move(problems);
    fmt::print("{}\n", j.dump(2).c_str());
  } else if (opt.format == "csv") {
    std::string out = sweep.empty() ? "index,status,iterations,cost,seconds\n"
                                    : "index," + sweep_name + ",status,iterations,cost,seconds\n";
    for (int i = 0; i < B; ++i) {
      const solver::Solution& sol = batch->solution(i);
      out += fmt::format("{},{}{},{},{},{}\n", i, sweep.empty() ? std::string() : csv_number(swept(i)) + ",",
                         solver::to_string(sol.status), sol.iterations, csv_number(sol.cost),
                         csv_number(batch->stats(i).time.total));
    }
    std::fputs(out.c_str(), stdout);
  } else {
    double sum = 0, worst = 0;
    for (int i = 0; i < B; ++i) {
      sum += batch->stats(i).time.total;
      worst = std::max(worst, batch->stats(i).time.total);
    }
    fmt::print("problem          {}  (nx {}, nu {}, N {}, dt {:g})\n", problem.name.c_str(), nx, problem.nu(),
               problem.horizon.N, problem.horizon.dt);
    const bool gpu = batch->backend() == solver::BatchBackend::Cuda;
    fmt::print("batch            {} problems, backend {}{}, {} {}\n", B, solver::to_string(batch->backend()),
               batch->single() ? " in float" : "", batch->threads(),
               gpu ? "threads per block, one block per problem" : "threads");
    fmt::print("path             {}{}\n", solver::to_string(batch->path()),
               batch->device_path_refusal().empty() ? std::string()
                                                    : " (not the device path: " + batch->device_path_refusal() + ")");
    fmt::print("vary             {}\n", vary.c_str());
    if (!sweep.empty()) fmt::print("sweep            {}\n", sweep.c_str());
    fmt::print("statuses         {}\n", statuses.c_str());
    if (gpu)  // every problem's own time is the kernel's: they run together
      fmt::print("time             {:.3f} ms wall, {:.3f} ms per problem (one kernel solves the whole batch)\n",
                 1e3 * wall, 1e3 * wall / B);
    else
      fmt::print("time             {:.3f} ms wall, {:.3f} ms per problem (one solve: mean {:.3f} ms, max {:.3f} ms)\n",
                 1e3 * wall, 1e3 * wall / B, 1e3 * sum / B, 1e3 * worst);
    if (batch->device_bytes() > 0)
      fmt::print("memory           {} bytes allocated at creation, {} bytes of them on the GPU\n",
                 batch->bytes_allocated() + batch->device_bytes(), batch->device_bytes());
    else
      fmt::print("memory           {} bytes allocated at creation\n", batch->bytes_allocated());
    const std::string column = sweep.empty() ? std::string() : fmt::format("{:>12}  ", sweep_name);
    fmt::print("\n problem  {}{:<18} {:>10}  {}\n", column.c_str(), "status", "iterations", "cost");
    for (int i = 0; i < B; ++i) {
      const solver::Solution& sol = batch->solution(i);
      const std::string value = sweep.empty() ? std::string() : fmt::format("{:>12.6g}  ", swept(i));
      fmt::print(" {:7}  {}{:<18} {:>10}  {:.12g}\n", i, value.c_str(), solver::to_string(sol.status), sol.iterations,
                 sol.cost);
    }
  }
  std::fflush(stdout);
  return solved == B ? kExitSolved : kExitNotSolved;
}

}  // namespace knot::cli

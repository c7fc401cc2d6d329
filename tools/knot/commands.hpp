// The knot subcommands. Each returns the process exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace knot::cli {

int run_info();

struct BenchOptions {
  bool quick = false;
  std::string format = "table";  // table | csv | json
  int repeats = 0;               // 0: the default for the mode
};
int run_bench_linalg(const BenchOptions& opt);

struct CheckOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set key.path=value, in order
};
// Exit 0 and the resolved problem on stdout when valid; 1 and the error on stderr otherwise.
int run_check(const CheckOptions& opt);

struct SolveOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set key.path=value, in order
  std::string format = "table";        // table | json | csv
  std::string output;                  // trajectory CSV; empty = none; "-" = stdout (the summary goes to stderr)
  std::string out_dir;                 // --out DIR: trajectory.csv, stats.json, solution.yaml; empty = none
  bool plot = false;                   // --plot: PNG figures beside the trajectory CSV (needs --out or --output FILE)
  std::string initial_guess;           // solution.yaml or trajectory.csv to start from; replaces the file's key
  std::string linsys;                  // overrides solver.linsys when not empty
  std::string globalization;           // filter | merit | none; empty = the problem file's
  std::string hessian;                 // auto | exact | gauss_newton; empty = the problem file's
  std::string solver = "knot";         // knot | ipopt (the cross-check, when built with IPOPT)
  bool verbose = false;                // per-iteration table (also solver.verbose in the file)
  // ---- --batch B: B copies solved at once (run_solve_batch; docs/batch.md)
  int batch = 0;                       // B; 0 = one solve (run_solve), unless --vary-file sets it
  std::string vary;                    // "x0=SIGMA": copies 1..B-1 start at x0 + SIGMA N(0, 1)
  std::string vary_file;               // one initial state per line
  std::string sweep;                   // "NAME=LO:HI": model parameter NAME from LO (copy 0) to HI (copy B-1)
  std::string backend = "cpu";         // cpu | cuda
  std::string precision = "double";    // double | float (backend cuda only)
  // --threads T: with a batch, its CPU threads (0 = every core, the default); on one solve, the
  // solver's knot threads (solver.threads; docs/solver.md, Threads).
  std::optional<int> threads;
  std::string path = "auto";           // auto | solvers | device (BatchOptions::path)
};
// Exit 0 when solved, 1 on input or output errors, 2 when the solver stopped short of Solved.
int run_solve(const SolveOptions& opt);
// --batch: exit 0 when every copy is solved, 1 on input errors (a backend this build cannot run
// included), 2 when a copy stopped short of Solved.
int run_solve_batch(const SolveOptions& opt);
// Whether the options ask for a batch (--batch, --vary, --vary-file, --sweep, --backend, --precision
// or --path given; --threads alone is the one solve's knot threads).
inline bool wants_batch(const SolveOptions& opt) {
  return opt.batch > 0 || !opt.vary.empty() || !opt.vary_file.empty() || !opt.sweep.empty() || opt.backend != "cpu" ||
         opt.precision != "double" || opt.path != "auto";
}

struct MpcOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set key.path=value, in order
  std::optional<double> duration;      // --duration: replaces mpc.duration / mpc.steps
  std::optional<int> steps;            // --steps
  std::optional<long long> seed;       // --seed
  std::string out;                     // --out DIR: closed_loop.csv and summary.json
  bool plot = false;
};
// Exit 0 when the closed loop ran (deadline misses and failed steps included), 1 on input errors
// or an unwritable --out, 3 on an internal error.
int run_mpc(const MpcOptions& opt);

}  // namespace knot::cli
